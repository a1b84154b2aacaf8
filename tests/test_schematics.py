"""The KiCad project (schematics/) against the pin table.

* kicad-cli's ERC finds no violation of any severity;
* the netlist kicad-cli exports (parsed here) has every table row's header
  pin on the table's net, the links the rig needs (key transistors across
  the keys, the UART crossover, the shunt between the supply and the
  target, the INA226's address straps), and only nets it should;
* the committed project, exports (SVG, PDF, BOM, the PDF's page as PNG,
  the block diagram) and README wiring table are what
  ``make -C schematics`` produces from the current sources;
* the drawing is one a person can read (read from the .kicad_sch, not from
  the generator): every part inside its functional block's frame, each
  block's connections drawn as wires (counted against the netlist), global
  labels only for nets between blocks and power symbols for the rails, and
  no two texts overlapping (KiCad's stroke font approximated: see
  text_extent);
* the READMEs show the rendered page and the block diagram.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCH = REPO / "schematics"
sys.path.insert(0, str(REPO / "firmware"))

import pins  # noqa: E402

GENERATED = ["sbrig-rig.kicad_sch", "sbrig.kicad_sym", "sbrig-rig.kicad_pro",
             "sym-lib-table", "exports/sbrig-rig.svg", "exports/sbrig-rig.pdf",
             "exports/sbrig-rig-bom.csv", "exports/sbrig-rig.png",
             "exports/sbrig-rig-blocks.svg"]


def kicad_cli():
    if not shutil.which("kicad-cli"):
        pytest.fail("kicad-cli is missing: run .ci/install-deps (kicad 9 from bookworm-backports)")
    return "kicad-cli"


def sexpr(text: str):
    """A minimal S-expression reader: lists of atoms (strings unquoted)."""
    tokens = re.findall(r'\(|\)|"(?:[^"\\]|\\.)*"|[^\s()"]+', text)
    stack, cur = [], []
    for t in tokens:
        if t == "(":
            stack.append(cur)
            cur = []
        elif t == ")":
            done, cur = cur, stack.pop()
            cur.append(done)
        else:
            cur.append(t[1:-1].replace('\\"', '"') if t.startswith('"') else t)
    return cur[0]


def find(node, key):
    return [c for c in node if isinstance(c, list) and c and c[0] == key]


def netlist(tmp_path) -> dict[str, set[tuple[str, str]]]:
    """{net name: {(ref, pin)}} from kicad-cli's netlist of the committed project."""
    out = tmp_path / "sbrig-rig.net"
    subprocess.run([kicad_cli(), "sch", "export", "netlist", "--format", "kicadsexpr",
                    "-o", str(out), str(SCH / "sbrig-rig.kicad_sch")],
                   check=True, capture_output=True, timeout=120)
    tree = sexpr(out.read_text())
    nets = {}
    for net in find(find(tree, "nets")[0], "net"):
        name = find(net, "name")[0][1].lstrip("/")
        nets[name] = {(find(n, "ref")[0][1], find(n, "pin")[0][1]) for n in find(net, "node")}
    return nets


@pytest.fixture(scope="module")
def nets(tmp_path_factory):
    return netlist(tmp_path_factory.mktemp("net"))


