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
    vm.run(f"echo on > {sb.SYSFS}/state 2>/dev/null; "
           f"echo forced > {sb.SYSFS}/policy 2>/dev/null; "
           "kill $(pidof sbrace) $(pidof evread) 2>/dev/null; "
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
