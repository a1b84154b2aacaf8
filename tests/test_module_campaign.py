"""The suspend-cycle campaign (issue 22, the debug-kernel tier): opportunistic
suspend on the amd64 guest's S3 (``mem``) and the arm guest's s2idle
(``freeze``), with a suspend blocker taken at a random point of the suspend
path in each cycle. See tests/campaign.py for the cycle, the hooks
(sb_campaign.ko) and how each attempt is judged from the event log.

Checked: every attempt in which a blocker was activated before the point
of no return was aborted or never slept (S3: never reached
``machine_suspend``; s2idle: never parked for long), no ``enter`` was
logged after a block in the same attempt, and every stimulus given while
the guest was asleep produced a resume (no lost wakeup). The figures
(cycles per kind, outcomes per hook, resume latency) are printed.

Kernel reports (WARNING, BUG, ...) during the campaign are violations too
(the kernel log is followed into a file: the ring would lose them).

``SBRIG_CAMPAIGN_CYCLES`` sets the cycles per arch (the suite runs 120 on
amd64 and 80 on armhf: 200 in all, about 30 s and 35 s of cycles);
``make soak`` runs 500 on each.
``SBRIG_CAMPAIGN_SEED`` repeats a run's random choices.
"""

from __future__ import annotations

import os
import re
import time

import pytest

import campaign
import sbtarget as sb

pytestmark = pytest.mark.debug_kernel

CYCLES = {"amd64": 120, "armhf": 80}


def _cycles(vm) -> int:
    return int(os.environ.get("SBRIG_CAMPAIGN_CYCLES", CYCLES[vm.arch]))


@pytest.fixture
def target(vm):
    yield vm
    # the log followers too: an open event log pins the module
    vm.run(f"echo on > {sb.SYSFS}/state 2>/dev/null; "
           f"echo forced > {sb.SYSFS}/policy 2>/dev/null; "
           "kill $(pidof sbrace) $(pidof evread) 2>/dev/null; "
           f"kill $(cat {campaign.DIR}/cat.pid {campaign.DIR}/kmsg.pid 2>/dev/null) "
           "2>/dev/null; "
           "rmmod sb_campaign 2>/dev/null; rmmod suspend_block 2>/dev/null; true",
           timeout=60)


def test_suspend_cycle_campaign(target):
    vm = target
    n = _cycles(vm)
    seed = os.environ.get("SBRIG_CAMPAIGN_SEED")
    t0 = time.monotonic()
    camp = campaign.run(vm, n, int(seed) if seed else None)
    figures = camp.figures()
    print(f"\n{figures}\n  ({time.monotonic() - t0:.0f} s with setup)")
    assert not camp.violations(), figures
    # the campaign must have tested something: blockers taken inside
    # attempts, sleeps woken by the host
    inside = [r for r in camp.results
              if r.outcome in ("aborted", "never_entered", "not_slept", "slept")]
    assert len(inside) >= n // 3, figures
    assert camp.latencies, figures


def test_an_epollwakeup_reader_of_the_log_lets_the_system_suspend(target):
    """An EPOLLWAKEUP reader of suspend_blocker_events (a reader that keeps
    the system awake until it has read what is new, as Android's suspend
    daemons read their logs) must not keep opportunistic suspend off: the
    rst takes care that reading does not write the records that make the
    log readable again (the reader's own wakeup source is not logged).

    But every attempt writes records itself (``suspend``, ``phase``), which
    make the log readable, which activates the reader's wakeup source,
    which aborts the attempt at the freezer; after the thaw the reader
    reads, and the worker tries again at once (the abort is explained by a
    wakeup event: no back-off). Seen on amd64 without sb_campaign's
    rehold: no S3 entry in 5 s and 666 aborted attempts, each freezing
    and thawing every task, where a plain reader let 133 S3 cycles through
    in the same time.

    Here: one "plain" campaign cycle (nothing blocks; the first
    PM_POST_SUSPEND takes the hold again) with such a reader running; the
    attempt must sleep, as it does without the reader."""
    vm = target
    vm.run("rmmod sb_campaign 2>/dev/null; rmmod suspend_block 2>/dev/null; true")
    vm.load_module("suspend_block")
    sb.wait_quiet_log(vm)
    vm.load_module("sb_campaign")
    reader = vm.start_bg("evread -p 100 wfollow:60000")
    seq0 = sb.last_seq(vm)
    state = "mem" if vm.arch == "amd64" else "freeze"
    vm.run_ok(f"echo opportunistic > {sb.SYSFS}/policy; echo {state} > {sb.SYSFS}/state")
    cmark, qmark = vm.console_mark(), vm.qmp_mark()
    pending = vm.run_async(f"echo arm 1 none begin 0 transient > {campaign.CTL}; "
                           f"echo release > {campaign.CTL}")
    slept = False
    end = time.monotonic() + 30
    while not re.search(r"sb_campaign: rehold 1\b", vm.console_text(cmark)):
        assert time.monotonic() < end, "the attempt neither slept nor ended"
        if not slept and _asleep(vm, cmark, qmark):
            slept = True
            if vm.arch == "amd64":
                vm.system_wakeup()
            else:
                vm.system_powerdown()
        time.sleep(0.02)
    pending.wait(timeout=60)
    evs = sb.settled_events(vm, seq0)
    reader.kill()
    reader.wait()
    attempt = [f"{e.type} {e.arg}" for e in evs
               if e.type in ("suspend", "enter", "exit", "resume", "abort", "block")
               or e.arg.startswith("freeze_processes")]
    assert slept, ("with an EPOLLWAKEUP reader of the event log the attempt did "
                   f"not sleep: {attempt}")


