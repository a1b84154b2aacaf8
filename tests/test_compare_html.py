"""sbrig compare --html: the comparison page, in Debian's Chromium over
the DevTools protocol (tests/cdp.py), as report.html is tested: no
console error, no request but the page itself, the representative runs'
power charts and blocker timelines and every metric's distribution in the
DOM, a screenshot that is not blank; the page's assets are current
(test_report_html.py checks embed.py); a page that cannot be written is
exit 7 naming it.

The runs are real synthetic captures (tests/synth/runs.py) analysed by
sbrig analyze: 5 base runs, 5 new ones whose wifi blocker costs double.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests import test_compare  # noqa: E402
from tests.cdp import Browser  # noqa: E402
from tests.test_compare import ENV, SBRIG, build_run  # noqa: E402
from tests.test_report_html import READY, assert_clean, not_blank  # noqa: E402

sbrig = test_compare.sbrig      # the module's fixture: the ASan build first


@pytest.fixture(scope="module")
def page(sbrig, tmp_path_factory):
    d = tmp_path_factory.mktemp("cmp")
    # 8 base runs: 5 + 5 cannot show a change of a few metrics among a
    # dozen once their p-values are adjusted (compare-format.md)
    base = [build_run(d / f"b{i}", 10 + i) for i in range(8)]
    new = [build_run(d / f"n{i}", 20 + i, wifi_scale=2, git_sha="new") for i in range(5)]
    html = d / "compare.html"
    r = subprocess.run([str(SBRIG), "compare", "-o", str(d / "out"), "--html", str(html),
                        *map(str, base), "--", *map(str, new)],
                       capture_output=True, text=True, env=ENV, timeout=600)
    assert r.returncode == 1, r.stderr     # regressed
    assert f"page: {html}\n" in r.stdout
    doc = json.loads((d / "out" / "compare.json").read_text())
    return html, doc, base, new


@pytest.fixture(scope="module")
def browser():
    assert Path("/usr/bin/chromium").exists(), "Debian's chromium is missing: run .ci/install-deps"
    with Browser(timeout=60) as b:
        yield b


def test_page_is_self_contained(page):
    html, _, _, _ = page
    text = html.read_text()
    assert "<script src" not in text and "<link rel=\"stylesheet\"" not in text
    assert 'id="sbrig-compare"' in text and "Dygraph" in text


def test_comparison_page_in_the_browser(browser, page):
    html, doc, base, new = page
    p = browser.new_page()
    p.goto(html.as_uri(), timeout=60)
    assert p.eval(READY, timeout=60) is True
    assert_clean(p, html)
    assert p.eval("document.getElementById('verdict').textContent") == "regressed"
    # a representative run of each side: which one is the median's
    runs = p.eval("Array.from(document.querySelectorAll('.run')).map(r => [r.dataset.side,"
                  " r.querySelector('h3').textContent, r.querySelectorAll('canvas').length])")
    assert [r[0] for r in runs] == ["base", "new"]
    for side, (_, title, ncanvas) in zip(("base", "new"), runs):
        m = next(m for m in doc["metrics"] if m["metric"] == "energy_per_wakeup_uJ")
        vals = m[side]["values"]
        k = min(range(len(vals)), key=lambda i: abs(vals[i] - m[side]["median"]))
        assert title == f"{side}: {(base if side == 'base' else new)[k]}"
        assert ncanvas >= 2     # dygraphs' and the blocker timeline
    assert p.eval("sbrig.charts.length") == 2
    # the blocker timeline names the blockers
    assert sorted(p.eval("sbrig.data.new_run.timeline.map(b => b.name)")) == ["keypad-scan", "wifi"]
    # every metric a row with its verdict and a distribution
    rows = p.eval("Array.from(document.querySelectorAll('#metric-table tbody tr'))"
                  ".map(r => [r.dataset.metric, r.dataset.blocker, r.dataset.verdict,"
                  " r.querySelectorAll('canvas.dist').length])")
    assert [(r[0], r[1] or None, r[2]) for r in rows] == \
        [(m["metric"], m["blocker"], m["verdict"]) for m in doc["metrics"]]
    assert all(r[3] == 1 for r in rows)
    assert ["blocker_energy_per_wakeup_uJ", "wifi", "regressed", 1] in rows
    # the p shown is the one the verdict used: adjusted over the comparison
    ps = p.eval("Array.from(document.querySelectorAll('#metric-table tbody tr'))"
                ".map(r => r.children[5].textContent)")
    assert len(ps) == len(doc["metrics"])
    for shown, m in zip(ps, doc["metrics"]):
        if m["p_adjusted"] is None:
            assert shown == "-"
        else:   # toPrecision(3)
            assert float(shown) == pytest.approx(m["p_adjusted"], rel=5e-3), (shown, m)
    not_blank(p.screenshot(), "the comparison page")
    assert_clean(p, html)


def test_unwritable_page(page, tmp_path):
    _, _, base, new = page
    # a directory the page lacks is created (issue 25); one below a file
    # cannot be, and is named
    (tmp_path / "no").write_text("")
    out = tmp_path / "no" / "c.html"
    r = subprocess.run([str(SBRIG), "compare", "-f", "--html", str(out), *map(str, base[:2]), "--",
                        *map(str, new[:2])], capture_output=True, text=True, env=ENV,
                       timeout=300)
    assert r.returncode == 7 and str(tmp_path / "no") in r.stderr
    r = subprocess.run([str(SBRIG), "compare", "--html", "", str(base[0]), "--", str(new[0])],
                       capture_output=True, text=True, env=ENV, timeout=300)
    assert r.returncode == 2 and "--html" in r.stderr
