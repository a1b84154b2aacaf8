"""suspend_block.ko driving real suspends in QEMU.

amd64 (``-M pc``): ``mem`` is ACPI S3; QEMU reports SUSPEND/WAKEUP on QMP and
``query-status`` says "suspended", so the host sees the sleep from outside.
Wakeups come from QMP (a key on the PS/2 keyboard, or system_wakeup).

armhf (``-M virt``): only s2idle (``freeze``) exists; wakeups come from the
PL031 RTC alarm and the gpio-keys power key (QMP system_powerdown), and the
sleep is seen in the kernel's console messages and our event log.

To get the shell back after an opportunistic cycle, sb_test.ko blocks
suspend on the Nth resume from its PM notifier, as a keypad driver would on
its wake interrupt (user space could not win that race reliably).
"""

from __future__ import annotations

import time

import pytest

import sbtarget as sb

# also on the amd64-debug guest (lockdep, KASAN, UBSAN, kmemleak)
pytestmark = pytest.mark.debug_kernel

MS = 1_000_000


def _sleep_state(vm) -> str:
    return "mem" if vm.arch == "amd64" else "freeze"


def _kernel_state(vm) -> str:
    return "deep" if vm.arch == "amd64" else "s2idle"


@pytest.fixture
def target(vm):
    sb.reload(vm)
    # the console's level as the guest has it, restored after: later tests
    # wait for KERN_INFO lines on the console
    level = vm.run_ok("cut -f1 /proc/sys/kernel/printk").strip()
    if vm.arch == "armhf":
        # "PM: suspend-to-idle" (KERN_DEBUG) says the devices are suspended
        vm.run_ok("echo 1 > /sys/power/pm_debug_messages; "
                  "echo 8 > /proc/sys/kernel/printk")
    yield vm
    vm.run("echo on > /sys/kernel/suspend_block/state 2>/dev/null; "
           f"echo release_resume > {sb.CTL} 2>/dev/null; "
           "echo forced > /sys/kernel/suspend_block/policy 2>/dev/null; "
           "echo 0 > /sys/power/pm_debug_messages 2>/dev/null; "
           f"dmesg -n {level}; true")


def _wait_sleep(vm, since_console: int, since_qmp: int, nth: int = 1,
                timeout: float = 60) -> None:
    """Wait until the target has entered its sleep state the nth time
    since the marks."""
    if vm.arch == "amd64":
        for _ in range(nth):
            ev = vm.wait_qmp_event("SUSPEND", timeout=timeout, since=since_qmp)
            since_qmp = vm.qmp_events.index(ev) + 1
        vm.wait_status("suspended", timeout=timeout)
    else:
        # not "PM: suspend entry", printed before the tasks are frozen: a
        # stimulus sent then aborts the attempt instead of waking it
        end = time.monotonic() + timeout
        while vm.console_text(since_console).count("PM: suspend-to-idle") < nth:
            if time.monotonic() > end:
                raise AssertionError("no s2idle entry seen:\n"
                                     + vm.console_tail())
            time.sleep(0.05)


def _wake(vm, how: str = "key") -> None:
    if vm.arch == "amd64":
        mark = vm.qmp_mark()
        if how == "key":
            vm.send_key()
        else:
            vm.system_wakeup()
        vm.wait_qmp_event("WAKEUP", timeout=30, since=mark)
    else:
        vm.qmp("system_powerdown")


def test_forced_policy_ignores_blockers(target):
    vm = target
    bg = vm.start_bg("sbprobe open init:forced-hold block sleep:60000")
    sb.wait_stats(vm, lambda st: "forced-hold" in st and st["forced-hold"].active)
    if vm.arch == "armhf":
        vm.run_ok("echo 0 > /sys/class/rtc/rtc0/wakealarm; "
                  "echo +3 > /sys/class/rtc/rtc0/wakealarm")
    cmark, qmark = vm.console_mark(), vm.qmp_mark()
    pending = vm.run_async(f"echo {_sleep_state(vm)} > {sb.SYSFS}/state")
    _wait_sleep(vm, cmark, qmark)
    if vm.arch == "amd64":
        _wake(vm, "system_wakeup")
    rc, out = pending.wait(timeout=60)
    assert rc == 0, out
    evs = sb.events(vm)
    kinds = [(e.type, e.arg) for e in evs if e.type in ("enter", "exit")]
    assert kinds[-2:] == [("enter", _kernel_state(vm)), ("exit", _kernel_state(vm))]
    # the forced suspend went through /sys/power/state, not the worker
    assert not any(e.type == "suspend" for e in evs)
    assert sb.stats(vm)["forced-hold"].active
    bg.kill()
    bg.wait()


