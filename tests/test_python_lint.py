"""The project's own Python, checked by pyflakes before anything runs it.

An undefined name in a test (a helper used but never imported) only shows
when that test runs, which for the VM tests is minutes into CI: pyflakes
finds it in a second. Unused imports and variables are not failures here.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# what pyflakes reports that is a bug, not a style matter
FATAL = ("undefined name", "syntax error", "invalid syntax",
         "referenced before assignment", "unexpected indent",
         "import *", "may be undefined")


def project_python() -> list[Path]:
    files = []
    for top in ("tests", "rig", "host", "lava-jobs", "firmware", "kernel-module",
                "schematics"):
        d = REPO / top
        if d.is_dir():
            files += [p for p in d.rglob("*.py") if "build" not in p.parts]
    return sorted(files)


def test_no_undefined_names_in_the_projects_python():
    files = project_python()
    assert len(files) > 10, files
    r = subprocess.run([sys.executable, "-m", "pyflakes", *map(str, files)],
                       capture_output=True, text=True)
    assert "No module named pyflakes" not in r.stderr, \
        "python3-pyflakes is missing: run .ci/install-deps"
    bad = [l for l in (r.stdout + r.stderr).splitlines()
           if any(k in l for k in FATAL)]
    assert not bad, "\n".join(bad)
