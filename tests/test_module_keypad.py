"""suspend_block's "sbrig,keypad" GPIO keypad driver (keypad.c) on arm
``virt``, the BeagleBone stand-in.

The keypad is real hardware as QEMU emulates it: QEMU's virt machine has a
power key on PL061 GPIO pin 3 (QMP system_powerdown pulses it for 100 ms).
This guest's DTB (its own VM) describes that key's node as an
"sbrig,keypad" (firmware/bindings/sbrig,keypad.yaml, on branch hw)
instead of gpio-keys, with debounce-interval 20 and wakeup-source, so our driver
binds it: the key's interrupt -> keypad-scan -> debounce/scan -> input
events -> released once no key is down.
"""

from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path

import pytest

import sbtarget as sb
from tests.vm.build import build_all
from tests.vm.qemu import Vm, VmTimeout, arm_dtb_variant

MS = 1_000_000


def _keypad_dtb(broken: bool = False, debounce_ms: int = 20) -> Path:
    """QEMU's virt DTB with its power key as an sbrig,keypad; ``broken``:
    the key has no linux,code (a probe error)."""
    def edit(dts: str) -> str:
        # (renamed too: the platform bus would match gpio-keys by name)
        dts, n = re.subn(r'gpio-keys (\{\s*compatible = )"gpio-keys"',
                         r'sbrig-keypad \1"sbrig,keypad"', dts)
        assert n == 1, "no gpio-keys node in QEMU's virt DTB"
        dts = dts.replace("wakeup-source;", "wakeup-source;\n\t\t\t"
                          f"debounce-interval = <{debounce_ms:#x}>;", 1)
        if broken:
            dts, n = re.subn(r"\n\s*linux,code = <[^>]*>;", "", dts, count=1)
            assert n == 1
        return dts
    name = "virt-sbrig-keypad" + ("-broken" if broken else "") + \
        (f"-{debounce_ms}ms" if debounce_ms != 20 else "")
    return arm_dtb_variant(f"{name}.dtb", edit)


@pytest.fixture(scope="module")
def kvm():
    art = dataclasses.replace(build_all("armhf"), dtb=_keypad_dtb())
    vm = Vm("armhf", art, name="armhf-keypad")
    vm.start()
    try:
        vm.load_module("suspend_block")
        yield vm
    finally:
        vm.shutdown()


def _node(vm) -> str:
    out = vm.run_ok("for d in /sys/class/input/sbevent*; do "
                    "echo ${d##*/} $(cat $d/device/name); done")
    for line in out.replace("\r", "").splitlines():
        node, _, name = line.partition(" ")
        if name == "sbrig-keypad":
            return node
    raise AssertionError(f"no sbrig-keypad input device: {out}")


def _kinds(evs):
    return [(e.type, e.name) for e in evs if e.type in ("block", "unblock")
            and e.name in ("keypad-scan", "evdev", "unknown_wakeups")]


def test_the_node_binds_and_a_press_holds_keypad_scan(kvm):
    vm = kvm
    node = _node(vm)
    # gpio-keys did not take the key: our driver did
    assert vm.run_ok("ls /sys/bus/platform/drivers/sbrig-keypad").split().count(
        "sbrig-keypad") == 1
    seq0 = sb.last_seq(vm)
    bg = vm.start_bg("sbevtool node:sbrig-keypad open optin sleep:1500 read")
    bg.wait_output("optin rc=0", timeout=30)
    vm.qmp("system_powerdown")          # 100 ms on PL061 pin 3
    assert bg.wait(timeout=30) == 0
    out = bg.output().replace("\r", "").splitlines()
    assert out[0] == f"node {node}" and out[-1] == \
        "read n=4 syn_dropped=0 keys=116:1,116:0", out
    evs = sb.events_after(vm, seq0)
    # the interrupt takes keypad-scan before the press is queued; it is
    # released after the release has been reported (the unread queue's
    # evdev stays active until the read)
    assert _kinds(evs) == [("block", "keypad-scan"), ("block", "evdev"),
                           ("unblock", "keypad-scan"), ("unblock", "evdev")]
    ks = [e for e in evs if e.name == "keypad-scan"]
    # the 100 ms press plus the 20 ms debounce of the release
    assert 110 * MS <= ks[1].t_ns - ks[0].t_ns < 2000 * MS


