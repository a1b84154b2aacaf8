#!/usr/bin/python3
"""bench_history.py - sbrig history trend next to a pandas reference, on the same database.

    /usr/bin/python3 tests/bench/bench_history.py [--commits 1000] [--runs 10]
                                                  [--sbrig PATH]

Builds (once, cached under build/bench/history/) ``--commits`` x ``--runs``
report.json files (tests/synth/runs.py fake_report: energy per wakeup 100 mJ
with 1 % noise, +5 % from 60 % of the commits on, -5 % from 80 %) and adds
them to a history database with ``sbrig history add`` (timed: runs/s). Then:

  * ``sbrig history trend SCENARIO energy_per_wakeup_uJ --json OUT``
    (build/host/release/sbrig): wall time, CPU time, peak RSS (GNU time's,
    of that child alone);
  * the reference (``--pandas-run DB OUT.json``, a child process of its
    own): pandas.read_sql of the same database, a groupby per commit (its
    median), and the same rule (history-format.md, "Change points":
    windows of 5 commits' medians, Welch's t >= 7, the metric's minimum
    change, a local maximum of |t|) with numpy.
    Welch's t is written out with numpy (it is
    scipy.stats.ttest_ind(..., equal_var=False).statistic).

and prints them side by side with the ratio; both must find the same
change points (the commits of the two steps, neither provisional). A benchmark, not a test:
exit 0 when it ran, 1 when the two disagree, 2 when sbrig is missing.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.bench.gnutime import measure  # noqa: E402
from tests.synth import runs  # noqa: E402

SBRIG = REPO / "build" / "host" / "release" / "sbrig"
CACHE = REPO / "build" / "bench" / "history"
METRIC = "energy_per_wakeup_uJ"


def build(commits: int, per: int, sbrig: Path) -> tuple[Path, float]:
    d = CACHE / f"{commits}x{per}"
    db = d / "history.db"
    done = d / "added"
    if done.exists():
        return db, float(done.read_text())
    rng = random.Random(1)
    reports = []
    for k in range(commits):
        f = 1.0 if k < 0.6 * commits else 1.05 if k < 0.8 * commits else 1.05 * 0.95
        for _ in range(per):
            reports.append(runs.fake_report(rng, energy_uJ=100_000 * f, git_sha=f"c{k:04d}"))
    paths = runs.write_reports(reports, d / "reports")
    db.unlink(missing_ok=True)
    t = time.monotonic()
    for i in range(0, len(paths), 1000):      # argv stays short
        subprocess.run([str(sbrig), "history", "--db", str(db), "add",
                        *map(str, paths[i:i + 1000])], check=True, stdout=subprocess.DEVNULL)
    rate = len(paths) / (time.monotonic() - t)
    done.write_text(f"{rate}\n")
    return db, rate


def pandas_run(db: Path, out: Path) -> None:
    import sqlite3

    import numpy as np
    import pandas as pd

    rule = {"window": 5, "t_threshold": 7.0, "min_change": 0.03, "min_abs": 0.0}
    with sqlite3.connect(db) as c:
        df = pd.read_sql("SELECT c.seq, r.commit_sha, m.value FROM runs r JOIN metrics m "
                         "ON m.run_id = r.id JOIN commits c ON c.sha = r.commit_sha "
                         "WHERE m.metric = ? AND m.blocker = ''", c, params=(METRIC,))
    groups = df.sort_values("seq").groupby("seq", sort=True)
    commits = [g["commit_sha"].iloc[0] for _, g in groups]
    med = groups["value"].median().to_numpy()      # builds count once: their median
    n, w = len(med), rule["window"]
    side = 3 if w >= 3 else 2
    ts, cands = np.zeros(n + 1), {}
    for k in range(1, n):
        b, f = med[max(0, k - w):k], med[k:min(n, k + w)]
        if len(b) < side or len(f) < side:
            continue
        se = np.sqrt(b.var(ddof=1) / len(b) + f.var(ddof=1) / len(f))
        mb, mf = b.mean(), f.mean()
        t = (mf - mb) / se if se > 0 else (0.0 if mf == mb else np.copysign(np.inf, mf - mb))
        ts[k] = t
        before, after = float(np.median(b)), float(np.median(f))
        change = abs(after - before)
        thr = max(rule["min_change"] * abs(before), rule["min_abs"])
        if abs(t) >= rule["t_threshold"] and change >= thr and change > 0:
            cands[k] = (before, after, len(b) < w or len(f) < w)
    steps, last = [], None
    for k, (before, after, provisional) in cands.items():
        # a local maximum of |t|, the first of a plateau (Perfherder)
        t = abs(ts[k])
        if abs(ts[k - 1]) > t or abs(ts[k + 1]) > t:
            continue
        if last == k - 1 and abs(ts[k - 1]) == t:
            continue
        steps.append({"commit": commits[k], "before": before, "after": after,
                      "provisional": provisional})
        last = k
    out.write_text(json.dumps({"steps": steps}))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commits", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--sbrig", type=Path, default=SBRIG)
    ap.add_argument("--pandas-run", nargs=2, type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.pandas_run:
        pandas_run(*a.pandas_run)
        return 0
    if not a.sbrig.exists():
        print(f"{a.sbrig}: missing (make host)", file=sys.stderr)
        return 2
    db, add_rate = build(a.commits, a.runs, a.sbrig)
    out = db.parent / "trend.json"
    ref = db.parent / "ref.json"
    s = measure([str(a.sbrig), "history", "--db", str(db), "trend", "keypress", METRIC,
                 "--json", str(out)])
    p = measure([sys.executable, __file__, "--pandas-run", str(db), str(ref)])
    mine = [(st["commit"], st["provisional"]) for st in json.loads(out.read_text())["steps"]]
    theirs = [(st["commit"], st["provisional"]) for st in json.loads(ref.read_text())["steps"]]
    print(f"history trend: {a.commits} commits x {a.runs} runs "
          f"(history add: {add_rate:.0f} runs/s)")
    print(f"{'':18} {'wall s':>9} {'cpu s':>9} {'peak MB':>9}")
    for name, m in (("sbrig", s), ("pandas+numpy", p)):
        print(f"{name:18} {m['wall_s']:9.3f} {m['cpu_s']:9.3f} {m['rss_MB']:9.1f}")
    print(f"{'ratio (pandas/sbrig)':18} {p['wall_s'] / s['wall_s']:9.1f} "
          f"{p['cpu_s'] / max(s['cpu_s'], 1e-6):9.1f} {p['rss_MB'] / s['rss_MB']:9.1f}")
    print(f"change points: sbrig {mine}, reference {theirs}")
    if mine != theirs:
        print("the two disagree", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
