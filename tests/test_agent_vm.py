"""The real target agent (kernel-module/tools/sbagent) in an amd64 guest,
talking to the host's link (sbrig-linkdump, libsbrig link.c) over the
guest's second UART, which QEMU serves as a ser2net-style raw TCP port.

One guest for the module (its own Vm: the extra UART is a boot-time QEMU
option), the agent started once; the tests run in order and share it.
"""

from __future__ import annotations

import socket

import pytest

from tests import sbtarget as sb
from tests.rigproto import LinkDump, build_linkdump
from tests.vm.build import build_all
from tests.vm.qemu import Vm

MS = 1_000_000
AGENT = "sbagent -d /dev/ttyS1 -v"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def rig():
    build_linkdump()
    port = _free_port()
    vm = Vm("amd64", build_all("amd64"), name="amd64-agent",
            extra_qemu_args=["-serial", f"tcp:127.0.0.1:{port},server=on,wait=off"])
    vm.start()
    try:
        vm.load_module("suspend_block")
        agent = vm.start_bg(AGENT)
        ld = LinkDump(f"tcp:127.0.0.1:{port}")
        yield vm, ld, agent
        ld.close()
    finally:
        vm.shutdown()


def _events_named(ld: LinkDump, name: str) -> list[dict]:
    return [e for e in ld.of("event") if e["arg"] == name]


def _widest_exchange_ns(ld: LinkDump) -> int:
    """The longest round trip of the clock exchanges seen so far."""
    return max(c["host_recv_ns"] - c["host_send_ns"] for c in ld.of("clock"))


def _reply(ld: LinkDump, cmd: str, kind: str = "reply") -> dict:
    """Send cmd; wait for its reply (kind="reply") or also its "done"."""
    n = len(ld.of("queued"))
    ld.send(cmd)
    q = ld.wait(lambda ms: len([m for m in ms if m["type"] == "queued"]) > n
                and [m for m in ms if m["type"] == "queued"][-1], what="queued")
    r = None
    for k in ("reply", "done") if kind == "done" else ("reply",):
        r = ld.wait(lambda ms: next((m for m in ms if m["type"] == k
                                     and m["cmd_id"] == q["cmd_id"]), None),
                    timeout=20, what=f"{k} to {cmd}")
    return r


def test_hello_names_the_guest_boot(rig):
    vm, ld, _ = rig
    boot = vm.run_ok("cat /proc/sys/kernel/random/boot_id").strip()
    hello = ld.wait(lambda ms: next((m for m in ms if m["type"] == "hello"), None),
                    timeout=30, what="hello")
    assert hello["boot_id"] == boot
    assert hello["module"] == "0.1.0" and hello["kernel"] == vm.kver
    # the module's load-time records are streamed from seq 0
    ld.wait(lambda ms: any(m["type"] == "event" and m["seq"] == 0 for m in ms),
            what="event 0")


def test_hold_streams_block_and_unblock_with_seq(rig):
    vm, ld, _ = rig
    r = _reply(ld, 'hold "vm agent test" 300', "done")
    assert r["err"] == 0 and "expired" in r["text"]
    ld.wait(lambda ms: len(_events_named(ld, "vm agent test")) >= 2, what="events")
    got = _events_named(ld, "vm agent test")
    assert [e["ev"] for e in got] == ["block", "unblock"]
    # the same records, same seq, as the module's own log
    log = {e.seq: e for e in sb.events(vm) if e.name == "vm agent test"}
    assert sorted(log) == [e["seq"] for e in got]
    for e in got:
        assert log[e["seq"]].t_ns == e["t_ns"] and log[e["seq"]].type == e["ev"]
        # the blocker object's id, as the module logged it (link revision 2)
        assert e["obj"] == log[e["seq"]].obj and e["obj"] > 0
    assert got[0]["obj"] == got[1]["obj"]
    assert 300 * MS <= got[1]["t_ns"] - got[0]["t_ns"] < 2000 * MS
    # mapped onto host time, with the clock model's uncertainty: no wider
    # than the exchanges it was fitted to allow (the spread of their
    # offsets about the line is within their round trips), whatever the
    # round trips are on this host
    assert all(0 <= e["uncert_ns"] <= _widest_exchange_ns(ld) + MS for e in got)
    host_dt = got[1]["host_t_ns"] - got[0]["host_t_ns"]
    assert abs(host_dt - (got[1]["t_ns"] - got[0]["t_ns"])) <= \
        got[0]["uncert_ns"] + got[1]["uncert_ns"], got
    # events arrive in seq order, without holes or duplicates
    seqs = [e["seq"] for e in ld.of("event")]
    assert seqs == list(range(len(seqs)))


