#!/usr/bin/python3
"""The demo: a profiling run on the virtual rig, producing a report.

Steps (each prints what it does; any failure exits 1 with the reason and
keeps what was written so far):

1. boot the virtual rig (rig/virtual/vrig.py: QEMU amd64 target with
   suspend_block and the agent, the INA226 emulator, keys through QMP) and
   start sbrigd on it (work dir build/demo/vrig/; a key press reaches the
   guest's virtual keypad, and the article's chain, keypad-scan ->
   evdev -> process-input-events, keeps the target up while the key is
   down and handled: see rig/virtual/README.md) and put the target in
   opportunistic suspend (mem);
2. sbrig run rig/scenarios/demo.scn -o build/demo/capture --stats-every 1s;
3. sbrig latency -n 5 --key power --press 2s -o build/demo/latency-capture
   --csv build/demo/latency.csv (its statistics come from that capture);
4. sbrig analyze build/demo/capture -o build/demo/report: report.json and
   report.html (libsbrig-analysis; host/doc/report-format.md), and the
   report's headline, rendered from report.json.

    /usr/bin/python3 rig/demo/rig_demo.py [--out DIR] [--analyze-only]

``--analyze-only`` redoes step 4 on an existing DIR/capture.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / "build" / "host" / "release"
SCENARIO = REPO / "rig" / "scenarios" / "demo.scn"


class DemoError(RuntimeError):
    """A step failed; the message says which and why."""


# ---- the run ---------------------------------------------------------------

def sbrig(sock, *args, timeout):
    argv = [str(BIN / "sbrig"), "-s", sock, *map(str, args)]
    print("demo: $ " + " ".join(["sbrig", *map(str, args)]), flush=True)
    try:
        p = subprocess.run(argv, text=True, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise DemoError(f"sbrig {args[0]}: no answer within {timeout} s") from None
    sys.stdout.write(p.stdout)
    sys.stdout.flush()
    if p.returncode:
        raise DemoError(f"sbrig {args[0]} failed (exit {p.returncode}): "
                        f"{p.stderr.strip() or p.stdout.strip()[-500:]}")
    return p.stdout


def wait_link(sock, timeout=60):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        p = subprocess.run([str(BIN / "sbrig"), "-s", sock, "status",
                            "--json"], text=True, capture_output=True,
                           timeout=30)
        if p.returncode == 0 and (json.loads(p.stdout)["link"] or
                                  {}).get("connected"):
            return
        time.sleep(0.2)
    raise DemoError(f"the agent's link did not come up within {timeout} s")


def run_rig(out: Path, timings: dict) -> None:
    sys.path.insert(0, str(REPO / "rig" / "virtual"))
    from vrig import VirtualRig
    for prog in ("sbrigd", "sbrig"):
        if not (BIN / prog).exists():
            raise DemoError(f"{BIN / prog} missing: run 'make host' first")
    # provenance: the code under test is this checkout (sbrigd reads it)
    if "SBRIG_GIT_SHA" not in os.environ:
        git = subprocess.run(["git", "-C", str(REPO), "describe", "--always",
                              "--dirty", "--abbrev=40"],
                             text=True, capture_output=True)
        if git.returncode == 0:
            os.environ["SBRIG_GIT_SHA"] = git.stdout.strip()
    t = time.monotonic()
    print("demo: 1/4 booting the virtual rig and sbrigd", flush=True)
    vr = VirtualRig(out / "vrig", sbrigd=True, name="demo",
                    # the target sleeps for seconds: silence is not death
                    sbrigd_args=["-o", "timing.link_timeout_ms=60000"])
    with vr:
        print(vr.describe(), flush=True)
        wait_link(vr.socket)
        # in the background: the target may suspend before the harness
        # shell reports the command's end (then it would never come)
        vr.vm.start_bg("sbctl policy opportunistic && sbctl state mem")
        vr.vm.wait_status("suspended", 30)
        print("demo: the target is in opportunistic suspend (mem)", flush=True)
        timings["boot_s"] = time.monotonic() - t

        t = time.monotonic()
        print("demo: 2/4 running the scenario", flush=True)
        sbrig(vr.socket, "run", SCENARIO, "-o", out / "capture",
              "--stats-every", "1s", timeout=180)
        timings["scenario_s"] = time.monotonic() - t

        t = time.monotonic()
        print("demo: 3/4 wakeup latency", flush=True)
        sbrig(vr.socket, "latency", "-n", "5", "--key", "power", "--press", "2s",
              "--timeout", "15s",
              "--csv", out / "latency.csv", "-o", out / "latency-capture",
              timeout=240)
        timings["latency_s"] = time.monotonic() - t


def analyze(out: Path) -> str:
    """sbrig analyze OUT/capture -o OUT/report; return what it printed."""
    argv = [str(BIN / "sbrig"), "analyze", str(out / "capture"), "-o",
            str(out / "report")]
    print("demo: $ sbrig analyze " + " ".join(argv[2:]), flush=True)
    p = subprocess.run(argv, text=True, capture_output=True, timeout=300)
    if p.returncode:
        raise DemoError(f"sbrig analyze failed (exit {p.returncode}): "
                        f"{p.stderr.strip()}")
    return p.stdout


OUTPUTS = ("capture", "latency-capture", "latency.csv", "report")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=REPO / "build" / "demo",
                    help="output directory (default build/demo)")
    ap.add_argument("--analyze-only", action="store_true",
                    help="redo the analysis and report of OUT/capture")
    args = ap.parse_args(argv)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    t_all = time.monotonic()
    try:
        if not args.analyze_only:
            for old in OUTPUTS + ("analysis.json", "report.txt"):
                p = out / old
                if p.is_dir():
                    shutil.rmtree(p)
                elif p.exists():
                    p.unlink()
            run_rig(out, timings)
        t = time.monotonic()
        print("demo: 4/4 analysis and report", flush=True)
        headline = analyze(out)
        timings["analysis_s"] = time.monotonic() - t
    except Exception as e:  # noqa: BLE001 - every failure ends the demo clearly
        print(f"demo: FAILED: {type(e).__name__}: {e}", file=sys.stderr)
        if (out / "capture").exists():
            print(f"demo: the capture is kept in {out / 'capture'}", file=sys.stderr)
        return 1
    timings["total_s"] = time.monotonic() - t_all
    print()
    print(headline, end="")
    print("Files:")
    for name in OUTPUTS:
        if (out / name).exists():
            print(f"  {out / name}")
    print("timings: " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
