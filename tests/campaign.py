"""The suspend-cycle campaign: opportunistic suspend with a blocker taken at
a random point of the suspend path, cycle after cycle (issue 22).

Used by tests/test_module_campaign.py (a bounded run in the suite) and by
``make soak`` (1000 cycles). One cycle:

1. sb_campaign.ko (tests/target/sb_campaign) holds "sbc_hold" between
   cycles. The host arms a hook (a PM phase of the suspend_resume
   tracepoint at its begin or end, PM_SUSPEND_PREPARE before or after
   every other notifier, a device callback; in the hook's own context or
   from a hard-irq hrtimer up to 2 ms later; "persist" or "transient"),
   or a kick (an hrtimer started with the release, racing the worker's
   wakeup_count read and write), or a user-space race (tests/target/sbrace:
   the last user blocker is released and blocked again DELAY µs later),
   or nothing ("plain": a real sleep, woken by the host; "rtc": woken by
   the RTC alarm). Then the hold is released and the worker of
   suspend_block.ko starts its attempts.
2. While the guest's shell may be frozen or asleep, the host follows the
   console (sb_campaign logs "rehold C" when the first PM_POST_SUSPEND
   after arming takes the hold again, "hit C"/"user C" for a persistent
   kick or user block, "idle begin|end C" around s2idle's park) and QMP
   (SUSPEND on amd64's S3). A guest found asleep gets a stimulus (amd64:
   QMP system_wakeup or a key through input-send-event, alternately;
   armhf: the gpio-keys power key, QMP system_powerdown), which must
   produce a resume within STIMULUS_TIMEOUT s: else a lost wakeup.
3. Once the hold (or a persistent blocker) is back, the host reads the
   event log (a ``cat`` of suspend_blocker_events running in the guest
   since the campaign began) and judges every attempt of the cycle.

Judging an attempt (``suspend`` record to its ``resume``/``abort``): a
blocker activated in it (a ``block`` record inside, or a blocker active
when it began) must stop it from sleeping:

* S3 (amd64): the platform sleeps after ``phase machine_suspend 3 begin``
  (the PM core's last check for wakeups is just before it, with
  interrupts off): a block before that record in an attempt that has it
  is a violation ("slept despite a block").
* s2idle (armhf): the platform parks between ``phase machine_suspend 1
  begin`` and ``end``; mainline returns 0 for any s2idle wakeup, so a
  block shows as ``resume 0``, with or without ``enter`` (the rst says
  so). A park that lasts PARK_S or more after a block that came before
  its end is a violation (parked despite a block, or woken late).
* Both: a block before the ``enter`` record of the same attempt while
  ``enter`` is logged is a violation: suspend_block's noirq callback
  checks for exactly that before logging ``enter``.

The hook at S3's ``machine_suspend`` begin is past that last check: its
blocker cannot stop the sleep, which is then expected (it claims the
wakeup that follows).

Outcomes of the attempt a blocker was taken in: ``aborted`` (abort
record), ``never_entered`` (resume 0 without ``enter``), ``not_slept``
(resume 0 after ``enter``, without a park: s2idle only), ``slept``
(a violation, but for S3's machine_suspend hook), ``after_ponr`` (the
platform had begun to sleep when the blocker came: a delayed hook or a
race that fired after the wakeup); ``outside``: the block came between
attempts; ``not_fired``: the hook was not reached (its attempt ended
earlier).
"""

from __future__ import annotations

import random
import re
import statistics
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import sbtarget as sb

CTL = "/sys/kernel/debug/sb_campaign/ctl"
DIR = "/tmp/camp"
EVLOG = f"{DIR}/ev.log"
#: a stimulus must have produced a resume (the hold back) within this
STIMULUS_TIMEOUT = 30.0
#: a guest that shows no progress for this long fails the cycle
CYCLE_TIMEOUT = 120.0
#: an s2idle park this long was a real sleep (not a check that found a
#: wakeup pending): the host wakes a park only after PARK_WAIT
PARK_S = 0.3
PARK_WAIT = 0.5
#: after a persistent kick/user block, how long to wait for an attempt
#: already under way to come back (its PM_POST_SUSPEND takes the hold:
#: "rehold C") before calling the cycle settled. Nothing else says that
#: no attempt is under way, but nothing is lost if one comes later: the
#: host reads the log only once every "suspend" it holds has its result,
#: and a late attempt is judged in the next cycle, with the blocker still
#: active when it began.
GRACE_S = 2.0

