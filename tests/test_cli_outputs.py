"""Every output option of sbrig creates the directories it lacks (issue 25,
item 4).

`sbrig analyze -o DIR` created DIR and its parents, while other outputs
failed on a directory that did not exist yet: `sbrig compare --html
FILE`, `sbrig render -o FILE`, `sbrig export -o FILE`, `sbrig history
export|html -o FILE`, `history trend --json FILE` and, through the daemon,
`sbrig capture|run|latency -o DIR` (`err 2 DIR: mkdir: No such file or
directory`; that one is in test_sbrigd_hostile.py). The same option now
behaves the same everywhere: missing directories are created
(sbrig_mkdir_p()), and when one cannot be (a regular file stands in the
way) the error names it.

sbrig is the ASan/UBSan build; the inputs are synthetic reports
(tests/synth/runs.py) and the checked-in capture fixture.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.synth import runs  # noqa: E402

SBRIG = REPO / "build" / "host" / "asan" / "sbrig"
CAPTURE = REPO / "tests" / "fixtures" / "captures" / "demo"
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=1",
           UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")


@pytest.fixture(scope="module", autouse=True)
def build():
    r = subprocess.run(["make", "-C", str(REPO / "host"), "VARIANT=asan", "-j2"],
                       capture_output=True, text=True)
    if r.returncode:
        pytest.fail(f"make -C host VARIANT=asan failed:\n{r.stdout[-3000:]}\n"
                    f"{r.stderr[-3000:]}", pytrace=False)


def sbrig(*args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(SBRIG), *map(str, args)], capture_output=True,
                          text=True, env=ENV, timeout=300, **kw)


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> list[Path]:
    rng = random.Random(25)
    d = tmp_path_factory.mktemp("runs")
    return runs.write_reports([runs.fake_report(rng, git_sha=f"c{i // 2}")
                               for i in range(4)], d)


@pytest.fixture(scope="module")
def db(reports, tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("hist") / "h.db"
    r = sbrig("history", "--db", db, "add", *reports)
    assert r.returncode == 0, r.stderr
    return db


SCENARIO = json.loads(runs.MINIMAL.read_text())["capture"]["provenance"]["scenario"]

# (name, the arguments with OUT standing for the output path, what OUT is)
OUTPUTS = [
    ("analyze -o DIR", ["analyze", CAPTURE, "-o", "OUT", "-q"], "dir"),
    # -f: 2 + 2 runs can never be significant (refused without it)
    ("compare -o DIR", ["compare", "-q", "-f", "-o", "OUT", "R0", "R1", "--", "R2", "R3"],
     "dir"),
    ("compare --html FILE", ["compare", "-q", "-f", "--html", "OUT", "R0", "R1", "--", "R2",
                             "R3"], "file"),
    ("render -o FILE", ["render", "R0", "-o", "OUT"], "file"),
    ("export --csv -o FILE", ["export", "R0", "--csv", "blockers", "-o", "OUT"],
     "file"),
    ("export --samples -o FILE", ["export", CAPTURE, "--samples", "csv", "-o", "OUT"],
     "file"),
    ("history export -o FILE", ["history", "--db", "DB", "export", "-o", "OUT"],
     "file"),
    ("history html -o FILE", ["history", "--db", "DB", "html", "-o", "OUT", SCENARIO],
     "file"),
    ("history trend --json FILE", ["history", "--db", "DB", "trend", "--json", "OUT",
                                   SCENARIO, "energy_per_wakeup_uJ"], "file"),
]


def _args(template, out, reports, db):
    subst = {"OUT": out, "DB": db, **{f"R{i}": p for i, p in enumerate(reports)}}
    return [subst.get(a, a) if isinstance(a, str) else a for a in template]


@pytest.mark.parametrize("name,template,kind", OUTPUTS, ids=[o[0] for o in OUTPUTS])
def test_an_output_in_a_directory_that_does_not_exist_yet(tmp_path, reports, db,
                                                          name, template, kind):
    out = tmp_path / "not" / "there" / ("out" if kind == "dir" else "out.file")
    r = sbrig(*_args(template, out, reports, db))
    assert r.returncode in (0, 4), (name, r.returncode, r.stderr)  # 4: inconclusive
    if kind == "dir":
        assert out.is_dir() and any(out.iterdir()), name
    else:
        assert out.is_file() and out.stat().st_size > 0, name
    assert not list(out.parent.glob("*.tmp.*")), name


@pytest.mark.parametrize("name,template,kind", OUTPUTS, ids=[o[0] for o in OUTPUTS])
def test_an_output_below_a_regular_file_is_an_error_naming_it(tmp_path, reports, db,
                                                              name, template, kind):
    (tmp_path / "afile").write_text("x")
    out = tmp_path / "afile" / "sub" / ("out" if kind == "dir" else "out.file")
    r = sbrig(*_args(template, out, reports, db))
    assert r.returncode not in (0, 4), (name, r.stdout)
    assert str(tmp_path / "afile") in r.stderr, (name, r.stderr)
    assert "AddressSanitizer" not in r.stderr and "runtime error" not in r.stderr
