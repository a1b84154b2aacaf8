#!/usr/bin/python3
"""synthcap - synthetic sbrig captures with exactly known truth.

Builds a capture directory (``host/doc/capture-format.md``, version 1 TSV or
version 2 with ``samples.bin``) from a *scenario*, a Python data structure
(:class:`Scenario` and the small dataclasses it holds), and writes next to
it ``truth.json``: the figures that ``sbrig analyze`` must put in
``report.json`` (``host/doc/report-format.md``), computed from the
scenario's own model by the documented rules, never by analysing the
capture's rows. Standard library only; numpy (Debian's ``python3-numpy``)
is used, when present, for large captures (the benchmark's 12.6 M samples)
and writes byte-identical files.

    /usr/bin/python3 tests/synth/synthcap.py list
    /usr/bin/python3 tests/synth/synthcap.py build kitchen OUT [--format 2] [--seed 3]

writes ``OUT/capture/`` and ``OUT/truth.json``. From a test::

    from tests.synth import synthcap
    truth = synthcap.build(synthcap.scenario("kitchen", format_version=2), tmp_path)
    # run: sbrig analyze tmp_path/capture -o tmp_path/report
    report = json.load(open(tmp_path / "report" / "report.json"))
    assert synthcap.compare(report, truth) == []     # [] or mismatch lines

or build a scenario of your own (times in seconds from the first sample)::

    sc = synthcap.Scenario("mine", duration_s=20, holds=[
             synthcap.Hold("wifi", 1.0, 3.0, extra_uW=300_000),
             synthcap.Hold("gps", 2.0, 4.0, extra_uW=100_000)],
         sleeps=[synthcap.Sleep(enter_s=5.0, wake_s=9.0)])

The model
=========

*Time.* The capture's first sample is host ``CLOCK_MONOTONIC``
``start_ns``. Everything the scenario schedules (blocks, suspends, presses,
gaps, a reboot) happens at an exact host instant.

*Power.* A level function L(t) in uW, piecewise constant or linear between
known instants: ``suspended_uW`` (or the sleep's ``level_uW``) between
``enter`` and ``exit``; ``reboot_uW`` while a rebooting target is down;
otherwise ``awake_uW`` plus the ``extra_uW`` of every blocker physically
held plus every :class:`Load` (constant, or a linear ramp). Samples are
taken at ``t_k = start + k*1e9//rate_hz + jitter(k)`` (a deterministic
jitter of up to ``jitter_ns``), minus the samples that gaps remove, and
each sample is L(t_k) + noise, quantised to ``lsb_uW``. The noise is +a,
-a, +a, ... on successive samples, so that it cancels exactly in every
trapezoid. The *model* M(t) is L sampled at the sample instants and
joined linearly: a step of L between two samples is a ramp over that one
sample interval. M is what a trapezoidal integral over the samples
measures, so every figure below is exact except for the bounded effects
listed in ``truth.json``'s ``tolerance.notes`` (ramps that do not fall on
whole uW, noise cut by an event inside a sample interval, the analysis'
clock-fit error at each event).

*Target clock.* Each boot has a ``CLOCK_BOOTTIME`` that runs at
(1 + ``drift_ppm``) x host time; every resume injects its sleep time with
an error (``Sleep.injection_error_ns``), so the host - target offset jumps
there (a new clock segment); a reboot starts a new boot id with BOOTTIME
~``Reboot.boot_age_s``. ``clock.tsv`` holds ping exchanges answered while
the target is awake: send, receive and the target time at the target's
answer, with independent one-way delays (``rtt_ns``/2 + U(0,
``jitter_ns``) each way, so the midpoint is off by at most jitter_ns/2)
and, every ``outlier_every`` pings, one delayed by ``outlier_ns`` on the
way out (``retained`` 0). Events carry their exact target time and an
*online* ``host_t_ns`` that is off by ``online_offset_ns`` +
``online_drift_ppm`` x (t - start): an analysis that does not re-fit the
clock gets latencies wrong by milliseconds.

*Marker.* With ``Scenario.marker`` (:class:`Marker`) the target's marker
line is wired: ``edges.tsv`` has an edge at each change of the set of held
blockers between empty and non-empty, late by U(0, ``jitter_ns``), and the
analysis must pair them with the events itself (the truth's clock bound in
the segments they anchor is then the markers': a few ``jitter_ns``), and
measure each wakeup to the first rising edge after its stimulus (exactly:
both are host times). ``online_error_ns`` adds the daemon's online marker
pairs to ``clock.tsv``, that far off: they must be ignored.

*What the truth assumes of the analysis:* exactly the rules of
report-format.md, applied with the events' true host times (the ideal
clock fit); with ``Clock(enabled=False)`` (no exchanges) the analysis must
keep the online times, and the truth uses those.

truth.json
==========

Mirrors report.json's field names (``capture``, ``energy``, ``blockers``,
``unattributed``, ``gaps``, ``wakeups``, ``unknown_wake_count``,
``latency``, ``phases``, ``findings``) and adds:

* ``tol`` in each object: the absolute bound of each figure when the
  analysis follows the rules exactly (quantisation, noise cuts, clock fit);
* ``alt`` in some objects: the same figure under the other reading of a
  rule the document leaves open (durations with or without gap time),
  named when a report's figure does not match;
* ``tolerance``: ``rel`` (0.01, the issue's 1 %), ``clock_err_ns`` (the
  bound used for every event time) and ``notes`` (what is inexact and by
  how much);
* ``expect_error`` (a corrupt capture: the file, line, column and name the
  error must give; then no report may be written) or null;
* ``checks``: blockers + unattributed + suspended energy (= ``total_uJ``);
  ``leak_s``: the leak threshold the findings assume (analyze's default);
* ``gaps[].hidden_true_uJ``: what the gap really hid (within the bounds);
  ``blockers[].stats_check`` is null where the rule cannot be applied
  (after a reboot the module's statistics restart) and its ``agree`` is
  null where the figures sit too close to the rule's threshold to say;
* ``model``: the scenario's own timeline (true host times: suspended
  stretches, every hold with its physical span, boots), for debugging.

The library (:data:`SCENARIOS`, ``synthcap.py list``): basic, kitchen (all
of it but a reboot), objects (same-named blockers, kernel wakeup sources),
objects-lost (two same-named objects across a lost record, with ids),
reboot, asleep (starts suspended), asleep-end (ends suspended, the last
suspend's records never came), noclock, marker
(the marker line wired, wrong online marker pairs in clock.tsv), latency
(20 wakes), empty, killed, corrupt, corrupt-samples, bench (the 1 h
benchmark capture; ``duration_s``).

:func:`compare` checks a report against it: a figure passes when it is
within ``max(rel x |truth|, tol)`` of the truth (not of its ``alt``: the
analysis follows report-format.md's reading, ``alt`` only explains a
mismatch); counts and names must be equal; a key of the truth that the
report lacks, a blocker the truth does not have, and a finding whose
kind, blocker, time (leak, aborted_suspend, gap: within ``clock_err_ns``)
or members (kind, blocker, t_ns, detail) differ are mismatches.
"""

from __future__ import annotations

import argparse
import bisect
import dataclasses
import hashlib
import json
import math
import random
import re
import statistics
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path

try:                                    # only to go faster on big captures
    import numpy as np
except ImportError:                     # pragma: no cover - numpy is optional
    np = None

NS = 1_000_000_000
TRUTH_SCHEMA = "sbrig-synth-truth"
TRUTH_VERSION = 1
NUMPY_MIN_SAMPLES = 400_000     # below this the plain Python path is used

SAMPLES_BIN_MAGIC = b"SBRIGSMP"
SAMPLES_BIN_HEADER = struct.Struct("<8sIII12x")    # 32 bytes
SAMPLES_BIN_RECORD = struct.Struct("<qqiiiI")      # 32 bytes

TSV_COLUMNS = {
    "samples": ("t_ns", "current_uA", "bus_uV", "shunt_nV", "power_uW"),
    "gaps": ("t_ns", "next_t_ns", "missing"),
    "edges": ("t_ns", "line", "edge", "seqno"),
    "stimuli": ("t_ns", "what", "arg"),
    "events": ("host_t_ns", "uncert_ns", "target_t_ns", "boot_id", "seq",
               "type", "arg", "cut"),
    "stats": ("t_ns", "name", "count", "wake_count", "active_since_ns",
              "total_time_ns", "sleep_time_ns", "max_time_ns",
              "last_change_ns"),
    "clock": ("host_send_ns", "host_recv_ns", "target_ns", "retained"),
}
TEXT_COLUMNS = {"line", "edge", "what", "arg", "boot_id", "type", "name"}
BUILTIN = ("main", "unknown_wakeups")
# The phase records of one suspend-to-RAM cycle, in the order Debian's
# 6.1 amd64 kernel writes them (seen on the virtual rig's QEMU target):
# (ms from the enter "E" or the wake "W", ACTION VAL begin|end). The
# records from machine_suspend's end to syscore_resume's begin carry the
# moment timekeeping stopped (E + 1.2 ms).
PHASE_RECORDS = (
    ("E", -24.0, "suspend_enter 3 begin"), ("E", -23.9, "sync_filesystems 0 begin"),
    ("E", -23.5, "sync_filesystems 0 end"), ("E", -23.0, "freeze_processes 0 begin"),
    ("E", -18.0, "freeze_processes 0 end"), ("E", -17.9, "suspend_enter 3 end"),
    ("E", -17.8, "dpm_prepare 2 begin"), ("E", -17.0, "dpm_prepare 2 end"),
    ("E", -16.9, "dpm_suspend 2 begin"), ("E", -6.0, "dpm_suspend 2 end"),
    ("E", -5.9, "dpm_suspend_late 2 begin"), ("E", -4.0, "dpm_suspend_late 2 end"),
    ("E", -3.9, "dpm_suspend_noirq 2 begin"), ("E", 0.5, "dpm_suspend_noirq 2 end"),
    ("E", 0.7, "syscore_suspend 0 begin"), ("E", 0.9, "syscore_suspend 0 end"),
    ("E", 1.2, "machine_suspend 3 begin"), ("E", 1.2, "acpi_suspend 3 begin"),
    ("E", 1.2, "acpi_suspend 3 end"), ("E", 1.2, "machine_suspend 3 end"),
    ("E", 1.2, "syscore_resume 0 begin"), ("W", 1.0, "syscore_resume 0 end"),
    ("W", 2.0, "dpm_resume_noirq 16 begin"), ("W", 7.0, "dpm_resume_noirq 16 end"),
    ("W", 7.1, "dpm_resume_early 16 begin"), ("W", 8.0, "dpm_resume_early 16 end"),
    ("W", 8.1, "dpm_resume 16 begin"), ("W", 25.0, "dpm_resume 16 end"),
    ("W", 25.1, "dpm_complete 16 begin"), ("W", 26.0, "dpm_complete 16 end"),
    ("W", 26.1, "resume_console 3 begin"), ("W", 26.2, "resume_console 3 end"),
    ("W", 26.3, "thaw_processes 0 begin"), ("W", 35.0, "thaw_processes 0 end"),
)
# dev_pm records (the module's event_dev_pm_min_us): (at, ms, DURATION_NS
# ERROR VERB DEVICE) inside the device passes, and what the report lists
# as each phase's slowest callbacks (at most 3, slowest first)
DEV_PM_RECORDS = (
    ("E", -10.0, "4200000 0 suspend 0000:00:02.0"), ("E", -8.0, "900000 0 suspend serio0"),
    ("E", -7.0, "6100000 0 suspend i8042"), ("E", -6.5, "100000 0 suspend rtc_cmos 00:00"),
    ("W", 20.0, "12000000 -5 resume 0000:00:02.0"),
)
DEV_PM_SLOWEST = {
    "suspend": [("i8042", "suspend", 6100000, 0), ("0000:00:02.0", "suspend", 4200000, 0),
                ("serio0", "suspend", 900000, 0)],
    "resume": [("0000:00:02.0", "resume", 12000000, -5)],
}
# sleepgraph's phases from them (report-format.md section 4): name, the
# record that starts it, the record that ends it
PHASES = (
    ("suspend_prepare", "dpm_prepare 2 begin", "dpm_prepare 2 end"),
    ("suspend", "dpm_suspend 2 begin", "dpm_suspend 2 end"),
    ("suspend_late", "dpm_suspend_late 2 begin", "dpm_suspend_late 2 end"),
    ("suspend_noirq", "dpm_suspend_noirq 2 begin", "dpm_suspend_noirq 2 end"),
    ("suspend_machine", "dpm_suspend_noirq 2 end", "machine_suspend 3 begin"),
    ("resume_machine", "syscore_resume 0 end", "dpm_resume_noirq 16 begin"),
    ("resume_noirq", "dpm_resume_noirq 16 begin", "dpm_resume_noirq 16 end"),
    ("resume_early", "dpm_resume_early 16 begin", "dpm_resume_early 16 end"),
    ("resume", "dpm_resume 16 begin", "dpm_resume 16 end"),
    ("resume_complete", "dpm_complete 16 begin", "dpm_complete 16 end"),
)
# severity order of report-format.md's findings table
FINDING_RANK = ("leak", "aborted_suspend", "unknown_wakeup", "dominant", "short_suspend",
                "inferred_suspend", "unknown_end", "gap", "lost_events", "clock_uncertainty", "stats_mismatch", "skipped_events")
WAKE_STIMULI = ("press", "plug", "unplug")


class ScenarioError(ValueError):
    """A scenario the model cannot make consistent (says what to change)."""


# ---- the scenario ---------------------------------------------------------

@dataclass
class Hold:
    """One activation of a blocker: blocked at ``start_s``, unblocked at
    ``end_s`` (seconds from the first sample).

    ``start_s`` None: active before the capture (the first stats snapshot
    says so; blocked 2.5 s before). ``end_s`` None: still active at the end
    (a leak), or until a reboot (the analysis ends it at the new boot's
    first event). ``extra_uW`` is what holding it costs while awake.
    ``logged`` False: its two records were overwritten in the module's
    ring (the log says ``lost 2``) but the stats count it. ``lost_end``:
    only its unblock record was overwritten (``lost 1``): the analysis
    ends it where the log says records were lost, once the next stats
    snapshot shows it inactive (no phantom leak).

    ``obj``: which object of the name (every evdev client's blocker is
    named "evdev": holds of one name and different ``obj`` are distinct
    objects, each with its own stats row, and may overlap). ``kind``
    ``"wakeup_source"``: a kernel wakeup source (``ws_activate`` /
    ``ws_relax`` records, no stats rows), attributed like a blocker."""
    name: str
    start_s: float | None
    end_s: float | None
    extra_uW: int = 0
    logged: bool = True
    lost_end: bool = False
    obj: int = 0
    kind: str = "suspend_blocker"


@dataclass
class Sleep:
    """One suspend cycle: ``suspend`` (``suspend_ms`` before ``enter``),
    ``enter`` at ``enter_s`` (None: asleep when the capture starts), woken
    at ``wake_s`` by ``wake`` (a stimulus "WHAT ARG": "press power",
    "plug charger"; None: a wake no stimulus explains, an alarm), ``exit``
    ``exit_ms`` and ``resume 0`` ``latency_ms`` after the wake.
    ``early_presses_s``: presses in the stretch that did not wake it.
    ``injection_error_ns``: error of the sleep time the resume injects into
    BOOTTIME (a clock segment boundary when it is not 0; keep it >= 5 ms or
    0). ``level_uW``: suspended power (default ``Scenario.suspended_uW``).
    The platform runs (awake power) ``lag_ms`` after ``enter`` and again
    from ``wake``, ``exit_ms`` before its kernel logs ``exit``: what the
    analysis must find from the samples (report-format.md, "State edges
    by the power"). ``enter_online_error_ns``: the ``enter`` record's online
    host time is off by this much, with as much uncertainty (the daemon
    could only guess it: logged with the clock of the suspend it ends).
    ``unseen``: the wake after this sleep is too short for the clock: no
    ping is answered from this sleep's suspend to the next one's, and the
    records from its ``exit`` to the next ``enter`` have no online host
    time (``host_t_ns`` 0, ``uncert_ns`` -1, as the daemon writes them);
    the analysis must place them by the power (report-format.md, "Wakes
    the clock did not see")."""
    enter_s: float | None
    wake_s: float
    wake: str | None = "press power"
    latency_ms: float = 40.0
    exit_ms: float = 6.0
    suspend_ms: float = 25.0
    early_presses_s: tuple = ()
    injection_error_ns: int = 0
    level_uW: int | None = None
    kernel_state: str = "deep"
    lag_ms: float = 0.0
    enter_online_error_ns: int = 0
    unseen: bool = False


@dataclass
class Abort:
    """A suspend attempt (``suspend`` at ``t_s``) aborted by blocker ``by``,
    blocked 4 ms later and held ``hold_s`` (``abort ERRNO`` 9 ms later)."""
    t_s: float
    by: str
    hold_s: float = 0.5
    extra_uW: int = 0
    errno: int = -16


@dataclass
class Load:
    """Power drawn while awake from ``start_s`` to ``end_s`` whoever holds
    what (a screen, a burn): ``uW``, or a linear ramp to ``end_uW``."""
    start_s: float
    end_s: float
    uW: int
    end_uW: int | None = None


