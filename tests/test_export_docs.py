"""sbrig export of report.json and compare.json: --perfetto, --csv,
--junit, --lava, each checked by the rules of the program that reads it.

* Perfetto / Chrome trace JSON: the trace-event format's rules as
  Perfetto's JSON importer applies them: every "b" has an "e" with the
  same cat, name and id, after it, and one id's slices do not overlap
  (one track); "X" slices on one thread nest; a counter is a number;
  metadata names the process and every thread used; timestamps are µs
  (the report's ns / 1000, exactly). Blockers that overlap in time are
  async tracks of their own.
* CSV: RFC 4180 as Python's csv module reads it, the report's figures.
* JUnit: xmllint --noout and the schema (tests/exportrules.check_junit),
  one testcase per metric verdict, failures and skips counted, the
  provenance as testsuite properties.
* LAVA: every line is "lava-test-case NAME --result pass|fail|skip
  --measurement X --units U" with NAME of [A-Za-z0-9_.-], <= 100 chars,
  an inconclusive verdict a skip (never a fail), as in JUnit,
  named as export-formats.md says (tests/exportrules.lava_name);
  test_export_hostile.py runs them through LAVA's own code.
* Bad input: the wrong document for the option, another schema version.

Inputs: tests/fixtures/report/*.json and compare.json files made by
sbrig compare from report-level synthetic runs (tests/synth/runs.py).
sbrig is the ASan/UBSan build.
"""

from __future__ import annotations

import csv
import io
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests import exportrules  # noqa: E402
from tests.synth import runs  # noqa: E402

FIX = REPO / "tests" / "fixtures" / "report"
SBRIG = REPO / "build" / "host" / "asan" / "sbrig"
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=1",
           UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
LAVA_LINE = re.compile(r"^lava-test-case (?P<name>[A-Za-z0-9_.-]{1,100}) "
                       r"--result (?P<result>pass|fail|skip)"
                       r"(?: --measurement (?P<x>-?[0-9]+(?:\.[0-9]+)?) --units (?P<u>\S+))?$")


@pytest.fixture(scope="module")
def sbrig():
    r = subprocess.run(["make", "-C", str(REPO / "host"), "VARIANT=asan", "-j2"],
                       capture_output=True, text=True)
    if r.returncode:
        pytest.fail(f"make -C host VARIANT=asan failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}",
                    pytrace=False)
    return SBRIG


def export(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(SBRIG), "export", *map(str, args)], capture_output=True,
                          text=True, env=ENV, timeout=300)


@pytest.fixture(scope="module")
def comparison(sbrig, tmp_path_factory):
    """compare.json of 8 base runs and 8 new runs: 'sb report' costs
    twice as much (regressed), and leaks in 6 of the 8 new runs (regressed:
    Fisher's p = C(8, 6) / C(16, 6) = 0.0035)."""
    d = tmp_path_factory.mktemp("cmp")
    rng = random.Random(3)
    base = [runs.fake_report(rng, blockers={"wifi": 50_000.0, "sb report": 10_000.0})
            for _ in range(8)]
    new = [runs.fake_report(rng, blockers={"wifi": 50_000.0, "sb report": 20_000.0},
                            leak="sb report" if i < 6 else None, git_sha="new")
           for i in range(8)]
    pb = runs.write_reports(base, d / "base")
    pn = runs.write_reports(new, d / "new")
    r = subprocess.run([str(SBRIG), "compare", "-o", str(d), *map(str, pb), "--", *map(str, pn)],
                       capture_output=True, text=True, env=ENV)
    assert r.returncode == 1, r.stdout + r.stderr
    return d / "compare.json"


# ---- Perfetto ----------------------------------------------------------------

