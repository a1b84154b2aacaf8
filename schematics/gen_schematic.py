#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Writes the rig's KiCad 9 project (sbrig-rig.kicad_sch and its library).

The schematic is generated, not drawn by hand: the two BeagleBone header
symbols come from firmware/pins.tsv (one pin per table row of that board),
the parts and their nets are the list PARTS below, and the drawing is the
list of functional blocks in draw_blocks(): each block is a titled frame
with its parts, the wires between them, a design note and, where a net
leaves the block, a global label (or a power symbol for a rail).

The generator checks what it drew before it writes anything:

* connectivity: the wires, labels and power symbols connect exactly the
  pins PARTS says (a routing slip cannot change the circuit);
* no pin lies on the middle of a wire (an accidental connection);
* every part and every text lies inside its block's frame;
* no two texts overlap (pin numbers, pin names, references, values,
  labels, titles, notes), with KiCad's stroke font approximated as
  FONT_W x size per character and FONT_H x size per line.

Every symbol is drawn unrotated, so the text positions it checks are the
ones KiCad draws; a horizontal resistor is its own symbol (R_H).

Symbols are defined here too (sbrig.kicad_sym, the project's own library,
embedded in the schematic as KiCad does), so the project needs no KiCad
symbol library package. block_diagram() writes exports/sbrig-rig-blocks.svg
from the same blocks.
"""

from __future__ import annotations

import sys
import textwrap
import uuid
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "firmware"))
import pins  # noqa: E402

PROJECT = "sbrig-rig"
LIB = "sbrig"
NS = uuid.UUID("6b1f6d8e-2f55-4f0e-9c55-5b7c1d3a0e12")

# KiCad's stroke font, approximated: a line of text is at most FONT_W x
# size per character long and FONT_H x size tall, ink included (kicad-cli's
# SVG of this sheet: "40m 1% 1W" is 0.97 per character, parentheses make a
# line 1.64 tall; tests/test_schematics.py checks every text against it),
# a text box's lines are LINE_PITCH x size apart.
FONT_W = 1.0
FONT_H = 1.75
LINE_PITCH = 1.62
TS = 1.27           # the size of every text but the titles
TITLE_TS = 2.0
G = 2.54            # the grid


def uid(*parts) -> str:
    return str(uuid.uuid5(NS, "/".join(str(p) for p in parts)))


def q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def f(v: float) -> str:
    return f"{round(v, 4):g}"


# --- symbols -----------------------------------------------------------------

@dataclass
class SymPin:
    number: str
    name: str
    etype: str      # passive, power_in, power_out, input, bidirectional, open_collector
    x: float        # connection point, symbol coordinates (y up)
    y: float
    angle: int      # direction from the connection point into the body
    length: float = G


@dataclass
class Symbol:
    name: str
    ref: str
    pins: list[SymPin]
    graphics: list[str]             # lib S-expressions (symbol coordinates)
    bbox: tuple[float, float, float, float]     # body, x1 y1 x2 y2 (y up)
    ref_at: tuple[float, float, str]            # x, y, justify
    value_at: tuple[float, float, str]
    power: bool = False
    show_names: bool = False
    show_numbers: bool = False
    description: str = ""


def rect(x1, y1, x2, y2, fill="background"):
    return (f"(rectangle (start {f(x1)} {f(y1)}) (end {f(x2)} {f(y2)}) "
            f"(stroke (width 0.254) (type default)) (fill (type {fill})))")


def poly(*pts, width=0.254, fill="none"):
    xy = " ".join(f"(xy {f(x)} {f(y)})" for x, y in pts)
    return f"(polyline (pts {xy}) (stroke (width {width}) (type default)) (fill (type {fill})))"


def circle(x, y, r, fill="none"):
    return (f"(circle (center {f(x)} {f(y)}) (radius {f(r)}) "
            f"(stroke (width 0.254) (type default)) (fill (type {fill})))")


def box(name, ref, sides, w, h, desc, pin_len=G):
    """A box symbol w x h (centred); sides: {side: [(pos, number, name, type)]}
    with pos along the side (y for left/right, x for top/bottom)."""
    pl = []
    for side, pins_ in sides.items():
        for pos, num, nm, t in pins_:
            if side == "left":
                pl.append(SymPin(num, nm, t, -w / 2 - pin_len, pos, 0, pin_len))
            elif side == "right":
                pl.append(SymPin(num, nm, t, w / 2 + pin_len, pos, 180, pin_len))
            elif side == "top":
                pl.append(SymPin(num, nm, t, pos, h / 2 + pin_len, 270, pin_len))
            else:
                pl.append(SymPin(num, nm, t, pos, -h / 2 - pin_len, 90, pin_len))
    return Symbol(name, ref, pl, [rect(-w / 2, h / 2, w / 2, -h / 2)],
                  (-w / 2, h / 2, w / 2, -h / 2),
                  (w / 2 + 1.27, h / 2 + 1.27, "left"), (w / 2 + 1.27, -h / 2 - 1.27, "left"),
                  show_names=True, show_numbers=True, description=desc)


def vertical_two_pin(name, ref, graphics, desc, body_w=1.016):
    return Symbol(name, ref, [SymPin("1", "~", "passive", 0, 5.08, 270),
                              SymPin("2", "~", "passive", 0, -5.08, 90)],
                  graphics, (-body_w, 2.54, body_w, -2.54),
                  (2.032, 1.27, "left"), (2.032, -1.27, "left"), description=desc)


def transistor(name, desc, top, bottom, mos, p_channel=False):
    """B/G on the left at (-5.08, 0); top pin (C or D/S) and bottom pin at x 2.54."""
    g = [circle(1.27, 0, 2.8448)]
    if mos:
        g += [poly((-1.778, 1.905), (-1.778, -1.905)),
              poly((-1.016, 2.032), (-1.016, 0.762), width=0.508),
              poly((-1.016, 0.508), (-1.016, -0.508), width=0.508),
              poly((-1.016, -0.762), (-1.016, -2.032), width=0.508),
              poly((-1.016, 1.27), (2.54, 1.27), (2.54, 2.54)),
              poly((-1.016, -1.27), (2.54, -1.27), (2.54, -2.54)),
              poly((-1.016, 0), (2.54, 0), (2.54, -1.27))]
        g.append(poly((0.0, 0.508), (-0.889, 0), (0.0, -0.508), (0.0, 0.508), fill="outline")
                 if not p_channel else
                 poly((-0.254, 0.508), (0.635, 0), (-0.254, -0.508), (-0.254, 0.508),
                      fill="outline"))
        gate_end = -1.778
    else:
        g += [poly((-0.635, 1.905), (-0.635, -1.905), width=0.508),
              poly((-0.635, 0.635), (2.54, 2.54)),
              poly((-0.635, -0.635), (2.54, -2.54)),
              poly((1.27, -2.286), (2.54, -2.54), (2.032, -1.397), (1.27, -2.286),
                   fill="outline")]
        gate_end = -0.635
    return Symbol(name, "Q", [SymPin(top[0], top[1], top[2], 2.54, 5.08, 270),
                              SymPin("1", "G" if mos else "B", "input", -5.08, 0, 0,
                                     5.08 + gate_end),
                              SymPin(bottom[0], bottom[1], bottom[2], 2.54, -5.08, 90)],
                  g, (-1.778, 2.8448, 4.1148, -2.8448),
                  (5.08, 1.27, "left"), (5.08, -1.27, "left"), description=desc)


def power_symbol(net):
    if net == "GND":
        return Symbol(net, "#PWR", [SymPin("1", net, "power_in", 0, 0, 270, 0)],
                      [poly((0, 0), (0, -1.27), (1.27, -1.27), (0, -2.54), (-1.27, -1.27),
                            (0, -1.27))],
                      (-1.27, 0, 1.27, -2.54), (0, 0, "center"), (0, -3.81, "center"),
                      power=True, description="Power symbol: ground")
    return Symbol(net, "#PWR", [SymPin("1", net, "power_in", 0, 0, 90, 0)],
                  [poly((-0.762, 1.27), (0, 2.54), (0.762, 1.27)), poly((0, 0), (0, 2.54))],
                  (-0.762, 2.54, 0.762, 0), (0, 0, "center"), (0, 3.556, "center"),
                  power=True, description=f"Power symbol: the {net} rail")


# What the non-GPIO pads of the table are in their mode (AM335x datasheet)
PAD_FUNCTION = {("uart1_txd", 0): "UART1_TXD", ("uart1_rxd", 0): "UART1_RXD",
                ("spi0_cs0", 2): "I2C1_SCL", ("spi0_d1", 2): "I2C1_SDA"}
HEADER_W = 15.24
HEADER_PIN = 7.62       # long enough for a pin number like P8_10 above it


def header_rows(board: str, rows: list[pins.Pin]) -> list[pins.Pin | None]:
    """The header's pins top to bottom: supplies (a rail per group), the
    signals, then ground; None is an empty slot between groups."""
    mine = {}
    for p in rows:
        if p.board == board:
            mine.setdefault(p.pin, p)
    key = lambda p: (p.pin[:2], int(p.pin[3:]))  # noqa: E731
    power = sorted((p for p in mine.values() if p.dir == "power"), key=lambda p: (p.net, key(p)))
    out: list[pins.Pin | None] = []
    for p in power:
        if out and out[-1].net != p.net:
            out.append(None)
        out.append(p)
    out.append(None)
    out += sorted((p for p in mine.values() if p.dir not in ("power", "ground")), key=key)
    out.append(None)
    out += sorted((p for p in mine.values() if p.dir == "ground"), key=key)
    return out


def header_symbol(board: str, rows: list[pins.Pin]) -> Symbol:
    """The subset of a BeagleBone Black's P8/P9 headers the rig uses: the
    rig host's pins face right (into the circuit), the target's left."""
    slots = header_rows(board, rows)
    h = (len(slots) + 1) * G
    top = h / 2 - G
    side = []
    for i, p in enumerate(slots):
        if p is None:
            continue
        name = {"power": p.net, "ground": "DGND"}.get(p.dir) or \
            (p.gpio_name.upper() if p.gpio else
             PAD_FUNCTION.get((p.pad, p.mode), f"{p.pad.upper()}_M{p.mode}"))
        etype = "power_out" if p.dir == "power" and p.net.startswith("+3V3") else "passive"
        side.append((top - i * G, p.pin, name, etype))
    title = "target" if board == "target" else "rig host"
    s = box(f"BBB_{board}", "J", {"right" if board == "rig" else "left": side},
            HEADER_W, h, f"BeagleBone Black ({title}): the P8/P9 pins the rig uses",
            pin_len=HEADER_PIN)
    s.ref_at = (-HEADER_W / 2, h / 2 + 1.27, "left")
    s.value_at = (-HEADER_W / 2, -h / 2 - 1.27, "left")
    return s


R_BODY = [rect(-1.016, 2.54, 1.016, -2.54)]
SYMBOLS = {
    "R": vertical_two_pin("R", "R", R_BODY, "Resistor"),
    "R_H": Symbol("R_H", "R", [SymPin("1", "~", "passive", -5.08, 0, 0),
                               SymPin("2", "~", "passive", 5.08, 0, 180)],
                  [rect(-2.54, 1.016, 2.54, -1.016)], (-2.54, 1.016, 2.54, -1.016),
                  (0, 2.54, "center"), (0, -2.54, "center"),
                  description="Resistor (drawn horizontally)"),
    "C": vertical_two_pin("C", "C", [poly((-2.032, 0.762), (2.032, 0.762), width=0.508),
                                     poly((-2.032, -0.762), (2.032, -0.762), width=0.508)],
                          "Capacitor", body_w=2.032),
    "SW_Push": vertical_two_pin("SW_Push", "SW",
                                [circle(0, 2.032, 0.508), circle(0, -2.032, 0.508),
                                 poly((-1.27, 2.54), (-1.27, -2.54)),
                                 poly((-1.27, 0), (-3.048, 0)),
                                 poly((-3.048, 1.016), (-3.048, -1.016))],
                                "Push button, normally open"),
    "NPN": transistor("NPN", "NPN transistor (SOT-23: 1 B, 2 E, 3 C)",
                      ("3", "C", "passive"), ("2", "E", "passive"), mos=False),
    "NMOS": transistor("NMOS", "N-channel MOSFET (SOT-23: 1 G, 2 S, 3 D)",
                       ("3", "D", "passive"), ("2", "S", "passive"), mos=True),
    "PMOS": transistor("PMOS", "P-channel MOSFET (SOT-23: 1 G, 2 S, 3 D)",
                       ("2", "S", "passive"), ("3", "D", "passive"), mos=True, p_channel=True),
    "INA226": box("INA226", "U",
                  {"top": [(-7.62, "10", "VIN+", "input"), (2.54, "1", "VBUS", "input"),
                           (7.62, "9", "VIN-", "input")],
                   "left": [(2.54, "4", "SCL", "input"), (0, "5", "SDA", "bidirectional"),
                            (-2.54, "7", "ALERT", "open_collector")],
                   "right": [(2.54, "6", "VS", "power_in")],
                   "bottom": [(-7.62, "2", "A1", "input"), (-2.54, "3", "A0", "input"),
                              (7.62, "8", "GND", "power_in")]},
                  20.32, 20.32, "INA226 current/power monitor, I2C (VSSOP-10)"),
    "Conn_01x02": box("Conn_01x02", "J", {"right": [(0, "1", "1", "passive"),
                                                    (-2.54, "2", "2", "passive")]},
                      5.08, 5.08, "Connector, 2 pins, wired from the right"),
    "Conn_01x02_L": box("Conn_01x02_L", "J", {"left": [(0, "1", "1", "passive"),
                                                       (-2.54, "2", "2", "passive")]},
                        5.08, 5.08, "Connector, 2 pins, wired from the left"),
    "TestPoint": Symbol("TestPoint", "TP", [SymPin("1", "1", "passive", -5.08, 0, 0, 3.81)],
                        [circle(0, 0, 1.27)], (-1.27, 1.27, 1.27, -1.27),
                        (2.54, 1.27, "left"), (2.54, -1.27, "left"), description="Test point"),
    "PWR_FLAG": Symbol("PWR_FLAG", "#FLG", [SymPin("1", "pwr", "power_out", 0, 0, 90, 0)],
                       [poly((0, 0), (0, 1.27), (-1.016, 1.905), (0, 2.54), (1.016, 1.905),
                             (0, 1.27))],
                       (-1.016, 2.54, 1.016, 0), (0, 0, "center"), (0, 3.81, "center"),
                       power=True,
                       description="Marks a net as driven by a power source (ERC)"),
}
for _k in ("Conn_01x02", "Conn_01x02_L"):
    SYMBOLS[_k].show_names = False
    SYMBOLS[_k].ref_at = (-2.54, 3.81, "left")
    SYMBOLS[_k].value_at = (-2.54, -6.35, "left")
RAILS = ("+5V_IN", "VDD_5V_TGT", "+3V3_RIG", "+3V3_TGT", "GND")
for _n in RAILS:
    SYMBOLS[_n] = power_symbol(_n)


def sym_text(s: Symbol, embedded: bool) -> str:
    name = f"{LIB}:{s.name}" if embedded else s.name
    lines = [f"(symbol {q(name)}"]
    if s.power:
        lines.append("(power)")
    lines.append(f"(pin_names (offset 0.508){'' if s.show_names else ' (hide yes)'})")
    if not s.show_numbers:
        lines.append("(pin_numbers (hide yes))")
    lines += ["(exclude_from_sim no)", "(in_bom " + ("no" if s.power else "yes") + ")",
              "(on_board " + ("no" if s.power else "yes") + ")"]
    for key, val, at, hid in (("Reference", s.ref, s.ref_at, s.power),
                              ("Value", s.name, s.value_at, False),
                              ("Footprint", "", None, True), ("Datasheet", "~", None, True),
                              ("Description", s.description, None, True)):
        x, y, just = at or (0, 0, "center")
        lines.append(f"(property {q(key)} {q(val)} (at {f(x)} {f(y)} 0) "
                     f"(effects (font (size {TS} {TS})){'' if just == 'center' else f' (justify {just})'}"
                     f"{' (hide yes)' if hid else ''}))")
    lines.append(f"(symbol {q(s.name + '_0_1')} " + " ".join(s.graphics) + ")")
    pl = [f"(symbol {q(s.name + '_1_1')}"]
    for p in s.pins:
        pl.append(f"(pin {p.etype} line (at {f(p.x)} {f(p.y)} {p.angle}) (length {f(p.length)})"
                  f"{' (hide yes)' if s.power else ''} (name {q(p.name)} (effects (font (size {TS} {TS})))) "
                  f"(number {q(p.number)} (effects (font (size {TS} {TS})))))")
    pl.append(")")
    lines.append(" ".join(pl))
    lines.append(")")
    return "\n".join(lines)


# --- the circuit ---------------------------------------------------------------

@dataclass
class Part:
    ref: str
    sym: str
    value: str
    nets: dict[str, str]        # pin number -> net
    footprint: str = ""         # the package (no PCB yet: not a KiCad footprint link)
    mpn: str = ""
    note: str = ""


R0603 = "Resistor_SMD:R_0603_1608Metric"
C0603 = "Capacitor_SMD:C_0603_1608Metric"
SOT23 = "Package_TO_SOT_SMD:SOT-23"
TP_LOOP = "TestPoint:TestPoint_Loop_D2.50mm_Drill1.0mm"


def r(ref, value, a, b, mpn, note="", sym="R"):
    return Part(ref, sym, value, {"1": a, "2": b}, R0603, mpn, note)


KEYS = (("KEY_POWER", "KEY_POWER_DRV"), ("KEY_VOLUP", "KEY_VOLUP_DRV"),
        ("KEY_VOLDN", "KEY_VOLDN_DRV"))
R_BASE, R_BE, R_KEY_PULLUP = "4.7k", "100k", "10k"


def key_parts(n, key, drv):
    """The rig host's transistor across one of the target's keys."""
    base = f"{key}_B"
    i = 2 * n
    return [
        Part(f"Q{n}", "NPN", "MMBT3904", {"1": base, "3": key, "2": "GND"}, SOT23,
             "MMBT3904LT1G", "shorts the key when the rig drives its line high"),
        r(f"R{10 + i}", R_BASE, drv, base, "RC0603FR-074K7L", "base resistor: 0.55 mA", "R_H"),
        r(f"R{11 + i}", R_BE, base, "GND", "RC0603FR-07100KL", "holds the transistor off"),
        Part(f"SW{n}", "SW_Push", "SW_Push", {"1": key, "2": "GND"},
             "Button_Switch_SMD:SW_SPST_TL3342", "TL3342F160QG", "the key itself"),
        r(f"R{20 + n}", R_KEY_PULLUP, "+3V3_TGT", key, "RC0603FR-0710KL", "key pull-up"),
    ]


PARTS = [
    Part("J3", "Conn_01x02", "5V 2A in", {"1": "+5V_IN", "2": "GND"},
         "TerminalBlock:TerminalBlock_bornier-2_P5.08mm", "1935161",
         "bench supply, 5 V, at least 2 A"),
    Part("R1", "R_H", "40m 1% 1W", {"1": "+5V_IN", "2": "VDD_5V_TGT"},
         "Resistor_SMD:R_2512_6332Metric", "WSL2512R0400FEA",
         "shunt in the target's 5 V supply (Kelvin sensed by U1)"),
    Part("U1", "INA226", "INA226AIDGSR",
         {"10": "+5V_IN", "9": "VDD_5V_TGT", "1": "VDD_5V_TGT", "2": "GND", "3": "GND",
          "6": "+3V3_RIG", "4": "I2C1_SCL", "5": "I2C1_SDA", "7": "INA_ALERT", "8": "GND"},
         "Package_SO:VSSOP-10_3x3mm_P0.5mm", "INA226AIDGSR",
         "A0 = A1 = GND: address 0x40"),
    Part("C1", "C", "100n", {"1": "+3V3_RIG", "2": "GND"}, C0603, "GCM188R71H104KA57D",
         "U1 VS decoupling, next to the pin"),
    r("R2", "4.7k", "+3V3_RIG", "I2C1_SCL", "RC0603FR-074K7L", "I2C1 pull-up"),
    r("R3", "4.7k", "+3V3_RIG", "I2C1_SDA", "RC0603FR-074K7L", "I2C1 pull-up"),
    r("R4", "10k", "+3V3_RIG", "INA_ALERT", "RC0603FR-0710KL", "ALERT is open drain"),
    *key_parts(1, *KEYS[0]),
    *key_parts(2, *KEYS[1]),
    *key_parts(3, *KEYS[2]),
    # the charger: rig GPIO -> N-MOSFET -> P-MOSFET high-side load switch
    r("R5", "100", "CHG_EN", "CHG_EN_G", "RC0603FR-07100RL", "gate series resistor", "R_H"),
    r("R6", "100k", "CHG_EN_G", "GND", "RC0603FR-07100KL", "charger off while the rig host boots"),
    Part("Q4", "NMOS", "BSS138", {"1": "CHG_EN_G", "3": "CHG_GATE", "2": "GND"}, SOT23,
         "BSS138", "pulls the P-MOSFET's gate low: Vgs(th) <= 1.5 V, driven at 3.3 V"),
    r("R7", "100k", "+5V_IN", "CHG_GATE", "RC0603FR-07100KL", "holds the P-MOSFET off"),
    Part("Q5", "PMOS", "AO3401A", {"1": "CHG_GATE", "2": "+5V_IN", "3": "CHG_5V"}, SOT23,
         "AO3401A", "charger load switch: 30 V, 4 A, < 60 mOhm at Vgs = -4.5 V"),
    Part("J4", "Conn_01x02_L", "charger out", {"1": "CHG_5V", "2": "GND"},
         "TerminalBlock:TerminalBlock_bornier-2_P5.08mm", "1935161",
         "switched charger rail, for an optional load; does not power the target"),
    r("R8", "15k", "CHG_5V", "CHG_DET", "RC0603FR-0715KL", "charger-detect divider, top"),
    r("R9", "22k", "CHG_DET", "GND", "RC0603FR-0722KL", "divider, bottom: 5 V -> 2.97 V"),
    Part("C2", "C", "100n", {"1": "CHG_DET", "2": "GND"}, C0603, "GCM188R71H104KA57D",
         "detect filter, 0.9 ms"),
    # marker and telemetry: series resistors, so an unpowered board is not
    # powered through its pins (pin 1 faces the rig host, on the left)
    r("R30", "1k", "MARKER", "MARKER_TGT", "RC0603FR-071KL", "marker series resistor", "R_H"),
    r("R31", "100k", "MARKER", "GND", "RC0603FR-07100KL", "marker reads low with the target off"),
    r("R32", "1k", "TEL_RXD_RIG", "TEL_TXD_TGT", "RC0603FR-071KL",
      "UART crossover: target TXD -> rig RXD", "R_H"),
    r("R33", "1k", "TEL_TXD_RIG", "TEL_RXD_TGT", "RC0603FR-071KL",
      "UART crossover: rig TXD -> target RXD", "R_H"),
    Part("TP1", "TestPoint", "5V_IN", {"1": "+5V_IN"}, TP_LOOP, "5011"),
    Part("TP2", "TestPoint", "5V_TGT", {"1": "VDD_5V_TGT"}, TP_LOOP, "5011"),
    Part("TP3", "TestPoint", "GND", {"1": "GND"}, TP_LOOP, "5011"),
    Part("TP4", "TestPoint", "MARKER", {"1": "MARKER"}, TP_LOOP, "5011"),
    Part("TP5", "TestPoint", "CHG_DET", {"1": "CHG_DET"}, TP_LOOP, "5011"),
    Part("TP6", "TestPoint", "SCL", {"1": "I2C1_SCL"}, TP_LOOP, "5011"),
    Part("TP7", "TestPoint", "SDA", {"1": "I2C1_SDA"}, TP_LOOP, "5011"),
    Part("TP8", "TestPoint", "KEY_POWER", {"1": "KEY_POWER"}, TP_LOOP, "5011"),
]


def header_parts(rows):
    out = []
    for ref, board, desc in (("J1", "target", "BeagleBone Black (target)"),
                             ("J2", "rig", "BeagleBone Black (rig host)")):
        out.append(Part(ref, f"BBB_{board}", desc,
                        {p.pin: p.net for p in rows if p.board == board},
                        "", "BBONE-BLACK-4G", "P8/P9 headers, only the pins the rig uses"))
    return out


def si(v: str) -> float:
    """A part value's number: '4.7k' -> 4700.0, '40m 1% 1W' -> 0.04, '100n' -> 1e-07"""
    v = v.split()[0]
    mult = {"M": 1e6, "k": 1e3, "m": 1e-3, "u": 1e-6, "n": 1e-9, "p": 1e-12}
    return float(v[:-1]) * mult[v[-1]] if v[-1] in mult else float(v)


