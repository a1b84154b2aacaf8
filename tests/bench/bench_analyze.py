#!/usr/bin/python3
"""bench_analyze.py - sbrig analyze next to a pandas reference, on the same captures.

    /usr/bin/python3 tests/bench/bench_analyze.py [--duration 3600] [--short 600]
                                                  [--formats 2,1] [--sbrig PATH]
                                                  [--pandas-only] [--no-pandas]

Builds (once, cached under build/bench/analyze/) synthetic captures with
tests/synth/synthcap.py's ``bench`` scenario: ``--duration`` seconds (1 h:
12.6 M samples at 3.5 kS/s, ~340 wake episodes with overlapping blockers,
alarms, aborted suspends and gaps) and ``--short`` seconds (10 min), each
in format 2 (samples.bin) and format 1 (samples.tsv). Then, in one run, on
each capture:

  * ``sbrig analyze CAPTURE -o OUT`` (build/host/release/sbrig): wall
    time, CPU time and peak RSS (wait4() of that child alone), samples/s;
    its report.json is checked against the capture's truth.json
    (synthcap.compare: 1 % or the derived bound);
  * ``sbrig analyze -v`` once more, not timed from outside: its timing
    line splits the command into the analysis pass (reading the capture,
    the timeline, the edges, the integration), report.json and
    report.html, so the pass's own samples/s is printed next to the whole
    command's (the whole command is what the target counts);
  * the pandas reference (this file's ``pandas_attribution()``, run as a
    child process of its own: ``--pandas-run CAPTURE OUT.json``): the same
    trapezoids, gaps and fixed attribution rule written the straightforward
    pandas/numpy way (read_csv / np.fromfile, a trapezoid per sample
    interval, trapezoids that straddle a change of the blocker set split by
    interpolation, a groupby per stretch, the equal split in a loop over
    stretches); its figures are checked against the truth too.

and prints them side by side with the ratio, against the targets of
issue 9: >= 100 M samples/s from the binary format, >= 10x pandas, and
peak memory independent of the sample count (the 1 h and the 10 min RSS
next to each other). It is a benchmark, not a test: it exits 0 when it
ran (``--strict``: 1 if a target is missed), 2 when ``sbrig analyze`` is
missing (``--pandas-only`` measures the reference alone).

The reference reads the events' host_t_ns as recorded: the bench scenario
has exact online host times, so it needs no clock fit (sbrig's time
includes its fit). tests/test_synthcap.py tests the reference itself.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.capture import meta_section, unescape  # noqa: E402
from tests.synth import synthcap  # noqa: E402

SBRIG = REPO / "build" / "host" / "release" / "sbrig"
CACHE = REPO / "build" / "bench" / "analyze"
NS = 1_000_000_000
TARGET_MSPS = 100e6
TARGET_RATIO = 10.0


# ---- the pandas reference ---------------------------------------------------

def _read_samples(cap: Path):
    """(t_ns int64, power_uW float64) numpy arrays of a v1 or v2 capture."""
    import numpy as np
    import pandas as pd
    end = meta_section(cap, "end") or {}
    if (cap / "samples.bin").exists():
        size = (cap / "samples.bin").stat().st_size
        n = (size - 32) // 32                      # a cut last record is ignored
        rec = np.dtype([("t", "<i8"), ("p", "<i8"), ("c", "<i4"), ("b", "<i4"),
                        ("s", "<i4"), ("r", "<u4")])
        arr = np.fromfile(cap / "samples.bin", dtype=rec, count=n, offset=32)
        df = pd.DataFrame({"t_ns": arr["t"], "power_uW": arr["p"]})
    else:
        nrows = int(end["samples"]) if "samples" in end else None
        df = pd.read_csv(cap / "samples.tsv", sep="\t", usecols=["t_ns", "power_uW"],
                         dtype={"t_ns": np.int64, "power_uW": np.int64}, nrows=nrows,
                         engine="c")
        if nrows is None and not (cap / "samples.tsv").read_bytes()[-1:] == b"\n":
            df = df.iloc[:-1]                      # a cut last line
    return df["t_ns"].to_numpy(), df["power_uW"].to_numpy(dtype=np.float64)


EDGE_WINDOW_NS = 1_000_000_000


def _refine_edges(susp: list, t, p) -> int:
    """report-format.md, "State edges by the power": move each stretch's
    enter and exit ends (in place) to where the samples show the low
    level; the total time moved."""
    import numpy as np

    def threshold(x):
        n8 = len(x) // 8 * 8
        means = list(x[:n8].reshape(-1, 8).mean(axis=1)) if n8 else []
        if len(x) > n8:
            means.append(x[n8:].mean())
        return 2 * max(min(means), 0.0) + 1000.0

    moved = 0
    for s in susp:
        a, b, fe, fx = s
        win = min(EDGE_WINDOW_NS, (b - a) // 2)
        if win <= 0:
            continue
        if fe:
            i0, i1 = np.searchsorted(t, a, "left"), np.searchsorted(t, a + win, "right")
            x = p[i0:i1]
            if len(x) >= 2:
                low = np.flatnonzero(x <= threshold(x))
                if len(low) and low[0] >= 1:
                    moved += int(t[i0 + low[0]]) - a
                    s[0] = int(t[i0 + low[0]])
        if fx:
            i0, i1 = np.searchsorted(t, b - win, "left"), np.searchsorted(t, b, "right")
            x = p[i0:i1]
            if len(x) >= 2:
                low = np.flatnonzero(x <= threshold(x))
                if len(low) and low[-1] + 1 < len(x):
                    moved += b - int(t[i0 + low[-1] + 1])
                    s[1] = int(t[i0 + low[-1] + 1])
    return moved


def _timeline(cap: Path, t0: int, t1: int, trim: int, samp_t, samp_p):
    """Stretches of constant state from the events (as recorded, the
    suspended ones' ends moved by the power): sorted start times, per
    stretch (suspended, active names), the blockers' spans, the suspended
    spans and the time moved. Python over the events: there are few."""
    import numpy as np
    import pandas as pd
    ev = pd.read_csv(cap / "events.tsv", sep="\t", dtype=str, keep_default_na=False,
                     quoting=3)
    st = pd.read_csv(cap / "stats.tsv", sep="\t", dtype=str, keep_default_na=False,
                     quoting=3)
    active: dict[str, int] = {}
    spans: list[tuple[str, int, int]] = []
    susp: list[list[int]] = []
    if len(st):
        # active in the first snapshot and not blocked before it: held
        # since before the capture started
        ts = int(st.t_ns.iloc[0])
        first = st[st.t_ns == st.t_ns.iloc[0]]
        blocked_before = {unescape(a) for a, typ, h in zip(ev.arg, ev.type, ev.host_t_ns)
                          if typ == "block" and int(h) < ts}
        for name, since in zip(first.name, first.active_since_ns):
            if int(since) > 0 and unescape(name) not in blocked_before:
                active[unescape(name)] = t0
    seen_block: set[str] = set()
    boot = None
    in_susp = None              # start of the suspended stretch we are in
    in_enter = False            # ... and whether an enter began it
    platform_seen = False       # an enter/exit was seen (a first exit: asleep at t0)
    for t, b, typ, arg in zip(ev.host_t_ns.astype(np.int64), ev.boot_id, ev.type, ev.arg):
        t = int(min(max(t, t0), t1))
        if boot is not None and b != boot:          # a new boot ends everything
            for n, a in active.items():
                spans.append((n, a, t))
            active.clear()
            if in_susp is not None:
                susp.append([in_susp, t, in_enter, False])
                in_susp = None
        boot = b
        if typ in ("block", "unblock"):
            name = unescape(arg)
            if typ == "block":
                seen_block.add(name)
                active.setdefault(name, t)
            elif name in active:
                spans.append((name, active.pop(name), t))
            elif name not in seen_block:
                seen_block.add(name)
                spans.append((name, t0, t))          # held since before the start
        elif typ == "enter":
            platform_seen = True
            if in_susp is None:
                in_susp, in_enter = t, True
        elif typ == "exit":
            if in_susp is None and not platform_seen:
                in_susp, in_enter = t0, False        # the capture started asleep
            platform_seen = True
            if in_susp is not None:
                susp.append([in_susp, t, in_enter, True])
                in_susp = None
    for n, a in active.items():
        spans.append((n, a, t1))
    if in_susp is not None:
        susp.append([in_susp, t1, in_enter, False])
    moved = _refine_edges(susp, samp_t, samp_p)
    susp = [(a, b) for a, b, _, _ in susp]
    cuts = {t0, t1}
    for _, a, b in spans:
        cuts.update((a, b))
    for a, b in susp:
        cuts.update((a, b))
    starts = np.array(sorted(c for c in cuts if t0 <= c < t1), dtype=np.int64)
    info = []
    for i, a in enumerate(starts):
        s = any(x <= a < y for x, y in susp)
        names = tuple(sorted({n for n, x, y in spans if x <= a < y}))
        info.append((s, names))
    return starts, info, spans, susp, moved


def _baseline(t, p, susp, trim: int):
    """The median of the finest trace buckets' sample means wholly inside
    the trimmed suspended stretches (buckets of 1 ms doubled until there
    are at most 100 000 over the capture, from the first sample)."""
    import numpy as np
    import pandas as pd
    t0 = int(t[0])
    bucket = 1_000_000
    while (int(t[-1]) - t0) // bucket >= 100_000:
        bucket *= 2
    idx = (t - t0) // bucket
    means = pd.Series(p).groupby(idx).mean()
    lo = means.index.to_numpy() * bucket + t0
    hi = lo + bucket
    inside = np.zeros(len(lo), dtype=bool)
    for a, b in susp:
        inside |= (lo >= a + trim) & (hi <= b - trim)
    v = means.to_numpy()[inside]
    return float(np.median(v)) if len(v) else None


def pandas_attribution(cap) -> dict:
    """report-format.md's energy, baseline and attribution figures of a
    capture, the straightforward pandas way (a reference for the
    benchmark, not the analysis): a dict shaped like report.json's
    ``energy``, ``blockers`` and ``unattributed``."""
    import numpy as np
    import pandas as pd
    cap = Path(cap)
    t, p = _read_samples(cap)
    n = len(t)
    if n < 2:
        return {"energy": {"total_uJ": 0.0}, "blockers": [], "unattributed": {},
                "samples": n}
    t0, t1 = int(t[0]), int(t[-1])
    dt = np.diff(t)
    med = float(np.median(dt))
    gaps = pd.read_csv(cap / "gaps.tsv", sep="\t", dtype=np.int64)
    skip = np.isin(t[:-1], gaps.t_ns.to_numpy()) | (dt > 10 * med)
    starts, info, spans, susp_spans, moved = _timeline(cap, t0, t1, int(2 * med), t, p)

    # a trapezoid per interval, grouped by the stretch its start lies in
    e = (p[:-1] + p[1:]) / 2 * dt
    cut = starts[1:]                                   # changes inside the capture
    k = np.searchsorted(t, cut, side="right") - 1      # interval holding each change
    kc = np.clip(k, 0, n - 2)
    inner = (k >= 0) & (k < n - 1) & (t[kc] != cut) & ~skip[kc]
    split = np.zeros(n - 1, dtype=bool)
    split[k[inner]] = True
    whole = ~split & ~skip
    seg = np.searchsorted(starts, t[:-1], side="right") - 1
    df = pd.DataFrame({"seg": seg[whole], "e": e[whole], "d": dt[whole]})
    # the split intervals: pieces between the samples and the changes in them
    ks = np.flatnonzero(split & ~skip)
    pk = np.concatenate([ks, k[inner]])
    pt = np.concatenate([t[ks], cut[inner]])
    order = np.lexsort((pt, pk))
    pk, pt = pk[order], pt[order]
    nxt_t = np.append(pt[1:], 0)
    last = np.append(pk[1:] != pk[:-1], True)
    nxt_t[last] = t[pk[last] + 1]
    frac0 = (pt - t[pk]) / dt[pk]
    frac1 = (nxt_t - t[pk]) / dt[pk]
    p0 = p[pk] + (p[pk + 1] - p[pk]) * frac0
    p1 = p[pk] + (p[pk + 1] - p[pk]) * frac1
    pieces = pd.DataFrame({"seg": np.searchsorted(starts, pt, side="right") - 1,
                           "e": (p0 + p1) / 2 * (nxt_t - pt), "d": nxt_t - pt})
    by = pd.concat([df, pieces]).groupby("seg")[["e", "d"]].sum()
    E = np.zeros(len(starts))
    D = np.zeros(len(starts))
    E[by.index.to_numpy()] = by.e.to_numpy() / NS
    D[by.index.to_numpy()] = by.d.to_numpy()

    susp = np.array([x[0] for x in info])
    base = _baseline(t, p, susp_spans, int(2 * med))
    bl: dict[str, dict] = {}
    un_e, un_d = 0.0, 0
    for i, (s, names) in enumerate(info):
        if s:
            continue
        if not names:
            un_e += E[i]
            un_d += D[i]
            continue
        kk = len(names)
        for name in names:
            b = bl.setdefault(name, {"name": name, "energy_uJ": 0.0,
                                     "exclusive_energy_uJ": 0.0, "above_baseline_uJ": 0.0})
            b["energy_uJ"] += E[i] / kk
            if kk == 1:
                b["exclusive_energy_uJ"] += E[i]
            if base is not None:
                b["above_baseline_uJ"] += (E[i] - base * D[i] / NS) / kk
    for name, a, b_ in spans:
        x = bl.setdefault(name, {"name": name, "energy_uJ": 0.0,
                                 "exclusive_energy_uJ": 0.0, "above_baseline_uJ": 0.0})
        x["activations"] = x.get("activations", 0) + 1
        x["active_ns"] = x.get("active_ns", 0) + (b_ - a)
        x["max_active_ns"] = max(x.get("max_active_ns", 0), b_ - a)
        x["active_at_end"] = x.get("active_at_end", False) or b_ >= t1
        x["kind"] = "builtin" if name in synthcap.BUILTIN else "suspend_blocker"
        if base is None:
            x["above_baseline_uJ"] = None
    return {
        "samples": n,
        "energy": {"total_uJ": float(E.sum()), "suspended_uJ": float(E[susp].sum()),
                   "awake_uJ": float(E[~susp].sum()), "suspended_ns": int(D[susp].sum()),
                   "awake_ns": int(D[~susp].sum()), "baseline_uW": base,
                   "transition_ns": moved},
        "blockers": sorted(bl.values(), key=lambda b: -b["energy_uJ"]),
        "unattributed": {"awake_ns": int(un_d), "energy_uJ": float(un_e)},
    }


def check_reference(result: dict, truth: dict) -> list[str]:
    """Mismatches of the reference's figures against a truth (the sections
    it computes; no stats_check)."""
    t = json.loads(json.dumps(truth))
    for b in t["blockers"]:
        b["stats_check"] = None
    return synthcap.compare(result, t, sections=("energy", "blockers", "unattributed"))


# ---- measuring ----------------------------------------------------------------

TIME = Path("/usr/bin/time")     # GNU time (Debian's "time")


def run_measured(argv: list[str], log: Path) -> dict:
    """Run @argv as a child; its wall time, CPU time and peak RSS.

    The RSS comes from GNU time (``-f %M``): a child forked straight from
    this process would count this process's own RSS at the fork in its
    ru_maxrss (Linux keeps the high-water mark across exec), so the program
    is forked from /usr/bin/time instead. Without it, wait4() figures are
    used and marked."""
    tfile = log.with_suffix(".time")
    use_time = TIME.exists()
    cmd = [str(TIME), "-f", "%e %U %S %M", "-o", str(tfile), *argv] if use_time else argv
    with open(log, "wb") as out:
        t = time.monotonic()
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out,
                             stderr=subprocess.STDOUT)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.monotonic() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    r = {"rc": p.returncode, "wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime,
         "rss_mb": ru.ru_maxrss / 1024, "rss_from": "wait4 (includes the bench's own)",
         "log": log}
    if use_time:
        # GNU time's last line; "Command exited with non-zero status N" may precede it
        fields = tfile.read_text().strip().splitlines()[-1].split()
        r.update(cpu_s=float(fields[1]) + float(fields[2]), rss_mb=int(fields[3]) / 1024,
                 rss_from="GNU time")
    return r


def warm(path: Path) -> None:
    """Read a file once so every program finds it in the page cache."""
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def stamp_of(duration: float, version: int) -> str:
    src = (REPO / "tests" / "synth" / "synthcap.py").read_bytes()
    return hashlib.sha256(src + f"bench/{duration}/{version}".encode()).hexdigest()


def capture_for(duration: float, version: int, regen: bool = False) -> Path:
    """build/bench/analyze/bench-<duration>s-v<version>/ (capture/, truth.json),
    built unless an up-to-date one is cached."""
    d = CACHE / f"bench-{duration:g}s-v{version}"
    stamp = d / "synthcap.stamp"
    want = stamp_of(duration, version)
    if not regen and stamp.exists() and stamp.read_text() == want \
            and (d / "truth.json").exists():
        return d
    print(f"bench: building {d} (synthcap bench, {duration:g} s, format {version}) ...",
          flush=True)
    t = time.monotonic()
    if stamp.exists():
        stamp.unlink()
    synthcap.build(synthcap.scenario("bench", format_version=version,
                                     duration_s=duration), d)
    stamp.write_text(want)
    print(f"bench: built in {time.monotonic() - t:.1f} s", flush=True)
    return d


def sbrig_has_analyze(sbrig: Path) -> str | None:
    """None if @sbrig runs 'analyze', else why not."""
    if not sbrig.exists():
        return f"{sbrig} does not exist: build it with 'make host'"
    try:
        r = subprocess.run([str(sbrig), "analyze", "--help"], capture_output=True,
                           text=True, timeout=30)
    except OSError as e:
        return f"{sbrig}: {e}"
    text = (r.stdout + r.stderr).lower()
    if r.returncode not in (0, 1) or "unknown command" in text or \
            "no such command" in text or ("analyze" not in text and r.returncode):
        return (f"{sbrig} has no 'analyze' command (exit {r.returncode}: "
                f"{(r.stderr or r.stdout).strip()[:200]})")
    return None


PHASES = re.compile(r"timing: analysis ([0-9.]+) s, report\.json ([0-9.]+) s, "
                    r"report\.html ([0-9.]+) s")


def run_phases(sbrig: Path, cap: Path, out: Path, log: Path) -> dict | None:
    """``sbrig analyze -v``'s own timing line (analysis pass, report.json,
    report.html, seconds), or None if it printed none. A run of its own:
    the debug log of -v is not in the whole command's measurement."""
    r = subprocess.run([str(sbrig), "analyze", "-v", "-q", str(cap), "-o", str(out)],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True)
    log.write_text(r.stderr)
    m = PHASES.search(r.stderr)
    if r.returncode or not m:
        return None
    return dict(zip(("analysis_s", "json_s", "html_s"), map(float, m.groups())))


