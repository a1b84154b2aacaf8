"""The rules of the programs that read sbrig's exports, as code the tests
share (host/doc/export-formats.md):

* LAVA: ``lava_cases()`` runs ``sbrig export --lava`` lines through
  LAVA's own ``lava-test-case`` (the shell script lava-dispatcher installs
  on a device, with its ``lava-common-functions``), the way
  lava-jobs/target/sbrig-lava-power runs them and the way a plain ``sh``
  would, and parses what it prints with lava-dispatcher's own code
  (TestShellAction's signal pattern, ``check_patterns()`` and
  ``signal_test_case()``). ``lava_name()`` is the documented mapping of a
  figure's full name to its LAVA name, ``LAVA_SERVER_*`` lava-server's
  column limits (lava_results_app.models.TestCase).
* JUnit: ``check_junit()``: ``xmllint --noout`` and ``--schema
  tests/fixtures/junit/junit.xsd``, counts that agree with the cases,
  distinct case names (GitLab keeps only the first of two).
* CSV: ``check_csv_inert()``: read with Python's csv module, no text cell
  begins with what a spreadsheet runs as a formula.
"""

from __future__ import annotations

import csv
import decimal
import hashlib
import io
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
JUNIT_XSD = REPO / "tests" / "fixtures" / "junit" / "junit.xsd"
LAVA_SHELL = Path("/usr/lib/python3/dist-packages/lava_dispatcher/lava_test_shell")
POWER_SCRIPT = REPO / "lava-jobs" / "target" / "sbrig-lava-power"

LAVA_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
LAVA_UNITS = re.compile(r"^[A-Za-z0-9_%/.-]{1,100}$")
# lava_results_app.models.TestCase.measurement: DecimalField(max_digits=30,
# decimal_places=10); name and units: at most 100 characters
LAVA_SERVER_DIGITS, LAVA_SERVER_DECIMALS = 30, 10


def _hashed(name: str, sep: str) -> bool:
    return re.search(re.escape(sep) + r"[0-9a-f]{8}$", name) is not None


def lava_name(full: str | bytes) -> str:
    """The documented LAVA name of a figure whose full name is ``full``."""
    raw = full.encode() if isinstance(full, str) else full
    ok = (len(raw) <= 100 and re.fullmatch(rb"[A-Za-z0-9_.-]+", raw) is not None
          and not _hashed(raw.decode("ascii"), "-"))
    if ok:
        return raw.decode("ascii")
    kept = bytes(b if re.fullmatch(rb"[A-Za-z0-9_.-]", bytes([b])) else ord("_")
                 for b in raw[:91])
    return kept.decode("ascii") + "-" + hashlib.sha256(raw).hexdigest()[:8]


class _Log:
    """lava-dispatcher's logger, as far as signal handling uses it: what
    it would log as results (the YAML logger's ``results()``) and errors."""

    def __init__(self) -> None:
        self.got: list[dict] = []
        self.errors: list[str] = []

    def results(self, d: dict) -> None:
        self.got.append(d)

    def error(self, msg, *args) -> None:
        self.errors.append(msg % args if args else msg)

    def debug(self, *a, **k) -> None:
        pass

    info = warning = marker = debug


def _lava_bin(tmp: Path) -> Path:
    """LAVA's lava-test-case and lava-common-functions, runnable (the
    dispatcher writes the interpreter line when it deploys them)."""
    d = tmp / "lava-bin"
    if not d.exists():
        d.mkdir(parents=True)
        for name in ("lava-test-case", "lava-common-functions"):
            text = (LAVA_SHELL / name).read_text()
            (d / name).write_text("#!/bin/sh\n" + text)
            (d / name).chmod(0o755)
    return d


def parse_signals(out: str) -> tuple[list[dict], list[str]]:
    """What lava-dispatcher makes of a test shell's output: its results
    and its errors (TestShellAction.check_patterns, signal by signal)."""
    from lava_dispatcher.actions.test.shell import TestShellAction

    action = TestShellAction()
    action._reset_patterns()
    log = _Log()
    action.logger = log
    action.signal_director.test_uuid = "1_sbrig"
    action.definition = "power"
    pattern = re.compile(action.patterns["signal"], re.M)

    class Conn:
        match = None
    for m in pattern.finditer(out):
        c = Conn()
        c.match = m
        action.check_patterns("signal", c, None)
    return log.got, log.errors


