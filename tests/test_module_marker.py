"""suspend_block's marker line (kernel-module/marker.c): a GPIO output
asserted while a suspend blocker is active, deasserted while none is.

amd64 has no device tree: the line is named by the ``marker`` parameter
(CHIP_LABEL:OFFSET), on

* ``sb_wire`` (tests/target/sb_wire, a test GPIO chip that is a piece of
  wire, with a read-only ``level`` and an ``edges`` count, what a logic
  analyser on the wire would show): a controller that does not sleep (the
  marker is written in the state change itself) and, loaded with
  ``can_sleep=1``, one that does (written from a work item);
* gpio-sim (a real controller that sleeps; a chip that appears after the
  module, so the marker's probe waits for it).

armhf (arm ``virt``, the BeagleBone stand-in) takes it from the device
tree, as firmware/sbrig-target.dts describes it for the BeagleBone: an
"sbrig,suspend-marker" node on QEMU's PL061.

The level follows the blockers only when "main" is released, which in the
opportunistic policy means a sleep state is requested: the tests keep the
target awake meanwhile with a mainline wakeup source (sb_test's ws_on),
which holds suspend off without being a blocker. The rig's side (sbrigd
timestamping the marker's edges and pairing them with the events) is the
marker test of tests/test_host_interface.py.
"""

from __future__ import annotations

import dataclasses
import re
import time
from contextlib import contextmanager

import pytest

import sbtarget as sb
from tests.vm.build import build_all
from tests.vm.qemu import Vm, arm_dtb_variant

# also on the amd64-debug guest (lockdep, KASAN, UBSAN, kmemleak)
pytestmark = pytest.mark.debug_kernel

WIRE = "/sys/module/sb_wire/parameters"


def _wire(vm) -> tuple[int, int]:
    """(level, edges) of sb_wire."""
    out = vm.run_ok(f"cat {WIRE}/level {WIRE}/edges").split()
    return (1 if out[0] == "Y" else 0), int(out[1])


def _edges_settled(vm) -> bool:
    """sb_wire's edge count did not move over 100 ms."""
    a, b = vm.run_ok(f"cat {WIRE}/edges; usleep 100000; cat {WIRE}/edges").split()
    return a == b


def _debugfs_marker(vm) -> str | None:
    """The marker's line in debugfs gpio ("out hi", "out lo"), None if no
    line is requested as suspend-marker."""
    m = re.search(r"\|suspend-marker\s*\)\s+(out|in)\s+(hi|lo)",
                  vm.run_ok("cat /sys/kernel/debug/gpio"))
    return f"{m.group(1)} {m.group(2)}" if m else None


def _wait(vm, what: str, cond, timeout: float = 10.0):
    """Poll cond() (an observable state) until true; its last value."""
    end = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        vm.run_ok("usleep 20000")


@contextmanager
def main_released(vm):
    """Opportunistic policy with "mem" requested (main released), the
    target kept awake by sb_test's mainline wakeup source; restored after."""
    sb.ctl(vm, "ws_on")
    try:
        vm.run_ok(f"echo opportunistic > {sb.SYSFS}/policy; echo mem > {sb.SYSFS}/state")
        yield
    finally:
        vm.run_ok(f"echo on > {sb.SYSFS}/state; echo forced > {sb.SYSFS}/policy")
        sb.ctl(vm, "ws_off")


def _load_wire(vm, **params) -> None:
    vm.run("rmmod sb_test 2>/dev/null; rmmod suspend_block 2>/dev/null; "
           "rmmod sb_wire 2>/dev/null; true")
    vm.load_module("sb_wire", **params)


# ------------------------------------------------------------------ amd64 --

@pytest.mark.arch("amd64")
def test_a_wire_that_does_not_sleep_is_written_in_the_state_change(vm):
    _load_wire(vm)
    sb.reload(vm, marker="sbrig-wire:0")
    assert "written in the state change (atomic)" in vm.dmesg()
    # forced policy: "main" is active, so the marker is up from the start
    assert _wire(vm)[0] == 1
    assert _debugfs_marker(vm) == "out hi"
    with main_released(vm):
        level, edges = _wire(vm)
        assert level == 0
        # in the state change itself: the level is right when the call
        # that changed it returns, without waiting for anything
        out = vm.run_ok(f"sbctl hold m1 -- cat {WIRE}/level; cat {WIRE}/level")
        assert out.split() == ["Y", "N"], out
        for _ in range(5):
            vm.run_ok("sbctl hold m2 -- true")
        # and from a hard interrupt (sb_test's hrtimer)
        sb.ctl(vm, "block_after_ms 1")
        _wait(vm, "the timer's block", lambda: _wire(vm)[0] == 1)
        sb.ctl(vm, "unblock")
        assert _wire(vm) == (0, edges + 2 + 10 + 2)


