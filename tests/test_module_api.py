"""suspend_block.ko on a running target: interfaces and statistics.

Every test reloads the module (fresh statistics) on a VM shared per
architecture, and runs on amd64 and on armhf (arm ``virt``, the BeagleBone
stand-in). Suspend cycles are in test_module_suspend.py.
"""

from __future__ import annotations

import re

import pytest

import sbtarget as sb

# also on the amd64-debug guest (lockdep, KASAN, UBSAN, kmemleak)
pytestmark = pytest.mark.debug_kernel

MS = 1_000_000


@pytest.fixture
def target(vm):
    sb.reload(vm)
    yield vm
    vm.run("echo on > /sys/kernel/suspend_block/state 2>/dev/null; "
           "echo forced > /sys/kernel/suspend_block/policy 2>/dev/null; true")


# ---------------------------------------------------------------- debugfs --

def test_stats_table_has_the_seed_header_and_builtin_entries(target):
    text = target.run_ok(f"cat {sb.STATS}")
    assert text.replace("\r", "").split("\n")[0] == sb.STATS_HEADER
    st = sb.parse_stats(text)
    for name in sb.BUILTIN:
        assert name in st
    # the module loads as the seed boots: "main" active, mem requested
    assert st["main"].active and st["main"].count == 1
    assert not st["unknown_wakeups"].active
    assert st["deleted_suspend_blockers"].count == 0
    mode = target.run_ok(f"stat -c %a {sb.STATS}").strip()
    assert mode == "444"


def test_stats_arithmetic_for_a_user_blocker(target):
    # Hold the fd open across the read: run sbprobe in the background.
    bg = target.start_bg("sbprobe open init:stats-a block sleep:300 unblock "
                         "block sleep:100 unblock block sleep:50000")
    sb.wait_stats(target, lambda st: "stats-a" in st and st["stats-a"].count >= 3
                and st["stats-a"].active)
    st = sb.stats(target)["stats-a"]
    # two finished activations + the running one
    assert st.count == 3
    assert st.active_since > 0
    assert 300 * MS <= st.max_time < 5000 * MS
    finished = st.total_time - st.active_since
    assert 400 * MS <= finished < st.total_time
    assert st.wake_count == 0
    assert st.sleep_time == 0          # forced policy: never "preventing"
    bg.kill()
    bg.wait()
    # close destroyed it; its stats folded into deleted_suspend_blockers
    st2 = sb.stats(target)
    assert "stats-a" not in st2
    dele = st2["deleted_suspend_blockers"]
    assert dele.count == 3
    assert dele.total_time >= st.total_time
    assert dele.max_time >= st.max_time


def test_block_and_unblock_do_not_nest(target):
    out = sb.sbprobe_results(target, "open", "init:nest", "block", "block",
                             "block", "unblock", "waitline")
    assert out[:6] == ["rc=0"] * 6
    # one unblock after three blocks: inactive, one activation counted
    bg = target.start_bg("sbprobe open init:nest2 block block unblock "
                         "sleep:50000")
    sb.wait_stats(target, lambda st: "nest2" in st and st["nest2"].count == 1
                and not st["nest2"].active)
    bg.kill()
    bg.wait()


def test_blocker_lives_while_any_dup_of_its_fd_lives(target):
    bg = target.start_bg("sbprobe open init:dupd block dup sleep:50000")
    sb.wait_stats(target, lambda st: "dupd" in st and st["dupd"].active)
    bg.kill()
    bg.wait()
    assert "dupd" not in sb.stats(target)


# ----------------------------------------------------------------- ioctls --