@dataclass
class Stimulus:
    """Something the rig did that is no wakeup (a press while awake ...)."""
    t_s: float
    what: str
    arg: str = ""


@dataclass
class Gap:
    """``missing`` samples removed from the first one due at ``t_s``;
    ``declared``: listed in gaps.tsv (else only the timestamps show it:
    a gap by the rules if longer than 10x the median interval)."""
    t_s: float
    missing: int
    declared: bool = True


@dataclass
class Reboot:
    """The target dies at ``t_s`` and is up again ``down_s`` later (its
    first event, BOOTTIME ``boot_age_s``) with a new boot id."""
    t_s: float
    down_s: float = 6.0
    boot_age_s: float = 4.0


@dataclass
class OddEvent:
    """An event record of a type the analysis does not know (skipped)."""
    t_s: float
    type: str
    arg: str = ""


@dataclass
class Corrupt:
    """Make data row ``row`` (1 = first row after the header) of ``file``
    (``events.tsv``, ``samples.tsv`` ...) malformed: column ``column``
    becomes ``value``. ``file`` ``samples.bin`` with ``column`` "magic"
    breaks the v2 header instead."""
    file: str
    row: int
    column: str
    value: str = "12x4"


@dataclass
class Clock:
    """The target's clock and the ping exchanges (see the module doc)."""
    enabled: bool = True
    boot_ns: int = 3_600 * NS          # target BOOTTIME at the first sample
    drift_ppm: float = 25.0
    ping_interval_s: float = 1.0
    rtt_ns: int = 200_000
    jitter_ns: int = 60_000
    outlier_every: int = 7
    outlier_ns: int = 5_000_000
    online_offset_ns: int = 3_000_000
    online_drift_ppm: float = 40.0
    online_uncert_ns: int = 400_000


@dataclass
class Marker:
    """The target's marker line wired to the rig: high while any blocker is
    active. ``edges.tsv`` gets an edge at the true host time of every
    change of the active set between empty and non-empty (within the
    capture), late by the GPIO path's U(0, ``jitter_ns``). The analysis
    pairs them with the events offline (report-format.md, "Marker edges,
    paired again") and the truth expects that clock: the error bound of
    an event is then the markers' (a few ``jitter_ns``), not the pings',
    and a wakeup's latency runs to the first rising edge after its
    stimulus. ``online_error_ns``: clock.tsv also holds the daemon's
    online marker pairs, with edge times off by this much (None: no such
    rows); an analysis that used them would miss the truth."""
    jitter_ns: int = 5_000
    online_error_ns: int | None = None


@dataclass
class Scenario:
    """Everything a synthetic capture is made of (times in s from start).

    ``empty``: a capture with no rows at all. ``killed``: no ``[end]`` in
    meta.ini and a cut last line in samples and events (status ``open``).
    ``corrupt``: see :class:`Corrupt`. ``phases``: every suspend cycle
    (not one asleep at the start) logs the kernel's ``suspend_resume``
    records as a 6.1 suspend-to-RAM does (:data:`PHASE_RECORDS`; its sleeps
    need ``injection_error_ns`` 0); ``dev_pm``: with them the slow device
    callbacks of :data:`DEV_PM_RECORDS`. ``object_ids``: block/unblock
    records carry their object's id (events.tsv's ``obj`` column, as a
    capture since issue 23; without it the file has no such column, as one
    written before). ``provenance``: meta.ini
    ``[provenance]`` values that replace the defaults (``git_sha``, the
    commit of a run; ``scenario_sha256``: repeated runs of one scenario
    file share it, where the default hashes the whole dataclass, seed and
    all).

    ``asleep_at_end_s``: the target suspends at this time and sleeps to
    the capture's end, and none of that suspend's records come (the agent
    sends them only when the target wakes again): no record, ping answer
    or stats snapshot from then on, and the holds still open (``end_s``
    None) are released by the suspend, unlogged. The analysis must infer
    the suspend from the power (report-format.md, "The capture's end")."""
    name: str
    duration_s: float
    rate_hz: int = 3500
    start_ns: int = 20 * NS
    seed: int = 1
    format_version: int = 1
    bus_uV: int = 5_000_000
    shunt_uohm: int = 100_000
    awake_uW: int = 250_000
    suspended_uW: int = 15_000
    reboot_uW: int | None = None
    noise_uW: int = 0
    lsb_uW: int = 1
    jitter_ns: int = 20_000
    holds: list = field(default_factory=list)
    sleeps: list = field(default_factory=list)
    aborts: list = field(default_factory=list)
    loads: list = field(default_factory=list)
    stimuli: list = field(default_factory=list)
    gaps: list = field(default_factory=list)
    reboots: list = field(default_factory=list)
    odd_events: list = field(default_factory=list)
    clock: Clock = field(default_factory=Clock)
    marker: Marker | None = None
    stats_every_s: float | None = 5.0
    phases: bool = False
    dev_pm: bool = False
    leak_s: float = 5.0
    empty: bool = False
    killed: bool = False
    corrupt: Corrupt | None = None
    provenance: dict = field(default_factory=dict)
    object_ids: bool = False
    asleep_at_end_s: float | None = None

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


# ---- small helpers --------------------------------------------------------

def escape(s: str) -> str:
    """The capture format's escaping of text columns and meta.ini values."""
    out = []
    for ch in s:
        o = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif o < 0x20 or o == 0x7F:
            out.append(f"\\x{o:02x}")
        else:
            out.append(ch)
    return "".join(out)


M64 = (1 << 64) - 1


def _jitter(k: int, seed: int, j: int) -> int:
    """Deterministic timestamp jitter of sample k in [-j, j] (0 for k 0):
    splitmix64's finaliser of k + seed, so numpy computes the same."""
    if k == 0 or j == 0:
        return 0
    x = ((k + seed * 0x9E3779B97F4A7C15) * 0xBF58476D1CE4E5B9) & M64
    x ^= x >> 31
    x = (x * 0x94D049BB133111EB) & M64
    x ^= x >> 29
    return x % (2 * j + 1) - j


def _jitter_np(k, seed: int, j: int):
    """_jitter() of an int64 array of sample numbers."""
    if j == 0:
        return np.zeros(len(k), dtype=np.int64)
    with np.errstate(over="ignore"):
        x = (k.astype(np.uint64) + np.uint64((seed * 0x9E3779B97F4A7C15) & M64)) \
            * np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(31)
        x = x * np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(29)
    out = (x % np.uint64(2 * j + 1)).astype(np.int64) - j
    out[k == 0] = 0
    return out


