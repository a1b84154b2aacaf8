"""Host-interface VM test: the rig's real I/O paths against real drivers.

One amd64 guest ("hostif", booted once for this module) plays the rig
host. Its "hardware" is kernel simulation under the real drivers, set up
by the ``hostif`` fixture:

* GPIO: gpio-sim (built out of tree, tests/target/gpio_sim) with a bank of
  8 lines labelled ``sbrig-sim`` created through configfs. Outputs are read
  and the marker input is driven through gpio-sim's sysfs
  (``sim_gpioN/value``, ``sim_gpioN/pull``).
* Power: i2c-stub at 0x40 with Debian's ina2xx-adc bound as ``ina226``;
  the test writes its registers through i2c-dev (``i2cset``; INA226 words
  are big-endian, SMBus words little-endian, so they are byte-swapped).
* Target link: the guest's ttyS1, a real 16550 whose other end is a unix
  socket this test holds.

Inside run the release builds of host/ (sbrigd, sbrig, sbrig-gpio) and
Debian's libgpiod/libiio tools, copied with their shared libraries into an
initramfs variant (tests.vm.build.build_hostif). The rig description is
rig/vm-hostif.conf. amd64 only: armmp has no gpio-sim or i2c-stub.
"""

from __future__ import annotations

import os
import re
import shlex
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.vm.build import build_hostif
from tests.vm.qemu import Vm

REPO = Path(__file__).resolve().parents[1]
RIG_CONF = REPO / "rig" / "vm-hostif.conf"
GUEST_CONF = "/tmp/rig.conf"
SOCK = "/tmp/sbrig.sock"

CHIP_LABEL = "sbrig-sim"
NUM_LINES = 8
# line offsets of rig/vm-hostif.conf
LINE_POWER, LINE_CHARGER, LINE_MARKER, LINE_VOLUP = 0, 1, 2, 3

INA_ADDR = 0x40
SHUNT_UOHM = 10000      # rig/vm-hostif.conf [power] shunt_uohm
# ina2xx-adc's INA226 constants (drivers/iio/adc/ina2xx-adc.c)
SHUNT_LSB_NV = 2500
BUS_LSB_UV = 1250
POWER_LSB_FACTOR = 25
# registers
REG_SHUNT, REG_BUS, REG_POWER, REG_CURRENT, REG_CAL, REG_MASK = 1, 2, 3, 4, 5, 6
CVRF = 1 << 3           # conversion ready: the capture thread waits for it


@dataclass
class HostIf:
    vm: Vm
    uart: socket.socket     # the host end of the guest's ttyS1
    sim_dir: str            # /sys/devices/platform/gpio-sim.N/gpiochipM
    i2c_bus: int
    iio_dir: str            # /sys/bus/iio/devices/iio:deviceN

    def sim(self, line: int, attr: str = "value") -> str:
        return f"{self.sim_dir}/sim_gpio{line}/{attr}"

    def sim_value(self, line: int) -> int:
        return int(self.vm.run_ok(f"cat {self.sim(line)}").strip())

    def set_reg(self, reg: int, value: int) -> None:
        """Write an INA226 register as the chip would hold it (big-endian)."""
        swapped = ((value & 0xFF) << 8) | (value >> 8)
        self.vm.run_ok(f"i2cset -f -y {self.i2c_bus} {INA_ADDR:#x} {reg} "
                       f"{swapped:#06x} w")


GUEST_SETUP = r"""
set -e
modprobe configfs
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
modprobe gpio-sim
g=/sys/kernel/config/gpio-sim/sbrig
mkdir $g $g/bank0
echo @NUM_LINES@ > $g/bank0/num_lines
echo @LABEL@ > $g/bank0/label
echo 1 > $g/live
dev=$(cat $g/dev_name); chip=$(cat $g/bank0/chip_name)
echo "sim_dir=/sys/devices/platform/$dev/$chip"
modprobe i2c-stub chip_addr=@ADDR@
modprobe i2c-dev
modprobe ina2xx-adc
bus=
for d in /sys/bus/i2c/devices/i2c-*; do
	if [ "$(cat $d/name)" = "SMBus stub driver" ]; then bus=${d##*-}; fi
done
[ -n "$bus" ]
echo "i2c_bus=$bus"
echo ina226 @ADDR@ > /sys/bus/i2c/devices/i2c-$bus/new_device
for d in /sys/bus/iio/devices/iio:device*; do
	if [ "$(cat $d/name)" = ina226 ]; then echo "iio_dir=$d"; fi
done
"""