def notes(parts: dict[str, Part]) -> dict[str, str]:
    """Each block's design note, its figures computed from the parts' values."""
    v = {ref: p.value for ref, p in parts.items()}
    shunt = si(v["R1"])
    fs, lsb = 81.92e-3 / shunt, 2.5e-6 / shunt
    ib, ic = (3.3 - 0.7) / si(R_BASE), 3.3 / si(R_KEY_PULLUP)
    top, bot = si(v["R8"]), si(v["R9"])
    ratio, par = bot / (top + bot), top * bot / (top + bot)
    tau = par * si(v["C2"])
    return {
        "supply": (f"Shunt R1 {parts['R1'].value}: the INA226 reads ±81.92 mV with a 2.5 µV LSB, so "
                   f"full scale is 81.92 mV / {shunt * 1e3:g} mΩ = {fs:.3f} A (the supply path is "
                   f"rated 2 A) and one LSB is {lsb * 1e6:.1f} µA. Drop at 2 A: "
                   f"{2 * shunt * 1e3:.0f} mV, {4 * shunt * 1e3:.0f} mW. Route VIN+/VIN- as a "
                   "Kelvin pair to R1's pads. A0 = A1 = GND: address 0x40. C1 at the VS pin. "
                   f"I2C1 has no pull-ups on the BeagleBone: {v['R2']} keeps the rise time under "
                   f"300 ns at 100 pF. ALERT is open drain ({v['R4']})."),
        "keys": (f"Per key: an NPN across the target's switch. Base resistor: "
                 f"(3.3 V - 0.7 V) / {R_BASE} = {ib * 1e3:.2f} mA for "
                 f"3.3 V / {R_KEY_PULLUP} = {ic * 1e3:.2f} mA of collector current: "
                 f"forced beta {ic / ib:.1f}, deep saturation. {R_BE} base-emitter: released "
                 "while the rig host boots. Rig GPIO high = pressed; the target reads low."),
        "charger": (f"Q5 switches the bench 5 V onto the charger rail (J4 and the divider; "
                    "< 0.25 V drop at 2 A); R7 holds it off, Q4 (on at 3.3 V) turns it on: "
                    f"GPIO high = plugged in. The rail does not feed the target. Detect divider: 5 V x {v['R9']} / "
                    f"({v['R8']} + {v['R9']}) = {5 * ratio:.2f} V "
                    f"(5.5 V -> {5.5 * ratio:.2f} V), above the AM335x's 2.0 V V_IH, below "
                    f"3.3 V; {par / 1e3:.1f}k x {v['C2']} = {tau * 1e3:.1f} ms "
                    "filters bounce."),
        "marker": (f"{v['R30']} in series: < {3.3 / si(v['R30']) * 1e3:.1f} mA into an "
                   f"unpowered pad. {v['R31']}: the rig reads low while the target is off."),
        "uart": (f"Crossed over: each TXD drives the other board's RXD through {v['R32']} "
                 f"(< {3.3 / si(v['R32']) * 1e3:.1f} mA into an unpowered board, no effect at "
                 "115200 baud)."),
        "rig": ("Rig host BeagleBone: only the P8/P9 pins the rig uses (firmware/pins.tsv). "
                "Its outputs are pulled down at boot: keys released, charger off."),
        "target": ("Target BeagleBone: powered only through P9_5/P9_6 (after the shunt); "
                   "leave its USB client port unplugged."),
        "tp": "Loops for a probe: the shunt's two sides, the marker, the detect line, I2C, a key.",
    }


