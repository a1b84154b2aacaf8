#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The rig's pin table (firmware/pins.tsv) and the checks built on it.

pins.tsv is the single source of truth for every wire of the BeagleBone
rig. This module loads it (every error names the file, the line and the
pin) and checks everything else against it:

* the table itself: known boards, directions and pulls; no header pin, pad
  or GPIO line used twice on one board; a pad's offset is the kernel's
  AM335X_PIN_* value for that pad; a GPIO line is the one the board's own
  device tree names after that header pin (gpio-line-names); a GPIO row is
  in mux mode 7;
* the board's device tree with an overlay applied (the merged .dtb):
  no pinmux offset claimed twice by enabled nodes, every table pin muxed by
  exactly one enabled node in the table's mode, pull and direction, every
  GPIO an added node uses is in the table, every phandle resolves, and no
  enabled node uses a disabled controller or sits on a disabled bus;
* rig/beaglebone.conf: every rig-host GPIO line of the table is the chip and
  line of its section, every GPIO section of the file is in the table, the
  INA226's shunt-resistor is the file's shunt_uohm, and the target link is
  the telemetry UART.

It also renders the wiring table of schematics/README.md. Run
``pins.py check --build DIR`` (what ``make -C firmware check`` does) or
``pins.py wiring-table``. Only the Python standard library is used.
"""

from __future__ import annotations

import argparse
import configparser
import re
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TABLE = HERE / "pins.tsv"
RIG_CONF = REPO / "rig" / "beaglebone.conf"
OVERLAYS = {"target": "sbrig-target", "rig": "sbrig-rig-host"}

COLUMNS = ["signal", "board", "pin", "ball", "pad", "offset", "mode", "gpio",
           "dir", "pull", "net", "function"]
BOARDS = ("target", "rig")
DIRS = ("in", "out", "io", "power", "ground")
PULLS = ("up", "down", "none")

# AM335x pad configuration bits (include/dt-bindings/pinctrl/am33xx.h)
PAD_PULL_DISABLE = 1 << 3
PAD_PULL_UP = 1 << 4
PAD_INPUT_EN = 1 << 5
PAD_MUX_MASK = 7
PINMUX_BASE = 0x800     # am33xx_pinmux is the control module's pinmux@800


class TableError(Exception):
    """The pin table is unusable (unreadable, malformed header)."""


@dataclass
class Pin:
    line: int
    signal: str
    board: str
    pin: str
    ball: str
    pad: str
    offset: int | None
    mode: int | None
    gpio: tuple[int, int] | None
    dir: str
    pull: str
    net: str
    function: str

    @property
    def where(self) -> str:
        return f"{self.board} {self.pin} ({self.signal})"

    @property
    def gpio_name(self) -> str:
        return f"gpio{self.gpio[0]}_{self.gpio[1]}" if self.gpio else "-"


def load_table(path: Path = TABLE) -> tuple[list[Pin], list[str]]:
    """Reads the table; returns its rows and the errors of single rows."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise TableError(f"{path}: {e.strerror}") from e
    rows, errors = [], []
    header = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        if not raw.strip() or raw.startswith("#"):
            continue
        cells = raw.split("\t")
        if header is None:
            if cells != COLUMNS:
                raise TableError(f"{path}:{lineno}: header must be the columns "
                                 f"{' '.join(COLUMNS)} (tab-separated)")
            header = cells
            continue
        pin_name = cells[2] if len(cells) > 2 else "?"
        if len(cells) != len(COLUMNS):
            errors.append(f"{path}:{lineno}: {pin_name}: {len(cells)} columns, "
                          f"expected {len(COLUMNS)}")
            continue
        d = dict(zip(COLUMNS, cells))
        bad = []

        def err(msg):
            bad.append(f"{path}:{lineno}: {d['board']} {d['pin']} ({d['signal']}): {msg}")

        if d["board"] not in BOARDS:
            err(f"board '{d['board']}' is not one of {', '.join(BOARDS)}")
        if not re.fullmatch(r"P[89]_([1-9]|[1-3][0-9]|4[0-6])", d["pin"]):
            err(f"pin '{d['pin']}' is not a header pin P8_1..P9_46")
        if d["dir"] not in DIRS:
            err(f"dir '{d['dir']}' is not one of {', '.join(DIRS)}")
        offset = mode = gpio = None
        if d["dir"] in ("power", "ground"):
            for col in ("ball", "pad", "offset", "mode", "gpio", "pull"):
                if d[col] != "-":
                    err(f"{col} must be '-' on a {d['dir']} pin")
        else:
            if d["pull"] not in PULLS:
                err(f"pull '{d['pull']}' is not one of {', '.join(PULLS)}")
            try:
                offset = int(d["offset"], 16)
                if not d["offset"].lower().startswith("0x"):
                    raise ValueError
            except ValueError:
                err(f"offset '{d['offset']}' is not a hex register offset (0x...)")
            if not re.fullmatch(r"[0-7]", d["mode"]):
                err(f"mode '{d['mode']}' is not a mux mode 0..7")
            else:
                mode = int(d["mode"])
            if d["gpio"] != "-":
                m = re.fullmatch(r"gpio([0-3])_([0-9]|[12][0-9]|3[01])", d["gpio"])
                if not m:
                    err(f"gpio '{d['gpio']}' is not gpio<bank 0-3>_<line 0-31>")
                else:
                    gpio = (int(m.group(1)), int(m.group(2)))
            if not re.fullmatch(r"[a-z0-9_]+", d["pad"]):
                err(f"pad '{d['pad']}' is not a pad name")
        if not re.fullmatch(r"[A-Z+][A-Z0-9_+]*", d["net"]):
            err(f"net '{d['net']}' is not a net name (A-Z 0-9 _ +)")
        if bad:
            errors.extend(bad)
            continue
        rows.append(Pin(lineno, d["signal"], d["board"], d["pin"], d["ball"],
                        d["pad"], offset, mode, gpio, d["dir"], d["pull"],
                        d["net"], d["function"]))
    if header is None:
        raise TableError(f"{path}: no header line")
    return rows, errors