@pytest.mark.parametrize("ops,want", [
    (["open", "init:a", "init:b"], ["rc=0", "rc=0", "errno=EBUSY"]),
    (["open", "initlen:x:256"], ["rc=0", "errno=ENAMETOOLONG"]),
    (["open", "initbad"], ["rc=0", "errno=EFAULT"]),
    (["open", "block"], ["rc=0", "errno=ENOENT"]),
    (["open", "unblock"], ["rc=0", "errno=ENOENT"]),
    (["open", "init:a", "badioctl"], ["rc=0", "rc=0", "errno=ENOTTY"]),
    # the seed: any ioctl but INIT on a file without a blocker is ENOENT
    (["open", "badioctl"], ["rc=0", "errno=ENOENT"]),
    (["open", "initlen:x:0"], ["rc=0", "errno=EINVAL"]),
], ids=["second-init-EBUSY", "long-name-ENAMETOOLONG", "bad-pointer-EFAULT",
        "block-before-init-ENOENT", "unblock-before-init-ENOENT",
        "unknown-ioctl-ENOTTY", "unknown-ioctl-before-init-ENOENT",
        "empty-name-EINVAL"])
def test_ioctl_errors(target, ops, want):
    assert sb.sbprobe_results(target, *ops) == want


@pytest.mark.parametrize("name", ["tab\\there", "new\\nline", 'quo\\"te',
                                  "back\\\\slash", "ctl\\x01", "del\\x7f",
                                  "hi\\xc3\\xa9"])
def test_names_that_would_corrupt_the_table_are_rejected(target, name):
    assert sb.sbprobe_results(target, "open", f"init:{name}") == \
        ["rc=0", "errno=EINVAL"]
    sb.parse_stats(target.run_ok(f"cat {sb.STATS}"))


def test_longest_name_and_spaces_are_accepted(target):
    name = "n" * 255
    assert sb.sbprobe_results(target, "open", f"init:{name}", "block",
                              "unblock") == ["rc=0"] * 4
    assert sb.sbprobe_results(target, "open", "init:with space") == \
        ["rc=0", "rc=0"]


def test_block_needs_cap_block_suspend(target):
    out = sb.sbprobe_results(target, "open", "dropcap", "init:nocap", "block",
                             "unblock")
    assert out == ["rc=0", "rc=0", "rc=0", "errno=EPERM", "rc=0"]


# ------------------------------------------------------------------ sysfs --

def test_policy_file(target):
    assert sb.sysfs(target, "policy") == "[forced] opportunistic"
    rc, out = sb.write_sysfs(target, "policy", "eager")
    assert rc != 0 and "Invalid argument" in out
    assert sb.write_sysfs(target, "policy", "opportunistic")[0] == 0
    assert sb.sysfs(target, "policy") == "forced [opportunistic]"
    assert sb.write_sysfs(target, "policy", "forced")[0] == 0
    assert sb.sysfs(target, "policy") == "[forced] opportunistic"


def test_state_file_follows_the_policy(target):
    power_state = target.run_ok("cat /sys/power/state").strip()
    # forced: exactly mainline's list
    assert sb.sysfs(target, "state") == power_state
    assert sb.sysfs(target, "requested") == "mem"
    sb.write_sysfs(target, "policy", "opportunistic")
    offered = sb.sysfs(target, "state").split()
    assert offered[0] == "on"
    assert offered[1:] == [s for s in power_state.split() if s != "disk"]
    rc, out = sb.write_sysfs(target, "state", "disk")
    assert rc != 0 and "Invalid argument" in out
    rc, out = sb.write_sysfs(target, "state", "hibernate")
    assert rc != 0 and "Invalid argument" in out
    for name in ("freeze", "standby", "mem"):
        if name not in power_state.split():
            rc, out = sb.write_sysfs(target, "state", name)
            assert rc != 0 and "No such device" in out, name
    assert sb.sysfs(target, "requested") == "mem"


def test_on_holds_main_and_leaving_opportunistic_requests_on(target):
    sb.write_sysfs(target, "policy", "opportunistic")
    # a user blocker keeps the system up while "main" is released
    bg = target.start_bg("sbprobe open init:keepup block sleep:60000")
    sb.wait_stats(target, lambda st: "keepup" in st and st["keepup"].active)
    assert sb.write_sysfs(target, "state", "mem")[0] == 0
    st = sb.stats(target)
    assert not st["main"].active
    assert sb.sysfs(target, "requested") == "mem"
    assert sb.write_sysfs(target, "policy", "forced")[0] == 0
    assert sb.sysfs(target, "requested") == "on"
    assert sb.stats(target)["main"].active
    bg.kill()
    bg.wait()


