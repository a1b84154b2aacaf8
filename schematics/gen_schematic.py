#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Writes the rig's KiCad 9 project (sbrig-rig.kicad_sch and its library).

The schematic is generated, not drawn: the two BeagleBone header symbols
come from firmware/pins.tsv (one pin per table row of that board), and the
parts and their nets are the list PARTS below. Every pin gets a net label
on its connection point, so the connectivity is exactly this file's. Edit
this file (or the pin table), then run ``make -C schematics`` to rewrite
the project and its exports; tests/test_schematics.py fails when the
committed files are stale.

Symbols are defined here too (sbrig.kicad_sym, the project's own library,
embedded in the schematic as KiCad does), so the project needs no KiCad
symbol library package.
"""

from __future__ import annotations

import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "firmware"))
import pins  # noqa: E402

PROJECT = "sbrig-rig"
LIB = "sbrig"
NS = uuid.UUID("6b1f6d8e-2f55-4f0e-9c55-5b7c1d3a0e12")


def uid(*parts) -> str:
    return str(uuid.uuid5(NS, "/".join(str(p) for p in parts)))


def q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


# --- symbols -----------------------------------------------------------------

@dataclass
class SymPin:
    number: str
    name: str
    etype: str      # passive, power_in, power_out, input, bidirectional, open_collector
    x: float        # connection point, symbol coordinates (y up)
    y: float
    angle: int      # direction from the connection point into the body


@dataclass
class Symbol:
    name: str
    ref: str
    pins: list[SymPin]
    body: tuple[float, float, float, float]     # rectangle x1 y1 x2 y2
    power: bool = False
    description: str = ""


def two_pin(name, ref, desc):
    return Symbol(name, ref, [SymPin("1", "~", "passive", 0, 3.81, 270),
                              SymPin("2", "~", "passive", 0, -3.81, 90)],
                  (-1.016, 2.54, 1.016, -2.54), description=desc)


def box(name, ref, left, right, desc, width=15.24):
    """A box symbol: pins [(number, name, type)] on the left and right."""
    n = max(len(left), len(right))
    h = (n + 1) * 2.54
    top = round(h / 2 / 2.54) * 2.54
    sp = []
    for i, (num, nm, t) in enumerate(left):
        sp.append(SymPin(num, nm, t, -width / 2 - 2.54, top - (i + 1) * 2.54, 0))
    for i, (num, nm, t) in enumerate(right):
        sp.append(SymPin(num, nm, t, width / 2 + 2.54, top - (i + 1) * 2.54, 180))
    return Symbol(name, ref, sp, (-width / 2, top, width / 2, top - h), description=desc)


# What the non-GPIO pads of the table are in their mode (AM335x datasheet)
PAD_FUNCTION = {("uart1_txd", 0): "UART1_TXD", ("uart1_rxd", 0): "UART1_RXD",
                ("spi0_cs0", 2): "I2C1_SCL", ("spi0_d1", 2): "I2C1_SDA"}


def header_symbol(board: str, rows: list[pins.Pin]) -> Symbol:
    """The subset of a BeagleBone Black's P8/P9 headers the rig uses."""
    seen, left = set(), []
    for p in sorted(rows, key=lambda p: (p.pin[:2], int(p.pin[3:]))):
        if p.board != board or p.pin in seen:
            continue
        seen.add(p.pin)
        name = {"power": p.net, "ground": "DGND"}.get(p.dir) or \
            (p.gpio_name.upper() if p.gpio else
             PAD_FUNCTION.get((p.pad, p.mode), f"{p.pad.upper()}_M{p.mode}"))
        etype = "power_out" if p.dir == "power" and p.net.startswith("+3V3") else "passive"
        left.append((p.pin, name, etype))
    title = "target" if board == "target" else "rig host"
    return box(f"BBB_{board}", "J", [], left,
               f"BeagleBone Black ({title}): the P8/P9 pins the rig uses", width=20.32)