#: hook points of the suspend_resume tracepoint (suspend path only)
PHASES = ("suspend_enter", "sync_filesystems", "freeze_processes",
          "dpm_prepare", "dpm_suspend", "dpm_suspend_late",
          "dpm_suspend_noirq")
NOTIFIERS = ("pm_prepare_early", "pm_prepare_late")
DEVICE = ("dev_prepare", "dev_suspend", "dev_suspend_late", "dev_suspend_noirq")

OUTCOMES = ("aborted", "never_entered", "not_slept", "slept", "after_ponr",
            "outside", "not_fired")


@dataclass
class Kind:
    """What one cycle does: ``hook`` (where, edge), ``kick``, ``urace``,
    ``plain`` or ``rtc``."""

    what: str
    where: str = ""
    edge: str = "begin"
    delay_us: int = 0
    mode: str = "transient"

    @property
    def label(self) -> str:
        if self.what == "hook":
            edge = f"/{self.edge}" if self.where in PHASES + ("machine_suspend",) else ""
            return f"{self.where}{edge}"
        return self.what

    @property
    def blocks(self) -> bool:
        return self.what in ("hook", "kick", "urace")


@dataclass
class Attempt:
    suspend_seq: int
    result: str = ""          # "resume 0" / "abort -16"
    result_seq: int = -1
    enter_seq: int | None = None
    ponr: list = field(default_factory=list)   # machine_suspend (begin, end) events
    blocks: list = field(default_factory=list)  # block events inside
    active_at_start: frozenset = frozenset()


@dataclass
class Result:
    kind: Kind
    cycle: int
    outcome: str
    attempts: int
    seconds: float
    stimuli: int
    violations: list = field(default_factory=list)


