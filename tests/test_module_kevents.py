"""The kernel's own activity in suspend_block.ko's event log (kevents.c):
wakeup sources (ws_activate/ws_relax), suspend/resume phases (phase) and
slow device PM callbacks (dev_pm), each switchable by a module parameter.

The wakeup source is sb_test.ko's "sb_test_ws" (a real mainline wakeup
source, driven from process context and from a hard-irq hrtimer); the
phases come from real suspends (S3 on amd64, s2idle on armhf) and from
/sys/power/pm_test dry runs; the slow callback is sb_test's device with
a suspend callback that sleeps.
"""

from __future__ import annotations

import re

import pytest

import sbtarget as sb

# also on the amd64-debug guest (lockdep, KASAN, UBSAN, kmemleak)
pytestmark = pytest.mark.debug_kernel

MS = 1_000_000
PARAMS = "/sys/module/suspend_block/parameters"


@pytest.fixture
def target(vm):
    sb.reload(vm)
    yield vm
    vm.run("echo none > /sys/power/pm_test 2>/dev/null; "
           f"echo slow_suspend_ms 0 > {sb.CTL} 2>/dev/null; "
           f"echo on > {sb.SYSFS}/state 2>/dev/null; "
           f"echo forced > {sb.SYSFS}/policy 2>/dev/null; true")


def _param(vm, name: str, value: str) -> None:
    vm.run_ok(f"echo {value} > {PARAMS}/{name}")


def _ws(evs, name):
    return [(e.type, e.name) for e in evs
            if e.type in ("ws_activate", "ws_relax") and e.name == name]


def _phases(evs):
    """[(action, val, begin|end), ...] of the phase records."""
    out = []
    for e in evs:
        if e.type == "phase":
            action, val, edge = e.arg.split(" ")
            out.append((action, int(val), edge))
    return out


def test_wakeup_source_activity_is_logged_by_name(target):
    vm = target
    seq0 = sb.last_seq(vm)
    sb.ctl(vm, "ws_on")
    sb.ctl(vm, "ws_off")
    sb.ctl(vm, "ws_on_after_ms 10")   # from a hard-irq hrtimer
    evs = []
    for _ in range(100):
        evs = sb.events_after(vm, seq0)
        if len(_ws(evs, "sb_test_ws")) >= 3:
            break
        vm.run_ok("usleep 20000")
    sb.ctl(vm, "ws_off")
    evs = sb.events_after(vm, seq0)
    assert _ws(evs, "sb_test_ws") == [("ws_activate", "sb_test_ws"),
                                      ("ws_relax", "sb_test_ws")] * 2
    mine = [e for e in evs if e.type.startswith("ws_") and e.name == "sb_test_ws"]
    # quoted like blocker names, in the same numbering, times in order
    assert all(e.arg == '"sb_test_ws"' for e in mine)
    assert [e.t_ns for e in mine] == sorted(e.t_ns for e in mine)
    seqs = [e.seq for e in evs]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    # the hrtimer fired >= 10 ms after it was armed (after the first relax)
    assert mine[2].t_ns - mine[1].t_ns >= 10 * MS


def test_wakeup_source_records_can_be_turned_off(target):
    vm = target
    _param(vm, "event_wakeup_sources", "N")
    try:
        seq0 = sb.last_seq(vm)
        sb.ctl(vm, "ws_on")
        sb.ctl(vm, "ws_off")
        sb.ctl(vm, "block")
        sb.ctl(vm, "unblock")
        evs = sb.events_after(vm, seq0)
        assert _ws(evs, "sb_test_ws") == []
        assert [(e.type, e.name) for e in evs if e.name == "sb_test"] == \
            [("block", "sb_test"), ("unblock", "sb_test")]
    finally:
        _param(vm, "event_wakeup_sources", "Y")
    seq0 = sb.last_seq(vm)
    sb.ctl(vm, "ws_on")
    sb.ctl(vm, "ws_off")
    assert len(_ws(sb.events_after(vm, seq0), "sb_test_ws")) == 2


