"""Smoke tests of the QEMU harness itself (tests/vm/): boot, shell protocol,
module loading, and the sleep/wake paths the module tests rely on."""

from __future__ import annotations

import re
import time

import pytest

from tests.vm import splat
from tests.vm.qemu import KmsgFilter


def test_kmsg_filter_splits_kernel_lines():
    """Kernel console lines ("\\r\\n") are removed, even mid-line and split
    across reads; shell lines ("\\n") that look alike are kept."""
    f = KmsgFilter()
    chunks = ["out[   1.000001] PM: suspend ", "entry (deep)\r\nput\n",
              "[   2.000000] fake, from dmesg\n", "[   3.0", "00000] x\r\n"]
    clean, kmsg = "", []
    for c in chunks:
        t, k = f.feed(c)
        clean += t
        kmsg += k
    assert clean == "output\n[   2.000000] fake, from dmesg\n"
    assert kmsg == ["[   1.000001] PM: suspend entry (deep)", "[   3.000000] x"]


def test_uname_matches_fetched_kernel(vm):
    rc, out = vm.run("uname -r")
    assert rc == 0
    k = vm.artifacts.kernel
    assert out.strip() == k.kver
    assert out.startswith(k.abi + "-")


def test_shell_protocol(vm):
    assert vm.run("echo out; echo err >&2; exit_code() { return 3; }; exit_code") \
        == (3, "out\nerr\n")
    assert vm.run("printf 'no newline'") == (0, "no newline")
    data = bytes(range(256)) * 8
    vm.write_file("/tmp/smoke.bin", data)
    assert vm.read_file("/tmp/smoke.bin", binary=True) == data
    bg = vm.start_bg("echo started; sleep 0.5; exit 4")
    assert bg.wait_output("^start", 30) == "started\n"
    assert bg.wait(30) == 4
    assert not bg.running
    assert bg.output() == "started\n"
    bg = vm.start_bg("sleep 100")
    assert bg.running
    bg.kill()
    assert bg.wait(30) == 143  # 128 + SIGTERM


def test_static_programs_installed(vm):
    for prog in vm.artifacts.programs:
        assert vm.run(f"test -x /usr/bin/{prog.name}")[0] == 0, prog.name


def test_hello_module_loads(vm):
    mark = vm.console_mark()
    vm.load_module("sbrig_hello", greeting=1234)
    try:
        vm.wait_console(r"sbrig_hello: loaded, greeting=1234", 10, since=mark)
        assert vm.read_file("/sys/module/sbrig_hello/parameters/greeting") == "1234\n"
    finally:
        vm.unload_module("sbrig_hello")


@pytest.mark.debug_kernel
@pytest.mark.expect_splat(r"WARNING: .*sbrig_hello_init")
def test_a_kernel_warning_is_seen_as_a_splat(vm):
    """The splat check reads this guest's console: the WARN sbrig_hello
    prints at load on request is found (and declared, so this passes)."""
    mark = vm.console_mark()
    vm.load_module("sbrig_hello", warn=1)
    try:
        vm.wait_console(r"---\[ end trace", 30, since=mark)
        found = splat.find_splats(vm.console_text(mark))
        assert [s.kind for s in found] == ["warning"], [s.text() for s in found]
        assert "sbrig_hello_init" in found[0].first
    finally:
        vm.unload_module("sbrig_hello")


@pytest.mark.debug_kernel
@pytest.mark.arch("amd64-debug")
def test_debug_guest_runs_its_checkers(vm):
    """The debug kernel booted with KASAN, lockdep still on (no report at
    boot switched it off), kmemleak, two CPUs, the power tracepoints,
    and gpio-sim and test_power from its own build."""
    assert vm.debug and vm.arch == "amd64"
    assert re.search(r"debug_locks:\s+1\b", vm.run_ok("cat /proc/lockdep_stats"))
    # the boot's lines: the kernel's ring has dropped them after a long
    # session, the console kept them (vm.kmsg)
    boot = vm.dmesg() + "\n".join(vm.kmsg)
    assert "KernelAddressSanitizer initialized" in boot
    assert "Kernel memory leak detector initialized" in boot
    assert vm.run_ok("nproc").strip() == "2"
    assert "[deep]" in vm.run_ok("cat /sys/power/mem_sleep")
    assert vm.run("test -e /sys/power/pm_test")[0] == 0
    for ev in ("wakeup_source_activate", "wakeup_source_deactivate", "suspend_resume",
               "device_pm_callback_start", "device_pm_callback_end"):
        assert vm.run(f"test -d /sys/kernel/debug/tracing/events/power/{ev}")[0] == 0, ev
    vm.run_ok("modprobe gpio-sim && modprobe test_power && rmmod test_power gpio-sim")


