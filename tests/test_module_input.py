"""suspend_block's input handler (sbevent.c, seed patch 7): one
/dev/input/sbevent<N> node per input device, read like evdev, with the
seed's EVIOCSSUSPENDBLOCK queue blocker "evdev".

Input devices are real: a uinput keyboard created in the guest by
sbevtool (tests/target/sbevtool.c), whose events go through the input
core to our handler exactly as a driver's do; and the guest's own
keyboard (amd64 PS/2) or gpio-keys (armhf) for the "one node per
device" check.
"""

from __future__ import annotations

import re

import pytest

import sbtarget as sb

# also on the amd64-debug guest (lockdep, KASAN, UBSAN, kmemleak)
pytestmark = pytest.mark.debug_kernel

MS = 1_000_000
ENODEV, EAGAIN, EPERM = 19, 11, 1


@pytest.fixture
def target(vm):
    vm.run_ok("modprobe uinput")
    sb.reload(vm, test_module=False)
    yield vm


def tool(vm, *ops, timeout: float = 60) -> list[str]:
    out = vm.run_ok("sbevtool " + " ".join(ops), timeout=timeout)
    return out.replace("\r", "").splitlines()


def _evdev(evs):
    return [e.type for e in evs if e.type in ("block", "unblock")
            and e.name == "evdev"]


def test_a_node_per_input_device_in_the_input_class(target):
    vm = target
    bg = vm.start_bg("sbevtool uinput:sbtest-kbd open id sleep:6000")
    out = bg.wait_output(r"id name", timeout=30).replace("\r", "").splitlines()
    node = out[0].split("node=")[1]
    assert re.fullmatch(r"sbevent\d+", node), out
    assert vm.run_ok(f"cat /sys/class/input/{node}/device/name").strip() == "sbtest-kbd"
    # the identity ioctls answer like evdev's (BUS_VIRTUAL, EV_VERSION)
    assert out[2] == "id name=sbtest-kbd bustype=6 vendor=91 version=0x10001 evbit_key=1", out
    # every input device of the guest has one (PS/2 keyboard, gpio-keys, ...)
    inputs = vm.run_ok("ls /sys/class/input | grep -c '^input'").strip()
    nodes = vm.run_ok("ls /sys/class/input | grep -c '^sbevent'").strip()
    assert int(nodes) == int(inputs) >= 2
    # devtmpfs made the char device on the input major
    assert vm.run_ok(f"stat -c %t /dev/input/{node}").strip() == "d"   # 13
    assert bg.wait(timeout=30) == 0
    # the uinput device went with sbevtool: so did its node
    assert vm.run(f"test -e /sys/class/input/{node}")[0] != 0


def test_reads_like_evdev(target):
    out = tool(target, "uinput:sbtest-read", "open", "press:30", "release:30",
               "read", "read", "readone")
    # whole packets, struct input_event records, then EAGAIN when empty
    assert out[4] == "read n=4 syn_dropped=0 keys=30:1,30:0", out
    assert out[5] == f"read errno={EAGAIN}", out
    assert out[6] == f"read errno={EAGAIN}", out


def test_evdev_blocker_follows_the_queue(target):
    """Opted in: "evdev" is blocked when an event is queued, stays active
    through a read that leaves events queued, and is released when the
    queue is read empty."""
    vm = target
    seq0 = sb.last_seq(vm)
    out = tool(vm, "uinput:sbtest-q", "open", "get", "optin", "get",
               "press:30", "sleep:300", "readone", "sleep:300", "read",
               "sleep:100", "optout", "close")
    assert out[2:5] == ["get=0", "optin rc=0", "get=1"], out
    assert out[7] == "read n=1 syn_dropped=0 keys=30:1", out
    assert out[9] == "read n=1 syn_dropped=0 keys=", out      # the SYN_REPORT
    evs = sb.events_after(vm, seq0)
    assert _evdev(evs) == ["block", "unblock"]
    block, unblock = [e for e in evs if e.name == "evdev"]
    # held through the partial read (>= both sleeps), released at the last
    assert 600 * MS <= unblock.t_ns - block.t_ns < 5000 * MS
    # nothing left: the opt-out destroyed it
    assert "evdev" not in sb.stats(vm)