class Campaign:
    """Runs cycles on one VM and keeps the figures."""

    def __init__(self, vm, seed: int) -> None:
        self.vm = vm
        self.s3 = vm.arch == "amd64"
        self.rng = random.Random(seed)
        self.seed = seed
        self.cycle = 0
        self.lines = 0            # lines of EVLOG consumed
        self.records: list[sb.Event] = []
        self.active: set[str] = set()
        self.results: list[Result] = []
        self.latencies: list[float] = []
        self.lost_wakeups: list[str] = []
        self.splats: list[str] = []
        self.stimuli = 0
        self.qmp_seen = 0
        self.hits_seen = 0        # sb_campaign's "hits" judged so far
        self.t0 = time.monotonic()

    # ------------------------------------------------------------ setup --
    def start(self) -> None:
        vm = self.vm
        vm.run("rmmod sb_campaign 2>/dev/null; rmmod sb_torture 2>/dev/null; "
               "rmmod sb_test 2>/dev/null; rmmod suspend_block 2>/dev/null; true")
        vm.load_module("suspend_block", event_log_size=16384)
        sb.wait_quiet_log(vm)
        vm.load_module("sb_campaign")
        # the table says who is active now; the log follows from here
        self.active = {n for n, s in sb.stats(vm).items() if s.active}
        last = sb.last_seq(vm)
        # the event log, and the kernel log (hundreds of suspends push a
        # report out of the kernel's ring), each followed into a file
        vm.run_ok(f"rm -rf {DIR}; mkdir -p {DIR}; "
                  f"(cat {sb.EVENTS} > {EVLOG} & echo $! > {DIR}/cat.pid); "
                  f"(cat /proc/kmsg > {DIR}/kmsg & echo $! > {DIR}/kmsg.pid); "
                  "echo 0 > /sys/class/rtc/rtc0/wakealarm")
        self._fetch(lambda recs: any(e.seq >= last for e in recs) or last < 0)
        self.records = [e for e in self.records if e.seq > last]
        state = "mem" if self.s3 else "freeze"
        vm.run_ok(f"echo opportunistic > {sb.SYSFS}/policy; "
                  f"echo {state} > {sb.SYSFS}/state")
        self.active.discard("main")
        self.qmp_seen = vm.qmp_mark()
        self.t0 = time.monotonic()

    def stop(self) -> None:
        vm = self.vm
        vm.run(f"echo on > {sb.SYSFS}/state; echo forced > {sb.SYSFS}/policy; "
               f"kill $(cat {DIR}/cat.pid) 2>/dev/null; "
               "kill $(pidof sbrace) 2>/dev/null; rmmod sb_campaign; true",
               timeout=60)
        # kernel reports: the first line, and the first frames of the trace
        out = vm.run(f"kill $(cat {DIR}/kmsg.pid) 2>/dev/null; "
                     f"grep -E -A40 'WARNING:|BUG:|Oops|INFO: task' {DIR}/kmsg", timeout=60)[1]
        self.splats += splat_summaries(out)

    # ------------------------------------------------------------ kinds --
    def pick(self) -> Kind:
        r = self.rng.random()
        mode = self.rng.choice(("persist", "transient"))
        if r < 0.12:
            return Kind("plain")
        if r < 0.16:
            return Kind("rtc")
        if r < 0.26:
            return Kind("kick", delay_us=self._race_delay(), mode=mode)
        if r < 0.36:
            return Kind("urace", delay_us=self._race_delay(), mode=mode)
        points = [(p, e) for p in PHASES for e in ("begin", "end")]
        points += [(n, "begin") for n in NOTIFIERS + DEVICE]
        points += [("machine_suspend", "begin")]
        where, edge = self.rng.choice(points)
        delay = 0
        if where != "machine_suspend" and self.rng.random() < 0.5:
            delay = self.rng.randint(1, 2000)
        return Kind("hook", where, edge, delay, mode)

    def _race_delay(self) -> int:
        # log-uniform over 1 us .. 30 ms, and 0 sometimes
        if self.rng.random() < 0.1:
            return 0
        return int(10 ** self.rng.uniform(0, 4.5))

    # ------------------------------------------------------------ cycle --
    def run_cycle(self, kind: Kind) -> Result:
        vm = self.vm
        self.cycle += 1
        c = self.cycle
        t0 = time.monotonic()
        seq0 = self.records[-1].seq if self.records else -1
        cmark = vm.console_mark()
        if kind.what == "hook":
            go = (f"echo arm {c} {kind.where} {kind.edge} {kind.delay_us} "
                  f"{kind.mode} > {CTL} && echo release > {CTL}")
        elif kind.what == "kick":
            go = f"echo kick {c} {kind.delay_us} {kind.mode} > {CTL}"
        elif kind.what == "urace":
            go = (f"echo arm {c} none begin 0 transient > {CTL} && "
                  f"{{ sbrace {c} {kind.delay_us} {kind.mode} "
                  f"> {DIR}/sbrace.out 2>&1 & }}")
        elif kind.what == "rtc":
            go = (f"echo arm {c} none begin 0 transient > {CTL} && "
                  "echo +2 > /sys/class/rtc/rtc0/wakealarm && "
                  f"echo release > {CTL}")
        else:
            go = f"echo arm {c} none begin 0 transient > {CTL} && echo release > {CTL}"
        pending = vm.run_async(go)
        stimuli = self._wait_settled(c, kind, cmark)
        rc, out = pending.wait(timeout=CYCLE_TIMEOUT)
        if rc != 0:
            raise AssertionError(f"cycle {c}: {go!r} failed: {out}")
        # disarmed first (a kick's timer may still be pending): the state
        # read then counts every activation of sbc_hit there will be
        vm.run_ok(f"echo disarm > {CTL}")
        st = self._ctl_state()
        cleanup = []
        if not st["hold"]:
            cleanup.append(f"echo hold > {CTL}")
        if st["hit"]:
            cleanup.append(f"echo unhit > {CTL}")
        if kind.what == "rtc":
            cleanup.append("echo 0 > /sys/class/rtc/rtc0/wakealarm")
        if kind.what == "urace":
            cleanup.append("p=$(pidof sbrace); if [ -n \"$p\" ]; then kill $p; "
                           "while kill -0 $p 2>/dev/null; do usleep 10000; done; fi")
        if cleanup:
            vm.run_ok("; ".join(cleanup))
        recs = self._cycle_records(seq0, kind, st["hits"] - self.hits_seen)
        self.hits_seen = st["hits"]
        outcome, attempts, violations = self.judge(recs, kind)
        res = Result(kind, c, outcome, attempts, time.monotonic() - t0, stimuli,
                     violations)
        self.results.append(res)
        return res

    def _ctl_state(self) -> dict[str, int]:
        out = self.vm.run_ok(f"cat {CTL}")
        return {k: int(v) for k, v in re.findall(r"^(\w+) (-?\d+)$", out, re.M)}

    def _wait_settled(self, c: int, kind: Kind, cmark: int) -> int:
        """Follow console and QMP until cycle ``c`` is over; give a
        stimulus to a guest found asleep. Returns the stimuli given."""
        vm = self.vm
        stimuli = 0
        start = time.monotonic()
        grace_from = None
        park_seen = 0
        park_since = None
        rtc_sleep = None
        while True:
            text = vm.console_text(cmark)
            now = time.monotonic()
            if re.search(rf"sb_campaign: rehold {c}\b", text):
                return stimuli
            if kind.mode == "persist" and kind.what in ("kick", "urace") and \
                    re.search(rf"sb_campaign: (hit|user) {c}\b", text):
                grace_from = grace_from or now
                if now - grace_from > GRACE_S * self._slowness():
                    return stimuli
            asleep = False
            if self.s3:
                events = vm.qmp_events
                for ev in events[self.qmp_seen:]:
                    if ev.get("event") == "SUSPEND":
                        asleep = True
                self.qmp_seen = len(events)
            else:
                begins = len(re.findall(rf"sb_campaign: idle begin {c}\b", text))
                ends = len(re.findall(rf"sb_campaign: idle end {c}\b", text))
                if begins > ends and begins > park_seen:
                    park_since = park_since or now
                    if now - park_since > PARK_WAIT:
                        asleep = True
                        park_seen = begins
                        park_since = None
                else:
                    park_since = None
            if asleep and kind.what == "rtc":
                # the RTC alarm (+2 s) must wake it; the host only steps
                # in (and says so) if it does not
                rtc_sleep = rtc_sleep or now
            elif asleep:
                stimuli += 1
                self._stimulus(c, cmark)
            if rtc_sleep and now - rtc_sleep > 2 + STIMULUS_TIMEOUT * self._slowness():
                self.lost_wakeups.append(f"cycle {c}: the RTC alarm did not wake it")
                rtc_sleep = None
                stimuli += 1
                self._stimulus(c, cmark)
            if now - start > CYCLE_TIMEOUT * self._slowness():
                raise AssertionError(
                    f"cycle {c} ({kind}): no progress in {CYCLE_TIMEOUT} s\n"
                    + vm.console_tail())
            time.sleep(0.01)

    def _slowness(self) -> float:
        slow = getattr(self.vm, "slow", None)
        return slow(1.0) if slow else 1.0

    def _stimulus(self, c: int, cmark: int) -> None:
        """Wake the guest; time until it is back (sb_campaign's rehold line:
        resumed, thawed, PM_POST_SUSPEND); a lost wakeup if it does not
        come."""
        vm = self.vm
        self.stimuli += 1
        rehold = re.compile(rf"sb_campaign: rehold {c}\b")
        before = len(rehold.findall(vm.console_text(cmark)))
        t0 = time.monotonic()
        if self.s3:
            mark = vm.qmp_mark()
            if self.stimuli % 2:
                vm.system_wakeup()
                how = "system_wakeup"
            else:
                vm.send_key()
                how = "key (input-send-event)"
            try:
                vm.wait_qmp_event("WAKEUP", timeout=STIMULUS_TIMEOUT, since=mark)
            except Exception:
                self.lost_wakeups.append(f"cycle {c}: {how} in S3: no WAKEUP")
                return
            self.qmp_seen = max(self.qmp_seen, mark)
        else:
            how = "power key (system_powerdown)"
            vm.system_powerdown()
        while len(rehold.findall(vm.console_text(cmark))) <= before:
            if time.monotonic() - t0 > STIMULUS_TIMEOUT * self._slowness():
                self.lost_wakeups.append(
                    f"cycle {c}: {how} while asleep: no resume in {STIMULUS_TIMEOUT} s")
                return
            time.sleep(0.005)
        self.latencies.append(time.monotonic() - t0)

    # ------------------------------------------------------------ records --
    def _fetch(self, done, timeout: float = 30.0) -> None:
        """Read the whole lines the guest's log follower has written since
        the last fetch, until ``done(self.records)``."""
        end = time.monotonic() + timeout
        while True:
            first = self.lines + 1
            out = self.vm.run_ok(f"n=$(wc -l < {EVLOG}); echo $n; "
                                 f"[ $n -lt {first} ] || sed -n '{first},'$n'p' {EVLOG}")
            head, _, body = out.partition("\n")
            n = int(head)
            if n >= first:
                new = body.rstrip("\n").split("\n")
                if len(new) != n - first + 1:
                    raise AssertionError(f"read {len(new)} lines of the log, "
                                         f"expected {n - first + 1}: {out[-500:]!r}")
                self.records += sb.parse_events("\n".join(new))
                self.lines = n
            if done(self.records):
                return
            if time.monotonic() > end:
                raise AssertionError("the event log follower did not catch up: "
                                     f"{self.records[-20:]}")
            self.vm.run_ok("usleep 50000")

    def _cycle_records(self, seq0: int, kind: Kind, hits: int) -> list[sb.Event]:
        """The records of the cycle that began after record ``seq0``, once
        the follower has written all of them: every attempt's result, the
        hold taken again, the ``hits`` activations of sbc_hit, the user
        race's blocker gone."""
        def complete(recs):
            mine = [e for e in recs if e.seq > seq0]
            kinds = Counter(e.type for e in mine)
            if kinds["suspend"] != kinds["resume"] + kinds["abort"]:
                return False
            if not any(e.type == "block" and e.name == "sbc_hold" for e in mine):
                return False
            if kind.what == "urace" and not any(
                    e.type == "unblock" and e.name == "sbc_user" for e in mine):
                return False
            hit_blocks = sum(e.type == "block" and e.name == "sbc_hit" for e in mine)
            return hit_blocks >= hits
        self._fetch(complete)
        return [e for e in self.records if e.seq > seq0]

    def judge(self, recs: list[sb.Event], kind: Kind) -> tuple[str, int, list[str]]:
        """Split ``recs`` into attempts, check each, and say what happened
        to the attempt the cycle's blocker was taken in."""
        attempts: list[Attempt] = []
        cur: Attempt | None = None
        hit_seqs = []
        violations = []
        for e in recs:
            if e.type == "suspend":
                cur = Attempt(e.seq, active_at_start=frozenset(self.active))
                attempts.append(cur)
            elif e.type in ("resume", "abort"):
                if cur:
                    cur.result, cur.result_seq = f"{e.type} {e.arg}", e.seq
                cur = None
            elif e.type == "enter" and cur:
                cur.enter_seq = e.seq
            elif e.type == "phase" and cur and e.arg.startswith("machine_suspend "):
                cur.ponr.append(e)
            if e.type == "block":
                self.active.add(e.name)
                if cur:
                    cur.blocks.append(e)
                if e.name in ("sbc_hit", "sbc_user"):
                    hit_seqs.append(e.seq)
            elif e.type == "unblock":
                self.active.discard(e.name)
        for a in attempts:
            violations += self._check(a, kind)
        # the cycle's own blocker: the last race/hit block (a user race
        # blocks once before releasing the hold: not the race)
        if kind.what == "urace":
            hit_seqs = hit_seqs[1:]
        if not kind.blocks:
            outcome = "plain"
        elif not hit_seqs:
            outcome = "not_fired"
        else:
            seq = hit_seqs[-1]
            inside = [a for a in attempts
                      if a.suspend_seq < seq < (a.result_seq if a.result_seq >= 0 else 1 << 62)]
            outcome = self._outcome(inside[0], seq) if inside else "outside"
        return outcome, len(attempts), violations

    def _slept(self, a: Attempt) -> list[tuple]:
        """(begin, end) of the real sleeps of an attempt."""
        if self.s3:
            begins = [e for e in a.ponr if e.arg.endswith(" begin")]
            return [(b, None) for b in begins]
        out, begin = [], None
        for e in a.ponr:
            if e.arg.endswith(" begin"):
                begin = e
            elif begin is not None:
                if (e.t_ns - begin.t_ns) / 1e9 >= PARK_S:
                    out.append((begin, e))
                begin = None
        return out

    def _outcome(self, a: Attempt, seq: int) -> str:
        """What became of attempt ``a``, whose blocker was activated at
        record ``seq``."""
        if a.result.startswith("abort"):
            return "aborted"
        slept = self._slept(a)
        if slept and slept[0][0].seq < seq:
            return "after_ponr"       # blocked past the point of no return
        if slept:
            return "slept"
        return "not_slept" if a.enter_seq is not None else "never_entered"

    def _check(self, a: Attempt, kind: Kind) -> list[str]:
        bad = []
        where = f"attempt at record {a.suspend_seq} ({a.result or 'no result'})"
        early = sorted(a.active_at_start)
        if early and not a.result.startswith("abort"):
            # a blocker active as the attempt began: it must not sleep
            if self._slept(a):
                bad.append(f"{where}: slept while {early} active")
        for b in a.blocks:
            if a.enter_seq is not None and b.seq < a.enter_seq:
                bad.append(f"{where}: {b.arg} blocked at record {b.seq} before "
                           f"'enter' at {a.enter_seq}, which was logged")
            for begin, end in self._slept(a):
                if self.s3 and b.seq < begin.seq:
                    bad.append(f"{where}: {b.arg} blocked at record {b.seq}, "
                               f"S3 entered at record {begin.seq}")
                late = 0 if self.s3 or b.seq > end.seq else \
                    (end.t_ns - max(b.t_ns, begin.t_ns)) / 1e9
                if late >= PARK_S:
                    bad.append(f"{where}: {b.arg} blocked at record {b.seq}, "
                               f"s2idle parked until record {end.seq} "
                               f"({late:.3f} s later)")
        return bad

    # ------------------------------------------------------------ figures --
    def figures(self) -> str:
        vm = self.vm
        wall = time.monotonic() - self.t0
        n = len(self.results)
        lines = [f"campaign {vm.arch} ({'S3 mem' if self.s3 else 's2idle freeze'}), "
                 f"seed {self.seed}: {n} cycles in {wall:.0f} s "
                 f"({wall / max(n, 1):.2f} s/cycle)"]
        by = defaultdict(Counter)
        for r in self.results:
            key = r.kind.label if r.kind.what == "hook" else r.kind.what
            if r.kind.what == "hook":
                key += " +hrtimer" if r.kind.delay_us else " (in hook)"
            by[key][r.outcome] += 1
            by[key]["n"] += 1
        cols = ("n",) + OUTCOMES + ("plain",)
        lines.append(f"  {'kind':36}" + "".join(f"{c:>14}" for c in cols))
        for key in sorted(by):
            lines.append(f"  {key:36}" + "".join(f"{by[key][c]:>14}" for c in cols))
        modes = Counter((r.kind.what, r.kind.mode if r.kind.blocks else "-")
                        for r in self.results)
        lines.append("  cycles by kind: " + ", ".join(
            f"{w}{'/' + m if m != '-' else ''} {k}" for (w, m), k in sorted(modes.items())))
        delayed = sum(r.kind.what == "hook" and r.kind.delay_us > 0 for r in self.results)
        lines.append(f"  hooks in the hook's context {sum(r.kind.what == 'hook' for r in self.results) - delayed}, "
                     f"from an hrtimer 1-2000 us later {delayed}")
        attempts = sum(r.attempts for r in self.results)
        lines.append(f"  attempts judged {attempts}; stimuli while asleep "
                     f"{self.stimuli}, lost wakeups {len(self.lost_wakeups)}")
        if self.latencies:
            lat = sorted(self.latencies)
            p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
            lines.append(f"  resume latency (stimulus -> the guest's rehold line): "
                         f"p50 {statistics.median(lat) * 1000:.0f} ms, "
                         f"p99 {p99 * 1000:.0f} ms, max {lat[-1] * 1000:.0f} ms "
                         f"(n={len(lat)})")
        viol = self.violations()
        lines.append(f"  violations: {len(viol) or 'none'}")
        lines += [f"    {v}" for v in viol[:40]]
        return "\n".join(lines)

    def violations(self) -> list[str]:
        out = list(self.lost_wakeups) + sorted(set(self.splats))
        for r in self.results:
            out += [f"cycle {r.cycle} {r.kind}: {v}" for v in r.violations]
            if r.kind.blocks and r.outcome == "slept" and not (
                    self.s3 and r.kind.where == "machine_suspend"):
                out.append(f"cycle {r.cycle} {r.kind}: the attempt the blocker "
                           "was taken in slept")
        return out


