"""The udev rules of the package (host/udev/60-sbrig.rules and its helper
sbrig-iio-access, as ``make install`` installs them), applied by the real
udevadm to real devices: an amd64 guest (the host-interface guest's
programs plus this machine's udevadm) with a gpio-sim chip and Debian's
ina2xx-adc bound as an ina226 on i2c-stub.

A user in the "sbrig" group (``rig``, as a LAVA rig host's user) cannot
capture from the INA226 nor read the GPIO chip before; ``udevadm test``
matches the rules (group, mode of the device nodes, which it applies; the
RUN line with the device's sysfs path, which it prints but does not run:
the test runs it, as udev would); after that the user captures with the
real driver -- sbrig-powercat writes the shunt resistor, averaging,
integration times, current_timestamp_clock and the buffer -- and reads the
chip, and the attributes sbrigd does not write stay root's.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.test_host_interface import _setup_guest
from tests.test_power import INA_REGS, parse
from tests.vm import build, initramfs
from tests.vm.qemu import Vm

REPO = Path(__file__).resolve().parents[1]
GID = 999              # the "sbrig" group in the guest (a system group)
AS_RIG = "su rig -c '{}' 2>&1; echo rc=$?"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """make install's files (PREFIX=/usr) in a DESTDIR."""
    dest = tmp_path_factory.mktemp("udev") / "dest"
    subprocess.run(["make", "-C", str(REPO / "host"), "-j2", "install", "PREFIX=/usr",
                    f"DESTDIR={dest}"], check=True, capture_output=True, timeout=900)
    return dest


@pytest.fixture(scope="module")
def guest(installed):
    udevadm = shutil.which("udevadm")
    if not udevadm:
        pytest.fail("udevadm not found (Debian's udev package)")
    a = build.build_all("amd64")
    tools = [Path(shutil.which(t)) for t in build.HOSTIF_DEBIAN_TOOLS]
    img = initramfs.build_initramfs("amd64", a.kernel, a.modules, a.programs,
                                    host_programs=[*tools, Path(udevadm),
                                                   *build.build_host_programs()],
                                    name="initramfs-udev")
    vm = Vm("amd64", build.Artifacts("amd64", a.kernel, a.modules, a.programs, img, a.dtb),
            name="udev-rules")
    try:
        vm.start()
        found = _setup_guest(vm)
        for reg, value in INA_REGS.items():
            swapped = ((value & 0xFF) << 8) | (value >> 8)   # SMBus words are LE
            vm.run_ok(f"i2cset -f -y {found['i2c_bus']} 0x40 {reg} {swapped:#06x} w")
        vm.write_file("/etc/group", f"root:x:0:\nsbrig:x:{GID}:rig\nrig:x:1000:\n")
        vm.write_file("/etc/passwd", "root:x:0:0:root:/root:/bin/sh\n"
                                     "rig:x:1000:1000:rig:/tmp:/bin/sh\n")
        vm.run_ok("mkdir -p /etc/udev/rules.d /usr/libexec/sbrig")
        vm.write_file("/usr/libexec/sbrig/sbrig-iio-access",
                      (installed / "usr/libexec/sbrig/sbrig-iio-access").read_text(), 0o755)
        vm.found = found
        yield vm
    finally:
        vm.shutdown()


def as_rig(vm: Vm, cmd: str, timeout: float = 60) -> tuple[bool, str]:
    _, out = vm.run(AS_RIG.format(cmd), timeout=timeout)
    m = re.search(r"rc=(\d+)\s*$", out)
    assert m, out
    return m.group(1) == "0", out


def test_the_rules_give_the_sbrig_group_the_rigs_devices(guest, installed):
    vm = guest
    iio = vm.found["iio_dir"]
    chip = Path(vm.found["sim_dir"]).name
    capture = "sbrig-powercat -s 10000 -r 893 -n 200 local:"
    assert "groups=999(sbrig)" in vm.run_ok(AS_RIG.format("id"))

    # before: the rig user may neither capture nor read the chip
    ok, out = as_rig(vm, capture)
    assert not ok and "Permission denied" in out, out
    ok, out = as_rig(vm, f"gpioinfo --chip {chip}")
    assert not ok, out

    vm.write_file("/etc/udev/rules.d/60-sbrig.rules",
                  (installed / "lib/udev/rules.d/60-sbrig.rules").read_text())
    out = vm.run_ok(f"udevadm test --action=add {iio} 2>&1", timeout=120)
    assert f"60-sbrig.rules:15 GROUP {GID}" in out and "60-sbrig.rules:15 MODE 0660" in out, out
    run = re.findall(r"^run: '(.*)'$", out, re.M)
    devpath = vm.run_ok(f"readlink -f {iio}").strip()
    assert run == [f"/usr/libexec/sbrig/sbrig-iio-access sbrig {devpath}"], out
    out = vm.run_ok(f"udevadm test --action=add /sys/bus/gpio/devices/{chip} 2>&1",
                    timeout=120)
    assert f"60-sbrig.rules:8 GROUP {GID}" in out and not re.search("^run:", out, re.M), out
    nodes = vm.run_ok(f"stat -c '%n %G %a' /dev/iio:device0 /dev/{chip}").split("\n")
    assert nodes[:2] == ["/dev/iio:device0 sbrig 660", f"/dev/{chip} sbrig 660"], nodes
    # what udev would run (udevadm test only prints it)
    vm.run_ok(run[0])

    # after: the rig user captures with the real driver, reads the chip
    ok, out = as_rig(vm, capture, timeout=120)
    assert ok, out
    samples, _, _, info = parse(out.splitlines())
    assert len(samples) == 200 and info["shunt_uohm"] == "10000", out
    assert float(info["rate_hz"]) == pytest.approx(1e6 / 1120, rel=1e-4)   # 2 x 140 us x 4
    ok, out = as_rig(vm, f"gpioinfo --chip {chip}")
    assert ok and "line   0" in out, out
    # the attributes sbrigd does not write are still root's alone
    rest = vm.run_ok(f"cd {iio}/ && stat -c '%n %G %a' in_allow_async_readout "
                     "in_voltage0_raw uevent buffer/data_available scan_elements/"
                     "in_voltage0_index").split("\n")
    assert rest[:5] == ["in_allow_async_readout root 644", "in_voltage0_raw root 644",
                        "uevent root 644", "buffer/data_available root 444",
                        "scan_elements/in_voltage0_index root 444"], rest
