#!/usr/bin/env python3
"""The module demo on a virtual target (the main job until the virtual rig
with instruments lands).

Boots Debian's amd64 kernel in QEMU with suspend_block.ko and plays the
article's keypad walkthrough with real blockers held through
/dev/suspend_blocker (keypad-scan, input-event-queue,
process-input-events, staggered as in the article); then the system suspends
opportunistically to ACPI S3, a key press on the emulated keyboard wakes
it, nothing claims the wakeup (unknown_wakeups) and it suspends again.

Writes to build/demo-module/ (or --out; make demo writes build/demo/):
  stats.tsv   debugfs suspend_blockers at the end
  events.tsv  the event log
  report.txt  a timeline of the events and per-blocker totals
Exit status: 0 on success, 1 if the demo failed (the reason is printed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

import sbtarget as sb  # noqa: E402
from tests.vm.build import build_all  # noqa: E402
from tests.vm.qemu import Vm  # noqa: E402

WALKTHROUGH = (
    # the keypad is scanned for 300 ms; the key event is queued at 60 ms
    # and processed by user space from 120 ms; then nothing blocks
    "sbctl hold keypad-scan --ms 300 & "
    "usleep 60000; sbctl hold input-event-queue --ms 120 & "
    "usleep 120000; sbctl hold process-input-events --ms 200; wait"
)


def report(stats: dict, events: list, t0: int) -> str:
    lines = ["sbrig module demo: suspend_block.ko on a QEMU amd64 target", "",
             "Timeline (ms from the first event):"]
    for e in events:
        lines.append(f"  {(e.t_ns - t0) / 1e6:10.3f}  {e.type:8s} {e.arg}")
    lines += ["", f"{'blocker':28s} {'count':>6s} {'wake':>5s} "
              f"{'total ms':>10s} {'max ms':>9s} {'sleep ms':>9s}"]
    for s in stats.values():
        lines.append(f"{s.name:28s} {s.count:6d} {s.wake_count:5d} "
                     f"{s.total_time / 1e6:10.3f} {s.max_time / 1e6:9.3f} "
                     f"{s.sleep_time / 1e6:9.3f}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=REPO / "build" / "demo-module",
                    help="output directory (default build/demo-module)")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with Vm("amd64", build_all("amd64")) as vm:
        sb.reload(vm)
        sb.ctl(vm, "hold_after_resumes 2")
        vm.run_ok(f"echo opportunistic > {sb.SYSFS}/policy")
        vm.run_ok(WALKTHROUGH, timeout=60)
        mark = vm.qmp_mark()
        pending = vm.run_async(f"echo mem > {sb.SYSFS}/state")
        vm.wait_qmp_event("SUSPEND", timeout=60, since=mark)
        print("demo: target is in S3; pressing a key", flush=True)
        vm.send_key()
        vm.wait_qmp_event("SUSPEND", timeout=60)   # suspended again
        print("demo: nothing claimed the wakeup: suspended again", flush=True)
        vm.system_wakeup()
        rc, out = pending.wait(timeout=60)
        if rc:
            print(f"demo: guest command failed: {out}", file=sys.stderr)
            return 1
        stats_text = vm.run_ok(f"cat {sb.STATS}")
        events_text = vm.run_ok("evread drain")
        vm.run_ok(f"echo on > {sb.SYSFS}/state")
    stats, events = sb.parse_stats(stats_text), sb.parse_events(events_text)
    (args.out / "stats.tsv").write_text(stats_text.replace("\r", ""))
    (args.out / "events.tsv").write_text(events_text.replace("\r", ""))
    text = report(stats, events, events[0].t_ns)
    (args.out / "report.txt").write_text(text)
    print(text)
    print(f"demo: wrote {args.out}/report.txt, stats.tsv, events.tsv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