SYMBOLS = {
    "R": two_pin("R", "R", "Resistor"),
    "C": two_pin("C", "C", "Capacitor"),
    "SW_Push": two_pin("SW_Push", "SW", "Push button, normally open"),
    "NPN": box("NPN", "Q", [("1", "B", "input")], [("3", "C", "passive"),
                                                    ("2", "E", "passive")],
               "NPN transistor (SOT-23: 1 B, 2 E, 3 C)", width=7.62),
    "NMOS": box("NMOS", "Q", [("1", "G", "input")], [("3", "D", "passive"),
                                                      ("2", "S", "passive")],
                "N-channel MOSFET (SOT-23: 1 G, 2 S, 3 D)", width=7.62),
    "PMOS": box("PMOS", "Q", [("1", "G", "input")], [("2", "S", "passive"),
                                                      ("3", "D", "passive")],
                "P-channel MOSFET (SOT-23: 1 G, 2 S, 3 D)", width=7.62),
    "INA226": box("INA226", "U",
                  [("10", "VIN+", "input"), ("9", "VIN-", "input"), ("1", "VBUS", "input"),
                   ("2", "A1", "input"), ("3", "A0", "input")],
                  [("6", "VS", "power_in"), ("4", "SCL", "input"), ("5", "SDA", "bidirectional"),
                   ("7", "ALERT", "open_collector"), ("8", "GND", "power_in")],
                  "INA226 current/power monitor, I2C (VSSOP-10)"),
    "Conn_01x02": box("Conn_01x02", "J", [("1", "1", "passive"), ("2", "2", "passive")], [],
                      "Connector, 2 pins", width=5.08),
    "TestPoint": Symbol("TestPoint", "TP", [SymPin("1", "1", "passive", 0, -2.54, 90)],
                        (-0.762, 0.762, 0.762, -0.762), description="Test point"),
    "PWR_FLAG": Symbol("PWR_FLAG", "#FLG", [SymPin("1", "~", "power_out", 0, -2.54, 90)],
                       (-0.762, 0.762, 0.762, -0.762), power=True,
                       description="Marks a net as driven by a power source (ERC)"),
}


def sym_text(s: Symbol, embedded: bool) -> str:
    name = f"{LIB}:{s.name}" if embedded else s.name
    hide = " (hide yes)" if s.power or s.name in ("R", "C", "SW_Push") else ""
    lines = [f"(symbol {q(name)}"]
    if s.power:
        lines.append("(power)")
    lines.append(f"(pin_names (offset 0.508){' (hide yes)' if s.power else ''})")
    if s.power or s.name in ("R", "C", "SW_Push", "TestPoint"):
        lines.append("(pin_numbers (hide yes))")
    lines += ["(exclude_from_sim no)", "(in_bom " + ("no" if s.power else "yes") + ")",
              "(on_board " + ("no" if s.power else "yes") + ")"]
    for key, val, dy, hid in (("Reference", s.ref, 2.54, s.power), ("Value", s.name, -2.54, False),
                              ("Footprint", "", 0, True), ("Datasheet", "~", 0, True),
                              ("Description", s.description, 0, True)):
        x1, y1, x2, y2 = s.body
        y = (y1 + 1.27) if dy > 0 else (y2 - 1.27) if dy < 0 else 0
        lines.append(f"(property {q(key)} {q(val)} (at {x2 + 1.27:g} {y:g} 0) "
                     f"(effects (font (size 1.27 1.27)) (justify left){' (hide yes)' if hid else ''}))")
    x1, y1, x2, y2 = s.body
    lines.append(f"(symbol {q(s.name + '_0_1')} (rectangle (start {x1:g} {y1:g}) (end {x2:g} {y2:g}) "
                 "(stroke (width 0.254) (type default)) (fill (type background))))")
    pl = [f"(symbol {q(s.name + '_1_1')}"]
    for p in s.pins:
        length = 2.54 if s.name not in ("R", "C", "SW_Push") else 1.27
        if s.name in ("TestPoint", "PWR_FLAG"):
            length = 1.778
        pl.append(f"(pin {p.etype} line (at {p.x:g} {p.y:g} {p.angle}) (length {length:g})"
                  f"{hide} (name {q(p.name)} (effects (font (size 1.27 1.27)))) "
                  f"(number {q(p.number)} (effects (font (size 1.27 1.27)))))")
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


