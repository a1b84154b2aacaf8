"""Memory of sbrig render and sbrig export on large JSON (issue 25, item 9).

A 150 MB report.json took 1.67-2.3 GB of RSS to render or export (json-c
holds a value in 10-260 times its bytes), and the input cap was 1 GiB.
Now (report-load.h, export-formats.md): a document is at most 32 MiB, and
it is read in chunks while its values' cost in memory is counted with an
upper bound per kind of value; past 512 MiB it is refused. The page and
the exports are written as they are made, never whole in memory.

The bound is checked here by measuring: the release build's peak RSS
(os.wait4) on documents made of one kind of value each (the worst cases
of json-c: empty objects, empty arrays, integers, fractions, strings,
wide objects, deep nesting), just below and just above what the budget
admits, never passes the budget plus what the program needs besides the
document; a real-looking report near the cap (wakeups with their phases
and blocker spans) is rendered and exported; the issue's inputs (a 150 MB
report, a compare.json of 200 000 metrics) are refused at once.

The release build: ASan's shadow memory would be measured too. GNU time
(Debian's time, in .ci/install-deps) measures the peak.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SBRIG = REPO / "build" / "host" / "release" / "sbrig"
FIX = REPO / "tests" / "fixtures" / "report"
MiB = 1 << 20
MAX_BYTES = 32 * MiB        # report-load.h: AN_JSON_MAX_BYTES
MAX_TREE = 512 * MiB        # report-load.h: AN_JSON_MAX_TREE
# the program besides the document: binary, libc, json-c, a 64 KiB chunk,
# the page's dygraphs, stdio buffers (measured: ~10 MiB)
SLACK = 48 * MiB


@pytest.fixture(scope="module", autouse=True)
def build():
    r = subprocess.run(["make", "-C", str(REPO / "host"), "-j2"], capture_output=True,
                       text=True)
    if r.returncode:
        pytest.fail(f"make -C host failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}",
                    pytrace=False)


def peak(*args, tmp: Path | None = None) -> tuple[int, int, str]:
    """sbrig ARGS: (exit status, peak RSS in bytes, standard error). The
    peak is GNU time's (%M), measured from a process of its own: a child
    forked from this Python would count Python's pages until its exec."""
    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"sbrig-rss-{os.getpid()}"
    r = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", str(out), str(SBRIG),
                        *map(str, args)], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, timeout=600)
    lines = out.read_text().split()
    out.unlink()
    return r.returncode, int(lines[-1]) * 1024, r.stderr


# One value of each kind json-c pays most for, as the unit of a document
# "[UNIT,UNIT,...]" (or an object of N members); the cost per unit is
# json-c's (report-load.c's table), the size in the file the unit's.
KINDS = {
    "empty objects": "{}",
    "empty arrays": "[]",
    "integers": "1",
    "fractions": "1.5",
    "true": "true",
    "short strings": '"ab"',
    "one-member objects": '{"a":1}',
    "pairs": "[1,2]",
    "17-member objects": "{" + ",".join(f'"{chr(97 + i)}":{i}' for i in range(17)) + "}",
    "nested": "[" * 30 + "1" + "]" * 30,
    "mixed": '{"a":[1,{"b":[2.5,"x",[[]]]}],"c":null,"d":true}',
}


