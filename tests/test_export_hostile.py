"""sbrig export of hostile report.json and compare.json (issue 25, items
5-8): every string of the document reaches LAVA, JUnit and CSV as what it
is, and nothing else.

* LAVA (5, 6): the lines are run by LAVA's own lava-test-case and parsed
  by lava-dispatcher's own code (tests/exportrules.py): a newline in a
  unit printed a second, well-formed 'lava-test-case injected --result
  pass'; 'a b', 'a_b' and 'a/b' all became blocker_energy_a_b, and two
  120-character names cut to 100 collided. Now one case per figure, the
  names distinct, stable and as export-formats.md documents them
  (tests/exportrules.lava_name), the units without spaces, measurements
  that lava-server can store.
* JUnit (7): U+FFFE in a name (valid UTF-8, invalid XML), a name cut in
  the middle of a character, failures="-2147483648" for an INT64 count:
  xmllint rejected the file. Every file passes xmllint --noout and the
  schema (tests/fixtures/junit/junit.xsd), its counts agree with its
  cases, its case names are distinct.
* CSV (8): a blocker named "=cmd|' /C calc'!A0" was the first cell,
  unquoted. Python's csv module reads every cell back, and none that a
  spreadsheet would run as a formula is left (OWASP's rule), also in
  sbrig history export.

sbrig is the ASan/UBSan build (UBSan halts on any undefined behaviour).
"""

from __future__ import annotations

import copy
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
INT64_MAX = 2**63 - 1

INJECT = "\nlava-test-case injected --result pass"
HOSTILE_NAMES = [
    "a b", "a_b", "a/b",                            # one mapping before
    "x" * 119 + "1", "x" * 119 + "2",               # cut to 100 before
    "blocker=1>2 $(reboot) `id`;rm",                # shell, '=' and '>'
    "name\nlava-test-case injected2 --result pass",
    "caf\u00e9 \u2603",                             # not ASCII
    "ends-like-a-hash-0123abcd",                    # a hashed name's form
]


@pytest.fixture(scope="module", autouse=True)
def build():
    r = subprocess.run(["make", "-C", str(REPO / "host"), "VARIANT=asan", "-j2"],
                       capture_output=True, text=True)
    if r.returncode:
        pytest.fail(f"make -C host VARIANT=asan failed:\n{r.stdout[-3000:]}\n"
                    f"{r.stderr[-3000:]}", pytrace=False)


def export(*args) -> subprocess.CompletedProcess:
    """sbrig export; stdout decoded as it is (no newline translation: a CR
    in a cell stays a CR)."""
    r = subprocess.run([str(SBRIG), "export", *map(str, args)], capture_output=True,
                       env=ENV, timeout=300)
    r.stdout = r.stdout.decode("utf-8", "surrogateescape")
    r.stderr = r.stderr.decode("utf-8", "replace")
    assert "runtime error" not in r.stderr and "AddressSanitizer" not in r.stderr, \
        r.stderr
    return r


@pytest.fixture(scope="module")
def comparison(tmp_path_factory) -> dict:
    """A real compare.json (sbrig compare of synthetic runs) as a dict."""
    d = tmp_path_factory.mktemp("cmp")
    rng = random.Random(25)
    base = [runs.fake_report(rng, blockers={"wifi": 50_000.0}) for _ in range(5)]
    new = [runs.fake_report(rng, blockers={"wifi": 80_000.0}, git_sha="new")
           for _ in range(5)]
    r = subprocess.run([str(SBRIG), "compare", "-q", "-o", str(d),
                        *map(str, runs.write_reports(base, d / "b")), "--",
                        *map(str, runs.write_reports(new, d / "n"))],
                       capture_output=True, text=True, env=ENV, timeout=300)
    assert r.returncode in (0, 1, 4), r.stderr
    return json.loads((d / "compare.json").read_text())


def hostile_compare(doc: dict) -> dict:
    """Metrics whose blockers are HOSTILE_NAMES, a unit with a newline and
    spaces, a metric name with bytes XML has no place for, INT64 counts."""
    doc = copy.deepcopy(doc)
    wifi = next(m for m in doc["metrics"] if m["blocker"] == "wifi")
    for name in HOSTILE_NAMES:
        m = copy.deepcopy(wifi)
        m["blocker"] = name
        doc["metrics"].append(m)
    plain = doc["metrics"][0]
    plain["change_rel"] = None          # the line carries the unit
    plain["unit"] = "mJ" + INJECT
    odd = copy.deepcopy(wifi)
    odd["metric"], odd["blocker"] = "energy\ufffe\x01", None
    odd["change_rel"], odd["change"] = None, 1e300     # no column holds it
    odd["unit"] = "m J = > x"
    doc["metrics"].append(odd)
    cut = copy.deepcopy(wifi)
    cut["blocker"] = "\u00e9" * 300                    # 600 bytes
    doc["metrics"].append(cut)
    doc["counts"]["regressed"] = INT64_MAX
    doc["base"]["n"] = INT64_MAX
    wifi["more_runs"] = INT64_MAX
    return doc