def test_sleep_time_accrues_only_while_suspend_is_requested(target):
    sb.write_sysfs(target, "policy", "opportunistic")
    bg = target.start_bg("sbprobe open init:sleepy block sleep:60000")
    sb.wait_stats(target, lambda st: "sleepy" in st and st["sleepy"].active)
    st = sb.stats(target)["sleepy"]
    assert st.sleep_time == 0          # "on" requested: nothing prevented
    sb.write_sysfs(target, "state", "mem")   # now it prevents suspend
    target.run_ok("usleep 300000")
    sb.write_sysfs(target, "state", "on")
    st = sb.stats(target)["sleepy"]
    assert 250 * MS <= st.sleep_time < st.total_time
    target.run_ok("usleep 200000")
    st2 = sb.stats(target)["sleepy"]
    assert st2.sleep_time == st.sleep_time   # "on" again: no more accrual
    bg.kill()
    bg.wait()


# -------------------------------------------------- kernel API via sb_test --

def test_block_from_hard_interrupt_context(target):
    sb.ctl(target, "block_after_ms 50")
    sb.wait_stats(target, lambda st: st["sb_test"].active)
    assert sb.ctl_state(target)["blocker"] == 1
    sb.ctl(target, "unblock_after_ms 10")
    sb.wait_stats(target, lambda st: not st["sb_test"].active
                and st["sb_test"].count == 1)
    assert "WARNING" not in target.dmesg()


def test_suspend_blocking_work_blocks_while_pending_or_running(target):
    sb.ctl(target, "work_queue 400")
    assert sb.ctl_state(target)["work_blocker"] == 1
    sb.wait_stats(target, lambda st: st["sb_test_work"].count == 1
                and not st["sb_test_work"].active, timeout=20)
    assert sb.ctl_state(target)["work_runs"] == 1
    assert sb.stats(target)["sb_test_work"].max_time >= 400 * MS
    # cancel while running waits for the callback, then releases
    sb.ctl(target, "work_schedule 300")
    sb.ctl(target, "work_cancel")
    state = sb.ctl_state(target)
    assert state["work_blocker"] == 0
    assert sb.stats(target)["sb_test_work"].count == 2


def test_suspend_is_blocked_is_false_outside_opportunistic_suspend(target):
    sb.ctl(target, "block")
    assert sb.ctl_state(target)["is_blocked"] == 0
    sb.ctl(target, "unblock")


# -------------------------------------------------------------- event log --

def test_event_log_records_blocks_with_boottime_stamps(target):
    before = sb.last_seq(target)
    t0 = int(float(target.run_ok("cat /proc/uptime").split()[0]) * 1e9)
    sb.sbprobe(target, "open", "init:ev-a", "block", "sleep:100", "unblock")
    evs = sb.events_after(target, before)
    mine = [e for e in evs if e.type in ("block", "unblock")
            and e.name == "ev-a"]
    assert [e.type for e in mine] == ["block", "unblock"]
    assert 100 * MS <= mine[1].t_ns - mine[0].t_ns < 3000 * MS
    # CLOCK_BOOTTIME, which /proc/uptime also counts from boot
    assert abs(mine[0].t_ns - t0) < 5_000 * MS
    seqs = [e.seq for e in sb.events(target)]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))


def test_event_log_names_are_quoted_and_long_ones_cut(target):
    long_name = "L" * 60
    sb.sbprobe(target, "open", f"init:{long_name}", "block", "unblock")
    ev = [e for e in sb.events(target) if e.type == "block"][-1]
    assert ev.arg == '"' + "L" * 52 + '"+'