def write_units(path: Path, unit: str, n: int) -> None:
    with open(path, "w") as f:
        f.write("[")
        chunk = ",".join([unit] * 10000)
        for _ in range(n // 10000):
            f.write(chunk)
            f.write(",")
        f.write(",".join([unit] * (n % 10000 or 1)))
        f.write("]")


# what the loader counts for a unit (report-load.c's table), to start the
# search near the budget; the test does not rely on it being right
EST = {"{}": 824, "[]": 440, "1": 96, "1.5": 123, "true": 96, '"ab"': 114,
       '{"a":1}': 929, "[1,2]": 632}


@pytest.mark.parametrize("kind", KINDS, ids=list(KINDS))
def test_a_document_of_the_costliest_values_stays_within_the_bound(tmp_path, kind):
    """Double a document of one kind of value, from a quarter of what the
    budget should admit, until the loader refuses it: the peak RSS stays
    under the budget and the slack for every size, the refused one
    included; the largest admitted one used more than an eighth of the
    budget (the bound is not loose to uselessness)."""
    unit = KINDS[kind]
    path = tmp_path / "doc.json"
    n = max(MAX_TREE // EST.get(unit, 3500) // 4, 1000)
    admitted = []
    while True:
        write_units(path, unit, n)
        if path.stat().st_size > MAX_BYTES:
            break
        rc, rss, err = peak("export", path, "--lava")
        assert rc == 1, err
        assert rss < MAX_TREE + SLACK, (kind, n, rss // MiB)
        if "MiB a document is given in memory" in err:
            break
        assert "not a report: expected an object, got an array" in err, err
        admitted.append(rss)
        n *= 2
    assert admitted, (kind, "refused from a quarter of the estimate on")
    assert max(admitted) > MAX_TREE // 8, (kind, [a // MiB for a in admitted])


def realistic_report(mb: float) -> dict:
    """demo.json grown to about ``mb`` MB the way a long capture grows a
    report: wakeups, each with its suspend/resume phases and a blocker
    span (the trace's envelopes are bounded by the format)."""
    r = json.loads((FIX / "demo.json").read_text())
    w0 = r["wakeups"][0]
    t = r["capture"]["start_ns"]
    phase = [{"name": f"phase{i}", "t_ns": t + i, "duration_ns": 12345} for i in range(12)]
    per = len(json.dumps(w0)) + len(json.dumps(phase)) + 60
    n = int((mb * 1e6 - len(json.dumps(r))) / per)
    r["wakeups"] = [dict(w0, t_ns=t + i * 1000, resume_t_ns=t + i * 1000 + 10)
                    for i in range(n)]
    r["phases"] = [{"cycle": i + 1, "phases": phase} for i in range(n)]
    r["trace"]["timeline"][0]["spans"] = [[t + i * 1000, t + i * 1000 + 500]
                                          for i in range(n)]
    return r


def test_a_report_near_the_cap_is_rendered_and_exported_within_the_bound(tmp_path):
    src = tmp_path / "report.json"
    src.write_text(json.dumps(realistic_report(30)))
    assert 28 * MiB < src.stat().st_size < MAX_BYTES
    for args in (["render", src, "-o", tmp_path / "r.html"],
                 ["export", src, "--perfetto", "-o", tmp_path / "t.json"],
                 ["export", src, "--csv", "wakeups", "-o", tmp_path / "w.csv"],
                 ["export", src, "--lava", "-o", tmp_path / "l.txt"]):
        rc, rss, err = peak(*args)
        assert rc == 0, (args, err)
        assert rss < MAX_TREE + SLACK, (args, rss // MiB)
    assert (tmp_path / "r.html").stat().st_size > src.stat().st_size // 2


def test_the_issues_inputs_are_refused_at_once(tmp_path):
    """A 150 MB report (1.67 GB of RSS before) and a compare.json of
    200 000 metrics (2.7 GB): refused by their size, in little memory."""
    big = tmp_path / "big.json"
    with open(big, "w") as f:
        f.write('{"schema": "sbrig-report", "version": 1, "pad": "')
        f.write("x" * (150 * 10**6))
        f.write('"}')
    for args in (["render", big, "-o", tmp_path / "b.html"],
                 ["export", big, "--csv", "blockers"]):
        rc, rss, err = peak(*args)
        assert rc == 1 and "larger than any real document (at most 32 MiB)" in err, err
        assert rss < 32 * MiB, rss // MiB
    metric = {"metric": "blocker_energy_per_wakeup_uJ", "blocker": "b", "unit": "uJ",
              "worse": "higher", "verdict": "unchanged", "reason": "x",
              "base": {"n": 10, "median": 1.0, "min": 1.0, "max": 1.0,
                       "values": [1.0] * 10},
              "new": {"n": 10, "median": 1.0, "min": 1.0, "max": 1.0,
                      "values": [1.0] * 10}}
    cmp_ = tmp_path / "compare.json"
    with open(cmp_, "w") as f:
        f.write('{"schema": "sbrig-compare", "version": 1, "metrics": [')
        line = json.dumps(metric)
        f.write(",".join([line] * 200_000))
        f.write("]}")
    assert cmp_.stat().st_size > MAX_BYTES
    rc, rss, err = peak("export", cmp_, "--junit")
    assert rc == 1 and "larger than any real document" in err, err
    assert rss < 32 * MiB, rss // MiB


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
