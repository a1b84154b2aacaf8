"""report.html: `sbrig render` on report.json fixtures, then the page in a
real headless Chromium (Debian's ``chromium``, driven over the DevTools
protocol by tests/cdp.py).

Fixtures are tests/fixtures/report/*.json (minimal and empty typed by hand,
demo and overlaps written by make_fixtures.py from hand-written scenarios);
the 1-hour report of the size check is generated into the test's temporary
directory by ``make_fixtures.py --big``. sbrig is the ASan/UBSan build.

What is checked in the browser: the page loads with no console error or
exception and asks for nothing but its own file; the blocker names, the
total energy and the findings (in their order) are in the DOM; dragging
on either chart zooms both to the same narrower x range and a
double-click resets it; zooming in switches the power chart to a finer
level and then to raw samples; a full-page screenshot has many colours.
Every wait is on an event (a load, the page's 'sbrig-ready' and
'sbrig-range' events) with a deadline.
"""

from __future__ import annotations

import copy
import io
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.cdp import Browser  # noqa: E402

FIX = REPO / "tests" / "fixtures" / "report"
SBRIG = REPO / "build" / "host" / "asan" / "sbrig"
FIXTURES = ["minimal", "empty", "demo", "overlaps"]
MAX_HTML = 10 * 1000 * 1000
READY = ("new Promise(r => (window.sbrig && sbrig.ready) ? r(true) : "
         "addEventListener('sbrig-ready', () => r(true), {once: true}))")
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=1",
           UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")


@pytest.fixture(scope="module")
def sbrig():
    r = subprocess.run(["make", "-C", str(REPO / "host"), "VARIANT=asan", "-j2"],
                       capture_output=True, text=True)
    if r.returncode:
        pytest.fail(f"make -C host VARIANT=asan failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}",
                    pytrace=False)
    return SBRIG


def render(sbrig, src: Path, out: Path, env=None, timeout=300):
    return subprocess.run([str(sbrig), "render", str(src), "-o", str(out)], capture_output=True,
                          text=True, env=env or ENV, timeout=timeout)


@pytest.fixture(scope="module")
def pages(sbrig, tmp_path_factory):
    """Each fixture rendered once: name -> (report dict, html path)."""
    d = tmp_path_factory.mktemp("report-html")
    out = {}
    for name in FIXTURES:
        html = d / f"{name}.html"
        r = render(sbrig, FIX / f"{name}.json", html)
        assert r.returncode == 0, f"{name}: {r.stderr}"
        assert r.stdout.strip() == f"html: {html}"
        out[name] = (json.loads((FIX / f"{name}.json").read_text()), html)
    return out


@pytest.fixture(scope="module")
def browser():
    assert Path("/usr/bin/chromium").exists(), "Debian's chromium is missing: run .ci/install-deps"
    with Browser(timeout=60) as b:
        yield b


def open_page(browser, html: Path):
    p = browser.new_page()
    p.goto(html.as_uri(), timeout=60)
    assert p.eval(READY, timeout=60) is True
    return p


def assert_clean(p, html: Path):
    p._drain()
    assert p.errors == [], f"console errors: {p.errors}"
    assert p.requests == [html.as_uri()], f"the page asked for more than itself: {p.requests}"


