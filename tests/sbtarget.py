"""Talking to suspend_block.ko on a test VM: parsers and small helpers.

The parsers are strict: a line that does not have the documented shape
raises ValueError naming the line, so a format regression fails the tests
instead of being skipped over.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

SYSFS = "/sys/kernel/suspend_block"
STATS = "/sys/kernel/debug/suspend_blockers"
EVENTS = "/sys/kernel/debug/suspend_blocker_events"
CTL = "/sys/kernel/debug/sb_test/ctl"
REFUSE = "/sys/kernel/debug/sb_test/refuse"

STATS_HEADER = ("name\tcount\twake_count\tactive_since\ttotal_time\t"
                "sleep_time\tmax_time\tlast_change")
BUILTIN = ("main", "unknown_wakeups", "deleted_suspend_blockers")
EBUSY = 16


@dataclass(frozen=True)
class Stat:
    name: str
    count: int
    wake_count: int
    active_since: int
    total_time: int
    sleep_time: int
    max_time: int
    last_change: int

    @property
    def active(self) -> bool:
        return self.active_since > 0


_STAT_RE = re.compile(r'^"([^"\t\n]*)"\t(\d+)\t(\d+)\t(-?\d+)\t(-?\d+)\t(-?\d+)'
                      r'\t(-?\d+)\t(-?\d+)$')


def parse_stats(text: str) -> dict[str, Stat]:
    """Parse debugfs suspend_blockers; the header must be exactly the
    seed's. Names must be unique (the tests create unique names)."""
    lines = text.replace("\r", "").rstrip("\n").split("\n")
    if lines[0] != STATS_HEADER:
        raise ValueError(f"stats header is {lines[0]!r}, want {STATS_HEADER!r}")
    out: dict[str, Stat] = {}
    for no, line in enumerate(lines[1:], 2):
        m = _STAT_RE.match(line)
        if not m:
            raise ValueError(f"stats line {no} malformed: {line!r}")
        name = m.group(1)
        if name in out:
            raise ValueError(f"stats line {no}: duplicate name {name!r}")
        out[name] = Stat(name, *map(int, m.groups()[1:]))
    return out


@dataclass(frozen=True)
class Event:
    seq: int
    t_ns: int
    type: str
    arg: str
    #: block/unblock: the blocker object's id (the log line's fifth field;
    #: None in a log written before the module had it)
    obj: int | None = None

    @property
    def name(self) -> str:
        """The blocker or wakeup source name of a block/unblock or
        ws_activate/ws_relax record (quotes removed)."""
        return self.arg.strip('"').rstrip('"+')


EVENT_TYPES = {"block", "unblock", "suspend", "enter", "exit", "resume",
               "abort", "policy", "lost",
               # the kernel's own activity (kevents.c)
               "ws_activate", "ws_relax", "phase", "dev_pm"}
#: records whose argument is a quoted name
QUOTED_TYPES = {"block", "unblock", "ws_activate", "ws_relax"}
#: records that end in the blocker object's id (suspend-block.rst: ID)
OBJ_TYPES = {"block", "unblock"}
_EVENT_RE = re.compile(r"^(\d+)\t(\d+)\t([a-z_]+)\t(.*)$")


def parse_events(text: str) -> list[Event]:
    out = []
    for no, line in enumerate(text.replace("\r", "").splitlines(), 1):
        m = _EVENT_RE.match(line)
        if not m or m.group(3) not in EVENT_TYPES:
            raise ValueError(f"event line {no} malformed: {line!r}")
        arg, obj = m.group(4), None
        if m.group(3) in OBJ_TYPES:
            o = re.fullmatch(r'("[^"]*"\+?)\t([1-9]\d*)', arg)
            if not o:
                raise ValueError(f"event line {no}: no quoted name and id: {line!r}")
            arg, obj = o.group(1), int(o.group(2))
        ev = Event(int(m.group(1)), int(m.group(2)), m.group(3), arg, obj)
        if ev.type in QUOTED_TYPES and not re.fullmatch(r'"[^"]*"\+?', ev.arg):
            raise ValueError(f"event line {no}: name not quoted: {line!r}")
        out.append(ev)
    return out


