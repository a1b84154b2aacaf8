"""sbrig analyze against captures whose truth is known exactly.

tests/synth/synthcap.py builds each scenario of its library (overlapping
blockers, a leak, declared and undeclared gaps, clock offset, drift and
injection errors, a reboot mid-capture, a capture that starts asleep, no
clock exchanges at all, the marker line wired next to wrong online marker
pairs, twenty wakes for the latency figures, an empty capture, a killed
writer) as a capture directory, and computes the figures
report-format.md's rules give from its own model, never from the rows it
wrote. Each report must match within 1 % (or the truth's own tighter bound:
synthcap.compare). A corrupt capture must fail naming file:line:column and
write nothing, and a report already there must survive it.
"""

from __future__ import annotations

import dataclasses
import re
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.synth import synthcap as S  # noqa: E402

SBRIG = REPO / "build" / "host" / "asan" / "sbrig"
GOOD = [n for n, sc in ((n, S.scenario(n)) for n in S.SCENARIOS if n != "bench")
        if not sc.corrupt]
BAD = [n for n in S.SCENARIOS if n != "bench" and n not in GOOD]


def analyze(cap: Path, out: Path) -> subprocess.CompletedProcess:
    assert SBRIG.exists(), f"{SBRIG} is not built: run make test"
    return subprocess.run([str(SBRIG), "analyze", str(cap), "-o", str(out), "-q"],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module", params=[1, 2], ids=["tsv", "bin"])
def version(request):
    return request.param


@pytest.mark.parametrize("name", GOOD)
def test_report_matches_the_truth(tmp_path, name, version):
    truth = S.build(S.scenario(name, format_version=version), tmp_path)
    r = analyze(tmp_path / "capture", tmp_path / "report")
    assert r.returncode == 0, r.stderr
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    bad = S.compare(report, truth)
    assert bad == [], "\n".join(bad)


def test_a_one_percent_error_in_a_report_is_caught(tmp_path):
    """The comparison used above is not vacuous: the analysis' own report,
    with one blocker's energy moved by 1.5 %, fails it."""
    truth = S.build(S.scenario("kitchen"), tmp_path)
    assert analyze(tmp_path / "capture", tmp_path / "report").returncode == 0
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert S.compare(report, truth) == []
    report["blockers"][0]["energy_uJ"] *= 1.015
    assert any("energy_uJ" in x for x in S.compare(report, truth))


@pytest.mark.parametrize("leak_s", [12.0, 25.0])
def test_leak_s_sets_the_leak_threshold(tmp_path, leak_s):
    """sbrig analyze --leak-s S (report-format.md: a blocker still active
    at the end after being held >= leak_s is a leak): kitchen's agent
    blocker is held 18 s at the end, so it is a leak under 12 s and none
    under 25 s, and the whole report matches synthcap's truth computed
    with the same threshold."""
    sc = dataclasses.replace(S.scenario("kitchen"), leak_s=leak_s)
    truth = S.build(sc, tmp_path)
    r = subprocess.run([str(SBRIG), "analyze", str(tmp_path / "capture"), "-o",
                        str(tmp_path / "report"), "-q", "--leak-s", f"{leak_s:g}"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    bad = S.compare(report, truth)
    assert bad == [], "\n".join(bad)
    leaks = [f for f in report["findings"] if f["kind"] == "leak"]
    if leak_s < 18:
        assert [f["blocker"] for f in leaks] == ["sbagent report"], leaks
        assert leaks[0]["detail"].endswith(f"held 18.0 s (leak_s {leak_s:g} s)"), leaks
    else:
        assert leaks == [], leaks


@pytest.mark.parametrize("value", ["0", "-1", "x", "5s", "nan", "1e10"])
def test_a_bad_leak_s_is_refused_naming_it(tmp_path, value):
    S.build(S.scenario("basic"), tmp_path)
    r = subprocess.run([str(SBRIG), "analyze", str(tmp_path / "capture"), "-o",
                        str(tmp_path / "report"), "--leak-s", value],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert f"--leak-s: '{value}'" in r.stderr, r.stderr
    assert not (tmp_path / "report").exists()


def test_the_platforms_own_edges_decide_the_suspended_energy(tmp_path):
    """The log says suspended from enter to exit; the platform runs for a
    while at both ends (kitchen: 4 ms after one enter, 6 ms before every
    exit). Those milliseconds at awake power are awake time: counted as
    suspended they would put the suspended energy far off the truth."""
    truth = S.build(S.scenario("kitchen"), tmp_path)
    assert analyze(tmp_path / "capture", tmp_path / "report").returncode == 0
    e = json.loads((tmp_path / "report" / "report.json").read_text())["energy"]
    t = truth["energy"]
    assert t["transition_ns"] > 30_000_000
    assert abs(e["transition_ns"] - t["transition_ns"]) <= t["tol"]["transition_ns"]
    assert e["edges_moved"] >= 5
    assert abs(e["suspended_uJ"] - t["suspended_uJ"]) <= 0.01 * t["suspended_uJ"]


# a corrupt sample row is a samples.tsv matter (samples.bin's records
# have no text to get wrong; its header errors: tests/test_capture_v2.py)
BAD_CASES = [(n, v) for n in BAD for v in (1, 2)
             if not (v == 2 and S.scenario(n).corrupt.file == "samples.tsv")]


@pytest.mark.parametrize("name,version", BAD_CASES)
def test_a_corrupt_capture_names_its_line_and_writes_nothing(tmp_path, name, version):
    truth = S.build(S.scenario(name, format_version=version), tmp_path)
    want = truth["expect_error"]
    out = tmp_path / "report"
    r = analyze(tmp_path / "capture", out)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert want["message_contains"] in r.stderr, r.stderr
    assert str(tmp_path / "capture" / want["file"]) in r.stderr, r.stderr
    assert not out.exists() or not any(out.iterdir()), list(out.iterdir())


def test_a_failed_analysis_keeps_the_report_already_there(tmp_path):
    good, bad = tmp_path / "good", tmp_path / "bad"
    S.build(S.scenario("basic"), good)
    S.build(S.scenario("corrupt"), bad)
    out = tmp_path / "report"
    assert analyze(good / "capture", out).returncode == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert "report.json" in before
    assert analyze(bad / "capture", out).returncode == 1
    after = {p.name: p.read_bytes() for p in out.iterdir()}
    assert after == before


def keep_rows(cap: Path, name: str, keep) -> None:
    """Rewrite CAP/NAME.tsv with only the data lines @keep accepts (their
    fields), and meta.ini's [end] count with it."""
    path = cap / f"{name}.tsv"
    lines = path.read_text().splitlines(keepends=True)
    kept = [x for x in lines[1:] if keep(x.rstrip("\n").split("\t"))]
    path.write_text(lines[0] + "".join(kept))
    meta = cap / "meta.ini"
    meta.write_text("".join(f"{name} = {len(kept)}\n" if x.startswith(f"{name} = ")
                            else x for x in meta.read_text().splitlines(keepends=True)))


def test_the_marker_sets_the_clock_and_the_latency(tmp_path):
    """The marker scenario: pings with a 3 ms round trip, edges.tsv with
    every marker edge, and clock.tsv's online marker pairs 3 ms off. The
    analysis pairs the edges itself: every event within the markers' bound
    (tens of us, rel 0) and each latency exactly to its edge. Without the
    edges it falls back to the online pairs and misses the truth by their
    error; without those too, the pings alone miss the markers' bound."""
    truth = S.build(S.scenario("marker"), tmp_path)
    cap = tmp_path / "capture"
    assert analyze(cap, tmp_path / "report").returncode == 0
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert S.compare(report, truth, rel=0, sections=("capture", "wakeups", "latency")) == []
    clock = report["capture"]["clock"]
    assert clock["marker_pairs_from"] == "edges"
    assert clock["marker_pairs"] == clock["marker_edges"] == truth["capture"]["clock"][
        "marker_pairs"]
    assert clock["max_uncert_ns"] <= 200_000          # the markers', not the pings' ms
    for w in report["wakeups"]:
        assert (w["latency_from"], w["uncert_ns"]) == ("marker", 100_000)
        assert w["marker_t_ns"] - w["t_ns"] == w["latency_ns"]

    keep_rows(cap, "edges", lambda f: False)
    assert analyze(cap, tmp_path / "online").returncode == 0
    online = json.loads((tmp_path / "online" / "report.json").read_text())
    assert online["capture"]["clock"]["marker_pairs_from"] == "clock"
    err = S.scenario("marker").marker.online_error_ns
    for w, t in zip(online["wakeups"], truth["wakeups"]):
        assert w["latency_from"] == "resume"
        assert abs(w["resume_t_ns"] - t["resume_t_ns"] - err) < err / 10
    assert any("resume_t_ns" in x for x in S.compare(online, truth, sections=("wakeups",)))

    keep_rows(cap, "clock", lambda f: f[0] != f[1])
    assert analyze(cap, tmp_path / "pings").returncode == 0
    pings = json.loads((tmp_path / "pings" / "report.json").read_text())
    assert pings["capture"]["clock"]["marker_pairs_from"] == "none"
    assert any("resume_t_ns" in x for x in S.compare(pings, truth, rel=0,
                                                    sections=("wakeups",)))


def test_same_named_objects_and_wakeup_sources_in_every_output(tmp_path):
    """The 'objects' scenario: two evdev objects overlap and the kernel's
    wakeup sources share the split. report.json says which timeline row is
    which kind, the name is active while either evdev object is, and the
    Perfetto export puts the wakeup sources on tracks of their own (pid 2,
    cat wakeup_source) and the blockers on pid 1, and each cycle's phases
    on the phases thread. Every resume is in wakeups[] with what woke it:
    a press, a charger plug (a stimulus: not unknown), and an alarm that
    only the kernel's alarmtimer wakeup source explains. A lost unblock
    leaks nothing."""
    truth = S.build(S.scenario("objects"), tmp_path)
    r = analyze(tmp_path / "capture", tmp_path / "report")
    assert r.returncode == 0, r.stderr
    rep = json.loads((tmp_path / "report" / "report.json").read_text())
    assert S.compare(rep, truth) == []
    kinds = {b["name"]: b["kind"] for b in rep["blockers"]}
    assert {n for n, k in kinds.items() if k == "wakeup_source"} == \
        {"LNXPWRBN:00", "vport0p1", "test_ac", "alarmtimer"}
    evdev = next(b for b in rep["blockers"] if b["name"] == "evdev")
    assert evdev["activations"] == 4 and evdev["stats_check"]["agree"] is True
    # 1.0-4.0 s (two objects, 1-3 and 2-4) and 14.02-14.8 s: one span each
    row = next(t for t in rep["trace"]["timeline"] if t["name"] == "evdev")
    assert len(row["spans"]) == 2
    assert {t["name"]: t["kind"] for t in rep["trace"]["timeline"] if t["spans"]} == kinds
    e = rep["energy"]
    assert abs(sum(b["energy_uJ"] for b in rep["blockers"]) + rep["unattributed"]["energy_uJ"]
               + e["suspended_uJ"] - e["total_uJ"]) < 0.01
    tr = subprocess.run([str(SBRIG), "export", "--perfetto", str(tmp_path / "report" / "report.json")],
                        capture_output=True, text=True, timeout=60)
    assert tr.returncode == 0, tr.stderr
    ev = json.loads(tr.stdout)["traceEvents"]
    tracks = {(e["pid"], e["cat"], e["name"]) for e in ev if e["ph"] in "be"}
    assert tracks == {(2, "wakeup_source", n) if k == "wakeup_source" else (1, "blocker", n)
                      for n, k in kinds.items()}
    assert {"ph": "M", "pid": 2, "name": "process_name",
            "args": {"name": "kernel wakeup sources"}} in ev
    # a device pass's slowest callbacks (dev_pm) ride on its phase slice
    want = [(p["name"], p["t_ns"], [(d["device"], d["verb"], d["duration_ns"], d["error"])
                                    for d in p["slowest_devices"]])
            for c in rep["phases"] for p in c["phases"] if p.get("slowest_devices")]
    got = [(e["name"], round(e["ts"] * 1000), [(d["device"], d["verb"], round(d["duration_us"] * 1000),
                                                d["error"]) for d in e["args"]["slowest_devices"]])
           for e in ev if e["ph"] == "X" and e["cat"] == "phase" and "args" in e]
    assert got == want and len(want) == 8
    assert want[0][2][0] == ("i8042", "suspend", 6_100_000, 0)
    assert want[1][2] == [("0000:00:02.0", "resume", 12_000_000, -5)]
    assert [(w["cause"], w["stimulus"], w["wakeup_source"]) for w in rep["wakeups"]] == [
        ("stimulus", "press power", None), ("stimulus", "plug charger", None),
        ("wakeup_source", None, "alarmtimer"), ("stimulus", "press power", None)]
    w3 = rep["wakeups"][2]
    assert w3["t_ns"] is None and w3["latency_ns"] is None and w3["latency_from"] is None
    assert rep["unknown_wake_count"] == 0 and rep["latency"]["n"] == 3
    # what each suspend cost: the fourth lasted less than its break-even
    co = rep["suspend_costs"]
    assert len(co["cycles"]) == 4 and co["median_break_even_ns"] > 0
    short = [c for c in co["cycles"] if c["break_even_ns"] is not None
             and c["suspended_ns"] < c["break_even_ns"]]
    assert [c["t_ns"] for c in short] == [f["t_ns"] for f in rep["findings"]
                                          if f["kind"] == "short_suspend"]
    assert len(short) == 1
    assert "unknown_wakeup" not in [f["kind"] for f in rep["findings"]]
    # gps's unblock was lost: ended at the "lost" record (the next stats
    # snapshot shows it inactive), no phantom leak; the finding says so
    gps = next(b for b in rep["blockers"] if b["name"] == "gps")
    assert not gps["active_at_end"]
    assert abs(gps["active_ns"] - 1_500_000_000) < 2_000_000
    lost = [f for f in rep["findings"] if f["kind"] == "lost_events"]
    assert len(lost) == 1 and lost[0]["detail"].startswith("1 record(s) of the event log lost")
    assert "leak" not in [f["kind"] for f in rep["findings"]]
    # the phases of each cycle (sleepgraph's names) as slices on tid 2
    assert [c["cycle"] for c in rep["phases"]] == [1, 2, 3, 4]
    assert [p["name"] for p in rep["phases"][0]["phases"]] == [p[0] for p in S.PHASES]
    # dev_pm records: each device pass's slowest callbacks, slowest first
    by = {p["name"]: p for p in rep["phases"][0]["phases"]}
    assert [(d["device"], d["duration_ns"]) for d in by["suspend"]["slowest_devices"]] == [
        ("i8042", 6100000), ("0000:00:02.0", 4200000), ("serio0", 900000)]
    assert by["resume"]["slowest_devices"][0]["error"] == -5
    assert "slowest_devices" not in by["suspend_late"]
    sl = [(e["name"], round(e["ts"] * 1000), round(e["dur"] * 1000)) for e in ev
          if e["ph"] == "X" and e.get("tid") == 2]
    assert sl == [(p["name"], p["t_ns"], p["duration_ns"]) for c in rep["phases"]
                  for p in c["phases"]]


def test_same_named_objects_after_a_lost_record_by_id_and_by_count(tmp_path):
    """The 'objects-lost' scenario: evdev's first object releases in the
    lost records, its second blocks after them; the next snapshot counts
    one evdev object active. With ids (events.tsv obj) the analysis ends
    the first at the "lost" record and the truth holds exactly; the same
    capture without the obj column (as written before issue 23) is
    analysed as before, by count: the first object stays open in place of
    the second, evdev is active 1 s too long (3.5-4.5 s, when nothing of
    it was), and the report says the capture had no ids and that the
    finding's re-synchronisation is a guess."""
    reps, truths = {}, {}
    for ids in (True, False):
        d = tmp_path / ("ids" if ids else "noids")
        truths[ids] = S.build(S.scenario("objects-lost", object_ids=ids), d)
        r = analyze(d / "capture", d / "report")
        assert r.returncode == 0, r.stderr
        reps[ids] = json.loads((d / "report" / "report.json").read_text())
        header = (d / "capture" / "events.tsv").read_text().split("\n")[0]
        assert header.endswith("\tcut\tobj") == ids
    assert S.compare(reps[True], truths[True]) == []
    # by count the figures are not the truth's (evdev's, touch's, idle's)
    assert any(x.startswith("blockers[evdev].active_ns")
               for x in S.compare(reps[False], truths[False]))
    ev = {ids: next(b for b in rep["blockers"] if b["name"] == "evdev")
          for ids, rep in reps.items()}
    assert abs(ev[True]["active_ns"] - 5_000_000_000) < 2_000_000
    assert abs(ev[True]["max_active_ns"] - 2_500_000_000) < 2_000_000
    assert abs(ev[False]["active_ns"] - 6_000_000_000) < 2_000_000
    assert ev[True]["activations"] == ev[False]["activations"] == 2
    assert reps[True]["capture"]["object_ids"] == "all"
    assert reps[False]["capture"]["object_ids"] == "none"
    lost = {ids: next(f for f in rep["findings"] if f["kind"] == "lost_events")
            for ids, rep in reps.items()}
    assert "without object ids" in lost[False]["detail"]
    assert "without object ids" not in lost[True]["detail"]
    # touch (3.5-4.0 s) was evdev's only company by count: half its energy
    touch = {ids: next(b for b in rep["blockers"] if b["name"] == "touch")
             for ids, rep in reps.items()}
    assert touch[True]["exclusive_energy_uJ"] > 0
    assert touch[False]["exclusive_energy_uJ"] == 0


def test_old_capture_fixture_without_object_ids(tmp_path):
    """A capture written before issue 23 (tests/fixtures/captures/complete:
    events.tsv without obj) is still analysed; the report says it had no
    object ids."""
    fix = REPO / "tests" / "fixtures" / "captures" / "complete"
    assert (fix / "events.tsv").read_text().split("\n")[0].endswith("\targ\tcut")
    r = analyze(fix, tmp_path / "report")
    assert r.returncode == 0, r.stderr
    rep = json.loads((tmp_path / "report" / "report.json").read_text())
    assert rep["capture"]["object_ids"] == "none"
    assert [b["name"] for b in rep["blockers"]]


def test_text_summary_escapes_control_characters(tmp_path):
    """A blocker name may hold anything user space passed to the module: a
    newline would fake a summary line of its own ("report: /etc/passwd"),
    an ESC would drive the terminal. The summary escapes them as the
    capture format does (\\n, \\xHH)."""
    S.build(S.scenario("basic"), tmp_path)
    evil = "evil\\nreport: /etc/passwd\\x1b[2J"      # escaped, as in the TSV
    for name in ("events.tsv", "stats.tsv"):
        f = tmp_path / "capture" / name
        f.write_text(f.read_text().replace("\twifi\t", f"\t{evil}\t"))
    r = subprocess.run([str(SBRIG), "analyze", str(tmp_path / "capture"), "-o",
                        str(tmp_path / "report")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "\x1b" not in r.stdout
    lines = r.stdout.splitlines()
    assert not any(x.startswith("report: /etc/passwd") for x in lines)
    assert any(x.startswith("blocker: evil\\nreport: /etc/passwd\\x1b[2J: ") for x in lines)
    # the report keeps the name itself
    rep = json.loads((tmp_path / "report" / "report.json").read_text())
    assert "evil\nreport: /etc/passwd\x1b[2J" in [b["name"] for b in rep["blockers"]]


def test_a_name_that_is_not_utf8_gives_a_valid_report(tmp_path):
    """A blocker name that is not UTF-8 (bytes user space passed to the
    module): report.json stays valid UTF-8 (each invalid byte as the text
    \\xHH) and its own renderer reads it; valid multi-byte text is kept."""
    S.build(S.scenario("basic"), tmp_path)
    for name in ("events.tsv", "stats.tsv"):
        f = tmp_path / "capture" / name
        f.write_bytes(f.read_bytes().replace(b"\twifi\t", b"\tw\xffi\xc3 \xc3\xa9\t")
                      .replace(b"\tgps\t", b"\tgps\xed\xa0\x80\t"))
    r = analyze(tmp_path / "capture", tmp_path / "report")
    assert r.returncode == 0, r.stderr
    raw = (tmp_path / "report" / "report.json").read_bytes()
    raw.decode("utf-8")                                  # strict: raises if not
    names = {b["name"] for b in json.loads(raw)["blockers"]}
    assert "w\\xffi\\xc3 \u00e9" in names                # é kept, the rest escaped
    assert "gps\\xed\\xa0\\x80" in names                 # a surrogate is not UTF-8
    assert (tmp_path / "report" / "report.html").stat().st_size > 0


def test_events_in_reverse_order_are_memory_safe(tmp_path):
    """issue 23's heap corruption: events.tsv's rows in reverse order and
    no stats snapshot made the analysis corrupt its heap ('corrupted size
    vs. prev_size', 'free(): invalid pointer'). The ASan build must run
    through and write a report its renderer reads."""
    S.build(S.scenario("kitchen"), tmp_path)
    ev = tmp_path / "capture" / "events.tsv"
    head, *rows = ev.read_text().splitlines(keepends=True)
    ev.write_text(head + "".join(reversed(rows)))
    st = tmp_path / "capture" / "stats.tsv"
    st.write_text(st.read_text().splitlines(keepends=True)[0])
    r = analyze(tmp_path / "capture", tmp_path / "report")
    assert r.returncode == 0, r.stderr
    assert "ERROR: AddressSanitizer" not in r.stderr
    rep = json.loads((tmp_path / "report" / "report.json").read_text())
    assert rep["energy"]["total_uJ"] > 0


# ---- hostile captures at the INT64 extremes (issue 23) -----------------------

I64_MAX, I64_MIN, U64_MAX = 2**63 - 1, -2**63, 2**64 - 1

# (file, column, value, every row or only the third data row (gaps.tsv's
# second, its last), what the ASan
# build must say: None = accepted, the report and every export from it
# made without a sanitizer report; else a regex its error must match,
# naming the file and the field)
EXTREMES = [
    ("clock.tsv", "host_send_ns", I64_MIN, False, None),
    ("clock.tsv", "host_recv_ns", I64_MIN, False, None),
    ("events.tsv", "uncert_ns", I64_MAX, False, None),
    ("events.tsv", "uncert_ns", I64_MAX, True, None),
    ("events.tsv", "host_t_ns", I64_MIN, False, None),
    ("events.tsv", "host_t_ns", I64_MAX, True, None),
    ("events.tsv", "host_t_ns", I64_MIN, True, None),
    ("events.tsv", "target_t_ns", I64_MIN, False, None),
    ("stats.tsv", "count", U64_MAX, True, None),
    ("stimuli.tsv", "t_ns", I64_MIN, True, None),
    # -1 is the daemon's "not mapped online" (with host_t_ns 0)
    ("events.tsv", "uncert_ns", -1, True, None),
    ("events.tsv", "uncert_ns", I64_MIN, False,
     r"events\.tsv:4: column 2 \(uncert_ns\): '-9223372036854775808': "
     r"not an uncertainty \(>= 0, or -1: not mapped online\)"),
    ("samples.tsv", "t_ns", I64_MAX, False,
     r"samples\.tsv: sample 3: t_ns 9223372036854775807: not a time"),
    ("samples.tsv", "t_ns", I64_MIN, False,
     r"samples\.tsv: sample 3: t_ns -9223372036854775808: not a time"),
    # a declared gap from INT64_MIN covered every sample after it: a
    # 35 MB report.json its own loader refused
    ("gaps.tsv", "t_ns", I64_MIN, False,
     r"gaps\.tsv:3: gap -9223372036854775808\.\.\d+: t_ns is before the "
     r"previous gap's next_t_ns"),
]


@pytest.fixture(scope="module")
def kitchen(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("kitchen")
    S.build(S.scenario("kitchen"), d)
    return d / "capture"


@pytest.mark.parametrize("fname,col,value,every,err", EXTREMES,
                         ids=[f"{f}:{c}={v}{':all' if a else ''}"
                              for f, c, v, a, _ in EXTREMES])
def test_int64_extremes_saturate_or_are_refused(kitchen, tmp_path, fname, col,
                                                value, every, err):
    """A time, uncertainty or count at INT64_MIN/MAX (UINT64_MAX) in any file
    of a capture: the analysis (ASan/UBSan build) runs through and the
    renderer and every exporter take its report, or it refuses the capture
    naming the file and the field. UBSan aborted in clockfit.c,
    integrate.c, wakeups.c, findings.c and report-json.c before."""
    import re
    import shutil

    cap = tmp_path / "capture"
    shutil.copytree(kitchen, cap)
    path = cap / fname
    head, *rows = path.read_text().splitlines()
    k = head.split("\t").index(col)
    for i in range(len(rows)) if every else [min(2, len(rows) - 1)]:
        cells = rows[i].split("\t")
        cells[k] = str(value)
        rows[i] = "\t".join(cells)
    path.write_text("\n".join([head, *rows]) + "\n")
    r = analyze(cap, tmp_path / "report")
    assert "runtime error" not in r.stderr and "Sanitizer" not in r.stderr, \
        r.stderr[-3000:]
    if err:
        assert r.returncode == 1, r.stderr
        assert re.search(err, r.stderr), r.stderr
        assert not (tmp_path / "report" / "report.json").exists()
        return
    assert r.returncode == 0, r.stderr[-3000:]
    rep = tmp_path / "report" / "report.json"
    assert json.loads(rep.read_text())["energy"]["total_uJ"] > 0
    for args in (["render", str(rep)], ["export", str(rep), "--perfetto"],
                 ["export", str(rep), "--csv", "blockers"],
                 ["export", str(rep), "--csv", "wakeups"],
                 ["export", str(rep), "--csv", "envelope"],
                 ["export", str(rep), "--lava"]):
        x = subprocess.run([str(SBRIG), *args, "-o", str(tmp_path / "out")],
                           capture_output=True, text=True, timeout=120)
        assert x.returncode == 0 and "runtime error" not in x.stderr, \
            (args, x.stderr[-3000:])


# ---- the stats check's tolerance near a snapshot (issue 23) -------------------

_BOOT = "5f1c2a9e-0000-4000-8000-000000000023"
_OFF = 5_000_000_000            # host = target + 5 s
_MS = 1_000_000


def _snapshot_capture(d: Path, x_holds: list[tuple[int, int]],
                      snapshots: list[tuple[int, int, int]]) -> Path:
    """A 10 s capture, written row by row: 1 W flat, pings every 0.5 s
    (round trip 200 us, exact), blocker "x" held over @x_holds (host ns,
    start and end; events exact, uncertainty 100 us) and stats snapshots
    (host ns, x's count, x's total_time_ns) @snapshots, each with an idle
    "y" and the deleted row, as the module lists them."""
    cap = d / "capture"
    cap.mkdir(parents=True)
    t0, t1 = 100_000 * _MS, 110_000 * _MS
    (cap / "meta.ini").write_text(
        "[capture]\nformat = sbrig-capture\nversion = 1\n"
        "created = 2024-05-01T10:00:00.000000000Z\n"
        f"created_realtime_ns = 1714557600000000000\ncreated_monotonic_ns = {t0 - _MS}\n\n"
        "[provenance]\nrig_name = synthetic\nrig_config = tests/test_analyze_synth.py\n"
        "rig_sha256 = \nhost_version = synth\ngit_sha = \nscenario = synth:snapshot-edge\n"
        "scenario_sha256 = \npower_uri = synth:ina226\ntarget_uri = synth:target\n\n"
        f"[target]\nboot_id = {_BOOT}\nkernel = 6.1.0-synth-amd64\nmodule = 0.2\n"
        f"agent = 0.2\nseen_monotonic_ns = {t0}\n")
    with open(cap / "samples.tsv", "w") as f:
        f.write("t_ns\tcurrent_uA\tbus_uV\tshunt_nV\tpower_uW\n")
        for t in range(t0, t1 + 1, _MS):
            f.write(f"{t}\t200000\t5000000\t20000000\t1000000\n")
    with open(cap / "clock.tsv", "w") as f:
        f.write("host_send_ns\thost_recv_ns\ttarget_ns\tretained\n")
        for t in range(t0, t1 + 1, 500 * _MS):
            f.write(f"{t}\t{t + 200_000}\t{t + 100_000 - _OFF}\t1\n")
    ev = [(a, "block") for a, _ in x_holds] + [(b, "unblock") for _, b in x_holds]
    with open(cap / "events.tsv", "w") as f:
        f.write("host_t_ns\tuncert_ns\ttarget_t_ns\tboot_id\tseq\ttype\targ\tcut\n")
        for i, (t, typ) in enumerate(sorted(ev)):
            f.write(f"{t}\t100000\t{t - _OFF}\t{_BOOT}\t{i + 1}\t{typ}\tx\t0\n")
    with open(cap / "stats.tsv", "w") as f:
        f.write("t_ns\tname\tcount\twake_count\tactive_since_ns\ttotal_time_ns\t"
                "sleep_time_ns\tmax_time_ns\tlast_change_ns\n")
        for t, count, total in snapshots:     # x, an idle "y", the deleted
            f.write(f"{t}\tx\t{count}\t0\t0\t{total}\t{total}\t{500 * _MS}\t{t - _OFF}\n"
                    f"{t}\ty\t0\t0\t0\t0\t0\t0\t0\n"
                    f"{t}\tdeleted_suspend_blockers\t0\t0\t0\t0\t0\t0\t0\n")
    for name, head in (("gaps", "t_ns\tnext_t_ns\tmissing"), ("edges", "t_ns\tline\tedge\tseqno"),
                       ("stimuli", "t_ns\twhat\targ")):
        (cap / f"{name}.tsv").write_text(head + "\n")
    with open(cap / "meta.ini", "a") as f:
        f.write(f"\n[end]\nstatus = complete\nclosed_monotonic_ns = {t1 + _MS}\n")
    return cap


S1, S2 = 101_000 * _MS, 108_000 * _MS      # the two snapshots
# x held 0.5 s at 102 s and 105 s: well inside the window
INSIDE = [(102_000 * _MS, 102_500 * _MS), (105_000 * _MS, 105_500 * _MS)]


@pytest.mark.parametrize("case,third,count,total,agree", [
    # the module read its table 0.8 ms after a block the events map 0.5 ms
    # after the snapshot's time: counted in the window before; within
    # 2 ms + the clock's uncertainty, so it may be: agree
    ("near", 108_000 * _MS + 500_000, 3, 1000 * _MS + 300_000, True),
    # the same block 50 ms after the snapshot, counted before it: no
    ("far", 108_050 * _MS, 3, 1000 * _MS + 300_000, False),
    # the activation at 105 s, clearly inside the window, missing from
    # the stats
    ("missing", None, 1, 500 * _MS, False),
])
def test_stats_check_tolerance_near_a_snapshot(tmp_path, case, third, count, total,
                                               agree):
    """report-format.md's stats check: the counts may differ by the
    activations within 2 ms plus the snapshot's clock uncertainty of its
    time (events_near_snapshot), no more: a correct capture is not
    flagged, a really mismatching one is."""
    holds = INSIDE + ([(third, third + 200 * _MS)] if third else [])
    cap = _snapshot_capture(tmp_path, holds, [(S1, 0, 0), (S2, count, total)])
    r = analyze(cap, tmp_path / "report")
    assert r.returncode == 0, r.stderr
    rep = json.loads((tmp_path / "report" / "report.json").read_text())
    x = next(b for b in rep["blockers"] if b["name"] == "x")
    sc = x["stats_check"]
    assert sc["count_delta"] == count and sc["events_count"] == 2, sc
    assert sc["events_near_snapshot"] == (1 if case == "near" else 0), sc
    assert sc["agree"] is agree, sc
    flagged = [f for f in rep["findings"] if f["kind"] == "stats_mismatch"]
    assert [f["blocker"] for f in flagged] == ([] if agree else ["x"])


def _unseen_wakes(unseen: bool) -> S.Scenario:
    """Three charger wakes of 80 ms that no ping reaches (``unseen``: their
    records have no online host time), each resume stepping BOOTTIME by a
    wrong sleep time (up to 0.7 s), between two awake stretches the clock
    sees; then a key wake."""
    kw = dict(lag_ms=6.0, exit_ms=6.0, latency_ms=30.0, unseen=unseen)
    sleeps = [S.Sleep(2.0, 2.5, "plug charger", injection_error_ns=400_000_000, **kw),
              S.Sleep(2.6, 3.8, "unplug charger", injection_error_ns=-300_000_000, **kw),
              S.Sleep(3.9, 5.0, "plug charger", injection_error_ns=700_000_000, **kw),
              S.Sleep(5.1, 8.0, "press power", injection_error_ns=200_000_000,
                      lag_ms=6.0, exit_ms=6.0, latency_ms=30.0)]
    holds = [S.Hold("keypad-scan", 8.009, 8.5, 40_000), S.Hold("sync", 9.0, 10.0, 150_000)]
    return S.Scenario("unseen", 12.0, rate_hz=2000, holds=holds, sleeps=sleeps,
                      clock=S.Clock(ping_interval_s=0.5, online_offset_ns=0,
                                    online_drift_ppm=0.0))


def test_wakes_the_clock_did_not_see_are_placed_by_the_power(tmp_path):
    """Issue 23: a charger plug answered in tens of milliseconds has no
    clock exchange, and its records no online time; the report still
    explains it by its stimulus, its resume within the stated
    uncertainty of the truth (placed by the power: report-format.md), and
    the report matches the truth as a whole."""
    truth = S.build(_unseen_wakes(True), tmp_path)
    ev = (tmp_path / "capture" / "events.tsv").read_text().splitlines()
    unseen = [r for r in ev[1:] if r.split("\t")[1] == "-1"]
    assert len(unseen) >= 9, "the scenario lost no online time"
    r = analyze(tmp_path / "capture", tmp_path / "report")
    assert r.returncode == 0, r.stderr
    rep = json.loads((tmp_path / "report" / "report.json").read_text())
    assert rep["capture"]["placed_events"] == len(unseen), rep["capture"]
    assert rep["capture"]["unmapped_events"] == 0, rep["capture"]
    assert rep["unknown_wake_count"] == 0, rep["wakeups"]
    got = [(w["cause"], w["stimulus"]) for w in rep["wakeups"]]
    assert got == [("stimulus", "plug charger"), ("stimulus", "unplug charger"),
                   ("stimulus", "plug charger"), ("stimulus", "press power")], got
    for w, t in zip(rep["wakeups"], truth["wakeups"]):
        assert abs(w["resume_t_ns"] - t["resume_t_ns"]) <= w["uncert_ns"], (w, t)
        # the platform runs 6 ms before exit and 6 ms after enter: the
        # placement's interval is 12 ms wide, plus a sample interval (0.5 ms)
        assert w["uncert_ns"] <= 6_000_000 + 2 * 500_000, w
    bad = S.compare(rep, truth)
    assert bad == [], "\n".join(bad)


def test_a_short_wakes_exchanges_are_not_judged_against_the_sleep_before(tmp_path):
    """A virtual-rig capture (tests/fixtures/captures/short-wake, from a
    LAVA power run): a press's wake whose clock exchanges had 42-44 ms
    round trips, after a sleep whose BOOTTIME step moved the offset by
    169 ms, next to a 2 ms exchange before the sleep. The band filter
    judged them against that quicker one, from another line, and dropped
    them: the wake had no segment, the re-wake before it (its records
    with no online time at all) kept host time 0, and the report gave a
    wakeup awake for 50 873 s in a 4 s capture. Judged among the
    exchanges of their own line (clockfit.c, step 2), the wake is a
    segment, and every wakeup lies inside the capture."""
    cap = REPO / "tests" / "fixtures" / "captures" / "short-wake"
    r = analyze(cap, tmp_path / "report")
    assert r.returncode == 0, r.stderr
    rep = json.loads((tmp_path / "report" / "report.json").read_text())
    assert rep["capture"]["clock"]["segments"] == 2, rep["capture"]["clock"]
    span = rep["capture"]["end_ns"] - rep["capture"]["start_ns"]
    for w in rep["wakeups"]:
        assert rep["capture"]["start_ns"] <= w["resume_t_ns"] <= \
            rep["capture"]["end_ns"], w
        assert 0 <= w["awake_ns"] <= span, w
        if w["latency_ns"] is not None:
            assert 0 <= w["latency_ns"] <= w["awake_ns"] + span, w
    # both presses explain a wake, the re-suspend's in between is known
    assert [w["stimulus"] for w in rep["wakeups"]].count("press power") == 2


def test_a_wake_with_no_time_at_all_is_not_put_at_host_time_zero(tmp_path):
    """A virtual-rig capture (tests/fixtures/captures/asleep-start, from a
    LAVA power run) that began with the target asleep: its first wake
    (a re-wake the module counted as unknown) had no clock exchange and
    no online time, its records host time 0 in events.tsv, and the
    report put its resume at host time 0: a wakeup awake for 49 429 s in
    a 4 s capture. An event with no time is no earlier than the events
    logged before it (report-format.md, "Clock"): its resume is there,
    still unmapped, and no wakeup is longer than the capture."""
    cap = REPO / "tests" / "fixtures" / "captures" / "asleep-start"
    r = analyze(cap, tmp_path / "report")
    assert r.returncode == 0, r.stderr
    rep = json.loads((tmp_path / "report" / "report.json").read_text())
    c = rep["capture"]
    assert c["unmapped_events"] > 0, c
    span = c["end_ns"] - c["start_ns"]
    for w in rep["wakeups"]:
        assert w["resume_t_ns"] > c["start_ns"] - 10 * span, w
        assert 0 <= w["awake_ns"] <= span, w
    assert [w["cause"] for w in rep["wakeups"]] == ["unknown", "stimulus", "stimulus"]


def test_unseen_wakes_from_the_captures_start_are_placed(tmp_path):
    """A virtual-rig capture (tests/fixtures/captures/charger-unseen,
    rig/scenarios/charger-plug.scn) that begins with the target asleep:
    six charger wakes of about 50 ms, none with a clock exchange, their
    records with no online time (the daemon no longer maps them with the
    next wake's clock), then a key wake the clock sees. No epoch before
    the first wake is mapped, only the log's first one (the suspend path
    of the sleep the capture began in, logged with the model from before
    it): the run of wakes is bracketed by the capture's start, and every
    charger wake is placed by the power and explained by its stimulus,
    its resume after it and no later than the next."""
    cap = REPO / "tests" / "fixtures" / "captures" / "charger-unseen"
    r = analyze(cap, tmp_path / "report")
    assert r.returncode == 0, r.stderr
    rep = json.loads((tmp_path / "report" / "report.json").read_text())
    stim = [ln.split("\t") for ln in
            (cap / "stimuli.tsv").read_text().splitlines()[1:]]
    wakes = [(int(t), f"{w} {a}") for t, w, a in stim if w != "release"]
    got = rep["wakeups"]
    assert [(w["cause"], w["stimulus"], w["t_ns"]) for w in got] == \
        [("stimulus", s, t) for t, s in wakes], got
    assert rep["unknown_wake_count"] == 0, got
    assert [w["resume_from"] for w in got[:6]] == ["placed"] * 6, got
    assert got[6]["resume_from"] == "clock", got[6]
    for w, nxt in zip(got, [t for t, _ in wakes[1:]] + [None]):
        assert w["resume_t_ns"] + w["uncert_ns"] >= w["t_ns"], w
        if nxt is not None:
            assert w["resume_t_ns"] - w["uncert_ns"] < nxt, w
    for w in got[:6]:
        assert "test_ac" in w["blockers"], w


def _lose_tail(cap: Path, from_ns: int, to_ns: int, flag: str = "1") -> None:
    """meta.ini's [end] as sbrigd writes it for a sensor that did not
    deliver its samples up to the stop (capture-format.md)."""
    meta = cap / "meta.ini"
    text = meta.read_text()
    assert "\n[end]\n" in text
    meta.write_text(text.replace(
        "\n[end]\n", f"\n[end]\nsensor_tail_lost = {flag}\n"
        f"sensor_tail_lost_from_ns = {from_ns}\nsensor_tail_lost_to_ns = {to_ns}\n"))


def _power_uW(s) -> float:
    """A sample's power as report-format.md ("Integration") takes it."""
    return abs(s.current_uA) * s.bus_uV / 1e6 if s.bus_uV > 0 else float(s.power_uW)


@pytest.mark.parametrize("version", [1, 2], ids=["tsv", "bin"])
def test_a_tail_lost_at_the_stop_is_a_gap_not_energy(tmp_path, version):
    """The sensor did not deliver its last 248 ms before the stop (meta.ini
    [end] sensor_tail_lost): the report integrates nothing over them (the
    energies and the capture's end are those of the same capture without
    the keys), lists them as a gap after the last sample, bounded like
    any gap, and the gap finding says first that the capture ends early,
    in report.json and in the text summary."""
    from tests.capture import read_rows
    S.build(S.scenario("basic", format_version=version), tmp_path)
    cap = tmp_path / "capture"
    r = analyze(cap, tmp_path / "before")
    assert r.returncode == 0, r.stderr
    before = json.loads((tmp_path / "before" / "report.json").read_text())
    samples = read_rows(cap, "samples", typed=True)
    last = samples[-1].t_ns
    _lose_tail(cap, last, last + 248_000_000)
    r = subprocess.run([str(SBRIG), "analyze", str(cap), "-o", str(tmp_path / "after")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rep = json.loads((tmp_path / "after" / "report.json").read_text())

    assert rep["energy"] == before["energy"]
    assert rep["blockers"] == before["blockers"]
    for k in ("start_ns", "end_ns", "duration_ns", "samples"):
        assert rep["capture"][k] == before["capture"][k], k
    assert rep["capture"]["end_ns"] == last
    assert rep["gaps"][:-1] == before["gaps"]
    tail = rep["gaps"][-1]
    head = [s.t_ns for s in samples[:2049]]
    dts = sorted(b - a for a, b in zip(head, head[1:]))
    median = dts[(len(head) - 1) // 2]
    p = [_power_uW(s) for s in samples]
    assert tail["t_ns"] == last and tail["duration_ns"] == 248_000_000, tail
    assert tail["at_stop"] is True and tail["declared"] is True, tail
    assert tail["missing"] == 248_000_000 // median, (tail, median)
    assert tail["hidden_min_uJ"] == pytest.approx(min(p) * 0.248, abs=2e-3)
    assert tail["hidden_max_uJ"] == pytest.approx(max(p) * 0.248, abs=2e-3)
    assert all(g["at_stop"] is False for g in rep["gaps"][:-1])
    assert rep["capture"]["gaps"] == before["capture"]["gaps"] + 1
    assert rep["capture"]["missing_samples"] == \
        before["capture"]["missing_samples"] + tail["missing"]
    warn = ("the sensor's last 248 ms before the stop were not delivered "
            "(the capture ends early); ")
    gap = [f for f in rep["findings"] if f["kind"] == "gap"]
    assert len(gap) == 1 and gap[0]["detail"].startswith(warn), gap
    assert f"finding: gap: {warn}" in r.stdout, r.stdout


@pytest.mark.parametrize("keys,why", [
    ((2_000, 1_000, "1"), r"meta\.ini: \[end\] sensor_tail_lost_to_ns 1000 is "
                          r"before sensor_tail_lost_from_ns 2000"),
    ((1_000, 2_000, "2"), r"meta\.ini: \[end\] sensor_tail_lost: 2: expected 0 or 1"),
    ((-5, 2_000, "1"), r"meta\.ini: \[end\] sensor_tail_lost_from_ns -5 to "
                       r"_to_ns 2000: not a span on the host's clock"),
])
def test_a_bad_lost_tail_is_refused_naming_it(tmp_path, keys, why):
    S.build(S.scenario("basic"), tmp_path)
    _lose_tail(tmp_path / "capture", *keys)
    r = analyze(tmp_path / "capture", tmp_path / "report")
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert re.search(why, r.stderr), r.stderr
    assert not (tmp_path / "report" / "report.json").exists()


def test_a_wakeup_bounded_before_the_capture_is_put_at_its_start(tmp_path):
    """The same capture (tests/fixtures/captures/asleep-start): its first
    wakeup's resume, known only as a lower bound (the log's earliest time
    for a record with no time), lay 1.21 s before the capture's first
    sample, and its awake_ns (1.21 s) ran over time nothing measured. No
    event lies outside the capture: the resume is put at the capture's
    start and marked "bounded" (report-format.md, "Wakeups"); the two
    mapped ones say "clock"."""
    cap = REPO / "tests" / "fixtures" / "captures" / "asleep-start"
    r = analyze(cap, tmp_path / "report")
    assert r.returncode == 0, r.stderr
    rep = json.loads((tmp_path / "report" / "report.json").read_text())
    c = rep["capture"]
    for w in rep["wakeups"]:
        assert c["start_ns"] <= w["resume_t_ns"] <= c["end_ns"], w
    first = rep["wakeups"][0]
    assert first["resume_t_ns"] == c["start_ns"], first
    assert first["resume_from"] == "bounded", first
    assert first["awake_ns"] == 0, first
    # an empty episode holds no energy (it was left open to the end, the
    # whole capture's energy)
    assert first["energy_uJ"] == 0, first
    assert [w["resume_from"] for w in rep["wakeups"][1:]] == ["clock", "clock"]


def test_a_capture_that_ends_asleep_is_asleep_at_its_end(tmp_path):
    """The same virtual-rig capture ended with the target asleep: the
    supply fell to its sleep level (15 mW) 1.29 s before the end and
    stayed there, but that suspend's records never came (the agent sends
    them when the target wakes again). The report counted those 1.29 s
    awake (2.476 s awake in all) and charged them to "sbagent report",
    active at the end. By the power (report-format.md, "The capture's
    end") the target is suspended from the fall: the tail is suspended
    time, "sbagent report" ends there, and the finding says so."""
    cap = REPO / "tests" / "fixtures" / "captures" / "asleep-start"
    r = analyze(cap, tmp_path / "report")
    assert r.returncode == 0, r.stderr
    rep = json.loads((tmp_path / "report" / "report.json").read_text())
    c, en = rep["capture"], rep["energy"]
    end = c["end"]
    assert end["state"] == "inferred_suspended", end
    fall = end["inferred_t_ns"]
    assert end["last_heard_ns"] < fall < c["end_ns"], end
    # the samples fell at 49432.245 s (from 590 mW to 15 mW)
    assert abs(fall - 49432245167155) <= 2_000_000, fall
    assert 15000 < end["sleep_level_uW"] < 100000, end
    assert [fall, c["end_ns"]] in next(st["spans"] for st in rep["trace"]["states"]
                                       if st["state"] == "suspended")
    assert en["awake_ns"] < 1.3e9, en        # 2.476 s before
    agent = next(b for b in rep["blockers"] if b["name"] == "sbagent report")
    assert not agent["active_at_end"], agent
    assert agent["active_ns"] < 1.2e9, agent  # 2.426 s before
    for t in rep["trace"]["timeline"]:
        assert all(s[1] <= fall for s in t["spans"]), t
    assert rep["wakeups"][-1]["resume_t_ns"] + rep["wakeups"][-1]["awake_ns"] == fall
    kinds = [f["kind"] for f in rep["findings"]]
    assert "inferred_suspend" in kinds and "leak" not in kinds, kinds
    f = next(f for f in rep["findings"] if f["kind"] == "inferred_suspend")
    assert f["t_ns"] == fall and "sbagent report" in f["detail"], f


def test_the_last_word_is_the_earliest_it_can_be(tmp_path):
    """A LAVA power run on the virtual rig (tests/fixtures/captures/
    late-pong) that ends asleep without its last suspend's records. Its
    last ping was answered between 77681.554 s and 77681.600 s, and the
    power fell at 77681.576 s: the midpoint of the exchange (77681.577 s)
    lies after the fall it preceded, and taken as the last word it left
    no rise above the sleep level after it. The end stayed unknown and
    the last wakeup awake to the capture's end (1838 ms, three times the
    other's). The last word is the earliest each piece of it can be (the
    ping's send): the end is inferred at the fall."""
    cap = REPO / "tests" / "fixtures" / "captures" / "late-pong"
    r = analyze(cap, tmp_path / "report")
    assert r.returncode == 0, r.stderr
    rep = json.loads((tmp_path / "report" / "report.json").read_text())
    end = rep["capture"]["end"]
    assert end["state"] == "inferred_suspended", end
    assert end["last_heard_ns"] <= 77681553638947 <= end["inferred_t_ns"], end
    assert 77681575000000 <= end["inferred_t_ns"] <= 77681577000000, end
    awake = [w["awake_ns"] for w in rep["wakeups"]]
    assert len(awake) == 2 and max(awake) < 1.2 * min(awake), awake


def test_without_evidence_the_end_stays_awake_and_says_so(tmp_path):
    """The capture's end by the power needs the sleep level of an earlier
    suspended stretch. A target that never slept before it fell silent
    4 s before the end: nothing tells the level, so the log's reading
    (awake, the open blocker charged) is kept, and the report says the
    last records may be missing (capture.end "unknown", finding
    unknown_end). The basic scenario, awake and answering pings to its
    end, ends "awake" with no such finding."""
    sc = S.Scenario("silent", 10.0, holds=[S.Hold("sync", 1.0, 2.5, 400_000),
                                           S.Hold("sbagent report", 5.0, None, 100_000)],
                    asleep_at_end_s=6.0)
    S.build(sc, tmp_path / "silent")
    r = analyze(tmp_path / "silent" / "capture", tmp_path / "r1")
    assert r.returncode == 0, r.stderr
    rep = json.loads((tmp_path / "r1" / "report.json").read_text())
    end = rep["capture"]["end"]
    assert end["state"] == "unknown" and end["inferred_t_ns"] is None, end
    assert end["sleep_level_uW"] is None, end
    f = [f for f in rep["findings"] if f["kind"] == "unknown_end"]
    assert len(f) == 1 and "may be missing" in f[0]["detail"], rep["findings"]
    assert rep["energy"]["suspended_ns"] == 0, rep["energy"]
    agent = next(b for b in rep["blockers"] if b["name"] == "sbagent report")
    assert agent["active_at_end"], agent
    S.build(S.scenario("basic"), tmp_path / "basic")
    r = analyze(tmp_path / "basic" / "capture", tmp_path / "r2")
    assert r.returncode == 0, r.stderr
    rep = json.loads((tmp_path / "r2" / "report.json").read_text())
    assert rep["capture"]["end"]["state"] == "awake", rep["capture"]["end"]
    assert not [f for f in rep["findings"] if f["kind"] in ("unknown_end", "inferred_suspend")]
