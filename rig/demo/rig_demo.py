#!/usr/bin/python3
"""The demo: a profiling run on the virtual rig, producing a report.

Steps (each prints what it does; any failure exits 1 with the reason and
keeps what was written so far):

1. boot the virtual rig (rig/virtual/vrig.py: QEMU amd64 target with
   suspend_block and the agent, the INA226 emulator, keys through QMP) and
   start sbrigd on it (work dir build/demo/vrig/; vrig loads suspend_block
   with unknown_wakeup_hold_ms, so after a key wake, which no blocker
   claims, the module's blocker unknown_wakeups keeps the target up for a
   while: its user space and agent run) and put the target in
   opportunistic suspend (mem);
2. sbrig run rig/scenarios/demo.scn -o build/demo/capture --stats-every 1s;
3. sbrig latency -n 5 --key power --csv build/demo/latency.csv;
4. analysis of the capture -> build/demo/analysis.json (analyze());
5. report from analysis.json only -> build/demo/report.txt (render()).

    /usr/bin/python3 rig/demo/rig_demo.py [--out DIR] [--analyze-only]

``--analyze-only`` redoes steps 4-5 on an existing DIR/capture.
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import statistics
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.capture import read_meta, read_rows  # noqa: E402

BIN = REPO / "build" / "host" / "release"
SCENARIO = REPO / "rig" / "scenarios" / "demo.scn"
NS = 1_000_000_000
ATTRIBUTION = ("naive: when several blockers are active at once, the energy "
               "is split equally between them (pending the analysis issue)")


class DemoError(RuntimeError):
    """A step failed; the message says which and why."""


# ---- analysis: capture -> dict ------------------------------------------

def _intervals(events, t_end):
    """Active intervals per blocker from block/unblock pairs (host time).
    A blocker still active at the end is closed at t_end; an unblock
    without a block (blocked before the capture) opens at the first
    sample, marked by None and fixed by the caller."""
    active: dict[str, int | None] = {}
    out: dict[str, list[tuple[int | None, int]]] = {}
    counts: dict[str, int] = {}
    for e in events:
        name, t = e["arg"], e["host_t_ns"]
        if e["type"] == "block":
            counts[name] = counts.get(name, 0) + 1
            if name not in active:
                active[name] = t
        elif e["type"] == "unblock":
            out.setdefault(name, []).append((active.pop(name, None), t))
            counts.setdefault(name, 0)
    for name, t in active.items():
        out.setdefault(name, []).append((t, t_end))
    return out, counts


def _sleep_intervals(events, t_end):
    """Suspended intervals: from an 'enter' event to the next 'exit'."""
    out, start = [], None
    for e in events:
        if e["type"] == "enter" and start is None:
            start = e["host_t_ns"]
        elif e["type"] == "exit" and start is not None:
            out.append((start, e["host_t_ns"]))
            start = None
    if start is not None:
        out.append((start, t_end))
    return out


def _percentile(sorted_vals, p):
    """Nearest-rank percentile of an ascending list."""
    k = max(1, math.ceil(p / 100 * len(sorted_vals)))
    return sorted_vals[k - 1]


def analyze(capture_dir, latency_csv=None) -> dict:
    """The analysis of a capture directory as a JSON-able dict.

    Energy integrates the samples' power_uW over their own timestamps with
    the trapezoid rule; an interval listed in gaps.tsv is not integrated
    (and reported). Blocker intervals come from block/unblock event pairs
    on host time; each piece of an interval between two samples is given
    the interval's mean power and split equally among the blockers active
    in it. Suspended time is from 'enter' to the next 'exit'."""
    cap = Path(capture_dir)
    meta = read_meta(cap)
    samples = read_rows(cap, "samples")
    gaps = read_rows(cap, "gaps")
    events = sorted(read_rows(cap, "events"), key=lambda e: e["host_t_ns"])
    stimuli = read_rows(cap, "stimuli")
    if len(samples) < 2:
        raise DemoError(f"{cap}: fewer than 2 samples: nothing to integrate")
    t0, t_end = samples[0]["t_ns"], samples[-1]["t_ns"]
    gap_starts = {g["t_ns"] for g in gaps}

    blk, counts = _intervals(events, t_end)
    blk = {n: [(t0 if a is None else a, b) for a, b in iv] for n, iv in blk.items()}
    sleeps = _sleep_intervals(events, t_end)

    # breakpoints where the set of active blockers or the sleep state changes
    changes = sorted({t for iv in blk.values() for a, b in iv for t in (a, b)}
                     | {t for a, b in sleeps for t in (a, b)})

    def active_at(t):
        return [n for n, iv in blk.items() if any(a <= t < b for a, b in iv)]

    def asleep_at(t):
        return any(a <= t < b for a, b in sleeps)

    energy = {n: 0.0 for n in blk}        # uJ
    e_total = e_sleep = e_awake = e_none = 0.0
    t_covered = t_sleep_cov = 0
    for s0, s1 in zip(samples, samples[1:]):
        a, b = s0["t_ns"], s1["t_ns"]
        if a in gap_starts or b <= a:
            continue
        p_uW = (s0["power_uW"] + s1["power_uW"]) / 2
        cuts = changes[bisect.bisect_right(changes, a):bisect.bisect_left(changes, b)]
        for x, y in zip([a, *cuts], [*cuts, b]):
            e = p_uW * (y - x) / NS
            e_total += e
            t_covered += y - x
            if asleep_at(x):
                e_sleep += e
                t_sleep_cov += y - x
            else:
                e_awake += e
            names = active_at(x)
            for n in names:
                energy[n] += e / len(names)
            if not names:
                e_none += e

    blockers = []
    for n in sorted(blk, key=lambda n: -energy[n]):
        active_ns = sum(max(0, min(b, t_end) - max(a, t0)) for a, b in blk[n])
        blockers.append({"name": n, "activations": counts.get(n, 0),
                         "active_ns": active_ns,
                         "energy_uJ": round(energy[n], 3)})

    sleep_ns = sum(max(0, min(b, t_end) - max(a, t0)) for a, b in sleeps)
    duration = t_end - t0
    awake_ns = duration - sleep_ns
    lat = None
    if latency_csv and Path(latency_csv).exists():
        import csv
        with open(latency_csv) as f:
            vals = sorted(int(r["latency_ns"]) for r in csv.DictReader(f))
        if vals:
            lat = {"n": len(vals), "min_ns": vals[0],
                   "median_ns": int(statistics.median(vals)),
                   "p95_ns": _percentile(vals, 95), "max_ns": vals[-1],
                   "source": str(latency_csv)}
    sections: dict[str, list] = {}
    for name, values in meta:
        sections.setdefault(name, []).append(values)
    return {
        "capture": str(cap),
        "provenance": (sections.get("provenance") or [{}])[0],
        "targets": sections.get("target", []),
        "end": (sections.get("end") or [{}])[0],
        "created": (sections.get("capture") or [{}])[0].get("created", ""),
        "attribution": ATTRIBUTION,
        "duration_ns": duration,
        "samples": len(samples),
        "energy_uJ": round(e_total, 3),
        "unattributed_energy_uJ": round(e_none, 3),
        "blockers": blockers,
        "suspended": {"time_ns": sleep_ns, "energy_uJ": round(e_sleep, 3),
                      "mean_current_uA": _mean_current(samples, sleeps, True)},
        "awake": {"time_ns": awake_ns, "energy_uJ": round(e_awake, 3),
                  "mean_current_uA": _mean_current(samples, sleeps, False)},
        "suspends": sum(e["type"] == "suspend" for e in events),
        "enters": sum(e["type"] == "enter" for e in events),
        "resumes": sum(e["type"] == "resume" for e in events),
        "aborts": sum(e["type"] == "abort" for e in events),
        "presses": sum(s["what"] == "press" for s in stimuli),
        "latency": lat,
        "gaps": [{"t_ns": g["t_ns"], "next_t_ns": g["next_t_ns"],
                  "missing": g["missing"]} for g in gaps],
        "missing_samples": sum(g["missing"] for g in gaps),
        "clock_uncert_max_ns": max((e["uncert_ns"] for e in events), default=0),
    }


def _mean_current(samples, sleeps, asleep):
    """Mean current (uA) of the samples in (or out of) the sleep intervals."""
    starts = [a for a, _ in sleeps]
    vals = []
    for s in samples:
        i = bisect.bisect_right(starts, s["t_ns"]) - 1
        inside = i >= 0 and s["t_ns"] < sleeps[i][1]
        if inside == asleep:
            vals.append(s["current_uA"])
    return round(sum(vals) / len(vals), 1) if vals else None


# ---- rendering: analysis.json -> text ------------------------------------

def render(a: dict) -> str:
    p = a["provenance"]
    tgt = a["targets"][-1] if a["targets"] else {}
    ms = lambda ns: ns / 1e6  # noqa: E731
    lines = [
        "sbrig demo: suspend-blocker power profile of the virtual target",
        "",
        f"capture    {a['capture']}  ({a['end'].get('status', 'not closed')})",
        f"created    {a['created']}",
        f"rig        {p.get('rig_name', '?')}  {p.get('rig_config', '')} "
        f"(sha256 {p.get('rig_sha256', '')[:12]})",
        f"scenario   {p.get('scenario', '')} (sha256 {p.get('scenario_sha256', '')[:12]})",
        f"code       {p.get('git_sha', '')}  host {p.get('host_version', '')}",
        f"target     kernel {tgt.get('kernel', '?')}, module {tgt.get('module', '?')}, "
        f"agent {tgt.get('agent', '?')}, boot {tgt.get('boot_id', '?')[:8]}",
        f"power      {p.get('power_uri', '')}   link {p.get('target_uri', '')}",
        f"duration   {a['duration_ns'] / 1e9:.3f} s, {a['samples']} samples, "
        f"{len(a['gaps'])} gaps ({a['missing_samples']} samples missing), "
        f"energy {a['energy_uJ'] / 1e3:.3f} mJ",
        "",
        f"Blockers ({a['attribution']}):",
        f"  {'blocker':28s} {'activations':>11s} {'active_ms':>10s} "
        f"{'energy_mJ':>10s} {'share_%':>8s}",
    ]
    for b in a["blockers"]:
        share = 100 * b["energy_uJ"] / a["energy_uJ"] if a["energy_uJ"] else 0
        lines.append(f"  {b['name']:28s} {b['activations']:11d} "
                     f"{ms(b['active_ns']):10.1f} {b['energy_uJ'] / 1e3:10.3f} "
                     f"{share:8.1f}")
    lines.append(f"  {'(no blocker active)':28s} {'':11s} {'':10s} "
                 f"{a['unattributed_energy_uJ'] / 1e3:10.3f}")
    lines += ["", f"  {'state':10s} {'time_ms':>10s} {'energy_mJ':>10s} "
              f"{'mean_current_mA':>16s}"]
    for st in ("suspended", "awake"):
        d = a[st]
        cur = d["mean_current_uA"]
        lines.append(f"  {st:10s} {ms(d['time_ns']):10.1f} "
                     f"{d['energy_uJ'] / 1e3:10.3f} "
                     f"{'-' if cur is None else f'{cur / 1e3:.3f}':>16s}")
    lines += ["", f"suspends {a['suspends']}, entered {a['enters']}, "
              f"resumes {a['resumes']}, aborts {a['aborts']}, "
              f"key presses {a['presses']}"]
    lat = a["latency"]
    if lat:
        lines.append(f"wakeup latency (sbrig latency, n={lat['n']}): "
                     f"min {ms(lat['min_ns']):.1f} ms, "
                     f"median {ms(lat['median_ns']):.1f} ms, "
                     f"p95 {ms(lat['p95_ns']):.1f} ms, max {ms(lat['max_ns']):.1f} ms")
    else:
        lines.append("wakeup latency: not measured")
    lines.append(f"event times: host clock via the link's clock model, "
                 f"uncertainty up to {ms(a['clock_uncert_max_ns']):.1f} ms")
    return "\n".join(lines) + "\n"


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
        p = subprocess.run([str(BIN / "sbrig"), "-s", sock, "status"],
                           text=True, capture_output=True, timeout=30)
        if "link.connected: yes" in p.stdout:
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
    print("demo: 1/5 booting the virtual rig and sbrigd", flush=True)
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
        print("demo: 2/5 running the scenario", flush=True)
        sbrig(vr.socket, "run", SCENARIO, "-o", out / "capture",
              "--stats-every", "1s", timeout=180)
        timings["scenario_s"] = time.monotonic() - t

        t = time.monotonic()
        print("demo: 3/5 wakeup latency", flush=True)
        sbrig(vr.socket, "latency", "-n", "5", "--key", "power", "--timeout", "15s",
              "--csv", out / "latency.csv", "-o", out / "latency-capture",
              timeout=240)
        timings["latency_s"] = time.monotonic() - t


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
            for old in ("capture", "latency-capture", "latency.csv",
                        "analysis.json", "report.txt"):
                p = out / old
                if p.is_dir():
                    import shutil
                    shutil.rmtree(p)
                elif p.exists():
                    p.unlink()
            run_rig(out, timings)
        print("demo: 4/5 analysis", flush=True)
        analysis = analyze(out / "capture", out / "latency.csv")
        (out / "analysis.json").write_text(json.dumps(analysis, indent=1) + "\n")
        print("demo: 5/5 report", flush=True)
        report = render(json.loads((out / "analysis.json").read_text()))
        (out / "report.txt").write_text(report)
    except Exception as e:  # noqa: BLE001 - every failure ends the demo clearly
        print(f"demo: FAILED: {type(e).__name__}: {e}", file=sys.stderr)
        if (out / "capture").exists():
            print(f"demo: the capture is kept in {out / 'capture'}", file=sys.stderr)
        return 1
    timings["total_s"] = time.monotonic() - t_all
    print()
    print(report)
    print("Files:")
    for name in ("capture", "latency-capture", "latency.csv", "analysis.json",
                 "report.txt"):
        if (out / name).exists():
            print(f"  {out / name}")
    print("timings: " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