@pytest.mark.debug_kernel
@pytest.mark.arch("amd64-debug")
def test_kmemleak_reports_a_leaked_allocation(vm):
    """What the per-module kmemleak scan relies on: an allocation nothing
    points to is reported once it is 5 s old, with its stack."""
    vm.kmemleak_scan()
    vm.load_module("sbrig_hello", leak=200)
    try:
        vm.run_ok("sleep 6", timeout=30)
        report = vm.kmemleak_scan()
        assert "unreferenced object" in report, report
        assert "sbrig_hello_leak" in report, report
        assert vm.kmemleak_scan() == ""      # cleared: reported once
    finally:
        vm.unload_module("sbrig_hello")


def test_suspend_block_module_loads(vm):
    mods = vm.artifacts.modules
    if "suspend_block" not in mods.modules:
        pytest.fail(f"suspend_block.ko was not built (missing sources: {mods.missing})")
    loaded = vm.run("test -d /sys/module/suspend_block")[0] == 0
    if not loaded:
        vm.load_module("suspend_block")
    try:
        assert vm.run("test -d /sys/module/suspend_block")[0] == 0
    finally:
        if not loaded:
            vm.unload_module("suspend_block")


@pytest.mark.s3
def test_s3_woken_by_system_wakeup(vm):
    """echo mem: QEMU reports SUSPEND and status "suspended"; QMP
    system_wakeup resumes; the shell command finishes after resume."""
    mark = vm.qmp_mark()
    pending = vm.run_async("echo mem > /sys/power/state; echo back $?")
    suspend = vm.wait_qmp_event("SUSPEND", 60, since=mark)
    vm.wait_status("suspended", 30)
    assert not pending.done()
    vm.system_wakeup()
    wakeup = vm.wait_qmp_event("WAKEUP", 30, since=mark)
    assert pending.wait(60) == (0, "back 0\n")
    assert vm.query_status() == "running"
    ts = [(e["timestamp"]["seconds"], e["timestamp"]["microseconds"])
          for e in (suspend, wakeup)]
    assert ts[0] <= ts[1]


@pytest.mark.s3
def test_s3_woken_by_key(vm):
    """A PS/2 key press sent as explicit down/up input events wakes S3."""
    mark = vm.qmp_mark()
    pending = vm.run_async("echo mem > /sys/power/state; echo back $?")
    vm.wait_status("suspended", 60)
    vm.send_key()
    vm.wait_qmp_event("WAKEUP", 30, since=mark)
    assert pending.wait(60) == (0, "back 0\n")


@pytest.mark.arch("armhf")
def test_s2idle_woken_by_rtc_alarm(vm):
    mark = vm.console_mark()
    t0 = time.monotonic()
    rc, out = vm.run("echo 0 > /sys/class/rtc/rtc0/wakealarm; "
                     "echo +3 > /sys/class/rtc/rtc0/wakealarm; "
                     "echo freeze > /sys/power/state; echo back $?", timeout=60)
    assert (rc, out) == (0, "back 0\n")
    assert time.monotonic() - t0 >= 1.5  # really slept until the alarm
    text = vm.console_text(mark)
    assert "PM: suspend entry (s2idle)" in text and "PM: suspend exit" in text


@pytest.mark.arch("armhf")
def test_s2idle_woken_by_powerdown_key(vm):
    """QMP system_powerdown presses the gpio-keys key that the patched DTB
    marks wakeup-source. pm_debug_messages (KERN_DEBUG, so console loglevel
    8) shows when the guest is really in s2idle."""
    printk = vm.read_file("/proc/sys/kernel/printk").split()
    vm.run_ok("echo 1 > /sys/power/pm_debug_messages; echo 8 > /proc/sys/kernel/printk")
    try:
        mark = vm.console_mark()
        pending = vm.run_async("echo freeze > /sys/power/state; echo back $?")
        vm.wait_console(r"PM: suspend-to-idle", 30, since=mark)
        assert not pending.done()
        vm.system_powerdown()
        assert pending.wait(30) == (0, "back 0\n")
        vm.wait_console(r"PM: resume from suspend-to-idle", 10, since=mark)
    finally:
        vm.run(f"echo 0 > /sys/power/pm_debug_messages; "
               f"echo {printk[0]} > /proc/sys/kernel/printk")