# --- drawing -----------------------------------------------------------------

def snap(v: float) -> float:
    return round(v / 1.27) * 1.27


def text_box(x, y, text, size, just="left"):
    """Approximate box (x1, y1, x2, y2) of a one-line text at (x, y),
    vertically centred (sheet coordinates, y down)."""
    w = len(text) * FONT_W * size
    h = FONT_H * size
    x1 = x if just == "left" else x - w if just == "right" else x - w / 2
    return (x1, y - h / 2, x1 + w, y + h / 2)


def overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@dataclass
class Block:
    key: str
    title: str
    x1: float
    y1: float
    x2: float
    y2: float
    refs: list[str] = field(default_factory=list)


class Sheet:
    """The drawing: parts, wires, labels and power symbols, in sheet
    coordinates (mm, y down), checked before it is written."""

    def __init__(self, syms: dict[str, Symbol], parts: list[Part]):
        self.syms = syms
        self.parts = {p.ref: p for p in parts}
        self.at: dict[str, tuple[float, float]] = {}
        self.blocks: list[Block] = []
        self.block: Block | None = None
        self.segments: list[tuple[tuple[float, float], tuple[float, float]]] = []
        self.power: list[tuple[str, str, tuple[float, float]]] = []     # ref, net, point
        self.labels: list[tuple[str, tuple[float, float], int, str]] = []
        self.texts: list[tuple[str, tuple[float, float, float, float], str | None]] = []
        self.notes: list[tuple[str, float, float, float, float]] = []
        self.titles: list[tuple[str, float, float]] = []
        self.npwr = self.nflg = 0

    # -- building
    def begin(self, key, title, x1, y1, x2, y2):
        self.block = Block(key, title, x1, y1, x2, y2)
        self.blocks.append(self.block)
        self.titles.append((title, x1 + 2.54, y1 + 3.81))
        self.texts.append((f"title {title}", text_box(x1 + 2.54, y1 + 3.81, title, TITLE_TS),
                           key))

    def note(self, text, x1, y1, x2):
        width = x2 - x1 - 2 * 0.9525
        lines = textwrap.wrap(text, int(width / (FONT_W * TS)))
        y2 = y1 + 2 * 0.9525 + len(lines) * LINE_PITCH * TS + 0.5
        self.notes.append(("\n".join(lines), x1, y1, x2, y2))
        self.texts.append((f"note {self.block.key}", (x1, y1, x2, y2), self.block.key))

    def place(self, ref, x, y):
        assert ref not in self.at, ref
        self.at[ref] = (x, y)
        self.block.refs.append(ref)
        s, p = self.syms[self.parts[ref].sym], self.parts[ref]
        for what, (dx, dy, just), text in (("ref", s.ref_at, p.ref), ("value", s.value_at, p.value)):
            self.texts.append((f"{ref} {what}", text_box(x + dx, y - dy, text, TS, just),
                               self.block.key))
        for sp in s.pins:
            self.texts += [(f"{ref} {t}", b, self.block.key) for t, b in pin_texts(s, sp, x, y)]

    def pin(self, spec: str) -> tuple[float, float]:
        ref, name = spec.split(".")
        x, y = self.at[ref]
        s = self.syms[self.parts[ref].sym]
        sp = next(p for p in s.pins if p.number == name or p.name == name)
        return pt((x + sp.x, y - sp.y))

    def route(self, *pts):
        """A wire through pins ("R1.2"), points (x, y) and half points
        (x, None) / (None, y), which keep the other coordinate."""
        prev = None
        for p in pts:
            if isinstance(p, str):
                p = self.pin(p)
            elif p[0] is None:
                p = (prev[0], p[1])
            elif p[1] is None:
                p = (p[0], prev[1])
            p = (round(p[0], 4), round(p[1], 4))
            if prev is not None and p != prev:
                assert p[0] == prev[0] or p[1] == prev[1], f"wire not orthogonal: {prev} {p}"
                self.segments.append((prev, p))
            prev = p
        return prev

    def rail(self, net, at):
        """A power symbol (or GND) on a wire's point."""
        at = pt(at)
        self.npwr += 1
        ref = f"#PWR{self.npwr:02d}"
        s = self.syms[net]
        x, y = at
        self.power.append((ref, net, at))
        self.at[ref] = at
        self.texts.append((f"{ref} {net}", text_box(x + s.value_at[0], y - s.value_at[1], net, TS,
                                                    "center"), self.block.key))

    def flag(self, at):
        at = pt(at)
        self.nflg += 1
        ref = f"#FLG{self.nflg:02d}"
        self.power.append((ref, "PWR_FLAG", at))
        self.at[ref] = at
        self.texts.append((f"{ref}", text_box(at[0], at[1] - 3.81, "PWR_FLAG", TS, "center"),
                           self.block.key))

    def glabel(self, net, at, left: bool, shape="passive"):
        """A global label on a wire's end; left: the label extends to the left."""
        at = pt(at)
        self.labels.append((net, at, 180 if left else 0, shape))
        w, h = label_size(net)
        x, y = at
        self.texts.append((f"label {net}", (x - w if left else x, y - h / 2, x if left else x + w,
                                            y + h / 2), self.block.key))

    # -- checks
    def check(self):
        errors = []
        # a wire ending on another's middle is a T (split there); a pin or a
        # label there would be a connection nobody drew
        ends = {p for s in self.segments for p in s}
        pinpts = {}
        for ref, (x, y) in self.at.items():
            if ref.startswith("#"):
                continue
            for sp in self.syms[self.parts[ref].sym].pins:
                pinpts[self.pin(f"{ref}.{sp.number}")] = f"{ref}.{sp.number}"
        specials = {at for _, _, at in self.power} | {at for _, at, _, _ in self.labels}
        out = []
        for a, b in self.segments:
            cuts = sorted({p for p in ends | specials if on_segment(p, a, b)})
            for p in pinpts:
                if on_segment(p, a, b):
                    errors.append(f"pin {pinpts[p]} lies on the middle of the wire {a}-{b}")
            pts = [a] + sorted(cuts, key=lambda p: abs(p[0] - a[0]) + abs(p[1] - a[1])) + [b]
            out += [(pts[i], pts[i + 1]) for i in range(len(pts) - 1)]
        self.segments = out
        # connectivity: what is drawn is PARTS's nets
        uf = {}

        def find(p):
            while uf.setdefault(p, p) != p:
                p = uf[p]
            return p

        def join(a, b):
            uf[find(a)] = find(b)
        for a, b in self.segments:
            join(a, b)
        for ref, net, at in self.power:
            if net != "PWR_FLAG":
                join(at, ("net", net))
        for net, at, _, _ in self.labels:
            join(at, ("net", net))
        drawn = {}
        for p, spec in pinpts.items():
            if p not in ends:
                errors.append(f"pin {spec} has no wire")
            ref, num = spec.split(".")
            net = self.parts[ref].nets.get(num)
            drawn.setdefault(find(p), set()).add((ref, num, net))
        want = {}
        for ref, part in self.parts.items():
            for num, net in part.nets.items():
                want.setdefault(net, set()).add((ref, num, net))
        for group in drawn.values():
            nets = {n for _, _, n in group}
            if len(nets) != 1 or group != want[nets.pop()]:
                errors.append(f"drawn connection differs from the parts list: {sorted(group)}")
        for ref in self.parts:
            if ref not in self.at:
                errors.append(f"{ref} is not placed")
        # every part and every text inside its block, and no two texts overlapping
        frames = {b.key: b for b in self.blocks}
        for b in self.blocks:
            for ref in b.refs:
                x, y = self.at[ref]
                s = self.syms[self.parts[ref].sym]
                xs = [x + s.bbox[0], x + s.bbox[2]] + [x + p.x for p in s.pins]
                ys = [y - s.bbox[1], y - s.bbox[3]] + [y - p.y for p in s.pins]
                if not (b.x1 < min(xs) and max(xs) < b.x2 and b.y1 < min(ys) and max(ys) < b.y2):
                    errors.append(f"{ref} is outside its block {b.key}")
        for what, box_, key in self.texts:
            b = frames[key]
            if not (b.x1 < box_[0] and box_[2] < b.x2 and b.y1 < box_[1] and box_[3] < b.y2):
                errors.append(f"{what} is outside its block {key}")
        for i, (wa, ba, _) in enumerate(self.texts):
            for wb, bb, _ in self.texts[i + 1:]:
                if overlap(ba, bb):
                    errors.append(f"texts overlap: {wa} and {wb}")
        for b in self.blocks:
            for c in self.blocks:
                if b is not c and overlap((b.x1, b.y1, b.x2, b.y2), (c.x1, c.y1, c.x2, c.y2)):
                    errors.append(f"blocks overlap: {b.key} {c.key}")
        if errors:
            raise SystemExit("gen_schematic.py: the drawing is wrong:\n  " + "\n  ".join(errors))