def _unknown_wakeup_cycle(vm) -> int:
    """Release "main" -> suspend -> wake -> back to sleep -> wake; returns
    the event seq before the cycle."""
    sb.ctl(vm, "hold_after_resumes 2")
    seq0 = sb.last_seq(vm)
    if vm.arch == "armhf":
        vm.run_ok("echo 0 > /sys/class/rtc/rtc0/wakealarm; "
                  "echo +4 > /sys/class/rtc/rtc0/wakealarm")
    cmark, qmark = vm.console_mark(), vm.qmp_mark()
    pending = vm.run_async(f"echo opportunistic > {sb.SYSFS}/policy; "
                           f"echo {_sleep_state(vm)} > {sb.SYSFS}/state")
    _wait_sleep(vm, cmark, qmark, nth=1)
    if vm.arch == "amd64":
        _wake(vm, "key")                  # a key on the PS/2 keyboard
    # (armhf: the RTC alarm wakes it)
    _wait_sleep(vm, cmark, qmark, nth=2)  # nothing blocked: back to sleep
    _wake(vm, "system_wakeup" if vm.arch == "amd64" else "key")
    rc, out = pending.wait(timeout=90)
    assert rc == 0, out
    # The shell runs again once tasks are thawed, which the kernel does
    # before its PM_POST_SUSPEND notifiers: sb_test blocks from one, so
    # wait for it (seen in CI: stats read between the two)
    deadline = time.monotonic() + 30
    while not sb.stats(vm)["sb_test_resume"].active:
        assert time.monotonic() < deadline, "sb_test never blocked after the resume"
        time.sleep(0.2)
    return seq0


def test_opportunistic_cycle_counts_unknown_wakeups(target, retried):
    """Release "main" -> suspend -> wake with nothing blocking ->
    unknown_wakeups -> suspend again -> wake -> a driver blocks."""
    vm = target
    seq0 = _unknown_wakeup_cycle(vm)
    aborts = [e for e in sb.events_after(vm, seq0) if e.type == "abort"]
    if vm.arch == "armhf" and aborts:
        # Under TCG the s2idle re-entry right after the RTC wake is
        # sometimes aborted by a late wakeup event ("early wake event
        # detected"): correct behaviour, but sb_test's PM_POST_SUSPEND
        # counter then counts the aborted attempt as the second resume and
        # the cycle this test checks never happens. Start over once
        # (counted: conftest's retried).
        retried(f"s2idle re-entry aborted: {aborts[0].arg}")
        vm.run(f"echo on > {sb.SYSFS}/state; echo release_resume > {sb.CTL}; "
               f"echo forced > {sb.SYSFS}/policy; true")
        sb.reload(vm)
        seq0 = _unknown_wakeup_cycle(vm)

    st = sb.stats(vm)
    assert st["unknown_wakeups"].count == 1
    assert st["unknown_wakeups"].wake_count == 1
    assert st["sb_test_resume"].active
    assert st["sb_test_resume"].wake_count == 1
    assert not st["main"].active

    evs = sb.settled_events(vm, seq0)
    seq = [e.type for e in evs if e.type in
           ("suspend", "enter", "exit", "resume")]
    assert seq == ["suspend", "enter", "exit", "resume"] * 2
    first_suspend = next(e for e in evs if e.type == "suspend")
    assert first_suspend.arg == f"{_sleep_state(vm)} {_kernel_state(vm)}"
    unknown = [e for e in evs if e.type == "block" and e.name == "unknown_wakeups"]
    assert len(unknown) == 1
    # the re-suspend follows the unknown wakeup at once
    resume1 = [e for e in evs if e.type == "resume"][0]
    suspend2 = [e for e in evs if e.type == "suspend"][1]
    assert suspend2.t_ns - resume1.t_ns < 2000 * MS
    # unknown_wakeup_hold_ms=0 (default): released at once, as the seed
    released = next(e for e in evs if e.type == "unblock"
                    and e.name == "unknown_wakeups")
    assert released.seq > unknown[0].seq
    # "at once": before the worker's next suspend, and not held for any
    # time a hold would take: well under the shortest hold the suite sets
    # (700 ms: test_unknown_wakeup_hold_keeps_the_woken_system_up), so
    # that a vCPU this host descheduled for a while cannot fail it
    assert released.seq < suspend2.seq
    assert released.t_ns - unknown[0].t_ns < 350 * MS
    assert sb.sysfs(vm, "policy") == "forced [opportunistic]"


