"""The analysis on a hand-made capture with figures computed by hand from
the rules of host/doc/report-format.md, and the whole demo (`make demo`,
rig/demo/rig_demo.py) end to end on the virtual rig (marked `demo`;
deselect with -m "not demo").

Fixture tests/fixtures/captures/demo: samples at 1..6 s with power 100,
100, 300, 300, 10, 10 uW and a listed gap from 5 s to 6 s; blocker A
active 2.0-3.5 s, B 2.5-4.0 s; suspended (enter -> exit) 4.5-5.5 s; a key
press at 1.9 s, while the target was awake (so no wakeup: the resume at
5.6 s is an unknown one). Power is linear between samples; a trapezoid is
cut at a change by interpolation:
  [1,2]       100 uJ  unattributed
  [2,2.5]      75     A alone (100 -> 200 uW)
  [2.5,3]     125     A and B (200 -> 300)
  [3,3.5]     150     A and B (300)
  [3.5,4]     150     B alone (300)
  [4,4.5]     113.75  unattributed (300 -> 155)
  [4.5,5]      41.25  suspended (155 -> 10)
  [5,6]        gap: not integrated

The same capture in format version 2 (its samples in samples.bin, made by
tests/capture.py's to_version2 from the format document) must give the
same report.json, figure for figure.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.capture import read_rows, to_version2

REPO = Path(__file__).resolve().parents[1]
SBRIG = REPO / "build" / "host" / "asan" / "sbrig"
FIX = REPO / "tests" / "fixtures" / "captures" / "demo"
S = 1_000_000_000


def analyze(capture: Path, out: Path) -> dict:
    p = subprocess.run([str(SBRIG), "analyze", str(capture), "-o", str(out)],
                       text=True, capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "ERROR: AddressSanitizer" not in p.stderr, p.stderr
    r = json.loads((out / "report.json").read_text())
    r["_stdout"] = p.stdout
    return r


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    subprocess.run(["make", "-C", str(REPO / "host"), "VARIANT=asan", "-j2"],
                   check=True, stdout=subprocess.DEVNULL)
    return analyze(FIX, tmp_path_factory.mktemp("report"))


def test_the_fixtures_figures_by_hand(report):
    r = report
    assert r["schema"] == "sbrig-report" and r["version"] == 1
    b = {x["name"]: x for x in r["blockers"]}
    assert b["A"]["energy_uJ"] == pytest.approx(75 + 125 / 2 + 150 / 2)
    assert b["A"]["exclusive_energy_uJ"] == pytest.approx(75)
    assert b["B"]["energy_uJ"] == pytest.approx(125 / 2 + 150 / 2 + 150)
    assert b["B"]["exclusive_energy_uJ"] == pytest.approx(150)
    assert b["A"]["activations"] == b["B"]["activations"] == 1
    assert b["A"]["active_ns"] == b["B"]["active_ns"] == int(1.5 * S)
    assert r["unattributed"]["energy_uJ"] == pytest.approx(100 + 113.75)
    e = r["energy"]
    assert e["total_uJ"] == pytest.approx(755)
    assert e["suspended_uJ"] == pytest.approx(41.25)
    assert e["suspended_ns"] == 1 * S and e["awake_ns"] == 4 * S
    # the parts add up to the total
    parts = sum(x["energy_uJ"] for x in r["blockers"]) + \
        r["unattributed"]["energy_uJ"] + e["suspended_uJ"]
    assert parts == pytest.approx(e["total_uJ"], abs=0.01)
    assert r["gaps"] == [{"t_ns": 5 * S, "duration_ns": 1 * S, "missing": 3,
                          "declared": True, "at_stop": False,
                          "hidden_min_uJ": 10.0, "hidden_max_uJ": 300.0}]
    assert r["capture"]["missing_samples"] == 3
    assert r["capture"]["provenance"]["rig_name"] == "virtual"
    # the press came while the target was awake: the one resume is not
    # the rig's; it is listed with its cause unknown (report-format.md:
    # every resume is in wakeups[]), and no latency is taken from it
    assert len(r["wakeups"]) == 1 and r["unknown_wake_count"] == 1
    w = r["wakeups"][0]
    assert w["cause"] == "unknown" and w["stimulus"] is None
    assert w["resume_t_ns"] == int(5.6 * S) and w["awake_ns"] == int(0.4 * S)
    assert w["latency_ns"] is None and w["blockers"] == []
    assert r["latency"]["n"] == 0
    kinds = [f["kind"] for f in r["findings"]]
    assert "unknown_wakeup" in kinds and "gap" in kinds
    assert kinds.index("unknown_wakeup") < kinds.index("gap")    # ranked


def test_the_headline_is_rendered_from_the_report(report):
    out = report["_stdout"]
    assert "energy_total: 0.755 mJ" in out
    assert "blocker: B: 0.287 mJ" in out or "blocker: B: 0.288 mJ" in out
    assert "finding: gap:" in out
    assert out.index("finding:") < out.index("energy_total:")
    assert "report: " in out and "report.json" in out


def test_version2_capture_gives_the_same_report(report, tmp_path):
    v2 = to_version2(FIX, tmp_path / "demo-v2")
    assert not (v2 / "samples.tsv").exists()
    r2 = analyze(v2, tmp_path / "report")
    # only where the capture is and its format version may differ
    assert report["capture"]["format_version"] == 1
    assert r2["capture"]["format_version"] == 2
    assert r2["capture"]["path"] == str(v2)
    r1 = json.loads(json.dumps(report))
    for r in (r1, r2):
        del r["capture"]["path"], r["capture"]["format_version"]
        del r["_stdout"]
    assert r2 == r1
    assert r2["energy"]["total_uJ"] == pytest.approx(755)


@pytest.mark.demo
def test_demo_end_to_end(tmp_path):
    """The whole demo on the virtual rig (about a minute here)."""
    for prog in ("sbrigd", "sbrig"):
        if not (REPO / "build/host/release" / prog).exists():
            subprocess.run(["make", "-C", str(REPO / "host"), "-j2"], check=True,
                           capture_output=True)
    p = subprocess.run([sys.executable, str(REPO / "rig/demo/rig_demo.py"),
                        "--out", str(tmp_path)], text=True, capture_output=True,
                       timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    r = json.loads((tmp_path / "report" / "report.json").read_text())
    assert (tmp_path / "report" / "report.html").stat().st_size > 10000
    b = {x["name"]: x for x in r["blockers"]}
    assert b["demo-download"]["activations"] >= 4
    assert b["demo-download"]["energy_uJ"] > 0
    # each press ran the article's chain on the target (rig/virtual/README.md),
    # which keeps it up instead of unknown_wakeups (at most a brief one
    # when the module checks the resume before the keypad reported its key)
    for name in ("keypad-scan", "evdev", "process-input-events"):
        assert b[name]["activations"] >= 4, (name, b.get(name))
    e = r["energy"]
    assert e["suspended_ns"] > 0 and e["baseline_uW"] is not None
    assert e["suspended_uJ"] / e["suspended_ns"] < e["awake_uJ"] / e["awake_ns"]
    assert len(r["wakeups"]) >= 4 and r["latency"]["n"] >= 4
    assert r["capture"]["status"] == "complete"
    # the headline is printed, and the latency run's statistics
    assert "blocker: demo-download:" in p.stdout
    assert "median_ms:" in p.stdout and "capture: " in p.stdout
    # the INA226 emulator's ground truth: what it really emitted, and in
    # which state of the QEMU target (rig/virtual/README.md), over the
    # raw capture's span (not the report's, which is under test)
    sys.path.insert(0, str(REPO / "rig" / "virtual"))
    import ina226_iiod
    recs = ina226_iiod.read_truth(tmp_path / "vrig" / "power-truth.jsonl")
    raw = read_rows(tmp_path / "capture", "samples", typed=True)
    missing = sum(int(g["missing"]) for g in read_rows(tmp_path / "capture", "gaps"))
    t = ina226_iiod.truth_energy(recs, raw[0].t_ns, raw[-1].t_ns)
    # every sample the emulator sent on the capture's buffer is in the
    # capture or declared missing, and the report counts them all
    (closed,) = [x for x in recs if x["type"] == "close" and x["stream"] == t["stream"]]
    counts = (f"emitted {closed['samples']}, captured {len(raw)}, declared missing "
              f"{missing}, report {r['capture']['samples']} + {r['capture']['missing_samples']}")
    print(counts)
    assert len(raw) + missing == closed["samples"], counts
    assert (r["capture"]["samples"], r["capture"]["missing_samples"]) == (len(raw), missing), \
        counts
    susp = t["by_state"].get("suspended", 0.0)
    awake = t["total_uJ"] - susp
    figures = (f"report {e['total_uJ']:.0f} / {e['suspended_uJ']:.0f} / "
               f"{e['awake_uJ']:.0f} uJ, emitted {t['total_uJ']:.0f} / "
               f"{susp:.0f} / {awake:.0f} uJ (total / suspended / awake)")
    print(figures)
    assert susp > 0 and awake > 0, figures
    assert abs(e["total_uJ"] - t["total_uJ"]) <= 0.01 * t["total_uJ"], figures
    assert abs(e["suspended_uJ"] - susp) <= 0.02 * susp, figures
    assert abs(e["awake_uJ"] - awake) <= 0.02 * awake, figures