def _press_cycle(vm) -> tuple[list[sb.Event], str | None]:
    """opportunistic freeze -> asleep -> a press wakes it -> asleep again
    by itself -> a press again, which sb_test's resume blocker keeps up
    (the shell back). Each press waits for "PM: suspend-to-idle"
    (pm_debug_messages, KERN_DEBUG on the console): the devices are
    suspended, so the key wakes the sleep, not the attempt to enter it.
    Returns (the records, None), or (the records, why) when the documented
    race happened: under TCG an s2idle entry is sometimes aborted by a late
    wakeup event (an abort record), which shifts sb_test's resume count;
    the second press may then find nothing to wake or leave the shell
    asleep. Anything else fails."""
    vm.load_module("sb_test")
    sb.ctl(vm, "hold_after_resumes 2")
    level = vm.run_ok("cut -f1 /proc/sys/kernel/printk").strip()
    vm.run_ok("echo 1 > /sys/power/pm_debug_messages; echo 8 > /proc/sys/kernel/printk")
    seq0 = sb.last_seq(vm)
    cmark = vm.console_mark()
    pending = vm.run_async(f"echo opportunistic > {sb.SYSFS}/policy; "
                           f"echo freeze > {sb.SYSFS}/state")
    end = time.monotonic() + 30

    def wait_asleep(n: int) -> bool:
        while vm.console_text(cmark).count("PM: suspend-to-idle") < n:
            if time.monotonic() > end:
                return False
            time.sleep(0.05)
        return True

    stuck = None
    try:
        asleep = wait_asleep(1)
        if asleep:
            vm.qmp("system_powerdown")      # the keypad's wake interrupt
            asleep = wait_asleep(2)         # handled, released: asleep again
        vm.qmp("system_powerdown")          # wake 2: sb_test holds
        try:
            rc, out = pending.wait(timeout=30)
            assert rc == 0, out
        except VmTimeout as e:              # the shell did not come back
            stuck = e
            assert not vm.ensure_healthy(), f"the guest rebooted: {e}"
        evs = sb.settled_events(vm, seq0)
    finally:
        vm.run(f"echo on > {sb.SYSFS}/state; echo release_resume > {sb.CTL}; "
               f"echo forced > {sb.SYSFS}/policy; rmmod sb_test; "
               f"echo 0 > /sys/power/pm_debug_messages; dmesg -n {level}; true")
    aborts = [e for e in evs if e.type == "abort"]
    if aborts:
        return evs, f"s2idle entry aborted: {aborts[0].arg}"
    assert asleep, "no s2idle entry seen, none aborted:\n" + vm.console_tail()
    assert stuck is None, f"the shell did not come back, no entry aborted: {stuck}"
    return evs, None


def test_a_press_wakes_s2idle_and_the_target_sleeps_again_by_itself(kvm, retried):
    vm = kvm
    evs, race = _press_cycle(vm)
    if race:
        retried(race)                       # counted (conftest)
        evs, race = _press_cycle(vm)
    assert not race, f"twice: {race}\n" + vm.console_tail()
    kinds = [e.type for e in evs if e.type in ("suspend", "resume")]
    assert kinds[:4] == ["suspend", "resume", "suspend", "resume"], \
        [(e.type, e.arg) for e in evs if e.type != "phase"]
    # the first wake was claimed by keypad-scan, not unknown_wakeups, and
    # it was released before the next suspend
    s2 = [i for i, e in enumerate(evs) if e.type == "suspend"][1]
    cycle = _kinds(evs[:s2])
    ks = [k for k in cycle if k[1] == "keypad-scan"]
    assert ks[0] == ("block", "keypad-scan") and ks[-1] == ("unblock", "keypad-scan"), cycle
    assert ("block", "unknown_wakeups") not in cycle, cycle
    assert sb.stats(vm)["keypad-scan"].wake_count >= 1


def test_a_bad_node_fails_the_probe_and_registers_nothing():
    """A key without linux,code: the probe fails naming the node and the
    property; no input device, no keypad-scan blocker; the module loads."""
    art = dataclasses.replace(build_all("armhf"), dtb=_keypad_dtb(broken=True))
    with Vm("armhf", art, name="armhf-keypad-bad") as vm:
        vm.load_module("suspend_block")
        log = vm.dmesg()
        assert re.search(r"sbrig-keypad sbrig-keypad: .*poweroff: missing or bad "
                         r"linux,code", log), log[-3000:]
        assert vm.run("ls /sys/bus/platform/drivers/sbrig-keypad/sbrig-keypad")[0] != 0
        names = vm.run_ok("cat /sys/class/input/input*/name 2>/dev/null; true")
        assert "sbrig-keypad" not in names
        assert "keypad-scan" not in sb.stats(vm)
        vm.run_ok("rmmod suspend_block")


def test_a_debounce_pending_at_suspend_is_scanned_before_the_sleep():
    """A key whose debounce is still pending when the system suspends
    (here: a forced suspend right after a press, with a 1 s debounce) is
    scanned in the keypad's suspend callback, before the controller and
    the system go to sleep: keypad-scan is released before the platform
    enters s2idle. Unflushed, the debounce work ran after the resume, on a
    controller that could have been suspended, and held keypad-scan across
    the whole sleep."""
    art = dataclasses.replace(build_all("armhf"), dtb=_keypad_dtb(debounce_ms=1000))
    with Vm("armhf", art, name="armhf-keypad-slow") as vm:
        vm.load_module("suspend_block")
        seq0 = sb.last_seq(vm)
        vm.run_ok("echo 0 > /sys/class/rtc/rtc0/wakealarm; "
                  "echo +4 > /sys/class/rtc/rtc0/wakealarm")
        vm.qmp("system_powerdown")                 # press: 100 ms on pin 3
        end = time.monotonic() + 10
        while not [e for e in sb.events_after(vm, seq0)
                   if e.type == "block" and e.name == "keypad-scan"]:
            assert time.monotonic() < end, "no keypad-scan after the press"
        # released (a key held down across the suspend rightly keeps
        # keypad-scan), its debounce still pending: suspend now
        rc, out = vm.run("while grep -q '|key .* hi' /sys/kernel/debug/gpio; "
                         f"do usleep 5000; done; echo freeze > {sb.SYSFS}/state",
                         timeout=60)
        assert rc == 0, out
        evs = sb.events_after(vm, seq0)
        kinds = [(e.type, e.name if e.type in ("block", "unblock") else e.arg)
                 for e in evs if e.type in ("block", "unblock", "enter", "exit")]
        enter = kinds.index(("enter", "s2idle"))
        assert ("unblock", "keypad-scan") in kinds[:enter], kinds
        assert sb.stats(vm)["keypad-scan"].count == 1