def test_block_during_freezing_aborts_the_suspend(target):
    """A task refuses to freeze (sleeping uninterruptibly in sb_test); a
    block from a hard interrupt must abort the freezer long before its
    20 s timeout."""
    vm = target
    refuser = vm.start_bg(f"cat {sb.REFUSE}")
    _wait_ctl(vm, "refusing", 1)
    seq0 = sb.last_seq(vm)
    sb.ctl(vm, "block_after_ms 300")
    pending = vm.run_async(f"echo opportunistic > {sb.SYSFS}/policy; "
                           f"echo {_sleep_state(vm)} > {sb.SYSFS}/state")
    rc, out = pending.wait(timeout=30)
    assert rc == 0, out
    sb.wait_stats(vm, lambda st: st["sb_test"].active)
    vm.run_ok(f"echo on > {sb.SYSFS}/state")
    evs = sb.settled_events(vm, seq0)
    abort = _wait_event(vm, seq0, "abort")
    block = next(e for e in evs if e.type == "block" and e.name == "sb_test")
    suspend = next(e for e in evs if e.type == "suspend")
    assert suspend.seq < block.seq < abort.seq
    assert abort.arg == f"-{sb.EBUSY}"
    latency_ms = (abort.t_ns - block.t_ns) / MS
    print(f"abort latency {latency_ms:.2f} ms (block -> pm_suspend returned)")
    assert latency_ms < 1000, "abort waited for the freezer timeout"
    assert not any(e.type == "enter" for e in evs if e.seq > suspend.seq)
    assert "Freezing of tasks aborted" in vm.dmesg() or \
        "Freezing user space processes failed" in vm.dmesg()
    sb.ctl(vm, "unblock")
    sb.ctl(vm, "release_refuse")
    refuser.wait(timeout=30)


def test_kernel_wakeup_source_keeps_opportunistic_suspend_off(target):
    vm = target
    sb.ctl(vm, "ws_on")
    sb.ctl(vm, "hold_after_resumes 1")
    seq0 = sb.last_seq(vm)
    qmark = vm.qmp_mark()
    vm.run_ok(f"echo opportunistic > {sb.SYSFS}/policy; "
              f"echo {_sleep_state(vm)} > {sb.SYSFS}/state")
    vm.run_ok("usleep 1000000")
    assert [e for e in sb.events_after(vm, seq0) if e.type == "suspend"] == []
    if vm.arch == "amd64":
        assert vm.query_status() == "running"
        assert [e for e in vm.qmp_events[qmark:] if e.get("event") == "SUSPEND"] == []
    else:
        vm.run_ok("echo 0 > /sys/class/rtc/rtc0/wakealarm; "
                  "echo +3 > /sys/class/rtc/rtc0/wakealarm")
    cmark, qmark = vm.console_mark(), vm.qmp_mark()
    pending = vm.run_async(f"echo ws_off > {sb.CTL}")
    _wait_sleep(vm, cmark, qmark)
    if vm.arch == "amd64":
        _wake(vm, "system_wakeup")
    rc, out = pending.wait(timeout=60)
    assert rc == 0, out
    evs = sb.settled_events(vm, seq0)
    assert [e.type for e in evs if e.type in ("suspend", "resume")] == \
        ["suspend", "resume"]
    assert sb.stats(vm)["sb_test_resume"].active


