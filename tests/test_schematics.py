"""The KiCad project (schematics/) against the pin table.

* kicad-cli's ERC finds no violation of any severity;
* the netlist kicad-cli exports (parsed here) has every table row's header
  pin on the table's net, the links the rig needs (key transistors across
  the keys, the UART crossover, the shunt between the supply and the
  target, the INA226's address straps), and only nets it should;
* the committed project, exports (SVG, PDF, BOM) and README wiring table
  are what ``make -C schematics`` produces from the current sources.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCH = REPO / "schematics"
sys.path.insert(0, str(REPO / "firmware"))

import pins  # noqa: E402

GENERATED = ["sbrig-rig.kicad_sch", "sbrig.kicad_sym", "sbrig-rig.kicad_pro",
             "sym-lib-table", "exports/sbrig-rig.svg", "exports/sbrig-rig.pdf",
             "exports/sbrig-rig-bom.csv"]


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
