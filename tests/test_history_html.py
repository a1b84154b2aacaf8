"""The history's trend page (sbrig history html), in Debian's Chromium
over the DevTools protocol (tests/cdp.py), as report.html is tested: no
console error, no request but the page itself, a chart per metric in the
DOM with its change points, each commit's runs linked to their reports,
a screenshot that is not blank; and the page's assets are current. The
pages are made from a history in SQLite and from one in PostgreSQL
(tests/pgserver.py).
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
pg_server = test_history.pg_server      # the session's PostgreSQL server


def new_db(request, d: Path, name: str):
    """a new database of the backend @request is parametrised with"""
    if request.param == "sqlite":
        return d / f"{name}.db"
    return request.getfixturevalue("pg_server").newdb(name)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def page(tmp_path_factory, request):
    d = tmp_path_factory.mktemp("trend")
    reps = series(d / "r", commits=20, per_commit=3, step_at=STEP_AT, wifi=2)
    # one run's report.json has a report.html beside it: the link goes there
    rdir = d / "withhtml"
    rdir.mkdir()
    (rdir / "report.json").write_text(reps[0].read_text())
    (rdir / "report.html").write_text("<p>report</p>\n")
    reps[0].unlink()
    db = new_db(request, d, "h")
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


# what a commit, a scenario or a blocker can be called (--commit, a
# report's git_sha, a capture's meta.ini, SBRIG_GIT_SHA): each would run
# as script, or ask for "x", if the page put it in as HTML
HOSTILE = '<img src=x onerror="window.pwned=(window.pwned||0)+1">'


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def hostile_page(tmp_path_factory, request):
    import json

    d = tmp_path_factory.mktemp("hostile")
    reps = series(d / "r", commits=12, per_commit=2, step_at=6, wifi=2)
    for p in reps:
        doc = json.loads(p.read_text())
        prov = doc["capture"]["provenance"]
        prov["git_sha"] = f"{prov['git_sha']}{HOSTILE}"
        prov["scenario"] = f"rig/scenarios/{HOSTILE}.scn"
        for b in doc["blockers"]:
            b["name"] = f"wifi{HOSTILE}"
        p.write_text(json.dumps(doc))
    db = new_db(request, d, "h")
    r = history(db, "add", *reps)
    assert r.returncode == EXIT_OK, r.stderr
    html = d / "trend.html"
    r = history(db, "html", f"rig/scenarios/{HOSTILE}.scn", "-o", html)
    assert r.returncode == EXIT_OK, r.stderr
    return html


def test_hostile_names_hovered_run_no_script(browser, hostile_page):
    """Hover a point of every chart: dygraphs' legend shows the commit
    (the x-axis formatter's output, taken as HTML) as text, and nothing
    of it runs or asks for anything."""
    html = hostile_page
    p = browser.new_page()
    p.goto(html.as_uri(), timeout=60)
    assert p.eval(READY, timeout=60) is True
    n = p.eval("sbrig.charts.length")
    assert n >= 3
    for i in range(n):
        # the chart scrolled into view, then the mouse on its 4th point
        xy = p.eval(f"(() => {{ var g = sbrig.charts[{i}], d = g.graphDiv;"
                    " d.scrollIntoView({block: 'center'});"
                    " var r = d.getBoundingClientRect(), pt = g.layout_.points[0][3];"
                    " return [r.left + pt.canvasx, r.top + pt.canvasy]; })()")
        p.mouse("mouseMoved", xy[0] - 3, xy[1])
        p.mouse("mouseMoved", xy[0], xy[1])
        legend = p.eval(f"sbrig.charts[{i}].graphDiv.querySelector('.dygraph-legend')"
                        ".textContent")
        assert f"c03{HOSTILE} (2 runs)" in legend, legend
    assert p.eval("window.pwned === undefined") is True
    assert p.eval("document.querySelectorAll('img').length") == 0
    # the names are shown as they are, as text
    assert p.eval("document.querySelector('h1').textContent") == \
        f"Trend: rig/scenarios/{HOSTILE}.scn"
    assert p.eval("document.title") == f"sbrig trend: rig/scenarios/{HOSTILE}.scn"
    assert p.eval("Array.from(document.querySelectorAll('section.trend'))"
                  ".some(s => s.dataset.blocker === 'wifi' + "
                  f"{HOSTILE!r})") is True
    assert_clean(p, html)