@pytest.mark.arch("amd64")
def test_a_wire_that_sleeps_gets_every_change_from_a_work_item(vm):
    _load_wire(vm, can_sleep=1)
    sb.reload(vm, marker="sbrig-wire:0")
    assert "written from a work item (the controller sleeps)" in vm.dmesg()
    _wait(vm, "the marker up", lambda: _wire(vm)[0] == 1)
    with main_released(vm):
        _wait(vm, "the marker down", lambda: _wire(vm)[0] == 0)
        edges = _wire(vm)[1]
        for _ in range(5):
            vm.run_ok("sbctl hold m3 -- true")
        # every change is written, in order, one edge each
        _wait(vm, "ten more edges", lambda: _wire(vm)[1] == edges + 10)
        assert _wire(vm)[0] == 0
        # a burst faster than the work (sb_test's bench: 400 000 changes,
        # 6 250 at a time with preemption off): pulses dropped in pairs,
        # the level right at the end, and a warning that says so
        dm = len(vm.dmesg())
        sb.ctl(vm, "bench 200000")
        _wait(vm, "the work to catch up", lambda: _edges_settled(vm))
        level, after = _wire(vm)
        assert level == 0
        burst = after - edges - 10
        assert burst % 2 == 0 and 0 < burst < 400000, burst
        assert "marker changes dropped in pairs" in vm.dmesg()[dm:]
        sb.ctl(vm, "block")
        _wait(vm, "the marker up again", lambda: _wire(vm)[0] == 1)
        sb.ctl(vm, "unblock")
        _wait(vm, "the marker down again", lambda: _wire(vm)[0] == 0)


@pytest.mark.arch("amd64")
def test_unloading_deasserts_the_marker_and_frees_the_line(vm):
    _load_wire(vm)
    sb.reload(vm, marker="sbrig-wire:0")
    assert _wire(vm)[0] == 1
    vm.run_ok("rmmod sb_test; rmmod suspend_block")
    assert _wire(vm)[0] == 0
    assert _debugfs_marker(vm) is None
    # and the wire can go: nothing holds it
    vm.run_ok("rmmod sb_wire")


WIRE_DRV = "/sys/bus/platform/drivers/sb_wire"
MARKER_DEV = "/sys/bus/platform/devices/sbrig-suspend-marker"


@pytest.mark.arch("amd64")
def test_the_marker_goes_with_its_controller_and_comes_back_with_it(vm):
    """The marker parameter's device is linked to the GPIO controller: when
    the controller is unbound, the marker is unbound first (its line freed,
    never written stale), and when the controller is bound again the
    marker comes back by itself. Without the link the chip went away with
    the line still requested ("REMOVING GPIOCHIP WITH GPIOS STILL
    REQUESTED") and later writes went to a descriptor without a chip."""
    _load_wire(vm)
    sb.reload(vm, marker="sbrig-wire:0")
    assert _wire(vm)[0] == 1
    assert vm.run(f"test -e {MARKER_DEV}/driver")[0] == 0
    dm = len(vm.dmesg())
    vm.run_ok(f"echo sb_wire.0 > {WIRE_DRV}/unbind")
    assert vm.run(f"test -e {MARKER_DEV}/driver")[0] != 0   # unbound first
    sb.ctl(vm, "block")                                     # nothing to write
    sb.ctl(vm, "unblock")
    vm.run_ok(f"echo sb_wire.0 > {WIRE_DRV}/bind")
    _wait(vm, "the marker bound again",
          lambda: vm.run(f"test -e {MARKER_DEV}/driver")[0] == 0)
    _wait(vm, "the marker up again", lambda: _wire(vm)[0] == 1)
    log = vm.dmesg()[dm:]
    assert "STILL REQUESTED" not in log and "invalid GPIO" not in log, log
    with main_released(vm):
        _wait(vm, "the marker down", lambda: _wire(vm)[0] == 0)
        assert vm.run_ok(f"sbctl hold m5 -- cat {WIRE}/level").split() == ["Y"]