def r(ref, value, a, b, mpn, note=""):
    return Part(ref, "R", value, {"1": a, "2": b}, R0603, mpn, note)


def key_parts(n, key, drv):
    """The rig host's transistor across one of the target's keys."""
    base = f"{key}_B"
    i = 2 * n
    return [
        Part(f"Q{n}", "NPN", "MMBT3904", {"1": base, "3": key, "2": "GND"}, SOT23,
             "MMBT3904LT1G", "shorts the key when the rig drives its line high"),
        r(f"R{10 + i}", "4.7k", drv, base, "RC0603FR-074K7L", "base resistor: 0.55 mA"),
        r(f"R{11 + i}", "100k", base, "GND", "RC0603FR-07100KL", "holds the transistor off"),
        Part(f"SW{n}", "SW_Push", "SW_Push", {"1": key, "2": "GND"},
             "Button_Switch_SMD:SW_SPST_TL3342", "TL3342F160QG", "the key itself"),
        r(f"R{20 + n}", "10k", "+3V3_TGT", key, "RC0603FR-0710KL", "key pull-up"),
    ]


PARTS = [
    Part("J3", "Conn_01x02", "5V 2A in", {"1": "+5V_IN", "2": "GND"},
         "TerminalBlock:TerminalBlock_bornier-2_P5.08mm", "1935161",
         "bench supply, 5 V, at least 2 A"),
    Part("R1", "R", "40m 1% 1W", {"1": "+5V_IN", "2": "VDD_5V_TGT"},
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
    *key_parts(1, "KEY_POWER", "KEY_POWER_DRV"),
    *key_parts(2, "KEY_VOLUP", "KEY_VOLUP_DRV"),
    *key_parts(3, "KEY_VOLDN", "KEY_VOLDN_DRV"),
    # the charger: rig GPIO -> N-MOSFET -> P-MOSFET high-side load switch
    r("R5", "100", "CHG_EN", "CHG_EN_G", "RC0603FR-07100RL", "gate series resistor"),
    r("R6", "100k", "CHG_EN_G", "GND", "RC0603FR-07100KL", "charger off while the rig host boots"),
    Part("Q4", "NMOS", "BSS138", {"1": "CHG_EN_G", "3": "CHG_GATE", "2": "GND"}, SOT23,
         "BSS138", "pulls the P-MOSFET's gate low: Vgs(th) <= 1.5 V, driven at 3.3 V"),
    r("R7", "100k", "+5V_IN", "CHG_GATE", "RC0603FR-07100KL", "holds the P-MOSFET off"),
    Part("Q5", "PMOS", "AO3401A", {"1": "CHG_GATE", "2": "+5V_IN", "3": "CHG_5V"}, SOT23,
         "AO3401A", "charger load switch: 30 V, 4 A, < 60 mOhm at Vgs = -4.5 V"),
    Part("J4", "Conn_01x02", "charger out", {"1": "CHG_5V", "2": "GND"},
         "TerminalBlock:TerminalBlock_bornier-2_P5.08mm", "1935161",
         "switched charger rail, for an optional load; does not power the target"),
    r("R8", "15k", "CHG_5V", "CHG_DET", "RC0603FR-0715KL", "charger-detect divider, top"),
    r("R9", "22k", "CHG_DET", "GND", "RC0603FR-0722KL", "divider, bottom: 5 V -> 2.97 V"),
    Part("C2", "C", "100n", {"1": "CHG_DET", "2": "GND"}, C0603, "GCM188R71H104KA57D",
         "detect filter, 0.9 ms"),
    # marker and telemetry: series resistors, so an unpowered board is not
    # powered through its pins
    r("R30", "1k", "MARKER_TGT", "MARKER", "RC0603FR-071KL", "marker series resistor"),
    r("R31", "100k", "MARKER", "GND", "RC0603FR-07100KL", "marker reads low with the target off"),
    r("R32", "1k", "TEL_TXD_TGT", "TEL_RXD_RIG", "RC0603FR-071KL", "UART crossover: target TXD -> rig RXD"),
    r("R33", "1k", "TEL_TXD_RIG", "TEL_RXD_TGT", "RC0603FR-071KL", "UART crossover: rig TXD -> target RXD"),
    Part("TP1", "TestPoint", "5V_IN", {"1": "+5V_IN"}, "TestPoint:TestPoint_Loop_D2.50mm_Drill1.0mm", "5011"),
    Part("TP2", "TestPoint", "5V_TGT", {"1": "VDD_5V_TGT"}, "TestPoint:TestPoint_Loop_D2.50mm_Drill1.0mm", "5011"),
    Part("TP3", "TestPoint", "GND", {"1": "GND"}, "TestPoint:TestPoint_Loop_D2.50mm_Drill1.0mm", "5011"),
    Part("TP4", "TestPoint", "MARKER", {"1": "MARKER"}, "TestPoint:TestPoint_Loop_D2.50mm_Drill1.0mm", "5011"),
    Part("TP5", "TestPoint", "CHG_DET", {"1": "CHG_DET"}, "TestPoint:TestPoint_Loop_D2.50mm_Drill1.0mm", "5011"),
    Part("TP6", "TestPoint", "SCL", {"1": "I2C1_SCL"}, "TestPoint:TestPoint_Loop_D2.50mm_Drill1.0mm", "5011"),
    Part("TP7", "TestPoint", "SDA", {"1": "I2C1_SDA"}, "TestPoint:TestPoint_Loop_D2.50mm_Drill1.0mm", "5011"),
    Part("TP8", "TestPoint", "KEY_POWER", {"1": "KEY_POWER"}, "TestPoint:TestPoint_Loop_D2.50mm_Drill1.0mm", "5011"),
    Part("#FLG01", "PWR_FLAG", "PWR_FLAG", {"1": "GND"}),
    Part("#FLG02", "PWR_FLAG", "PWR_FLAG", {"1": "+5V_IN"}),
]


def header_parts(rows):
    out = []
    for ref, board, desc in (("J1", "target", "BeagleBone Black (target)"),
                             ("J2", "rig", "BeagleBone Black (rig host)")):
        out.append(Part(ref, f"BBB_{board}", desc,
                        {p.pin: p.net for p in rows if p.board == board},
                        "", "BBONE-BLACK-4G", "P8/P9 headers, only the pins the rig uses"))
    return out


# --- the schematic ---------------------------------------------------------------

def snap(v: float) -> float:
    return round(v / 1.27) * 1.27


def place(parts: list[Part], syms: dict[str, Symbol]):
    """Columns of parts on an A3 sheet, left to right, top to bottom."""
    x, y, col_w = 30.48, 30.48, 0.0
    out = []
    for part in parts:
        s = syms[part.sym]
        x1, y1, x2, y2 = s.body
        h = (y1 - y2) + 12.7
        if len(s.pins) <= 2 and s.pins[0].angle in (90, 270):
            h += 20.32      # room for the vertical labels above and below
        if y + h > 270:
            x += col_w + 45.72
            y, col_w = 30.48, 0.0
        out.append((part, snap(x), snap(y + y1 + 2.54)))
        y += h + 5.08
        col_w = max(col_w, x2 - x1)
    return out


def schematic(rows) -> tuple[str, str]:
    syms = dict(SYMBOLS)
    for board in ("target", "rig"):
        s = header_symbol(board, rows)
        syms[s.name] = s
    parts = header_parts(rows) + PARTS
    root = uid("root")
    lib = ["(kicad_symbol_lib (version 20241209) (generator \"sbrig_gen_schematic\") "
           "(generator_version \"9.0\")"]
    lib += [sym_text(syms[n], False) for n in sorted(syms)]
    lib.append(")")
    out = [f"(kicad_sch (version 20250114) (generator \"sbrig_gen_schematic\") "
           f"(generator_version \"9.0\") (uuid {q(root)}) (paper \"A3\")",
           "(title_block (title \"sbrig BeagleBone rig\") (rev \"1\") "
           "(company \"sbrig\") (comment 1 \"Generated by schematics/gen_schematic.py from "
           "firmware/pins.tsv: do not edit\"))",
           "(lib_symbols"]
    out += [sym_text(syms[n], True) for n in sorted(syms)]
    out.append(")")
    for part, x, y in place(parts, syms):
        s = syms[part.sym]
        x1, y1, x2, y2 = s.body
        props = [("Reference", part.ref, x + x2 + 1.27, y - y1 - 1.27, s.power),
                 ("Value", part.value, x + x2 + 1.27, y - y2 + 1.27, False),
                 ("Footprint", "", x, y, True),
                 ("Package", part.footprint, x, y, True),
                 ("Datasheet", "~", x, y, True),
                 ("Description", s.description, x, y, True),
                 ("MPN", part.mpn, x, y, True),
                 ("Note", part.note, x, y, True)]
        o = [f"(symbol (lib_id {q(LIB + ':' + part.sym)}) (at {x:g} {y:g} 0) (unit 1) "
             f"(exclude_from_sim no) (in_bom {'no' if s.power else 'yes'}) "
             f"(on_board {'no' if s.power else 'yes'}) (dnp no) (uuid {q(uid('sym', part.ref))})"]
        for key, val, px, py, hid in props:
            o.append(f"(property {q(key)} {q(val)} (at {snap(px):g} {snap(py):g} 0) "
                     f"(effects (font (size 1.27 1.27)) (justify left)"
                     f"{' (hide yes)' if hid else ''}))")
        for p in s.pins:
            o.append(f"(pin {q(p.number)} (uuid {q(uid('pin', part.ref, p.number))}))")
        o.append(f"(instances (project {q(PROJECT)} (path {q('/' + root)} "
                 f"(reference {q(part.ref)}) (unit 1))))")
        o.append(")")
        out.append(" ".join(o))
        for p in s.pins:
            net = part.nets.get(p.number)
            px, py = x + p.x, y - p.y
            if net is None:
                out.append(f"(no_connect (at {px:g} {py:g}) (uuid {q(uid('nc', part.ref, p.number))}))")
                continue
            # the label points away from the part, on the pin's end
            ang = {0: 180, 180: 0, 90: 270, 270: 90}[p.angle]
            just = "right" if ang in (180, 270) else "left"
            out.append(f"(label {q(net)} (at {px:g} {py:g} {ang}) "
                       f"(effects (font (size 1.27 1.27)) (justify {just} bottom)) "
                       f"(uuid {q(uid('label', part.ref, p.number))}))")
    out.append("(sheet_instances (path \"/\" (page \"1\")))")
    out.append("(embedded_fonts no)")
    out.append(")")
    return "\n".join(out) + "\n", "\n".join(lib) + "\n"


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
    sch, lib = schematic(rows)
    files = {f"{PROJECT}.kicad_sch": sch, "sbrig.kicad_sym": lib,
             f"{PROJECT}.kicad_pro": PROJECT_FILE % uid("root"),
             "sym-lib-table": SYM_LIB_TABLE}
    outdir.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (outdir / name).write_text(text)
    return [outdir / n for n in files]


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE
    for f in write(out):
        print(f)
