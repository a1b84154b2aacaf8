#!/usr/bin/python3
"""bench_verdicts.py - sbrig compare's own error rates, measured.

    /usr/bin/python3 tests/bench/bench_verdicts.py [--trials 100] [--n 5,10,20]
                                                   [--cv 0.02,0.05] [--sbrig PATH]

Draws synthetic runs from one model (tests/synth/runs.py fake_report) and
runs the real ``sbrig compare`` (build/host/release/sbrig) on them:

  * the model: run-to-run noise of CV ``--cv`` on each blocker's energy
    per wakeup (and about as much on energy per wakeup, awake time,
    latency, baseline); 15
    blockers, so that a comparison tests ~40 metrics, as a real scenario
    does; each blocker's activations Poisson-distributed (mean 5); one
    blocker (``flaky``) still held at the end of the capture (a leak
    finding) in 10 % of the runs, on both builds alike;
  * under the null (both sides from that one model): the share of
    comparisons where any metric is called ``regressed`` (a false alarm
    for a CI that gates on it), and the share whose overall verdict is
    ``unchanged`` (nothing regressed, nothing inconclusive);
  * the detection rate of a shift of one blocker's (``gps``) energy per
    wakeup equal to the minimum change that matters (compare-format.md's
    default for ``blocker_energy_per_wakeup_uJ``, 5 %) and 1.5 x it: the
    share of comparisons that call that metric ``regressed``;
  * the issue's load: +20 % on one blocker (``gps``, a third of the
    energy per wakeup: +6.7 % of it), called ``regressed`` naming gps.

for n = 5, 10, 20 runs a side (``--n``), printed side by side as a
table. A benchmark, not a test: it prints figures, it asserts nothing.
Exit 0 when it ran, 2 when sbrig is missing.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.synth import runs  # noqa: E402

SBRIG = REPO / "build" / "host" / "release" / "sbrig"
MIN_CHANGE = 0.05                  # blocker_energy_per_wakeup_uJ's default
ENERGY = 300_000.0                 # energy per wakeup, uJ
BLOCKERS = {"gps": ENERGY / 3, "flaky": 20_000.0,
            **{f"b{i:02d}": 5_000.0 + 1_000.0 * i for i in range(13)}}
ACTIVATIONS = 5                    # each blocker's mean activations per run
LEAK_P = 0.10                      # runs where "flaky" leaks


def poisson(rng: random.Random, lam: float) -> int:
    """Knuth's Poisson draw (lam small)."""
    k, p, limit = 0, 1.0, math.exp(-lam)
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def one_run(rng: random.Random, cv: float, side: str, gps: float = 1.0,
            load: bool = False) -> dict:
    """A run of the model; ``gps`` multiplies gps's energy; ``load`` also
    raises the energy per wakeup by gps's share of the extra."""
    bl = dict(BLOCKERS)
    bl["gps"] *= gps
    energy = ENERGY + (BLOCKERS["gps"] * (gps - 1) if load else 0)
    # fake_report draws a blocker's energy with two factors of relative
    # noise ``noise`` (the run's and the blocker's own): cv / sqrt(2) each
    # makes a blocker's energy per wakeup vary by ``cv`` from run to run
    r = runs.fake_report(rng, energy_uJ=energy, noise=cv / 2 ** 0.5, git_sha=side,
                         blockers=bl,
                         leak="flaky" if rng.random() < LEAK_P else None)
    for b in r["blockers"]:
        b["activations"] = poisson(rng, ACTIVATIONS)
    return r


def compare(sbrig: Path, d: Path, base: list[dict], new: list[dict]) -> dict | None:
    """sbrig compare on the runs; its compare.json, None if refused."""
    if d.exists():
        shutil.rmtree(d)
    pb = runs.write_reports(base, d / "base")
    pn = runs.write_reports(new, d / "new")
    r = subprocess.run([str(sbrig), "compare", "-o", str(d), *map(str, pb), "--",
                        *map(str, pn)], capture_output=True, text=True, timeout=600)
    if r.returncode not in (0, 1, 4):
        return None
    return json.loads((d / "compare.json").read_text())


def verdict_of(doc: dict, metric: str, blocker: str | None) -> str:
    for m in doc["metrics"]:
        if m["metric"] == metric and m["blocker"] == blocker:
            return m["verdict"]
    return "absent"


def cell(sbrig: Path, work: Path, n: int, cv: float, trials: int, seed: int) -> dict:
    rng = random.Random(seed)
    out = {"false_regressed": 0, "unchanged": 0, "refused": 0, "nmetrics": 0,
           "det_1x": 0, "det_15x": 0, "det_load": 0}
    for _ in range(trials):
        doc = compare(sbrig, work, [one_run(rng, cv, "base") for _ in range(n)],
                      [one_run(rng, cv, "new") for _ in range(n)])
        if doc is None:
            out["refused"] += 1
            continue
        out["nmetrics"] = max(out["nmetrics"], len(doc["metrics"]))
        out["false_regressed"] += doc["verdict"] == "regressed"
        out["unchanged"] += doc["verdict"] == "unchanged"
        for key, gps, load in (("det_1x", 1 + MIN_CHANGE, False),
                               ("det_15x", 1 + 1.5 * MIN_CHANGE, False),
                               ("det_load", 1.20, True)):
            doc = compare(sbrig, work, [one_run(rng, cv, "base") for _ in range(n)],
                          [one_run(rng, cv, "new", gps=gps, load=load) for _ in range(n)])
            out[key] += doc is not None and \
                verdict_of(doc, "blocker_energy_per_wakeup_uJ", "gps") == "regressed"
    return out


def pct(k: int, trials: int) -> str:
    return f"{100.0 * k / trials:5.1f} %"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--n", default="5,10,20")
    ap.add_argument("--cv", default="0.02,0.05")
    ap.add_argument("--seed", type=int, default=24)
    ap.add_argument("--sbrig", type=Path, default=SBRIG)
    a = ap.parse_args()
    if not a.sbrig.exists():
        print(f"{a.sbrig}: missing (make -C host)", file=sys.stderr)
        return 2
    ns = [int(x) for x in a.n.split(",")]
    cvs = [float(x) for x in a.cv.split(",")]
    t0 = time.monotonic()
    print(f"sbrig compare's error rates: {a.trials} comparisons per cell and per "
          f"column, {len(BLOCKERS)} blockers (one leaking in {LEAK_P:.0%} of runs), "
          f"Poisson activations (mean {ACTIVATIONS}), minimum change "
          f"{MIN_CHANGE:.0%} (blocker energy per wakeup)")
    print(f"{'n':>3} {'CV':>5} {'metrics':>7} {'refused':>8} {'false regr.':>12} "
          f"{'unchanged':>10} {'det. 1x':>9} {'det. 1.5x':>10} {'+20 % load':>11}")
    with tempfile.TemporaryDirectory(prefix="bench-verdicts-") as tmp:
        for n in ns:
            for cv in cvs:
                c = cell(a.sbrig, Path(tmp) / "w", n, cv, a.trials,
                         a.seed * 1000 + n * 10 + int(cv * 100))
                t = a.trials
                print(f"{n:>3} {cv:>5.0%} {c['nmetrics']:>7} {pct(c['refused'], t):>8} "
                      f"{pct(c['false_regressed'], t):>12} {pct(c['unchanged'], t):>10} "
                      f"{pct(c['det_1x'], t):>9} {pct(c['det_15x'], t):>10} "
                      f"{pct(c['det_load'], t):>11}", flush=True)
    print(f"({time.monotonic() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