# --- the kernel's facts: pad offsets and the boards' GPIO line names -------

def pad_offsets(ksrc: Path) -> dict[str, int]:
    """AM335X_PIN_<PAD> -> offset, from the kernel's am33xx.h."""
    text = (Path(ksrc) / "include/dt-bindings/pinctrl/am33xx.h").read_text()
    return {m.group(1).lower(): int(m.group(2), 16) for m in
            re.finditer(r"#define\s+AM335X_PIN_(\w+)\s+(0x[0-9a-fA-F]+)", text)}


def check_table(rows: list[Pin], pads: dict[str, int] | None = None,
                tree: "Node | None" = None, path: Path = TABLE) -> list[str]:
    """Checks across rows, and against the kernel's pad offsets and the
    base tree's gpio-line-names (each when given)."""
    errors = []
    seen: dict[tuple, Pin] = {}
    for p in rows:
        keys = [("pin", p.board, p.pin)] if p.dir not in ("power", "ground") \
            else [("pin", p.board, p.pin, p.net)]
        if p.offset is not None:
            keys.append(("offset", p.board, p.offset))
        if p.gpio:
            keys.append(("gpio", p.board, p.gpio))
        for key in keys:
            other = seen.get(key[:3])
            if other and (key[0] != "pin" or other.dir not in ("power", "ground")
                          or p.dir not in ("power", "ground") or other.net != p.net):
                what = {"pin": "header pin", "offset": "pad offset",
                        "gpio": "GPIO line"}[key[0]]
                val = p.pin if key[0] == "pin" else \
                    (f"0x{p.offset:03x}" if key[0] == "offset" else p.gpio_name)
                errors.append(f"{path}:{p.line}: {p.where}: {what} {val} is "
                              f"already used by {other.where} (line {other.line})")
            seen.setdefault(key[:3], p)
        if p.gpio and p.mode != 7:
            errors.append(f"{path}:{p.line}: {p.where}: {p.gpio_name} needs mux mode 7 "
                          f"(GPIO), the table says {p.mode}")
        if p.offset is not None and pads is not None:
            want = pads.get(p.pad)
            if want is None:
                errors.append(f"{path}:{p.line}: {p.where}: pad '{p.pad}' has no "
                              f"AM335X_PIN_{p.pad.upper()} in the kernel's am33xx.h")
            elif want != p.offset:
                errors.append(f"{path}:{p.line}: {p.where}: pad {p.pad} is at "
                              f"0x{want:03x}, the table says 0x{p.offset:03x}")
    if tree is not None:
        names = gpio_line_names(tree)
        for p in rows:
            if not p.gpio:
                continue
            name = names.get(p.gpio, "")
            if not re.match(re.escape(p.pin) + r"[AB]?( |$)", name):
                errors.append(f"{path}:{p.line}: {p.where}: {p.gpio_name} is "
                              f"'{name}' on a BeagleBone Black, not {p.pin}")
    return errors


