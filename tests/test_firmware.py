"""The device-tree overlays (firmware/) against the pin table and the board.

Builds what ``make -C firmware`` builds (cached in build/firmware/: the
kernel files, am335x-boneblack.dtb with symbols, the processed schema) and
checks, with no board:

* both overlays compile with no dtc warning and apply with fdtoverlay;
* firmware/pins.tsv is consistent in itself and with the kernel (pad
  offsets, the board's gpio-line-names);
* the merged trees (firmware/pins.py's checks: no pad claimed twice, modes,
  pulls and directions as the table says, phandles, disabled controllers);
* rig/beaglebone.conf names the table's lines, shunt and UART;
* dt-schema: the nodes the overlays add validate against the kernel's
  bindings and ours, and our binding documents are valid dt-schema;
* negative cases: broken copies of the table, of the overlays and of the
  rig config fail with a message naming the pin or node.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FW = REPO / "firmware"
BUILD = REPO / "build" / "firmware"
sys.path.insert(0, str(FW))

import dtvalidate  # noqa: E402
import pins  # noqa: E402

KSRC = BUILD / "linux-source-6.1"


@pytest.fixture(scope="session")
def fw_build():
    """make -C firmware all merged schema (incremental); the build dir."""
    for tool in ("dtc", "fdtoverlay", "dt-mk-schema", "dt-doc-validate"):
        if not shutil.which(tool):
            pytest.fail(f"{tool} is missing: run .ci/install-deps")
    r = subprocess.run(["make", "-C", str(FW), f"O={BUILD}", "all", "merged", "schema"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return BUILD


@pytest.fixture(scope="session")
def validator(fw_build):
    return dtvalidate.Validator(fw_build / "processed-schema.json")


def table_copy(tmp_path, edit) -> Path:
    """A copy of pins.tsv with one edit (old, new) applied exactly once."""
    old, new = edit
    text = pins.TABLE.read_text()
    assert text.count(old) == 1, f"fixture edit {old!r} must match once"
    p = tmp_path / "pins.tsv"
    p.write_text(text.replace(old, new))
    return p


def build_overlay(src: str, tmp_path: Path, name="broken") -> tuple[Path, Path]:
    """Compiles an overlay like the Makefile does; (dtbo, merged dtb)."""
    dts = tmp_path / f"{name}.dts"
    dts.write_text(src)
    pp = subprocess.run(["cpp", "-nostdinc", "-undef", "-D__DTS__", "-x",
                         "assembler-with-cpp", "-P", "-I", str(KSRC / "include"),
                         str(dts)], capture_output=True, text=True, check=True).stdout
    dtbo, merged = tmp_path / f"{name}.dtbo", tmp_path / f"{name}.merged.dtb"
    subprocess.run(["dtc", "-@", "-q", "-I", "dts", "-O", "dtb", "-o", str(dtbo), "-"],
                   input=pp, text=True, check=True)
    subprocess.run(["fdtoverlay", "-i", str(BUILD / "am335x-boneblack.dtb"),
                    "-o", str(merged), str(dtbo)], check=True)
    return dtbo, merged


def tree_errors(dtbo: Path, merged: Path, board: str) -> list[str]:
    base = pins.load_dtb(BUILD / "am335x-boneblack.dtb")
    rows, _ = pins.load_table()
    touched = pins.overlay_nodes(pins.load_dtb(dtbo), base)
    return pins.check_tree(pins.load_dtb(merged), touched, rows, board,
                           pins.pad_offsets(KSRC))


# --- the real thing ---------------------------------------------------------

@pytest.mark.parametrize("name", ["sbrig-target", "sbrig-rig-host"])
def test_overlay_builds_without_warnings_and_applies(fw_build, name):
    log = (fw_build / f"{name}.dtbo.log").read_text()
    assert log == "", f"dtc warnings for {name}.dts:\n{log}"
    dtbo = pins.load_dtb(fw_build / f"{name}.dtbo")
    assert "__fixups__" in dtbo.children, "not built as a plugin (-@)"
    merged = pins.load_dtb(fw_build / f"{name}.merged.dtb")
    touched = pins.overlay_nodes(dtbo, pins.load_dtb(fw_build / "am335x-boneblack.dtb"))
    assert touched and all(pins.lookup(merged, p) for p in touched)


def test_base_tree_has_symbols(fw_build):
    syms = pins.symbols(pins.load_dtb(fw_build / "am335x-boneblack.dtb"))
    for label in ("am33xx_pinmux", "gpio0", "gpio1", "gpio2", "i2c1", "uart1"):
        assert label in syms


def test_pin_table_is_consistent(fw_build):
    rows, errors = pins.load_table()
    base = pins.load_dtb(fw_build / "am335x-boneblack.dtb")
    errors += pins.check_table(rows, pins.pad_offsets(KSRC), base)
    assert errors == []
    # both ends of every link are in the table
    for signal in ("key:power", "key:volume-up", "key:volume-down", "marker",
                   "telemetry:tx", "telemetry:rx", "ground"):
        assert {p.board for p in rows if p.signal == signal} == {"target", "rig"}, signal


@pytest.mark.parametrize("board", ["target", "rig"])
def test_merged_tree_matches_the_table(fw_build, board):
    name = pins.OVERLAYS[board]
    assert tree_errors(fw_build / f"{name}.dtbo", fw_build / f"{name}.merged.dtb",
                       board) == []


def test_target_tree_has_the_nodes_the_module_uses(fw_build):
    t = pins.load_dtb(fw_build / "sbrig-target.merged.dtb")
    kp = pins.lookup(t, "/keypad")
    assert kp.str("compatible") == "sbrig,keypad"
    keys = {c.str("label"): c for c in kp.children.values()}
    assert set(keys) == {"power", "volume-up", "volume-down"}
    assert all("wakeup-source" in k.props for k in keys.values())
    assert keys["power"].u32s("linux,code") == [116]          # KEY_POWER
    assert pins.lookup(t, "/charger").str("compatible") == "gpio-charger"
    assert pins.lookup(t, "/suspend-marker").str("compatible") == "sbrig,suspend-marker"
    uart1 = pins.lookup(t, pins.symbols(t)["uart1"])
    assert uart1.enabled()


def test_rig_conf_matches_the_table(fw_build):
    rows, _ = pins.load_table()
    errors = pins.check_rig_conf(rows, pins.load_rig_conf(),
                                 pins.load_dtb(fw_build / "sbrig-rig-host.merged.dtb"),
                                 conf_text=pins.RIG_CONF.read_text())
    assert errors == []


def test_make_check_passes(fw_build):
    """The same checks through the make target a user runs."""
    r = subprocess.run(["make", "-s", "-C", str(FW), f"O={BUILD}", "check"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


def test_added_nodes_validate_against_the_bindings(fw_build, validator):
    findings = []
    for name in pins.OVERLAYS.values():
        findings += dtvalidate.overlay_findings(
            validator, fw_build / "am335x-boneblack.dtb", fw_build / f"{name}.dtbo",
            fw_build / f"{name}.merged.dtb")
    assert findings == []
    got = validator.validate(fw_build / "sbrig-target.merged.dtb",
                             ["/keypad", "/suspend-marker", "/charger"])
    assert "http://devicetree.org/schemas/sbrig,keypad.yaml#" in got["/keypad"]["matched"]
    assert "http://devicetree.org/schemas/sbrig,suspend-marker.yaml#" in \
        got["/suspend-marker"]["matched"]
    assert any("gpio-charger" in i for i in got["/charger"]["matched"])


def test_binding_documents_are_valid_dt_schema(fw_build, tmp_path):
    # dt-doc-validate checks $id against the file's place under its search
    # path, so the kernel's bindings and ours are put side by side
    stage = tmp_path / "bindings"
    stage.mkdir()
    for d in (KSRC / "Documentation/devicetree/bindings").iterdir():
        (stage / d.name).symlink_to(d)
    docs = sorted((FW / "bindings").glob("*.yaml"))
    assert len(docs) == 2
    for doc in docs:
        (stage / doc.name).symlink_to(doc)
    r = subprocess.run(["dt-doc-validate", "-u", str(stage)]
                       + [str(stage / d.name) for d in docs],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout + r.stderr == "", r.stdout + r.stderr


# --- negative cases ---------------------------------------------------------

BROKEN_TABLES = {
    # a pin used twice: volume-up moved onto the power key's pin
    "pin used twice": (("key:volume-up\ttarget\tP8_13\t", "key:volume-up\ttarget\tP8_19\t"),
                       r"target P8_19 \(key:volume-up\): header pin P8_19 is already used"),
    # a wrong mode for a GPIO pin
    "wrong mode": (("P8_17\tU12\tgpmc_ad11\t0x82c\t7", "P8_17\tU12\tgpmc_ad11\t0x82c\t4"),
                   r"target P8_17 \(charger-detect\): mux mode 7 in /charger, the table says 4"),
    # a rig GPIO line rig/beaglebone.conf does not name
    "line not in the rig conf": (("gpmc_wen\t0x898\t7\tgpio2_4", "gpmc_wen\t0x898\t7\tgpio2_6"),
                                 r"rig P8_10 \(charger\): .*beaglebone.conf \[charger\] names "
                                 r"/dev/gpiochip2 line 4, the table says gpio2_6"),
    # a wrong pull
    "wrong pull": (("gpio1_28\tin\tdown", "gpio1_28\tin\tup"),
                   r"rig P9_12 \(marker\): pull down in .*, the table says up"),
    # a pad offset that is not the pad's
    "wrong offset": (("gpmc_ad9\t0x824", "gpmc_ad9\t0x82c"),
                     r"target P8_13 \(key:volume-up\): pad gpmc_ad9 is at 0x824"),
    # a signal the rig conf has no section for
    "unknown rig signal": (("key:volume-down\trig\t", "key:home\trig\t"),
                           r"rig P8_9 \(key:home\): .* has no \[key:home\] section"),
    # a malformed row
    "bad direction": (("gpio0_22\tin\tup", "gpio0_22\tsideways\tup"),
                      r"pins.tsv:\d+: target P8_19 \(key:power\): dir 'sideways'"),
}


@pytest.mark.parametrize("case", list(BROKEN_TABLES))
def test_broken_table_fails_naming_the_pin(fw_build, tmp_path, case):
    edit, pattern = BROKEN_TABLES[case]
    errors = pins.check_all(table_copy(tmp_path, edit), fw_build)
    assert any(re.search(pattern, e) for e in errors), "\n".join(errors)
    # and through the command line, with a non-zero exit
    r = subprocess.run([sys.executable, str(FW / "pins.py"), "check", "--table",
                        str(tmp_path / "pins.tsv"), "--build", str(fw_build)],
                       capture_output=True, text=True)
    assert r.returncode == 1 and re.search(pattern, r.stderr)


def test_rig_conf_mismatches_fail(fw_build, tmp_path):
    text = pins.RIG_CONF.read_text()
    conf = tmp_path / "beaglebone.conf"
    conf.write_text(text.replace("shunt_uohm = 40000", "shunt_uohm = 100000")
                    .replace("serial:/dev/ttyS1:", "serial:/dev/ttyUSB0:")
                    .replace("# P8_9 = GPIO2_5", "# P8_9 = GPIO2_4"))
    errors = pins.check_all(pins.TABLE, fw_build, conf)
    joined = "\n".join(errors)
    assert re.search(r"power-sensor@40: shunt-resistor = 40000 uOhm, .* shunt_uohm = 100000",
                     joined), joined
    assert "rig telemetry UART is uart1 (/dev/ttyS1)" in joined
    assert re.search(r"comment '# P8_9 = GPIO2_4' of \[key:volume-down\] disagrees", joined)


HEADER = """/dts-v1/;
/plugin/;
#include <dt-bindings/gpio/gpio.h>
#include <dt-bindings/pinctrl/am33xx.h>
"""


def test_pad_claimed_twice_fails(fw_build, tmp_path):
    # the debug console's RXD pad muxed again by an enabled UART1
    src = HEADER + """
