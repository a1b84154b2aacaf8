"""The history's trend page (sbrig history html), in Debian's Chromium
over the DevTools protocol (tests/cdp.py), as report.html is tested: no
console error, no request but the page itself, a chart per metric in the
DOM with its change points, each commit's runs linked to their reports,
a screenshot that is not blank; and the page's assets are current.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.cdp import Browser  # noqa: E402
from tests import test_history  # noqa: E402
from tests.test_history import EXIT_DB, EXIT_FAIL, EXIT_OK, EXIT_USAGE, \
    history, series  # noqa: E402
from tests.test_report_html import READY, assert_clean, not_blank  # noqa: E402

STEP_AT = 12
build = test_history.build      # the module's fixture: sbrig built first


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    d = tmp_path_factory.mktemp("trend")
    reps = series(d / "r", commits=20, per_commit=3, step_at=STEP_AT, wifi=2)
    # one run's report.json has a report.html beside it: the link goes there
    rdir = d / "withhtml"
    rdir.mkdir()
    (rdir / "report.json").write_text(reps[0].read_text())
    (rdir / "report.html").write_text("<p>report</p>\n")
    reps[0].unlink()
    db = d / "h.db"
    r = history(db, "add", rdir / "report.json", *reps[1:])
    assert r.returncode == EXIT_OK, r.stderr
    html = d / "trend.html"
    r = history(db, "html", "keypress", "-o", html)
    assert r.returncode == EXIT_OK, r.stderr
    assert r.stdout == f"page: {html}\n"
    return db, html, rdir


@pytest.fixture(scope="module")
def browser():
    assert Path("/usr/bin/chromium").exists(), "Debian's chromium is missing: run .ci/install-deps"
    with Browser(timeout=60) as b:
        yield b


def test_assets_current():
    r = subprocess.run([sys.executable, str(REPO / "host/history/assets/embed.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_page_is_self_contained(page):
    _, html, _ = page
    text = html.read_text()
    assert "<script src" not in text and "<link rel=\"stylesheet\"" not in text
    assert "sourceMappingURL" not in text
    assert 'id="sbrig-trend"' in text and "Dygraph" in text


def test_trend_page_in_the_browser(browser, page):
    _, html, rdir = page
    p = browser.new_page()
    p.goto(html.as_uri(), timeout=60)
    assert p.eval(READY, timeout=60) is True
    assert_clean(p, html)
    # a chart per metric, drawn (dygraphs' canvases in the DOM)
    metrics = p.eval("Array.from(document.querySelectorAll('section.trend'))"
                     ".map(s => [s.dataset.metric, s.dataset.blocker])")
    assert ["energy_per_wakeup_uJ", ""] in metrics
    assert ["blocker_energy_per_wakeup_uJ", "wifi"] in metrics
    assert p.eval("sbrig.charts.length") == len(metrics)
    assert p.eval("Array.from(document.querySelectorAll('section.trend'))"
                  ".every(s => s.querySelectorAll('canvas').length > 0)") is True
    # the change points: the doubled blocker's at its commit, marked
    steps = p.eval("Array.from(document.querySelectorAll("
                   "'section.trend[data-metric=blocker_energy_per_wakeup_uJ][data-blocker=wifi] .steps li'))"
                   ".map(l => l.textContent)")
    assert len(steps) == 1 and steps[0].startswith(f"regressed at c{STEP_AT:02d} ")
    assert p.eval("sbrig.doc.trends.find(t => t.blocker === 'wifi').steps[0].commit") == \
        f"c{STEP_AT:02d}"
    assert p.eval("document.querySelector('tr.stepped').dataset.commit") == f"c{STEP_AT:02d}"
    # each commit's runs linked to their reports (report.html when beside)
    rows = p.eval("Array.from(document.querySelectorAll('#commit-table tbody tr'))"
                  ".map(r => [r.dataset.commit, Array.from(r.querySelectorAll('a.report'))"
                  ".map(a => a.href)])")
    assert [c for c, _ in rows] == [f"c{k:02d}" for k in range(20)]
    assert all(len(links) == 3 for _, links in rows)
    assert rows[0][1][0] == (rdir / "report.html").as_uri()
    assert all(h.startswith("file:///") and h.endswith(".json") for h in rows[1][1])
    png = p.screenshot()
    not_blank(png, "the trend page")
    assert_clean(p, html)


def test_page_errors(page, tmp_path):
    db, _, _ = page
    r = history(db, "html", "keypress")
    assert r.returncode == EXIT_USAGE and "-o FILE" in r.stderr
    r = history(db, "html", "nosuch", "-o", tmp_path / "x.html")
    assert r.returncode == EXIT_FAIL and "no run of scenario 'nosuch'" in r.stderr
    (tmp_path / "no").write_text("")    # a file where a directory would be
    out = tmp_path / "no" / "x.html"
    r = history(db, "html", "keypress", "-o", out)
    assert r.returncode == EXIT_DB and str(tmp_path / "no") in r.stderr
    r = history(db, "html", "keypress", "-o", tmp_path / "d.html",
                env={"SBRIG_DYGRAPHS_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert r.returncode == EXIT_DB and "dygraphs" in r.stderr
