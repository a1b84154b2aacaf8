"""suspend_block.ko under a torture client (issue 22, the debug-kernel tier).

sb_torture.ko (tests/target/sb_torture) runs for a given time: kthreads
(plain, with preemption, bottom halves or interrupts off, under a
spinlock), hrtimer callbacks in hard interrupt context and timer_list
callbacks in softirq context call suspend_blocker_init(), suspend_block(),
suspend_unblock(), suspend_blocker_destroy() and suspend_blocker_is_active()
at random, each on blockers of its own, and work kthreads queue, requeue
(while pending and while running), cancel and flush suspend-blocking work,
also from hard interrupts, and destroy and re-initialise it. Meanwhile,
from user space: two event-log readers following the log (one with
EPOLLWAKEUP), two readers of the statistics table in loops, a loop that
flips the policy and the requested state, and a loop that creates, blocks
and closes user blockers. /sys/power/pm_test makes the opportunistic
attempts (and the forced suspends of the policy loop) real up to the test
level (amd64 ``core``: interrupts off, syscore; armhf ``platform``: after
the noirq phase) without the guest ever sleeping. On amd64 the marker line
is on sb_wire, so every first block and last unblock writes a GPIO.

Each torture blocker has one owner that counts exactly what it did, so
afterwards the statistics table must agree with it to the unit:

* each live blocker's ``count`` is its ended activations, plus one while
  active, and ``active_since`` is non-zero exactly while it is active;
* ``deleted_suspend_blockers``' count grew by exactly the counts of the
  destroyed blockers (core.c sb_stat_destroy_locked(): an active blocker's
  running activation is counted first) and the user blockers closed;
* after "release" nothing but ``main`` is active; after the client is
  unloaded the table has exactly its baseline lines again;
* every table read during the run parsed (each line consistent), the
  event-log readers saw record numbers without unexplained gaps, the
  kernel log has no WARN/BUG/lockdep report and the client no error, and
  unreclaimable slab did not grow with the thousands of reads and
  user blockers (the debug kernel's kmemleak scan is the precise check).

SBRIG_TORTURE_SECONDS changes the run time (default 10 s per arch).
"""

from __future__ import annotations

import os
import re
import shlex
import time

import pytest

import sbtarget as sb

pytestmark = pytest.mark.debug_kernel

TT = "/sys/kernel/debug/sb_torture"
D = "/tmp/tt"
WIRE = "/sys/module/sb_wire/parameters"
SUSPEND_STATS = "/sys/kernel/debug/suspend_stats"
SECONDS = float(os.environ.get("SBRIG_TORTURE_SECONDS", "10"))
#: actors of each kind: kthreads, hrtimers, timer_lists, work kthreads
ACTORS = (2, 2, 1, 1)
#: unreclaimable slab may grow by at most this much over a run: a first
#: run grows it by ~0.3-0.5 MB (process caches warming up), a second by
#: ~30 kB. Coarse: it catches a leak on the hot paths (~200 000 API calls,
#: ~5 bytes each); the debug kernel's kmemleak scan is the precise check.
SLAB_SLACK_KB = 1024
SPLAT = re.compile(r"WARNING:|BUG:|Oops|Call Trace|lockdep|INFO: task|"
                   r"list_(add|del) corruption|sb_torture: ")


def _slow(vm, seconds: float) -> float:
    """Timeouts scale on slower guests (the debug kernel's vm.slow)."""
    slow = getattr(vm, "slow", None)
    return slow(seconds) if slow else seconds


def _wait(vm, what: str, cond, poll, timeout: float):
    end = time.monotonic() + timeout
    while True:
        value = poll()
        if cond(value):
            return value
        if time.monotonic() > end:
            raise AssertionError(f"{what}: not within {timeout:.0f} s; last: {value!r}")
        vm.run_ok("usleep 200000")


def _kv(text: str) -> dict[str, int]:
    out = {}
    for line in text.splitlines():
        key, _, val = line.strip().partition(" ")
        if key:
            out[key] = int(val)
    return out


def _torture_blockers(vm) -> dict[str, dict[str, int]]:
    """sb_torture's own account: name -> live, active, count, deleted, ..."""
    lines = vm.run_ok(f"cat {TT}/blockers").splitlines()
    keys = lines[0].split()[1:]
    out = {}
    for line in lines[1:]:
        name, *vals = line.split()
        out[name] = dict(zip(keys, map(int, vals)))
    return out