def write(tmp_path: Path, name: str, doc: dict) -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


def full_names(doc: dict) -> list[str]:
    """The full name of each LAVA line of a comparison, in order."""
    out = []
    for m in doc["metrics"]:
        full = "compare_" + m["metric"]
        if m["blocker"]:
            full += "_" + m["blocker"]
        out.append(full)
    return out + ["compare_verdict"]


# ---- LAVA -------------------------------------------------------------------------

def test_lava_lines_of_a_hostile_comparison_are_one_case_each(comparison, tmp_path):
    doc = hostile_compare(comparison)
    r = export(write(tmp_path, "c.json", doc), "--lava")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == len(doc["metrics"]) + 1, r.stdout
    for way, results in exportrules.lava_cases(r.stdout, tmp_path).items():
        assert len(results) == len(lines), (way, [x["case"] for x in results])
        assert not [x for x in results if x["case"].startswith("injected")], way
        exportrules.check_lava_results(results)
        # the names export-formats.md gives, in order
        assert [x["case"] for x in results] == \
            [exportrules.lava_name(n) for n in full_names(doc)], way
    # the figure no column holds is a case without a measurement
    huge = [ln for ln in lines if ln.split()[1] ==
            exportrules.lava_name("compare_energy\ufffe\x01")]
    assert len(huge) == 1 and "--measurement" not in huge[0], huge
    # the lines are what sbrig-lava-power accepts from a rig
    case, _ = exportrules.power_script_patterns()
    assert all(case.search(ln) for ln in lines), \
        [ln for ln in lines if not case.search(ln)]


def test_lava_names_stay_distinct_and_stable(comparison, tmp_path):
    """a b / a_b / a/b, two long names cut at the same place: distinct;
    the same name whatever else the document holds, in any order."""
    doc = hostile_compare(comparison)
    r1 = export(write(tmp_path, "c1.json", doc), "--lava")
    rev = copy.deepcopy(doc)
    rev["metrics"].reverse()
    rev["metrics"] = [m for m in rev["metrics"] if m["blocker"] != "a_b"]
    r2 = export(write(tmp_path, "c2.json", rev), "--lava")
    assert r1.returncode == 0 and r2.returncode == 0, (r1.stderr, r2.stderr)

    def by_name(text):
        return {ln.split()[1] for ln in text.splitlines()}
    n1, n2 = by_name(r1.stdout), by_name(r2.stdout)
    assert len(n1) == len(r1.stdout.splitlines())
    assert n2 <= n1 and len(n1 - n2) == 1
    ab = sorted(n for n in n1 if n.startswith("compare_blocker_energy_per_wakeup_uJ_a_b"))
    assert len(ab) == 3 and "compare_blocker_energy_per_wakeup_uJ_a_b" in ab, ab
    longs = [n for n in n1 if "xxxxxxxx" in n]
    assert len(longs) == 2 and all(len(n) == 100 for n in longs), longs


def test_lava_lines_of_a_hostile_report(tmp_path):
    report = json.loads((FIX / "minimal.json").read_text())
    b0 = report["blockers"][0]
    report["blockers"] = []
    for name in HOSTILE_NAMES:
        b = copy.deepcopy(b0)
        b["name"] = name
        report["blockers"].append(b)
    r = export(write(tmp_path, "r.json", report), "--lava")
    assert r.returncode == 0, r.stderr
    for way, results in exportrules.lava_cases(r.stdout, tmp_path).items():
        exportrules.check_lava_results(results)
        names = [x["case"] for x in results if x["case"].startswith("blocker_energy_")]
        assert names == [exportrules.lava_name("blocker_energy_" + n)
                         for n in HOSTILE_NAMES], way
        assert len(results) == len(r.stdout.splitlines()), way


def test_two_figures_with_one_lava_name_are_an_error(tmp_path):
    """Only a document made for it: the same blocker twice. Two results
    under one name would be one in LAVA: refused, naming both, nothing
    written."""
    report = json.loads((FIX / "minimal.json").read_text())
    report["blockers"].append(copy.deepcopy(report["blockers"][0]))
    out = tmp_path / "lava.txt"
    r = export(write(tmp_path, "r.json", report), "--lava", "-o", out)
    assert r.returncode == 1, r.stdout
    n = len(report["blockers"]) - 1
    assert f"blockers[0] and blockers[{n}] both give the test case name" in r.stderr, \
        r.stderr
    assert not out.exists()


# ---- JUnit ------------------------------------------------------------------------

