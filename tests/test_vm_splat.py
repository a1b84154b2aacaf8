"""The harness's kernel-splat reader (tests/vm/splat.py) and the debug
kernel's config fragment checks (tests/vm/debugkernel.py), on the host:
no guest, no kernel build."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.vm import debugkernel, splat


def console(*lines: str, shell: str = "") -> str:
    """Raw console text: kernel lines end in \\r\\n, shell lines in \\n."""
    out = "".join(f"[{10 + i * 0.001:12.6f}] {line}\r\n" for i, line in enumerate(lines))
    return shell + out


WARN = [
    "------------[ cut here ]------------",
    "WARNING: CPU: 0 PID: 96 at kernel-module/core.c:211 suspend_blocker_init+0x1c5/0x2a0 [suspend_block]",
    "Modules linked in: sb_test(O) suspend_block(O)",
    "CPU: 0 PID: 96 Comm: sh Tainted: G           O       6.1.192-sbrig-debug #1",
    "RIP: 0010:suspend_blocker_init+0x1c5/0x2a0 [suspend_block]",
    "Call Trace:",
    " <TASK>",
    " ctl_write+0x2e1/0x700 [sb_test]",
    " </TASK>",
    "---[ end trace 0000000000000000 ]---",
]

LOCKDEP = [
    "",
    "============================================",
    "WARNING: possible recursive locking detected",
    "6.1.192-sbrig-debug #1 Tainted: G           O      ",
    "--------------------------------------------",
    "sh/46 is trying to acquire lock:",
    "ffff888006880430 (sb_writers#7){.+.+}-{0:0}, at: path_openat+0xb5a/0xf00",
    "stack backtrace:",
    "Call Trace:",
    " <TASK>",
    " state_store+0x18e/0x1e0 [suspend_block]",
    " </TASK>",
]

KASAN = [
    "==================================================================",
    "BUG: KASAN: slab-use-after-free in sb_unblock+0x2d/0x90 [suspend_block]",
    "Read of size 8 at addr ffff888006a1c2a8 by task sbprobe/120",
    "Call Trace:",
    " <TASK>",
    " </TASK>",
    "==================================================================",
]


def test_quiet_console_has_no_splat():
    text = console("Linux version 6.1.192-sbrig-debug", "ACPI: PM: Preparing to enter "
                   "system sleep state S3", "PM: suspend exit",
                   "INFO: lockdep is turned off.")
    assert splat.find_splats(text) == []


def test_warn_is_one_splat_with_its_report():
    found = splat.find_splats(console("booting", *WARN, "after"))
    assert [s.kind for s in found] == ["warning"]
    assert found[0].first.startswith("WARNING: CPU: 0 PID: 96 at kernel-module/core.c")
    assert "Call Trace:" in found[0].text() and "end trace" in found[0].text()
    assert "after" not in found[0].text()


def test_lockdep_kasan_and_a_bare_stack_dump_are_three_splats():
    bare = ["CPU: 1 PID: 7 Comm: kworker", "Call Trace:", " <TASK>", " </TASK>"]
    # a report is up to REPORT_LINES long: pad between them
    pad = ["x"] * (splat.REPORT_LINES + 1)
    found = splat.find_splats(console(*LOCKDEP, *pad, *KASAN, "y", *bare))
    assert [s.kind for s in found] == ["warning", "kasan", "stack"]
    assert found[0].first == "WARNING: possible recursive locking detected"
    assert "state_store" in found[0].text()
    assert found[1].first.startswith("BUG: KASAN: slab-use-after-free in sb_unblock")


def test_a_report_right_after_another_ones_stack_is_its_own():
    """Lockdep's report ends with its stack (</TASK>): a WARN printed just
    after it is a second report, not part of the first."""
    found = splat.find_splats(console(*LOCKDEP, *WARN))
    assert [s.kind for s in found] == ["warning", "warning"]
    assert found[1].first.startswith("WARNING: CPU: 0 PID: 96")
    assert "Call Trace:" in found[1].text()


def test_an_oops_after_bug_is_one_report():
    oops = ["BUG: kernel NULL pointer dereference, address: 0000000000000008",
            "#PF: supervisor read access in kernel mode",
            "Oops: 0000 [#1] PREEMPT SMP KASAN", "Call Trace:", " <TASK>",
            " sb_unblock+0x2d/0x90 [suspend_block]", " </TASK>",
            "Modules linked in: suspend_block(O)", "---[ end trace 0000000000000000 ]---"]
    found = splat.find_splats(console(*oops))
    assert [s.kind for s in found] == ["bug"]
    assert "Modules linked in" in found[0].text()


@pytest.mark.parametrize("line,kind", [
    ("BUG: sleeping function called from invalid context at kernel/locking/mutex.c:580", "bug"),
    ("BUG: Invalid wait context", "bug"),
    ("UBSAN: shift-out-of-bounds in kernel-module/stats.c:12:3", "ubsan"),
    ("general protection fault, probably for non-canonical address 0xdffffc0000000001: 0000 [#1] PREEMPT SMP KASAN", "oops"),
    ("ODEBUG: free active (active state 0) object type: timer_list hint: sb_timeout+0x0/0x40", "debugobjects"),
    ("list_add corruption. prev->next should be next (ffff888006a1c2a8), but was 0000000000000000.", "list"),
    ("refcount_t: underflow; use-after-free.", "refcount"),
    ("INFO: task sbprobe:120 blocked for more than 120 seconds.", "info"),
    ("rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:", "info"),
    ("kernel BUG at kernel-module/core.c:99!", "bug"),
    ("Internal error: Oops: 5 [#1] SMP ARM", "oops"),
    ("Kernel panic - not syncing: Fatal exception", "panic"),
    ("BUG kmalloc-64 (Tainted: G    B      O      ): Redzone overwritten", "slub"),
])
def test_every_kind_of_report_is_a_splat(line, kind):
    found = splat.find_splats(console("before", line, "after"))
    assert [s.kind for s in found] == [kind]


def test_shell_output_is_not_a_new_splat():
    """A test's `dmesg` goes through the shell: its lines end in \\n."""
    shell = "SBB_1\n[   24.08] WARNING: CPU: 0 PID: 96 at x.c:1 f+0x0/0x1\n\nSBE_1 0\n"
    assert splat.find_splats(console("quiet", shell=shell)) == []