def _setup_guest(vm: Vm) -> dict[str, str]:
    script = (GUEST_SETUP.replace("@NUM_LINES@", str(NUM_LINES))
              .replace("@LABEL@", CHIP_LABEL).replace("@ADDR@", f"{INA_ADDR:#x}"))
    out = vm.run_ok("(" + script + ")", timeout=60)
    found = dict(re.findall(r"^(\w+)=(\S+)$", out, re.M))
    missing = {"sim_dir", "i2c_bus", "iio_dir"} - set(found)
    assert not missing, f"guest setup did not report {missing}:\n{out}"
    return found


@pytest.fixture(scope="module")
def hostif():
    artifacts = build_hostif("amd64")
    tmp = tempfile.mkdtemp(prefix="sbrig-hostif-")
    uart_path = os.path.join(tmp, "ttyS1.sock")
    vm = Vm("amd64", artifacts, name="hostif", extra_qemu_args=[
        "-chardev", f"socket,id=uart1,path={uart_path},server=on,wait=off",
        "-serial", "chardev:uart1"])
    vm.start()
    uart = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        uart.connect(uart_path)
        found = _setup_guest(vm)
        h = HostIf(vm, uart, found["sim_dir"], int(found["i2c_bus"]),
                   found["iio_dir"])
        vm.write_file(GUEST_CONF, RIG_CONF.read_text())
        yield h
    finally:
        uart.close()
        vm.shutdown()


def _recv_until(sock: socket.socket, pattern: bytes, timeout: float = 10) -> bytes:
    data = b""
    end = time.monotonic() + timeout
    while pattern not in data:
        left = end - time.monotonic()
        if left <= 0:
            raise AssertionError(f"{pattern!r} not received in {timeout} s; got {data!r}")
        sock.settimeout(left)
        chunk = sock.recv(4096)
        if not chunk:
            raise AssertionError(f"socket closed before {pattern!r}; got {data!r}")
        data += chunk
    return data


def _monotonic_ns(vm: Vm) -> int:
    """The guest's CLOCK_MONOTONIC, close enough (/proc/uptime is BOOTTIME,
    equal to MONOTONIC in a guest that never slept), in ns."""
    return int(float(vm.run_ok("cut -d' ' -f1 /proc/uptime")) * 1e9)


# ----------------------------------------------------- the simulated rig --

def test_gpio_sim_bank_with_debian_tools(hostif):
    """gpio-sim gives a labelled chip; libgpiod's own tools drive an output
    (seen in sim_gpioN/value) and read an input whose pull the test sets."""
    vm = hostif.vm
    assert re.search(rf"\[{CHIP_LABEL}\] \({NUM_LINES} lines\)",
                     vm.run_ok("gpiodetect")), vm.run_ok("gpiodetect")
    chip = vm.run_ok("gpiodetect").split()[0]
    # -z: gpioset holds the line from a daemon once requested
    vm.run_ok(f"gpioset -z -c {chip} {LINE_VOLUP + 1}=1")
    try:
        assert hostif.sim_value(LINE_VOLUP + 1) == 1
    finally:
        vm.run_ok("kill $(pidof gpioset)")
    for pull, want in (("pull-up", "active"), ("pull-down", "inactive")):
        vm.run_ok(f"echo {pull} > {hostif.sim(LINE_VOLUP + 2, 'pull')}")
        assert vm.run_ok(f"gpioget -c {chip} {LINE_VOLUP + 2}").strip() == \
            f'"{LINE_VOLUP + 2}"={want}'