&am33xx_pinmux {
	bad_pins: bad-pins {
		pinctrl-single,pins = <
			AM33XX_PADCONF(AM335X_PIN_UART0_RXD, PIN_INPUT_PULLUP, MUX_MODE0)
			AM33XX_PADCONF(AM335X_PIN_UART1_RXD, PIN_INPUT_PULLUP, MUX_MODE0)
		>;
	};
};
&uart1 { pinctrl-names = "default"; pinctrl-0 = <&bad_pins>; status = "okay"; };
"""
    errors = tree_errors(*build_overlay(src, tmp_path), "target")
    assert any(re.search(r"pad 0x970 \(uart0_rxd\): pinmux offset 0x170 claimed by 2 "
                         r"enabled nodes: .*serial@0", e) for e in errors), errors


def test_node_on_disabled_controller_fails(fw_build, tmp_path):
    # a key on a GPIO bank the overlay disables, and an INA226 on an I2C
    # bus nobody enabled
    src = HEADER + """
&gpio3 { status = "disabled"; };
&{/} {
	keypad {
		compatible = "sbrig,keypad";
		key-x { gpios = <&gpio3 19 GPIO_ACTIVE_LOW>; linux,code = <1>; };
	};
};
&i2c1 {
	#address-cells = <1>;
	#size-cells = <0>;
	power-sensor@40 { compatible = "ti,ina226"; reg = <0x40>; };
};
"""
    errors = tree_errors(*build_overlay(src, tmp_path), "target")
    joined = "\n".join(errors)
    assert re.search(r"/keypad/key-x: gpios: GPIO controller .*gpio@0 is disabled", joined)
    assert re.search(r"i2c@0/power-sensor@40: enabled, but its controller .*i2c@0 is "
                     "disabled", joined)
    assert "/keypad/key-x: gpios: gpio3_19 is not a target pin of the table" in joined


def test_bad_nodes_fail_schema_validation(fw_build, tmp_path, validator):
    src = HEADER + """
&{/} {
	keypad {
		compatible = "sbrig,keypad";
		key-power { gpios = <&gpio0 22 GPIO_ACTIVE_LOW>; debounce-interval = <5000>; };
	};
	suspend-marker { compatible = "sbrig,suspend-marker"; };
	mystery { compatible = "sbrig,mystery"; };
};
"""
    dtbo, merged = build_overlay(src, tmp_path)
    findings = dtvalidate.overlay_findings(validator, BUILD / "am335x-boneblack.dtb",
                                           dtbo, merged)
    joined = "\n".join(findings)
    # dt-validate reports a child's findings on its parent
    assert re.search(r"^/keypad: keypad: key-power: 'linux,code' is a required property",
                     joined, re.M), joined
    assert re.search(r"^/keypad: keypad: key-power:debounce-interval:.*5000 is greater "
                     r"than the maximum of 1000", joined, re.M)
    assert re.search(r"^/suspend-marker: .*'marker-gpios' is a required property", joined, re.M)
    assert "/mystery: compatible sbrig,mystery matched no schema for it" in joined