def fmt_rate(n: int, s: float) -> str:
    return f"{n / s / 1e6:8.2f}" if s > 0 else "       -"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=float, default=3600.0,
                    help="the long capture, seconds (default 3600)")
    ap.add_argument("--short", type=float, default=600.0,
                    help="the short capture for the memory comparison (default 600)")
    ap.add_argument("--formats", default="2,1",
                    help="capture formats to measure (default 2,1)")
    ap.add_argument("--sbrig", type=Path, default=SBRIG)
    ap.add_argument("--pandas-only", action="store_true",
                    help="measure the pandas reference only (no sbrig analyze needed)")
    ap.add_argument("--no-pandas", action="store_true")
    ap.add_argument("--regen", action="store_true", help="rebuild the cached captures")
    ap.add_argument("--strict", action="store_true", help="exit 1 if a target is missed")
    ap.add_argument("--pandas-run", nargs=2, metavar=("CAPTURE", "OUT"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.pandas_run:                   # the child process of a measurement
        res = pandas_attribution(Path(args.pandas_run[0]))
        Path(args.pandas_run[1]).write_text(json.dumps(res))
        return 0

    run_sbrig = not args.pandas_only
    if run_sbrig:
        why = sbrig_has_analyze(args.sbrig)
        if why:
            print(f"bench_analyze: cannot measure sbrig analyze: {why}.\n"
                  "bench_analyze: (--pandas-only measures the pandas reference alone)",
                  file=sys.stderr)
            return 2
    run_pandas = not args.no_pandas
    if run_pandas:
        missing = [m for m in ("numpy", "pandas") if importlib.util.find_spec(m) is None]
        if missing:
            print(f"bench_analyze: no {' or '.join(missing)} for {sys.executable}: "
                  "install python3-numpy python3-pandas (.ci/install-deps)",
                  file=sys.stderr)
            return 2
    formats = [int(x) for x in args.formats.split(",")]
    durations = [args.duration] + ([args.short] if args.short else [])
    work = CACHE / "run"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    if not TIME.exists():
        print(f"bench: {TIME} missing (Debian package 'time'): peak RSS from wait4(), "
              "which includes this script's own RSS", file=sys.stderr)
    rows = []
    for dur in durations:
        for v in formats:
            d = capture_for(dur, v, args.regen)
            cap = d / "capture"
            truth = synthcap.load_truth(d)
            warm(cap / ("samples.bin" if v == 2 else "samples.tsv"))
            row = {"dur": dur, "v": v, "samples": truth["capture"]["samples"]}
            tag = f"{dur:g}s-v{v}"
            if run_sbrig:
                out = work / f"sbrig-{tag}"
                r = run_measured([str(args.sbrig), "analyze", str(cap), "-o", str(out)],
                                 work / f"sbrig-{tag}.log")
                if r["rc"]:
                    print(f"bench: sbrig analyze {cap}: exit {r['rc']}: "
                          + r["log"].read_text()[-500:].strip(), file=sys.stderr)
                r["valid"] = False
                if (out / "report.json").exists():
                    rep = json.loads((out / "report.json").read_text())
                    r["bad"] = synthcap.compare(rep, truth)
                    # a figure counts only for a run that read every sample
                    r["valid"] = rep.get("capture", {}).get("samples") == row["samples"]
                    if r["rc"]:
                        r["bad"].insert(0, f"exit {r['rc']} (report.json written)")
                else:
                    r["bad"] = [f"exit {r['rc']}, no report.json"]
                r["phases"] = run_phases(args.sbrig, cap, work / f"sbrig-v-{tag}",
                                         work / f"sbrig-v-{tag}.log")
                row["sbrig"] = r
            if run_pandas:
                out = work / f"pandas-{tag}.json"
                r = run_measured([sys.executable, str(Path(__file__).resolve()),
                                  "--pandas-run", str(cap), str(out)],
                                 work / f"pandas-{tag}.log")
                r["valid"] = not r["rc"]
                if r["rc"]:
                    print(f"bench: the pandas reference failed on {cap}:\n"
                          + r["log"].read_text()[-2000:], file=sys.stderr)
                    r["bad"] = ["failed"]
                else:
                    r["bad"] = check_reference(json.loads(out.read_text()), truth)
                row["pandas"] = r
            rows.append(row)
            print(f"bench: {tag} done", flush=True)

    # ---- the table ----
    print()
    print(f"{'capture':18s} {'samples':>10s} | {'sbrig s':>8s} {'MS/s':>8s} "
          f"{'MS/cpu-s':>8s} {'RSS MB':>7s} {'pass s':>7s} {'MS/s':>8s} | "
          f"{'pandas s':>8s} {'MS/s':>8s} {'RSS MB':>7s} | {'ratio':>6s}")
    for row in rows:
        n = row["samples"]
        s, pd_ = row.get("sbrig"), row.get("pandas")
        name = f"{row['dur']:g} s, v{row['v']} ({'bin' if row['v'] == 2 else 'tsv'})"
        cols = [f"{name:18s}", f"{n:10d}", "|"]
        if s and not s["valid"]:
            cols += [f"{'failed (exit ' + str(s['rc']) + ')':>35s}"]
        elif s:
            cols += [f"{s['wall_s']:8.3f}", fmt_rate(n, s["wall_s"]), fmt_rate(n, s["cpu_s"]),
                     f"{s['rss_mb']:7.1f}"]
            ph = s.get("phases")
            cols += [f"{ph['analysis_s']:7.3f}", fmt_rate(n, ph["analysis_s"])] if ph \
                else ["      -", "       -"]
        else:
            cols += ["       -"] * 3 + ["      -"] * 2 + ["       -"]
        cols.append("|")
        if pd_ and not pd_["valid"]:
            cols += [f"{'failed':>25s}"]
        elif pd_:
            cols += [f"{pd_['wall_s']:8.3f}", fmt_rate(n, pd_["wall_s"]),
                     f"{pd_['rss_mb']:7.1f}"]
        else:
            cols += ["       -", "       -", "      -"]
        cols.append("|")
        ok = s and pd_ and s["valid"] and pd_["valid"]
        cols.append(f"{pd_['wall_s'] / s['wall_s']:5.1f}x" if ok else "     -")
        print(" ".join(cols))
    print("(sbrig s, MS/s: the whole 'sbrig analyze' command, wall clock: read, analyse, "
          "write report.json, render report.html;\n pass s, MS/s: the analysis pass alone, "
          "from the timing line of a separate 'sbrig analyze -v' run, whose debug log\n"
          " (a line per event, unbuffered) is written during the pass and counts in it)")
    for row in rows:
        ph = (row.get("sbrig") or {}).get("phases")
        if ph:
            print(f"  {row['dur']:g} s, v{row['v']}: analysis pass {ph['analysis_s']:.3f} s, "
                  f"report.json {ph['json_s']:.3f} s, report.html {ph['html_s']:.3f} s "
                  "(sbrig analyze -v)")
    print()
    missed = []
    long_rows = {r["v"]: r for r in rows if r["dur"] == args.duration}
    short_rows = {r["v"]: r for r in rows if r["dur"] == args.short}

    def valid(r, who):
        return r.get(who) is not None and r[who]["valid"]

    for r in rows:
        if run_sbrig and not valid(r, "sbrig"):
            missed.append(f"sbrig failed {r['dur']:g} s v{r['v']}")
            print(f"target: not measured on {r['dur']:g} s v{r['v']}: sbrig analyze "
                  "did not analyse the whole capture (see above)")
    long_rows = {v: r for v, r in long_rows.items() if not run_sbrig or valid(r, "sbrig")}
    short_rows = {v: r for v, r in short_rows.items() if not run_sbrig or valid(r, "sbrig")}
    if run_sbrig and 2 in long_rows:
        r = long_rows[2]
        rate = r["samples"] / r["sbrig"]["wall_s"]
        ok = rate >= TARGET_MSPS
        missed += [] if ok else ["throughput"]
        ph = r["sbrig"].get("phases")
        alone = (f" (the analysis pass alone: {r['samples'] / ph['analysis_s'] / 1e6:.1f} "
                 "M samples/s, not what the target counts)") if ph else ""
        print(f"target: sbrig analyze from samples.bin >= 100 M samples/s: whole command "
              f"{rate / 1e6:.1f} M samples/s  {'ok' if ok else 'MISSED'}{alone}")
    if run_sbrig and run_pandas:
        for v, r in sorted(long_rows.items(), reverse=True):
            if not valid(r, "pandas"):
                continue
            ratio = r["pandas"]["wall_s"] / r["sbrig"]["wall_s"]
            ok = ratio >= TARGET_RATIO
            missed += [] if ok else [f"ratio v{v}"]
            print(f"target: >= 10x pandas, format {v}: {ratio:.1f}x  {'ok' if ok else 'MISSED'}")
    if run_sbrig and short_rows:
        for v in sorted(set(long_rows) & set(short_rows), reverse=True):
            a, b = long_rows[v]["sbrig"]["rss_mb"], short_rows[v]["sbrig"]["rss_mb"]
            ok = a <= 1.2 * b + 8
            missed += [] if ok else [f"memory v{v}"]
            print(f"target: peak RSS independent of the sample count, format {v}: "
                  f"{args.duration:g} s {a:.1f} MB, {args.short:g} s {b:.1f} MB "
                  f"({long_rows[v]['samples'] / short_rows[v]['samples']:.0f}x the samples)"
                  f"  {'ok' if ok else 'MISSED'}")
    if run_pandas and short_rows:
        for v in sorted(set(long_rows) & set(short_rows), reverse=True):
            a, b = long_rows[v]["pandas"]["rss_mb"], short_rows[v]["pandas"]["rss_mb"]
            print(f"        (pandas, format {v}: {a:.1f} MB vs {b:.1f} MB)")
    print()
    for row in rows:
        for who in ("sbrig", "pandas"):
            r = row.get(who)
            if r is None:
                continue
            bad = r["bad"]
            print(f"truth: {who:6s} {row['dur']:g} s v{row['v']}: "
                  + ("agrees with truth.json" if not bad else
                     f"{len(bad)} mismatches, first: {bad[0]}"))
    print(f"\nreports and logs in {work}")
    return 1 if args.strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