def pt(p) -> tuple[float, float]:
    return (round(p[0], 4), round(p[1], 4))


def label_size(text: str) -> tuple[float, float]:
    """A global label's outline: the text, KiCad's margin of 0.375 x size
    round it and the arrow's point."""
    half = (0.5 + 0.375) * TS
    return len(text) * FONT_W * TS + 2 * half + 0.5, 2 * half


def on_segment(p, a, b) -> bool:
    """p strictly inside the orthogonal segment a-b."""
    if p in (a, b):
        return False
    if a[0] == b[0] == p[0]:
        return min(a[1], b[1]) < p[1] < max(a[1], b[1])
    if a[1] == b[1] == p[1]:
        return min(a[0], b[0]) < p[0] < max(a[0], b[0])
    return False


def pin_texts(s: Symbol, sp: SymPin, x, y):
    """Where KiCad draws a pin's name (inside the body, 0.508 from the
    pin's inner end) and number (centred on the pin, beside its line)."""
    out = []
    px, py = x + sp.x, y - sp.y
    d = {0: (1, 0), 180: (-1, 0), 90: (0, -1), 270: (0, 1)}[sp.angle]   # sheet direction inward
    ix, iy = px + d[0] * sp.length, py + d[1] * sp.length
    mx, my = (px + ix) / 2, (py + iy) / 2
    horiz = sp.angle in (0, 180)
    if s.show_names and sp.name != "~":
        w = len(sp.name) * FONT_W * TS
        h = FONT_H * TS
        if horiz:
            x1 = ix + 0.508 if d[0] > 0 else ix - 0.508 - w
            out.append((f"pin {sp.number} name", (x1, iy - h / 2, x1 + w, iy + h / 2)))
        else:
            y1 = iy + 0.508 if d[1] > 0 else iy - 0.508 - w
            out.append((f"pin {sp.number} name", (ix - h / 2, y1, ix + h / 2, y1 + w)))
    if s.show_numbers:
        w = len(sp.number) * FONT_W * TS
        h = FONT_H * TS
        if horiz:
            out.append((f"pin {sp.number} number", (mx - w / 2, my - 0.254 - h, mx + w / 2,
                                                     my - 0.254)))
        else:
            out.append((f"pin {sp.number} number", (mx - 0.254 - h, my - w / 2, mx - 0.254,
                                                     my + w / 2)))
    return out


