"""Seed 009 on a modern kernel: power_supply_changed() holds the supply's
wakeup source until its change notifications have run, and opportunistic
suspend (suspend_block's worker) waits for it.

The supply is a real power-supply driver, the kernel's test_power (built
out of tree from linux-source-6.1, tests/target/test_power): writing its
ac_online parameter calls power_supply_changed(). sb_test.ko registers
a supply fed from test_ac whose external_power_changed() sleeps
psy_delay_ms, so test_ac's notifications visibly take that long. amd64
(test_power is built for it; S3, the wake is QMP system_wakeup).
"""

from __future__ import annotations

import pytest

import sbtarget as sb

# also on the amd64-debug guest (lockdep, KASAN, UBSAN, kmemleak)
pytestmark = pytest.mark.debug_kernel

MS = 1_000_000


@pytest.fixture
def target(vm):
    vm.run_ok("modprobe test_power")
    sb.reload(vm)
    yield vm
    vm.run(f"echo psy_delay_ms 0 > {sb.CTL}; echo on > {sb.SYSFS}/state; "
           f"echo release_resume > {sb.CTL}; echo forced > {sb.SYSFS}/policy; "
           "rmmod test_power; true")


@pytest.mark.arch("amd64")             # test_power is built for amd64
def test_a_supply_change_is_logged_under_the_supply_name(target):
    vm = target
    seq0 = sb.last_seq(vm)
    vm.run_ok("echo off > /sys/module/test_power/parameters/ac_online; "
              "echo on > /sys/module/test_power/parameters/ac_online")
    evs = sb.events_after(vm, seq0)
    ws = [(e.type, e.name) for e in evs if e.type.startswith("ws_")
          and e.name == "test_ac"]
    assert ws and ws[0] == ("ws_activate", "test_ac") and ws[-1] == ("ws_relax", "test_ac"), ws


@pytest.mark.s3
def test_opportunistic_suspend_waits_for_the_supply_notifications(target):
    vm = target
    sb.ctl(vm, "block")                  # keeps it up while we set things up
    sb.ctl(vm, "psy_delay_ms 700")
    sb.ctl(vm, "hold_after_resumes 1")   # the shell back after the wake
    vm.run_ok(f"echo opportunistic > {sb.SYSFS}/policy; echo mem > {sb.SYSFS}/state")
    seq0 = sb.last_seq(vm)
    mark = vm.qmp_mark()
    # the charger goes away, and the last blocker is released at once
    pending = vm.run_async("echo off > /sys/module/test_power/parameters/ac_online; "
                           f"echo unblock > {sb.CTL}")
    vm.wait_qmp_event("SUSPEND", timeout=60, since=mark)
    vm.wait_status("suspended", timeout=30)
    vm.system_wakeup()
    rc, out = pending.wait(timeout=60)
    assert rc == 0, out
    evs = sb.settled_events(vm, seq0)
    unblock = next(e for e in evs if e.type == "unblock" and e.name == "sb_test")
    relax = next(e for e in evs if e.type == "ws_relax" and e.name == "test_ac")
    suspend = next(e for e in evs if e.type == "suspend")
    # no blocker after sb_test's, yet no suspend until the supply's
    # wakeup source was released, ~700 ms later
    assert unblock.seq < relax.seq < suspend.seq
    assert relax.t_ns - unblock.t_ns >= 500 * MS
    assert suspend.t_ns >= relax.t_ns
    assert [e.type for e in evs if e.type in ("suspend", "resume", "abort")] == \
        ["suspend", "resume"]