def _follow(text: str) -> dict[str, int]:
    """evread follow's summary line (the last line; violations are named
    on the lines before it)."""
    last = text.strip().splitlines()[-1]
    assert last.startswith("follow "), text
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", last)}


def _slab_kb(vm) -> int:
    out = vm.run_ok("sync; echo 3 > /proc/sys/vm/drop_caches; "
                    "grep SUnreclaim /proc/meminfo")
    return int(out.split()[1])


def _suspend_stats(vm) -> dict[str, int]:
    out = vm.run_ok(f"head -n 2 {SUSPEND_STATS}")
    return {k: int(v) for k, v in re.findall(r"^(\w+): (\d+)", out, re.M)}


def _user_loops(vm, ms: int) -> str:
    """The user-space side of the torture, one script; every loop ends
    when $D/stop exists and leaves its count in $D/*.n."""
    p = sb.SYSFS
    # armhf's "mem" is s2idle too; on amd64 "freeze" fails at once with
    # pm_test=core (-EAGAIN: the worker's back-off path), so rarely
    states = ("on on mem mem mem freeze" if vm.arch == "armhf"
              else "on on mem mem mem mem mem mem mem mem mem freeze")
    return f"""
D={D}
evread -p 100 wfollow:{ms} > $D/wfollow.out 2>&1 &
evread -p 100 follow:{ms} > $D/follow.out 2>&1 &
( i=0; while [ ! -e $D/stop ]; do
    cat {sb.STATS} > $D/st.$((i % 4)).tmp && mv $D/st.$((i % 4)).tmp $D/st.$((i % 4)) \\
      || echo "read $i failed" >> $D/st.err
    i=$((i + 1)); done; echo $i > $D/st1.n ) &
( i=0; while [ ! -e $D/stop ]; do
    cat {sb.STATS} > /dev/null || echo "read $i failed" >> $D/st.err
    i=$((i + 1)); done; echo $i > $D/st2.n ) &
( set -- {states}; n=$#; i=0; while [ ! -e $D/stop ]; do
    if [ $((RANDOM % 4)) = 0 ]; then
      if [ $((RANDOM % 2)) = 0 ]; then echo forced; else echo opportunistic; fi \\
        > {p}/policy 2>/dev/null
    else
      eval "s=\\${{$((RANDOM % n + 1))}}"; echo $s > {p}/state 2>/dev/null
    fi
    usleep $((RANDOM % 20000)); i=$((i + 1)); done; echo $i > $D/flips.n ) &
( i=0; ok=0; while [ ! -e $D/stop ]; do
    sbprobe open init:ttu_$i block unblock block close > $D/u.last 2>&1
    if [ "$(grep -c 'rc=0$' $D/u.last)" = 6 ]; then ok=$((ok + 1));
    else cat $D/u.last >> $D/u.err; fi
    i=$((i + 1)); done; echo $ok > $D/u.n ) &
wait
"""


@pytest.fixture
def torture(vm):
    vm.run("rmmod sb_torture 2>/dev/null; rmmod sb_test 2>/dev/null; "
           "rmmod suspend_block 2>/dev/null; rmmod sb_wire 2>/dev/null; true")
    # a ring that holds what the torture writes while the readers are
    # frozen in an attempt (64 bytes a record: 4 MB)
    params = {"event_log_size": 65536}
    # the marker on sb_wire: Debian's amd64 guest has it (a debug kernel's
    # guest may not)
    if vm.arch == "amd64":
        if not getattr(vm.spec, "debug", False):
            vm.load_module("sb_wire")
            params["marker"] = "sbrig-wire:0"
        elif vm.run("modprobe sb_wire")[0] == 0:
            params["marker"] = "sbrig-wire:0"
    vm.load_module("suspend_block", **params)
    vm.load_module("sb_torture")
    sb.wait_quiet_log(vm)
    loglevel = vm.run_ok("cut -f1 /proc/sys/kernel/printk").strip()
    yield vm
    vm.run(f"touch {D}/stop 2>/dev/null; echo join > {TT}/ctl 2>/dev/null; "
           f"echo none > /sys/power/pm_test; dmesg -n {loglevel}; "
           f"echo on > {sb.SYSFS}/state 2>/dev/null; "
           f"echo forced > {sb.SYSFS}/policy 2>/dev/null; "
           "kill $(cat /tmp/tt/kmsg.pid 2>/dev/null) 2>/dev/null; "
           "rmmod sb_torture 2>/dev/null; rmmod suspend_block 2>/dev/null; "
           "rmmod sb_wire 2>/dev/null; true", timeout=120)


