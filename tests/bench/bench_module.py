#!/usr/bin/env python3
"""Benchmark suspend_block.ko in one amd64 VM run (a script, not a test).

Prints each figure next to its reference:
  1. block+unblock pair vs mainline __pm_stay_awake+__pm_relax, timed in
     the kernel by sb_test.ko (median of 64 alternating rounds); target
     ratio <= 1.0.
  2. abort latency: a block from a hard interrupt while the freezer waits
     for a task that refuses to freeze -> pm_suspend() returns (event log
     timestamps); target p99 <= 5 ms.
  3. re-suspend latency: last unblock -> the worker calls pm_suspend()
     ("suspend" event) and -> the platform enters S3 ("enter" event);
     target <= 10 ms.
The guest runs under TCG, so absolute times are inflated; ratios and
in-guest latencies are what to compare.

usage: bench_module.py [--pairs N] [--trials N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
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
          f"p99={pct(values, 99):8.3f} max={max(values):8.3f} ms   target {target}")


def bench_pairs(vm, pairs: int) -> None:
    sb.ctl(vm, f"bench {pairs}")
    st = sb.ctl_state(vm)
    sbp, wsp = st["bench_sb_pair_ps"] / 1000, st["bench_ws_pair_ps"] / 1000
    print(f"{'block+unblock pair':34s} {sbp:8.1f} ns   "
          f"__pm_stay_awake+__pm_relax {wsp:8.1f} ns   "
          f"ratio {sbp / wsp:5.2f}x   target <= 1.00x")


def bench_abort(vm, trials: int) -> None:
    refuser = vm.start_bg(f"cat {sb.REFUSE}")
    while sb.ctl_state(vm)["refusing"] != 1:
        vm.run_ok("usleep 20000")
    vm.run_ok(f"echo opportunistic > {sb.SYSFS}/policy")
    lat = []
    for _ in range(trials):
        seq0 = sb.last_seq(vm)
        sb.ctl(vm, "block_after_ms 100")
        vm.run_ok(f"echo mem > {sb.SYSFS}/state", timeout=60)
        while not any(e.type == "abort" for e in sb.events_after(vm, seq0)):
            vm.run_ok("usleep 20000")
        vm.run_ok(f"echo on > {sb.SYSFS}/state; echo unblock > {sb.CTL}")
        evs = sb.events_after(vm, seq0)
        blk = next(e for e in evs if e.type == "block" and e.name == "sb_test")
        ab = next(e for e in evs if e.type == "abort")
        lat.append((ab.t_ns - blk.t_ns) / MS)
    sb.ctl(vm, "release_refuse")
    refuser.wait(timeout=30)
    line("abort latency (block in freezer)", lat, "p99 <= 5 ms")


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
        vm.run_ok(f"echo on > {sb.SYSFS}/state; echo release_resume > {sb.CTL}")
        evs = sb.events_after(vm, seq0)
        last = [e for e in evs if e.type == "unblock"
                and e.seq < next(x.seq for x in evs if x.type == "suspend")][-1]
        call = next(e for e in evs if e.type == "suspend")
        enter = next(e for e in evs if e.type == "enter")
        to_call.append((call.t_ns - last.t_ns) / MS)
        to_enter.append((enter.t_ns - last.t_ns) / MS)
    line("re-suspend: unblock -> pm_suspend", to_call, "<= 10 ms")
    line("re-suspend: unblock -> S3 entry", to_enter, "(reference)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=256000)
    ap.add_argument("--trials", type=int, default=20)
    args = ap.parse_args(argv)
    with Vm("amd64", build_all("amd64")) as vm:
        sb.reload(vm)
        bench_pairs(vm, args.pairs)
        bench_abort(vm, args.trials)
        sb.reload(vm)
        bench_resuspend(vm, args.trials)
    return 0


if __name__ == "__main__":
    sys.exit(main())