def test_kernel_records_stream_unchanged(rig):
    """The module's records of kernel activity (a real EPOLLWAKEUP wakeup
    source, the phases of a pm_test dry-run suspend) reach the host with
    the log's seq, time, type and argument."""
    vm, ld, _ = rig
    seq0 = sb.last_seq(vm)
    vm.run_ok("epwake 50")
    vm.run_ok("echo 0 > /sys/module/suspend/parameters/pm_test_delay; "
              "echo devices > /sys/power/pm_test; "
              "echo mem > /sys/kernel/suspend_block/state; "
              "echo none > /sys/power/pm_test", timeout=60)
    log = [e for e in sb.events_after(vm, seq0)
           if e.type in ("ws_activate", "ws_relax", "phase")]
    assert {e.type for e in log} == {"ws_activate", "ws_relax", "phase"}, log
    last = log[-1].seq
    ld.wait(lambda ms: any(m["type"] == "event" and m["seq"] == last for m in ms),
            timeout=30, what=f"event {last}")
    got = {e["seq"]: e for e in ld.of("event")}
    for e in log:
        m = got[e.seq]
        assert (m["t_ns"], m["ev"]) == (e.t_ns, e.type)
        # quoted records arrive as the name, the others as the text
        assert m["arg"] == (e.name if e.type.startswith("ws_") else e.arg)
        assert not m["cut"]
    assert any(m["arg"] == "dpm_suspend 2 begin" for m in got.values())


def test_stats_snapshot_matches_debugfs(rig):
    vm, ld, _ = rig
    r = _reply(ld, "stats")
    assert r["err"] == 0
    rows = [m for m in ld.of("stats") if m["cmd_id"] == r["cmd_id"]]
    table = sb.stats(vm)
    assert rows and len(rows) == rows[0]["rows"] == len(table)
    assert sorted(m["index"] for m in rows) == list(range(len(rows)))
    for m in rows:
        st = table[m["name"]]
        assert (m["count"], m["wake_count"]) == (st.count, st.wake_count)
        # rows inactive in both reads do not change between them (the
        # agent's "sbagent report" may end its 300 ms linger in between)
        if not st.active and not m["active_since"]:
            assert (m["total_time"], m["max_time"], m["last_change"]) == \
                (st.total_time, st.max_time, st.last_change)


def test_pong_times_are_sane(rig):
    vm, ld, _ = rig
    ld.wait(lambda ms: len([m for m in ms if m["type"] == "clock"]) >= 3, what="pongs")
    clocks = ld.of("clock")
    targets = [c["target_ns"] for c in clocks]
    assert targets == sorted(targets)
    uptime_ns = int(float(vm.run_ok("cut -d' ' -f1 /proc/uptime")) * 1e9)
    assert abs(uptime_ns - targets[-1]) < 120_000 * MS   # CLOCK_BOOTTIME ~ uptime
    for c in clocks:
        assert 0 <= c["host_recv_ns"] - c["host_send_ns"] < 2000 * MS
    st = ld.status()
    # the model's uncertainty is what its exchanges say (capture-format.md:
    # the spread about the line, and never less than the best exchange's
    # half round trip): bounded by the exchanges seen, not by a figure
    # this host may miss under load
    rtts = [c["host_recv_ns"] - c["host_send_ns"] for c in ld.of("clock")]
    assert st["clock_samples"] >= 1
    assert min(rtts) // 2 <= st["uncert_ns"] <= _widest_exchange_ns(ld), \
        (st["uncert_ns"], sorted(rtts))


def test_noise_on_the_line_does_not_break_the_stream(rig):
    vm, ld, _ = rig
    before = ld.status()
    # kernel-message-like text and garbage written to the agent's UART
    # while it streams: frames may land on the same line as the noise
    vm.run_ok("for i in 1 2 3; do printf '[   42.%d] fake kernel message ' $i"
              " > /dev/ttyS1; printf '\\001\\377junk\\n' > /dev/ttyS1; done")
    _reply(ld, 'hold "after noise" 50', "done")
    ld.wait(lambda ms: len(_events_named(ld, "after noise")) >= 2, what="events")
    after = ld.status()
    assert after["noise_bytes"] > before["noise_bytes"]
    seqs = [e["seq"] for e in ld.of("event")]
    assert seqs == list(range(len(seqs)))