def test_event_log_tells_same_named_blockers_apart_by_id(target):
    """Two blockers named "twin", interleaved (A blocks, B blocks, B
    unblocks, A unblocks): each block/unblock record carries its object's
    id, the two ids differ, each unblock has the id of its own block, and
    a blocker initialised again gets a new id. The statistics table stays
    the seed's: its header, one row of the seed's eight columns per object,
    no id in it."""
    before = sb.last_seq(target)
    bg_a = target.start_bg("sbprobe open init:twin block sleep:5000 unblock")
    sb.wait_stats(target, lambda st: "twin" in st and st["twin"].active)
    bg_b = target.start_bg("sbprobe open init:twin block sleep:200 unblock "
                           "sleep:6000")
    table = ""
    for _ in range(100):                # both objects in the table
        table = target.run_ok(f"cat {sb.STATS}")
        if table.count('"twin"\t') == 2:
            break
        target.run_ok("usleep 50000")
    assert bg_a.wait() == 0 and bg_b.wait() == 0
    sb.sbprobe(target, "open", "init:twin", "block", "unblock")
    mine = [e for e in sb.events_after(target, before)
            if e.type in ("block", "unblock") and e.name == "twin"]
    assert [e.type for e in mine] == ["block", "block", "unblock", "unblock",
                                      "block", "unblock"]
    a, b, c = mine[0].obj, mine[1].obj, mine[4].obj
    assert None not in (a, b, c) and len({a, b, c}) == 3
    assert a < b < c                    # counted up, never reused
    assert [e.obj for e in mine] == [a, b, b, a, c, c]
    # the id is an object's number, not an address: other blockers have
    # their own small ones (main was initialised at load)
    main = [e.obj for e in sb.events(target) if e.name == "main"]
    assert main and all(0 < m < a for m in main)
    # the table: exactly the seed's format, one row per object
    lines = table.replace("\r", "").rstrip("\n").split("\n")
    assert lines[0] == sb.STATS_HEADER
    assert all(sb._STAT_RE.match(line) for line in lines[1:]), lines
    assert [line.split("\t")[0] for line in lines].count('"twin"') == 2
    assert all(line.count("\t") == 7 for line in lines)


def test_event_log_reports_lost_records_to_a_slow_reader(vm):
    sb.reload(vm, event_log_size=64)
    bg = vm.start_bg("evread drain sleep:4000 drain")
    # the first drain has read the load-time records ("main" blocked)
    bg.wait_output('block."main"', timeout=20)
    sb.ctl(vm, "bench 128")           # 256 block/unblock records meanwhile
    assert bg.wait() == 0
    evs = sb.parse_events(bg.output())
    lost = [e for e in evs if e.type == "lost"]
    assert len(lost) == 1
    n = int(lost[0].arg)
    after = evs[evs.index(lost[0]) + 1]
    assert after.seq == lost[0].seq + n
    # the ring holds 64: the reader gets exactly the last 64 after the gap
    assert len(evs) - evs.index(lost[0]) - 1 == 64
    sb.reload(vm)


def test_event_log_poll_and_nonblocking_read(target):
    out = target.run_ok("evread drain poll", timeout=30)
    assert out.strip().endswith("poll=0")
    bg = target.start_bg("evread -p 10000 drain poll")
    target.run_ok("usleep 300000")
    sb.ctl(target, "block")
    assert bg.wait() == 0
    assert bg.output().strip().endswith("poll=1")
    sb.ctl(target, "unblock")
    out = target.run_ok("evread -b 64 small")
    assert out.strip() == "errno=22"     # smaller than one line: EINVAL


# ----------------------------------------------------------------- unload --

def test_unload_refused_while_a_blocker_fd_is_open(target):
    bg = target.start_bg("sbprobe open init:pinned block sleep:60000")
    sb.wait_stats(target, lambda st: "pinned" in st)
    target.run_ok("rmmod sb_test")
    assert int(target.run_ok("cat /sys/module/suspend_block/refcnt")) >= 1
    rc, out = target.run("rmmod suspend_block")
    # busybox rmmod asks O_NONBLOCK: EAGAIN while the module is in use
    assert rc != 0 and "Resource temporarily unavailable" in out
    assert "pinned" in sb.stats(target)
    bg.kill()
    bg.wait()
    target.run_ok("rmmod suspend_block")
    assert target.run("test -e /dev/suspend_blocker")[0] != 0
    assert "BUG" not in target.dmesg() and "WARNING" not in target.dmesg()
    sb.reload(target)