def test_torture_leaves_the_statistics_exact(torture):
    vm = torture
    ms = int(SECONDS * 1000)
    seed = int(time.time()) % 100000
    base = sb.stats(vm)
    assert set(base) == set(sb.BUILTIN)
    slab0 = _slab_kb(vm)
    stats0 = _suspend_stats(vm)

    # the kernel log goes to a file (the PM core's messages of hundreds of
    # test suspends would push reports out of the ring); the console keeps
    # warnings and errors only
    # /proc/kmsg starts at the oldest line nobody read through it: the
    # earlier tests' lines (expected warnings among them) are cut off at
    # a mark written now
    mark = f"sb-torture-start-{seed}-{os.getpid()}"
    vm.run_ok(f"rm -rf {D}; mkdir -p {D}; echo {mark} > /dev/kmsg; "
              f"(cat /proc/kmsg > {D}/kmsg & echo $! > {D}/kmsg.pid); dmesg -n 5")
    level = "core" if vm.arch == "amd64" else "platform"
    vm.run_ok(f"echo {level} > /sys/power/pm_test; "
              "echo 0 > /sys/module/suspend/parameters/pm_test_delay")
    bg = vm.start_bg(_user_loops(vm, ms))
    t0 = time.monotonic()
    sb_ctl = f"start {ms} {' '.join(map(str, ACTORS))} {seed}"
    vm.run_ok(f"echo {shlex.quote(sb_ctl)} > {TT}/ctl")
    _wait(vm, "the torture's end", lambda st: st["running"] == 0,
          lambda: _kv(vm.run_ok(f"cat {TT}/ctl")), timeout=_slow(vm, SECONDS + 60))
    vm.run_ok(f"echo join > {TT}/ctl; touch {D}/stop")
    assert bg.wait(timeout=_slow(vm, 60)) == 0, bg.output()
    wall = time.monotonic() - t0
    # no more attempts: the forced policy with "main" active
    vm.run_ok(f"echo none > /sys/power/pm_test; echo on > {sb.SYSFS}/state; "
              f"echo forced > {sb.SYSFS}/policy")

    summary = _kv(vm.run_ok(f"cat {TT}/summary"))
    counts = _kv(vm.run_ok(f"for f in st1 st2 flips u; do echo $f $(cat {D}/$f.n); done"))
    follow = {f: vm.run_ok(f"cat {D}/{f}.out").strip() for f in ("follow", "wfollow")}
    errors = vm.run_ok(f"cat {D}/st.err {D}/u.err 2>/dev/null; true").strip()
    stats1 = _suspend_stats(vm)
    attempts = {k: stats1[k] - stats0[k] for k in ("success", "fail")}
    ops_s = summary["ops"] * 1000 / max(summary["elapsed_ms"], 1)
    print(f"\n{vm.arch}: torture {summary['elapsed_ms']} ms (seed {seed}), "
          f"{summary['ops']} API calls ({ops_s:.0f}/s), wall {wall:.1f} s")
    print("  " + ", ".join(f"{k[3:]} {v}" for k, v in summary.items() if k.startswith("op_")))
    print("  contexts: " + ", ".join(f"{k[4:]} {v}" for k, v in summary.items()
                                     if k.startswith("ctx_")))
    print("  by actor: " + ", ".join(f"{k[6:]} {v}" for k, v in summary.items()
                                     if k.startswith("actor_")))
    print(f"  user space: {counts['st1'] + counts['st2']} table reads, "
          f"{counts['flips']} policy/state writes, {counts['u']} user blockers")
    print(f"  event-log readers: {follow['follow'].strip()}; "
          f"EPOLLWAKEUP: {follow['wfollow'].strip()}")
    print(f"  suspend attempts (pm_test={level}): {attempts['success']} "
          f"completed, {attempts['fail']} failed")
    assert summary["errors"] == 0, vm.run_ok(f"grep 'sb_torture:' {D}/kmsg; true")
    assert not errors, errors
    assert summary["ops"] > 1000
    assert attempts["success"] + attempts["fail"] > 0, "no suspend attempt ran"
    for name, text in follow.items():
        f = _follow(text)
        assert f["records"] > 0 and f["gaps"] == 0 and f["bad"] == 0, f"{name}: {text}"
        # an attempt in which a blocker was activated before the late
        # suspend phase was aborted (evread.c follow_attempt())
        assert f["violations"] == 0, f"{name}: {text}"

    # -- the table against the client's own account, to the unit
    mine = _torture_blockers(vm)
    st = sb.stats(vm)
    _check_table(st, mine)
    destroyed = sum(b["deleted"] for b in mine.values())
    user_deleted = 2 * counts["u"]    # block, unblock, block, close
    grown = st["deleted_suspend_blockers"].count - base["deleted_suspend_blockers"].count
    assert grown == destroyed + user_deleted, \
        (f"deleted_suspend_blockers' count grew by {grown}; the client's destroyed "
         f"blockers had {destroyed}, the closed user blockers {user_deleted}")
    assert not any(n.startswith("ttu_") for n in st)
    active = [n for n, b in mine.items() if b["active"]]
    print(f"  at the end: {sum(b['live'] for b in mine.values())} live "
          f"torture blockers, {len(active)} active; destroyed ones folded "
          f"{destroyed} activations, user blockers {user_deleted}")

    # -- release: nothing but "main" (forced policy) active
    vm.run_ok(f"echo release > {TT}/ctl")
    mine = _torture_blockers(vm)
    st = sb.stats(vm)
    _check_table(st, mine)
    assert [n for n, s in st.items() if s.active] == ["main"]
    if vm.run("test -d /sys/module/sb_wire")[0] == 0:
        level_, edges = vm.run_ok(f"cat {WIRE}/level {WIRE}/edges").split()
        print(f"  marker: {edges} edges on sb_wire")
        # "main" is active: the line is asserted; a wire's edges alternate
        assert level_ == "Y" and int(edges) % 2 == 1 and int(edges) > 1

    # -- unloaded: baseline lines again, every live count folded
    deleted_before = st["deleted_suspend_blockers"].count
    live_counts = sum(b["count"] for b in mine.values() if b["live"])
    vm.run_ok("rmmod sb_torture")
    st = sb.stats(vm)
    assert set(st) == set(sb.BUILTIN)
    assert st["deleted_suspend_blockers"].count == deleted_before + live_counts, \
        (f"unloading the client folded {st['deleted_suspend_blockers'].count - deleted_before}"
         f" activations into deleted_suspend_blockers; its live blockers had {live_counts}")

    # -- the table reads made during the run: each parsed, whole
    for i in range(4):
        snap = sb.parse_stats(vm.run_ok(f"cat {D}/st.{i}"))
        assert set(sb.BUILTIN) <= set(snap), snap.keys()

    # -- the kernel's log and memory
    vm.run_ok(f"kill $(cat {D}/kmsg.pid)")
    splats = vm.run_ok(f"sed -n '/{mark}/,$p' {D}/kmsg | "
                       f"grep -E {shlex.quote(SPLAT.pattern)}; true")
    assert vm.run(f"grep -q {mark} {D}/kmsg")[0] == 0, "the kernel log's mark is lost"
    assert not splats.strip(), splats
    vm.run_ok(f"rm -rf {D}")
    slab1 = _slab_kb(vm)
    print(f"  unreclaimable slab {slab0} kB -> {slab1} kB")
    # on the debug kernel KASAN's quarantine keeps freed objects (up to
    # 1/32 of the memory) and kmemleak its metadata, so the slab grows by
    # design: there its per-module kmemleak scan is the (precise) check
    if not getattr(vm, "debug", False):
        assert slab1 - slab0 < SLAB_SLACK_KB


def _check_table(st: dict[str, sb.Stat], mine: dict[str, dict[str, int]]) -> None:
    """Every live torture blocker is listed with the count its owner
    expects and the right activity; destroyed ones are not listed."""
    wrong = []
    for name, b in mine.items():
        if not b["live"]:
            if name in st:
                wrong.append(f"{name}: destroyed but listed: {st[name]}")
            continue
        s = st.get(name)
        if s is None:
            wrong.append(f"{name}: live but not listed")
        elif (s.count, s.active, s.wake_count) != (b["count"], bool(b["active"]), 0):
            wrong.append(f"{name}: table count={s.count} active={s.active} "
                         f"wake_count={s.wake_count}, client count={b['count']} "
                         f"active={b['active']} ({b})")
        elif not (s.max_time <= s.total_time and s.sleep_time <= s.total_time):
            wrong.append(f"{name}: times inconsistent: {s}")
    extra = [n for n in st if n.startswith("tt_") and n not in mine]
    assert not wrong and not extra, "\n".join(wrong + [f"unknown {n}" for n in extra])