def stats(vm) -> dict[str, Stat]:
    return parse_stats(vm.run_ok(f"cat {STATS}"))


def events(vm) -> list[Event]:
    """Every record the log still holds (a fresh reader, drained)."""
    return parse_events(vm.run_ok("evread drain"))


def events_after(vm, seq: int) -> list[Event]:
    return [e for e in events(vm) if e.seq > seq]


def settled_events(vm, seq: int, timeout: float = 15.0) -> list[Event]:
    """events_after(), once every ``suspend`` record has its ``resume`` or
    ``abort``: the worker logs the return of pm_suspend() after user space
    has been thawed, so a shell woken by the resume can read the log first."""
    import time
    end = time.monotonic() + timeout
    while True:
        evs = events_after(vm, seq)
        kinds = [e.type for e in evs]
        if kinds.count("suspend") == kinds.count("resume") + kinds.count("abort"):
            return evs
        if time.monotonic() > end:
            raise AssertionError(f"a suspend without its return: {evs}")
        vm.run_ok("usleep 50000")


def last_seq(vm) -> int:
    evs = events(vm)
    return evs[-1].seq if evs else -1


def ctl(vm, cmd: str) -> None:
    vm.run_ok(f"echo {shlex.quote(cmd)} > {CTL}")


def ctl_state(vm) -> dict[str, int]:
    out = {}
    for line in vm.run_ok(f"cat {CTL}").splitlines():
        key, _, val = line.strip().partition(" ")
        out[key] = int(val)
    return out


def sysfs(vm, name: str) -> str:
    return vm.run_ok(f"cat {SYSFS}/{name}").strip()


def write_sysfs(vm, name: str, value: str) -> tuple[int, str]:
    """Write with the shell; returns (exit code, output). busybox prints
    'write error: <strerror>' on failure."""
    return vm.run(f"echo {shlex.quote(value)} > {SYSFS}/{name}")


def reload(vm, test_module: bool = True, **params) -> None:
    """Fresh statistics: unload both modules (if loaded; and the other
    clients of suspend_block, which a failed test may have left) and load
    them."""
    vm.run("rmmod sb_test 2>/dev/null; rmmod sb_torture 2>/dev/null; "
           "rmmod sb_campaign 2>/dev/null; rmmod suspend_block 2>/dev/null; true")
    vm.load_module("suspend_block", **params)
    if test_module:
        vm.load_module("sb_test")
    wait_quiet_log(vm)


def wait_quiet_log(vm, quiet_ms: int = 300, timeout: float = 15.0) -> None:
    """Return once the event log has had no new record for @quiet_ms.
    Loading leaves work behind: power_supply_register() announces
    sb_test_supply from a deferred work item ~20 ms later (its wakeup
    source's activate/deactivate records), which must not land in the
    next test's log."""
    import time
    end = time.monotonic() + timeout
    while not vm.run_ok(f"evread -p {quiet_ms} drain poll", timeout=30).strip().endswith("poll=0"):
        if time.monotonic() > end:
            raise AssertionError(f"the event log is not quiet for {quiet_ms} ms after {timeout} s")


def sbprobe(vm, *ops: str, timeout: float = 30) -> list[tuple[str, str]]:
    """Run sbprobe; returns [(op, "rc=0" | "errno=ENAME"), ...]."""
    out = vm.run_ok("sbprobe " + " ".join(shlex.quote(o) for o in ops),
                    timeout=timeout)
    res = []
    for line in out.replace("\r", "").splitlines():
        op, _, result = line.rpartition(" ")
        res.append((op, result))
    return res


def sbprobe_results(vm, *ops: str) -> list[str]:
    return [r for _, r in sbprobe(vm, *ops)]


def wait_stats(vm, cond, timeout: float = 15.0) -> dict[str, Stat]:
    """Poll the statistics until cond(stats) holds (an observable state,
    with a timeout; no fixed sleeps). Returns the stats that satisfied it."""
    import time
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        last = stats(vm)
        if cond(last):
            return last
        vm.run_ok("usleep 50000")
    raise AssertionError(f"condition not met within {timeout}s; stats: {last}")