def check_trace(trace: dict, report: dict) -> list[str]:
    """Perfetto's rules for a Chrome JSON trace; [] if it keeps them."""
    bad = []
    ev = trace["traceEvents"]
    for e in ev:
        if "ph" not in e or "pid" not in e:
            bad.append(f"no ph/pid: {e}")
        if e["ph"] != "M" and not isinstance(e.get("ts"), (int, float)):
            bad.append(f"ts not a number: {e}")
    # async slices: matching b/e by (cat, name, id), no overlap within an id
    open_ = {}
    by_id = {}
    for e in sorted((e for e in ev if e["ph"] in "be"), key=lambda e: (e["ts"], e["ph"] == "b")):
        key = (e["cat"], e["name"], e["id"])
        by_id.setdefault(e["id"], set()).add(e["name"])
        if e["ph"] == "b":
            if key in open_:
                bad.append(f"{key}: b at {e['ts']} inside another b at {open_[key]}")
            open_[key] = e["ts"]
        else:
            if key not in open_:
                bad.append(f"{key}: e at {e['ts']} without a b")
            else:
                if e["ts"] < open_.pop(key):
                    bad.append(f"{key}: e before its b")
    bad += [f"{k}: b without an e" for k in open_]
    bad += [f"id {i} used by {names}" for i, names in by_id.items() if len(names) > 1]
    # complete slices nest on each thread
    per_tid = {}
    for e in ev:
        if e["ph"] == "X":
            if e["dur"] < 0:
                bad.append(f"negative dur: {e}")
            per_tid.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"]))
    for tid, spans in per_tid.items():
        stack = []
        for a, b in sorted(spans, key=lambda s: (s[0], -s[1])):
            while stack and stack[-1] <= a:
                stack.pop()
            if stack and b > stack[-1]:
                bad.append(f"tid {tid}: slice [{a}, {b}] crosses its parent's end {stack[-1]}")
            stack.append(b)
    # counters are numbers
    for e in ev:
        if e["ph"] == "C" and not all(isinstance(v, (int, float)) for v in e["args"].values()):
            bad.append(f"counter value not a number: {e}")
    # metadata names the process and every thread used
    named = {e.get("tid") for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    used = {e["tid"] for e in ev if e["ph"] in "Xi"}
    if not used <= named:
        bad.append(f"threads without a name: {used - named}")
    if not any(e["ph"] == "M" and e["name"] == "process_name" for e in ev):
        bad.append("no process_name")
    # units: µs, exactly the report's ns / 1000
    spans = {(e["name"], round(e["ts"] * 1000)) for e in ev if e["ph"] == "b"}
    want = {(row["name"], s[0]) for row in report["trace"]["timeline"] for s in row["spans"]}
    if spans != want:
        bad.append(f"blocker starts: {sorted(spans - want)[:3]} not in the report, "
                   f"{sorted(want - spans)[:3]} missing")
    return bad


@pytest.mark.parametrize("name", ["minimal", "demo", "overlaps", "empty"])
def test_perfetto_keeps_the_trace_event_rules(sbrig, tmp_path, name):
    out = tmp_path / "trace.json"
    r = export(FIX / f"{name}.json", "--perfetto", "-o", out)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    trace = json.loads(text)
    report = json.loads((FIX / f"{name}.json").read_text())
    assert check_trace(trace, report) == []
    # every timestamp written with at most 3 decimals (ns resolution)
    assert not re.search(r'"(ts|dur)":-?\d+\.\d{4,}', text)
    ev = trace["traceEvents"]
    counters = [e for e in ev if e["ph"] == "C"]
    levels = report["trace"]["levels"]
    if levels:
        fine = min(levels, key=lambda lv: lv["bucket_ns"])
        assert len(counters) == sum(v is not None for v in fine["mean"])
        assert counters[0]["ts"] * 1000 == fine["t0_ns"]
        assert all(c["name"] == "power_uW" for c in counters)
    instants = [e for e in ev if e["ph"] == "i"]
    assert len([e for e in instants if e["cat"] == "resume"]) == len(report["wakeups"])
    assert trace["metadata"]["capture"] == report["capture"]["path"]


def test_perfetto_overlapping_blockers_are_separate_tracks(sbrig, tmp_path):
    r = export(FIX / "overlaps.json", "--perfetto")
    assert r.returncode == 0, r.stderr
    ev = json.loads(r.stdout)["traceEvents"]
    spans = {}
    for e in sorted((e for e in ev if e["ph"] in "be"), key=lambda e: e["ts"]):
        if e["ph"] == "b":
            spans.setdefault(e["id"], []).append([e["ts"], None])
        else:
            spans[e["id"]][-1][1] = e["ts"]
    overlap = any(a[0] < b[1] and b[0] < a[1]
                  for i in spans for j in spans if i < j
                  for a in spans[i] for b in spans[j])
    assert overlap, "the fixture should have overlapping blockers"


def test_perfetto_broken_trace_is_caught():
    """The checker itself: an unmatched b, crossing slices, a wrong unit."""
    report = {"trace": {"timeline": [{"name": "a", "spans": [[1000, 2000]]}]}}
    good = {"traceEvents": [
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "x"}},
        {"ph": "M", "pid": 1, "tid": 1, "name": "thread_name", "args": {"name": "t"}},
        {"ph": "b", "pid": 1, "cat": "blocker", "id": 1, "name": "a", "ts": 1.0},
        {"ph": "e", "pid": 1, "cat": "blocker", "id": 1, "name": "a", "ts": 2.0},
        {"ph": "X", "pid": 1, "tid": 1, "name": "s", "ts": 0, "dur": 5},
        {"ph": "X", "pid": 1, "tid": 1, "name": "s", "ts": 1, "dur": 2}]}
    assert check_trace(good, report) == []
    bad = json.loads(json.dumps(good))
    bad["traceEvents"].pop(3)
    assert any("without an e" in b for b in check_trace(bad, report))
    bad = json.loads(json.dumps(good))
    bad["traceEvents"][5]["dur"] = 10
    assert any("crosses" in b for b in check_trace(bad, report))
    bad = json.loads(json.dumps(good))
    bad["traceEvents"][2]["ts"] = 1000.0        # ns, not µs
    assert check_trace(bad, report)