def splat_summaries(text: str) -> list[str]:
    """One line per kernel report in ``text`` (kernel log lines, from
    ``grep -A``): its first line and the first frames of its call trace."""
    def clean(line: str) -> str:
        return re.sub(r"^(<\d+>)?\s*(\[[^]]*\]\s*)?", "", line).strip()
    out = []
    starts = r"(?=\n(?:<\d>)?\[[ .\d]+\] (?:WARNING:|BUG:|Oops|INFO: task))"
    for block in re.split(r"\n--\n|" + starts, "\n" + text.strip()):
        lines = [clean(ln) for ln in block.strip().splitlines()]
        if not lines or not re.match(r"WARNING:|BUG:|Oops|INFO: task", lines[0]):
            continue
        try:
            trace = lines[lines.index("Call Trace:") + 1:]
        except ValueError:
            trace = []
        frames = [ln.split("+0x")[0].lstrip("? ") for ln in trace
                  if re.search(r"\+0x[0-9a-f]+/0x", ln) and not ln.startswith("?")][:5]
        out.append(f"kernel: {lines[0]}" + (" <- " + " <- ".join(frames) if frames else ""))
    return out


def run(vm, cycles: int, seed: int | None = None, log=print) -> Campaign:
    """Run ``cycles`` cycles on ``vm``; returns the Campaign (figures,
    violations). ``log`` gets a line every 10 cycles."""
    seed = seed if seed is not None else int(time.time()) % 1000000
    camp = Campaign(vm, seed)
    try:
        camp.start()    # a failure half-way still needs stop()'s clean-up
        for i in range(cycles):
            r = camp.run_cycle(camp.pick())
            if (i + 1) % 10 == 0 and log:
                log(f"  {vm.arch}: cycle {i + 1}/{cycles}, last {r.kind.label} "
                    f"{r.kind.mode if r.kind.blocks else ''} -> {r.outcome} "
                    f"({r.seconds:.1f} s), violations so far {len(camp.violations())}")
    finally:
        camp.stop()
    return camp


__all__ = ["Campaign", "Kind", "run"]