def _kmsg_mark(vm) -> str:
    """Write a unique line into the kernel log (its ring may be full, so
    counting lines would not find what came after)."""
    mark = f"sbrig-mark-{time.monotonic_ns()}"
    vm.run_ok(f"echo {mark} > /dev/kmsg")
    return mark


def _kmsg_since(vm, mark: str) -> str:
    return vm.run_ok(f"dmesg | sed -n '/{mark}/,$p'")


def _asleep(vm, cmark: int, qmark: int) -> bool:
    """amd64: QMP SUSPEND; armhf: an s2idle park (sb_campaign's "idle
    begin" without its "end" for half a second)."""
    if vm.arch == "amd64":
        return any(e.get("event") == "SUSPEND" for e in vm.qmp_events[qmark:])
    def parked():
        text = vm.console_text(cmark)
        return len(re.findall(r"idle begin", text)) > len(re.findall(r"idle end", text))
    if not parked():
        return False
    time.sleep(0.5)
    return parked()


@pytest.mark.s3
def test_a_blocker_taken_at_machine_suspend_does_not_warn(target):
    """suspend-block.rst, Kernel API: suspend_block() and suspend_unblock()
    may be called from any context, "also while timekeeping is suspended
    (a syscore callback, the machine_suspend window of suspend-to-RAM:
    there the NMI-safe fast clock is read instead of ktime_get())".

    sb_campaign's hook at the suspend_resume tracepoint's machine_suspend
    (begin), S3, opportunistic policy, no other blocker active: the block
    is the first activation, mirrored onto the module's wakeup source with
    __pm_stay_awake(), whose wakeup_source_activate() calls ktime_get()
    while timekeeping is suspended: WARNING at kernel/time/timekeeping.c
    (ktime_get), call trace wakeup_source_activate <- __pm_stay_awake <-
    suspend_block <- the probe <- suspend_devices_and_enter. The unblock
    (transient) goes through __pm_relax() and wakeup_source_deactivate(),
    which reads ktime_get() as well."""
    vm = target
    vm.run("rmmod sb_campaign 2>/dev/null; rmmod suspend_block 2>/dev/null; true")
    vm.load_module("suspend_block")
    sb.wait_quiet_log(vm)
    vm.load_module("sb_campaign")
    mark = _kmsg_mark(vm)
    vm.run_ok(f"echo opportunistic > {sb.SYSFS}/policy; echo mem > {sb.SYSFS}/state")
    cmark, qmark = vm.console_mark(), vm.qmp_mark()
    pending = vm.run_async(f"echo arm 1 machine_suspend begin 0 transient > {campaign.CTL}; "
                           f"echo release > {campaign.CTL}")
    vm.wait_qmp_event("SUSPEND", timeout=30, since=qmark)
    vm.system_wakeup()
    vm.wait_console(r"sb_campaign: rehold 1\b", timeout=30, since=cmark)
    pending.wait(timeout=60)
    state = dict(ln.split() for ln in vm.run_ok(f"cat {campaign.CTL}").splitlines())
    assert state["fired"] == "1" and state["hits"] == "1", state
    new = _kmsg_since(vm, mark)
    warnings = [ln for ln in new.splitlines() if "WARNING:" in ln]
    assert not warnings, new