def test_own_wakeup_source_is_not_logged(target):
    """In the opportunistic policy every first block activates our own
    "suspend_blockers" source, with suspend_blockers_lock held: the probe
    must skip it (logging it would deadlock on that lock)."""
    vm = target
    # "main" stays active (state on): no suspend, but blockers mirror
    vm.run_ok(f"echo opportunistic > {sb.SYSFS}/policy")
    ws0 = vm.run_ok("grep '^suspend_blockers' /sys/kernel/debug/wakeup_sources")
    seq0 = sb.last_seq(vm)
    # "main" active: sb_test's blocker is a second one; release main
    # briefly with sb_test held, so the mirror source really toggles
    sb.ctl(vm, "block")
    vm.run_ok(f"echo mem > {sb.SYSFS}/state; echo on > {sb.SYSFS}/state")
    sb.ctl(vm, "unblock")
    vm.run_ok(f"echo forced > {sb.SYSFS}/policy")   # mirror off: relaxes
    vm.run_ok(f"echo opportunistic > {sb.SYSFS}/policy")  # and on again
    ws1 = vm.run_ok("grep '^suspend_blockers' /sys/kernel/debug/wakeup_sources")
    evs = sb.events_after(vm, seq0)
    assert int(ws1.split()[1]) > int(ws0.split()[1])   # active_count grew
    assert not [e for e in evs if e.type.startswith("ws_")
                and e.name == "suspend_blockers"]
    assert any(e.type == "block" and e.name == "sb_test" for e in evs)


def test_lost_records_count_kernel_records(vm):
    """A slow reader's "lost" line covers ws records like any other."""
    sb.reload(vm, event_log_size=64)
    try:
        bg = vm.start_bg("evread drain sleep:4000 drain")
        bg.wait_output('block."main"', timeout=20)
        # 80 ws records, no blocker ones, while the reader sleeps
        vm.run_ok(f"for i in $(seq 40); do echo ws_on > {sb.CTL}; "
                  f"echo ws_off > {sb.CTL}; done")
        assert bg.wait() == 0
        evs = sb.parse_events(bg.output())
        lost = [e for e in evs if e.type == "lost"]
        assert len(lost) == 1
        after = evs[evs.index(lost[0]) + 1:]
        assert after[0].seq == lost[0].seq + int(lost[0].arg)
        assert len(after) == 64
        assert {e.type for e in after} == {"ws_activate", "ws_relax"}
    finally:
        sb.reload(vm)


def _pm_test_suspend(vm, state: str) -> list[sb.Event]:
    """A forced suspend dry run (pm_test devices: the devices suspend and
    resume, the platform is not entered); returns its records."""
    seq0 = sb.last_seq(vm)
    # no 5 s pause at the test point (kernel/power/suspend.c's pm_test_delay)
    vm.run("echo 0 > /sys/module/suspend/parameters/pm_test_delay")
    vm.run_ok("echo devices > /sys/power/pm_test")
    try:
        vm.run_ok(f"echo {state} > {sb.SYSFS}/state", timeout=60)
    finally:
        vm.run_ok("echo none > /sys/power/pm_test")
    return sb.events_after(vm, seq0)


def _sleep_state(vm) -> str:
    return "mem" if vm.arch == "amd64" else "freeze"


def test_phases_of_a_suspend_dry_run(target):
    vm = target
    evs = _pm_test_suspend(vm, _sleep_state(vm))
    ph = _phases(evs)
    names = [(a, edge) for a, _, edge in ph]
    want = ["suspend_enter", "freeze_processes", "dpm_prepare", "dpm_suspend",
            "dpm_resume", "dpm_complete", "thaw_processes"]
    # each phase begins and ends, in the PM core's order
    pos = []
    for action in want:
        assert (action, "begin") in names and (action, "end") in names, names
        b, e = names.index((action, "begin")), names.index((action, "end"))
        assert b < e
        pos.append(b)
    assert pos == sorted(pos), names
    # suspend_enter's VAL is the suspend_state_t (mem: 3, freeze: 1)
    val = dict(((a, edge), v) for a, v, edge in ph)[("suspend_enter", "begin")]
    assert val == (3 if vm.arch == "amd64" else 1)
    # records in seq order with non-decreasing times
    recs = [e for e in evs if e.type == "phase"]
    assert [e.t_ns for e in recs] == sorted(e.t_ns for e in recs)


def test_phases_can_be_turned_off(target):
    vm = target
    _param(vm, "event_phases", "N")
    try:
        evs = _pm_test_suspend(vm, _sleep_state(vm))
    finally:
        _param(vm, "event_phases", "Y")
    assert _phases(evs) == []