def test_input_handler_holds_process_input_events(rig):
    vm, ld, _ = rig
    vm.run_ok("modprobe evdev; ls /dev/input/event0")   # no udev in the initramfs
    r = _reply(ld, "input on")
    assert r["err"] == 0 and "devices" in r["text"]
    # "input on, N devices, sbevent": the module's nodes, opted in
    assert int(r["text"].split()[2]) >= 1 and r["text"].endswith(", sbevent"), r
    n0 = len(ld.of("event"))
    vm.send_key("shift")                            # PS/2 keyboard key
    ld.wait(lambda ms: len(_events_named(ld, "process-input-events")) >= 2,
            timeout=20, what="process-input-events block/unblock")
    got = _events_named(ld, "process-input-events")
    assert [e["ev"] for e in got[:2]] == ["block", "unblock"]
    # the seed's order: the queue's blocker, then the handler's from
    # poll's return; the queue read empty, then the handler done
    order = [(e["ev"], e["arg"]) for e in ld.of("event")[n0:]
             if e["arg"] in ("evdev", "process-input-events")]
    assert order[:3] == [("block", "evdev"), ("block", "process-input-events"),
                         ("unblock", "evdev")], order
    # the key's release may queue while the handler still holds its
    # blocker (a loaded host delivers press and release apart): the queue
    # is then read empty again, and the handler lets go only after that
    end = order.index(("unblock", "process-input-events"))
    inside = order[2:end]
    assert inside.count(("unblock", "evdev")) == inside.count(("block", "evdev")) + 1, order
    r = _reply(ld, "input off")
    assert r["err"] == 0 and int(r["text"].split()[2]) >= 1   # "input off, N events"


def test_burn_and_bad_commands(rig):
    vm, ld, _ = rig
    d = _reply(ld, "burn 100", "done")
    assert d["err"] == 0 and "burn" in d["text"]
    r = _reply(ld, "frobnicate 1")
    assert r["err"] == -22                          # -EINVAL from the target
    r = _reply(ld, 'release "never held"')
    assert r["err"] == -2                           # -ENOENT


def test_agent_restart_resumes_without_losing_events(rig):
    vm, ld, agent = rig
    agent.kill()
    agent.wait()
    # records produced while no agent runs
    vm.run_ok("sbctl hold 'while away' --ms 20")
    agent = vm.start_bg(AGENT)
    _reply(ld, 'hold "after restart" 20', "done")
    ld.wait(lambda ms: len(_events_named(ld, "after restart")) >= 2, timeout=30,
            what="events after restart")
    assert [e["ev"] for e in _events_named(ld, "while away")] == ["block", "unblock"]
    seqs = [e["seq"] for e in ld.of("event")]
    assert seqs == list(range(len(seqs)))
    assert [e["seq"] for e in ld.of("event")][-1] == sb.last_seq(vm)
    agent.kill()


def test_module_reload_restarts_the_event_log(rig):
    """Stop the agent (its open log pins the module), reload the module,
    start the agent: the reloaded module's records (seq from 0 again in
    the same boot) reach the host instead of being taken for duplicates."""
    vm, ld, _ = rig
    n_before = len(ld.of("event"))
    vm.run("pkill sbagent; true")
    vm.unload_module("suspend_block")
    vm.load_module("suspend_block")
    agent = vm.start_bg(AGENT)
    ld.wait(lambda ms: any(m["type"] == "hello" and m.get("log_restart") for m in ms),
            timeout=30, what="hello with log_restart")
    _reply(ld, 'hold "after reload" 20', "done")
    ld.wait(lambda ms: len(_events_named(ld, "after reload")) >= 2, timeout=30,
            what="events after reload")
    new = ld.of("event")[n_before:]
    assert new[0]["seq"] == 0                  # the reloaded module's log
    assert [e["seq"] for e in new] == list(range(len(new)))
    assert [e["ev"] for e in _events_named(ld, "after reload")] == ["block", "unblock"]
    assert ld.status()["log_restarts"] == 1
    agent.kill()
