"""sbrigd's latency request at its edges (host/doc/daemon-protocol.md).

`latency DIR ... until=EVENT`: each round waits until the target is
asleep, presses the key and measures from the press to the first EVENT
stamped after it. The edges promised there: a target quiet for quiet_ms
after the press is pressed again (`progress i=I/N nudge=K`, the
measurement counting from the last press); an EVENT with no host time
within 250 ms (the target slept again before a clock exchange) starts the
round again (`retry=no_clock`); 20 rounds in a row not measured end the
request with `err 11`; `until=` chooses the event.

The real daemon (ASan build), its key a qmp: key on a real QEMU
(tests/qemuqmp.py); the target is the FakeAgent of tests/rigproto.py,
scripted to wake when the tap between the daemon and QEMU sees the key go
down: the test needs a wake it places exactly, which a booted guest does
not give (tests/test_host_interface.py and test_vrig.py measure real
wakes of a guest).
"""

from __future__ import annotations

import contextlib
import re
import threading
import time

import pytest

from tests.capture import read_rows
from tests.qemuqmp import QemuQmp
from tests.rigproto import FakeAgent
from tests.sbrigdrig import Conn, build, key_power, sbrig, sbrigd_rig  # noqa: F401

MS = 1_000_000
QUIET_MS = 600
WAKE_NS = 300 * MS          # the target's resume, after the press


class Target:
    """The FakeAgent as a target that suspends between rounds and wakes
    on the key: ``mode`` says how it answers a press ("wake", "blip":
    wakes and suspends again before any clock exchange, "ignore": stays
    asleep). Every press it sees: ``presses`` (tap time, ns)."""

    def __init__(self, agent: FakeAgent) -> None:
        self.agent = agent
        self.mode = "wake"
        self.ignore_next = 0
        self.presses: list[int] = []
        self.woke: list[int] = []      # tap time of the press it woke on
        self.extra: list[tuple[int, str, str]] = []   # (after_ns, type, arg)
        self.lock = threading.Lock()
        self.seq = 1000

    def suspend(self) -> None:
        a = self.agent
        with self.lock:
            a.sleep()
            t = a.asleep_since
            a.send_event(self.seq, t - MS, "suspend", "mem")
            a.send_event(self.seq + 1, t, "enter", "mem")
            self.seq += 2

    def on_key(self, qcode: str, down: bool, t_ns: int) -> None:
        if not down:
            return
        with self.lock:
            self.presses.append(t_ns)
            if self.ignore_next:
                self.ignore_next -= 1
                return
            if self.mode == "ignore":
                return
            a = self.agent
            a.send_event(self.seq, t_ns + WAKE_NS, "exit", "mem")
            a.send_event(self.seq + 1, t_ns + WAKE_NS + MS, "resume", "0")
            self.seq += 2
            for after, typ, arg in self.extra:
                a.send_event(self.seq, t_ns + after, typ, arg)
                self.seq += 1
            self.woke.append(t_ns)
            # the target is up (and says so) once its last event of the
            # wake is past on its clock
            up = max([WAKE_NS + MS] + [after for after, _, _ in self.extra])
            threading.Timer((t_ns + up + 5 * MS - time.monotonic_ns()) / 1e9,
                            self._up).start()

    def _up(self) -> None:
        with self.lock:
            if self.mode == "blip":
                self.agent.blip()
            else:
                self.agent.wake()


@contextlib.contextmanager
def latency_rig(tmp_path):
    """The rig (tests/sbrigdrig.py) with its key a qmp: key on a real QEMU
    whose tap wakes the Target (r.target)."""
    with sbrigd_rig(tmp_path, "latency", "boot-latency",
                    ("--current-uA", "20000", "--rate", "500"), qmp=QemuQmp,
                    sections=key_power(tmp_path / "qmp.sock"),
                    timing=f"quiet_ms = {QUIET_MS}\npress_ms = 50\n") as r:
        r.target = Target(r.agent)
        r.qmp.on_key = r.target.on_key
        yield r


@pytest.fixture
def lrig(tmp_path):
    with latency_rig(tmp_path) as r:
        yield r


def run_latency(r, args: str, rounds_to_suspend: int, timeout: float = 120):
    """Send `latency DIR ARGS`; suspend the target at the start and after
    each round it woke for (a progress line), up to @rounds_to_suspend
    times; return (final line, progress lines, capture dir)."""
    cap = r.tmp / "lat-cap"
    c = Conn(r.sock, timeout=timeout)
    progress: list[str] = []
    try:
        c.send(f"latency {cap} {args}\n".encode())
        first = c.line()
        assert first.startswith("progress started "), first
        r.target.suspend()
        suspended = 1
        while True:
            line = c.line()
            if line.startswith(("ok", "err ")):
                return line, progress, cap
            progress.append(line)
            # a round is over (measured or not): the target sleeps again
            if re.match(r"progress i=\d+/\d+ (latency_ns|retry)=", line) and \
                    suspended < rounds_to_suspend:
                if " retry=" not in line or r.target.mode != "blip":
                    r.target.suspend()
                suspended += 1
    finally:
        c.close()