def test_junit_of_a_hostile_comparison_passes_xmllint_and_the_schema(comparison,
                                                                     tmp_path):
    doc = hostile_compare(comparison)
    src = write(tmp_path, "c.json", doc)
    # a lone surrogate, as JSON can write one (json-c reads it as U+FFFD;
    # bytes that are not UTF-8 at all it refuses)
    raw = src.read_bytes().replace(b'"a_b"', b'"a_\\ud800b"')
    src.write_bytes(raw)
    out = tmp_path / "junit.xml"
    r = export(src, "--junit", "-o", out)
    assert r.returncode == 0, r.stderr
    root = exportrules.check_junit(out)
    suite = root.find("testsuite")
    cases = suite.findall("testcase")
    assert len(cases) == len(doc["metrics"])
    assert int(suite.get("failures")) == sum(m["verdict"] == "regressed"
                                             for m in doc["metrics"])
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["base_runs"] == str(INT64_MAX)
    names = [c.get("name") for c in cases]
    cut = [n for n in names if n.startswith("blocker_energy_per_wakeup_uJ[\u00e9")]
    assert cut == ["blocker_energy_per_wakeup_uJ[" + "\u00e9" * 300 + "]"], cut
    odd = [n for n in names if n.startswith("energy\ufffd")]
    assert len(odd) == 1 and re.fullmatch("energy\ufffd+ #[0-9a-f]{8}", odd[0]), odd
    assert "blocker_energy_per_wakeup_uJ[a_\ufffdb]" in names
    wifi = cases[names.index("blocker_energy_per_wakeup_uJ[wifi]")]
    assert f"run {INT64_MAX} more a side" in wifi.find("system-out").text


def test_junit_names_that_collide_once_replaced_stay_apart(comparison, tmp_path):
    """"a\\x01" and "a\\x02" both need U+FFFD: their hashes keep them apart;
    the same metric twice is an error naming both entries."""
    doc = copy.deepcopy(comparison)
    m = doc["metrics"][0]
    for b in ("a\x01", "a\x02"):
        x = copy.deepcopy(m)
        x["blocker"] = b
        doc["metrics"].append(x)
    out = tmp_path / "j.xml"
    r = export(write(tmp_path, "c.json", doc), "--junit", "-o", out)
    assert r.returncode == 0, r.stderr
    exportrules.check_junit(out)
    doc["metrics"].append(copy.deepcopy(m))
    out2 = tmp_path / "j2.xml"
    r = export(write(tmp_path, "c2.json", doc), "--junit", "-o", out2)
    assert r.returncode == 1 and "metrics[0] and metrics[" in r.stderr, r.stderr
    assert not out2.exists()


# ---- CSV --------------------------------------------------------------------------

PAYLOADS = ["=cmd|' /C calc'!A0", "+1+2", "-2+3", "@SUM(A1:A2)", "\t=1+1", "\r=1+1",
            "a;=cmd|' /C calc'!A0", "a,=1+1", 'q"=1+1']


def test_csv_cells_that_look_like_formulas_are_inert(tmp_path):
    report = json.loads((FIX / "minimal.json").read_text())
    b0 = report["blockers"][0]
    report["blockers"] = []
    for i, name in enumerate(PAYLOADS):
        b = copy.deepcopy(b0)
        b["name"] = name
        b["above_baseline_uJ"] = -5.0 - i       # a negative figure stays one
        report["blockers"].append(b)
    report["wakeups"][0]["blockers"] = list(PAYLOADS)
    report["wakeups"][0]["stimulus"] = "=HYPERLINK(\"http://x\")"
    src = write(tmp_path, "r.json", report)
    r = export(src, "--csv", "blockers")
    assert r.returncode == 0, r.stderr
    rows = exportrules.check_csv_inert(r.stdout)
    assert len(rows) == len(PAYLOADS) + 1
    for row, name in zip(rows[1:], PAYLOADS):
        want = "'" + name if name.startswith(exportrules.FORMULA_START) else name
        assert row[0] == want, (row, name)
        assert row[7].startswith("-") and exportrules.NUMBER.match(row[7]), row
    r = export(src, "--csv", "wakeups")
    assert r.returncode == 0, r.stderr
    rows = exportrules.check_csv_inert(r.stdout)
    assert rows[1][0] == "'=HYPERLINK(\"http://x\")"
    assert rows[1][7] == "'" + ";".join(PAYLOADS), rows[1]


def test_history_export_csv_is_inert_too(tmp_path):
    rng = random.Random(8)
    reps = runs.write_reports([runs.fake_report(rng, blockers={PAYLOADS[0]: 1000.0,
                                                               PAYLOADS[3]: 10.0})],
                              tmp_path / "r")
    db = tmp_path / "h.db"
    r = subprocess.run([str(SBRIG), "history", "--db", str(db), "add", *map(str, reps)],
                       capture_output=True, text=True, env=ENV, timeout=300)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(SBRIG), "history", "--db", str(db), "export"],
                       capture_output=True, text=True, env=ENV, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = exportrules.check_csv_inert(r.stdout)
    blockers = {row[10] for row in rows[1:]}
    assert "'" + PAYLOADS[0] in blockers and "'" + PAYLOADS[3] in blockers, blockers