def not_blank(png: bytes, what: str):
    from PIL import Image  # python3-pil

    im = Image.open(io.BytesIO(png)).convert("RGB")
    small = im.resize((max(1, im.width // 2), max(1, im.height // 2)))
    colours = small.getcolors(maxcolors=1 << 20)
    top = max(c for c, _ in colours)
    assert len(colours) > 200, f"{what}: only {len(colours)} colours"
    assert top < 0.93 * small.width * small.height, f"{what}: one colour covers {top} pixels"


# ---- the renderer, without a browser ------------------------------------------


def test_assets_current():
    r = subprocess.run([sys.executable, str(REPO / "host/analysis/assets/embed.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("name", FIXTURES)
def test_render_is_self_contained(pages, name):
    rep, html = pages[name]
    text = html.read_text()
    assert text.startswith("<!DOCTYPE html>")
    head, _, rest = text.partition('<script type="application/json" id="sbrig-report">')
    data, _, tail = rest.partition("</script>")
    # nothing fetched: the markup (outside scripts and styles) has no
    # src=/href= but data: URLs and anchors
    markup = re.sub(r"<(script|style)\b[^>]*>.*?</\1>", "", text, flags=re.S)
    assert "<script" not in markup and "<link" in markup
    for attr in ("src=", "href="):
        for frag in markup.split(attr)[1:]:
            assert frag.startswith(('"data:', '"#')), f"{attr}{frag[:60]}"
    # the inlined report is the report (its trace packed), and cannot end its element
    assert "<" not in data
    inl = json.loads(data)
    assert inl["trace"]["packed"] == 1
    for k in ("capture", "energy", "blockers", "findings", "wakeups", "latency", "phases"):
        assert inl[k] == rep[k], k
    assert "dygraph" in tail.lower() and "window.sbrig" in tail


def test_render_replaces_atomically(sbrig, tmp_path):
    out = tmp_path / "r.html"
    out.write_text("old")
    r = render(sbrig, FIX / "minimal.json", out)
    assert r.returncode == 0, r.stderr
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html"]


def test_default_output_next_to_the_json(sbrig, tmp_path):
    src = tmp_path / "report.json"
    src.write_bytes((FIX / "minimal.json").read_bytes())
    r = subprocess.run([str(sbrig), "render", str(src)], capture_output=True, text=True, env=ENV)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "report.html").exists()


def test_usage(sbrig, tmp_path):
    r = subprocess.run([str(sbrig), "render"], capture_output=True, text=True, env=ENV)
    assert r.returncode == 2 and "REPORT.json is required" in r.stderr
    r = subprocess.run([str(sbrig), "render", "a.json", "b.json"], capture_output=True, text=True, env=ENV)
    assert r.returncode == 2 and "unexpected argument 'b.json'" in r.stderr
    r = subprocess.run([str(sbrig), "render", "--bogus", "a.json"], capture_output=True, text=True, env=ENV)
    assert r.returncode == 2
    r = subprocess.run([str(sbrig), "render", "--help"], capture_output=True, text=True, env=ENV)
    assert r.returncode == 0 and r.stdout.startswith("Usage: sbrig render REPORT.json")
    r = subprocess.run([str(sbrig), "--help"], capture_output=True, text=True, env=ENV)
    assert "render" in r.stdout
    r = render(sbrig, tmp_path / "missing.json", tmp_path / "x.html")
    assert r.returncode == 1 and "missing.json: No such file" in r.stderr
    assert not (tmp_path / "x.html").exists()


def test_unwritable_output(sbrig, tmp_path):
    # a directory the output lacks is created (issue 25: every output
    # option does); one that cannot be is named
    (tmp_path / "no").write_text("a file")
    out = tmp_path / "no" / "such" / "dir" / "report.html"
    r = render(sbrig, FIX / "minimal.json", out)
    assert r.returncode == 1
    assert f"{tmp_path / 'no'}: mkdir: File exists" in r.stderr or \
        f"{tmp_path / 'no'}: mkdir: Not a directory" in r.stderr, r.stderr
    assert not out.exists()


def test_dygraphs_missing(sbrig, tmp_path):
    out = tmp_path / "x.html"
    r = render(sbrig, FIX / "minimal.json", out, env=dict(ENV, SBRIG_DYGRAPHS_DIR=str(tmp_path)))
    assert r.returncode == 1
    assert "libjs-dygraphs" in r.stderr and "dygraph.js" in r.stderr
    assert list(tmp_path.iterdir()) == []


def _set(doc, path, value):
    *head, last = path
    for k in head:
        doc = doc[k]
    if value is DELETE:
        del doc[last]
    else:
        doc[last] = value


DELETE = object()
# (what is wrong, the change, what the message must say)
BAD = [
    ("wrong schema", [(("schema",), "sbrig-capture")], "field 'schema': \"sbrig-capture\" is not \"sbrig-report\""),
    ("no schema", [(("schema",), DELETE)], "field 'schema': missing"),
    ("newer version", [(("version",), 2)], "field 'version': 2 is not supported"),
    ("version as text", [(("version",), "1")], "field 'version': expected an integer, got a string"),
    ("missing total", [(("energy", "total_uJ"), DELETE)], "field 'energy.total_uJ': missing"),
    ("energy as text", [(("blockers", 1, "energy_uJ"), "130 mJ")],
     "field 'blockers[1].energy_uJ': expected a number, got a string"),
    ("ns as a fraction", [(("wakeups", 0, "latency_ns"), 2.0e7)],
     "field 'wakeups[0].latency_ns': expected an integer (ns, counts), got a fraction"),
    ("null name", [(("blockers", 0, "name"), None)], "field 'blockers[0].name': expected a string, got null"),
    ("findings not a list", [(("findings",), {})], "field 'findings': expected an array, got an object"),
    ("no trace", [(("trace",), DELETE)], "field 'trace': missing"),
    ("short max", [(("trace", "levels", 1, "max"), [1.0] * 15)],
     "field 'trace.levels[1].max': 15 values, min has 16"),
    ("span of three", [(("trace", "timeline", 0, "spans", 0), [1, 2, 3])],
     "field 'trace.timeline[0].spans[0]': expected 2 elements, got 3"),
    ("span backwards", [(("trace", "timeline", 1, "spans", 0), [2500000000, 2000000000])],
     "field 'trace.timeline[1].spans[0]': ends (2000000000) before it starts (2500000000)"),
    ("time going back", [(("trace", "raw", 0, "t_ns", 3), 1990000000)],
     "field 'trace.raw[0].t_ns[3]': 1990000000 is before the sample ahead of it"),
    ("raw lengths", [(("trace", "raw", 0, "power_uW"), [1.0])],
     "field 'trace.raw[0].power_uW': 1 values, t_ns has 12"),
    ("unit", [(("trace", "unit"), "mW")], "field 'trace.unit': \"mW\" is not \"uW\""),
    ("provenance value", [(("capture", "provenance", "rig_name"), 7)],
     "field 'capture.provenance.rig_name': expected a string, got an integer"),
    ("bad null", [(("energy", "total_uJ"), None)], "field 'energy.total_uJ': expected a number, got null"),
]


@pytest.mark.parametrize("what,changes,message", BAD, ids=[b[0] for b in BAD])
def test_bad_report_names_the_field(sbrig, tmp_path, what, changes, message):
    doc = json.loads((FIX / "minimal.json").read_text())
    for path, value in changes:
        _set(doc, path, value if value is DELETE else copy.deepcopy(value))
    src = tmp_path / "report.json"
    src.write_text(json.dumps(doc))
    out = tmp_path / "report.html"
    r = render(sbrig, src, out)
    assert r.returncode == 1, r.stdout + r.stderr
    assert message in r.stderr, r.stderr
    assert r.stderr.startswith(f"sbrig: render: {src}: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]
    # an old page stays as it was
    out.write_text("old page")
    assert render(sbrig, src, out).returncode == 1
    assert out.read_text() == "old page"


@pytest.mark.parametrize("text,message", [
    ("", ":1:1: not JSON"),
    ('{"schema": "sbrig-report",\n "version": 1,\n', ":3:1: not JSON"),
    ('{"schema": "sbrig-report", "version": 1} trailing', ":1:42: not JSON: unexpected character"),
    ("[1, 2]", "not a report: expected an object, got an array"),
    ('{"schema": "sbrig-report", "version": NaN}', "field 'version': expected an integer, got NaN"),
    ('{"schema": "sbrig-report\xff"}', "not JSON"),
])
def test_not_a_report(sbrig, tmp_path, text, message):
    src = tmp_path / "report.json"
    src.write_bytes(text.encode("latin-1"))
    r = render(sbrig, src, tmp_path / "report.html")
    assert r.returncode == 1
    assert message in r.stderr, r.stderr
    assert not (tmp_path / "report.html").exists()


@pytest.mark.parametrize("value", ["NaN", "-Infinity"])
def test_nan_is_not_a_number(sbrig, tmp_path, value):
    """json-c reads NaN and Infinity even in strict mode; JSON has neither."""
    text = (FIX / "minimal.json").read_text().replace('"total_uJ": 1670300.0', f'"total_uJ": {value}')
    src = tmp_path / "report.json"
    src.write_text(text)
    r = render(sbrig, src, tmp_path / "report.html")
    assert r.returncode == 1
    assert f"field 'energy.total_uJ': expected a number, got {value}" in r.stderr, r.stderr


# ---- the page, in Chromium -------------------------------------------------------


@pytest.mark.parametrize("name", FIXTURES)
def test_page_shows_the_report(browser, pages, name, tmp_path):
    rep, html = pages[name]
    p = open_page(browser, html)
    assert_clean(p, html)
    # the section order of the brief
    assert p.eval("Array.from(document.querySelectorAll('main > section')).map(s => s.id)") == \
        ["findings", "trace", "blockers", "wakeups", "phases", "capture"]
    # the total energy, with a readable unit
    tot = p.eval("[document.getElementById('total-energy').dataset.uj,"
                 " document.getElementById('total-energy').textContent]")
    assert float(tot[0]) == rep["energy"]["total_uJ"]
    value, unit = tot[1].split(" ")
    assert unit in ("\u00b5J", "mJ", "J")
    scale = {"\u00b5J": 1, "mJ": 1e3, "J": 1e6}[unit]
    assert abs(float(value) * scale - rep["energy"]["total_uJ"]) <= 0.01 * max(1.0, rep["energy"]["total_uJ"])
    # every blocker by name, in the table and on the timeline's axis
    names = p.eval("Array.from(document.querySelectorAll('#blocker-table tbody tr')).map(r => r.dataset.blocker)")
    assert names == [b["name"] for b in rep["blockers"]]
    if not rep["blockers"]:
        assert p.eval("document.getElementById('blocker-table')") is None
    text = p.eval("document.body.innerText")
    for b in rep["blockers"]:
        assert b["name"] in text
    labels = p.eval("Array.from(document.querySelectorAll('#timeline-chart .row-label')).map(e => e.title)")
    for t in rep["trace"]["timeline"]:
        assert t["name"] in labels
    # the findings, ranked as in the JSON
    got = p.eval("Array.from(document.querySelectorAll('#findings li.finding')).map(li => "
                 "[li.dataset.kind, li.querySelector('.detail').textContent, "
                 "(li.querySelector('.blocker') || {}).textContent || null])")
    assert got == [[f["kind"], f["detail"], f["blocker"]] for f in rep["findings"]]
    # wakeups and phases: a row each, or the empty state
    assert p.eval("document.querySelectorAll('#wakeup-table tbody tr').length") == len(rep["wakeups"])
    assert p.eval("document.querySelectorAll('#phase-table tbody tr').length") == len(rep["phases"])
    if not rep["phases"]:
        assert "No phases in this capture" in text
    if not rep["wakeups"]:
        assert "No wakeups in this capture" in text
    if not rep["findings"]:
        assert "No findings" in text
    if not rep["trace"]["levels"]:
        assert "No samples in this capture" in text
    png = p.screenshot()
    (tmp_path / f"{name}.png").write_bytes(png)
    not_blank(png, name)
    assert_clean(p, html)


def chart_box(p, which: str):
    """The plot area of sbrig.<which> in page coordinates (the viewport
    scrolled to it)."""
    p.eval(f"document.getElementById('{which}-chart').scrollIntoView({{block: 'center'}})")
    return p.eval(f"(() => {{ const g = sbrig.{which}, a = g.getArea(), "
                  f"r = g.graphDiv.getBoundingClientRect(); "
                  f"return [r.left + a.x, r.top + a.y, a.w, a.h]; }})()")


def next_range(p):
    """A promise in the page for the next 'sbrig-range' event."""
    p.eval("window.__next = new Promise(r => addEventListener('sbrig-range', "
           "e => r(e.detail), {once: true})); true")


def test_drag_zooms_both_charts(browser, pages):
    rep, html = pages["demo"]
    p = open_page(browser, html)
    full = p.eval("[sbrig.power.xAxisRange(), sbrig.timeline.xAxisRange()]")
    assert full[0] == full[1] == [0, rep["capture"]["duration_ns"] / 1e9]

    # drag across 30 % .. 50 % of the power chart
    x, y, w, h = chart_box(p, "power")
    next_range(p)
    p.drag(x + 0.3 * w, y + 0.5 * h, x + 0.5 * w, y + 0.6 * h)
    ev = p.eval("window.__next", timeout=20)
    pr, tr = p.eval("[sbrig.power.xAxisRange(), sbrig.timeline.xAxisRange()]")
    assert pr == tr == ev["range"]
    span = full[0][1] - full[0][0]
    assert abs(pr[0] - 0.3 * span) < 0.02 * span and abs(pr[1] - 0.5 * span) < 0.02 * span, pr
    assert p.eval("sbrig.power.isZoomed('y')") is False

    # drag on the timeline: the power chart follows
    x, y, w, h = chart_box(p, "timeline")
    next_range(p)
    p.drag(x + 0.25 * w, y + 0.3 * h, x + 0.75 * w, y + 0.9 * h)
    ev = p.eval("window.__next", timeout=20)
    pr2, tr2 = p.eval("[sbrig.power.xAxisRange(), sbrig.timeline.xAxisRange()]")
    assert pr2 == tr2 == ev["range"]
    assert pr[0] < pr2[0] < pr2[1] < pr[1]

    # double-click: the whole capture again, on both
    x, y, w, h = chart_box(p, "power")
    next_range(p)
    p.dblclick(x + 0.5 * w, y + 0.5 * h)
    ev = p.eval("window.__next", timeout=20)
    assert p.eval("[sbrig.power.xAxisRange(), sbrig.timeline.xAxisRange()]") == full
    assert ev["range"] == full[0]
    assert_clean(p, html)


def test_zoom_reaches_raw_samples(browser, pages):
    rep, html = pages["demo"]
    p = open_page(browser, html)
    s0 = p.eval("sbrig.source()")
    assert s0["kind"] == "level" and s0["bucket_ns"] == max(lv["bucket_ns"] for lv in rep["trace"]["levels"])
    # a few seconds away from the raw windows: a finer level, but not one
    # finer than two sample intervals (3 ms buckets of 2 ms samples)
    p.eval("sbrig.zoom(5.3, 7.8)")
    s1 = p.eval("sbrig.source()")
    assert s1 == {"kind": "level", "bucket_ns": 30_000_000, "points": 83}, s1
    # around a wakeup, where the raw window is: single samples
    w = rep["wakeups"][1]
    p.eval(f"sbrig.zoomNs({w['t_ns'] - 200_000_000}, {w['resume_t_ns'] + 300_000_000})")
    s2 = p.eval("sbrig.source()")
    assert s2["kind"] == "raw" and s2["points"] > 100, s2
    r = p.eval("sbrig.range()")
    t0 = rep["capture"]["start_ns"]
    assert abs(r[0] - (w["t_ns"] - 200_000_000 - t0) / 1e9) < 1e-6
    assert p.eval("sbrig.timeline.xAxisRange()") == r
    # clicking a wakeup's row shows it on the trace
    p.eval("sbrig.reset()")
    p.eval("document.querySelector('#wakeup-table tbody tr').click()")
    r = p.eval("sbrig.range()")
    w0 = (rep["wakeups"][0]["t_ns"] - t0) / 1e9
    assert r[0] < w0 < r[1] and r[1] - r[0] < 10
    assert_clean(p, html)


@pytest.mark.parametrize("jitter_ns", [0, 70_000, 5_000_000_000])
def test_trace_decodes_exactly(sbrig, browser, tmp_path, jitter_ns):
    """The packed trace reads back as the report had it: times to the ns
    (steady rates as uint16 offsets, jittery ones as uint32 distances, gaps
    beyond 2^32 ns as a new segment), power to float32."""
    doc = json.loads((FIX / "minimal.json").read_text())
    raw = doc["trace"]["raw"][0]
    raw["t_ns"] = [t + (jitter_ns if i == 6 else 0) + (jitter_ns if i > 6 and jitter_ns > 1e9 else 0)
                   for i, t in enumerate(raw["t_ns"])]
    src, html = tmp_path / "report.json", tmp_path / "report.html"
    src.write_text(json.dumps(doc))
    r = render(sbrig, src, html)
    assert r.returncode == 0, r.stderr
    packed = json.loads(html.read_text().split('id="sbrig-report">')[1].split("</script>")[0])
    segs = packed["trace"]["raw"]
    if jitter_ns == 0:
        assert [("dt16" in sg, sg["dt_base_ns"]) for sg in segs] == [(True, 1_000_000)]
    elif jitter_ns < 1e9:
        assert [("dt_ns" in sg) for sg in segs] == [True]
    else:
        assert [sg["n"] for sg in segs] == [6, 6]
    p = open_page(browser, html)
    got = p.eval("sbrig.trace.raw.map(r => [Array.from(r.t), Array.from(r.p)])")
    t0 = doc["capture"]["start_ns"]
    times = [round(t * 1e9) + t0 for seg in got for t in seg[0]]
    power = [v for seg in got for v in seg[1]]
    assert times == raw["t_ns"]
    assert all(abs(a - b) <= 1e-6 * abs(b) for a, b in zip(power, raw["power_uW"]))
    lv = p.eval("sbrig.trace.levels.map(l => [l.bucket_ns, Array.from(l.mean)])")
    assert lv == sorted([[x["bucket_ns"], x["mean"]] for x in doc["trace"]["levels"]])
    assert_clean(p, html)


def test_blocker_table_sorts(browser, pages):
    rep, html = pages["overlaps"]
    p = open_page(browser, html)
    heads = p.eval("Array.from(document.querySelectorAll('#blocker-table thead th')).map(t => t.textContent)")
    for col, key, num in [("activations", "activations", True), ("active time", "active_ns", True),
                          ("exclusive", "exclusive_energy_uJ", True), ("blocker", "name", False)]:
        i = heads.index(col)
        p.eval(f"document.querySelectorAll('#blocker-table thead th')[{i}].click()")
        got = p.eval("Array.from(document.querySelectorAll('#blocker-table tbody tr')).map(r => r.dataset.blocker)")
        vals = [next(b[key] for b in rep["blockers"] if b["name"] == n) for n in got]
        if num:
            assert vals == sorted(vals, reverse=True), (col, vals)
        else:
            assert got == sorted(got, key=lambda s: s.lower()) or got == sorted(got), got
        p.eval(f"document.querySelectorAll('#blocker-table thead th')[{i}].click()")
        again = p.eval("Array.from(document.querySelectorAll('#blocker-table tbody tr')).map(r => r.dataset.blocker)")
        vals = [next(b[key] for b in rep["blockers"] if b["name"] == n) for n in again]
        assert vals == (sorted(vals) if num else vals), col
        assert sorted(again) == sorted(got) and (num or again == list(reversed(got))), col
    assert_clean(p, html)


def test_hostile_names_stay_text(browser, pages):
    rep, html = pages["overlaps"]
    evil = next(b["name"] for b in rep["blockers"] if "<" in b["name"])
    p = open_page(browser, html)
    assert p.eval("document.querySelectorAll('img').length") == 0
    assert evil in p.eval("document.getElementById('blocker-table').innerText")
    assert evil in p.eval("Array.from(document.querySelectorAll('.row-label')).map(e => e.title)")
    assert_clean(p, html)


def test_wakeups_say_what_their_latency_runs_to(sbrig, browser, tmp_path):
    """The synthetic 'marker' capture (tests/synth): every wakeup is
    measured to its marker edge, and the table's "to" column says so; a
    report without latency_from (an older one) reads "resume"."""
    from tests.synth import synthcap as S
    S.build(S.scenario("marker"), tmp_path)
    r = subprocess.run([str(sbrig), "analyze", str(tmp_path / "capture"), "-o",
                        str(tmp_path / "report"), "-q"], capture_output=True, text=True,
                       env=ENV, timeout=300)
    assert r.returncode == 0, r.stderr
    rep = json.loads((tmp_path / "report" / "report.json").read_text())
    assert [w["latency_from"] for w in rep["wakeups"]] == ["marker"] * 3
    col = ("(() => { const h = Array.from(document.querySelectorAll('#wakeup-table thead th'))"
           ".map(t => t.textContent).indexOf('to'); return Array.from(document.querySelectorAll("
           "'#wakeup-table tbody tr')).map(r => r.children[h].textContent); })()")
    html = tmp_path / "report" / "report.html"
    p = open_page(browser, html)
    assert p.eval(col) == ["marker edge"] * 3
    assert_clean(p, html)
    old = copy.deepcopy(rep)
    for w in old["wakeups"]:
        del w["latency_from"], w["marker_t_ns"]
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert render(sbrig, tmp_path / "old.json", tmp_path / "old.html").returncode == 0
    p = open_page(browser, tmp_path / "old.html")
    assert p.eval(col) == ["resume"] * 3
    assert_clean(p, tmp_path / "old.html")


def test_one_hour_report(sbrig, browser, tmp_path):
    """The size check: a 1-hour, 3.5 kS/s report.json (three levels of 2000,
    20000 and 200000 buckets, 500 000 raw samples, full-precision doubles)
    renders to at most 10 MB, and the page works."""
    big = tmp_path / "report.json"
    subprocess.run([sys.executable, str(FIX / "make_fixtures.py"), "--big", str(big)], check=True,
                   timeout=600)
    html = tmp_path / "report.html"
    t = time.monotonic()
    r = render(sbrig, big, html, timeout=600)
    took = time.monotonic() - t
    assert r.returncode == 0, r.stderr
    size = html.stat().st_size
    print(f"\n1 h report: report.json {big.stat().st_size / 1e6:.1f} MB -> "
          f"report.html {size / 1e6:.2f} MB, rendered in {took:.1f} s (ASan build)")
    assert size <= MAX_HTML, f"{size} bytes"
    rep = json.loads(big.read_text())
    p = open_page(browser, html)
    assert_clean(p, html)
    assert p.eval("document.querySelectorAll('#wakeup-table tbody tr').length") == len(rep["wakeups"])
    assert p.eval("sbrig.source()")["bucket_ns"] == rep["trace"]["levels"][0]["bucket_ns"]
    for lo, hi, kind, bucket in [(1000, 1400, "level", 180_000_000), (1000, 1040, "level", 18_000_000)]:
        p.eval(f"sbrig.zoom({lo}, {hi})")
        s = p.eval("sbrig.source()")
        assert (s["kind"], s["bucket_ns"]) == (kind, bucket), (lo, hi, s)
    w = rep["wakeups"][3]
    p.eval(f"sbrig.zoomNs({w['t_ns'] - 500_000_000}, {w['t_ns'] + 1_500_000_000})")
    assert p.eval("sbrig.source()")["kind"] == "raw"
    assert_clean(p, html)


@pytest.mark.parametrize("ids", [True, False], ids=["ids", "noids"])
def test_capture_section_says_whether_objects_had_ids(sbrig, browser, tmp_path, ids):
    """capture.object_ids in the page's capture table: a capture without
    ids (as written before issue 23) is said to count objects per name."""
    from tests.synth import synthcap as S
    S.build(S.scenario("objects-lost", object_ids=ids), tmp_path)
    r = subprocess.run([str(sbrig), "analyze", str(tmp_path / "capture"), "-o",
                        str(tmp_path / "report"), "-q"], capture_output=True, text=True,
                       env=ENV, timeout=300)
    assert r.returncode == 0, r.stderr
    html = tmp_path / "report" / "report.html"
    p = open_page(browser, html)
    rows = p.eval("Array.from(document.querySelectorAll('#capture table.kv tr'))"
                  ".map(r => [r.children[0].textContent, r.children[1].textContent])")
    got = dict(rows)["blocker object ids"]
    assert got.startswith("in every block/unblock record" if ids else "none: "), got
    assert_clean(p, html)


def test_a_tail_lost_at_the_stop_is_shown(sbrig, browser, tmp_path):
    """A capture whose sensor did not deliver its last 248 ms (meta.ini
    [end] sensor_tail_lost): the page's gap finding says so first, and
    the gap table's last row says that gap was lost at the stop."""
    from tests.capture import read_rows
    from tests.synth import synthcap as S
    S.build(S.scenario("basic"), tmp_path)
    cap = tmp_path / "capture"
    last = read_rows(cap, "samples", typed=True)[-1].t_ns
    meta = cap / "meta.ini"
    meta.write_text(meta.read_text().replace(
        "\n[end]\n", f"\n[end]\nsensor_tail_lost = 1\nsensor_tail_lost_from_ns = {last}\n"
        f"sensor_tail_lost_to_ns = {last + 248_000_000}\n"))
    r = subprocess.run([str(sbrig), "analyze", str(cap), "-o", str(tmp_path / "report"), "-q"],
                       capture_output=True, text=True, env=ENV, timeout=300)
    assert r.returncode == 0, r.stderr
    html = tmp_path / "report" / "report.html"
    p = open_page(browser, html)
    gap = p.eval("Array.from(document.querySelectorAll('#findings li.finding'))"
                 ".filter(li => li.dataset.kind === 'gap')"
                 ".map(li => li.querySelector('.detail').textContent)")
    assert len(gap) == 1 and gap[0].startswith(
        "the sensor's last 248 ms before the stop were not delivered (the capture "
        "ends early); "), gap
    rows = p.eval("Array.from(document.querySelectorAll('#gap-table tbody tr'))"
                  ".map(r => r.children[3].textContent)")
    assert rows and rows[-1] == "lost at the stop (meta.ini)", rows
    assert all(x != rows[-1] for x in rows[:-1]), rows
    assert_clean(p, html)


def test_wakeup_sources_are_drawn_apart(sbrig, browser, tmp_path):
    """The synthetic 'objects' capture (tests/synth): the kernel's wakeup
    sources get timeline rows of their own class (row-ws: striped,
    outlined bars, labelled "ws"), the blockers row-blocker."""
    from tests.synth import synthcap as S
    S.build(S.scenario("objects"), tmp_path)
    r = subprocess.run([str(sbrig), "analyze", str(tmp_path / "capture"), "-o",
                        str(tmp_path / "report"), "-q"], capture_output=True, text=True,
                       env=ENV, timeout=300)
    assert r.returncode == 0, r.stderr
    rep = json.loads((tmp_path / "report" / "report.json").read_text())
    html = tmp_path / "report" / "report.html"
    p = open_page(browser, html)
    rows = p.eval("Array.from(document.querySelectorAll('#timeline-chart .row-label'))"
                  ".map(e => [e.title, e.classList.contains('row-ws')])")
    ws = {b["name"] for b in rep["blockers"] if b["kind"] == "wakeup_source"}
    assert ws == {"LNXPWRBN:00", "vport0p1", "test_ac", "alarmtimer"}
    assert {n for n, w in rows if w} == ws
    assert {b["name"] for b in rep["blockers"]} - ws <= {n for n, w in rows if not w}
    prefix = p.eval("getComputedStyle(document.querySelector('#timeline-chart .row-ws'), "
                    "'::before').content")
    assert prefix == '"ws "'
    # its four suspend cycles' phases: one row each in the phase table;
    # what each cost, the short one marked
    assert len(rep["phases"]) == 4
    assert p.eval("document.querySelectorAll('#phase-table tbody tr').length") == 4
    assert p.eval("document.querySelectorAll('#cost-table tbody tr').length") == 4
    assert p.eval("document.querySelectorAll('#cost-table tbody tr.short').length") == 1
    assert "Median break-even" in p.eval("document.getElementById('break-even').textContent")
    # what woke it, every resume: two stimuli and the alarm's wakeup source
    col = ("(() => { const h = Array.from(document.querySelectorAll('#wakeup-table thead th'))"
           ".map(t => t.textContent).indexOf('woken by'); return Array.from(document.querySelectorAll("
           "'#wakeup-table tbody tr')).map(r => r.children[h].textContent); })()")
    assert p.eval(col) == ["press power", "plug charger", "wakeup source alarmtimer",
                           "press power"]
    assert "No phases in this capture" not in p.eval("document.body.innerText")
    # the device passes' slowest callbacks (dev_pm): a row each, and the
    # phase cell's title names them
    want = [[str(c["cycle"]), ph["name"], d["device"], d["verb"], str(d["error"])]
            for c in rep["phases"] for ph in c["phases"] for d in ph.get("slowest_devices", [])]
    assert len(want) == 16
    got = p.eval("Array.from(document.querySelectorAll('#devpm-table tbody tr')).map(r => "
                 "Array.from(r.children).map(c => c.textContent))")
    assert [[g[0], g[1], g[2], g[3], g[5]] for g in got] == want
    assert got[0][4] == "6.100 ms" and got[3][4] == "12.00 ms", got
    titles = p.eval("Array.from(document.querySelectorAll('#phase-table td[title]')).map(c => c.title)")
    assert len(titles) == 8 and all(t.startswith("slowest: ") for t in titles)
    assert titles[:2] == ["slowest: i8042 suspend 6.100 ms, 0000:00:02.0 suspend 4.200 ms, "
                          "serio0 suspend 900.0 \u00b5s", "slowest: 0000:00:02.0 resume 12.00 ms"]
    assert_clean(p, html)


def test_the_end_and_a_bounded_wakeup_are_said(sbrig, browser, tmp_path):
    """A capture that ends asleep (the synthetic 'asleep-end'): the page's
    capture section says the last suspend was inferred by the power, and
    when; one that starts asleep (tests/fixtures/captures/asleep-start):
    the wakeup whose resume is only bounded (put at the capture's start)
    reads "≥" in the table's "at" column (report-format.md, resume_from)."""
    from tests.synth import synthcap as S
    S.build(S.scenario("asleep-end"), tmp_path)
    caps = {"end": tmp_path / "capture",
            "start": REPO / "tests" / "fixtures" / "captures" / "asleep-start"}
    for what, cap in caps.items():
        out = tmp_path / f"report-{what}"
        r = subprocess.run([str(sbrig), "analyze", str(cap), "-o", str(out), "-q"],
                           capture_output=True, text=True, env=ENV, timeout=300)
        assert r.returncode == 0, r.stderr
    rep = json.loads((tmp_path / "report-end" / "report.json").read_text())
    assert rep["capture"]["end"]["state"] == "inferred_suspended", rep["capture"]["end"]
    html = tmp_path / "report-end" / "report.html"
    p = open_page(browser, html)
    text = p.eval("document.getElementById('capture').innerText")
    assert "inferred by the power" in text, text
    assert_clean(p, html)
    rep = json.loads((tmp_path / "report-start" / "report.json").read_text())
    assert [w["resume_from"] for w in rep["wakeups"]] == ["bounded", "clock", "clock"]
    html = tmp_path / "report-start" / "report.html"
    p = open_page(browser, html)
    col = ("(() => { const h = Array.from(document.querySelectorAll('#wakeup-table thead th'))"
           ".map(t => t.textContent).indexOf('at'); return Array.from(document.querySelectorAll("
           "'#wakeup-table tbody tr')).map(r => r.children[h].textContent); })()")
    at = p.eval(col)
    assert at[0].startswith("\u2265 "), at
    assert not any(a.startswith("\u2265") for a in at[1:]), at
    assert_clean(p, html)
