"""Run libsbrig's cmocka unit tests (host/tests/test_*.c), one pytest case each.

The programs are built once per session with ``make -C host unit`` (the
ASan/UBSan variant, so a memory error fails the case). Each program gets
``SBRIG_FIXTURES`` pointing at tests/fixtures/ for checked-in inputs and a
scratch ``SBRIG_TMPDIR``.

A cmocka skip is not a pass: a program that skips a test must say why
this machine cannot run it (a line ``skip-because: TEST: WHY`` before
cmocka's ``[  SKIPPED ] TEST``), and the case is then reported skipped
with that reason. An undeclared skip fails, and so does every skip where
``CI`` is set: CI's machine has all that the tests need.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
UNIT_DIR = REPO / "host" / "tests"
UNIT_BIN = REPO / "build" / "host" / "asan" / "tests"
UNITS = sorted(p.stem for p in UNIT_DIR.glob("test_*.c"))


@pytest.fixture(scope="session")
def unit_build():
    r = subprocess.run(["make", "-C", str(REPO / "host"), "-j2", "unit"],
                       capture_output=True, text=True)
    if r.returncode:
        pytest.fail(f"make -C host unit failed:\n{r.stdout[-4000:]}"
                    f"\n{r.stderr[-4000:]}", pytrace=False)
    return UNIT_BIN


@pytest.mark.parametrize("name", UNITS)
def test_unit(unit_build, name, tmp_path):
    env = dict(os.environ, SBRIG_FIXTURES=str(REPO / "tests" / "fixtures"),
               SBRIG_TMPDIR=str(tmp_path), ASAN_OPTIONS="detect_leaks=1",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    r = subprocess.run([str(unit_build / name)], capture_output=True,
                       text=True, env=env, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, f"{name} failed:\n{r.stdout}\n{r.stderr}"
    why = skips(r.stdout)
    if why:
        assert not os.environ.get("CI"), f"{name}: skipped on CI: {why}"
        pytest.skip(f"{name}: " + "; ".join(f"{t}: {w}" for t, w in why.items()))


def skips(out: str) -> dict[str, str]:
    """The tests a cmocka program skipped, each with the reason it
    declared; fails on a skip that declared none."""
    skipped = set(re.findall(r"^\[  SKIPPED \] (\w+)$", out, re.M))
    declared = dict(re.findall(r"^skip-because: (\w+): (.+)$", out, re.M))
    undeclared = sorted(skipped - declared.keys())
    assert not undeclared, f"skipped without a reason: {undeclared}\n{out}"
    return {t: declared[t] for t in sorted(skipped)}
