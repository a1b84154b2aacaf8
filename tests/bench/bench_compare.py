#!/usr/bin/python3
"""bench_compare.py - sbrig compare next to a pandas + scipy implementation of the same tests.

    /usr/bin/python3 tests/bench/bench_compare.py [--runs 30] [--repeat 5]
                                                  [--sbrig PATH]

Writes (once, cached under build/bench/compare/) ``--runs`` base and
``--runs`` new report.json files (tests/synth/runs.py fake_report, 1 %
noise): the new runs cost 5 % more per wakeup, their ``gps`` blocker twice
as much, and one of them leaks ``gps``. Then, ``--repeat`` times each,
the best of them kept:

  * ``sbrig compare BASE... -- NEW... -o OUT`` (build/host/release/sbrig;
    exit 1, "a metric regressed", is expected): wall time, CPU time, peak
    RSS (GNU time's, of that child alone);
  * the reference (``--pandas-run OUT.json BASE... -- NEW...``, a child
    process of its own): the same runs read with json into one pandas
    DataFrame (a row per run, metric and blocker), grouped per metric, and
    the rule of host/doc/compare-format.md (version 2) with scipy:
    Mann-Whitney U (``scipy.stats.mannwhitneyu``, two-sided; exact without
    ties and up to 2500 pairs, else asymptotic with the continuity
    correction), the Hodges-Lehmann shift and its Moses interval (the rank
    from scipy's exact U distribution), counts by the exact conditional
    Poisson test (``scipy.stats.binom``), leaks by
    ``scipy.stats.fisher_exact``, the Benjamini-Hochberg adjustment, the
    default thresholds, the verdicts in the documented order.

and prints them side by side with the ratio. Both must reach the same
verdict for every metric and the same raw and adjusted p-values (to the 6
significant digits compare.json keeps); the largest difference of the
intervals (relative to the base median: compare.json's rounding) is
printed. The reference's time without Python's start and its
imports is printed too. A benchmark,
not a test: exit 0 when it ran and the two agree, 1 when they disagree,
2 when sbrig is missing.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.bench.gnutime import measure  # noqa: E402
from tests.synth import runs  # noqa: E402

SBRIG = REPO / "build" / "host" / "release" / "sbrig"
CACHE = REPO / "build" / "bench" / "compare"

# compare-format.md, "Thresholds": the defaults (min_change, min_abs)
DEFAULTS = {
    "energy_total_uJ": (0.03, 0),
    "energy_per_wakeup_uJ": (0.03, 0),
    "awake_per_wakeup_ns": (0.05, 1_000_000),
    "baseline_uW": (0.05, 100),
    "latency_median_ns": (0.05, 1_000_000),
    "latency_p95_ns": (0.10, 2_000_000),
    "blocker_energy_per_wakeup_uJ": (0.05, 1_000),
    "blocker_activations": (0.5, 3),
    "aborted_suspends": (0, 1),
    "unknown_wakeups": (0, 1),
    "leak": (0, 0.3),
}
# the count metrics: an exact Poisson test on their totals
DEFAULTS_UNIT_COUNT = {"blocker_activations": True, "aborted_suspends": True,
                       "unknown_wakeups": True}
ALPHA, CONFIDENCE, MIN_RUNS = 0.01, 0.95, 5


def build(n: int) -> tuple[list[Path], list[Path]]:
    d = CACHE / f"{n}"
    if (d / "done").exists():
        return (sorted((d / "base").glob("*.json")), sorted((d / "new").glob("*.json")))
    rng = random.Random(7)
    base = [runs.fake_report(rng, energy_uJ=100_000, git_sha="base",
                             blockers={"wifi": 50_000, "gps": 10_000}) for _ in range(n)]
    new = [runs.fake_report(rng, energy_uJ=105_000, git_sha="new",
                            blockers={"wifi": 50_000, "gps": 20_000},
                            leak="gps" if i == 0 else None) for i in range(n)]
    b = runs.write_reports(base, d / "base")
    w = runs.write_reports(new, d / "new")
    (d / "done").write_text("")
    return b, w


def best(cmd: list[str], repeat: int, ok: tuple[int, ...] = (0,)) -> dict:
    ms = [measure(cmd, ok) for _ in range(repeat)]
    return {"wall_s": min(m["wall_s"] for m in ms), "cpu_s": min(m["cpu_s"] for m in ms),
            "rss_MB": max(m["rss_MB"] for m in ms)}


# ---- the reference: pandas + scipy -----------------------------------------

def rows_of(side: str, r: dict) -> list[tuple]:
    """(side, metric, blocker, value) of one report, as compare.c takes them."""
    wk, lat = r["wakeups"], r["latency"]
    nw = len(wk)
    out = [(side, "energy_total_uJ", "", r["energy"]["total_uJ"])]
    if nw:
        out.append((side, "energy_per_wakeup_uJ", "", sum(w["energy_uJ"] for w in wk) / nw))
        out.append((side, "awake_per_wakeup_ns", "", sum(w["awake_ns"] for w in wk) / nw))
    if r["energy"].get("baseline_uW") is not None:
        out.append((side, "baseline_uW", "", r["energy"]["baseline_uW"]))
    if lat["n"] > 0:
        out.append((side, "latency_median_ns", "", lat["median_ns"]))
        out.append((side, "latency_p95_ns", "", lat["p95_ns"]))
    out.append((side, "aborted_suspends", "",
                sum(f["kind"] == "aborted_suspend" for f in r["findings"])))
    out.append((side, "unknown_wakeups", "", r["unknown_wake_count"]))
    return out


def pandas_run(out: Path, base: list[Path], new: list[Path]) -> None:
    t0 = time.monotonic()
    import numpy as np
    import pandas as pd
    from scipy import stats
    from scipy.stats._mannwhitneyu import _mwu_state

    t1 = time.monotonic()
    reports = {"base": [json.loads(p.read_text()) for p in base],
               "new": [json.loads(p.read_text()) for p in new]}
    rows = []
    names = sorted({b["name"] for rs in reports.values() for r in rs for b in r["blockers"]})
    leaks = sorted({f["blocker"] for rs in reports.values() for r in rs
                    for f in r["findings"] if f["kind"] == "leak"})
    for side, rs in reports.items():
        for r in rs:
            rows += rows_of(side, r)
            by = {b["name"]: b for b in r["blockers"]}
            nw = len(r["wakeups"])
            for name in sorted(set(names) | set(leaks)):
                b = by.get(name)
                if nw:
                    rows.append((side, "blocker_energy_per_wakeup_uJ", name,
                                 b["energy_uJ"] / nw if b else 0.0))
                rows.append((side, "blocker_activations", name, b["activations"] if b else 0))
            for name in leaks:
                rows.append((side, "leak", name, float(any(
                    f["kind"] == "leak" and f["blocker"] == name for f in r["findings"]))))
    df = pd.DataFrame(rows, columns=["side", "metric", "blocker", "value"])

    def moses_k(m: int, n: int) -> int:
        """The largest k with P(U <= k - 1) <= (1 - CONFIDENCE) / 2."""
        tail = (1 - CONFIDENCE) / 2
        if m * n > 2500:
            z = stats.norm.ppf(1 - tail)
            return max(0, int(np.floor(m * n / 2 - z * np.sqrt(m * n * (m + n + 1) / 12))))
        cdf = _mwu_state.cdf(k=np.arange(m * n + 1), m=m, n=n)
        return int(np.searchsorted(cdf, tail * (1 + 1e-12), side="right"))

    entries = []
    for (metric, blocker), g in df.groupby(["metric", "blocker"], sort=True):
        b = g.loc[g["side"] == "base", "value"].to_numpy(dtype=float)
        n = g.loc[g["side"] == "new", "value"].to_numpy(dtype=float)
        v = {"metric": metric, "blocker": blocker or None, "median_base": float(np.median(b))}
        min_change, min_abs = DEFAULTS[metric]
        if metric == "leak":
            kb, kn = int(b.sum()), int(n.sum())
            if kn * len(b) >= kb * len(n):
                p = stats.fisher_exact([[kn, len(n) - kn], [kb, len(b) - kb]],
                                       alternative="greater").pvalue
            else:
                p = stats.fisher_exact([[kb, len(b) - kb], [kn, len(n) - kn]],
                                       alternative="greater").pvalue
            v.update(p_value=float(p), change=kn / len(n) - kb / len(b), thr=min_abs,
                     ci=None)
        elif DEFAULTS_UNIT_COUNT.get(metric):
            sb, sn = b.sum(), n.sum()
            q = len(n) / (len(b) + len(n))
            p = 1.0 if sb + sn == 0 else min(1.0, 2 * min(stats.binom.cdf(sn, sb + sn, q),
                                                          stats.binom.sf(sn - 1, sb + sn, q)))
            change = sn / len(n) - sb / len(b)
            se = np.sqrt(sn / len(n) ** 2 + sb / len(b) ** 2)
            z = stats.norm.ppf(1 - (1 - CONFIDENCE) / 2)
            v.update(p_value=float(p), change=change, ci=[change - z * se, change + z * se],
                     thr=max(min_change * sb / len(b), min_abs))
        else:
            d = np.sort(np.subtract.outer(n, b).ravel())
            k = moses_k(len(b), len(n))
            both = np.concatenate([b, n])
            if np.all(both == both[0]):
                p = 1.0
            else:
                exact = len(np.unique(both)) == len(both) and len(b) * len(n) <= 2500
                p = float(stats.mannwhitneyu(n, b, alternative="two-sided",
                                             use_continuity=True,
                                             method="exact" if exact else "asymptotic").pvalue)
            v.update(p_value=p, change=float(np.median(d)),
                     ci=[float(d[k - 1]), float(d[len(d) - k])] if k >= 1 else None,
                     thr=max(min_change * abs(v["median_base"]), min_abs))
        v["n"] = min(len(b), len(n))
        entries.append(v)
    # Benjamini-Hochberg, the leaks a family of their own
    for leaks in (False, True):
        fam = [v for v in entries if (v["metric"] == "leak") == leaks]
        order = sorted(range(len(fam)), key=lambda i: fam[i]["p_value"])
        run = 1.0
        for rank in range(len(fam), 0, -1):
            v = fam[order[rank - 1]]
            run = min(run, v["p_value"] * len(fam) / rank)
            v["p_adjusted"] = run
    verdicts = []
    for v in entries:
        change, thr, p = v["change"], v["thr"], v["p_adjusted"]
        matters = abs(change) >= thr if thr > 0 else change != 0
        sig = p <= ALPHA
        if v["metric"] == "leak":
            matters = abs(change) >= thr and change != 0
            verdict = (("regressed" if change > 0 else "improved") if sig and matters
                       else "unchanged" if not matters else "inconclusive")
        elif v["n"] < MIN_RUNS:
            verdict = "inconclusive"
        elif sig and matters:
            verdict = "regressed" if change > 0 else "improved"
        elif not sig and not matters:
            verdict = "unchanged"
        elif sig:
            lo, hi = v["ci"]
            within = (-thr < lo and hi < thr) if thr > 0 else lo == hi == 0
            verdict = "unchanged" if within else "inconclusive"
        else:
            verdict = "inconclusive"
        v["verdict"] = verdict
        verdicts.append(v)
    out.write_text(json.dumps({"metrics": verdicts, "import_s": t1 - t0,
                               "work_s": time.monotonic() - t1}))


# ---- the comparison ----------------------------------------------------------

def key(m: dict) -> tuple:
    return (m["metric"], m.get("blocker") or "")


def agree(mine: dict, ref: dict) -> tuple[list[str], float]:
    """The disagreements, and the largest interval difference relative to
    the base median."""
    a = {key(m): m for m in mine["metrics"]}
    b = {key(m): m for m in ref["metrics"]}
    bad, ci_d = [], 0.0
    if set(a) != set(b):
        bad.append(f"metrics differ: only sbrig {sorted(set(a) - set(b))}, "
                   f"only reference {sorted(set(b) - set(a))}")
    for k in sorted(set(a) & set(b)):
        x, y = a[k], b[k]
        if x["verdict"] != y["verdict"]:
            bad.append(f"{k}: sbrig {x['verdict']} ({x.get('reason')}), reference {y['verdict']}")
        for f in ("p_value", "p_adjusted"):
            px, py = x[f], y[f]
            if abs(px - py) > 1e-5 * max(abs(py), 1e-300):   # compare.json: 6 digits
                bad.append(f"{k}: {f} {px} vs {py}")
        if (x["ci"] is None) != (y["ci"] is None):
            bad.append(f"{k}: interval {x['ci']} vs {y['ci']}")
        elif x["ci"]:
            scale = abs(y["median_base"]) or 1.0
            ci_d = max(ci_d, *(abs(u - v) / scale for u, v in zip(x["ci"], y["ci"])))
    return bad, ci_d


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30, help="runs a side (default 30)")
    ap.add_argument("--repeat", type=int, default=5, help="timings kept: the best of N")
    ap.add_argument("--sbrig", type=Path, default=SBRIG)
    if sys.argv[1:2] == ["--pandas-run"]:      # the reference's child process
        out, *rest = sys.argv[2:]
        cut = rest.index("--")
        pandas_run(Path(out), [Path(p) for p in rest[:cut]], [Path(p) for p in rest[cut + 1:]])
        return 0
    a = ap.parse_args()
    if not a.sbrig.exists():
        print(f"{a.sbrig}: missing (make host)", file=sys.stderr)
        return 2
    base, new = build(a.runs)
    d = CACHE / f"{a.runs}"
    args = [*map(str, base), "--", *map(str, new)]
    s = best([str(a.sbrig), "compare", "-o", str(d / "out"), *args], a.repeat, ok=(1,))
    p = best([sys.executable, __file__, "--pandas-run", str(d / "ref.json"), *args], a.repeat)
    mine = json.loads((d / "out" / "compare.json").read_text())
    ref = json.loads((d / "ref.json").read_text())
    bad, ci_d = agree(mine, ref)
    print(f"compare: {a.runs} base x {a.runs} new runs, {len(ref['metrics'])} metrics "
          f"(best of {a.repeat})")
    print(f"{'':22} {'wall s':>9} {'cpu s':>9} {'peak MB':>9}")
    for name, m in (("sbrig", s), ("pandas+scipy", p)):
        print(f"{name:22} {m['wall_s']:9.3f} {m['cpu_s']:9.3f} {m['rss_MB']:9.1f}")
    print(f"{'ratio (pandas/sbrig)':22} {p['wall_s'] / max(s['wall_s'], 1e-3):9.1f} "
          f"{p['cpu_s'] / max(s['cpu_s'], 1e-3):9.1f} {p['rss_MB'] / s['rss_MB']:9.1f}")
    print(f"(the reference's work without Python's start and imports: {ref['work_s']:.3f} s, "
          f"its imports {ref['import_s']:.3f} s)")
    counts = {}
    for m in mine["metrics"]:
        counts[m["verdict"]] = counts.get(m["verdict"], 0) + 1
    print(f"verdicts: sbrig {mine['verdict']} {counts}; the same for every metric: "
          f"{'yes' if not bad else 'NO'}; p-values equal; largest interval difference "
          f"{100 * ci_d:.2g} % of the base median")
    for line in bad:
        print(line, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