def test_opt_out_and_close_release_an_unread_queue(target):
    vm = target
    seq0 = sb.last_seq(vm)
    out = tool(vm, "uinput:sbtest-o", "open", "optin", "press:30", "sleep:200",
               "optout", "optin", "sleep:200", "close")
    assert out[2] == "optin rc=0" and out[5] == "optout rc=0", out
    # opting in again while events are queued blocks at once; close ends it
    assert _evdev(sb.events_after(vm, seq0)) == ["block", "unblock"] * 2
    st = sb.stats(vm)
    assert "evdev" not in st
    assert st["deleted_suspend_blockers"].count == 2


def test_opt_in_needs_cap_block_suspend(target):
    out = tool(target, "uinput:sbtest-cap", "open", "uid:65534", "optin", "get")
    assert out[2:] == ["uid ok", f"optin errno={EPERM}", "get=0"], out


def test_overflow_is_reported_with_syn_dropped(target):
    vm = target
    seq0 = sb.last_seq(vm)
    # 200 packets of 2 events: far beyond the 64-event queue
    out = tool(vm, "uinput:sbtest-ovf", "open", "optin", "keys:200", "read",
               "read")
    n = int(re.search(r"n=(\d+)", out[4]).group(1))
    assert "syn_dropped=1" in out[4] and n < 64, out
    assert out[5] == f"read errno={EAGAIN}", out
    # the blocker stayed active through the overflow, released when read
    assert _evdev(sb.events_after(vm, seq0)) == ["block", "unblock"]


def test_unplug_wakes_a_blocked_reader_and_releases_the_blocker(target):
    vm = target
    seq0 = sb.last_seq(vm)
    # (no key left down: unplugging releases held keys, which a blocked
    # reader would read first)
    out = tool(vm, "uinput:sbtest-unplug", "open", "optin", "press:30",
               "release:30", "blockread", "sleep:300", "unplug", "wait",
               "read", "get", "close")
    # the blocking reader's file was opened after the key: it waited
    # until the unplug woke it
    assert out[8] == f"wait read errno={ENODEV}", out
    # the unread queue of the other client: the device is gone
    assert out[9] == f"read errno={ENODEV}", out
    assert out[10] == f"get errno={ENODEV}", out
    evs = sb.events_after(vm, seq0)
    assert _evdev(evs) == ["block", "unblock"]
    assert "evdev" not in sb.stats(vm)


def test_a_hundred_clients(target):
    vm = target
    seq0 = sb.last_seq(vm)
    out = tool(vm, "uinput:sbtest-100", "open:100", "optin", "press:30",
               "read", "sleep:200", "close", timeout=120)
    assert out[1] == "open clients=100" and out[2] == "optin rc=0", out
    assert out[4] == "read n=2 syn_dropped=0 keys=30:1", out
    kinds = _evdev(sb.events_after(vm, seq0))
    # each client queued the press: 100 blockers; the first read one
    # released its own, closing released the other 99
    assert kinds.count("block") == 100 and kinds.count("unblock") == 100
    assert "evdev" not in sb.stats(vm)


def test_unload_refused_while_a_node_is_open(target):
    vm = target
    bg = vm.start_bg("sbevtool uinput:sbtest-unload open optin press:30 sleep:4000")
    bg.wait_output("press ok", timeout=30)
    # busybox rmmod: EAGAIN ("Resource temporarily unavailable") while
    # the module's refcount is held
    rc, out = vm.run("rmmod suspend_block")
    assert rc != 0, out
    assert vm.run_ok("cat /sys/module/suspend_block/refcnt").strip() != "0"
    assert bg.wait(timeout=30) == 0
    vm.run_ok("rmmod suspend_block")
    assert vm.run("ls /sys/class/input | grep -c sbevent")[1].strip() == "0"
    sb.reload(vm, test_module=False)


# ------------------------------------------------------------ keypad-scan --

def _kinds(evs, names=("keypad-scan", "evdev")):
    return [(e.type, e.name) for e in evs
            if e.type in ("block", "unblock") and e.name in names]