def lava_cases(text: str, tmp: Path) -> dict[str, list[dict]]:
    """Every line of ``text`` run by LAVA's lava-test-case, two ways: as
    sbrig-lava-power runs a rig's line (``set -f; set -- $line; "$@"``),
    and as a script given to ``sh``. Returns, for each way, the results
    lava-dispatcher parsed; asserts it logged no error."""
    bindir = _lava_bin(tmp)
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}",
               LAVA_RESULT_DIR=str(tmp / "lava-results"))
    env.pop("KMSG", None)
    loop = 'set -f\nwhile IFS= read -r line; do set -- $line; "$@"; done\n'
    ways = {
        "sbrig-lava-power": subprocess.run(["sh", "-c", loop], input=text, env=env,
                                           capture_output=True, text=True, timeout=120),
        "sh": subprocess.run(["sh", "-s"], input=text, env=env, capture_output=True,
                             text=True, timeout=120),
    }
    out = {}
    for way, r in ways.items():
        results, errors = parse_signals(r.stdout)
        assert not errors, (way, errors)
        assert "Usage" not in r.stdout, (way, r.stdout[-2000:])
        out[way] = results
    return out


def check_lava_results(results: list[dict]) -> None:
    """What lava-server stores of each case: a name and units of at most
    100 characters, a measurement of at most 30 digits, 10 after the
    point; names distinct."""
    names = [r["case"] for r in results]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    for r in results:
        assert LAVA_NAME.match(r["case"]), r
        assert r["result"] in ("pass", "fail", "skip"), r
        if "measurement" in r:
            assert LAVA_UNITS.match(r["units"]), r
            d = decimal.Decimal(repr(r["measurement"])).normalize()
            t = d.as_tuple()
            decimals = max(0, -t.exponent)
            integer = max(0, len(t.digits) + t.exponent)
            assert integer + decimals <= LAVA_SERVER_DIGITS and \
                decimals <= LAVA_SERVER_DECIMALS, r


def power_script_patterns() -> tuple[re.Pattern, re.Pattern]:
    """The CASE and SET patterns sbrig-lava-power accepts a rig's line by."""
    text = POWER_SCRIPT.read_text()
    case = re.search(r"^CASE='(.*)'$", text, re.M).group(1)
    set_ = re.search(r"^SET='(.*)'$", text, re.M).group(1)
    return re.compile(case), re.compile(set_)


# ---- JUnit -----------------------------------------------------------------

def check_junit(path: Path) -> ET.Element:
    """xmllint's well-formedness check and the schema, then what the
    schema cannot say: counts that agree with the cases, distinct names.
    Returns the root element."""
    for args in (["--noout"], ["--noout", "--schema", str(JUNIT_XSD)]):
        r = subprocess.run(["xmllint", *args, str(path)], capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, (args, r.stderr[-3000:])
    root = ET.parse(path).getroot()
    for suite in root.iter("testsuite"):
        cases = suite.findall("testcase")
        assert int(suite.get("tests")) == len(cases)
        assert int(suite.get("failures")) == sum(c.find("failure") is not None
                                                 for c in cases)
        assert int(suite.get("errors")) == sum(c.find("error") is not None for c in cases)
        assert int(suite.get("skipped", "0")) == sum(c.find("skipped") is not None
                                                     for c in cases)
        keys = [(c.get("classname"), c.get("name")) for c in cases]
        assert len(keys) == len(set(keys)), [k for k in keys if keys.count(k) > 1]
    return root


def xmllint_available() -> bool:
    return shutil.which("xmllint") is not None


# ---- CSV -------------------------------------------------------------------

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
NUMBER = re.compile(r"^-?[0-9]+(\.[0-9]+)?$")


def check_csv_inert(text: str) -> list[list[str]]:
    """Rows of ``text`` (Python's csv module, ',' separated, strict); asserts
    that no cell a spreadsheet would take for a formula is there. Negative
    numbers are numbers, not formulas."""
    rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    width = len(rows[0])
    for row in rows:
        assert len(row) == width, row
        for cell in row:
            assert not cell.startswith(FORMULA_START) or NUMBER.match(cell), \
                (cell, row)
    return rows