def test_expected_splats_are_split_off_by_their_first_line():
    found = splat.find_splats(console(*WARN, *(["x"] * 200), *KASAN))
    bad, ok = splat.unexpected(found, [r"WARNING: .*suspend_blocker_init"])
    assert [s.kind for s in ok] == ["warning"]
    assert [s.kind for s in bad] == ["kasan"]
    msg = splat.describe(bad, "amd64-debug")
    assert msg.startswith("1 kernel splat(s) on amd64-debug") and "sb_unblock" in msg


# ---------------------------------------------------------- config fragment --

def test_fragment_options_parse_and_are_each_documented():
    """Every option line of debug-kernel.config has a comment saying why
    right above it (or above the group of options it belongs to)."""
    text = debugkernel.FRAGMENT.read_text()
    opts = debugkernel.fragment_options()
    for name in ("CONFIG_KASAN", "CONFIG_PROVE_LOCKING", "CONFIG_PROVE_RAW_LOCK_NESTING",
                 "CONFIG_DEBUG_ATOMIC_SLEEP", "CONFIG_DEBUG_OBJECTS",
                 "CONFIG_DEBUG_OBJECTS_WORK", "CONFIG_DEBUG_OBJECTS_TIMERS",
                 "CONFIG_UBSAN", "CONFIG_DEBUG_KMEMLEAK", "CONFIG_DEBUG_LIST",
                 "CONFIG_GPIO_SIM", "CONFIG_TEST_POWER", "CONFIG_SUSPEND"):
        assert opts[name] in ("y", "m"), name
    assert opts["CONFIG_DEBUG_KMEMLEAK_AUTO_SCAN"] == "n"
    assert opts["CONFIG_GPIO_SIM"] == opts["CONFIG_TEST_POWER"] == "m"
    group_documented = False
    for no, line in enumerate(text.splitlines(), 1):
        if line.startswith("# ---") or not line.strip():
            group_documented = False
        elif line.startswith("#") and not re.match(r"# CONFIG_\w+ is not set", line):
            group_documented = True
        else:
            assert group_documented, f"debug-kernel.config:{no}: {line} has no comment"


def test_fragment_parser_refuses_what_kconfig_would_ignore(tmp_path: Path):
    bad = tmp_path / "f.config"
    bad.write_text("# why\nCONFIG_A=y\nCONFIG_A=m\n")
    with pytest.raises(debugkernel.BuildError, match="CONFIG_A given twice"):
        debugkernel.fragment_options(bad)
    bad.write_text("# why\nKASAN=y\n")
    with pytest.raises(debugkernel.BuildError, match="not an option line"):
        debugkernel.fragment_options(bad)
    bad.write_text("# why\n#CONFIG_A is not set\n")
    with pytest.raises(debugkernel.BuildError, match="is not set' exactly"):
        debugkernel.fragment_options(bad)


def test_an_option_that_did_not_stick_is_named():
    wanted = {"CONFIG_KASAN": "y", "CONFIG_GPIO_SIM": "m",
              "CONFIG_DEBUG_KMEMLEAK_AUTO_SCAN": "n", "CONFIG_LOG_BUF_SHIFT": "18"}
    config = {"CONFIG_GPIO_SIM": "y", "CONFIG_DEBUG_KMEMLEAK_AUTO_SCAN": "n",
              "CONFIG_LOG_BUF_SHIFT": "18"}
    bad = debugkernel.check_config(wanted, config)
    assert len(bad) == 2
    assert bad[0].startswith("CONFIG_KASAN: the fragment asks for =y, the final .config "
                             "has not set")
    assert bad[1].startswith("CONFIG_GPIO_SIM: the fragment asks for =m, the final "
                             ".config has =y")


def test_cache_key_follows_fragment_source_and_compiler():
    base = {"fragment_sha256": "a" * 64, "source": "linux-source-6.1 6.1.192-3",
            "gcc": "gcc (Debian 12.2.0-14+deb12u1) 12.2.0", "base": "allnoconfig",
            "recipe": 1}
    key = debugkernel.cache_key(base)
    assert key.startswith("6.1.192-3-")
    for field, value in [("fragment_sha256", "b" * 64),
                         ("source", "linux-source-6.1 6.1.193-1"),
                         ("gcc", "gcc (Debian 12.2.0-15) 12.2.0"), ("recipe", 2)]:
        assert debugkernel.cache_key(dict(base, **{field: value})) != key, field
    assert debugkernel.cache_key(dict(base)) == key
