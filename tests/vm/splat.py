"""Kernel splats in a guest's console: lockdep, KASAN, UBSAN, WARN, BUG,
Oops, list corruption, debug-objects, hung tasks, RCU stalls, ...

``find_splats(text)`` reads the kernel log lines of a stretch of raw
console text (a kernel console line is ``[ seconds] text\\r\\n``; the
shell's own lines end in ``\\n`` only, see tests/vm/qemu.py, so a ``dmesg``
printed by a test is not mistaken for a new splat) and returns one
:class:`Splat` per report: its first line (what ``expect_splat`` regexes
are matched against) and the report's lines that follow.

tests/conftest.py fails the test during which a splat appeared (every
guest of every arch), unless the test declared it with
``@pytest.mark.expect_splat(r"regex")``; tests/vm/README.md has the rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: Kernel console line: timestamp, optional caller id, text.
KMSG_LINE = re.compile(r"\[\s*(\d+\.\d+)\](?:\[\s*[TC]\d+\])? ([^\r\n]*)\r\n")

#: The first line of a report, by kind. Order matters only for the kind
#: named; any match starts a splat.
TRIGGERS: list[tuple[str, re.Pattern]] = [(kind, re.compile(rx)) for kind, rx in [
    # KASAN ("BUG: KASAN: slab-use-after-free in ..."), lockdep's "BUG:
    # Invalid wait context" (PROVE_RAW_LOCK_NESTING), "BUG: sleeping
    # function called from invalid context", "BUG: scheduling while
    # atomic", "BUG: kernel NULL pointer dereference", "BUG: unable to
    # handle page fault", "BUG: spinlock ...", "BUG: TASK stack guard
    # page was hit", "BUG: MAX_LOCKDEP_... too low!"
    ("kasan", r"\bBUG: KASAN: "),
    ("bug", r"\bBUG: "),
    # SLUB's own consistency checks: "BUG kmalloc-64 (Tainted: ...): ..."
    ("slub", r"^=*\s*BUG [\w-]+ \((?:Not t|T)ainted"),
    ("bug", r"\bkernel BUG at "),
    # WARN*() ("WARNING: CPU: 0 PID: 1 at file:line func+0x..") and
    # lockdep ("WARNING: possible circular locking dependency detected",
    # "WARNING: possible recursive locking detected", "WARNING:
    # inconsistent lock state", "WARNING: suspicious RCU usage", ...)
    ("warning", r"\bWARNING: "),
    # hung tasks ("INFO: task x:1 blocked for more than 120 seconds."),
    # RCU stalls ("rcu: INFO: rcu_preempt detected stalls"), older
    # lockdep headers ("INFO: possible recursive locking detected")
    ("info", r"\bINFO: (?!lockdep is turned off)"),
    ("ubsan", r"\bUBSAN: "),
    ("oops", r"\bgeneral protection fault\b"),
    ("oops", r"\bOops\b"),
    ("oops", r"\bInternal error: "),               # arm
    ("oops", r"\bUnable to handle kernel "),       # arm
    ("panic", r"\bKernel panic - not syncing"),
    ("refcount", r"\brefcount_t: "),
    ("list", r"\blist_(?:add|del)(?:_\w+)? corruption\b"),
    ("list", r"\bLIST_POISON\b"),
    ("debugobjects", r"\bODEBUG: "),
    # kmemleak's own report is read from its debugfs file (tests/conftest.py),
    # not from "kmemleak: N new suspected memory leaks" on the console
    ("page", r"\bBad page (?:state|map)\b"),
    ("stack", r"\bstack-protector: Kernel stack is corrupted"),
    ("rcu", r"\brcu_\w+ (?:self-)?detected (?:stall|expedited stall)"),
]]

#: A stack dump with no report header before it (dump_stack(), a hung
#: task's or an unknown checker's) is a splat of its own.
STACK_DUMP = re.compile(r"\bCall [Tt]race:|^\s*Backtrace:")
#: How many kernel lines after a header still belong to its report (a
#: lockdep report with two stacks and the held locks is ~80 lines).
REPORT_LINES = 120
#: Lines of a report kept for the test's failure message.
SHOW_LINES = 60
#: Lines that end a report (and, for KASAN and UBSAN, a line of "=").
REPORT_END = re.compile(r"---\[ end (?:trace|Kernel panic)")


@dataclass
class Splat:
    kind: str
    first: str                      # the header line (no timestamp)
    lines: list[str] = field(default_factory=list)   # header + report
    time: str = ""                  # the header's timestamp (seconds)

    def text(self, limit: int = SHOW_LINES) -> str:
        shown = self.lines[:limit]
        more = len(self.lines) - len(shown)
        return "\n".join(shown) + (f"\n... ({more} more lines)" if more > 0 else "")

    def matches(self, patterns) -> bool:
        """One of the regexes matches the header line (re.search)."""
        return any(re.search(p, self.first) for p in patterns)


def kernel_lines(text: str) -> list[tuple[str, str]]:
    """(timestamp, text) of each kernel console line in raw console text."""
    return [(m.group(1), m.group(2)) for m in KMSG_LINE.finditer(text)]


def _trigger(line: str) -> str | None:
    for kind, rx in TRIGGERS:
        if rx.search(line):
            return kind
    return None


def find_splats(text: str) -> list[Splat]:
    """Every report in ``text`` (raw console text), in order."""
    splats: list[Splat] = []
    cur: Splat | None = None
    left = 0                        # lines the current report may still have
    stacked = False                 # its stack dump ended (x86 "</TASK>")
    for ts, line in kernel_lines(text):
        kind = _trigger(line)
        # a header inside a report (the Oops after "BUG: unable to handle",
        # "KASAN: null-ptr-deref" in a general protection fault) belongs to
        # it; after the report's stack dump ended, a header or a stack dump
        # is a new report
        open_ = cur is not None and left > 0 and not stacked
        if kind and not open_:
            cur = Splat(kind, line, [f"[{ts}] {line}"], ts)
            splats.append(cur)
            left, stacked = REPORT_LINES, False
            continue
        if not open_ and STACK_DUMP.search(line):
            cur = Splat("stack", line, [f"[{ts}] {line}"], ts)
            splats.append(cur)
            left, stacked = REPORT_LINES, False
            continue
        if cur is None or left <= 0:
            continue
        cur.lines.append(f"[{ts}] {line}")
        left -= 1
        if line.strip() == "</TASK>":
            stacked = True
        if REPORT_END.search(line) or (cur.kind in ("kasan", "ubsan")
                                       and re.fullmatch(r"={20,}", line.strip())):
            left = 0                # KASAN and UBSAN reports end with a ==== line
    return splats


def unexpected(splats: list[Splat], patterns) -> tuple[list[Splat], list[Splat]]:
    """Split ``splats`` into (unexpected, expected by ``patterns``)."""
    bad = [s for s in splats if not s.matches(patterns)]
    ok = [s for s in splats if s.matches(patterns)]
    return bad, ok


def describe(splats: list[Splat], where: str) -> str:
    """A failure message: how many reports, each one's text."""
    head = (f"{len(splats)} kernel splat(s) on {where} during this test "
            f"(declare an expected one with @pytest.mark.expect_splat(r'regex')):")
    return "\n\n".join([head] + [s.text() for s in splats])