@pytest.mark.arch("amd64")
@pytest.mark.s3
def test_the_marker_is_not_written_while_its_controller_is_suspended(vm):
    """From the marker's suspend_late to its resume_early the controller
    may be suspended (sb_wire counts writes between its own suspend_late
    and resume_early): a blocker activated then (sb_test blocks in its
    noirq callback, which aborts the attempt) does not write the line, and
    after the resume the line shows the level of the moment."""
    _load_wire(vm)
    sb.reload(vm, marker="sbrig-wire:0")
    seq0 = sb.last_seq(vm)
    sb.ctl(vm, "block_in_noirq")
    vm.run_ok(f"echo opportunistic > {sb.SYSFS}/policy; echo mem > {sb.SYSFS}/state")
    try:
        evs = _wait(vm, "the aborted attempt", lambda: [
            e for e in sb.events_after(vm, seq0) if e.type == "abort"] and
            sb.events_after(vm, seq0), timeout=60)
        blocked = [e for e in evs if e.type == "block" and e.name == "sb_test"]
        assert blocked, evs
        assert int(vm.run_ok(f"cat {WIRE}/suspended_writes")) == 0
        _wait(vm, "the marker up after the resume", lambda: _wire(vm)[0] == 1)
    finally:
        vm.run_ok(f"echo on > {sb.SYSFS}/state; echo forced > {sb.SYSFS}/policy")
        sb.ctl(vm, "unblock")


@pytest.mark.arch("amd64")
@pytest.mark.parametrize("spec", ["nocolon", ":3", "sbrig-wire:", "sbrig-wire:x",
                                  "sbrig-wire:70000"])
def test_a_malformed_marker_parameter_fails_the_load_naming_it(vm, spec):
    vm.run("rmmod sb_test 2>/dev/null; rmmod suspend_block 2>/dev/null; true")
    dm = len(vm.dmesg())
    rc, out = vm.run(f"modprobe suspend_block marker={spec}")
    assert rc != 0, out
    assert f"marker={spec}: expected CHIP_LABEL:OFFSET" in vm.dmesg()[dm:]
    assert vm.run("[ -d /sys/module/suspend_block ]")[0] != 0
    sb.reload(vm)


@pytest.mark.arch("amd64")
def test_a_line_the_chip_does_not_have_fails_the_probe_only(vm):
    _load_wire(vm)
    dm = len(vm.dmesg())
    sb.reload(vm, marker="sbrig-wire:9")
    log = vm.dmesg()[dm:]
    assert re.search(r"sbrig-suspend-marker: .*no usable marker line", log), log
    assert "out of range" in log, log
    assert _debugfs_marker(vm) is None
    # the rest of the module works
    seq = sb.last_seq(vm)
    vm.run_ok("sbctl hold m4 -- true")
    assert [(e.type, e.name) for e in sb.events_after(vm, seq)] == [
        ("block", "m4"), ("unblock", "m4")]


GPIO_SIM_BANK = r"""
set -e
modprobe configfs
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
modprobe gpio-sim
g=/sys/kernel/config/gpio-sim/@NAME@
mkdir $g $g/bank0
echo 4 > $g/bank0/num_lines
echo @NAME@ > $g/bank0/label
echo 1 > $g/live
echo "sim_dir=/sys/devices/platform/$(cat $g/dev_name)/$(cat $g/bank0/chip_name)"
"""


def _gpio_sim_bank(vm, name: str) -> str:
    # in a subshell: its "set -e" must not stay in the harness's shell
    out = vm.run_ok("(" + GPIO_SIM_BANK.replace("@NAME@", name) + ")")
    return re.search(r"^sim_dir=(\S+)$", out, re.M).group(1)


def _gpio_sim_remove(vm, name: str) -> None:
    g = f"/sys/kernel/config/gpio-sim/{name}"
    vm.run(f"[ -d {g} ] && {{ echo 0 > {g}/live; rmdir {g}/bank0 {g}; }}; true")


