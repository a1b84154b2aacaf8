"""The demo (rig/demo/rig_demo.py, `make demo`): its analysis on a
hand-made capture with figures computed by hand, and the whole demo end
to end on the virtual rig (marked `demo`; deselect with -m "not demo").

Fixture tests/fixtures/captures/demo: samples at 1..6 s with power 100,
100, 300, 300, 10, 10 uW and a listed gap from 5 s to 6 s; blocker A
active 2.0-3.5 s, B 2.5-4.0 s; suspended (enter -> exit) 4.5-5.5 s.
Trapezoid means per interval: [1,2] 100, [2,3] 200, [3,4] 300, [4,5] 155
uW; [5,6] is the gap and is not integrated.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "rig" / "demo"))

import rig_demo  # noqa: E402

FIX = REPO / "tests" / "fixtures" / "captures" / "demo"
S = 1_000_000_000


def test_analysis_of_the_fixture_by_hand():
    a = rig_demo.analyze(FIX)
    b = {x["name"]: x for x in a["blockers"]}
    # A: alone 2.0-2.5 (200 x 0.5), shared 2.5-3.0 (200 x 0.5 / 2),
    #    shared 3.0-3.5 (300 x 0.5 / 2)
    assert b["A"]["energy_uJ"] == pytest.approx(100 + 50 + 75)
    # B: shared 2.5-3.0 and 3.0-3.5 as A, alone 3.5-4.0 (300 x 0.5)
    assert b["B"]["energy_uJ"] == pytest.approx(50 + 75 + 150)
    assert b["A"]["activations"] == b["B"]["activations"] == 1
    assert b["A"]["active_ns"] == b["B"]["active_ns"] == int(1.5 * S)
    # no blocker: [1,2] (100) and [4,5] (155); the gap is not bridged
    assert a["unattributed_energy_uJ"] == pytest.approx(100 + 155)
    assert a["energy_uJ"] == pytest.approx(100 + 200 + 300 + 155)
    assert a["gaps"] == [{"t_ns": 5 * S, "next_t_ns": 6 * S, "missing": 3}]
    assert a["missing_samples"] == 3
    # suspended 4.5-5.5: time 1 s; energy only where integrated: 155 x 0.5
    assert a["suspended"]["time_ns"] == 1 * S
    assert a["suspended"]["energy_uJ"] == pytest.approx(77.5)
    assert a["awake"]["time_ns"] == 4 * S
    assert a["awake"]["energy_uJ"] == pytest.approx(755 - 77.5)
    assert a["suspended"]["mean_current_uA"] == 2.0           # the 5 s sample
    assert a["awake"]["mean_current_uA"] == pytest.approx((20 + 20 + 60 + 60 + 2) / 5)
    assert (a["suspends"], a["enters"], a["resumes"], a["presses"]) == (1, 1, 1, 1)
    assert a["provenance"]["rig_name"] == "virtual"
    assert "split equally" in a["attribution"]


def test_report_renders_the_analysis_only(tmp_path):
    a = json.loads(json.dumps(rig_demo.analyze(FIX)))
    text = rig_demo.render(a)
    assert "energy_mJ" in text and "active_ms" in text
    assert "split equally" in text and "pending the analysis issue" in text
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("B "))
    assert "0.275" in line                      # 275 uJ in mJ
    assert "1 gaps (3 samples missing)" in text


def test_latency_percentiles(tmp_path):
    csv = tmp_path / "lat.csv"
    csv.write_text("i,latency_ns,uncert_ns\n" + "".join(
        f"{i},{v},1000\n" for i, v in enumerate([50, 10, 40, 20, 30], 1)))
    lat = rig_demo.analyze(FIX, csv)["latency"]
    assert (lat["n"], lat["min_ns"], lat["median_ns"], lat["p95_ns"],
            lat["max_ns"]) == (5, 10, 30, 50, 50)


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
    a = json.loads((tmp_path / "analysis.json").read_text())
    report = (tmp_path / "report.txt").read_text()
    assert report in p.stdout
    b = {x["name"]: x for x in a["blockers"]}
    assert b["demo-download"]["activations"] >= 4
    assert b["demo-download"]["energy_uJ"] > 0
    assert b["unknown_wakeups"]["activations"] >= 4
    assert a["suspended"]["mean_current_uA"] < a["awake"]["mean_current_uA"]
    assert a["suspended"]["time_ns"] > 0 and a["resumes"] >= 4
    assert a["latency"]["n"] == 5
    assert a["end"]["status"] == "complete"
    assert "demo-download" in report