def draw_blocks(sh: Sheet, rows: list[pins.Pin]):
    """The sheet's layout (A3, mm from the top left, on KiCad's 1.27 mm
    connection grid): the supply path and the charger along the top, then
    left to right the rig host's header (with the test points below it),
    the key drivers, the marker and UART blocks, the target's header. A
    global label's shape says which way the signal goes, from the pin
    table's direction at the header (an output there is an input in the
    circuit block)."""
    N = notes(sh.parts)
    board_of = {p.net: p for p in rows}

    def shape(net, at_header):
        p = board_of.get(net)
        if p is None:
            return "passive"
        d = {"out": "output", "in": "input", "io": "bidirectional"}.get(p.dir, "passive")
        if not at_header:
            d = {"output": "input", "input": "output"}.get(d, d)
        return d

    # -- the supply path (top left): 5 V in, shunt, INA226
    sh.begin("supply", "Supply path and current sense", 15.24, 15.24, 208.28, 106.68)
    UX, UY = 106.68, 81.28
    RY = 43.18
    sh.place("J3", 27.94, RY)
    sh.place("R1", UX, RY)
    sh.place("U1", UX, UY)
    sh.route("J3.1", (UX - 7.62, RY), "R1.1")
    sh.rail("+5V_IN", (40.64, RY))
    sh.flag((53.34, RY))
    sh.route("U1.VIN+", (UX - 7.62, RY))
    sh.route("R1.2", (UX + 7.62, RY), (137.16, RY))
    sh.route("U1.VIN-", (UX + 7.62, RY))
    sh.route("U1.VBUS", (None, UY - 17.78), (UX + 7.62, None))
    sh.flag((124.46, RY))
    sh.rail("VDD_5V_TGT", (137.16, RY))
    sh.route("J3.2", (35.56, None), (None, RY + 7.62))
    sh.rail("GND", (35.56, RY + 7.62))
    # address straps and ground
    gy = UY + 17.78
    sh.route((UX - 15.24, gy), (UX - 7.62, gy), (UX + 7.62, gy), "U1.GND")
    sh.route("U1.A1", (None, gy))
    sh.route("U1.A0", (None, gy))
    sh.rail("GND", (UX + 2.54, gy))
    sh.flag((UX - 15.24, gy))
    # VS and its decoupling
    sh.place("C1", UX + 20.32, UY + 2.54)
    sh.route("U1.VS", "C1.1")
    sh.rail("+3V3_RIG", (UX + 20.32, UY - 2.54))
    sh.route("C1.2", (None, gy))
    sh.rail("GND", (UX + 20.32, gy))
    # I2C and ALERT to the rig host, with their pull-ups
    lx = 50.8
    for ref, pin_, dx in (("R2", "SCL", 22.86), ("R3", "SDA", 33.02), ("R4", "ALERT", 43.18)):
        sh.place(ref, UX - dx, UY - 12.7)
        end = sh.route(f"U1.{pin_}", (lx, None))
        net = sh.parts["U1"].nets[next(p.number for p in sh.syms["INA226"].pins if p.name == pin_)]
        sh.glabel(net, end, left=True, shape=shape(net, False))
        sh.route(f"{ref}.2", (None, end[1]))
    sh.route("R4.1", "R3.1", "R2.1")
    sh.rail("+3V3_RIG", sh.pin("R4.1"))
    sh.note(N["supply"], 147.32, 22.86, 205.74)

    # -- the charger switch and its detect divider (top right)
    sh.begin("charger", "Charger switch and detect divider", 213.36, 15.24, 406.4, 106.68)
    QX, QY = 269.24, 45.72
    sh.place("Q5", QX, QY)
    sh.place("R7", QX - 10.16, QY - 5.08)
    sh.route("R7.1", (None, QY - 12.7), (QX + 2.54, None), "Q5.S")
    sh.rail("+5V_IN", (QX - 2.54, QY - 12.7))
    sh.route("R7.2", "Q5.G")
    sh.place("Q4", QX - 10.16, QY + 15.24)
    sh.route((QX - 7.62, QY), "Q4.D")
    sh.route("Q4.S", (None, QY + 27.94))
    sh.rail("GND", (QX - 7.62, QY + 27.94))
    sh.place("R5", QX - 30.48, QY + 15.24)
    sh.place("R6", QX - 22.86, QY + 20.32)
    sh.route("R5.2", "R6.1", "Q4.G")
    sh.route("R6.2", (None, QY + 27.94))
    sh.rail("GND", (QX - 22.86, QY + 27.94))
    end = sh.route("R5.1", (QX - 43.18, None))
    sh.glabel("CHG_EN", end, left=True, shape=shape("CHG_EN", False))
    sh.place("R8", QX + 17.78, QY + 15.24)
    sh.place("R9", QX + 17.78, QY + 30.48)
    sh.place("C2", QX + 30.48, QY + 30.48)
    sh.place("J4", QX + 45.72, QY + 10.16)
    sh.route("Q5.D", (None, QY + 10.16), "R8.1", "J4.1")
    sh.route("J4.2", (QX + 35.56, None), (None, QY + 17.78))
    sh.rail("GND", (QX + 35.56, QY + 17.78))
    sh.route("R8.2", "R9.1")
    end = sh.route((QX + 17.78, QY + 22.86), (QX + 30.48, None), "C2.1")
    end = sh.route((QX + 30.48, QY + 22.86), (QX + 48.26, None))
    sh.glabel("CHG_DET", end, left=False, shape=shape("CHG_DET", False))
    sh.route("R9.2", (None, QY + 40.64), (QX + 30.48, None), "C2.2")
    sh.rail("GND", (QX + 25.4, QY + 40.64))
    sh.note(N["charger"], 340.36, 22.86, 403.86)

    # -- the rig host's header (left)

    def header(board, x, y1, y2, title):
        """A header subset at x (its centre), its pins facing the circuits:
        a wire and a global label per signal, the rails' power symbols on
        short wires above their pins, ground below."""
        if board == "rig":
            sh.begin(board, title, 15.24, y1, x + 45.72, y2)
        else:
            sh.begin(board, title, x - 60.96, y1, x + 27.94, y2)
        ref = {"rig": "J2", "target": "J1"}[board]
        s = sh.syms[sh.parts[ref].sym]
        top = y1 + 12.7 + s.bbox[1]
        sh.place(ref, x, snap(top))
        sgn = 1 if board == "rig" else -1
        groups = {}
        for p in header_rows(board, rows):
            if p is None:
                continue
            pt = sh.pin(f"{ref}.{p.pin}")
            if p.dir in ("power", "ground"):
                groups.setdefault(p.net, []).append(pt)
                continue
            end = sh.route(pt, (pt[0] + sgn * 10.16, None))
            sh.glabel(p.net, end, left=(board == "target"), shape=shape(p.net, True))
        for net, pts in groups.items():
            # a rail on several pins is joined further out, so its symbol
            # and name stay clear of the rail above it
            cx = pts[0][0] + sgn * (15.24 if len(pts) > 1 and net != "GND" else 5.08)
            for pt in pts:
                sh.route(pt, (cx, None))
            if net == "GND":
                end = sh.route((cx, pts[0][1]), (None, pts[-1][1] + 5.08))
                sh.rail("GND", end)
            else:
                if len(pts) > 1:
                    sh.route((cx, pts[0][1]), (None, pts[-1][1]))
                sh.rail(net, (cx, pts[0][1]))
        return sh.block

    b = header("rig", 30.48, 111.76, 200.66, "Rig host (BeagleBone J2)")
    sh.note(N["rig"], 17.78, b.y2 - 22.86, b.x2 - 2.54)

    # -- the key drivers: one transistor stage per key, next to its switch
    sh.begin("keys", "Key drivers: a transistor across each key", 78.74, 111.76,
             223.52, 284.48)
    for n, (key, drv) in enumerate(KEYS, start=1):
        SX, SY = 134.62, 156.21 + (n - 1) * 52.07
        i = 2 * n
        q, rb, rbe, sw, rpu = f"Q{n}", f"R{10 + i}", f"R{11 + i}", f"SW{n}", f"R{20 + n}"
        KX = SX + 20.32
        sh.place(q, SX, SY)
        sh.place(rb, SX - 17.78, SY)
        sh.place(rbe, SX - 10.16, SY + 5.08)
        sh.place(sw, KX, SY - 2.54)
        sh.place(rpu, KX, SY - 22.86)
        sh.route(f"{rb}.2", f"{rbe}.1", f"{q}.B")
        end = sh.route(f"{rb}.1", (SX - 30.48, None))
        sh.glabel(drv, end, left=True, shape=shape(drv, False))
        gy = SY + 12.7
        sh.route(f"{rbe}.2", (None, gy), (KX, None), f"{sw}.2")
        sh.route(f"{q}.E", (None, gy))
        sh.rail("GND", (SX + 10.16, gy))
        sh.route(f"{rpu}.2", f"{sw}.1")
        sh.route(f"{q}.C", (None, SY - 10.16), (KX, None))
        end = sh.route((KX, SY - 15.24), (KX + 12.7, None))
        sh.glabel(key, end, left=False, shape=shape(key, False))
        sh.route(f"{rpu}.1", (None, SY - 30.48))
        sh.rail("+3V3_TGT", (KX, SY - 30.48))
    sh.note(N["keys"], 184.15, 124.46, 220.98)

    # -- the marker line and the telemetry UART (middle right)
    sh.begin("marker", "Marker line", 226.06, 111.76, 302.26, 165.1)
    MX, MY = 264.16, 129.54
    sh.place("R30", MX, MY)
    sh.place("R31", MX - 12.7, MY + 5.08)
    end = sh.route("R30.1", "R31.1", (MX - 20.32, None))
    sh.glabel("MARKER", end, left=True, shape=shape("MARKER", False))
    end = sh.route("R30.2", (MX + 12.7, None))
    sh.glabel("MARKER_TGT", end, left=False, shape=shape("MARKER_TGT", False))
    sh.route("R31.2", (None, MY + 12.7))
    sh.rail("GND", (MX - 12.7, MY + 12.7))
    sh.note(N["marker"], 228.6, 149.86, 299.72)

    sh.begin("uart", "Telemetry UART crossover", 226.06, 170.18, 302.26, 223.52)
    for ref, y, left, right in (("R33", 185.42, "TEL_TXD_RIG", "TEL_RXD_TGT"),
                                ("R32", 195.58, "TEL_RXD_RIG", "TEL_TXD_TGT")):
        sh.place(ref, 264.16, y)
        end = sh.route(f"{ref}.1", (248.92, None))
        sh.glabel(left, end, left=True, shape=shape(left, False))
        end = sh.route(f"{ref}.2", (279.4, None))
        sh.glabel(right, end, left=False, shape=shape(right, False))
    sh.note(N["uart"], 228.6, 203.2, 299.72)

    # -- the target's header (right)
    b = header("target", 378.46, 111.76, 205.74, "Target (BeagleBone J1)")
    sh.note(N["target"], b.x1 + 2.54, b.y2 - 17.78, b.x2 - 2.54)

    # -- test points (bottom left)
    sh.begin("tp", "Test points", 15.24, 205.74, 76.2, 284.48)
    y = 218.44
    for ref in ("TP1", "TP2", "TP4", "TP5", "TP6", "TP7", "TP8", "TP3"):
        net = sh.parts[ref].nets["1"]
        sh.place(ref, 58.42, y)
        end = sh.route(f"{ref}.1", (43.18, None))
        if net in RAILS:
            sh.rail(net, end)
        else:
            sh.glabel(net, end, left=True)
        y += 6.35
    sh.note(N["tp"], 17.78, y + 2.54, 73.66)