def _union(spans) -> list[tuple[int, int]]:
    """The union of half-open spans, sorted and merged (touching ones too)."""
    out: list[list[int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _percentiles(vals: list[int]) -> dict:
    """n/min/median/p95/max as report-format.md defines them."""
    v = sorted(vals)
    n = len(v)
    if not n:
        return {"n": 0, "min_ns": None, "median_ns": None, "p95_ns": None,
                "max_ns": None}
    med = v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
    p95 = v[max(1, math.ceil(0.95 * n)) - 1]
    return {"n": n, "min_ns": v[0], "median_ns": med, "p95_ns": p95,
            "max_ns": v[-1]}


class _PL:
    """A piecewise-linear function through (t, v) points, with some of its
    segments excluded (gaps): integrate() gives (uJ, ns) over [a, b]."""

    def __init__(self, ts: list[int], vs: list[float], excluded: set[int]):
        self.t, self.v, self.excluded = ts, vs, excluded   # excluded: seg idx

    def value(self, x: int) -> float:
        i = bisect.bisect_right(self.t, x) - 1
        i = min(max(i, 0), len(self.t) - 2)
        t0, t1 = self.t[i], self.t[i + 1]
        return self.v[i] + (self.v[i + 1] - self.v[i]) * (x - t0) / (t1 - t0)

    def integrate(self, a: int, b: int) -> tuple[float, int]:
        """Integral of the function over [a, b] without the excluded
        segments (uW x ns / 1e9 = uJ), and the time integrated (ns)."""
        if len(self.t) < 2 or b <= a:
            return 0.0, 0
        a, b = max(a, self.t[0]), min(b, self.t[-1])
        i = max(bisect.bisect_right(self.t, a) - 1, 0)
        e, d = 0.0, 0
        while i < len(self.t) - 1 and self.t[i] < b:
            t0, t1 = self.t[i], self.t[i + 1]
            x0, x1 = max(a, t0), min(b, t1)
            if x1 > x0 and i not in self.excluded:
                v0, v1 = self.v[i], self.v[i + 1]
                f0 = v0 + (v1 - v0) * (x0 - t0) / (t1 - t0)
                f1 = v0 + (v1 - v0) * (x1 - t0) / (t1 - t0)
                e += (f0 + f1) / 2 * (x1 - x0)
                d += x1 - x0
            i += 1
        return e / NS, d


@dataclass
class _Event:
    t: int                 # true host time
    boot: int
    type: str
    arg: str
    order: int = 0
    lost: bool = False     # overwritten in the ring: not in events.tsv
    seq: int = 0
    target_t: int = 0
    host_t: int = 0        # the online host time written to events.tsv
    lost_at: int = 0       # lost: the time of the "lost" record saying so
    obj: int = 0           # block/unblock: the Hold's obj (which object)


# ---- the model ------------------------------------------------------------

class Model:
    """A scenario made concrete: events, stimuli, clock exchanges, stats
    snapshots, the level function and the samples. ``truth()`` computes
    the expected report figures from these (never from written rows)."""

    def __init__(self, sc: Scenario, use_numpy: bool | None = None) -> None:
        self.sc = sc
        self.rng = random.Random(sc.seed)
        self.use_numpy = use_numpy
        self.boot_ids = [self._boot_id(i) for i in range(len(sc.reboots) + 1)]
        if sc.empty:
            self._empty()
            return
        self._samples_times()
        self._timeline()
        self._events()
        self._stimuli()
        self._clock_exchanges()
        self._marker()
        self._stats()
        self._levels()
        self._samples_values()
        self._compact_model()

    # -- identities ----------------------------------------------------------
    def _boot_id(self, i: int) -> str:
        h = hashlib.sha256(f"{self.sc.name}/{self.sc.seed}/boot{i}".encode()).hexdigest()
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"

    def ns(self, s: float) -> int:
        """Host time of scenario second @s."""
        return self.sc.start_ns + round(s * NS)

    def _empty(self) -> None:
        self.numpy = False
        self.T = []
        self.P = []
        self.events, self.stim, self.exchanges, self.snapshots = [], [], [], []
        self.edges, self.anchors, self.marker_rows = [], [], []
        self.gaps_rows = []
        self.boots = [{"h0": self.sc.start_ns, "b0": self.sc.clock.boot_ns,
                       "first_event": None, "crash": None}]

    # -- sample instants -----------------------------------------------------
    def _nominal(self, k: int) -> int:
        return self.sc.start_ns + k * NS // self.sc.rate_hz

    def _samples_times(self) -> None:
        sc = self.sc
        n = int(round(sc.duration_s * NS)) * sc.rate_hz // NS + 1
        removed: list[tuple[int, int, Gap]] = []
        for g in sc.gaps:
            k0 = -(-(self.ns(g.t_s) - sc.start_ns) * sc.rate_hz // NS)
            if k0 < 1 or k0 + g.missing >= n - 1:
                raise ScenarioError(f"gap at {g.t_s} s is not inside the capture")
            removed.append((k0, k0 + g.missing, g))
        removed.sort(key=lambda r: r[0])
        for (a0, a1, _), (b0, _, _) in zip(removed, removed[1:]):
            if b0 <= a1:
                raise ScenarioError("gaps overlap or touch")
        self.n_nominal = n
        self.removed = removed
        numpy = self.use_numpy if self.use_numpy is not None else (
            np is not None and n >= NUMPY_MIN_SAMPLES)
        self.numpy = bool(numpy and np is not None)
        if self.numpy:
            k = np.arange(n, dtype=np.int64)
            keep = np.ones(n, dtype=bool)
            for a, b, _ in removed:
                keep[a:b] = False
            k = k[keep]
            self.T = sc.start_ns + k * NS // sc.rate_hz + _jitter_np(k, sc.seed, sc.jitter_ns)
            self.K = k
        else:
            rem = set()
            for a, b, _ in removed:
                rem.update(range(a, b))
            self.K = [k for k in range(n) if k not in rem]
            self.T = [self._nominal(k) + _jitter(k, sc.seed, sc.jitter_ns)
                      for k in self.K]
        if 2 * sc.jitter_ns * 6 > NS // sc.rate_hz:
            raise ScenarioError("jitter_ns must stay below 1/12 of the sample period")
        self.t_first, self.t_last = int(self.T[0]), int(self.T[-1])
        # where each removed run sits among the emitted samples
        self.gap_bounds = []
        for a, b, g in removed:
            i_after = self._index_of_k(b)
            self.gap_bounds.append((i_after - 1, i_after, g))

    def _index_of_k(self, k: int) -> int:
        if self.numpy:
            return int(np.searchsorted(self.K, k))
        return bisect.bisect_left(self.K, k)

    def T_at(self, i: int) -> int:
        return int(self.T[i])

    def first_at_or_after(self, t: int) -> int:
        if self.numpy:
            return int(np.searchsorted(self.T, t, side="left"))
        return bisect.bisect_left(self.T, t)

    # -- the target's timeline -----------------------------------------------
    def _timeline(self) -> None:
        sc, ns = self.sc, self.ns
        t0, t1 = self.t_first, self.t_last
        self.boots = [{"h0": t0, "b0": sc.clock.boot_ns, "first_event": None,
                       "crash": None}]
        for r in sorted(sc.reboots, key=lambda r: r.t_s):
            crash, up = ns(r.t_s), ns(r.t_s + r.down_s)
            self.boots[-1]["crash"] = crash
            self.boots.append({"h0": up, "b0": round(r.boot_age_s * NS),
                               "first_event": up, "crash": None})
        # sleeps, in order
        self.sl = []
        for i, s in enumerate(sorted(sc.sleeps, key=lambda s: s.wake_s)):
            pre = s.enter_s is None
            if pre and i:
                raise ScenarioError("only the first sleep may start before the capture")
            enter = t0 - NS if pre else ns(s.enter_s)
            wake = ns(s.wake_s)
            d = {"sleep": s, "pre": pre, "enter": enter,
                 "suspend": enter - round(s.suspend_ms * 1e6),
                 "wake": wake, "exit": wake + round(s.exit_ms * 1e6),
                 "resume": wake + round(s.latency_ms * 1e6),
                 "level": sc.suspended_uW if s.level_uW is None else s.level_uW}
            # the platform's own low-power stretch
            d["p_enter"] = enter if pre else enter + round(s.lag_ms * 1e6)
            d["p_exit"] = wake
            if not (d["enter"] <= d["p_enter"] < d["wake"] < d["exit"] < d["resume"]):
                raise ScenarioError(f"sleep {i}: need enter < wake < exit < resume")
            d["boot"] = self.boot_at(wake)
            self.sl.append(d)
        for a, b in zip(self.sl, self.sl[1:]):
            if b["suspend"] <= a["resume"]:
                raise ScenarioError("sleeps overlap")
        # holds: physical span [ps, pe), analysis span [as_, ae)
        self.holds = []
        for h in sc.holds:
            self._add_hold(h)
        self.ab = []
        for a in sc.aborts:
            t = ns(a.t_s)
            hold = Hold(a.by, a.t_s + 0.004, a.t_s + 0.004 + a.hold_s, a.extra_uW)
            self.ab.append({"abort": a, "suspend": t, "end": t + 9_000_000,
                            "hold": self._add_hold(hold)})
        for h in self.holds:
            for s in self.sl:
                if h["ps"] < s["exit"] and s["enter"] < h["pe"]:
                    raise ScenarioError(f"blocker {h['name']} is held while "
                                        f"suspended (enter {s['enter']})")
        for s in self.sl:
            for b in self.boots:
                if b["crash"] and s["suspend"] <= b["crash"] < s["resume"]:
                    raise ScenarioError("a reboot inside a suspend cycle")
        for x in [s["suspend"] for s in self.sl if not s["pre"]] + [s["resume"] for s in self.sl]:
            if not t0 < x < t1:
                raise ScenarioError("a suspend cycle outside the capture")

    def boot_at(self, h: int) -> int:
        """Index of the boot up at host time @h (the dead time counts as
        the old boot's)."""
        b = 0
        for i, boot in enumerate(self.boots[1:], 1):
            if h >= boot["h0"]:
                b = i
        return b

    def _add_hold(self, h: Hold) -> dict:
        t0, t1 = self.t_first, self.t_last
        ps = t0 - round(2.5 * NS) if h.start_s is None else self.ns(h.start_s)
        boot = self.boot_at(max(ps, t0))
        crash = self.boots[boot]["crash"]
        if h.end_s is None:
            pe = crash if crash is not None else t1 + NS
        else:
            pe = self.ns(h.end_s)
            if crash is not None and pe > crash:
                raise ScenarioError(f"hold {h.name} ends after its boot died")
        if pe <= ps:
            raise ScenarioError(f"hold {h.name}: end before start")
        if h.start_s is not None and not t0 < ps < t1:
            raise ScenarioError(f"hold {h.name}: start outside the capture")
        if h.end_s is not None and not t0 < pe < t1:
            raise ScenarioError(f"hold {h.name}: end outside the capture")
        if not h.logged and (h.start_s is None or h.end_s is None):
            raise ScenarioError("a lost hold must start and end in the capture")
        d = {"hold": h, "name": h.name, "ps": ps, "pe": pe, "boot": boot,
             "pre": h.start_s is None, "open": h.end_s is None,
             "crash_end": h.end_s is None and crash is not None}
        self.holds.append(d)
        return d

    # -- events ----------------------------------------------------------------
    def _events(self) -> None:
        sc = self.sc
        ev: list[_Event] = []

        def add(t, type_, arg, boot=None, lost=False, obj=0):
            ev.append(_Event(t, self.boot_at(t) if boot is None else boot,
                             type_, arg, len(ev), lost, obj=obj))

        for b in self.boots[1:]:
            add(b["first_event"], "policy", "opportunistic mem")
        for h in self.holds:
            lost = not h["hold"].logged
            ws = h["hold"].kind == "wakeup_source"
            if not h["pre"]:
                add(h["ps"], "ws_activate" if ws else "block", h["name"], lost=lost,
                    obj=h["hold"].obj)
            if not h["open"]:
                add(h["pe"], "ws_relax" if ws else "unblock", h["name"],
                    lost=lost or h["hold"].lost_end, obj=h["hold"].obj)
                h["end_ev"] = ev[-1]
        for s in self.sl:
            st = s["sleep"]
            if sc.phases and not s["pre"]:
                if st.injection_error_ns:
                    raise ScenarioError("phases: a sleep with an injection error "
                                        "(records between enter and exit map off)")
                for at, ms, arg in PHASE_RECORDS:
                    t = (s["enter"] if at == "E" else s["wake"]) + round(ms * 1e6)
                    add(t, "phase", arg)
                    s.setdefault("phase_t", {})[arg] = t
                for at, ms, arg in DEV_PM_RECORDS if sc.dev_pm else ():
                    add((s["enter"] if at == "E" else s["wake"]) + round(ms * 1e6),
                        "dev_pm", arg)
            if not s["pre"]:
                add(s["suspend"], "suspend", f"mem {st.kernel_state}")
                add(s["enter"], "enter", st.kernel_state)
            add(s["exit"], "exit", st.kernel_state)
            add(s["resume"], "resume", "0")
        for a in self.ab:
            add(a["suspend"], "suspend", "mem deep")
            add(a["end"], "abort", str(a["abort"].errno))
        for o in sc.odd_events:
            add(self.ns(o.t_s), o.type, o.arg)
        for e in ev:
            if not self.t_first < e.t < self.t_last:
                raise ScenarioError(f"event {e.type} {e.arg} outside the capture")
            if sc.asleep_at_end_s is not None and e.t >= self.ns(sc.asleep_at_end_s):
                raise ScenarioError(f"event {e.type} {e.arg} after the last suspend "
                                    "(asleep_at_end_s): its records never come")
            b = self.boots[e.boot]
            if b["crash"] is not None and e.t >= b["crash"]:
                raise ScenarioError(f"event {e.type} {e.arg} while the target is down")
        ev.sort(key=lambda e: (e.t, e.order))
        # sequence numbers per boot; a "lost N" line before the next record
        out: list[_Event] = []
        seq = {0: 1000}
        pending_lost: dict[int, list[_Event]] = {}
        for e in ev:
            s = seq.setdefault(e.boot, 0)
            e.seq = s
            seq[e.boot] = s + 1
            if e.lost:
                pending_lost.setdefault(e.boot, []).append(e)
                continue
            lost = pending_lost.pop(e.boot, None)
            if lost:
                out.append(_Event(e.t, e.boot, "lost", str(len(lost)), e.order,
                                  False, lost[0].seq))
                for x in lost:
                    x.lost_at = e.t         # where the log says so
            out.append(e)
        if pending_lost:
            raise ScenarioError("lost records need a later record of their boot")
        self.all_events = ev            # what happened (stats count these)
        self.events = out               # what events.tsv holds
        for e in out:
            e.target_t = self.target_time(e.t, e.boot)
            e.host_t = self.online(e.t)

    def target_time(self, h: int, boot: int | None = None) -> int:
        """The target's BOOTTIME at host time @h."""
        c = self.sc.clock
        b = self.boot_at(h) if boot is None else boot
        bt = self.boots[b]
        t = bt["b0"] + (h - bt["h0"]) + round((h - bt["h0"]) * c.drift_ppm / 1e6)
        for s in self.sl:
            if s["boot"] == b and s["exit"] <= h:
                t += s["sleep"].injection_error_ns
        return t

    def target_mono(self, h: int, boot: int) -> int:
        """The target's CLOCK_MONOTONIC (stops in suspend) at host time @h."""
        c = self.sc.clock
        t = self.target_time(h, boot) - 7 * NS
        for s in self.sl:
            if s["boot"] == boot and s["exit"] <= h:
                slept = s["exit"] - max(s["enter"], self.t_first - NS)
                t -= slept + round(slept * c.drift_ppm / 1e6) + s["sleep"].injection_error_ns
        return t

    def online(self, h: int) -> int:
        """events.tsv's host_t_ns for an event at true host time @h."""
        c = self.sc.clock
        return h + c.online_offset_ns + round((h - self.t_first) * c.online_drift_ppm / 1e6)

    def an(self, h: int) -> int:
        """The host time the analysis must give an event at true time @h."""
        return h if self.sc.clock.enabled else self.online(h)

    # -- stimuli ---------------------------------------------------------------
    def _stimuli(self) -> None:
        st = []
        for s in self.sl:
            for p in s["sleep"].early_presses_s:
                t = self.ns(p)
                if not s["enter"] < t < s["wake"]:
                    raise ScenarioError("an early press outside its sleep")
                st += [(t, "press", "power"), (t + 100_000_000, "release", "power")]
            w = s["sleep"].wake
            if w:
                what, _, arg = w.partition(" ")
                if what not in WAKE_STIMULI:
                    raise ScenarioError(f"wake stimulus {w!r}: not press/plug/unplug")
                st.append((s["wake"], what, arg))
                if what == "press":
                    st.append((s["wake"] + 100_000_000, "release", arg))
        for x in self.sc.stimuli:
            st.append((self.ns(x.t_s), x.what, x.arg))
        st.sort()
        for t, what, _ in st:
            if not self.t_first < t < self.t_last:
                raise ScenarioError(f"stimulus {what} outside the capture")
        self.stim = st

    # -- clock exchanges --------------------------------------------------------
    def _unseen(self) -> list[tuple[int, int]]:
        """The wakes of ``Sleep.unseen``: (its exit, the next enter)."""
        return [(a["exit"], b["enter"]) for a, b in zip(self.sl, self.sl[1:])
                if a["sleep"].unseen]

    def _unresponsive(self) -> list[tuple[int, int]]:
        w = []
        for i, s in enumerate(self.sl):
            end = s["resume"]
            if s["sleep"].unseen and i + 1 < len(self.sl):
                end = self.sl[i + 1]["suspend"]
            w.append((s["suspend"] if not s["pre"] else self.t_first - NS, end))
        for a in self.ab:
            w.append((a["suspend"], a["end"]))
        for i, b in enumerate(self.boots[:-1]):
            w.append((b["crash"], self.boots[i + 1]["first_event"] + 300_000_000))
        if self.sc.asleep_at_end_s is not None:
            w.append((self.ns(self.sc.asleep_at_end_s), self.t_last + NS))
        return w

    def segment_of(self, h: int, boot: int) -> tuple[int, int]:
        """(boot, clock segment) at host time @h: segments change at every
        resume whose injected sleep time has an error."""
        k = sum(1 for s in self.sl if s["boot"] == boot and s["exit"] <= h
                and s["sleep"].injection_error_ns)
        return boot, k

    def _clock_exchanges(self) -> None:
        c = self.sc.clock
        self.exchanges = []
        if not c.enabled:
            return
        dead = self._unresponsive()
        step = round(c.ping_interval_s * NS)
        s = self.t_first + 50_000_000
        j = 0
        while s < self.t_last - 20_000_000:
            send = s + self.rng.randrange(0, 2_000_000)
            s += step
            d1 = c.rtt_ns // 2 + self.rng.randrange(0, c.jitter_ns + 1)
            d2 = c.rtt_ns // 2 + self.rng.randrange(0, c.jitter_ns + 1)
            j += 1
            outlier = bool(c.outlier_every) and j % c.outlier_every == 0
            if outlier:
                d1 += c.outlier_ns
            recv = send + d1 + d2
            if any(a - 1_000_000 <= recv and send <= b + 1_000_000 for a, b in dead):
                continue
            at = send + d1
            boot = self.boot_at(at)
            self.exchanges.append({"send": send, "recv": recv,
                                   "target": self.target_time(at, boot),
                                   "retained": 0 if outlier else 1,
                                   "seg": self.segment_of(at, boot), "t": at,
                                   "err": (send + recv) / 2 - at})

    # -- the marker line --------------------------------------------------------
    def _marker(self) -> None:
        """edges.tsv's rows (``edges``: written time, rising) and the
        ``anchors``: the edges the analysis pairs with an event, which
        are the changes of the set the log shows (per boot, from its
        block/unblock records) that the line shows at the same instant
        (a blocker active before the capture is not in the log's set)."""
        mk = self.sc.marker
        self.edges, self.anchors, self.marker_rows = [], [], []
        if not mk:
            return
        if any(not h["hold"].logged for h in self.holds):
            raise ScenarioError("a marker with lost records: the pairing after a "
                                "'lost' record is not modelled")
        t0, t1 = self.t_first, self.t_last
        rng = random.Random(f"{self.sc.seed}/marker")
        sb = [h for h in self.holds if h["hold"].kind != "wakeup_source"]
        pts = sorted([(h["ps"], 1) for h in sb] + [(h["pe"], -1) for h in sb])
        starts = {t for t, d in pts if d > 0}
        if any(t in starts for t, d in pts if d < 0):
            raise ScenarioError("a hold ends when another starts: the marker "
                                "would glitch")
        n, line = 0, {}
        for t, d in pts:
            before, n = n, n + d
            if (before == 0) != (n == 0) and t0 < t < t1:
                line[t] = n > 0
        for t in sorted(line):
            w = t + rng.randrange(0, mk.jitter_ns + 1)
            if w < t1:
                self.edges.append({"t": t, "written": w, "rising": line[t]})
        written = {e["t"]: e["written"] for e in self.edges}
        boot, active = None, set()
        for e in self.events:
            if e.boot != boot:
                boot, active = e.boot, set()
            before = len(active)
            if e.type == "block":
                active.add(e.arg)
            elif e.type == "unblock":
                active.discard(e.arg)
            else:
                continue
            if (before == 0) != (not active) and e.t in written and \
                    line[e.t] == bool(active):
                self.anchors.append({"t": e.t, "written": written[e.t],
                                     "rising": bool(active), "target": e.target_t,
                                     "seg": self.segment_of(e.t, e.boot)})
        if mk.online_error_ns is not None:
            self.marker_rows = [(a["written"] + mk.online_error_ns, a["target"])
                                for a in self.anchors]

    # -- stats snapshots ----------------------------------------------------------
    def _stats(self) -> None:
        sc = self.sc
        self.snapshots = []
        if not sc.stats_every_s:
            return
        dead = self._unresponsive()
        times = set(e.t for e in self.all_events)
        ev_sorted = sorted(times)
        t = self.t_first + 150_000_000
        step = round(sc.stats_every_s * NS)
        while t < self.t_last - 50_000_000:
            x = t
            t += step
            if any(a - 50_000_000 <= x <= b + 50_000_000 for a, b in dead):
                continue
            # keep 20 ms away from any event so the window is unambiguous
            i = bisect.bisect_left(ev_sorted, x - 20_000_000)
            while i < len(ev_sorted) and ev_sorted[i] <= x + 20_000_000:
                x = ev_sorted[i] + 20_000_001
                i = bisect.bisect_left(ev_sorted, x - 20_000_000)
            if x >= self.t_last - 50_000_000:
                break
            if any(a - 50_000_000 <= x <= b + 50_000_000 for a, b in dead):
                continue
            self.snapshots.append((x, self._snapshot_rows(x)))

    def _base(self, name: str) -> tuple[int, int, int]:
        """Pre-capture statistics of blocker @name in the first boot."""
        h = int(hashlib.sha256(name.encode()).hexdigest()[:8], 16)
        count = 2 + h % 9
        mx = 50_000_000 + h % 900_000_000
        return count, count * mx // 3 + mx, mx

    def _snapshot_rows(self, ts: int) -> list[tuple]:
        boot = self.boot_at(ts)
        drift = self.sc.clock.drift_ppm / 1e6
        # one row per object (name, obj); wakeup sources have none
        sb = [h for h in self.holds if h["hold"].kind != "wakeup_source"]
        names = {(h["name"], h["hold"].obj) for h in sb if h["boot"] == boot}
        names.update((n, 0) for n in BUILTIN)
        # the first blocker activated after each exit gets a wake_count
        first_after = {}
        starts = sorted((h["ps"], h["name"], h["hold"].obj) for h in sb)
        for s in self.sl:
            if s["boot"] == boot and s["exit"] <= ts:
                for ps, name, obj in starts:
                    if ps >= s["exit"]:
                        if ps <= ts:
                            first_after[name, obj] = first_after.get((name, obj), 0) + 1
                        break
        rows = []
        for name, obj in sorted(names):
            if boot == 0 and name != "main":
                count, total, mx = self._base(name if not obj else f"{name}#{obj}")
            else:
                count, total, mx = 0, 0, 0
            wake = (count // 3 if boot == 0 else 0) + first_after.get((name, obj), 0)
            active_since = 0
            last = self.target_mono(self.boots[boot]["h0"], boot) - 3 * NS if boot == 0 else 0
            for h in sb:
                if h["name"] != name or h["hold"].obj != obj or h["boot"] != boot or \
                        h["ps"] > ts:
                    continue
                count += 1
                end = min(h["pe"], ts)
                dur = end - h["ps"]
                dur += round(dur * drift)
                total += dur
                mx = max(mx, dur)
                if h["pe"] > ts:
                    active_since = dur
                    last = self.target_mono(h["ps"], boot) if h["ps"] >= self.t_first else last
                else:
                    last = self.target_mono(h["pe"], boot)
            rows.append((name, count, wake, active_since, total, total, mx, last))
        rows.append(("deleted_suspend_blockers", 4, 0, 0, 812_000_000, 0, 300_000_000, 0))
        rows.sort(key=lambda r: (r[3] > 0, r[0]))      # inactive first
        return rows

    # -- the level function L -----------------------------------------------------
    def _levels(self) -> None:
        sc = self.sc
        t0, t1 = self.t_first, self.t_last
        reboot_uW = sc.awake_uW if sc.reboot_uW is None else sc.reboot_uW
        for v in [sc.awake_uW, sc.suspended_uW, reboot_uW, sc.noise_uW] + \
                 [s["level"] for s in self.sl] + [h["hold"].extra_uW for h in self.holds] + \
                 [ld.uW for ld in sc.loads] + [ld.end_uW or 0 for ld in sc.loads]:
            if v % sc.lsb_uW:
                raise ScenarioError(f"power {v} uW is not a multiple of lsb_uW")
        self.loads = [(self.ns(ld.start_s), self.ns(ld.end_s), ld.uW,
                       ld.uW if ld.end_uW is None else ld.end_uW) for ld in sc.loads]
        cuts = {t0, t1 + 1}
        if sc.asleep_at_end_s is not None:
            cuts.add(self.ns(sc.asleep_at_end_s))
        for s in self.sl:
            cuts.update((s["p_enter"], s["p_exit"]))
        for i, b in enumerate(self.boots[:-1]):
            cuts.update((b["crash"], self.boots[i + 1]["first_event"]))
        for h in self.holds:
            cuts.update((h["ps"], h["pe"]))
        for a, b, _, _ in self.loads:
            cuts.update((a, b))
        B = sorted(c for c in cuts if t0 <= c <= t1 + 1)
        self.pieces_a, self.pieces = [], []
        for a, b in zip(B, B[1:]):
            m = a
            state, lvl = self.state_at(m)
            va = vb = float(lvl)
            if state == "awake":
                for la, lb, u0, u1 in self.loads:
                    if la <= m < lb:
                        va += u0 + (u1 - u0) * (a - la) / (lb - la)
                        vb += u0 + (u1 - u0) * (b - la) / (lb - la)
            self.pieces_a.append(a)
            self.pieces.append((a, b, va, vb))
        self.ramp_ns = sum(min(lb, t1) - max(la, t0) for la, lb, u0, u1 in self.loads
                           if u0 != u1)

    def state_at(self, m: int) -> tuple[str, int]:
        """(state, level without loads) of the target at true host time @m."""
        sc = self.sc
        for i, b in enumerate(self.boots[:-1]):
            if b["crash"] <= m < self.boots[i + 1]["first_event"]:
                return "down", (sc.awake_uW if sc.reboot_uW is None else sc.reboot_uW)
        if sc.asleep_at_end_s is not None and m >= self.ns(sc.asleep_at_end_s):
            return "suspended", sc.suspended_uW
        for s in self.sl:
            if s["p_enter"] <= m < s["p_exit"]:
                return "suspended", s["level"]
        lvl = sc.awake_uW
        for h in self.holds:
            if h["ps"] <= m < h["pe"]:
                lvl += h["hold"].extra_uW
        return "awake", lvl

    def L(self, t: int) -> float:
        i = bisect.bisect_right(self.pieces_a, t) - 1
        a, b, va, vb = self.pieces[i]
        return va if va == vb else va + (vb - va) * (t - a) / (b - a)

    # -- samples ---------------------------------------------------------------
    def _samples_values(self) -> None:
        sc = self.sc
        a, lsb = sc.noise_uW, sc.lsb_uW
        if self.numpy:
            T = self.T
            idx = np.searchsorted(np.array(self.pieces_a, dtype=np.int64), T,
                                  side="right") - 1
            pa = np.array([p[0] for p in self.pieces], dtype=np.int64)[idx]
            pb = np.array([p[1] for p in self.pieces], dtype=np.int64)[idx]
            va = np.array([p[2] for p in self.pieces])[idx]
            vb = np.array([p[3] for p in self.pieces])[idx]
            flat = va == vb
            lv = np.where(flat, va, va + (vb - va) * (T - pa) / np.where(flat, 1, pb - pa))
            noise = np.where(np.arange(len(T)) % 2 == 0, a, -a)
            P = (np.rint((lv + noise) / lsb) * lsb).astype(np.int64)
            self.P = P
        else:
            self.P = [lsb * round((self.L(t) + (a if i % 2 == 0 else -a)) / lsb)
                      for i, t in enumerate(self.T)]
        if self.numpy:
            self.p_min, self.p_max = int(self.P.min()), int(self.P.max())
            d = np.diff(self.T)
            self.median_dt = float(np.median(d))
        else:
            self.p_min, self.p_max = min(self.P), max(self.P)
            d = [b - a for a, b in zip(self.T, self.T[1:])]
            self.median_dt = float(statistics.median(d))
        # which removed runs are gaps by the rules
        self.gaps_rows = []           # gaps.tsv
        self.reported = []            # gaps in report.json
        for i0, i1, g in self.gap_bounds:
            ta, tb = self.T_at(i0), self.T_at(i1)
            if g.declared:
                self.gaps_rows.append((ta, tb, g.missing))
            big = tb - ta > 10 * self.median_dt
            if not g.declared and 0.7 < (tb - ta) / (10 * self.median_dt) < 1.5:
                raise ScenarioError("an undeclared gap too close to 10x the median interval")
            if g.declared or big:
                self.reported.append({"i0": i0, "i1": i1, "t": ta, "next": tb,
                                      "missing": g.missing, "declared": g.declared})
        # the longest interval that is integrated (bounds a noise cut)
        skip = {r["i0"] for r in self.reported}
        if self.numpy:
            keep = np.ones(len(d), dtype=bool)
            keep[list(skip)] = False
            self.max_dt = int(d[keep].max())
        else:
            self.max_dt = max(x for i, x in enumerate(d) if i not in skip)

    def sample_rows(self, i0: int = 0, i1: int | None = None):
        """Rows (t, current_uA, bus_uV, shunt_nV, power_uW) of samples i0..i1."""
        sc = self.sc
        bus = sc.bus_uV
        for i in range(i0, len(self.T) if i1 is None else i1):
            p = int(self.P[i])
            cur = (p * 1_000_000 + bus // 2) // bus
            yield int(self.T[i]), cur, bus, cur * sc.shunt_uohm // 1000, p

    def sample_arrays(self):
        """numpy arrays (t, current, bus, shunt, power) of every sample."""
        sc = self.sc
        T = np.asarray(self.T, dtype=np.int64)
        P = np.asarray(self.P, dtype=np.int64)
        cur = (P * 1_000_000 + sc.bus_uV // 2) // sc.bus_uV
        return T, cur, np.full(len(T), sc.bus_uV, dtype=np.int64), \
            cur * sc.shunt_uohm // 1000, P

    # -- M, compactly ------------------------------------------------------------
    def _compact_model(self) -> None:
        idx = {0, len(self.T) - 1}
        for a in self.pieces_a[1:]:
            k = self.first_at_or_after(a)
            idx.update(i for i in (k - 1, k) if 0 <= i < len(self.T))
        for i0, i1, _ in self.gap_bounds:
            idx.update((i0, i1))
        ii = sorted(idx)
        ts = [self.T_at(i) for i in ii]
        vs = [self.L(t) for t in ts]
        rep = {r["i0"] for r in self.reported}
        excluded = {j for j, i in enumerate(ii[:-1]) if i in rep}
        self.M = _PL(ts, vs, excluded)

    def true_hidden_uJ(self, ta: int, tb: int) -> float:
        """The energy of L (not M) over [ta, tb]: what a gap really hid."""
        e = 0.0
        for a, b, va, vb in self.pieces:
            x0, x1 = max(a, ta), min(b, tb)
            if x1 > x0:
                f = lambda x: va + (vb - va) * (x - a) / (b - a)  # noqa: E731
                e += (f(x0) + f(x1)) / 2 * (x1 - x0)
        return e / NS

    # -- the truth ------------------------------------------------------------------
    def truth(self, capture_path: Path) -> dict:
        return _Truth(self, capture_path).build()


class _Truth:
    """report.json's figures, from the model by report-format.md's rules."""

    def __init__(self, m: Model, path: Path) -> None:
        self.m, self.sc, self.path = m, m.sc, path

    def clock_err_ns(self) -> int:
        """Bound of the analysis' mapping error for any event: the pings'
        (3/2 of their jitter, drift over the extrapolation), or, in a
        segment with two marker pairs or more, the markers'
        (marker_err_ns())."""
        m, c = self.m, self.sc.clock
        if not c.enabled or not m.events:
            return 0
        by_seg: dict = {}
        for x in m.exchanges:
            if x["retained"]:
                by_seg.setdefault(x["seg"], []).append(x["t"])
        anchors: dict = {}
        for a in m.anchors:
            anchors.setdefault(a["seg"], []).append(a["t"])
        dmax, worst, self.marker_events = 0, 0, 0
        for e in m.events:
            seg = m.segment_of(e.t, e.boot)
            if e.type == "enter":           # logged before its own injection
                seg = m.segment_of(e.t - 1, e.boot)
            xs = by_seg.get(seg)
            placed = self.placed_err_ns(e.t) if not xs else None
            if placed is not None:
                worst = max(worst, placed)
                continue
            if not xs:
                raise ScenarioError(
                    f"no clock exchange in the segment of event {e.type} {e.arg} "
                    f"at {(e.t - m.t_first) / NS:.3f} s: lengthen that awake "
                    "stretch or ping more often")
            i = bisect.bisect_left(xs, e.t)
            near = min(abs(e.t - xs[j]) for j in (i - 1, i) if 0 <= j < len(xs))
            inside = xs[0] <= e.t <= xs[-1]
            d = 0 if inside else near
            bound = 3 * c.jitter_ns / 2 + (abs(c.drift_ppm) + 5) * 1e-6 * d + 1000
            if len(anchors.get(seg, ())) >= 2:
                bound = self.marker_err_ns(e.t, seg, anchors[seg])
                self.marker_events += 1
            else:
                dmax = max(dmax, d)
            worst = max(worst, bound)
        self.dmax = dmax
        return int(worst)

    def placed_uncertain(self) -> bool:
        """A stimulus wake placed by the power (``Sleep.unseen``) whose
        latency the placement knows to 10 % or worse: the uncertainty is
        half the platform's run outside the kernel's exit .. enter
        (``exit_ms`` + the next sleep's ``lag_ms``) plus a sample
        interval (report-format.md)."""
        m, sc = self.m, self.sc
        dt_ms = 1e3 / sc.rate_hz
        for a, b in zip(m.sl, m.sl[1:]):
            s = a["sleep"]
            if not s.unseen or not s.wake:
                continue
            unc = (s.exit_ms + b["sleep"].lag_ms) / 2 + dt_ms
            if abs(unc - 0.1 * s.latency_ms) < 2 * dt_ms:
                raise ScenarioError("an unseen wake's latency is known to about "
                                    "10 %: too close to say")
            if unc > 0.1 * s.latency_ms:
                return True
        return False

    def placed_err_ns(self, t: int) -> float | None:
        """Bound of the mapping error of an event at true host time @t in
        an unseen wake (``Sleep.unseen``), placed by the power: its epoch's
        offset is the middle of [rise - exit, fall - enter], off by half
        the difference of ``lag_ms`` and ``exit_ms`` and by the rise and
        the fall each found within a sample interval (and its jitter) of
        the platform's; None when @t is in no unseen wake."""
        m, sc = self.m, self.sc
        for a, b in zip(m.sl, m.sl[1:]):
            if a["sleep"].unseen and a["exit"] <= t <= b["enter"]:
                skew = abs(b["sleep"].lag_ms - a["sleep"].exit_ms) * 1e6 / 2
                return skew + 2 * NS / sc.rate_hz + 2 * sc.jitter_ns + 1000
        return None

    def marker_err_ns(self, t: int, seg, anchors: list[int]) -> float:
        """Bound of the mapping error at true host time @t in segment @seg
        whose fit the marker pairs at @anchors (true times) set: a line
        through points each late by 0..J is off by at most 2J between
        them, and by 2J x d / span more at a distance d outside them;
        the pings pull by their weight (h 100 us / their half-width,
        squared) times their midpoint error, x3 for leverage; without a
        drift fit (a segment under 2 s of exchanges) the drift itself."""
        m, c, J = self.m, self.sc.clock, self.sc.marker.jitter_ns
        a0, a1 = min(anchors), max(anchors)
        span = max(a1 - a0, 1)
        d = a0 - t if t < a0 else t - a1 if t > a1 else 0
        pings = [x for x in m.exchanges if x["seg"] == seg]
        pull = 3 * sum((100_000 / ((x["recv"] - x["send"] + 1) // 2)) ** 2 * abs(x["err"])
                       for x in pings) / len(anchors)
        ts = [x["t"] for x in pings] + anchors
        bound = 2 * J + 1000 + pull + (2 * J / span + 5e-6) * d
        if max(ts) - min(ts) < 2.2 * NS:
            bound += abs(c.drift_ppm) * 1e-6 * (max(ts) - min(ts) + d)
        return bound

    def build(self) -> dict:
        m, sc = self.m, self.sc
        if sc.empty:
            return self._empty()
        delta = self.clock_err_ns()
        self.delta = delta
        t0, t1 = m.t_first, m.t_last
        a = sc.noise_uW
        # per event-derived cut: clock error x highest power + noise cut
        self.cut_uJ = (delta * m.p_max + a * m.max_dt / 4) / NS
        self.quant_uJ = 0.5 * sc.lsb_uW * m.ramp_ns / NS

        # ---- the analysis' timeline (analysis-visible times) ----
        def an(t):
            return m.an(t)

        # a stretch's end moves to the power's where the platform ran for
        # more than two sample intervals while the log said suspended
        # (report-format.md, "State edges by the power"): its cut is then
        # on the sample grid, off by at most one interval
        sleeps = []
        grid_cuts = set()
        moved_ns = 0
        for s in m.sl:
            ent = t0 if s["pre"] else an(s["enter"])
            ext = an(s["exit"])
            if not s["pre"] and s["p_enter"] - s["enter"] > 2 * m.max_dt:
                moved_ns += s["p_enter"] - ent
                ent = s["p_enter"]
                grid_cuts.add(ent)
            if s["exit"] - s["p_exit"] > 2 * m.max_dt:
                moved_ns += ext - s["p_exit"]
                ext = s["p_exit"]
                grid_cuts.add(ext)
            sleeps.append({"enter": ent, "exit": ext, "resume": an(s["resume"]),
                           "s": s})
        gdelta = max(delta, m.max_dt) if grid_cuts else delta
        self.cut_uJ = (gdelta * m.p_max + a * m.max_dt / 4) / NS
        # asleep_at_end_s: the records of the last suspend never came; the
        # power shows it: suspended from the first sample at the sleep
        # level (report-format.md, "The capture's end"), and what was
        # still active then ends there
        tail = None
        if sc.asleep_at_end_s is not None:
            ts = m.ns(sc.asleep_at_end_s)
            tail = int(m.T[bisect.bisect_left(m.T, ts)])
        self.tail = tail
        t_end = t1 if tail is None else tail
        spans: dict[str, list[list[int]]] = {}
        for h in m.holds:
            if not h["hold"].logged:
                continue
            a_ = t0 if h["pre"] else an(h["ps"])
            if h["hold"].lost_end:
                # report-format.md: inactive at the next snapshot, so ended
                # at the "lost" record
                la = h["end_ev"].lost_at
                if not any(x >= la for x, _ in m.snapshots):
                    raise ScenarioError(f"hold {h['name']}: no stats snapshot "
                                        "after its lost unblock")
                b_ = an(la)
            elif h["open"]:
                if h["crash_end"]:
                    b_ = an(m.boots[h["boot"] + 1]["first_event"])
                else:
                    b_ = t_end
            else:
                b_ = an(h["pe"])
            spans.setdefault(h["name"], []).append([a_, b_, h])
        cuts = {t0, t1} | ({tail} if tail is not None else set())
        ev_cuts = set()
        for s in sleeps:
            for x in (s["enter"], s["exit"]):
                if t0 < x < t1:
                    cuts.add(x)
                    ev_cuts.add(x)
        for name, sp in spans.items():
            for a_, b_, _ in sp:
                for x in (a_, b_):
                    if t0 < x < t1:
                        cuts.add(x)
                        ev_cuts.add(x)
        C = sorted(cuts)

        def suspended(x):
            return any(s["enter"] <= x < s["exit"] for s in sleeps) or \
                (tail is not None and x >= tail)

        def active(x):
            return sorted(n for n, sp in spans.items()
                          if any(a_ <= x < b_ for a_, b_, _ in sp))

        intervals = []
        for x, y in zip(C, C[1:]):
            e, d = m.M.integrate(x, y)
            nc = (x in ev_cuts) + (y in ev_cuts)
            intervals.append({"a": x, "b": y, "E": e, "d": d, "dt": y - x,
                              "susp": suspended(x), "act": active(x), "nc": nc})

        # ---- energy ----
        tot = sum(i["E"] for i in intervals)
        en = {"total_uJ": tot,
              "suspended_uJ": sum(i["E"] for i in intervals if i["susp"]),
              "awake_uJ": sum(i["E"] for i in intervals if not i["susp"]),
              "suspended_ns": sum(i["d"] for i in intervals if i["susp"]),
              "awake_ns": sum(i["d"] for i in intervals if not i["susp"])}
        n_state = sum(1 for x in ev_cuts if any(x in (s["enter"], s["exit"]) for s in sleeps))
        q = self.quant_uJ
        en["tol"] = {"total_uJ": q + 1e-6 * abs(tot) + 1e-3,
                     "suspended_uJ": n_state * self.cut_uJ + q + 1e-6 * abs(tot) + 1e-3,
                     "awake_uJ": n_state * self.cut_uJ + q + 1e-6 * abs(tot) + 1e-3,
                     "suspended_ns": n_state * gdelta + 1,
                     "awake_ns": n_state * gdelta + 1,
                     "transition_ns": 2 * len(sleeps) * gdelta + 1}
        en["transition_ns"] = moved_ns
        en["alt"] = {"suspended_ns": sum(i["dt"] for i in intervals if i["susp"]),
                     "awake_ns": sum(i["dt"] for i in intervals if not i["susp"])}
        base, base_tol = self._baseline(sleeps)
        en["baseline_uW"] = base
        en["tol"]["baseline_uW"] = base_tol

        # ---- attribution ----
        bl: dict[str, dict] = {}
        for name in spans:
            kind = spans[name][0][2]["hold"].kind
            bl[name] = {"name": name,
                        "kind": "builtin" if name in BUILTIN else kind,
                        "energy_uJ": 0.0, "exclusive_energy_uJ": 0.0,
                        "above_baseline_uJ": None if base is None else 0.0,
                        "_w": 0.0, "_wt": 0.0, "_tol": q + 1e-3, "_xtol": q + 1e-3}
        un = {"awake_ns": 0, "energy_uJ": 0.0, "_tol": q + 1e-3, "_ntol": 1,
              "_alt": 0}
        for i in intervals:
            if i["susp"]:
                continue
            k = len(i["act"])
            if not k:
                un["energy_uJ"] += i["E"]
                un["awake_ns"] += i["d"]
                un["_alt"] += i["dt"]
                un["_tol"] += i["nc"] * self.cut_uJ
                un["_ntol"] += i["nc"] * gdelta
                continue
            for n in i["act"]:
                b = bl[n]
                b["energy_uJ"] += i["E"] / k
                b["_w"] += i["d"] / k
                b["_wt"] += i["dt"] / k
                b["_tol"] += i["nc"] * self.cut_uJ
                if k == 1:
                    b["exclusive_energy_uJ"] += i["E"]
                    b["_xtol"] += i["nc"] * self.cut_uJ
                if base is not None:
                    b["above_baseline_uJ"] += (i["E"] - base * i["d"] / NS) / k
        blockers = []
        for name, b in bl.items():
            sp = spans[name]
            # the name is active while any of its objects is (report-format.md)
            u_ = _union([(max(a_, t0), min(b_, t1)) for a_, b_, _ in sp])
            durs = [y - x for x, y in u_]
            held_end = t1 - u_[-1][0]
            b.update({"activations": len(sp), "active_ns": sum(durs),
                      "max_active_ns": max(durs),
                      "active_at_end": u_[-1][1] >= t1})
            b["tol"] = {"energy_uJ": b["_tol"] + 1e-6 * abs(b["energy_uJ"]),
                        "exclusive_energy_uJ": b["_xtol"],
                        "above_baseline_uJ": (b["_tol"] + base_tol * b["_w"] / NS)
                        if base is not None else 0,
                        "active_ns": 2 * len(sp) * delta + 1,
                        "max_active_ns": 2 * delta + 1}
            b["alt"] = {}
            if base is not None:
                b["alt"]["above_baseline_uJ"] = b["energy_uJ"] - base * b["_wt"] / NS
            gap_in = sum(max(0, min(b_, g["next"]) - max(a_, g["t"]))
                         for a_, b_, _ in sp for g in m.reported)
            if gap_in:
                b["alt"]["active_ns"] = b["active_ns"] - gap_in
            b["_held_end"] = held_end
            b["stats_check"] = (None if b["kind"] == "wakeup_source"
                                else self._stats_check(name, sp))
            blockers.append(b)
        blockers.sort(key=lambda b: -b["energy_uJ"])
        unattributed = {"awake_ns": un["awake_ns"], "energy_uJ": un["energy_uJ"],
                        "tol": {"awake_ns": un["_ntol"], "energy_uJ": un["_tol"]},
                        "alt": {"awake_ns": un["_alt"]}}
        s_b = sum(b["energy_uJ"] for b in blockers)
        check = s_b + un["energy_uJ"] + en["suspended_uJ"]

        # ---- gaps ----
        gaps = []
        for g in m.reported:
            dur = g["next"] - g["t"]
            gaps.append({"t_ns": g["t"], "duration_ns": dur, "missing": g["missing"],
                         "declared": g["declared"],
                         "hidden_min_uJ": m.p_min * dur / NS,
                         "hidden_max_uJ": m.p_max * dur / NS,
                         "hidden_true_uJ": m.true_hidden_uJ(g["t"], g["next"])})
            if not g["declared"]:
                gaps[-1]["alt"] = {"missing": round(dur / m.median_dt) - 1}

        # ---- wakeups ----
        wakeups, unknown = [], 0
        stim_by_t = {t: (w, a_) for t, w, a_ in m.stim}
        for j, s in enumerate(sleeps):
            st = s["s"]["sleep"]
            nxt = next((x["enter"] for x in sleeps[j + 1:]), t_end)
            if not st.wake:
                # report-format.md section 3: the kernel wakeup source that
                # became active first between the exit (the log's) and the
                # resume, else unknown; the episode runs from the exit
                ex, rs = an(s["s"]["exit"]), s["resume"]
                src = min(((a_, n) for n, sp in spans.items() for a_, _, h in sp
                           if h["hold"].kind == "wakeup_source" and ex <= a_ <= rs),
                          default=(None, None))[1]
                if src is None:
                    unknown += 1
                e, _ = m.M.integrate(ex, nxt)
                names = [n for n, sp in sorted(spans.items(),
                                               key=lambda kv: min(x[0] for x in kv[1]))
                         if any(a_ < nxt and b_ > ex for a_, b_, _ in sp)]
                wakeups.append({
                    "cause": "unknown" if src is None else "wakeup_source",
                    "wakeup_source": src, "stimulus": None, "t_ns": None,
                    "resume_t_ns": rs, "latency_ns": None, "marker_t_ns": None,
                    "awake_ns": nxt - rs, "energy_uJ": e, "blockers": names,
                    "tol": {"resume_t_ns": delta + 1, "awake_ns": 2 * delta + 1,
                            "energy_uJ": 2 * self.cut_uJ + q + 1e-3}})
                continue
            tp = s["s"]["wake"]
            for b in m.boots[1:]:
                if s["resume"] < b["first_event"] < nxt:
                    raise ScenarioError("a reboot between a wakeup and the next enter")
            e, _ = m.M.integrate(tp, nxt)
            names = []
            for name, sp in sorted(spans.items(), key=lambda kv: min(x[0] for x in kv[1])):
                if any(a_ < nxt and b_ > tp for a_, b_, _ in sp):
                    names.append(name)
            what, arg = stim_by_t[tp]
            w = {"cause": "stimulus", "wakeup_source": None,
                 "stimulus": f"{what} {arg}".strip(), "t_ns": tp,
                 "resume_t_ns": s["resume"],
                 "latency_ns": s["resume"] - tp,
                 "awake_ns": nxt - s["resume"], "energy_uJ": e,
                 "blockers": names,
                 "tol": {"resume_t_ns": delta + 1, "latency_ns": delta + 1,
                         "awake_ns": 2 * delta + 1,
                         "energy_uJ": self.cut_uJ + q + 1e-3}}
            if sc.marker:
                # report-format.md section 3: the first rising edge after
                # the stimulus, up to the resume (+ its uncertainty)
                rise = self._marker_rise(tp, s["resume"])
                w["marker_t_ns"] = rise
                w["latency_from"] = "resume" if rise is None else "marker"
                if rise is not None:
                    w["latency_ns"] = rise - tp
                    w["tol"]["marker_t_ns"] = w["tol"]["latency_ns"] = 1
            wakeups.append(w)
        # the latency statistics: over the stimulus wakeups
        lat = _percentiles([w["latency_ns"] for w in wakeups if w["cause"] == "stimulus"])
        lat_tol = max([w["tol"]["latency_ns"] for w in wakeups if "latency_ns" in w["tol"]],
                      default=1)
        lat["tol"] = {k: lat_tol for k in ("min_ns", "median_ns", "p95_ns", "max_ns")}

        # ---- what each suspend costs (report-format.md section 6) ----
        costs = {"idle_uW": None, "median_break_even_ns": None, "cycles": []}
        if base is not None and un["awake_ns"] > 0:
            idle = un["energy_uJ"] * NS / un["awake_ns"]
            costs["idle_uW"] = idle
            costs["tol"] = {"idle_uW": (un["_tol"] + 1e-3) * NS / un["awake_ns"]}
            sb = [(a_, b_) for n, sp in spans.items() for a_, b_, h in sp
                  if h["hold"].kind != "wakeup_source"]
            bes = []
            for j, sl_ in enumerate(sleeps):
                if sl_["s"]["pre"]:
                    continue
                ent, ext = sl_["enter"], sl_["exit"]
                prev = sleeps[j - 1]["exit"] if j else t0
                nxt = sleeps[j + 1]["enter"] if j + 1 < len(sleeps) else \
                    (t1 if self.tail is None else self.tail)
                rel_ = max((b_ for _, b_ in sb if prev < b_ <= ent), default=None)
                act = min((a_ for a_, _ in sb if ext <= a_ <= nxt), default=None)
                c = {"t_ns": ent, "suspended_ns": ext - ent, "entry_ns": None,
                     "entry_uJ": None, "exit_ns": None, "exit_uJ": None,
                     "break_even_ns": None,
                     "tol": {"t_ns": gdelta + 1, "suspended_ns": 2 * gdelta + 1,
                             "entry_ns": 2 * gdelta + 1, "exit_ns": 2 * gdelta + 1}}
                for key, a_, b_ in (("entry", rel_, ent), ("exit", ext, act)):
                    if a_ is None or b_ is None or b_ <= a_:
                        continue
                    e, _ = m.M.integrate(a_, b_)
                    c[key + "_ns"] = b_ - a_
                    c[key + "_uJ"] = e - base * (b_ - a_) / NS
                    c["tol"][key + "_uJ"] = 2 * self.cut_uJ + q + base_tol * (b_ - a_) / NS + 1e-3
                if c["entry_uJ"] is not None and c["exit_uJ"] is not None and idle > base:
                    be = (c["entry_uJ"] + c["exit_uJ"]) / (idle - base) * NS
                    c["break_even_ns"] = max(0, round(be))
                    c["tol"]["break_even_ns"] = (
                        (c["tol"]["entry_uJ"] + c["tol"]["exit_uJ"]) / (idle - base) * NS +
                        be * (costs["tol"]["idle_uW"] + base_tol) / (idle - base) + 2)
                    bes.append(c["break_even_ns"])
                costs["cycles"].append(c)
            if bes:
                bes.sort()
                n_ = len(bes)
                costs["median_break_even_ns"] = (bes[n_ // 2] if n_ % 2 else
                                                 (bes[n_ // 2 - 1] + bes[n_ // 2]) / 2)
                costs["tol"]["median_break_even_ns"] = max(
                    x["tol"].get("break_even_ns", 0) for x in costs["cycles"])
        self.costs = costs

        # ---- capture ----
        skipped: dict[str, int] = {}
        known = {"block", "unblock", "suspend", "enter", "exit", "resume", "abort",
                 "policy", "lost", "ws_activate", "ws_relax"}
        for e in m.events:
            if e.type == "phase" and re.fullmatch(r"\S+ -?\d+ (begin|end)", e.arg):
                continue            # a phase record the analysis reads
            if e.type == "dev_pm" and re.fullmatch(r"[1-9]\d* -?\d+ \S+ .+", e.arg):
                continue            # and a dev_pm record
            if e.type not in known:
                skipped[e.type] = skipped.get(e.type, 0) + 1

        # ---- phases (report-format.md section 4): per cycle, start on host
        # time, duration on the target's clock ----
        phases = []
        for s in m.sl:
            pt = s.get("phase_t")
            if not pt:
                continue
            ph = []
            for name, a_, b_ in PHASES:
                ta, tb = pt[a_], pt[b_]
                ph.append({"name": name, "t_ns": an(ta),
                           "duration_ns": m.target_time(tb, s["boot"]) -
                           m.target_time(ta, s["boot"]),
                           "tol": {"t_ns": delta + 1, "duration_ns": 2}})
                if sc.dev_pm and name in DEV_PM_SLOWEST:
                    ph[-1]["slowest_devices"] = [
                        {"device": d, "verb": v, "duration_ns": n_, "error": e_}
                        for d, v, n_, e_ in DEV_PM_SLOWEST[name]]
            phases.append({"cycle": len(phases) + 1, "phases": ph})
        segs = {x["seg"] for x in m.exchanges}
        capture = {
            "path": str(self.path), "status": "open" if sc.killed else "complete",
            "format_version": sc.format_version,
            "start_ns": t0, "end_ns": t1, "duration_ns": t1 - t0,
            "samples": len(m.T), "gaps": len(gaps),
            "missing_samples": sum(g["missing"] for g in gaps),
            "events": len(m.events),
            "unmapped_events": 0 if sc.clock.enabled else len(m.events),
            "object_ids": (("all" if sc.object_ids else "none")
                           if any(e.type in ("block", "unblock") for e in m.events)
                           else None),
            "skipped_events": skipped,
            "provenance": self.provenance(),
            "targets": self.targets(),
            "clock": {"segments": len(segs), "max_uncert_ns_bound": delta,
                      "marker_edges": len(m.edges), "marker_pairs": len(m.anchors),
                      "marker_pairs_from": "edges" if m.edges else "none"},
        }

        findings = self._findings(blockers, gaps, unknown, skipped, sleeps)
        for b in blockers:
            for k in ("_w", "_wt", "_tol", "_xtol", "_held_end"):
                b.pop(k)
        cut_note = (f"each cut of the timeline at an event moves at most "
                    f"{self.cut_uJ:.6g} uJ: clock error {delta} ns x highest power "
                    f"{m.p_max} uW" + (f" + noise {a} uW x longest interval "
                                        f"{m.max_dt} ns / 4" if a else ""))
        notes = [
            "energies are exact up to the float rounding of the model's integral "
            "(alternating noise cancels in every whole trapezoid)",
            cut_note,
            f"event times: the analysis' clock fit may be off by up to {delta} ns "
            f"(exchange jitter {sc.clock.jitter_ns} ns, drift {sc.clock.drift_ppm} ppm, "
            f"extrapolation up to {getattr(self, 'dmax', 0)} ns)" if sc.clock.enabled else
            "no clock exchanges: the analysis keeps the events' online host times, "
            "and so does the truth",
            "durations in energy.*_ns, unattributed.awake_ns and above_baseline's d are "
            "integrated time (gaps excluded); 'alt' gives them with gap time included; "
            "active_ns, max_active_ns and wakeup awake_ns are timeline time (gaps "
            "included); 'alt' gives active_ns without gaps",
            "undeclared gaps: 'missing' is the removed sample count; 'alt' gives "
            "round(duration / median interval) - 1",
            "latency.median_ns is the exact mean of the two middle values for even n "
            "(may be x.5)",
            "blockers lists every name of a block/unblock record plus those active at "
            "the start; stats-only names (main, deleted_suspend_blockers) are not "
            "expected (compare() ignores extra entries with 0 activations)",
            "a blocker active in the first stats snapshot is active from the start only "
            "if no block record of it precedes the snapshot (a capture that starts "
            "asleep gets its first snapshot after the wake)",
        ]
        if sc.marker:
            notes.append(
                f"marker: {len(m.edges)} edges in edges.tsv, {len(m.anchors)} of them "
                f"pairable with an event; {getattr(self, 'marker_events', 0)} events in segments "
                "the marker pairs set, bounded by the markers' jitter "
                f"({sc.marker.jitter_ns} ns); latencies to a marker edge are exact" +
                (f"; clock.tsv's {len(m.marker_rows)} online marker rows are "
                 f"{sc.marker.online_error_ns} ns off and must not be used"
                 if m.marker_rows else ""))
        if m.ramp_ns:
            notes.append(f"ramps ({m.ramp_ns} ns of them) are sampled to whole "
                         f"{sc.lsb_uW} uW: energies may differ by {q:.6g} uJ")
        out = {
            "schema": TRUTH_SCHEMA, "version": TRUTH_VERSION,
            "scenario": sc.name, "seed": sc.seed,
            "generator": "tests/synth/synthcap.py",
            "capture": capture, "energy": en, "blockers": blockers,
            "unattributed": unattributed, "gaps": gaps, "wakeups": wakeups,
            "unknown_wake_count": unknown, "latency": lat, "phases": phases,
            "suspend_costs": costs,
            "findings": findings,
            "checks": {"blockers_plus_unattributed_plus_suspended_uJ": check},
            "tolerance": {"rel": 0.01, "clock_err_ns": delta, "notes": notes},
            "expect_error": self.expect_error(),
            "leak_s": sc.leak_s,
            "model": self.model_section(sleeps, spans),
        }
        return out

    def _marker_rise(self, tp: int, resume: int) -> int | None:
        """The written time of the marker's first rising edge in [@tp,
        @resume]. An edge just after the resume (within the analysis'
        uncertainty of it) would be ambiguous: refused."""
        for e in self.m.edges:
            if e["rising"] and tp <= e["written"] <= resume:
                return e["written"]
            if e["rising"] and resume < e["written"] <= resume + 20_000_000:
                raise ScenarioError(f"a marker rising edge {e['written'] - resume} ns "
                                    "after a resume: too close to say")
        return None

    def _baseline(self, sleeps) -> tuple[float | None, float]:
        """report-format.md: the median of the finest trace buckets' mean
        power inside the trimmed suspended stretches. Each stretch is one
        level, so that median is the duration-weighted median of the
        levels; where the half-way point falls within the buckets a
        stretch's ends can add or remove, either neighbouring level is
        right (the tolerance then spans them)."""
        m, sc = self.m, self.sc
        trim = 2 * NS // sc.rate_hz
        parts = []                      # (level, duration)
        for s in sleeps:
            a = max(s["enter"], m.t_first)
            b = min(s["exit"], m.t_last)
            a, b = a + trim, b - trim
            if b <= a:
                continue
            _, d = m.M.integrate(a, b)
            parts.append((s["s"]["level"], d))
        if not parts:
            return None, 0.0
        parts.sort()
        total = sum(d for _, d in parts)
        # what a stretch's ends can move between the halves: the bucket
        # size is unknown here, so allow each end a second's worth
        slack = 2 * NS * len(parts) + 2 * len(parts) * (m.max_dt + self.delta + trim)
        acc, base, near = 0, None, []
        for lvl, d in parts:
            if base is None and acc + d >= total / 2:
                base = lvl
            if abs(acc + d - total / 2) <= slack or abs(acc - total / 2) <= slack:
                near.append(lvl)
            acc += d
        spread = (max(near) - min(near)) if near else 0
        tol = sc.noise_uW + spread + 1e-6 * base + 1e-3
        return float(base), tol

    def _stats_check(self, name: str, sp) -> dict | None:
        m = self.m
        snaps = m.snapshots
        if len(snaps) < 2 or len(m.boots) > 1:
            return None                 # a reboot resets the module's statistics
        (ts1, r1), (ts2, r2) = snaps[0], snaps[-1]
        # a name's rows (one per object) summed, as the analysis does
        rows1 = [r for r in r1 if r[0] == name]
        rows2 = [r for r in r2 if r[0] == name]
        if not rows1 or not rows2 or len(rows1) != len(rows2):
            return None
        row1 = tuple(sum(r[i] for r in rows1) if i in (1, 4) else rows1[0][i]
                     for i in range(8))
        row2 = tuple(sum(r[i] for r in rows2) if i in (1, 4) else
                     max(r[6] for r in rows2) if i == 6 else rows2[0][i]
                     for i in range(8))
        ev_count = sum(1 for a_, _, h in sp if ts1 < a_ <= ts2 and not h["pre"])
        ev_active = sum(max(0, min(b_, ts2) - max(a_, ts1)) for a_, b_, _ in sp)
        count_delta = row2[1] - row1[1]
        total_delta = row2[4] - row1[4]
        diff = abs(total_delta - ev_active)
        allowed_lo = 2_000_000 * ev_count + self.sc.clock.jitter_ns // 2
        allowed_hi = 2_000_000 * ev_count + self.delta
        if count_delta != ev_count:
            agree = False
        elif diff <= allowed_lo / 2:
            agree = True
        elif diff > 2 * allowed_hi:
            agree = False
        else:
            agree = None                # too close to the rule's threshold to say
        return {"snapshots": len(snaps), "count_delta": count_delta,
                "events_count": ev_count, "total_time_delta_ns": total_delta,
                "events_active_ns": ev_active, "max_time_ns": row2[6],
                "agree": agree,
                "tol": {"events_active_ns": 2 * self.delta + 1}}

    def _findings(self, blockers, gaps, unknown, skipped, sleeps) -> list[dict]:
        m, sc = self.m, self.sc
        f = []
        leak_ns = round(sc.leak_s * NS)
        for b in blockers:
            if b["active_at_end"]:
                held = b["_held_end"]
                if abs(held - leak_ns) < 0.1 * leak_ns:
                    raise ScenarioError(f"blocker {b['name']} held {held} ns at the end: "
                                        "too close to leak_s")
                if held >= leak_ns:
                    f.append({"kind": "leak", "blocker": b["name"], "t_ns": m.t_last})
        for a in m.ab:
            f.append({"kind": "aborted_suspend", "blocker": a["abort"].by,
                      "t_ns": m.an(a["end"])})
        uw = next((b for b in blockers if b["name"] == "unknown_wakeups"), None)
        if unknown or (uw and uw["activations"]):
            # it names the module's unknown_wakeups blocker when that one
            # was activated (report-format.md)
            f.append({"kind": "unknown_wakeup",
                      "blocker": "unknown_wakeups" if uw and uw["activations"] else None,
                      "t_ns": next((s["resume"] for s in sleeps if not s["s"]["sleep"].wake),
                                   None)})
        total = sum(b["energy_uJ"] for b in blockers)
        for b in blockers:
            if total > 0:
                share = b["energy_uJ"] / total
                if 0.45 < share < 0.55:
                    raise ScenarioError(f"blocker {b['name']} has {share:.1%} of the "
                                        "attributed energy: too close to 50 %")
                if share >= 0.5:
                    f.append({"kind": "dominant", "blocker": b["name"], "t_ns": None})
        for c in self.costs["cycles"]:
            be = c["break_even_ns"]
            if be is None:
                continue
            if abs(c["suspended_ns"] - be) <= c["tol"]["break_even_ns"] + 0.01 * be:
                raise ScenarioError(f"a suspend at {c['t_ns']} lasts about its "
                                    "break-even: too close to say")
            if c["suspended_ns"] < be:
                f.append({"kind": "short_suspend", "blocker": None, "t_ns": c["t_ns"]})
        if self.tail is not None:
            f.append({"kind": "inferred_suspend", "blocker": None, "t_ns": self.tail})
        if gaps:
            f.append({"kind": "gap", "blocker": None, "t_ns": gaps[0]["t_ns"]})
        lost = [e for e in m.events if e.type == "lost"]
        if lost:
            f.append({"kind": "lost_events", "blocker": None, "t_ns": m.an(lost[0].t)})
        if not sc.clock.enabled and m.events:
            f.append({"kind": "clock_uncertainty", "blocker": None, "t_ns": None})
        elif self.placed_uncertain():
            f.append({"kind": "clock_uncertainty", "blocker": None, "t_ns": None})
        for b in blockers:
            c = b["stats_check"]
            if c and c["agree"] is False:
                f.append({"kind": "stats_mismatch", "blocker": b["name"], "t_ns": None})
        if skipped:
            f.append({"kind": "skipped_events", "blocker": None, "t_ns": None})
        f.sort(key=lambda x: FINDING_RANK.index(x["kind"]))
        return f

    def provenance(self) -> dict:
        sc = self.sc
        h = hashlib.sha256(json.dumps(sc.to_json(), sort_keys=True,
                                      default=str).encode()).hexdigest()
        return {"rig_name": "synthetic", "rig_config": "tests/synth/synthcap.py",
                "rig_sha256": hashlib.sha256(b"synthcap").hexdigest(),
                "host_version": "synthcap 1", "git_sha": "",
                "scenario": f"synth:{sc.name}", "scenario_sha256": h,
                "power_uri": "synth:ina226", "target_uri": "synth:target",
                **sc.provenance}

    def targets(self) -> list[dict]:
        return [{"boot_id": self.m.boot_ids[i], "kernel": "6.1.0-synth-amd64",
                 "module": "0.2", "agent": "0.2"} for i in range(len(self.m.boots))]

    def expect_error(self) -> dict | None:
        c = self.sc.corrupt
        if not c:
            return None
        if c.file == "samples.bin":
            return {"file": "samples.bin", "line": None, "column": None,
                    "name": None, "message_contains": "samples.bin"}
        name = c.file.split(".")[0]
        col = TSV_COLUMNS[name].index(c.column) + 1
        line = c.row + 1
        return {"file": c.file, "line": line, "column": col, "name": c.column,
                "message_contains": f"{c.file}:{line}: column {col} ({c.column})"}

    def model_section(self, sleeps, spans) -> dict:
        m = self.m
        return {
            "suspended": [[s["s"]["p_enter"] if not s["s"]["pre"] else m.t_first,
                           s["s"]["p_exit"]] for s in sleeps],
            "holds": [{"name": h["name"], "start_ns": h["ps"], "end_ns": h["pe"],
                       "extra_uW": h["hold"].extra_uW, "logged": h["hold"].logged}
                      for h in m.holds],
            "boots": [{"boot_id": m.boot_ids[i], "first_event_ns": b["first_event"],
                       "crash_ns": b["crash"]} for i, b in enumerate(m.boots)],
            "median_interval_ns": m.median_dt, "max_interval_ns": m.max_dt,
            "power_min_uW": m.p_min, "power_max_uW": m.p_max,
            "model_points": len(m.M.t), "clock_exchanges": len(m.exchanges),
            "marker_edges": [[e["t"], e["written"], e["rising"]] for e in m.edges],
            "stats_snapshots": len(m.snapshots),
        }

    def _empty(self) -> dict:
        sc = self.sc
        z = {"rel": 0.01, "clock_err_ns": 0,
             "notes": ["an empty capture: every figure is 0 or null"]}
        return {
            "schema": TRUTH_SCHEMA, "version": TRUTH_VERSION, "scenario": sc.name,
            "seed": sc.seed, "generator": "tests/synth/synthcap.py",
            "capture": {"path": str(self.path), "status": "complete",
                        "format_version": sc.format_version, "duration_ns": 0,
                        "samples": 0, "gaps": 0, "missing_samples": 0, "events": 0,
                        "unmapped_events": 0, "skipped_events": {},
                        "provenance": self.provenance(), "targets": self.targets()},
            "energy": {"total_uJ": 0.0, "suspended_uJ": 0.0, "awake_uJ": 0.0,
                       "suspended_ns": 0, "awake_ns": 0, "baseline_uW": None,
                       "tol": {}},
            "blockers": [], "unattributed": {"awake_ns": 0, "energy_uJ": 0.0},
            "gaps": [], "wakeups": [], "unknown_wake_count": 0,
            "latency": _percentiles([]), "phases": [], "findings": [],
            "tolerance": z, "expect_error": None, "leak_s": sc.leak_s, "model": {},
        }


# ---- writing the capture ----------------------------------------------------

def _meta_ini(m: Model, counts: dict[str, int]) -> str:
    sc = m.sc
    created = sc.start_ns - 500_000_000
    prov = _Truth(m, Path(".")).provenance()
    lines = ["[capture]", "format = sbrig-capture", f"version = {sc.format_version}",
             "created = 2024-05-01T10:00:00.000000000Z",
             "created_realtime_ns = 1714557600000000000",
             f"created_monotonic_ns = {created}", "", "[provenance]"]
    lines += [f"{k} = {escape(v)}" for k, v in prov.items()]
    for i, b in enumerate(m.boots):
        seen = created + 1_000_000 if i == 0 else b["first_event"] + 200_000_000
        lines += ["", "[target]", f"boot_id = {m.boot_ids[i]}",
                  "kernel = 6.1.0-synth-amd64", "module = 0.2", "agent = 0.2",
                  f"seen_monotonic_ns = {seen}"]
    if not sc.killed:
        end = (m.t_last if len(m.T) else sc.start_ns) + 300_000_000
        lines += ["", "[end]", "status = complete", f"closed_monotonic_ns = {end}"]
        lines += [f"{k} = {v}" for k, v in counts.items()]
    return "\n".join(lines) + "\n"


class _TsvWriter:
    def __init__(self, path: Path, name: str, corrupt: Corrupt | None,
                 extra: tuple = ()) -> None:
        self.f = open(path, "w", encoding="utf-8", newline="\n")
        self.name = name
        self.cols = TSV_COLUMNS[name] + extra     # columns appended since
        self.f.write("\t".join(self.cols) + "\n")
        self.rows = 0
        self.corrupt = corrupt if corrupt and corrupt.file == f"{name}.tsv" else None

    def row(self, values) -> None:
        self.rows += 1
        vals = [escape(v) if c in TEXT_COLUMNS else str(v)
                for c, v in zip(self.cols, values)]
        if self.corrupt and self.rows == self.corrupt.row:
            vals[self.cols.index(self.corrupt.column)] = self.corrupt.value
        self.f.write("\t".join(vals) + "\n")

    def close(self, cut: str | None = None) -> int:
        if cut:
            self.f.write(cut)               # a row the writer never finished
        self.f.close()
        return self.rows


def _write_samples_tsv(m: Model, path: Path, corrupt: Corrupt | None) -> int:
    corrupt = corrupt if corrupt and corrupt.file == "samples.tsv" else None
    n = len(m.T)
    with open(path, "w", encoding="ascii", newline="\n") as f:
        f.write("\t".join(TSV_COLUMNS["samples"]) + "\n")
        chunk = 200_000
        arrays = m.sample_arrays() if m.numpy else None
        for i0 in range(0, n, chunk):
            i1 = min(n, i0 + chunk)
            if arrays is not None:
                flat = np.column_stack([a[i0:i1] for a in arrays]).ravel().tolist()
                text = ("%d\t%d\t%d\t%d\t%d\n" * (i1 - i0)) % tuple(flat)
            else:
                text = "".join("%d\t%d\t%d\t%d\t%d\n" % r for r in m.sample_rows(i0, i1))
            if corrupt and i0 < corrupt.row <= i1:
                lines = text.split("\n")
                j = corrupt.row - 1 - i0
                cols = lines[j].split("\t")
                cols[TSV_COLUMNS["samples"].index(corrupt.column)] = corrupt.value
                lines[j] = "\t".join(cols)
                text = "\n".join(lines)
            f.write(text)
        if m.sc.killed:
            f.write("%d\t12" % (m.t_last + 285_000))
    return n


def _write_samples_bin(m: Model, path: Path, corrupt: Corrupt | None) -> int:
    n = len(m.T)
    magic = SAMPLES_BIN_MAGIC
    if corrupt and corrupt.file == "samples.bin":
        magic = b"SBRIGXXX"
    with open(path, "wb") as f:
        f.write(SAMPLES_BIN_HEADER.pack(magic, 1, SAMPLES_BIN_RECORD.size, 0))
        if m.numpy:
            T, cur, bus, shunt, P = m.sample_arrays()
            rec = np.zeros(n, dtype=np.dtype([("t", "<i8"), ("p", "<i8"), ("c", "<i4"),
                                               ("b", "<i4"), ("s", "<i4"), ("r", "<u4")]))
            rec["t"], rec["p"], rec["c"], rec["b"], rec["s"] = T, P, cur, bus, shunt
            chunk = 1_000_000
            for i0 in range(0, n, chunk):
                f.write(rec[i0:i0 + chunk].tobytes())
        else:
            pack = SAMPLES_BIN_RECORD.pack
            buf = bytearray()
            for t, c, b, s, p in m.sample_rows():
                buf += pack(t, p, c, b, s, 0)
                if len(buf) > 1 << 20:
                    f.write(buf)
                    buf.clear()
            f.write(buf)
        if m.sc.killed:
            f.write(SAMPLES_BIN_RECORD.pack(m.t_last + 285_000, 1, 1, 1, 1, 0)[:20])
    return n


def write_capture(m: Model, cap: Path) -> None:
    """Write the capture directory @cap of model @m."""
    sc = m.sc
    cap.mkdir(parents=True, exist_ok=True)
    for old in cap.iterdir():
        if old.is_file():
            old.unlink()
    counts = {}
    c = sc.corrupt
    if sc.format_version == 2:
        counts["samples"] = _write_samples_bin(m, cap / "samples.bin", c)
    else:
        counts["samples"] = _write_samples_tsv(m, cap / "samples.tsv", c) if len(m.T) else \
            _TsvWriter(cap / "samples.tsv", "samples", c).close()
    w = _TsvWriter(cap / "gaps.tsv", "gaps", c)
    for row in m.gaps_rows:
        w.row(row)
    counts["gaps"] = w.close()
    w = _TsvWriter(cap / "edges.tsv", "edges", c)
    for i, e in enumerate(m.edges):
        w.row((e["written"], "marker", "rising" if e["rising"] else "falling", i))
    counts["edges"] = w.close()
    w = _TsvWriter(cap / "stimuli.tsv", "stimuli", c)
    for t, what, arg in m.stim:
        w.row((t, what, arg))
    counts["stimuli"] = w.close()
    w = _TsvWriter(cap / "events.tsv", "events", c,
                   extra=("obj",) if sc.object_ids else ())
    unc = sc.clock.online_uncert_ns
    guessed = {s["enter"]: s["sleep"].enter_online_error_ns for s in getattr(m, "sl", [])
               if not s["pre"] and s["sleep"].enter_online_error_ns}
    # the module numbers objects per boot from 1 (main and unknown_wakeups
    # first), in the order they are initialised
    ids: dict[tuple, int] = {}
    unseen = m._unseen() if hasattr(m, "sl") else []
    for e in m.events:
        err = guessed.get(e.t, 0) if e.type == "enter" else 0
        row = (e.host_t + err, max(unc, abs(err)), e.target_t, m.boot_ids[e.boot],
               e.seq, e.type, e.arg, 0)
        if any(a <= e.host_t <= b for a, b in unseen):
            row = (0, -1) + row[2:]
        if sc.object_ids:
            key = (e.boot, e.arg, e.obj)
            if e.type in ("block", "unblock") and key not in ids:
                ids[key] = 3 + sum(1 for k in ids if k[0] == e.boot)
            row += (ids[key] if e.type in ("block", "unblock") else 0,)
        w.row(row)
    cut = None
    if sc.killed and m.events:
        cut = f"{m.events[-1].host_t + 1000}\t{unc}\t12"
    counts["events"] = w.close(cut)
    w = _TsvWriter(cap / "stats.tsv", "stats", c)
    for ts, rows in m.snapshots:
        for r in rows:
            w.row((ts,) + r)
    counts["stats"] = w.close()
    w = _TsvWriter(cap / "clock.tsv", "clock", c)
    rows = [(x["send"], x["recv"], x["target"], x["retained"]) for x in m.exchanges]
    rows += [(h, h, t, 1) for h, t in m.marker_rows]      # the daemon's pairs
    for row in sorted(rows):
        w.row(row)
    counts["clock"] = w.close()
    (cap / "meta.ini").write_text(_meta_ini(m, counts))


def build(sc: Scenario, out_dir, use_numpy: bool | None = None) -> dict:
    """Write OUT_DIR/capture/ and OUT_DIR/truth.json for scenario @sc and
    return the truth (a dict, the JSON's content)."""
    out = Path(out_dir).resolve()
    cap = out / "capture"
    m = Model(sc, use_numpy)
    truth = m.truth(cap)
    write_capture(m, cap)
    (out / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    return truth


def load_truth(out_dir) -> dict:
    """truth.json of a capture built by build() (OUT_DIR or the file)."""
    p = Path(out_dir)
    return json.loads((p / "truth.json" if p.is_dir() else p).read_text())


# ---- comparing a report with the truth ---------------------------------------

def _close(r, t, tol: float, rel: float) -> bool:
    if t is None or r is None:
        return t is None and r is None
    return abs(r - t) <= max(tol, rel * abs(t))


ALL_SECTIONS = ("capture", "energy", "blockers", "unattributed", "gaps", "wakeups",
                "latency", "phases", "suspend_costs", "findings")


def compare(report: dict, truth: dict, rel: float | None = None,
            sections=ALL_SECTIONS) -> list[str]:
    """Mismatches between a report.json (dict) and a truth (dict): [] if
    the report agrees. A figure agrees within max(rel x |truth|, its tol)
    of the truth or of its alt; ``rel`` defaults to truth's (0.01); pass
    0 to check against the derived bounds only. ``sections`` limits the
    check to some of ALL_SECTIONS (a partial analysis, a reference)."""
    rel = truth["tolerance"]["rel"] if rel is None else rel
    bad: list[str] = []
    if truth.get("expect_error"):
        return ["a corrupt capture: compare the error, not a report"]
    for name in ALL_SECTIONS:
        if name not in sections:
            continue
        _SECTION_CHECKS[name](report, truth, rel, bad)
    return bad


def _checkers(rel: float, bad: list[str]):
    """fig(): a figure within its tolerance (of the truth: its "alt", the
    other reading of an ambiguous figure, is named in the message only);
    exact(): equal values. A key of the truth the report lacks is a
    mismatch for both."""

    def fig(where, r: dict, t: dict, keys):
        tol, alt = t.get("tol", {}), t.get("alt", {})
        for k in keys:
            if k not in t:
                continue
            if k not in r:
                bad.append(f"{where}.{k}: missing (truth {t[k]})")
                continue
            tv, rv, tl = t[k], r[k], tol.get(k, 0)
            if _close(rv, tv, tl, rel):
                continue
            bad.append(f"{where}.{k}: {rv} != truth {tv}" +
                       (f" (alt {alt[k]})" if k in alt else "") +
                       f" tol {max(tl, rel * abs(tv or 0)):.6g}")

    def exact(where, r: dict, t: dict, keys):
        for k in keys:
            if k not in t:
                continue
            if k not in r:
                bad.append(f"{where}.{k}: missing (truth {t[k]!r})")
            elif r[k] != t[k]:
                bad.append(f"{where}.{k}: {r[k]!r} != truth {t[k]!r}")

    return fig, exact


def _check_capture(report, truth, rel, bad):
    fig, exact = _checkers(rel, bad)
    rc, tc = report.get("capture", {}), truth["capture"]
    exact("capture", rc, tc, ("status", "format_version", "samples", "gaps", "events",
                              "unmapped_events", "object_ids", "skipped_events"))
    exact("capture", rc, tc, ("start_ns", "end_ns", "duration_ns"))
    # an undeclared gap's missing count is estimated from its duration:
    # one sample either way (as _check_gaps), a declared one's is exact
    undeclared = sum(not g["declared"] for g in truth["gaps"])
    fig("capture", rc, dict(tc, tol={"missing_samples": undeclared}), ("missing_samples",))
    exact("capture.provenance", rc.get("provenance", {}), tc["provenance"],
          tuple(tc["provenance"]))
    ck = tc.get("clock", {})
    exact("capture.clock", rc.get("clock", {}), ck,
          tuple(k for k in ("marker_edges", "marker_pairs", "marker_pairs_from") if k in ck))
    rt = rc.get("targets", [])
    if [x.get("boot_id") for x in rt] != [x["boot_id"] for x in tc["targets"]]:
        bad.append(f"capture.targets: {rt} != truth {tc['targets']}")


def _check_energy(report, truth, rel, bad):
    fig, _ = _checkers(rel, bad)
    fig("energy", report.get("energy", {}), truth["energy"],
        ("total_uJ", "suspended_uJ", "awake_uJ", "suspended_ns", "awake_ns", "baseline_uW",
         "transition_ns"))


def _check_blockers(report, truth, rel, bad):
    fig, exact = _checkers(rel, bad)
    rb = {b["name"]: b for b in report.get("blockers", [])}
    for tb in truth["blockers"]:
        b = rb.pop(tb["name"], None)
        if b is None:
            bad.append(f"blockers: {tb['name']} missing")
            continue
        w = f"blockers[{tb['name']}]"
        exact(w, b, tb, ("kind", "activations", "active_at_end"))
        fig(w, b, tb, ("active_ns", "max_active_ns", "energy_uJ", "exclusive_energy_uJ",
                       "above_baseline_uJ"))
        sc_t, sc_r = tb.get("stats_check"), b.get("stats_check")
        if sc_t:
            if not sc_r:
                bad.append(f"{w}.stats_check: missing")
            else:
                exact(w + ".stats_check", sc_r, sc_t,
                      ("count_delta", "events_count", "total_time_delta_ns", "max_time_ns"))
                if sc_t["agree"] is not None:
                    exact(w + ".stats_check", sc_r, sc_t, ("agree",))
                fig(w + ".stats_check", sc_r, sc_t, ("events_active_ns",))
    for name, b in rb.items():
        bad.append(f"blockers: unexpected {name} ({b.get('activations')} activations)")


def _check_unattributed(report, truth, rel, bad):
    fig, _ = _checkers(rel, bad)
    fig("unattributed", report.get("unattributed", {}), truth["unattributed"],
        ("awake_ns", "energy_uJ"))


def _check_gaps(report, truth, rel, bad):
    fig, exact = _checkers(rel, bad)
    rg = report.get("gaps", [])
    if len(rg) != len(truth["gaps"]):
        bad.append(f"gaps: {len(rg)} != truth {len(truth['gaps'])}")
        return
    for i, (r, t) in enumerate(zip(rg, truth["gaps"])):
        exact(f"gaps[{i}]", r, t, ("t_ns", "duration_ns", "declared"))
        if t["declared"]:
            exact(f"gaps[{i}]", r, t, ("missing",))
        else:
            t1 = dict(t, tol={"missing": 1})
            fig(f"gaps[{i}]", r, t1, ("missing",))
        t2 = dict(t, tol={"hidden_min_uJ": 1e-3, "hidden_max_uJ": 1e-3})
        fig(f"gaps[{i}]", r, t2, ("hidden_min_uJ", "hidden_max_uJ"))


def _check_wakeups(report, truth, rel, bad):
    fig, exact = _checkers(rel, bad)
    rw = report.get("wakeups", [])
    if len(rw) != len(truth["wakeups"]):
        bad.append(f"wakeups: {len(rw)} != truth {len(truth['wakeups'])}")
    else:
        at, _ = _checkers(0, bad)         # instants: their bound, not 1 % of them
        for i, (r, t) in enumerate(zip(rw, truth["wakeups"])):
            exact(f"wakeups[{i}]", r, t, ("cause", "wakeup_source", "stimulus", "t_ns",
                                          "latency_from"))
            at(f"wakeups[{i}]", r, t, ("resume_t_ns", "marker_t_ns"))
            fig(f"wakeups[{i}]", r, t, ("latency_ns", "awake_ns", "energy_uJ"))
            if sorted(r.get("blockers", [])) != sorted(t["blockers"]):
                bad.append(f"wakeups[{i}].blockers: {r.get('blockers')} != "
                           f"truth {t['blockers']}")
    exact("", report, truth, ("unknown_wake_count",))


def _check_latency(report, truth, rel, bad):
    fig, exact = _checkers(rel, bad)
    rl, tl = report.get("latency", {}), truth["latency"]
    exact("latency", rl, tl, ("n",))
    fig("latency", rl, tl, ("min_ns", "median_ns", "p95_ns", "max_ns"))


# the members of a finding (report-format.md)
FINDING_MEMBERS = ("kind", "blocker", "t_ns", "detail")
# findings whose t_ns the truth knows as the analysis defines it (within
# the clock's error: a target's time mapped to the host's); an
# unknown_wakeup's is the capture's start in the analysis
# (host/analysis/findings.c), the first unexplained resume in the truth
FINDINGS_AT = ("leak", "aborted_suspend", "gap")


def _finding_keys(findings) -> list:
    """(kind, blocker) of each finding, duplicates kept, and its t_ns."""
    return sorted((((f.get("kind"), f.get("blocker") or ""), f.get("t_ns"))
                   for f in findings),
                  key=lambda x: (x[0], -1 if x[1] is None else x[1]))


def _check_findings(report, truth, rel, bad):
    rf = report.get("findings", [])
    for i, f in enumerate(rf):
        lacks = [k for k in FINDING_MEMBERS if k not in f]
        if lacks or not isinstance(f.get("detail"), str) or not f["detail"]:
            bad.append(f"findings[{i}]: lacks {lacks or ['detail']}: {f}")
    want = _finding_keys(truth["findings"])
    got = _finding_keys(rf)
    if [k for k, _ in want] != [k for k, _ in got]:
        bad.append(f"findings: {[k for k, _ in got]} != truth {[k for k, _ in want]}")
        return
    err = truth["tolerance"]["clock_err_ns"]
    for (k, tt), (_, rt) in zip(want, got):
        if k[0] in FINDINGS_AT and (rt is None or abs(rt - tt) > err):
            bad.append(f"findings {k}: t_ns {rt} != truth {tt} tol {err}")


def _check_costs(report, truth, rel, bad):
    fig, exact = _checkers(rel, bad)
    tc = truth.get("suspend_costs")
    if tc is None:
        return
    rc = report.get("suspend_costs") or {}
    fig("suspend_costs", rc, tc, ("idle_uW", "median_break_even_ns"))
    rcy, tcy = rc.get("cycles", []), tc["cycles"]
    if len(rcy) != len(tcy):
        bad.append(f"suspend_costs.cycles: {len(rcy)} != truth {len(tcy)}")
        return
    at, _ = _checkers(0, bad)
    for i, (r, t) in enumerate(zip(rcy, tcy)):
        w = f"suspend_costs.cycles[{i}]"
        at(w, r, t, ("t_ns", "suspended_ns", "entry_ns", "exit_ns"))
        fig(w, r, t, ("entry_uJ", "exit_uJ", "break_even_ns"))


def _check_phases(report, truth, rel, bad):
    fig, exact = _checkers(0, bad)
    rp, tp = report.get("phases", []), truth.get("phases", [])
    if len(rp) != len(tp):
        bad.append(f"phases: {len(rp)} cycles != truth {len(tp)}")
        return
    for rc, tc in zip(rp, tp):
        w = f"phases[{tc['cycle']}]"
        exact(w, rc, tc, ("cycle",))
        names = [p["name"] for p in rc.get("phases", [])]
        if names != [p["name"] for p in tc["phases"]]:
            bad.append(f"{w}: {names} != truth {[p['name'] for p in tc['phases']]}")
            continue
        for r_, t_ in zip(rc["phases"], tc["phases"]):
            fig(f"{w}.{t_['name']}", r_, t_, ("t_ns", "duration_ns"))
            exact(f"{w}.{t_['name']}", r_, t_, ("slowest_devices",))


_SECTION_CHECKS = {"capture": _check_capture, "energy": _check_energy,
                   "blockers": _check_blockers, "unattributed": _check_unattributed,
                   "gaps": _check_gaps, "wakeups": _check_wakeups,
                   "latency": _check_latency, "phases": _check_phases,
                   "suspend_costs": _check_costs,
                   "findings": _check_findings}


# ---- the scenario library -------------------------------------------------------

def _cycle(t: float, *, sleep: float, holds: list[tuple[str, float, float, int]],
           latency_ms: float = 40.0, wake: str | None = "press power",
           injection_error_ns: int = 0) -> tuple[list[Hold], Sleep, float]:
    """Holds starting at t (offsets from t), then a sleep entering when the
    last one ends + 30 ms, woken `sleep` s later; returns the time the
    target is resumed."""
    hs = [Hold(n, t + a, t + b, uW) for n, a, b, uW in holds]
    last = max([t] + [h.end_s for h in hs])
    enter = last + 0.030
    wake_s = enter + sleep
    s = Sleep(enter, wake_s, wake, latency_ms=latency_ms,
              injection_error_ns=injection_error_ns)
    return hs, s, wake_s + latency_ms / 1000


def scenario_basic(seed: int = 1, format_version: int = 1, **kw) -> Scenario:
    """30 s: two overlapping blockers, two key wakes, each claimed by the
    keypad's blocker; clock drift and an online offset."""
    holds = [Hold("wifi", 1.0, 3.0, 300_000), Hold("gps", 2.0, 3.5, 100_000)]
    sleeps = [Sleep(3.6, 8.0, injection_error_ns=12_000_000),
              Sleep(11.0, 16.0, latency_ms=55, injection_error_ns=-30_000_000)]
    holds += [Hold("keypad-scan", 8.0 + 0.009, 9.2, 40_000),
              Hold("wifi", 9.0, 10.9, 300_000),
              Hold("keypad-scan", 16.0 + 0.009, 17.0, 40_000),
              Hold("sync", 17.5, 29.0, 150_000)]
    return Scenario("basic", 30.0, seed=seed, format_version=format_version,
                    holds=holds, sleeps=sleeps, **kw)


def scenario_kitchen(seed: int = 1, format_version: int = 1, **kw) -> Scenario:
    """90 s of everything but a reboot: a blocker active at the start,
    three-way overlaps, an aborted suspend, an alarm wake (unknown_wakeups),
    a press that did not wake the target, a plug wake, declared and
    undeclared gaps and a short hole that is no gap, noise, a ramp, unknown
    event types, two lost records (stats disagree), a leak at the end."""
    H = Hold
    holds = [
        H("boot-hold", None, 1.5, 120_000),
        H("wifi", 0.5, 4.0, 300_000), H("gps", 1.0, 3.0, 100_000),
        H("audio", 2.0, 5.0, 200_000),
        # wake 1 (press): keypad claims it
        H("keypad-scan", 10.009, 11.0, 40_000), H("sync", 10.5, 13.0, 150_000),
        # alarm wake: nobody claims it, unknown_wakeups is held 1.5 s
        H("unknown_wakeups", 20.0205, 21.5205, 0),
        H("wifi", 21.0, 24.0, 300_000),
        # a lost block/unblock pair (the module's stats still count it)
        H("sync", 22.0, 23.0, 150_000, logged=False),
        # wake by plugging the charger
        H("charger", 33.007, 36.0, 60_000), H("sync", 34.0, 35.5, 150_000),
        # press wake after an ignored press; audio and gps overlap long
        H("keypad-scan", 50.009, 51.0, 40_000), H("audio", 50.5, 58.0, 200_000),
        H("gps", 52.0, 60.0, 100_000),
        # the end: a leak
        H("keypad-scan", 70.009, 71.0, 40_000),
        H("sbagent report", 72.0, None, 80_000),
        H("wifi", 73.0, 75.0, 300_000),
    ]
    sleeps = [
        Sleep(5.5, 10.0, injection_error_ns=8_000_000, lag_ms=4.0),
        Sleep(13.5, 20.0, wake=None, latency_ms=20, injection_error_ns=-15_000_000),
        Sleep(26.0, 33.0, wake="plug charger", latency_ms=60, injection_error_ns=0),
        Sleep(38.0, 50.0, early_presses_s=(44.0,), latency_ms=35,
              injection_error_ns=400_000_000, level_uW=14_000),
        Sleep(62.0, 70.0, latency_ms=48, injection_error_ns=-6_000_000),
    ]
    aborts = [Abort(36.5, "wifi-rx", hold_s=1.0, extra_uW=250_000)]
    loads = [Load(53.0, 57.0, 0, 400_000), Load(57.0, 58.0, 400_000),
             Load(0.2, 0.4, 50_000)]
    gaps = [Gap(3.3, 35, declared=True), Gap(45.0, 180, declared=False),
            Gap(55.5, 3, declared=False), Gap(80.0, 700, declared=True)]
    # (host/lib/capture-read.c takes types of up to 11 bytes)
    odd = [OddEvent(2.5, "phase", "suspend_prepare"),
           OddEvent(12.0, "gremlin", "\"alarmtimer\""),
           OddEvent(12.1, "gremlin", "\"alarmtimer\"")]
    stim = [Stimulus(1.2, "press", "volup"), Stimulus(1.3, "release", "volup"),
            Stimulus(52.5, "burn", "2s")]
    return Scenario("kitchen", 90.0, seed=seed, format_version=format_version,
                    holds=holds, sleeps=sleeps, aborts=aborts, loads=loads, gaps=gaps,
                    odd_events=odd, stimuli=stim, noise_uW=2_000, **kw)


def scenario_objects(seed: int = 1, format_version: int = 1, **kw) -> Scenario:
    """30 s of what the seed's target does: two evdev clients' blockers,
    both named "evdev", overlapping (two objects, one name: one stats row
    each), and kernel wakeup sources (``ws_activate``/``ws_relax``) that
    share the equal split with the blockers, hold the target up alone,
    and one active before the capture (a ``ws_relax`` with no
    ``ws_activate``: active from the start). The suspend cycles log the
    kernel's phase records (``Scenario.phases``); the third is woken by an
    alarm, which only the kernel's "alarmtimer" wakeup source explains;
    the fourth lasts 0.1 s after 0.6 s awake idle: shorter than its
    break-even."""
    H = Hold
    WS = "wakeup_source"
    holds = [
        H("LNXPWRBN:00", None, 0.3, 20_000, kind=WS),
        H("vport0p1", 0.5, 1.5, 30_000, kind=WS),
        H("evdev", 1.0, 3.0, 50_000, obj=0), H("evdev", 2.0, 4.0, 50_000, obj=1),
        H("wifi", 3.5, 5.0, 200_000),
        # its unblock is overwritten in the ring: "lost 1" at the next
        # record (7.0 s); the 10 s snapshot shows it inactive
        H("gps", 5.5, 6.5, 100_000, lost_end=True),
        H("test_ac", 6.0, 7.0, 80_000, kind=WS),
        # a press wake: the keypad, both evdev clients, a virtio port
        H("keypad-scan", 14.009, 15.0, 40_000),
        H("evdev", 14.02, 14.5, 50_000, obj=0), H("evdev", 14.1, 14.8, 50_000, obj=1),
        H("vport0p1", 14.3, 14.4, 30_000, kind=WS),
        # a charger plug: the charger's wakeup source holds it up alone
        H("test_ac", 22.007, 23.0, 80_000, kind=WS),
        H("sync", 23.5, 25.0, 150_000),
        # an alarm: no stimulus, the RTC's wakeup source between exit and resume
        H("alarmtimer", 28.010, 28.030, 20_000, kind=WS),
        # awake idle 0.6 s after the release, then down for 0.1 s only:
        # shorter than its break-even (a short_suspend)
        H("modem", 28.2, 28.3, 50_000),
        H("keypad-scan", 29.009, 29.6, 40_000),
    ]
    sleeps = [Sleep(8.0, 14.0),
              # the platform runs 300 ms past its enter: the press's
              # episode ends where the power falls
              Sleep(16.0, 22.0, wake="plug charger", latency_ms=50, lag_ms=300),
              Sleep(26.0, 28.0, wake=None),
              Sleep(28.9, 29.0)]
    return Scenario("objects", 30.0, seed=seed, format_version=format_version,
                    holds=holds, sleeps=sleeps, phases=True, dev_pm=True, **kw)


def scenario_objects_lost(seed: int = 1, format_version: int = 1,
                          object_ids: bool = True, **kw) -> Scenario:
    """12 s awake: two objects of one name (two evdev clients), one after
    the other, across a "lost" record. The first's unblock (3.0 s) is
    overwritten in the ring; the next record, another blocker's block at
    3.5 s, comes with "lost 1"; the second object blocks at 4.5 s, the
    5.15 s snapshot shows one evdev object active, and it unblocks at
    7.0 s. By id, the first object (no record since the loss) is the one
    the snapshot no longer counts: it ends at the lost record, and evdev
    is idle from 3.5 to 4.5 s. Counting by name cannot tell which object
    the snapshot counts: it keeps the first open until the second's
    unblock (evdev active from 1.0 to 7.0 s), as an analysis of the same
    capture without ids (``object_ids`` False) does."""
    holds = [Hold("evdev", 1.0, 3.0, 100_000, obj=0, lost_end=True),
             Hold("touch", 3.5, 4.0, 50_000),
             Hold("evdev", 4.5, 7.0, 100_000, obj=1)]
    return Scenario("objects-lost", 12.0, seed=seed, format_version=format_version,
                    holds=holds, object_ids=object_ids, **kw)


def scenario_reboot(seed: int = 1, format_version: int = 1, **kw) -> Scenario:
    """40 s: after an alarm wake the target takes a blocker and dies holding
    it; it boots again (new boot id, BOOTTIME from ~4 s) and the blocker's
    activation ends at the new boot's first event; then a wake cycle in
    the new boot."""
    holds = [Hold("wifi", 1.0, 3.0, 300_000),
             Hold("keypad-scan", 8.009, 9.0, 40_000),
             Hold("unknown_wakeups", 10.0205, 10.5205, 0),
             Hold("crasher", 10.4, None, 800_000),
             Hold("mediaserver", 20.0, 23.0, 200_000),
             Hold("keypad-scan", 30.009, 31.0, 40_000),
             Hold("upload", 31.5, 33.0, 250_000)]
    sleeps = [Sleep(3.5, 8.0, injection_error_ns=20_000_000, lag_ms=2.5),
              Sleep(9.2, 10.0, wake=None, latency_ms=20, injection_error_ns=6_000_000),
              Sleep(24.0, 30.0, latency_ms=52, injection_error_ns=-9_000_000)]
    return Scenario("reboot", 40.0, seed=seed, format_version=format_version,
                    holds=holds, sleeps=sleeps, reboots=[Reboot(12.0, 6.0, 4.0)],
                    reboot_uW=1_000_000, **kw)


def scenario_asleep(seed: int = 1, format_version: int = 1, **kw) -> Scenario:
    """20 s that start with the target suspended (first platform event:
    exit); one wake, one more cycle, an alarm wake."""
    holds = [Hold("keypad-scan", 2.009, 3.0, 40_000), Hold("sync", 2.5, 6.0, 150_000),
             Hold("unknown_wakeups", 12.0205, 13.5205, 0)]
    sleeps = [Sleep(None, 2.0, latency_ms=70, injection_error_ns=10_000_000),
              Sleep(6.5, 12.0, wake=None, latency_ms=20, injection_error_ns=7_000_000)]
    return Scenario("asleep", 20.0, seed=seed, format_version=format_version,
                    holds=holds, sleeps=sleeps, **kw)


def scenario_asleep_end(seed: int = 1, format_version: int = 1, **kw) -> Scenario:
    """20 s that end with the target asleep, as a virtual-rig run that
    ends in a suspend: a wake by a key, the agent's own blocker ("sbagent
    report") taken while it reports, then at 15 s the target suspends and
    sleeps to the end; that suspend's records (its unblock, suspend,
    enter) never came. The power shows it: the analysis must count the
    last 5 s suspended, and charge none of it to "sbagent report"."""
    holds = [Hold("sync", 1.0, 3.4, 300_000),
             Hold("keypad-scan", 8.009, 9.0, 40_000),
             Hold("sbagent report", 13.5, None, 100_000)]
    sleeps = [Sleep(3.6, 8.0, injection_error_ns=12_000_000)]
    return Scenario("asleep-end", 20.0, seed=seed, format_version=format_version,
                    holds=holds, sleeps=sleeps, asleep_at_end_s=15.0, **kw)


def scenario_noclock(seed: int = 1, format_version: int = 1, **kw) -> Scenario:
    """The basic scenario with no clock exchanges: every event is unmapped
    and keeps its online host time (2 ms late: the truth uses it too)."""
    sc = scenario_basic(seed, format_version, **kw)
    sc.name = "noclock"
    sc.clock = Clock(enabled=False, online_offset_ns=2_000_000, online_drift_ppm=0.0)
    return sc


def scenario_marker(seed: int = 1, format_version: int = 1, **kw) -> Scenario:
    """36 s with the marker line wired: UART-like pings (3 ms round trip,
    1 ms jitter), drift, three wakes (press, plug, press after an ignored
    press) and an aborted suspend; clock.tsv also holds the daemon's
    online marker pairs, 3 ms off: the analysis must pair edges.tsv itself
    (the truth's clock bound is the markers' few us) and measure each
    wakeup to its marker edge."""
    holds = [Hold("wifi", 1.0, 3.0, 300_000), Hold("gps", 2.0, 3.5, 100_000),
             Hold("keypad-scan", 8.009, 9.0, 40_000), Hold("sync", 9.5, 11.0, 150_000),
             Hold("charger", 16.007, 17.0, 60_000), Hold("wifi", 16.5, 18.5, 300_000),
             Hold("keypad-scan", 24.009, 25.0, 40_000),
             Hold("upload", 25.5, 28.0, 250_000), Hold("sync", 31.0, 33.5, 150_000)]
    sleeps = [Sleep(3.6, 8.0, injection_error_ns=12_000_000),
              Sleep(11.5, 16.0, wake="plug charger", latency_ms=60,
                    injection_error_ns=-20_000_000),
              Sleep(19.0, 24.0, latency_ms=35, injection_error_ns=9_000_000,
                    early_presses_s=(21.0,))]
    aborts = [Abort(29.0, "wifi-rx", hold_s=0.5, extra_uW=250_000)]
    clock = Clock(drift_ppm=30.0, ping_interval_s=0.5, rtt_ns=3_000_000,
                  jitter_ns=1_000_000, outlier_ns=20_000_000)
    return Scenario("marker", 36.0, seed=seed, format_version=format_version,
                    holds=holds, sleeps=sleeps, aborts=aborts, clock=clock,
                    marker=Marker(jitter_ns=5_000, online_error_ns=3_000_000), **kw)


def scenario_latency(seed: int = 1, format_version: int = 1, n: int = 20, **kw) -> Scenario:
    """n press wakes with latencies 20..95 ms in a shuffled order (for the
    statistics: n even by default, the median is a mean of two)."""
    rng = random.Random(seed)
    lats = [20 + round(75 * i / max(1, n - 1), 3) for i in range(n)]
    rng.shuffle(lats)
    holds, sleeps, t = [], [], 0.5
    for i, lat in enumerate(lats):
        inj = rng.choice((0, 6_000_000, -9_000_000))
        hs, s, t = _cycle(t, sleep=2.0,
                          holds=[("app", 0.0, 1.5, 200_000)] if i == 0 else
                          [("keypad-scan", 0.009, 1.0, 40_000), ("app", 0.3, 1.6, 200_000)],
                          latency_ms=lat, injection_error_ns=(-12_000_000 if i == 3 else
                                                              40_000_000 if i == 7 else inj))
        if i == 3:
            # seen on the virtual rig: an enter whose online time the
            # daemon put a second early (+/- a second)
            s.enter_online_error_ns = -1_000_000_000
        if i == 7:
            # ... and one put late, past the next wake's exchanges
            s.enter_online_error_ns = 2_600_000_000
        holds += hs
        sleeps.append(s)
        t = s.wake_s
    holds += [Hold("keypad-scan", t + 0.009, t + 1.0, 40_000)]
    return Scenario("latency", t + 2.0, seed=seed, format_version=format_version,
                    holds=holds, sleeps=sleeps, stats_every_s=10.0,
                    clock=Clock(ping_interval_s=0.4), **kw)


def scenario_empty(seed: int = 1, format_version: int = 1, **kw) -> Scenario:
    """A capture with no rows at all (every file a header only)."""
    return Scenario("empty", 0.0, seed=seed, format_version=format_version, empty=True, **kw)


def scenario_killed(seed: int = 1, format_version: int = 1, **kw) -> Scenario:
    """The basic scenario as a killed daemon leaves it: no [end], a cut
    last line in samples and events (status open, the rest valid)."""
    sc = scenario_basic(seed, format_version, killed=True, **kw)
    sc.name = "killed"
    return sc


def scenario_corrupt(seed: int = 1, format_version: int = 1, **kw) -> Scenario:
    """The basic scenario with events.tsv's 7th row malformed (column
    target_t_ns): the analysis must fail naming events.tsv:8, write nothing."""
    sc = scenario_basic(seed, format_version,
                        corrupt=Corrupt("events.tsv", 7, "target_t_ns", "12x4"), **kw)
    sc.name = "corrupt"
    return sc


def scenario_corrupt_samples(seed: int = 1, format_version: int = 1, **kw) -> Scenario:
    """Malformed samples: v1 row 12345's power_uW is not a number
    (samples.tsv:12346); v2 samples.bin has a wrong magic."""
    c = Corrupt("samples.bin", 0, "magic") if format_version == 2 else \
        Corrupt("samples.tsv", 12345, "power_uW", "3.5e2")
    sc = scenario_basic(seed, format_version, corrupt=c, **kw)
    sc.name = "corrupt-samples"
    return sc


def scenario_bench(seed: int = 1, format_version: int = 2, duration_s: float = 3600.0,
                   **kw) -> Scenario:
    """The benchmark: `duration_s` at 3.5 kS/s (1 h: 12.6 M samples) of
    wake episodes every ~12 s (~300 per hour): a key wake, 1-3 overlapping
    blockers, a suspend of 6-9 s; a few alarms, aborts and gaps. Online
    event host times are exact (so a reference that does not fit the clock
    sees the same timeline)."""
    rng = random.Random(seed)
    names = ["wifi", "gps", "sync", "audio", "upload", "mediaserver", "location"]
    holds, sleeps, aborts, gaps = [], [], [], []
    t, first, prev_wake = 0.5, True, None
    while True:
        wake = None if rng.random() < 0.05 else "press power"
        spec = []
        if not first and prev_wake:
            spec.append(("keypad-scan", 0.009, 1.0, 40_000))
        if not first and not prev_wake:
            spec.append(("unknown_wakeups", 0.0205, 1.0205, 0))
        for _ in range(rng.randint(1, 3)):
            a = round(rng.uniform(0.02, 1.5), 3)
            spec.append((rng.choice(names), a, round(a + rng.uniform(0.3, 2.5), 3),
                         rng.choice((100_000, 150_000, 200_000, 300_000))))
        # the same name twice in an episode must not overlap itself
        seen: dict[str, float] = {}
        fixed = []
        for nme, a, b, uW in sorted(spec, key=lambda x: x[1]):
            if nme in seen and a <= seen[nme]:
                nme = f"{nme}-{len(fixed)}"
            seen[nme] = b
            fixed.append((nme, a, b, uW))
        sl = round(rng.uniform(6.0, 9.0), 3)
        hs, s, _ = _cycle(t, sleep=sl, holds=fixed,
                          latency_ms=20.0 if wake is None else round(rng.uniform(25, 90), 2),
                          wake=wake,
                          injection_error_ns=rng.choice((0, 7_000_000, -12_000_000)))
        if rng.random() < 0.03:
            ab_t = round(max(h.end_s for h in hs) + 0.002, 3)
            aborts.append(Abort(ab_t, "wifi-rx", hold_s=0.5, extra_uW=250_000))
            s.enter_s = round(ab_t + 0.004 + 0.5 + 0.030, 3)
            s.wake_s = round(s.enter_s + sl, 3)
        if s.wake_s + 3.0 > duration_s:
            break
        holds += hs
        sleeps.append(s)
        if rng.random() < 0.02:
            gaps.append(Gap(round(s.enter_s + sl / 2, 3), rng.choice((20, 60, 400))))
        t, prev_wake, first = s.wake_s, wake, False
    if not first:
        holds.append(Hold("keypad-scan" if prev_wake else "unknown_wakeups",
                          t + (0.009 if prev_wake else 0.0205),
                          t + (1.0 if prev_wake else 1.0205), 40_000 if prev_wake else 0))
    return Scenario("bench", duration_s, seed=seed, format_version=format_version,
                    holds=holds, sleeps=sleeps, aborts=aborts, gaps=gaps,
                    stats_every_s=60.0,
                    clock=Clock(ping_interval_s=0.25, online_offset_ns=0,
                                online_drift_ppm=0.0), **kw)


SCENARIOS = {
    "basic": scenario_basic,
    "kitchen": scenario_kitchen,
    "objects": scenario_objects,
    "objects-lost": scenario_objects_lost,
    "reboot": scenario_reboot,
    "asleep": scenario_asleep,
    "asleep-end": scenario_asleep_end,
    "noclock": scenario_noclock,
    "marker": scenario_marker,
    "latency": scenario_latency,
    "empty": scenario_empty,
    "killed": scenario_killed,
    "corrupt": scenario_corrupt,
    "corrupt-samples": scenario_corrupt_samples,
    "bench": scenario_bench,
}


def scenario(name: str, **kw) -> Scenario:
    """A scenario of the library by name (keywords: seed, format_version,
    and the factory's own: n for latency, duration_s for bench)."""
    try:
        return SCENARIOS[name](**kw)
    except KeyError:
        raise ScenarioError(f"no scenario {name!r} (have: {', '.join(SCENARIOS)})") from None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="the scenarios of the library")
    b = sub.add_parser("build", help="write OUT/capture and OUT/truth.json")
    b.add_argument("scenario", choices=sorted(SCENARIOS))
    b.add_argument("out", type=Path)
    b.add_argument("--format", type=int, choices=(1, 2), default=None,
                   help="capture format version (default: the scenario's)")
    b.add_argument("--seed", type=int, default=1)
    b.add_argument("--duration", type=float, help="bench only: seconds")
    b.add_argument("--no-numpy", action="store_true", help="the plain Python path")
    args = ap.parse_args(argv)
    if args.cmd == "list":
        for name, fn in SCENARIOS.items():
            print(f"{name:16s} {fn.__doc__.splitlines()[0]}")
        return 0
    kw = {"seed": args.seed}
    if args.format:
        kw["format_version"] = args.format
    if args.duration is not None:
        kw["duration_s"] = args.duration
    sc = scenario(args.scenario, **kw)
    truth = build(sc, args.out, use_numpy=False if args.no_numpy else None)
    c = truth["capture"]
    print(f"{args.out / 'capture'}: {c['samples']} samples, {c['events']} events, "
          f"format {c['format_version']}; truth in {args.out / 'truth.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