# --- flattened device trees ------------------------------------------------

@dataclass
class Node:
    name: str
    path: str
    parent: "Node | None"
    props: dict[str, bytes] = field(default_factory=dict)
    children: dict[str, "Node"] = field(default_factory=dict)

    def u32s(self, prop: str) -> list[int]:
        v = self.props.get(prop, b"")
        return list(struct.unpack(f">{len(v) // 4}I", v[:len(v) // 4 * 4]))

    def str(self, prop: str) -> str | None:
        v = self.props.get(prop)
        return v.rstrip(b"\0").decode(errors="replace") if v is not None else None

    def strings(self, prop: str) -> list[str]:
        v = self.props.get(prop)
        return v.rstrip(b"\0").decode(errors="replace").split("\0") if v else []

    def walk(self):
        yield self
        for c in self.children.values():
            yield from c.walk()

    def okay(self) -> bool:
        """Own status only."""
        return self.str("status") in (None, "okay", "ok")

    def enabled(self) -> bool:
        """Own status and every ancestor's."""
        n = self
        while n is not None:
            if not n.okay():
                return False
            n = n.parent
        return True


def parse_dtb(data: bytes) -> Node:
    """Parses a flattened device tree blob (a .dtb or a .dtbo)."""
    magic, _size, off_struct, off_strings = struct.unpack_from(">4I", data, 0)
    if magic != 0xd00dfeed:
        raise ValueError("not a flattened device tree (bad magic)")
    strings = data[off_strings:]
    pos = off_struct
    root = None
    stack: list[Node] = []
    while True:
        (tok,) = struct.unpack_from(">I", data, pos)
        pos += 4
        if tok == 1:                                # FDT_BEGIN_NODE
            end = data.index(b"\0", pos)
            name = data[pos:end].decode()
            pos = (end + 4) & ~3
            parent = stack[-1] if stack else None
            path = "/" if parent is None else \
                (parent.path.rstrip("/") + "/" + name)
            node = Node(name or "/", path, parent)
            if parent is None:
                root = node
            else:
                parent.children[name] = node
            stack.append(node)
        elif tok == 2:                              # FDT_END_NODE
            stack.pop()
        elif tok == 3:                              # FDT_PROP
            length, nameoff = struct.unpack_from(">II", data, pos)
            pos += 8
            pname = strings[nameoff:strings.index(b"\0", nameoff)].decode()
            stack[-1].props[pname] = data[pos:pos + length]
            pos = (pos + length + 3) & ~3
        elif tok == 4:                              # FDT_NOP
            continue
        elif tok == 9:                              # FDT_END
            break
        else:
            raise ValueError(f"bad FDT token {tok} at {pos - 4}")
    return root


def load_dtb(path: Path) -> Node:
    return parse_dtb(Path(path).read_bytes())


def lookup(root: Node, path: str) -> Node | None:
    n = root
    for part in [p for p in path.split("/") if p]:
        n = n.children.get(part)
        if n is None:
            return None
    return n


def phandles(root: Node) -> dict[int, Node]:
    return {n.u32s("phandle")[0]: n for n in root.walk() if "phandle" in n.props}


def symbols(root: Node) -> dict[str, str]:
    s = root.children.get("__symbols__")
    return {k: v.rstrip(b"\0").decode() for k, v in s.props.items()} if s else {}


def gpio_banks(root: Node) -> dict[str, int]:
    """Path of each AM335x GPIO controller -> its bank number (label gpioN)."""
    return {path: int(label[4:]) for label, path in symbols(root).items()
            if re.fullmatch(r"gpio[0-3]", label)}


def gpio_line_names(root: Node) -> dict[tuple[int, int], str]:
    names = {}
    for path, bank in gpio_banks(root).items():
        n = lookup(root, path)
        for line, name in enumerate(n.strings("gpio-line-names") if n else []):
            names[(bank, line)] = name
    return names


def overlay_nodes(dtbo: Node, base: Node) -> list[str]:
    """Paths (in the merged tree) of the nodes an overlay adds or changes."""
    fixups = dtbo.children.get("__fixups__")
    syms = symbols(base)
    targets = {}
    for label, refs in (fixups.props.items() if fixups else []):
        for ref in refs.rstrip(b"\0").decode().split("\0"):
            frag, prop, _ = ref.split(":")
            if prop == "target":
                targets[frag] = syms.get(label, f"<unknown label {label}>")
    paths = []
    for frag in dtbo.children.values():
        ov = frag.children.get("__overlay__")
        if ov is None:
            continue
        target = frag.str("target-path") or targets.get(frag.path)
        if target is None:
            continue
        if ov.props:
            paths.append(target)
        for n in ov.walk():
            if n is not ov:
                paths.append(target.rstrip("/") + n.path[len(ov.path):])
    return paths


# --- checks on a merged tree ------------------------------------------------

def _gpio_refs(root: Node, node: Node, ph: dict[int, Node]):
    """(property, provider node or None, phandle, cells) of node's GPIO lists."""
    for prop in node.props:
        if prop != "gpios" and not prop.endswith("-gpios"):
            continue
        cells = node.u32s(prop)
        i = 0
        while i < len(cells):
            provider = ph.get(cells[i])
            if provider is None:
                yield prop, None, cells[i], []
                return
            n = (provider.u32s("#gpio-cells") or [2])[0]
            yield prop, provider, cells[i], cells[i + 1:i + 1 + n]
            i += 1 + n


def _pinctrl_groups(node: Node, ph: dict[int, Node]):
    for prop in node.props:
        if re.fullmatch(r"pinctrl-[0-9]+", prop):
            for h in node.u32s(prop):
                yield prop, h, ph.get(h)


def _group_pins(group: Node) -> list[tuple[int, int]]:
    """(offset, conf|mux) of a pinctrl-single group, cells per #pinctrl-cells."""
    ctrl = group.parent
    ncells = ((ctrl.u32s("#pinctrl-cells") or [1])[0] if ctrl else 1) + 1
    cells = group.u32s("pinctrl-single,pins")
    out = []
    for i in range(0, len(cells) - ncells + 1, ncells):
        val = 0
        for c in cells[i + 1:i + ncells]:
            val |= c
        out.append((cells[i], val))
    return out


def check_tree(root: Node, touched: list[str], rows: list[Pin], board: str,
               pads: dict[str, int] | None = None) -> list[str]:
    """The merged tree's checks (see the module's doc), for one board."""
    errors = []
    ph = phandles(root)
    by_offset = {p.offset: p for p in rows if p.board == board and p.offset is not None}
    pad_names = {v: k for k, v in (pads or {}).items()}

    def pin_name(off):
        p = by_offset.get(off)
        if p:
            return f"{p.pin} ({p.signal}, pad 0x{off:03x})"
        return f"pad 0x{off:03x}" + (f" ({pad_names[off]})" if off in pad_names else "")

    internal = ("__symbols__", "__fixups__", "__local_fixups__")
    nodes = [n for n in root.walk()
             if not any(f"/{s}" in n.path for s in internal)]

    # every phandle resolves
    for n in nodes:
        for prop, h, group in _pinctrl_groups(n, ph):
            if group is None:
                errors.append(f"{n.path}: {prop}: phandle {h:#x} resolves to no node")
        if "interrupt-parent" in n.props and n.u32s("interrupt-parent")[0] not in ph:
            errors.append(f"{n.path}: interrupt-parent: phandle resolves to no node")
        for prop, provider, h, _ in _gpio_refs(root, n, ph):
            if provider is None:
                errors.append(f"{n.path}: {prop}: phandle {h:#x} resolves to no node")

    # no enabled node uses a disabled controller; no node the overlay adds
    # is enabled on a disabled bus
    for n in nodes:
        if not n.enabled():
            continue
        for prop, provider, _, _ in _gpio_refs(root, n, ph):
            if provider is not None and not provider.enabled():
                errors.append(f"{n.path}: {prop}: GPIO controller {provider.path} "
                              "is disabled")
        for prop, _, group in _pinctrl_groups(n, ph):
            if group is not None and group.parent and not group.parent.enabled():
                errors.append(f"{n.path}: {prop}: pin controller "
                              f"{group.parent.path} is disabled")
    for path in touched:
        n = lookup(root, path)
        if n is None:
            errors.append(f"{path}: added by the overlay but not in the merged tree")
        elif n.okay() and not n.enabled() and not n.name.endswith("-pins"):
            bus = n.parent
            while bus.okay():
                bus = bus.parent
            errors.append(f"{path}: enabled, but its controller {bus.path} is disabled")

    # no pinmux offset claimed twice by enabled nodes
    claims: dict[int, dict[str, int]] = {}
    for n in nodes:
        if not n.enabled():
            continue
        mine = {}
        for _, _, group in _pinctrl_groups(n, ph):
            if group is None:
                continue
            for off, val in _group_pins(group):
                mine.setdefault(off, val)
        for off, val in mine.items():
            claims.setdefault(off, {})[n.path] = val
    for off, who in sorted(claims.items()):
        if len(who) > 1:
            errors.append(f"{board} {pin_name(off + PINMUX_BASE)}: pinmux offset "
                          f"0x{off:03x} claimed by {len(who)} enabled nodes: "
                          + ", ".join(sorted(who)))

    # every table pin is muxed, once, as the table says
    banks = gpio_banks(root)
    for p in rows:
        if p.board != board or p.offset is None:
            continue
        who = claims.get(p.offset - PINMUX_BASE, {})
        if not who:
            errors.append(f"{p.where}: pad {p.pad} (0x{p.offset:03x}) is not "
                          "muxed by any enabled node")
            continue
        path, val = next(iter(sorted(who.items())))
        mode = val & PAD_MUX_MASK
        if mode != p.mode:
            errors.append(f"{p.where}: mux mode {mode} in {path}, the table says {p.mode}")
        inp = bool(val & PAD_INPUT_EN)
        if inp != (p.dir in ("in", "io")):
            errors.append(f"{p.where}: receiver {'enabled' if inp else 'disabled'} "
                          f"in {path}, but the table's dir is {p.dir}")
        pull = "none" if val & PAD_PULL_DISABLE else \
            ("up" if val & PAD_PULL_UP else "down")
        if pull != p.pull:
            errors.append(f"{p.where}: pull {pull} in {path}, the table says {p.pull}")
        if p.gpio:
            consumers = [(n.path, prop) for n in nodes if n.enabled()
                         for prop, prov, _, cells in _gpio_refs(root, n, ph)
                         if prov is not None and banks.get(prov.path) == p.gpio[0]
                         and cells and cells[0] == p.gpio[1]]
            owner = lookup(root, path)
            if not consumers and banks.get(owner.path if owner else "") != p.gpio[0]:
                errors.append(f"{p.where}: no enabled node uses {p.gpio_name}, and "
                              f"its pad is muxed by {path}, not by the gpio{p.gpio[0]} "
                              "controller")

    # every GPIO a node of the overlay uses is in the table
    table_gpios = {p.gpio for p in rows if p.board == board and p.gpio}
    for path in touched:
        n = lookup(root, path)
        if n is None:
            continue
        for prop, prov, _, cells in _gpio_refs(root, n, ph):
            bank = banks.get(prov.path) if prov is not None else None
            if bank is not None and cells and (bank, cells[0]) not in table_gpios:
                errors.append(f"{path}: {prop}: gpio{bank}_{cells[0]} is not a "
                              f"{board} pin of the table")
    return errors


# --- rig/beaglebone.conf ------------------------------------------------------

def load_rig_conf(path: Path = RIG_CONF) -> configparser.ConfigParser:
    cp = configparser.ConfigParser(interpolation=None, comment_prefixes=("#", ";"),
                                   inline_comment_prefixes=None, strict=True)
    with open(path, encoding="utf-8") as f:
        cp.read_file(f)
    return cp


def check_rig_conf(rows: list[Pin], conf: configparser.ConfigParser,
                   rig_tree: Node | None = None, conf_name: str = "rig/beaglebone.conf",
                   conf_text: str | None = None) -> list[str]:
    errors = []
    if conf_text is not None:
        # "# P8_7 = GPIO2_2" right above a line section names its pin
        rig_by_signal = {p.signal: p for p in rows if p.board == "rig" and p.gpio}
        lines = conf_text.splitlines()
        for i, ln in enumerate(lines):
            m = re.fullmatch(r"\[(key:[\w-]+|charger|marker)\]\s*", ln)
            if not m or i == 0:
                continue
            c = re.match(r"#\s*(P[89]_\d+)\s*=\s*GPIO(\d)_(\d+)", lines[i - 1])
            p = rig_by_signal.get(m.group(1))
            if c and p and (c.group(1), int(c.group(2)), int(c.group(3))) != \
                    (p.pin, p.gpio[0], p.gpio[1]):
                errors.append(f"{conf_name}:{i}: comment '{lines[i - 1].strip()}' of "
                              f"[{m.group(1)}] disagrees with the table: {p.pin} = "
                              f"{p.gpio_name.upper()}")
    line_sections = [s for s in conf.sections()
                     if s.startswith("key:") or s in ("charger", "marker")]
    rig_gpio = {p.signal: p for p in rows if p.board == "rig" and p.gpio}
    for p in rig_gpio.values():
        if not (p.signal.startswith("key:") or p.signal in ("charger", "marker")):
            continue
        if not conf.has_section(p.signal):
            errors.append(f"{p.where}: {conf_name} has no [{p.signal}] section "
                          f"for {p.gpio_name}")
            continue
        sec = conf[p.signal]
        chip, line = sec.get("chip", ""), sec.get("line", "")
        if chip != f"/dev/gpiochip{p.gpio[0]}" or line != str(p.gpio[1]):
            errors.append(f"{p.where}: {conf_name} [{p.signal}] names {chip} line "
                          f"{line}, the table says {p.gpio_name} "
                          f"(/dev/gpiochip{p.gpio[0]} line {p.gpio[1]})")
        want_low = "false"
        if sec.get("active_low", "false") not in (want_low, "no", "0"):
            errors.append(f"{p.where}: {conf_name} [{p.signal}] is active_low; the rig's "
                          "drivers and the marker are active high")
    for s in line_sections:
        if s not in rig_gpio:
            errors.append(f"{conf_name} [{s}]: {conf[s].get('chip')} line "
                          f"{conf[s].get('line')} is not a rig pin of the table")
    if rig_tree is not None and conf.has_option("power", "shunt_uohm"):
        shunts = [(n.path, n.u32s("shunt-resistor")[0]) for n in rig_tree.walk()
                  if n.str("compatible") == "ti,ina226" and n.enabled()
                  and "shunt-resistor" in n.props]
        want = conf.get("power", "shunt_uohm")
        if not shunts:
            errors.append("rig tree: no enabled ti,ina226 with a shunt-resistor")
        for path, uohm in shunts:
            if str(uohm) != want:
                errors.append(f"{path}: shunt-resistor = {uohm} uOhm, {conf_name} "
                              f"[power] shunt_uohm = {want}")
    uart = {p.pad.split("_")[0] for p in rows
            if p.board == "rig" and p.signal.startswith("telemetry:")}
    uri = conf.get("target", "uri", fallback="")
    for u in sorted(uart):
        tty = f"/dev/ttyS{u[len('uart'):]}"
        if not uri.startswith(f"serial:{tty}:") and uri != f"serial:{tty}":
            errors.append(f"rig telemetry UART is {u} ({tty}), but {conf_name} "
                          f"[target] uri = {uri}")
    return errors


# --- the wiring table ---------------------------------------------------------

# What a non-GPIO pad in a given mode is to Linux (the modes the table uses).
LINUX_DEVICE = {("uart1_txd", 0): "ttyS1", ("uart1_rxd", 0): "ttyS1",
                ("spi0_cs0", 2): "i2c1 SCL", ("spi0_d1", 2): "i2c1 SDA"}

WIRING_BEGIN = "<!-- wiring table: generated by firmware/pins.py from firmware/pins.tsv -->"
WIRING_END = "<!-- end of wiring table -->"


def wiring_table(rows: list[Pin]) -> str:
    """Markdown: one line per wire end, grouped by net, as a person solders."""
    out = [WIRING_BEGIN, "",
           "| net | board | header pin | signal | AM335x (ball, pad, mode) | "
           "Linux | dir | pull | function |",
           "|---|---|---|---|---|---|---|---|---|"]
    order = {}
    for p in rows:
        order.setdefault(p.net, len(order))
    for p in sorted(rows, key=lambda p: (order[p.net], p.board != "target", p.pin)):
        soc = "-" if p.offset is None else f"{p.ball}, {p.pad}, mode {p.mode}"
        linux = p.gpio_name if p.gpio else LINUX_DEVICE.get((p.pad, p.mode), "-")
        out.append(f"| `{p.net}` | {p.board} | {p.pin} | {p.signal} | {soc} | "
                   f"{linux} | {p.dir} | {p.pull if p.offset is not None else '-'} | "
                   f"{p.function} |")
    out += ["", WIRING_END]
    return "\n".join(out) + "\n"


def splice_wiring_table(readme: str, table: str) -> str:
    b, e = readme.find(WIRING_BEGIN), readme.find(WIRING_END)
    if b < 0 or e < b:
        raise ValueError("no wiring-table markers in the README")
    return readme[:b] + table + readme[e + len(WIRING_END) + 1:]


# --- command line ---------------------------------------------------------------

def check_all(table: Path, build: Path, conf_path: Path = RIG_CONF) -> list[str]:
    """Every check, on the table, the merged trees in build/ and the conf."""
    rows, errors = load_table(table)
    ksrc = build / "linux-source-6.1"
    pads = pad_offsets(ksrc)
    base = load_dtb(build / "am335x-boneblack.dtb")
    errors += check_table(rows, pads, base, table)
    merged = {}
    for board, name in OVERLAYS.items():
        merged[board] = load_dtb(build / f"{name}.merged.dtb")
        touched = overlay_nodes(load_dtb(build / f"{name}.dtbo"), base)
        errors += [f"{name}: {e}" for e in
                   check_tree(merged[board], touched, rows, board, pads)]
    errors += check_rig_conf(rows, load_rig_conf(conf_path), merged["rig"],
                             conf_name=str(conf_path),
                             conf_text=Path(conf_path).read_text(encoding="utf-8"))
    return errors


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check", help="check the table, the merged trees, the rig conf")
    c.add_argument("--table", type=Path, default=TABLE)
    c.add_argument("--build", type=Path, default=REPO / "build" / "firmware")
    c.add_argument("--rig-conf", type=Path, default=RIG_CONF)
    w = sub.add_parser("wiring-table", help="print the README's wiring table")
    w.add_argument("--table", type=Path, default=TABLE)
    w.add_argument("--update", type=Path, metavar="README",
                   help="rewrite the table between the markers of README")
    w.add_argument("--check", type=Path, metavar="README",
                   help="fail when README's table is not the table's rendering")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "check":
            errors = check_all(args.table, args.build, args.rig_conf)
            for e in errors:
                print(e, file=sys.stderr)
            return 1 if errors else 0
        rows, errors = load_table(args.table)
        if errors:
            print("\n".join(errors), file=sys.stderr)
            return 1
        table = wiring_table(rows)
        if args.check:
            text = args.check.read_text()
            if splice_wiring_table(text, table) != text:
                print(f"{args.check}: the wiring table is stale: run "
                      f"'make -C firmware wiring-table'", file=sys.stderr)
                return 1
        elif args.update:
            args.update.write_text(splice_wiring_table(args.update.read_text(), table))
        else:
            sys.stdout.write(table)
        return 0
    except (TableError, OSError, ValueError) as e:
        print(f"pins.py: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
