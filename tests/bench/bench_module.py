#!/usr/bin/env python3
"""Benchmark suspend_block.ko in one amd64 VM run (a script, not a test).

Prints each figure next to its reference, measured in the same run:
  1. block+unblock pair vs mainline __pm_stay_awake+__pm_relax, timed in
     the kernel by sb_test.ko (median of 64 alternating rounds); target
     ratio <= 1.2. (It was 1.0 while the event ring shared the blockers'
     lock: 0.8x measured then. Since issue 22 the ring has a raw lock of
     its own, which the PM core's probes take instead of the blockers'
     lock: one uncontended lock more per block and per unblock, 1.1x
     under TCG, where atomic operations are slow.)
  2. block+unblock pair with 100 000 idle blockers registered vs with
     none, in the opportunistic policy with a state requested ("main"
     inactive: the case whose cost used to grow with every registered
     blocker); medians of alternating runs; target ratio <= 1.1.
  3. abort latency: a task refuses to freeze, and 50 ms after the suspend
     starts (PM_SUSPEND_PREPARE) a hard-interrupt timer either blocks
     suspend (suspend_block()) or activates a mainline wakeup source
     (__pm_stay_awake()); from the timer to pm_suspend() returning (event
     log); the two kinds alternate; target: ratio <= 1.1 (and p99 <= 5 ms,
     which mainline's 8 ms freezer poll does not allow).
  4. re-suspend latency: last unblock -> the worker calls pm_suspend()
     ("suspend" event) and -> the platform enters S3 ("enter" event);
     target <= 10 ms.
  5. one read of debugfs suspend_blockers with 10 000 user blockers
     registered (through /dev/suspend_blocker, by one root process) vs with
     none (reported per table and per line), and the p99 of how late a
     hard-interrupt timer that blocks and unblocks fires while a reader
     loops over the table, with and without them: the lock (interrupts
     off) is held for one line at a time, so that must not grow with the
     table (target ratio <= 1.5).
  6. suspend_blocker_init() of memory that has the "initialised" flag bit
     set by chance (sb_test's garbage_init: 2000 inits, ns each), with
     20 000 idle blockers registered vs with none, alternating rounds;
     the seed walked every blocker to tell it from a live one, a cookie
     tells it at once: target ratio <= 1.1.
The guest runs under TCG, so absolute times are inflated; ratios and
in-guest latencies are what to compare.

Every wait has a timeout and waits for something the guest shows (an
event record, a statistic, a QMP event). The first version raced: the
shell is thawed before the PM notifiers' PM_POST_SUSPEND, so releasing
sb_test's resume blocker right after the wake could come before sb_test
took it, which then stayed active and the next trial never suspended
(QMP SUSPEND timeout: a console tail, no figures); and its abort trial
armed the timer from the shell, so a slow round trip could fire it
before the suspend started (an endless wait for an abort).

usage: bench_module.py [--pairs N] [--trials N] [--idle N] [--users N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

import sbtarget as sb  # noqa: E402
from tests.vm.build import build_all  # noqa: E402
from tests.vm.qemu import Vm  # noqa: E402

MS = 1e6


def pct(values: list[float], p: float) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def line(name: str, values: list[float], target: str) -> None:
    print(f"{name:34s} n={len(values):3d} p50={statistics.median(values):8.3f} "
          f"p99={pct(values, 99):8.3f} max={max(values):8.3f} ms   target {target}",
          flush=True)


def wait_for(what: str, poll, cond, vm, timeout: float = 60.0):
    """Poll the guest until cond(poll()) holds; return the value."""
    end = time.monotonic() + timeout
    while True:
        value = poll()
        if cond(value):
            return value
        if time.monotonic() > end:
            raise TimeoutError(f"{what}: not within {timeout} s (last: {value!r})")
        vm.run_ok("usleep 20000")


def wait_event(vm, seq0: int, pred, what: str, timeout: float = 60.0) -> sb.Event:
    evs = wait_for(what, lambda: sb.events_after(vm, seq0),
                   lambda evs: any(pred(e) for e in evs), vm, timeout)
    return next(e for e in evs if pred(e))


def bench_pairs(vm, pairs: int) -> None:
    sb.ctl(vm, f"bench {pairs}")
    st = sb.ctl_state(vm)
    sbp, wsp = st["bench_sb_pair_ps"] / 1000, st["bench_ws_pair_ps"] / 1000
    print(f"{'block+unblock pair':34s} {sbp:8.1f} ns   "
          f"__pm_stay_awake+__pm_relax {wsp:8.1f} ns   "
          f"ratio {sbp / wsp:5.2f}x   target <= 1.20x", flush=True)


def bench_idle(vm, pairs: int, idle: int, runs: int = 5) -> None:
    """Block+unblock with `idle` registered idle blockers vs none, while
    "main" is inactive (opportunistic, a state requested) and sb_test's
    own blocker keeps the system up."""
    sb.ctl(vm, "block")
    vm.run_ok(f"echo opportunistic > {sb.SYSFS}/policy; echo mem > {sb.SYSFS}/state")
    with_idle, without = [], []
    for _ in range(runs):
        for n, out in ((idle, with_idle), (0, without)):
            sb.ctl(vm, f"idle_blockers {n}")
            if sb.ctl_state(vm)["idle_blockers"] != n:
                raise RuntimeError(f"sb_test did not register {n} idle blockers")
            sb.ctl(vm, f"bench {pairs}")
            out.append(sb.ctl_state(vm)["bench_sb_pair_ps"] / 1000)
    vm.run_ok(f"echo on > {sb.SYSFS}/state; echo forced > {sb.SYSFS}/policy; "
              f"echo unblock > {sb.CTL}")
    a, b = statistics.median(with_idle), statistics.median(without)
    print(f"{f'block+unblock, {idle} idle':34s} {a:8.1f} ns   "
          f"{'with none':26s} {b:8.1f} ns   ratio {a / b:5.2f}x   target <= 1.10x",
          flush=True)


def bench_abort(vm, trials: int) -> None:
    refuser = vm.start_bg(f"cat {sb.REFUSE}")
    wait_for("a task refusing to freeze", lambda: sb.ctl_state(vm)["refusing"],
             lambda n: n == 1, vm, 15)
    vm.run_ok(f"echo opportunistic > {sb.SYSFS}/policy")
    lat: dict[str, list[float]] = {"block": [], "ws": []}
    for i in range(2 * trials):
        kind = ("block", "ws")[i % 2]
        seq0 = sb.last_seq(vm)
        sb.ctl(vm, f"{kind}_on_prepare_ms 50")
        vm.run_ok(f"echo mem > {sb.SYSFS}/state")
        ab = wait_event(vm, seq0, lambda e: e.type == "abort", "abort")
        vm.run_ok(f"echo on > {sb.SYSFS}/state; echo unblock > {sb.CTL}; "
                  f"echo ws_off > {sb.CTL}")
        fired = sb.ctl_state(vm)["timer_fired_ns"]
        evs = sb.events_after(vm, seq0)
        if kind == "block":     # the timer's block is in the log too
            blk = next(e for e in evs if e.type == "block" and e.name == "sb_test")
            assert abs(blk.t_ns - fired) < 1 * MS, (blk, fired)
        susp = next(e for e in evs if e.type == "suspend")
        if not susp.t_ns < fired < ab.t_ns:
            raise RuntimeError(f"{kind}: timer at {fired} outside the attempt "
                               f"{susp.t_ns}..{ab.t_ns}")
        lat[kind].append((ab.t_ns - fired) / MS)
    sb.ctl(vm, "release_refuse")
    refuser.wait(timeout=30)
    vm.run_ok(f"echo forced > {sb.SYSFS}/policy")
    line("abort latency: suspend_block()", lat["block"], "p99 <= 5 ms")
    line("abort latency: __pm_stay_awake()", lat["ws"], "(reference)")
    r = statistics.median(lat["block"]) / statistics.median(lat["ws"])
    print(f"{'abort latency ratio (p50)':34s} {r:5.2f}x   target <= 1.10x", flush=True)


def bench_resuspend(vm, trials: int) -> None:
    to_call, to_enter = [], []
    vm.run_ok(f"echo opportunistic > {sb.SYSFS}/policy")
    for _ in range(trials):
        seq0 = sb.last_seq(vm)
        sb.ctl(vm, "hold_after_resumes 1")
        mark = vm.qmp_mark()
        pending = vm.run_async(f"sbprobe open init:bench-hold block && "
                               f"echo mem > {sb.SYSFS}/state")
        vm.wait_qmp_event("SUSPEND", timeout=60, since=mark)
        vm.system_wakeup()
        pending.wait(timeout=60)
        # User space runs again before PM_POST_SUSPEND: wait for sb_test
        # to take its resume blocker before releasing it.
        wait_event(vm, seq0, lambda e: e.type == "block" and e.name == "sb_test_resume",
                   "sb_test_resume blocked after the wake")
        vm.run_ok(f"echo on > {sb.SYSFS}/state; echo release_resume > {sb.CTL}")
        evs = sb.events_after(vm, seq0)
        call = next(e for e in evs if e.type == "suspend")
        last = [e for e in evs if e.type == "unblock" and e.seq < call.seq][-1]
        enter = next(e for e in evs if e.type == "enter")
        to_call.append((call.t_ns - last.t_ns) / MS)
        to_enter.append((enter.t_ns - last.t_ns) / MS)
    line("re-suspend: unblock -> pm_suspend", to_call, "<= 10 ms")
    line("re-suspend: unblock -> S3 entry", to_enter, "(reference)")


def _table_read_ms(vm) -> tuple[float, int]:
    """Mean ms per full read of the table, timed in the guest (busybox has
    no sub-second clock in the shell: /proc/uptime's 10 ms, over enough
    reads to take a few seconds), and its number of lines."""
    lines = int(vm.run_ok(f"wc -l < {sb.STATS}"))
    reads = max(20, 400000 // lines)
    out = vm.run_ok(
        f"read t0 x < /proc/uptime; i=0; while [ $i -lt {reads} ]; do "
        f"cat {sb.STATS} > /dev/null; i=$((i + 1)); done; "
        f"read t1 x < /proc/uptime; echo $t0 $t1", timeout=600)
    t0, t1 = map(float, out.split())
    return (t1 - t0) * 1000 / reads, lines


def _lat_p99_us_while_reading(vm) -> float:
    reader = vm.start_bg(f"while :; do cat {sb.STATS} > /dev/null; done")
    try:
        sb.ctl(vm, "lat 4000")
    finally:
        reader.kill()
        reader.wait()
    return sb.ctl_state(vm)["lat_p99_ns"] / 1000


def bench_table(vm, users: int) -> None:
    base_ms, base_lines = _table_read_ms(vm)
    base_lat = _lat_p99_us_while_reading(vm)
    holder = vm.start_bg(f"ulimit -n {users + 64} && "
                         f"sbprobe initmany:bench-u:{users} sleep:3600000")
    try:
        wait_for(f"{users} user blockers", lambda: len(sb.stats(vm)),
                 lambda n: n >= base_lines - 1 + users, vm, 300)
        big_ms, big_lines = _table_read_ms(vm)
        big_lat = _lat_p99_us_while_reading(vm)
    finally:
        holder.kill()
        holder.wait(timeout=120)
    print(f"{f'table read, {users} user blockers':34s} {big_ms:8.3f} ms "
          f"({big_ms * 1000 / big_lines:.2f} us/line)   "
          f"{'with none':12s} {base_ms:8.3f} ms ({base_lines} lines)", flush=True)
    print(f"{'blocking irq p99 late, reading':34s} {big_lat:8.1f} us   "
          f"{'with none':26s} {base_lat:8.1f} us   ratio {big_lat / base_lat:5.2f}x"
          f"   target <= 1.50x", flush=True)


def bench_garbage_init(vm, idle: int, rounds: int = 5) -> None:
    def once() -> float:
        sb.ctl(vm, "garbage_init 2000")
        return sb.ctl_state(vm)["garbage_init_ns"]

    few, many = [], []
    for _ in range(rounds):
        few.append(once())
        sb.ctl(vm, f"idle_blockers {idle}")
        try:
            many.append(once())
        finally:
            sb.ctl(vm, "idle_blockers 0")
    a, b = statistics.median(many), statistics.median(few)
    print(f"{f'init of non-zeroed memory, {idle} idle':34s} {a:8.0f} ns   "
          f"{'with none':26s} {b:8.0f} ns   ratio {a / b:5.2f}x   "
          f"target <= 1.10x", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=256000)
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--idle", type=int, default=100000)
    ap.add_argument("--users", type=int, default=10000)
    args = ap.parse_args(argv)
    with Vm("amd64", build_all("amd64")) as vm:
        # mainline's wakeup sources as mainline has them: without our
        # probe, which logs every activation to the event ring
        sb.reload(vm, event_wakeup_sources=0)
        bench_pairs(vm, args.pairs)
        bench_idle(vm, args.pairs // 4, args.idle)
        sb.reload(vm)
        bench_abort(vm, args.trials)
        sb.reload(vm)
        bench_resuspend(vm, args.trials)
        sb.reload(vm)
        bench_table(vm, args.users)
        sb.reload(vm)
        bench_garbage_init(vm, 20000)
    return 0


if __name__ == "__main__":
    sys.exit(main())