def schematic(rows) -> tuple[str, str, Sheet]:
    syms = dict(SYMBOLS)
    for board in ("target", "rig"):
        s = header_symbol(board, rows)
        syms[s.name] = s
    parts = header_parts(rows) + PARTS
    sh = Sheet(syms, parts)
    draw_blocks(sh, rows)
    sh.check()
    root = uid("root")
    used = sorted({p.sym for p in parts} | {n for _, n, _ in sh.power})
    lib = ["(kicad_symbol_lib (version 20241209) (generator \"sbrig_gen_schematic\") "
           "(generator_version \"9.0\")"]
    lib += [sym_text(syms[n], False) for n in used]
    lib.append(")")
    out = [f"(kicad_sch (version 20250114) (generator \"sbrig_gen_schematic\") "
           f"(generator_version \"9.0\") (uuid {q(root)}) (paper \"A3\")",
           "(title_block (title \"sbrig BeagleBone rig\") (rev \"2\") "
           "(company \"sbrig\") (comment 1 \"Generated by schematics/gen_schematic.py from "
           "firmware/pins.tsv: do not edit\"))",
           "(lib_symbols"]
    out += [sym_text(syms[n], True) for n in used]
    out.append(")")

    def instance(ref, lib_id, x, y, props, pins_, power):
        o = [f"(symbol (lib_id {q(LIB + ':' + lib_id)}) (at {f(x)} {f(y)} 0) (unit 1) "
             f"(exclude_from_sim no) (in_bom {'no' if power else 'yes'}) "
             f"(on_board {'no' if power else 'yes'}) (dnp no) (uuid {q(uid('sym', ref))})"]
        for key, val, px, py, just, hid in props:
            o.append(f"(property {q(key)} {q(val)} (at {f(px)} {f(py)} 0) "
                     f"(effects (font (size {TS} {TS})){'' if just == 'center' else f' (justify {just})'}"
                     f"{' (hide yes)' if hid else ''}))")
        for p in pins_:
            o.append(f"(pin {q(p.number)} (uuid {q(uid('pin', ref, p.number))}))")
        o.append(f"(instances (project {q(PROJECT)} (path {q('/' + root)} "
                 f"(reference {q(ref)}) (unit 1))))")
        o.append(")")
        return " ".join(o)

    for b in sh.blocks:
        out.append(f"(rectangle (start {f(b.x1)} {f(b.y1)}) (end {f(b.x2)} {f(b.y2)}) "
                   f"(stroke (width 0.254) (type dash)) (fill (type none)) "
                   f"(uuid {q(uid('frame', b.key))}))")
    for title, x, y in sh.titles:
        out.append(f"(text {q(title)} (exclude_from_sim no) (at {f(x)} {f(y)} 0) "
                   f"(effects (font (size {TITLE_TS} {TITLE_TS}) (bold yes)) (justify left)) "
                   f"(uuid {q(uid('title', title))}))")
    for text, x1, y1, x2, y2 in sh.notes:
        out.append(f"(text_box {q(text)} (exclude_from_sim no) (at {f(x1)} {f(y1)} 0) "
                   f"(size {f(x2 - x1)} {f(y2 - y1)}) (margins 0.9525 0.9525 0.9525 0.9525) "
                   f"(stroke (width 0) (type solid)) (fill (type none)) "
                   f"(effects (font (size {TS} {TS})) (justify left top)) "
                   f"(uuid {q(uid('note', x1, y1))}))")
    for ref, part in sh.parts.items():
        x, y = sh.at[ref]
        s = syms[part.sym]
        props = [("Reference", part.ref, x + s.ref_at[0], y - s.ref_at[1], s.ref_at[2], False),
                 ("Value", part.value, x + s.value_at[0], y - s.value_at[1], s.value_at[2], False),
                 ("Footprint", "", x, y, "center", True),
                 ("Package", part.footprint, x, y, "center", True),
                 ("Datasheet", "~", x, y, "center", True),
                 ("Description", s.description, x, y, "center", True),
                 ("MPN", part.mpn, x, y, "center", True),
                 ("Note", part.note, x, y, "center", True)]
        out.append(instance(ref, part.sym, x, y, props, s.pins, False))
    for ref, net, (x, y) in sh.power:
        s = syms[net]
        props = [("Reference", ref, x, y, "center", True),
                 ("Value", net, x + s.value_at[0], y - s.value_at[1], "center", False),
                 ("Footprint", "", x, y, "center", True),
                 ("Datasheet", "~", x, y, "center", True),
                 ("Description", s.description, x, y, "center", True)]
        out.append(instance(ref, net, x, y, props, s.pins, True))
    for a, b in sh.segments:
        out.append(f"(wire (pts (xy {f(a[0])} {f(a[1])}) (xy {f(b[0])} {f(b[1])})) "
                   f"(stroke (width 0) (type default)) (uuid {q(uid('wire', a, b))}))")
    # a junction where three or more things meet
    count = {}
    for a, b in sh.segments:
        for p in (a, b):
            count[p] = count.get(p, 0) + 1
    for ref, (x, y) in sh.at.items():
        if ref.startswith("#"):
            continue
        for sp in syms[sh.parts[ref].sym].pins:
            p = sh.pin(f"{ref}.{sp.number}")
            count[p] = count.get(p, 0) + 1
    for _, _, p in sh.power:
        count[p] = count.get(p, 0) + 1
    for p, n in sorted(count.items()):
        if n >= 3:
            out.append(f"(junction (at {f(p[0])} {f(p[1])}) (diameter 0) (color 0 0 0 0) "
                       f"(uuid {q(uid('junction', p))}))")
    for net, (x, y), ang, shp in sh.labels:
        just = "right" if ang == 180 else "left"
        out.append(f"(global_label {q(net)} (shape {shp}) (at {f(x)} {f(y)} {ang}) "
                   f"(fields_autoplaced yes) (effects (font (size {TS} {TS})) (justify {just})) "
                   f"(uuid {q(uid('glabel', net, x, y))}) "
                   f"(property \"Intersheetrefs\" \"${{INTERSHEET_REFS}}\" (at {f(x)} {f(y)} 0) "
                   f"(effects (font (size {TS} {TS})) (hide yes))))")
    out.append("(sheet_instances (path \"/\" (page \"1\")))")
    out.append("(embedded_fonts no)")
    out.append(")")
    return "\n".join(out) + "\n", "\n".join(lib) + "\n", sh