def measured(progress: list[str]) -> list[tuple[int, int]]:
    return [(int(m.group(1)), int(m.group(2))) for m in
            (re.match(r"progress i=\d+/\d+ latency_ns=(-?\d+) uncert_ns=(\d+)$", p)
             for p in progress) if m]


def press_times(cap) -> list[int]:
    """The presses as the daemon stamped them (its capture's stimuli)."""
    return [s.t_ns for s in read_rows(cap, "stimuli", typed=True) if s.what == "press"]


def test_until_chooses_the_event_measured(lrig):
    """until=block: each round measures from its press to the block event
    the target logs 500 ms after it, not to the resume 300 ms after."""
    lrig.target.extra = [(500 * MS, "block", '"late"')]
    final, progress, cap = run_latency(lrig, "n=2 key=power until=block "
                                       "timeout=20s", 2)
    assert final.startswith("ok n=2 requested=2"), (final, progress)
    got = measured(progress)
    presses = press_times(cap)
    assert len(got) == 2 and len(presses) == 2, (progress, presses)
    for (lat, unc), tap, press in zip(got, lrig.target.woke, presses):
        # the event was stamped 500 ms after the tap saw the press, which
        # is after the daemon stamped it
        want = tap + 500 * MS - press
        assert press <= tap and abs(lat - want) <= unc + MS, (lat, want, unc)


def test_a_quiet_target_is_nudged_and_measured_from_the_last_press(lrig):
    """The target ignores the first press of the round: after quiet_ms the
    key is pressed again (`progress i=1/1 nudge=1`), and the latency
    counts from that second press."""
    lrig.target.ignore_next = 1
    final, progress, cap = run_latency(lrig, "n=1 key=power timeout=20s", 1)
    assert final.startswith("ok n=1 requested=1"), (final, progress)
    assert "progress i=1/1 nudge=1" in progress, progress
    presses = press_times(cap)
    assert len(presses) == 2 and len(lrig.target.presses) == 2, presses
    # the nudge came once the target had been quiet quiet_ms after the
    # first press (the promise; no upper bound)
    assert presses[1] - presses[0] >= QUIET_MS * MS, presses
    [(lat, unc)] = measured(progress)
    want = lrig.target.woke[0] + WAKE_NS + MS - presses[1]
    assert lrig.target.woke == [lrig.target.presses[1]]
    assert abs(lat - want) <= unc + MS, (lat, want, unc)


def test_no_clock_rounds_are_retried_and_20_in_a_row_end_with_err_11(lrig):
    """A target that suspends again before any clock exchange after each
    wake: its resume has no host time within 250 ms, so each round is
    `retry=no_clock` and started again; the 20th in a row ends the
    request with err 11, none measured."""
    lrig.target.mode = "blip"
    final, progress, cap = run_latency(lrig, "n=3 key=power timeout=20s", 1,
                                       timeout=300)
    retries = [p for p in progress if " retry=" in p]
    assert final.startswith("err 11 n=0 requested=3"), (final, progress[-3:])
    assert measured(progress) == [], progress
    assert retries == ["progress i=1/3 retry=no_clock event=resume"] * 19, retries
    assert len(lrig.target.presses) == 20


def test_sbrig_latency_until_on_the_command_line(lrig):
    """`sbrig latency --until block`: the CLI asks for the event; its CSV
    and statistics are the press-to-block latency. They were the capture
    analysis' press-to-resume latency (301 ms where the daemon's own line
    said 500 ms): the analysis measures wakeups to their resume only. With
    another EVENT they are the daemon's rounds now, and a note says so."""
    lrig.target.extra = [(500 * MS, "block", '"late"')]
    lrig.target.suspend()
    cap, csv = lrig.tmp / "cli-cap", lrig.tmp / "lat.csv"
    res = sbrig(lrig.sock, "latency", "-n", "1", "--until", "block",
                "--timeout", "20s", "--csv", str(csv), "-o", str(cap), timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert re.search(r"^1/1 [\d.]+ ms \+/- [\d.]+ ms$", res.stdout, re.M), res.stdout
    rows = [l.split(",") for l in csv.read_text().splitlines()]
    assert rows[0] == ["i", "latency_ns", "uncert_ns"] and len(rows) == 2, rows
    lat, unc = int(rows[1][1]), int(rows[1][2])
    [press] = press_times(cap)
    [tap] = lrig.target.woke
    want = tap + 500 * MS - press
    assert abs(lat - want) <= unc + MS, (lat, want, unc)
    assert "note: until 'block': the statistics are the daemon's" in res.stdout
    assert re.search(rf"^min_ms: {lat / 1e6:.3f}$", res.stdout, re.M), res.stdout