def test_ina226_registers_through_iio_sysfs(hostif):
    """Register values written through i2c-dev come out of the real
    ina2xx-adc driver with its documented scales."""
    vm = hostif.vm
    hostif.set_reg(REG_SHUNT, 0x1234)
    hostif.set_reg(REG_BUS, 4000)               # 5.000 V
    attrs = vm.run_ok(f"cd {hostif.iio_dir} && cat in_voltage0_raw "
                      f"in_voltage1_raw in_voltage0_scale in_voltage1_scale "
                      f"in_current3_scale in_shunt_resistor").split()
    assert [int(attrs[0]), int(attrs[1])] == [0x1234, 4000]
    assert [float(x) for x in attrs[2:5]] == pytest.approx(
        [SHUNT_LSB_NV / 1e6, BUS_LSB_UV / 1e3, SHUNT_LSB_NV / SHUNT_UOHM])
    assert float(attrs[5]) == pytest.approx(SHUNT_UOHM / 1e6)


def test_uart_reaches_the_test_socket(hostif):
    """ttyS1 is a 16550 whose other end is this test's socket, both ways."""
    vm = hostif.vm
    vm.run_ok("stty -F /dev/ttyS1 115200 raw -echo")
    vm.run_ok("printf 'hello-from-guest\\n' > /dev/ttyS1")
    _recv_until(hostif.uart, b"hello-from-guest\n")
    bg = vm.start_bg("head -c 14 /dev/ttyS1")
    vm.run_ok("sleep 0.2")  # let head open the port before bytes arrive
    hostif.uart.sendall(b"hello-to-guest")
    assert bg.wait(10) == 0
    assert bg.output() == "hello-to-guest"


# ------------------------------------------------- libsbrig's gpio module --

def test_gpio_lib_outputs_by_label(hostif):
    """lib/gpio.c (through sbrig-gpio) finds the chip by its label, requests
    outputs inactive (an active-low key reads 1 in sysfs), and drives them;
    lines go inactive again when released."""
    vm = hostif.vm
    tool = f"sbrig-gpio {GUEST_CONF}"
    bg = vm.start_bg(f"{tool} set charger 1 5000")
    bg.wait_output(r"^charger 1 [0-9]+$", 20)
    assert hostif.sim_value(LINE_CHARGER) == 1
    assert hostif.sim_value(LINE_VOLUP) == 1      # active low, released
    assert hostif.sim_value(LINE_POWER) == 0
    bg.kill()
    bg.wait(10)
    bg = vm.start_bg(f"{tool} set volume-up 1 5000")
    bg.wait_output(r"^volume-up 1 ", 20)
    assert hostif.sim_value(LINE_VOLUP) == 0      # active low, pressed
    assert hostif.sim_value(LINE_CHARGER) == 0    # requested inactive
    bg.kill()
    bg.wait(10)
    rc, out = vm.run(f"{tool} set nosuch 1")
    assert rc == 1 and "no output line 'nosuch'" in out


def test_gpio_lib_marker_edges(hostif):
    """Marker edges arrive in order with line seqnos and kernel CLOCK_MONOTONIC
    timestamps between the guest's clock readings around the flips."""
    vm = hostif.vm
    vm.run_ok(f"echo pull-down > {hostif.sim(LINE_MARKER, 'pull')}")
    bg = vm.start_bg(f"sbrig-gpio {GUEST_CONF} edges 2 20000")
    bg.wait_output("^ready$", 20)
    t0 = _monotonic_ns(vm)
    vm.run_ok(f"echo pull-up > {hostif.sim(LINE_MARKER, 'pull')}")
    vm.run_ok(f"echo pull-down > {hostif.sim(LINE_MARKER, 'pull')}")
    assert bg.wait(30) == 0, bg.output()
    t1 = _monotonic_ns(vm)
    edges = re.findall(r"^marker (rising|falling) (\d+) (\d+)$", bg.output(), re.M)
    assert [(e[0], int(e[1])) for e in edges] == [("rising", 1), ("falling", 2)], \
        bg.output()
    ts = [int(e[2]) for e in edges]
    # /proc/uptime has 10 ms resolution
    assert t0 - 10_000_000 <= ts[0] <= ts[1] <= t1 + 10_000_000, (t0, ts, t1)