@pytest.mark.s3
def test_unknown_wakeup_hold_keeps_the_woken_system_up(target):
    """unknown_wakeup_hold_ms=700: the key wake no blocker claims keeps
    unknown_wakeups active ~700 ms; the next suspend comes after it."""
    vm = target
    sb.reload(vm, unknown_wakeup_hold_ms=700)
    assert vm.run_ok("cat /sys/module/suspend_block/parameters/"
                     "unknown_wakeup_hold_ms").strip() == "700"
    sb.ctl(vm, "hold_after_resumes 2")
    seq0 = sb.last_seq(vm)
    cmark, qmark = vm.console_mark(), vm.qmp_mark()
    pending = vm.run_async(f"echo opportunistic > {sb.SYSFS}/policy; "
                           f"echo mem > {sb.SYSFS}/state")
    _wait_sleep(vm, cmark, qmark, nth=1)
    _wake(vm, "key")
    _wait_sleep(vm, cmark, qmark, nth=2)  # back to sleep after the hold
    _wake(vm, "system_wakeup")
    rc, out = pending.wait(timeout=90)
    assert rc == 0, out

    evs = sb.settled_events(vm, seq0)
    assert [e.type for e in evs if e.type in ("suspend", "resume")] == \
        ["suspend", "resume"] * 2
    held = [e for e in evs if e.type in ("block", "unblock")
            and e.name == "unknown_wakeups"]
    assert [e.type for e in held] == ["block", "unblock"]
    block, unblock = held
    hold_ms = (unblock.t_ns - block.t_ns) / MS
    print(f"unknown_wakeups held {hold_ms:.1f} ms (parameter 700)")
    assert 690 <= hold_ms < 1700
    resume1 = [e for e in evs if e.type == "resume"][0]
    suspend2 = [e for e in evs if e.type == "suspend"][1]
    assert resume1.seq < block.seq
    assert suspend2.seq > unblock.seq and suspend2.t_ns >= unblock.t_ns
    st = sb.stats(vm)
    assert st["unknown_wakeups"].count == 1
    assert st["unknown_wakeups"].total_time >= 690 * MS
    assert st["sb_test_resume"].active


def _woken_into_a_long_hold(vm, test_module: bool) -> int:
    """Load with a 60 s hold, suspend opportunistically, wake with
    system_wakeup; return seq0. The hold keeps the shell usable."""
    sb.reload(vm, test_module=test_module, unknown_wakeup_hold_ms=60000)
    seq0 = sb.last_seq(vm)
    cmark, qmark = vm.console_mark(), vm.qmp_mark()
    pending = vm.run_async(f"echo opportunistic > {sb.SYSFS}/policy; "
                           f"echo mem > {sb.SYSFS}/state")
    _wait_sleep(vm, cmark, qmark)
    _wake(vm, "system_wakeup")
    rc, out = pending.wait(timeout=60)
    assert rc == 0, out
    sb.wait_stats(vm, lambda st: st["unknown_wakeups"].active)
    return seq0


@pytest.mark.s3
def test_forced_policy_ends_an_unknown_wakeup_hold(target):
    vm = target
    seq0 = _woken_into_a_long_hold(vm, test_module=True)
    # other blockers come and go during the hold; it stays
    assert sb.sbprobe_results(vm, "open", "init:during-hold", "block",
                              "unblock") == ["rc=0"] * 4
    assert sb.stats(vm)["unknown_wakeups"].active
    vm.run_ok(f"echo forced > {sb.SYSFS}/policy")
    st = sb.wait_stats(vm, lambda st: not st["unknown_wakeups"].active,
                       timeout=5)
    assert st["unknown_wakeups"].count == 1
    evs = sb.events_after(vm, seq0)
    forced = next(e for e in evs if e.type == "policy"
                  and e.arg.startswith("forced"))
    unblock = next(e for e in evs if e.type == "unblock"
                   and e.name == "unknown_wakeups")
    late_ms = (unblock.t_ns - forced.t_ns) / MS
    print(f"hold ended {late_ms:.1f} ms after the policy change")
    # ended by the change (its kick wakes the worker's wait), not by the
    # 60 s hold running out: what is promised, not how fast a TCG guest
    # gets there (the record of the change may come a little after the
    # release it caused)
    assert -50 < late_ms < 30_000
    assert [e.type for e in evs if e.type == "suspend"] == ["suspend"]