def test_erc_is_clean(tmp_path):
    rpt = tmp_path / "erc.rpt"
    r = subprocess.run([kicad_cli(), "sch", "erc", "--severity-all", "--exit-code-violations",
                        "-o", str(rpt), str(SCH / "sbrig-rig.kicad_sch")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, rpt.read_text() if rpt.exists() else r.stderr
    assert "Found 0 violations" in r.stdout + r.stderr


def test_every_table_pin_is_on_its_net(nets):
    rows, errors = pins.load_table()
    assert errors == []
    ref = {"target": "J1", "rig": "J2"}
    for p in rows:
        assert p.net in nets, f"{p.where}: net {p.net} is not in the schematic"
        assert (ref[p.board], p.pin) in nets[p.net], \
            f"{p.where}: {ref[p.board]} pin {p.pin} is not on net {p.net}"
    # and the headers have no pin the table does not have
    on_headers = {(r, pin): n for n, nodes in nets.items() for r, pin in nodes if r in ("J1", "J2")}
    table = {(ref[p.board], p.pin): p.net for p in rows}
    assert on_headers == table


def two_pin_between(nets, a, b, prefix):
    """Refs of parts (R*, SW*) with one pin on net a and the other on net b."""
    parts = {r for r, _ in nets[a]} & {r for r, _ in nets[b]}
    return {r for r in parts if r.startswith(prefix)}


def test_links_the_rig_needs(nets):
    rows, _ = pins.load_table()
    by = {(p.board, p.signal): p.net for p in rows}
    # the telemetry UART is crossed over, through a series resistor
    assert two_pin_between(nets, by["target", "telemetry:tx"], by["rig", "telemetry:rx"], "R")
    assert two_pin_between(nets, by["rig", "telemetry:tx"], by["target", "telemetry:rx"], "R")
    # the marker goes back to the rig host
    assert two_pin_between(nets, by["target", "marker"], by["rig", "marker"], "R")
    # each key: a switch to ground, a pull-up, and a transistor whose
    # collector is the key and whose base is driven (via a resistor) by the
    # rig's line
    for key in ("key:power", "key:volume-up", "key:volume-down"):
        line, drv = by["target", key], by["rig", key]
        assert two_pin_between(nets, line, "GND", "SW"), key
        assert two_pin_between(nets, line, "+3V3_TGT", "R"), key
        q = [r for r, pin in nets[line] if r.startswith("Q") and pin == "3"]
        assert len(q) == 1, key
        base = next(n for n, nodes in nets.items() if (q[0], "1") in nodes)
        assert two_pin_between(nets, drv, base, "R"), key
        assert (q[0], "2") in nets["GND"]
    # the shunt sits between the supply and the target, and the INA226
    # senses across it and the target's voltage
    shunt = two_pin_between(nets, "+5V_IN", "VDD_5V_TGT", "R")
    assert shunt == {"R1"}
    assert ("U1", "10") in nets["+5V_IN"] and ("U1", "9") in nets["VDD_5V_TGT"]
    assert ("U1", "1") in nets["VDD_5V_TGT"]
    # address 0x40: A0 = A1 = GND; decoupled VS; I2C pulled up
    assert {("U1", "2"), ("U1", "3"), ("U1", "8")} <= nets["GND"]
    assert two_pin_between(nets, "+3V3_RIG", "GND", "C")
    for line in (by["rig", "ina226:scl"], by["rig", "ina226:sda"], by["rig", "ina226:alert"]):
        assert two_pin_between(nets, line, "+3V3_RIG", "R"), line
    # the charger: a P-MOSFET from the supply to the charger rail (J4),
    # whose gate a driver pulls down, and a divider from the rail to the
    # detect pin
    assert ("Q5", "2") in nets["+5V_IN"]
    rail = next(n for n, nodes in nets.items() if ("Q5", "3") in nodes)
    assert ("J4", "1") in nets[rail]
    gate = next(n for n, nodes in nets.items() if ("Q5", "1") in nodes)
    assert ("Q4", "3") in nets[gate] and ("Q4", "2") in nets["GND"]
    assert two_pin_between(nets, rail, by["target", "charger-detect"], "R")
    assert two_pin_between(nets, by["target", "charger-detect"], "GND", "R")
    # test points on the nets worth probing
    tps = {n for n, nodes in nets.items() if any(r.startswith("TP") for r, _ in nodes)}
    assert {"+5V_IN", "VDD_5V_TGT", "GND", "MARKER", "CHG_DET"} <= tps
    # no net is a single pin (a label typo would make one)
    assert [n for n, nodes in nets.items() if len(nodes) < 2] == []


def test_shunt_value_is_the_overlays_and_the_confs():
    bom = (SCH / "exports/sbrig-rig-bom.csv").read_text()
    assert re.search(r'^"R1","40m 1% 1W"', bom, re.M)
    assert "shunt-resistor = <40000>" in (REPO / "firmware/sbrig-rig-host.dts").read_text()
    assert pins.load_rig_conf().get("power", "shunt_uohm") == "40000"


def test_committed_files_are_not_stale(tmp_path):
    """make -C schematics into a scratch dir gives the committed bytes."""
    kicad_cli()
    if not shutil.which("pdftoppm"):
        pytest.fail("pdftoppm is missing: run .ci/install-deps (poppler-utils)")
    out = tmp_path / "out"
    r = subprocess.run(["make", "-s", "-C", str(SCH), f"OUT={out}", f"B={tmp_path / 'b'}",
                        "project", "exports"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    stale = [f for f in GENERATED if (out / f).read_bytes() != (SCH / f).read_bytes()]
    assert stale == [], f"stale (run 'make -C schematics'): {stale}"


def test_readme_wiring_table_is_not_stale():
    r = subprocess.run([sys.executable, str(REPO / "firmware/pins.py"), "wiring-table",
                        "--check", str(SCH / "README.md")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_stale_readme_is_detected(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text((SCH / "README.md").read_text().replace("| `KEY_POWER` | target | P8_19",
                                                              "| `KEY_POWER` | target | P8_18"))
    r = subprocess.run([sys.executable, str(REPO / "firmware/pins.py"), "wiring-table",
                        "--check", str(readme)], capture_output=True, text=True)
    assert r.returncode == 1 and "wiring table is stale" in r.stderr


# --- the drawing -------------------------------------------------------------
#
# Read from the committed .kicad_sch alone. Which block a part belongs in is
# stated here (by words of the block's title), not taken from the generator.

BLOCKS = {
    "Supply path": {"J3", "R1", "U1", "C1", "R2", "R3", "R4"},
    "Charger": {"Q4", "Q5", "R5", "R6", "R7", "R8", "R9", "C2", "J4"},
    "Key drivers": {"Q1", "Q2", "Q3", "R12", "R13", "R14", "R15", "R16", "R17",
                    "SW1", "SW2", "SW3", "R21", "R22", "R23"},
    "Marker": {"R30", "R31"},
    "UART": {"R32", "R33"},
    "Rig host": {"J2"},
    "Target": {"J1"},
    "Test points": {f"TP{n}" for n in range(1, 9)},
}
RAILS = {"GND", "+5V_IN", "VDD_5V_TGT", "+3V3_RIG", "+3V3_TGT"}

# KiCad's stroke font (newstroke), approximated: a line of text is at most
# CHAR_W x the text size per character long and LINE_H x size tall, the
# pen's ink included (measured on kicad-cli's SVG of this sheet, where the
# widest, "40m 1% 1W", is 0.97 per character, and parentheses make a line
# 1.64 tall; test_font_approximation_bounds_what_kicad_draws checks every
# text the export draws against these). A global label's
# outline adds 0.375 x size of margin round the text and the arrow's point
# (KiCad's label box expansion). A pin's number is centred on the pin beside
# its line (above a horizontal pin, left of a vertical one); its name starts
# 0.508 mm (the pin_names offset) inside the body from the pin's inner end.
CHAR_W = 1.0
LINE_H = 1.75


def text_extent(text, x, y, size, just="left", vertical=False):
    """(x1, y1, x2, y2) of one line of text anchored at (x, y), centred
    vertically; vertical: rotated 90 degrees, centred on x."""
    w, h = len(text) * CHAR_W * size, LINE_H * size
    if vertical:
        return (x - h / 2, y - w / 2, x + h / 2, y + w / 2)
    x1 = {"left": x, "right": x - w}.get(just, x - w / 2)
    return (x1, y - h / 2, x1 + w, y + h / 2)


def overlaps(a, b):
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def inside(a, frame):
    return frame[0] <= a[0] and a[2] <= frame[2] and frame[1] <= a[1] and a[3] <= frame[3]


def _num(node, key, n=2):
    return [float(v) for v in find(node, key)[0][1:1 + n]]


def _effects(node):
    """(size, justify, hidden) of a node's effects."""
    eff = find(node, "effects")
    if not eff:
        return 1.27, "center", False
    eff = eff[0]
    size = float(find(find(eff, "font")[0], "size")[0][1])
    just = find(eff, "justify")
    just = next((j for j in (just[0][1:] if just else []) if j in ("left", "right")), "center")
    hidden = bool(find(eff, "hide")) and find(eff, "hide")[0][1:] in ([], ["yes"])
    return size, just, hidden


class Drawing:
    """What a .kicad_sch draws: symbols (with their library pins), wires,
    labels, power symbols, frames, titles and text boxes (sheet mm, y down)."""

    def __init__(self, path: Path):
        tree = sexpr(path.read_text())
        self.lib = {}
        for sym in find(find(tree, "lib_symbols")[0], "symbol"):
            pins_, pts = [], []
            for unit in find(sym, "symbol"):
                for p in find(unit, "pin"):
                    x, y, ang = (float(v) for v in find(p, "at")[0][1:4])
                    length = float(find(p, "length")[0][1])
                    pins_.append({"number": find(p, "number")[0][1], "name": find(p, "name")[0][1],
                                  "x": x, "y": y, "angle": int(ang), "length": length,
                                  "hidden": bool(find(p, "hide"))})
                    pts.append((x, y))
                for g in unit:
                    if not isinstance(g, list):
                        continue
                    if g[0] == "rectangle":
                        pts += [tuple(_num(g, "start")), tuple(_num(g, "end"))]
                    elif g[0] == "circle":
                        (cx, cy), rad = _num(g, "center"), float(find(g, "radius")[0][1])
                        pts += [(cx - rad, cy - rad), (cx + rad, cy + rad)]
                    elif g[0] == "polyline":
                        pts += [(float(xy[1]), float(xy[2])) for xy in find(find(g, "pts")[0], "xy")]
            pn, nn = find(sym, "pin_names"), find(sym, "pin_numbers")
            self.lib[sym[1]] = {
                "pins": pins_, "pts": pts, "power": bool(find(sym, "power")),
                "names": not (pn and find(pn[0], "hide")),
                "offset": float(find(pn[0], "offset")[0][1]) if pn and find(pn[0], "offset") else 0.508,
                "numbers": not (nn and find(nn[0], "hide"))}
        self.symbols = []
        for s in find(tree, "symbol"):
            x, y, ang = (float(v) for v in find(s, "at")[0][1:4])
            props = {p[1]: p for p in find(s, "property")}
            self.symbols.append({
                "lib": find(s, "lib_id")[0][1], "x": x, "y": y, "angle": ang,
                "mirror": bool(find(s, "mirror")),
                "ref": props["Reference"][2], "value": props["Value"][2],
                "fields": [(p[2], *_num(p, "at"), *_effects(p)) for p in props.values()]})
        self.wires = [tuple(tuple(float(v) for v in xy[1:3]) for xy in find(find(w, "pts")[0], "xy"))
                      for w in find(tree, "wire")]
        self.glabels = [(g[1], *_num(g, "at", 3), *_effects(g)) for g in find(tree, "global_label")]
        self.local_labels = find(tree, "label") + find(tree, "hierarchical_label")
        self.rects = [(*_num(r_, "start"), *_num(r_, "end")) for r_ in find(tree, "rectangle")]
        self.texts = [(t[1], *_num(t, "at"), *_effects(t)) for t in find(tree, "text")]
        self.text_boxes = [(b[1], *_num(b, "at"), *_num(b, "size")) for b in find(tree, "text_box")]

    def pin_at(self, s, p):
        return (round(s["x"] + p["x"], 3), round(s["y"] - p["y"], 3))

    def parts(self):
        return [s for s in self.symbols if not s["ref"].startswith("#")]

    def frames(self):
        """{title: (x1, y1, x2, y2)}: each frame and the title text in its top band."""
        out = {}
        for r_ in self.rects:
            x1, y1, x2, y2 = min(r_[0], r_[2]), min(r_[1], r_[3]), max(r_[0], r_[2]), max(r_[1], r_[3])
            for text, tx, ty, *_ in self.texts:
                if x1 < tx < x2 and y1 < ty < y1 + 10:
                    out[text] = (x1, y1, x2, y2)
        return out

    def extent(self, s):
        """A symbol's drawing: its graphics, pins and visible fields."""
        lib = self.lib[s["lib"]]
        xs = [s["x"] + x for x, _ in lib["pts"]]
        ys = [s["y"] - y for _, y in lib["pts"]]
        box = [min(xs), min(ys), max(xs), max(ys)]
        for text, x, y, size, just, hidden in s["fields"]:
            if not hidden and text:
                e = text_extent(text, x, y, size, just)
                box = [min(box[0], e[0]), min(box[1], e[1]), max(box[2], e[2]), max(box[3], e[3])]
        return tuple(box)

    def text_items(self):
        """[(what, extent)] of every text KiCad draws on the sheet but the
        title block's."""
        out = []
        for s in self.symbols:
            lib = self.lib[s["lib"]]
            for text, x, y, size, just, hidden in s["fields"]:
                if not hidden and text:
                    out.append((f"{s['ref']} {text}", text_extent(text, x, y, size, just)))
            if lib["power"]:
                continue
            for p in lib["pins"]:
                if p["hidden"]:
                    continue
                px, py = self.pin_at(s, p)
                dx, dy = {0: (1, 0), 180: (-1, 0), 90: (0, -1), 270: (0, 1)}[p["angle"]]
                ix, iy = px + dx * p["length"], py + dy * p["length"]
                horizontal = dy == 0
                if lib["names"] and p["name"] != "~":
                    w = len(p["name"]) * CHAR_W * 1.27
                    if horizontal:
                        x = ix + lib["offset"] if dx > 0 else ix - lib["offset"] - w
                        e = (x, iy - LINE_H * 0.635, x + w, iy + LINE_H * 0.635)
                    else:
                        y = iy + lib["offset"] if dy > 0 else iy - lib["offset"] - w
                        e = (ix - LINE_H * 0.635, y, ix + LINE_H * 0.635, y + w)
                    out.append((f"{s['ref']} pin {p['number']} name {p['name']}", e))
                if lib["numbers"]:
                    mx, my = (px + ix) / 2, (py + iy) / 2
                    w, h = len(p["number"]) * CHAR_W * 1.27, LINE_H * 1.27
                    e = ((mx - w / 2, my - 0.254 - h, mx + w / 2, my - 0.254) if horizontal else
                         (mx - 0.254 - h, my - w / 2, mx - 0.254, my + w / 2))
                    out.append((f"{s['ref']} pin {p['number']}", e))
        for text, x, y, ang, size, just, _ in self.glabels:
            w = len(text) * CHAR_W * size + 2 * 0.875 * size + 0.5
            h = 2 * 0.875 * size
            x1 = x - w if ang == 180 else x
            out.append((f"label {text}", (x1, y - h / 2, x1 + w, y + h / 2)))
        for text, x, y, size, just, _ in self.texts:
            out.append((f"text {text}", text_extent(text, x, y, size, just)))
        for lb in self.local_labels:        # text on the wire, above it
            (x, y, ang), (size, _, _) = _num(lb, "at", 3), _effects(lb)
            w, h = len(lb[1]) * CHAR_W * size, LINE_H * size
            e = {0: (x, y - h, x + w, y), 180: (x - w, y - h, x, y),
                 90: (x - h, y - w, x, y), 270: (x - h, y, x, y + w)}[int(ang)]
            out.append((f"label {lb[1]}", e))
        for text, x, y, w, h in self.text_boxes:
            out.append((f"note {text[:30]!r}", (x, y, x + w, y + h)))
        return out


@pytest.fixture(scope="module")
def drawing():
    return Drawing(SCH / "sbrig-rig.kicad_sch")


def block_of(frames: dict, words: str):
    hits = [t for t in frames if words.lower() in t.lower()]
    assert len(hits) == 1, f"one frame titled with {words!r} expected, found {hits}"
    return frames[hits[0]]


def test_every_part_lies_inside_its_block(drawing):
    frames = drawing.frames()
    assert len(frames) == len(BLOCKS), f"frames: {sorted(frames)}"
    placed = {s["ref"]: s for s in drawing.parts()}
    assert set(placed) == set().union(*BLOCKS.values()) | {"J1", "J2"}
    for words, refs in BLOCKS.items():
        frame = block_of(frames, words)
        for ref in refs:
            s = placed[ref]
            assert s["angle"] == 0 and not s["mirror"], \
                f"{ref} is rotated or mirrored: the text checks assume it is not"
            assert inside(drawing.extent(s), frame), \
                f"{ref} {drawing.extent(s)} is not inside the frame of {words!r} {frame}"
    # frames do not overlap each other
    fl = list(frames.items())
    for i, (ta, a) in enumerate(fl):
        for tb, b in fl[i + 1:]:
            assert not overlaps(a, b), f"frames {ta!r} and {tb!r} overlap"


def on_interior(p, a, b):
    if p in (a, b):
        return False
    if a[0] == b[0] == p[0]:
        return min(a[1], b[1]) < p[1] < max(a[1], b[1])
    if a[1] == b[1] == p[1]:
        return min(a[0], b[0]) < p[0] < max(a[0], b[0])
    return False


def test_blocks_are_wired_and_labels_join_blocks(drawing, nets):
    """Each block's connections are wires: every pin has a wire, the pins a
    block has on one net are one wired group (counted against the netlist),
    a wired group is named only by a power symbol or a global label, a
    global label only names a net that leaves its block, and rails are
    drawn above the pins they feed, ground below."""
    assert drawing.local_labels == [], "net labels inside a block: draw wires"
    frames = {words: block_of(drawing.frames(), words) for words in BLOCKS}
    block = {ref: words for words, refs in BLOCKS.items() for ref in refs}
    where = lambda p: next((w for w, f in frames.items()  # noqa: E731
                            if f[0] <= p[0] <= f[2] and f[1] <= p[1] <= f[3]), "no block")
    pin_net = {node: n for n, nodes in nets.items() for node in nodes}
    assert drawing.wires, "no wire in the schematic"
    # every connection point is a wire's end, never the middle of a wire
    points = {}
    for s in drawing.symbols:
        for p in drawing.lib[s["lib"]]["pins"]:
            points.setdefault(drawing.pin_at(s, p), []).append(s)
    for text, x, y, *_ in drawing.glabels:
        points.setdefault((round(x, 3), round(y, 3)), [])
    for a, b in drawing.wires:
        for p in points:
            assert not on_interior(p, a, b), f"{p} lies on the middle of the wire {a}-{b}"
    # wired groups: wires joined at their ends
    parent = {}

    def root(p):
        while parent.setdefault(p, p) != p:
            p = parent[p]
        return p
    wired = set()
    for a, b in drawing.wires:
        a, b = (round(a[0], 3), round(a[1], 3)), (round(b[0], 3), round(b[1], 3))
        parent[root(a)] = root(b)
        wired |= {a, b}
    groups = {}
    for s in drawing.symbols:
        lib = drawing.lib[s["lib"]]
        for p in lib["pins"]:
            at = drawing.pin_at(s, p)
            if s["ref"].startswith("#"):
                if s["lib"].endswith("PWR_FLAG"):
                    continue
                assert s["value"] in RAILS, f"power symbol {s['value']} for a net that is no rail"
                assert at in wired, f"power symbol {s['value']} at {at} has no wire"
                g = groups.setdefault(root(at), {"names": set(), "pins": set(), "ys": []})
                g["names"].add(s["value"])
                g.setdefault("power", []).append((s["value"], at[1]))
                continue
            assert at in wired, f"{s['ref']} pin {p['number']} has no wire"
            g = groups.setdefault(root(at), {"names": set(), "pins": set(), "ys": []})
            g["pins"].add((s["ref"], p["number"]))
            g["ys"].append(at[1])
    for text, x, y, *_ in drawing.glabels:
        at = (round(x, 3), round(y, 3))
        assert at in wired, f"label {text} at {at} has no wire"
        groups.setdefault(root(at), {"names": set(), "pins": set(), "ys": []})["names"].add(text)
    for g in groups.values():
        on = {pin_net[p] for p in g["pins"]}
        assert len(on) == 1, f"one wired group, several nets: {sorted(g['pins'])}"
        net = on.pop()
        assert len(g["names"]) <= 1, f"one wired group, several names: {g['names']}"
        if g["names"]:
            assert g["names"] == {net}, f"{g['names']} names a wire of net {net}"
        else:
            assert g["pins"] == nets[net], \
                f"net {net} is drawn as unnamed pieces: {sorted(g['pins'])} of {sorted(nets[net])}"
        # power at the top, ground at the bottom: a rail's symbol is at or
        # above the pins it feeds, a ground symbol at or below them
        for name, y in g.get("power", []):
            if name == "GND":
                assert y >= max(g["ys"]), f"a GND symbol above its pins {sorted(g['pins'])}"
            else:
                assert y <= min(g["ys"]), f"a {name} symbol below its pins {sorted(g['pins'])}"
    # count: a block's pins on one net (the netlist's) are one wired group
    # (rails excepted: they are joined by power symbols), and every net
    # that leaves a block has a global label there
    in_blocks = {}
    for n, nodes in nets.items():
        for ref, pin in nodes:
            in_blocks.setdefault((block[ref], n), set()).add((ref, pin))
    for (words, n), nodes in in_blocks.items():
        if n in RAILS:
            continue
        reached = [g["pins"] & nodes for g in groups.values() if g["pins"] & nodes]
        assert len(reached) == 1 and reached[0] == nodes, \
            f"{words}: net {n}'s {len(nodes)} pins are {len(reached)} wired groups"
    spans = {}
    for words, n in in_blocks:
        spans.setdefault(n, set()).add(words)
    labelled = {}
    for text, x, y, *_ in drawing.glabels:
        labelled.setdefault(text, set()).add(where((x, y)))
    for n, blocks in spans.items():
        if n in RAILS:
            continue
        if len(blocks) > 1:
            assert labelled.get(n) == blocks, f"net {n} joins {blocks}, labelled in {labelled.get(n)}"
        else:
            assert n not in labelled, f"net {n} stays in {blocks} but has a global label"


def test_no_text_overlaps_another(drawing):
    items = drawing.text_items()
    assert len(items) > 100
    bad = [f"{a} / {b}" for i, (a, ea) in enumerate(items) for b, eb in items[i + 1:]
           if overlaps(ea, eb)]
    assert bad == [], "texts overlap:\n" + "\n".join(bad)


def test_each_block_has_its_design_note(drawing):
    frames = drawing.frames()
    for words in BLOCKS:
        frame = block_of(frames, words)
        notes = [t for t, x, y, w, h in drawing.text_boxes if inside((x, y, x + w, y + h), frame)]
        assert len(notes) == 1, f"{words}: {len(notes)} design notes"
    text = " ".join(t for t, *_ in drawing.text_boxes).replace("\\n", " ").replace("\n", " ")
    for figure in ("2.048 A", "62.5 µA", "0.55 mA", "2.97 V", "0x40"):
        assert figure in text, figure


def test_readmes_show_the_rendered_page_and_the_block_diagram():
    png = SCH / "exports/sbrig-rig.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "](schematics/exports/sbrig-rig.png)" in (REPO / "README.md").read_text()
    readme = (SCH / "README.md").read_text()
    diagram = readme.find("](exports/sbrig-rig-blocks.svg)")
    assert 0 <= diagram < readme.index("## Wiring table")


def drawn_texts(svg: Path, ink=True):
    """[(text, size, (x1, y1, x2, y2))] of every text kicad-cli's SVG export
    draws, from KiCad's own strokes: it plots its stroke font as paths in a
    <g class="stroked-text"> whose <desc> is the text, after an invisible
    <text> with the font size (in SVG px: 4/3 x the size in mm). ink: the
    box includes the pen's width (else it is the strokes' centre lines)."""
    out, size = set(), None
    for el in ET.parse(svg).getroot().iter():      # document order
        tag = el.tag.rsplit("}", 1)[-1]
        if tag == "text":
            size = float(el.get("font-size")) * 3 / 4
        elif tag == "g" and el.get("class") == "stroked-text":
            desc = next(c.text for c in el if c.tag.endswith("desc"))
            xy = [float(v) for p in el if p.tag.endswith("path")
                  for v in re.findall(r"-?\d+(?:\.\d+)?", p.get("d"))]
            xs, ys = xy[0::2], xy[1::2]
            if not xs:          # a blank text draws nothing
                continue
            pen = size / 8.33 if ink else 0     # KiCad's default pen: 0.1524 at 1.27
            out.add((desc, size, (min(xs) - pen / 2, min(ys) - pen / 2,
                                  max(xs) + pen / 2, max(ys) + pen / 2)))
    return sorted(out)     # (some texts are plotted twice, in the same place)


def test_font_approximation_bounds_what_kicad_draws():
    """The approximation the other checks use (CHAR_W, LINE_H) is no
    smaller than any text kicad-cli actually draws on this sheet."""
    texts = drawn_texts(SCH / "exports/sbrig-rig.svg")
    assert len(texts) > 300
    for text, size, (x1, y1, x2, y2) in texts:
        w, h = len(text) * CHAR_W * size, LINE_H * size
        dx, dy = x2 - x1, y2 - y1
        assert (dx <= w and dy <= h) or (dy <= w and dx <= h), \
            f"{text!r} ({size} mm) is drawn {dx:.2f} x {dy:.2f} mm, more than {w:.2f} x {h:.2f}"


def test_no_drawn_text_overlaps_another():
    """The same check on KiCad's own drawing of the texts (its SVG export),
    so a text KiCad places elsewhere than text_items() thinks is caught.
    The boxes are the strokes' centre lines: with the pen's width, two
    lines of one note (KiCad's own line pitch) touch where parentheses
    meet."""
    texts = drawn_texts(SCH / "exports/sbrig-rig.svg", ink=False)
    # the drawing sheet's frame and title block: not ours
    texts = [t for t in texts if not (t[2][0] > 300 and t[2][1] > 250) and
             not t[2][1] < 12 and not t[2][1] > 285 and not t[2][0] < 12 and not t[2][0] > 408]
    bad = [f"{a} {ea} / {b} {eb}" for i, (a, _, ea) in enumerate(texts)
           for b, _, eb in texts[i + 1:] if overlaps(ea, eb)]
    assert bad == [], "drawn texts overlap:\n" + "\n".join(bad)