# ---- CSV ------------------------------------------------------------------------

def test_csv_tables_hold_the_reports_figures(sbrig):
    report = json.loads((FIX / "overlaps.json").read_text())
    r = export(FIX / "overlaps.json", "--csv", "blockers")
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert [x["name"] for x in rows] == [b["name"] for b in report["blockers"]]
    for x, b in zip(rows, report["blockers"]):
        assert abs(float(x["energy_uJ"]) - b["energy_uJ"]) < 0.001
        assert int(x["activations"]) == b["activations"]
    r = export(FIX / "overlaps.json", "--csv", "wakeups")
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert len(rows) == len(report["wakeups"])
    for x, w in zip(rows, report["wakeups"]):
        assert int(x["latency_ns"]) == w["latency_ns"]
        assert x["blockers"].split(";") == w["blockers"]
    r = export(FIX / "overlaps.json", "--csv", "envelope")
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    fine = min(report["trace"]["levels"], key=lambda lv: lv["bucket_ns"])
    assert len(rows) == len(fine["mean"])
    assert list(rows[0]) == ["t_ns", "bucket_ns", "min_uW", "max_uW", "mean_uW"]
    for i, x in enumerate(rows):
        assert int(x["t_ns"]) == fine["t0_ns"] + i * fine["bucket_ns"]
        m = fine["mean"][i]
        assert (x["mean_uW"] == "") if m is None else abs(float(x["mean_uW"]) - m) < 0.001


def test_csv_quotes_names_with_commas_and_quotes(sbrig, tmp_path):
    r = json.loads((FIX / "minimal.json").read_text())
    r["blockers"][0]["name"] = 'a "b", c'
    (tmp_path / "r.json").write_text(json.dumps(r))
    out = export(tmp_path / "r.json", "--csv", "blockers")
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert rows[0]["name"] == 'a "b", c'


# ---- JUnit ----------------------------------------------------------------------

def test_junit_has_a_testcase_per_verdict_and_the_provenance(comparison, tmp_path):
    doc = json.loads(comparison.read_text())
    r = export(comparison, "--junit", "-o", tmp_path / "junit.xml")
    assert r.returncode == 0, r.stderr
    root = exportrules.check_junit(tmp_path / "junit.xml")
    suite = root.find("testsuite")
    cases = suite.findall("testcase")
    assert len(cases) == len(doc["metrics"]) == int(suite.get("tests"))
    assert int(suite.get("failures")) == doc["counts"]["regressed"] == \
        len([c for c in cases if c.find("failure") is not None])
    assert int(suite.get("skipped")) == doc["counts"]["inconclusive"] == \
        len([c for c in cases if c.find("skipped") is not None])
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["commit"] == "new" and props["base_commit"] == "base"
    assert props["rig_sha256"] == doc["provenance"]["rig_sha256"]
    assert props["scenario_sha256"] == runs.SCENARIO_SHA
    assert props["rig_config"] == doc["provenance"]["rig_config"]
    names = [c.get("name") for c in cases]
    assert "blocker_energy_per_wakeup_uJ[sb report]" in names
    sb = cases[names.index("blocker_energy_per_wakeup_uJ[sb report]")]
    assert sb.find("failure") is not None and "+" in sb.find("failure").get("message")
    figures = dict(ln.split(": ", 1) for ln in sb.find("system-out").text.splitlines()[1:])
    assert figures["verdict"] == "regressed" and figures["unit"] == "uJ", figures
    assert float(figures["change_rel"]) > 0.5, figures
    assert cases[names.index("leak[sb report]")].find("failure") is not None


# ---- LAVA -----------------------------------------------------------------------

def lava_lines(text: str) -> list[re.Match]:
    lines = text.splitlines()
    ms = [LAVA_LINE.match(x) for x in lines]
    assert all(ms), [x for x, m in zip(lines, ms) if not m]
    return ms


def test_lava_lines_of_a_report(sbrig):
    report = json.loads((FIX / "minimal.json").read_text())
    r = export(FIX / "minimal.json", "--lava")
    assert r.returncode == 0, r.stderr
    ms = {m["name"]: m for m in lava_lines(r.stdout)}
    assert float(ms["energy_total"]["x"]) == pytest.approx(report["energy"]["total_uJ"] / 1000,
                                                           abs=0.001)
    assert ms["energy_total"]["u"] == "mJ" and ms["latency_median"]["u"] == "ms"
    assert ms["leaks"]["result"] == "fail"      # minimal.json has a leak
    assert "blocker_energy_demo-download" in ms