@pytest.mark.arch("amd64")
def test_the_marker_waits_for_a_chip_that_appears_later(vm):
    """gpio-sim: a real controller that sleeps, created after the module."""
    _gpio_sim_remove(vm, "sbmark")
    sb.reload(vm, marker="sbmark:2")
    try:
        deferred = vm.run_ok("cat /sys/kernel/debug/devices_deferred")
        assert "sbrig-suspend-marker" in deferred, deferred
        sim = _gpio_sim_bank(vm, "sbmark")
        # the new chip's device binding retries the deferred probe
        _wait(vm, "the marker bound", lambda: _debugfs_marker(vm))
        _wait(vm, "the marker up", lambda: vm.run_ok(
            f"cat {sim}/sim_gpio2/value").strip() == "1")
        with main_released(vm):
            _wait(vm, "the marker down", lambda: vm.run_ok(
                f"cat {sim}/sim_gpio2/value").strip() == "0")
            bg = vm.start_bg("exec sbctl hold m5 -- sleep 600")
            _wait(vm, "the marker up", lambda: vm.run_ok(
                f"cat {sim}/sim_gpio2/value").strip() == "1")
            bg.kill()
            _wait(vm, "the marker down", lambda: vm.run_ok(
                f"cat {sim}/sim_gpio2/value").strip() == "0")
    finally:
        sb.reload(vm)
        _gpio_sim_remove(vm, "sbmark")


# ------------------------------------------------------------------ armhf --

def _add_marker(dts: str) -> str:
    """An sbrig,suspend-marker node on PL061 pin 0, as the BeagleBone
    overlay has one on gpio1_17 (the PL061's phandle from the power key)."""
    m = re.search(r"poweroff \{[^}]*?gpios = <(0x[0-9a-f]+) ", dts, re.S)
    assert m, "no poweroff key gpios in QEMU's virt DTB"
    node = ("\n\tsuspend-marker {\n\t\tcompatible = \"sbrig,suspend-marker\";\n"
            f"\t\tmarker-gpios = <{m.group(1)} 0x00 0x00>;\n\t}};\n")
    i = dts.rindex("};")
    return dts[:i] + node + dts[i:]


@pytest.fixture(scope="module")
def mvm():
    art = dataclasses.replace(build_all("armhf"),
                              dtb=arm_dtb_variant("virt-sbrig-marker.dtb", _add_marker))
    v = Vm("armhf", art, name="armhf-marker")
    v.start()
    try:
        sb.reload(v)
        yield v
    finally:
        v.shutdown()


def test_the_device_tree_node_drives_a_pl061_line(mvm):
    log = mvm.dmesg()
    assert re.search(r"suspend-marker: marker on GPIO \d+, written in the state "
                     r"change \(atomic\)", log), log
    assert _debugfs_marker(mvm) == "out hi"          # "main" is active
    with main_released(mvm):
        assert _debugfs_marker(mvm) == "out lo"
        out = mvm.run_ok("sbctl hold m6 -- cat /sys/kernel/debug/gpio")
        assert re.search(r"\|suspend-marker\s*\)\s+out hi", out), out
        assert _debugfs_marker(mvm) == "out lo"


def test_unloading_releases_the_pl061_line(mvm):
    mvm.run_ok("rmmod sb_test; rmmod suspend_block")
    assert _debugfs_marker(mvm) is None
    sb.reload(mvm)
    assert _debugfs_marker(mvm) == "out hi"


def test_a_second_marker_device_is_refused_with_ebusy(mvm):
    """Documentation/suspend-block.rst: the first marker device bound
    wins; another fails its probe with EBUSY. Here the device tree's node
    (PL061 pin 0) and the marker parameter (pin 1 of the same PL061) make
    two: one drives the marker, the other is refused, saying which one
    drives it, and its line is not taken."""
    chips = mvm.run_ok("cat /sys/class/gpio/gpiochip*/label").split()
    pl061 = [c for c in chips if "pl061" in c]
    assert len(pl061) == 1, chips
    dm = len(mvm.dmesg())
    try:
        sb.reload(mvm, marker=f"{pl061[0]}:1")
        log = mvm.dmesg()[dm:]
        # whichever bound second (the node's or the parameter's device)
        refused = re.findall(r"\S+: error -EBUSY: (\S+) already drives "
                             r"the marker", log)
        assert len(refused) == 1, log
        assert len(re.findall(r"marker on GPIO \d+, written", log)) == 1, log
        lines = re.findall(r"\|suspend-marker\s*\)",
                           mvm.run_ok("cat /sys/kernel/debug/gpio"))
        assert len(lines) == 1, lines
        assert _debugfs_marker(mvm) == "out hi"          # "main" is active
        with main_released(mvm):
            assert _debugfs_marker(mvm) == "out lo"
    finally:
        sb.reload(mvm)
    assert _debugfs_marker(mvm) == "out hi"