def block_diagram(sh: Sheet) -> str:
    """exports/sbrig-rig-blocks.svg: the rig host's header on the left, the
    circuit blocks in the middle (top to bottom as on the sheet), the
    target's header on the right; a line for each pair of blocks that share
    a net (a global label or a rail's power symbol in both; ground joins
    them all and is left out), named by those nets."""
    nets: dict[str, set[str]] = {}

    def block_at(p):
        return next(b.key for b in sh.blocks if b.x1 <= p[0] <= b.x2 and b.y1 <= p[1] <= b.y2)
    for net, at, _, _ in sh.labels:
        nets.setdefault(net, set()).add(block_at(at))
    for _, net, at in sh.power:
        if net not in ("GND", "PWR_FLAG"):
            nets.setdefault(net, set()).add(block_at(at))
    share: dict[tuple[str, str], list[str]] = {}
    for net, keys in sorted(nets.items()):
        for a in sorted(keys):
            for b in sorted(keys):
                if a < b:
                    share.setdefault((a, b), []).append(net)
    by = {b.key: b for b in sh.blocks}
    middle = [k for k in ("supply", "charger", "keys", "marker", "uart") if k in by]
    esc = lambda t: t.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")  # noqa: E731
    W, MX1, MX2, BH, GAP = 1000, 320, 680, 72, 24
    H = 40 + len(middle) * (BH + GAP) + 90
    box = {"rig": (20, 30, 210, H - 110), "target": (W - 210, 30, W - 20, H - 110)}
    for i, k in enumerate(middle):
        y = 30 + i * (BH + GAP)
        box[k] = (MX1, y, MX2, y + BH)
    box["tp"] = (20, H - 80, W - 20, H - 20)
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
         f'viewBox="0 0 {W} {H}" font-family="sans-serif">',
         "<title>sbrig rig: block diagram (generated by schematics/gen_schematic.py)</title>",
         f'<rect width="{W}" height="{H}" fill="white"/>']

    def netlist_text(x, y, names, anchor="middle"):
        for i, n in enumerate(names):
            o.append(f'<text x="{x:g}" y="{y - 4 - (len(names) - 1 - i) * 13:g}" font-size="11" '
                     f'text-anchor="{anchor}" fill="#633">{esc(n)}</text>')
    for (a, b), names in sorted(share.items()):
        if "tp" in (a, b):
            continue
        side = "rig" if "rig" in (a, b) else "target" if "target" in (a, b) else None
        k = b if a == side else a
        if side and k in middle:
            y = (box[k][1] + box[k][3]) / 2
            x1, x2 = (box["rig"][2], box[k][0]) if side == "rig" else (box[k][2], box["target"][0])
            o.append(f'<line x1="{x1}" y1="{y:g}" x2="{x2}" y2="{y:g}" stroke="#633" '
                     'stroke-width="1.5"/>')
            netlist_text((x1 + x2) / 2, y, names)
        elif a in middle and b in middle:
            i, j = sorted((middle.index(a), middle.index(b)))
            x = MX2 - 30
            y1, y2 = box[middle[i]][3], box[middle[j]][1]
            o.append(f'<line x1="{x}" y1="{y1}" x2="{x}" y2="{y2}" stroke="#633" '
                     'stroke-width="1.5"/>')
            netlist_text(x - 6, (y1 + y2) / 2 + 10, names, anchor="end")
    for k, (x1, y1, x2, y2) in box.items():
        b = by[k]
        o.append(f'<rect x="{x1}" y="{y1}" width="{x2 - x1}" height="{y2 - y1}" '
                 'fill="#f4f8ff" stroke="#335" stroke-width="2" rx="4"/>')
        o.append(f'<text x="{x1 + 8}" y="{y1 + 20}" font-size="14" font-weight="bold">'
                 f'{esc(b.title)}</text>')
        refs = ", ".join(r_ for r_ in b.refs)
        width = int((x2 - x1 - 16) / 6.6)
        for i, line in enumerate(textwrap.wrap(refs, width)):
            o.append(f'<text x="{x1 + 8}" y="{y1 + 38 + i * 14}" font-size="11" '
                     f'fill="#333">{esc(line)}</text>')
    probed = sorted(n for n, keys in nets.items() if "tp" in keys)
    o.append(f'<text x="{box["tp"][0] + 8}" y="{box["tp"][1] + 52}" font-size="11" fill="#633">'
             f'on {esc(", ".join(probed))} and GND</text>')
    o.append("</svg>")
    return "\n".join(o) + "\n"


PROJECT_FILE = """{
  "meta": {
    "filename": "sbrig-rig.kicad_pro",
    "version": 3
  },
  "schematic": {
    "legacy_lib_dir": "",
    "legacy_lib_list": []
  },
  "sheets": [
    [
      "%s",
      "Root"
    ]
  ]
}
"""

SYM_LIB_TABLE = """(sym_lib_table
  (version 7)
  (lib (name "sbrig")(type "KiCad")(uri "${KIPRJMOD}/sbrig.kicad_sym")(options "")(descr "sbrig rig parts, written by gen_schematic.py"))
)
"""


def write(outdir: Path) -> list[Path]:
    rows, errors = pins.load_table()
    if errors:
        raise SystemExit("\n".join(errors))
    sch, lib, sh = schematic(rows)
    files = {f"{PROJECT}.kicad_sch": sch, "sbrig.kicad_sym": lib,
             f"{PROJECT}.kicad_pro": PROJECT_FILE % uid("root"),
             "sym-lib-table": SYM_LIB_TABLE,
             f"exports/{PROJECT}-blocks.svg": block_diagram(sh)}
    (outdir / "exports").mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (outdir / name).write_text(text)
    return [outdir / n for n in files]


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE
    for f_ in write(out):
        print(f_)