def test_lava_lines_of_a_comparison(comparison):
    doc = json.loads(comparison.read_text())
    r = export(comparison, "--lava")
    assert r.returncode == 0, r.stderr
    ms = lava_lines(r.stdout)
    assert len(ms) == len(doc["metrics"]) + 1
    by = {m["name"]: m for m in ms}
    # "sb report" has a space: the name is hashed (export-formats.md)
    sb = exportrules.lava_name("compare_blocker_energy_per_wakeup_uJ_sb report")
    assert sb.startswith("compare_blocker_energy_per_wakeup_uJ_sb_report-")
    assert by[sb]["result"] == "fail"
    assert by["compare_verdict"]["result"] == "fail"
    for m, metric in zip(ms, doc["metrics"]):
        assert m["result"] == {"regressed": "fail", "inconclusive": "skip"}.get(
            metric["verdict"], "pass"), (m["name"], metric["verdict"])


def test_an_inconclusive_comparison_is_skipped_never_failed(comparison, tmp_path):
    """Inconclusive means the runs cannot tell, not that the build is bad:
    LAVA gets `skip` (issue 24: it got `fail`), JUnit a <skipped/>, for
    each such metric and for the overall verdict."""
    doc = json.loads(comparison.read_text())
    for m in doc["metrics"]:
        if m["verdict"] == "regressed":
            m["verdict"] = "inconclusive"
    doc["verdict"] = "inconclusive"
    doc["counts"]["inconclusive"] += doc["counts"]["regressed"]
    doc["counts"]["regressed"] = 0
    (tmp_path / "c.json").write_text(json.dumps(doc))
    r = export(tmp_path / "c.json", "--lava")
    assert r.returncode == 0, r.stderr
    ms = {m["name"]: m["result"] for m in lava_lines(r.stdout)}
    assert ms["compare_verdict"] == "skip"
    assert ms[exportrules.lava_name("compare_leak_sb report")] == "skip"
    assert "fail" not in ms.values() and list(ms.values()).count("skip") == \
        doc["counts"]["inconclusive"] + 1
    r = export(tmp_path / "c.json", "--junit", "-o", tmp_path / "j.xml")
    assert r.returncode == 0, r.stderr
    suite = exportrules.check_junit(tmp_path / "j.xml").find("testsuite")
    assert suite.get("failures") == "0"
    assert int(suite.get("skipped")) == doc["counts"]["inconclusive"] > 0


def test_lava_names_are_cut_to_100_characters(sbrig, tmp_path):
    r = json.loads((FIX / "minimal.json").read_text())
    r["blockers"][0]["name"] = "a very long blocker name " * 8
    (tmp_path / "r.json").write_text(json.dumps(r))
    out = export(tmp_path / "r.json", "--lava")
    assert out.returncode == 0, out.stderr
    names = [m["name"] for m in lava_lines(out.stdout)]
    long = [n for n in names if n.startswith("blocker_energy_a_very")]
    assert len(long) == 1 and len(long[0]) == 100
    assert long[0] == exportrules.lava_name("blocker_energy_" + "a very long blocker name " * 8)


# ---- bad input --------------------------------------------------------------------

def test_the_wrong_document_is_refused(sbrig, comparison, tmp_path):
    r = export(comparison, "--perfetto")
    assert r.returncode == 1
    assert f"{comparison}: field 'schema': \"sbrig-compare\" is not \"sbrig-report\"" in r.stderr
    r = export(FIX / "minimal.json", "--junit")
    assert r.returncode == 1
    assert "field 'schema': \"sbrig-report\" is not \"sbrig-compare\"" in r.stderr
    doc = json.loads(comparison.read_text())
    doc["version"] = 9
    (tmp_path / "c9.json").write_text(json.dumps(doc))
    r = export(tmp_path / "c9.json", "--lava")
    assert r.returncode == 1 and "field 'version': 9 is not supported" in r.stderr
    del doc["metrics"][0]["verdict"]
    doc["version"] = 2
    (tmp_path / "c1.json").write_text(json.dumps(doc))
    r = export(tmp_path / "c1.json", "--junit", "-o", tmp_path / "out.xml")
    assert r.returncode == 1 and "field 'metrics[0].verdict': missing" in r.stderr
    assert not (tmp_path / "out.xml").exists()
    r = export(FIX / "minimal.json", "--csv", "nope")
    assert r.returncode == 2 and "expected blockers|wakeups|envelope" in r.stderr
    r = export(FIX / "minimal.json", "--csv", "blockers", "--perfetto")
    assert r.returncode == 2 and "one export at a time" in r.stderr