@pytest.mark.s3
def test_unload_during_an_unknown_wakeup_hold_is_prompt(target):
    vm = target
    _woken_into_a_long_hold(vm, test_module=False)
    t0 = time.monotonic()
    vm.run_ok("rmmod suspend_block", timeout=20)
    took = time.monotonic() - t0
    print(f"rmmod during a 60 s hold took {took:.2f} s")
    assert took < 10
    assert vm.run("test -d /sys/module/suspend_block")[0] != 0


# ---------------------------------------------------------------- helpers --

def _wait_ctl(vm, key: str, value: int, timeout: float = 15.0) -> None:
    end = time.monotonic() + timeout
    while sb.ctl_state(vm)[key] != value:
        if time.monotonic() > end:
            raise AssertionError(f"sb_test {key} != {value}: {sb.ctl_state(vm)}")
        vm.run_ok("usleep 50000")


def _wait_event(vm, seq0: int, kind: str, timeout: float = 15.0) -> sb.Event:
    end = time.monotonic() + timeout
    while True:
        evs = [e for e in sb.events_after(vm, seq0) if e.type == kind]
        if evs:
            return evs[0]
        if time.monotonic() > end:
            raise AssertionError(f"no {kind} event: {sb.events_after(vm, seq0)}")
        vm.run_ok("usleep 50000")


@pytest.mark.s3
def test_block_while_timekeeping_is_suspended_reads_a_safe_clock(target):
    """suspend_block() says any context. On suspend-to-RAM a driver may
    block where timekeeping is already suspended (here sb_test, at the
    machine_suspend trace event, after the syscore callbacks), where
    ktime_get() warns: the module reads the NMI-safe fast clock there.
    The block is recorded, takes the wakeup (wake_count), and the kernel
    log has no warning."""
    vm = target
    sb.ctl(vm, "block_at_machine_suspend")
    seq0 = sb.last_seq(vm)
    cmark, qmark = vm.console_mark(), vm.qmp_mark()
    pending = vm.run_async(f"echo mem > {sb.SYSFS}/state")    # forced policy
    _wait_sleep(vm, cmark, qmark)
    _wake(vm, "system_wakeup")
    rc, out = pending.wait(timeout=60)
    assert rc == 0, out
    evs = sb.events_after(vm, seq0)
    blk = [e for e in evs if e.type == "block" and e.name == "sb_test"]
    enter = [e for e in evs if e.type == "phase" and e.arg.startswith("machine_suspend")]
    assert len(blk) == 1 and len(enter) == 2, evs
    # stamped with the clock stopped at timekeeping's suspend, so no later
    # than the machine_suspend end record
    assert blk[0].t_ns <= enter[1].t_ns
    assert sb.stats(vm)["sb_test"].wake_count == 1
    log = vm.console_text(cmark)
    assert "WARNING" not in log and "timekeeping_suspended" not in log, log[-3000:]
    sb.ctl(vm, "unblock")


@pytest.mark.arch("amd64")
def test_no_suspend_attempt_while_the_system_goes_down():
    """While the kernel reboots, drivers release their blockers (here
    sb_test, from its device's shutdown callback) and processes that exit
    close their blocker files: that must not put the system to sleep
    half-way through. The module's reboot notifier stops its worker before
    the devices are shut down. Its own guest: it reboots."""
    from tests.vm.build import build_all
    from tests.vm.qemu import Vm

    with Vm("amd64", build_all("amd64"), name="amd64-reboot") as vm:
        vm.load_module("suspend_block", debug_mask=0x2f)   # 8: "enter suspend"
        vm.load_module("sb_test")
        sb.ctl(vm, "block")
        sb.ctl(vm, "release_at_shutdown")
        vm.run_ok(f"echo opportunistic > {sb.SYSFS}/policy; echo mem > {sb.SYSFS}/state")
        assert sb.stats(vm)["sb_test"].active
        mark = vm.console_mark()
        vm.run_async("reboot -f")
        vm.wait_console("sb_test: shutdown: done", timeout=60, since=mark)
        # the harness's QEMU exits when the guest resets
        end = time.monotonic() + 60
        while vm.is_alive() and "reboot: Restarting" not in vm.console_text(mark):
            assert time.monotonic() < end, vm.console_tail()
            time.sleep(0.1)
        log = vm.console_text(mark)
        going_down = log[log.index("sb_test: shutdown: releasing"):]
        assert "PM: suspend entry" not in going_down, going_down
        assert "enter suspend" not in going_down, going_down