def test_slow_device_callback_is_logged_above_the_threshold(target):
    vm = target
    sb.ctl(vm, "slow_suspend_ms 60")
    evs = _pm_test_suspend(vm, _sleep_state(vm))     # threshold 0: off
    assert not [e for e in evs if e.type == "dev_pm"]
    _param(vm, "event_dev_pm_min_us", "40000")
    try:
        evs = _pm_test_suspend(vm, _sleep_state(vm))
    finally:
        _param(vm, "event_dev_pm_min_us", "0")
    recs = [e.arg.split(" ", 3) for e in evs if e.type == "dev_pm"]
    ours = [r for r in recs if r[3] == "sb_test"]
    assert len(ours) == 1, recs
    dur, err, verb, _ = ours[0]
    assert 60 * MS <= int(dur) < 10_000 * MS and err == "0" and verb == "suspend"
    # every record is above the threshold
    assert all(int(r[0]) >= 40 * MS for r in recs), recs
    # it lies inside dpm_suspend's phase records
    seq = {e.seq: e for e in evs}
    cb = next(e for e in evs if e.type == "dev_pm" and e.arg.endswith(" sb_test"))
    begin = next(e for e in evs if e.type == "phase"
                 and e.arg.startswith("dpm_suspend ") and e.arg.endswith("begin"))
    end = next(e for e in evs if e.type == "phase"
               and e.arg.startswith("dpm_suspend ") and e.arg.endswith(" end"))
    assert begin.seq < cb.seq < end.seq and seq[cb.seq] is cb


def _async_dev_pm(vm, n: int) -> tuple[list[list[str]], int]:
    """@n more sb_test devices, suspended in parallel, each callback 300 ms:
    their dev_pm records (threshold 100 ms) and dpm_suspend's duration."""
    sb.ctl(vm, f"async_devs {n}")
    sb.ctl(vm, "slow_suspend_ms 300")
    _param(vm, "event_dev_pm_min_us", "100000")
    try:
        evs = _pm_test_suspend(vm, _sleep_state(vm))
    finally:
        _param(vm, "event_dev_pm_min_us", "0")
        sb.ctl(vm, "slow_suspend_ms 0")
        sb.ctl(vm, "async_devs 0")
    recs = [e.arg.split(" ", 3) for e in evs if e.type == "dev_pm"]
    ours = [r for r in recs if re.fullmatch(r"sb_test\.\d+", r[3])]
    begin = next(e for e in evs if e.type == "phase"
                 and e.arg.startswith("dpm_suspend ") and e.arg.endswith(" begin"))
    end = next(e for e in evs if e.type == "phase"
               and e.arg.startswith("dpm_suspend ") and e.arg.endswith(" end"))
    return ours, end.t_ns - begin.t_ns


def test_at_most_32_device_callbacks_are_timed_at_once(target):
    """Documentation/suspend-block.rst, dev_pm: at most 32 callbacks are
    timed at once; one that starts while 32 are running is not timed.
    20 slow callbacks in parallel are all recorded; 40 in parallel (they
    did run together: dpm_suspend took far less than 40 x 300 ms) leave
    at most 32 records, each at least the 300 ms it slept."""
    vm = target
    ours, took = _async_dev_pm(vm, 20)
    assert sorted(r[3] for r in ours) == sorted(f"sb_test.{i}" for i in range(20)), ours
    ours, took = _async_dev_pm(vm, 40)
    print(f"40 callbacks in parallel: {len(ours)} timed, dpm_suspend "
          f"{took / MS:.0f} ms")
    assert took < 40 * 300 * MS // 2, f"dpm_suspend took {took / MS:.0f} ms: not in parallel"
    assert 16 <= len(ours) <= 32, (len(ours), ours)
    assert len({r[3] for r in ours}) == len(ours), ours
    for dur, err, verb, _ in ours:
        assert int(dur) >= 300 * MS and err == "0" and verb == "suspend", ours


@pytest.mark.s3
def test_phases_of_a_real_suspend_to_ram(target):
    """S3 on amd64: machine_suspend lies between our enter and exit, the
    noirq phases around them; the wake is QMP system_wakeup."""
    vm = target
    seq0 = sb.last_seq(vm)
    mark = vm.qmp_mark()
    pending = vm.run_async(f"echo mem > {sb.SYSFS}/state")
    vm.wait_qmp_event("SUSPEND", timeout=60, since=mark)
    vm.wait_status("suspended", timeout=30)
    vm.system_wakeup()
    rc, out = pending.wait(timeout=60)
    assert rc == 0, out
    evs = sb.events_after(vm, seq0)
    order = []
    for e in evs:
        if e.type in ("enter", "exit"):
            order.append(e.type)
        elif e.type == "phase":
            action, _, edge = e.arg.split(" ")
            if action in ("dpm_suspend_late", "dpm_suspend_noirq",
                          "machine_suspend", "dpm_resume_noirq",
                          "dpm_resume_early"):
                order.append(f"{action} {edge}")
    assert order == [
        "dpm_suspend_late begin", "dpm_suspend_late end",
        "dpm_suspend_noirq begin", "enter", "dpm_suspend_noirq end",
        "machine_suspend begin", "machine_suspend end",
        "dpm_resume_noirq begin", "exit", "dpm_resume_noirq end",
        "dpm_resume_early begin", "dpm_resume_early end"], order