def test_unload_while_worker_waits_for_a_mainline_wakeup_source(target):
    """The worker blocks reading /sys/power/wakeup_count while an
    EPOLLWAKEUP wakeup source (mainline code, not ours) is active: no
    suspend happens, and unloading interrupts the worker promptly."""
    bg = target.start_bg("epwake 8000")
    bg.wait_output("held", timeout=20)
    sb.write_sysfs(target, "policy", "opportunistic")
    sb.write_sysfs(target, "state", "mem")
    target.run_ok("usleep 500000")
    assert [e for e in sb.events(target) if e.type == "suspend"] == []
    target.run_ok("rmmod sb_test; rmmod suspend_block", timeout=10)
    assert bg.running, "the EPOLLWAKEUP holder should outlive the unload"
    assert bg.wait(timeout=30) == 0
    dmesg = target.dmesg()
    assert "BUG" not in dmesg and "WARNING" not in dmesg
    sb.reload(target)


# ------------------------------------------------------------------ sbctl --

def test_debug_mask_chooses_what_is_logged(target):
    """Documentation/suspend-block.rst, "Module parameters": debug_mask
    (0644: root writes it) 16 logs every blocker operation, 32 (on by
    default) the failed ioctls, rate-limited so that no user floods the
    log; 0 logs neither."""
    vm = target
    param = "/sys/module/suspend_block/parameters/debug_mask"
    assert vm.run_ok(f"stat -c %a {param}").strip() == "644"
    default = int(vm.run_ok(f"cat {param}"))
    assert default & 32 and not default & 16, default

    def logged(mask: int, *ops: str) -> list[str]:
        vm.run_ok(f"echo {mask} > {param}")
        dm = len(vm.dmesg())
        sb.sbprobe_results(vm, *ops)
        return [l for l in vm.dmesg()[dm:].splitlines() if l.strip()]

    # BLOCK before INIT fails with ENOENT (-2)
    lines = logged(32, "open", "block")
    assert any(re.search(r"ioctl: cmd [0-9a-f]+ failed, -2$", l) for l in lines), lines
    assert logged(0, "open", "block", "open", "init:dbg-quiet", "block",
                  "unblock") == []
    lines = logged(16, "open", "init:dbg-ops", "block", "unblock", "block")
    assert [l for l in lines if "ioctl: cmd" in l] == [], lines     # 32 off
    ops = [l for l in lines if "dbg-ops" in l]
    assert any("suspend_block: dbg-ops" in l for l in ops) and \
        any("suspend_unblock: dbg-ops" in l for l in ops), lines
    # 300 failures in a row: a handful of lines, the rest suppressed
    lines = logged(32, "open", *["block"] * 300)
    failed = [l for l in lines if "ioctl: cmd" in l]
    assert 1 <= len(failed) <= 20, len(failed)
    vm.run_ok(f"echo {default} > {param}")


def test_sbctl_on_the_target(target):
    out = target.run_ok(f"sbctl hold cli-hold -- cat {sb.STATS}")
    st = sb.parse_stats(out)
    assert st["cli-hold"].active
    assert "cli-hold" not in sb.stats(target)       # released on exit
    listing = target.run_ok("sbctl list --active")
    assert "main" in listing and "unknown_wakeups" not in listing
    target.run_ok("sbctl policy opportunistic")
    assert sb.sysfs(target, "policy") == "forced [opportunistic]"
    rc, _ = target.run("sbctl policy sometimes")
    assert rc == 2
    assert target.run("sbctl hold code-x -- sh -c 'exit 5'")[0] == 5