def test_keypad_scan_spans_press_to_release_in_the_seeds_order(target):
    """keypad_scan=1: "keypad-scan" from the key going down until it is up;
    the opted-in queue's "evdev" starts after it at the press and ends
    after it at the release (seed 002's timeline, without user space)."""
    vm = target
    sb.reload(vm, test_module=False, keypad_scan=1)
    seq0 = sb.last_seq(vm)
    out = tool(vm, "uinput:sbtest-ks", "open", "optin", "press:30", "sleep:200",
               "read", "sleep:200", "release:30", "sleep:100", "read", "close")
    assert out[5] == "read n=2 syn_dropped=0 keys=30:1", out
    assert out[9] == "read n=2 syn_dropped=0 keys=30:0", out
    evs = sb.events_after(vm, seq0)
    assert _kinds(evs) == [
        ("block", "keypad-scan"), ("block", "evdev"),     # press
        ("unblock", "evdev"),                             # read empty
        ("block", "evdev"), ("unblock", "keypad-scan"),   # release
        ("unblock", "evdev")]                             # read empty
    ks = [e for e in evs if e.name == "keypad-scan"]
    assert 400 * MS <= ks[1].t_ns - ks[0].t_ns < 5000 * MS


def test_keypad_scan_holds_until_the_last_key_is_up(target):
    vm = target
    sb.reload(vm, test_module=False, keypad_scan=1)
    seq0 = sb.last_seq(vm)
    # nobody reads: only keypad-scan; mouse buttons do not count
    tool(vm, "uinput:sbtest-ks2", "press:30", "press:31", "release:30",
         "press:272", "sleep:300", "release:31", "release:272")
    evs = sb.events_after(vm, seq0)
    assert _kinds(evs) == [("block", "keypad-scan"), ("unblock", "keypad-scan")]
    b, u = [e for e in evs if e.name == "keypad-scan"]
    assert u.t_ns - b.t_ns >= 300 * MS
    st = sb.stats(vm)["keypad-scan"]
    assert st.count == 1 and not st.active


def test_keypad_scan_leaves_pointers_and_touch_controllers_alone(target):
    """keypad_scan keeps the keypads open to see their keys while nobody
    reads them; a device with pointer axes (a touch controller, a mouse)
    is not a keypad: kept open it could never runtime-suspend. So its keys
    do not hold keypad-scan, while a keyboard's still do."""
    vm = target
    sb.reload(vm, test_module=False, keypad_scan=1)
    seq0 = sb.last_seq(vm)
    out = tool(vm, "pointer:sbtest-touch", "press:30", "sleep:100", "release:30")
    assert out[0].startswith("uinput node=sbevent"), out
    assert _kinds(sb.events_after(vm, seq0)) == []
    tool(vm, "uinput:sbtest-kbd", "press:30", "sleep:100", "release:30")
    assert _kinds(sb.events_after(vm, seq0)) == [("block", "keypad-scan"),
                                                 ("unblock", "keypad-scan")]


def test_keypad_scan_released_when_unplugged_or_unloaded_during_a_press(target):
    vm = target
    sb.reload(vm, test_module=False, keypad_scan=1)
    seq0 = sb.last_seq(vm)
    # the device goes away with a key down: its keys are forgotten (the
    # input core also reports them released)
    tool(vm, "uinput:sbtest-ks3", "press:30", "sleep:100", "unplug")
    assert _kinds(sb.events_after(vm, seq0)) == [("block", "keypad-scan"),
                                                 ("unblock", "keypad-scan")]
    # module unload while a key is held: released and destroyed, no warning
    bg = vm.start_bg("sbevtool uinput:sbtest-ks4 press:30 sleep:3000")
    bg.wait_output("press ok", timeout=30)
    assert sb.stats(vm)["keypad-scan"].active
    dmesg0 = len(vm.dmesg())
    vm.run_ok("rmmod suspend_block")
    assert "WARNING" not in vm.dmesg()[dmesg0:]
    assert bg.wait(timeout=30) == 0
    sb.reload(vm, test_module=False)
    assert "keypad-scan" not in sb.stats(vm)        # off by default
