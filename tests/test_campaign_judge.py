"""The campaign's judge (tests/campaign.py) on made-up event logs: a check
that never fails proves nothing, so each violation it exists to catch is
shown to it here, next to the legitimate cases that look alike. No guest.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import campaign
import sbtarget as sb

MS = 1_000_000


def _judge(arch: str, lines: list[tuple[int, str, str]], kind=None,
           active=("sbc_hold",)):
    """``lines``: (t in ms, type, arg); numbered from 100."""
    camp = campaign.Campaign(SimpleNamespace(arch=arch), seed=0)
    camp.active = set(active)
    recs = [sb.Event(100 + i, t * MS, typ, arg) for i, (t, typ, arg) in enumerate(lines)]
    kind = kind or campaign.Kind("hook", "dpm_suspend", "begin", 0, "transient")
    return camp.judge(recs, kind)


def _attempt(state: str, middle: list[tuple[int, str, str]], result="resume\t0"):
    typ, _, arg = result.partition("\t")
    return ([(0, "unblock", '"sbc_hold"'), (1, "suspend", f"x {state}")] + middle
            + [(900, typ, arg), (901, "block", '"sbc_hold"')])


S3_SLEEP = [(50, "enter", "deep"), (60, "phase", "machine_suspend 3 begin"),
            (60, "phase", "machine_suspend 3 end"), (70, "exit", "deep")]


def test_s3_a_block_before_the_sleep_is_a_violation():
    outcome, _, bad = _judge("amd64", _attempt("deep", [
        (10, "block", '"sbc_hit"'), (11, "unblock", '"sbc_hit"')] + S3_SLEEP))
    assert outcome == "slept"
    assert any("S3 entered" in b for b in bad)
    assert any("before 'enter'" in b for b in bad)


def test_s3_an_aborted_attempt_is_fine():
    outcome, n, bad = _judge("amd64", _attempt("deep", [
        (10, "block", '"sbc_hit"'), (11, "unblock", '"sbc_hit"')], "abort\t-16"))
    assert (outcome, n, bad) == ("aborted", 1, [])


def test_s3_a_block_past_the_point_of_no_return_is_fine():
    lines = _attempt("deep", [(50, "enter", "deep"),
                              (60, "phase", "machine_suspend 3 begin"),
                              (60, "block", '"sbc_hit"'),
                              (60, "phase", "machine_suspend 3 end")])
    outcome, _, bad = _judge("amd64", lines)
    assert (outcome, bad) == ("after_ponr", [])


def test_s3_a_block_after_enter_but_before_the_sleep_is_a_violation():
    lines = _attempt("deep", [(50, "enter", "deep"), (55, "block", '"sbc_hit"')]
                     + S3_SLEEP[1:])
    outcome, _, bad = _judge("amd64", lines)
    assert outcome == "slept" and any("S3 entered" in b for b in bad)
    assert not any("before 'enter'" in b for b in bad)


def test_a_blocker_active_when_the_attempt_began_must_not_sleep():
    lines = [(0, "block", '"sbc_user"')] + _attempt("deep", S3_SLEEP)
    _, _, bad = _judge("amd64", lines, kind=campaign.Kind("plain"))
    assert any("slept while ['sbc_user'] active" in b for b in bad)


def test_s2idle_a_long_park_after_a_block_is_a_violation():
    lines = _attempt("s2idle", [(10, "block", '"sbc_hit"'),
                                (20, "phase", "machine_suspend 1 begin"),
                                (520, "phase", "machine_suspend 1 end")])
    outcome, _, bad = _judge("armhf", lines)
    assert outcome == "slept" and any("s2idle parked" in b for b in bad)


def test_s2idle_a_check_that_finds_the_block_is_fine():
    # a park of a millisecond: s2idle_enter() saw the wakeup pending
    lines = _attempt("s2idle", [(5, "enter", "s2idle"), (10, "block", '"sbc_hit"'),
                                (20, "phase", "machine_suspend 1 begin"),
                                (21, "phase", "machine_suspend 1 end"),
                                (30, "exit", "s2idle")])
    assert _judge("armhf", lines)[::2] == ("not_slept", [])
    lines = _attempt("s2idle", [(10, "block", '"sbc_hit"')])
    assert _judge("armhf", lines)[::2] == ("never_entered", [])


@pytest.mark.parametrize("woken_ms, bad", [(2, False), (600, True)])
def test_s2idle_a_block_during_the_park_must_end_it(woken_ms, bad):
    lines = _attempt("s2idle", [(20, "phase", "machine_suspend 1 begin"),
                                (400, "block", '"sbc_hit"'),
                                (400 + woken_ms, "phase", "machine_suspend 1 end")])
    _, _, found = _judge("armhf", lines)
    assert bool(found) == bad, found


def test_a_race_outside_any_attempt_and_a_hook_not_reached():
    kick = campaign.Kind("kick", delay_us=10, mode="persist")
    lines = [(0, "unblock", '"sbc_hold"'), (1, "block", '"sbc_hit"'),
             (901, "block", '"sbc_hold"')]
    assert _judge("amd64", lines, kind=kick)[::2] == ("outside", [])
    assert _judge("amd64", _attempt("deep", [], "abort\t-16"))[::2] == ("not_fired", [])


def test_kernel_reports_are_summarised_with_their_trace():
    text = """<4>[    6.8] WARNING: CPU: 0 PID: 100 at kernel/time/timekeeping.c:843 ktime_get+0x8d/0xa0
<4>[    6.8] Modules linked in: sb_campaign(OE) suspend_block(OE)
<4>[    6.8] Call Trace:
<4>[    6.8]  <TASK>
<4>[    6.8]  wakeup_source_activate+0x2b/0xc0
<4>[    6.8]  ? sbc_hook+0x14/0xa0 [sb_campaign]
<4>[    6.8]  suspend_block+0x15e/0x160 [suspend_block]
--
<4>[    7.0] BUG: sleeping function called from invalid context"""
    assert campaign.splat_summaries(text) == [
        "kernel: WARNING: CPU: 0 PID: 100 at kernel/time/timekeeping.c:843 "
        "ktime_get+0x8d/0xa0 <- wakeup_source_activate <- suspend_block",
        "kernel: BUG: sleeping function called from invalid context"]
