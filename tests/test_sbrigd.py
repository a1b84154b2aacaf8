"""sbrigd + sbrig on the host, against simulated instruments (no VM).

The real daemon (ASan build) runs with a rig whose sensor is the INA226
libiio-protocol emulator (rig/virtual/ina226_iiod.py, over ip:) and whose
target link is a FakeAgent (tests/rigproto.py, over tcp:); the real CLI
talks to it. No GPIO lines here: those are exercised in the amd64 VM with
gpio-sim (tests/test_host_interface.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.capture import meta_section, read_rows, samples_file
from tests.rigproto import FakeAgent, frame
from tests.sbrigdrig import (REPO, SBRIG, SBRIGD, Conn, Daemon, build,  # noqa: F401
                             kv, poll, sbrig, sbrigd_rig, status_json)
from tests.test_power import Emulator


@contextlib.contextmanager
def make_rig(tmp_path, timing: str = "", env: dict[str, str] | None = None,
             power_uri: str | None = None, target_host: str = "127.0.0.1",
             prefix: tuple[str, ...] = ()):
    """Emulator + fake agent + sbrigd ([timing] lines added: @timing;
    the daemon's environment extended by @env and started through
    @prefix; the sensor at @power_uri instead of the emulator's; the agent
    reached as @target_host); yields a namespace."""
    truth = tmp_path / "ina226-truth.jsonl"
    with sbrigd_rig(tmp_path, "hosttest", "boot-sbrigd-test",
                    ("--current-uA", "50000", "--rate", "1000",
                     "--truth", str(truth)),
                    timing=timing, env=env, power_uri=power_uri,
                    target_host=target_host, prefix=prefix) as r:
        r.truth = truth     # what the emulator emitted (ina226_iiod.py --truth)
        yield r


@pytest.fixture
def rig(tmp_path):
    with make_rig(tmp_path) as r:
        yield r


def test_status_shows_sensor_and_link(rig):
    assert oct(rig.sock.stat().st_mode & 0o777) == "0o660"
    st = status_json(rig.sock)
    assert st["rig"]["name"] == "hosttest"
    assert st["rig"]["config"] == str(rig.conf)
    assert len(st["rig"]["config_sha256"]) == 64
    assert st["sensor"]["device"] == "ina226"
    assert abs(st["sensor"]["current_mA"] - 50.0) < 0.5
    assert st["sensor"]["shunt_uohm"] == 100000
    assert st["link"]["connected"] is True
    assert st["link"]["boot_id"] == "boot-sbrigd-test"
    assert st["link"]["kernel"] == "6.1.0-test"
    assert st["capture"] is None and st["operation"] is None
    assert st["problems"] == []


def emitted_streams(path: Path, since_ns: int, timeout: float = 10) -> list[dict]:
    """The buffers the emulator opened after @since_ns (host monotonic), as
    its truth file (ina226_iiod.py --truth) closes them: {"samples": N
    sent, "period_ns": P}; waits until each is closed."""
    from rig.virtual.ina226_iiod import read_truth

    end = time.monotonic() + timeout
    while True:
        recs = read_truth(path)
        opened = {r["stream"]: r for r in recs
                  if r["type"] == "open" and r["t_ns"] >= since_ns}
        closed = {r["stream"]: r for r in recs if r["type"] == "close"}
        if opened.keys() <= closed.keys():
            break
        assert time.monotonic() < end, f"buffers still open: {recs}"
        time.sleep(0.02)
    assert not [r for r in recs if r["type"] == "drop"], recs
    return [{"samples": closed[s]["samples"], "period_ns": o["period_ns"]}
            for s, o in sorted(opened.items())]


def test_capture_records_samples_and_events(rig):
    t0 = time.monotonic_ns()
    for i in range(3):
        rig.agent.send_event(i, time.monotonic_ns(), "block", f'"cap{i}"')
    cap = rig.tmp / "cap"
    # events during the capture, while the CLI runs
    th = threading.Timer(0.7, lambda: rig.agent.send_event(
        3, time.monotonic_ns(), "unblock", '"cap0"'))
    th.start()
    res = sbrig(rig.sock, "capture", "-d", "2s", "--stats-every", "500ms",
                "-o", str(cap))
    th.join()
    assert res.returncode == 0, res.stderr
    summary = kv(res.stdout)
    assert summary["status"] == "complete"
    assert summary["dir"] == str(cap)
    assert "tail_lost_ms" not in summary, summary   # nothing lost
    assert "warning" not in res.stderr, res.stderr
    samples = read_rows(cap, "samples", typed=True)
    # every sample the sensor sent, counted by the sensor itself: the
    # emulator's truth has the capture's buffer, opened after t0 and
    # closed at the stop ("stopping loses no sample": power.c), no drop
    truth = emitted_streams(rig.truth, t0)
    assert len(truth) == 1, truth
    assert len(samples) == truth[0]["samples"], (len(samples), truth)
    # from the buffer's opening (moments after the capture's start, on the
    # sensor's thread) up to the stop 2 s after the start: nothing taken
    # before the stop is lost, and the last buffer reaches past it by at
    # most a buffer (a quarter second at 892.9 S/s, the automatic size;
    # the upper bound leaves a loaded host's late timer some room)
    created = int(meta_section(cap, "capture")["created_monotonic_ns"])
    period = truth[0]["period_ns"]
    assert samples[-1].t_ns >= created + 2 * 10**9 - period, \
        (samples[-1].t_ns - created, truth)
    assert samples[-1].t_ns <= created + 2.6e9, \
        (samples[-1].t_ns - created, truth)
    assert 1.5e9 <= len(samples) * period <= 2.3e9, truth
    assert int(summary["samples"]) == len(samples)
    assert all(abs(s.current_uA - 50000) <= 100 for s in samples)
    ts = [s.t_ns for s in samples]
    assert ts == sorted(ts) and ts[0] >= t0 - 10**9
    assert read_rows(cap, "gaps") == []
    # the event that arrived during the capture, with host time near ours
    events = read_rows(cap, "events", typed=True)
    ev = [e for e in events if e.seq == 3]
    assert ev and ev[0].type == "unblock" and ev[0].arg == "cap0"
    assert ev[0].boot_id == "boot-sbrigd-test"
    assert abs(ev[0].host_t_ns - ev[0].target_t_ns) < 50_000_000
    assert read_rows(cap, "clock"), "no clock exchanges recorded"
    assert [s.name for s in read_rows(cap, "stats", typed=True)][:1] == ["main"]
    assert meta_section(cap, "end")["status"] == "complete"
    target = meta_section(cap, "target")
    assert target and target["boot_id"] == "boot-sbrigd-test"
    prov = meta_section(cap, "provenance")
    assert prov["rig_sha256"] == status_json(rig.sock)["rig"]["config_sha256"]


def test_capture_says_how_the_sensor_clock_was_mapped(rig):
    """An ip: sensor stamps samples with its host's clock: the capture's
    meta.ini [sensor] says so with the mapping's uncertainty (the drift
    needs 20 s of samples), and the report carries it next to the
    target's clock."""
    cap = rig.tmp / "sclock"
    res = sbrig(rig.sock, "capture", "-d", "2s", "-o", str(cap))
    assert res.returncode == 0, res.stderr
    sec = meta_section(cap, "sensor")
    assert sec["clock"] == "remote" and sec["clock_drift_known"] == "0", sec
    assert 0 <= int(sec["clock_uncert_ns"]) < 1_000_000_000, sec
    out = rig.tmp / "sclock-report"
    res = subprocess.run([str(SBRIG), "analyze", str(cap), "-o", str(out)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "sensor_clock: remote, drift not known" in res.stdout, res.stdout
    rep = json.loads((out / "report.json").read_text())
    assert rep["capture"]["clock"]["sensor"] == {
        "clock": "remote", "drift_ppb": None,
        "uncert_ns": int(sec["clock_uncert_ns"])}


def test_a_sensor_that_stops_delivering_ends_the_capture_early_and_says_so(rig):
    """The sensor's iiod stops delivering mid-capture (the emulator's
    "hold": a hung server): the stop waits a buffer's duration and a
    quarter plus 1 s for the buffer that reaches it, then cancels it. The
    capture is complete, but its meta.ini [end] says the tail was lost,
    from its last sample to the stop, and the analysis reports that span
    as a gap after the capture's end with a warning, never as energy."""
    cap = rig.tmp / "tail"
    t_cli = time.monotonic_ns()
    p = subprocess.Popen([str(SBRIG), "-s", str(rig.sock), "capture", "-d", "4s",
                          "-o", str(cap)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        poll(lambda: status_json(rig.sock),
             lambda st: st["capture"] and st["capture"]["samples"] >= 400)
        rig.emu.ctl("hold 1")
        t_hold = time.monotonic_ns()
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err
    assert kv(out)["status"] == "complete", out
    rig.daemon.wait_log("the capture ends early")
    end = meta_section(cap, "end")
    samples = read_rows(cap, "samples", typed=True)
    last = samples[-1].t_ns
    assert end["sensor_tail_lost"] == "1", end
    lost_from = int(end["sensor_tail_lost_from_ns"])
    lost_to = int(end["sensor_tail_lost_to_ns"])
    print(f"tail lost: {(lost_to - lost_from) / 1e6:.0f} ms, the stop "
          f"{(int(end['closed_monotonic_ns']) - lost_to) / 1e6:.0f} ms before the close")
    # from the last sample written (delivered before the hold, or the
    # buffer under way then) to the stop, 4 s after the start
    assert lost_from == last
    assert last <= t_hold + 500_000_000, (last - t_hold) / 1e6
    assert lost_to >= t_cli + 4_000_000_000 - 100_000_000, (lost_to - t_cli) / 1e6
    # the stop waited 1.25 x 250 ms + 1 s for a buffer before it cancelled
    assert 1_300_000_000 <= int(end["closed_monotonic_ns"]) - lost_to < 5_000_000_000
    assert int(end["samples"]) == len(samples)
    # the request's summary and the CLI say so too: the status alone
    # ("complete") would not
    ms = round((lost_to - lost_from) / 1e6)
    assert abs(int(kv(out)["tail_lost_ms"]) - ms) <= 1, (out, ms)
    assert (f"sbrig: capture: warning: the sensor did not deliver its last "
            f"{kv(out)['tail_lost_ms']} ms before the stop") in err, err

    out_dir = rig.tmp / "tail-report"
    res = subprocess.run([str(SBRIG), "analyze", str(cap), "-o", str(out_dir)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    warn = (f"finding: gap: the sensor's last {ms} ms before the stop were not "
            "delivered (the capture ends early)")
    assert warn in res.stdout, res.stdout
    rep = json.loads((out_dir / "report.json").read_text())
    assert rep["capture"]["end_ns"] == last
    tail = rep["gaps"][-1]
    assert tail["at_stop"] is True and tail["t_ns"] == lost_from, tail
    assert tail["duration_ns"] == lost_to - lost_from, tail


def test_daemon_writes_capture_format_version2(rig):
    """sbrigd writes format version 2 by default: the samples are records
    in samples.bin (no samples.tsv), counted in meta.ini, and `sbrig export`
    gives back as text exactly what the records hold."""
    rig.emu.ctl("current_uA 77000")
    cap = rig.tmp / "cap-v2"
    res = sbrig(rig.sock, "capture", "-d", "1s", "-o", str(cap))
    assert res.returncode == 0, res.stderr
    assert meta_section(cap, "capture")["version"] == "2"
    assert not (cap / "samples.tsv").exists()
    raw = (cap / "samples.bin").read_bytes()
    assert raw[:8] == b"SBRIGSMP" and (len(raw) - 32) % 32 == 0
    samples = read_rows(cap, "samples", typed=True)
    assert len(samples) == (len(raw) - 32) // 32 > 500
    assert len(samples) == int(meta_section(cap, "end")["samples"]) == \
        int(kv(res.stdout)["samples"])
    assert all(abs(s.current_uA - 77000) <= 100 for s in samples[-100:])
    out = sbrig(None, "export", str(cap), "--samples", "tsv")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "t_ns\tcurrent_uA\tbus_uV\tshunt_nV\tpower_uW"
    assert [tuple(map(int, x.split("\t"))) for x in lines[1:]] == \
        [tuple(s) for s in samples]


def test_capture_follows_emulator_current(rig):
    rig.emu.ctl("current_uA 123000")
    cap = rig.tmp / "cap2"
    res = sbrig(rig.sock, "capture", "-d", "1s", "-o", str(cap))
    assert res.returncode == 0, res.stderr
    samples = read_rows(cap, "samples", typed=True)
    assert samples and all(abs(s.current_uA - 123000) <= 100
                           for s in samples[-100:])
    assert abs(float(kv(res.stdout)["mean_mA"]) - 123.0) < 1.0


def test_run_wait_event_satisfied(rig):
    scn = rig.tmp / "ok.scn"
    scn.write_text('settle 100ms\nhold "rig test" 200ms\n'
                   'wait event block "rig test" timeout 5s\nsettle 100ms\n')
    cap = rig.tmp / "run-ok"
    res = sbrig(rig.sock, "run", str(scn), "-o", str(cap))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "step 3/4 line=3 wait event block" in res.stdout
    assert kv(res.stdout)["status"] == "complete"
    assert meta_section(cap, "end")["status"] == "complete"
    assert meta_section(cap, "provenance")["scenario"] == str(scn)
    stimuli = read_rows(cap, "stimuli", typed=True)
    assert [(s.what, s.arg) for s in stimuli] == [("hold", "rig test")]
    assert any(e.type == "block" and e.arg == "rig test"
               for e in read_rows(cap, "events", typed=True))
    assert [c for c in rig.agent.cmd_frames if "hold" in c.raw_args]


def test_a_runs_first_step_comes_after_the_first_sample(rig):
    """The sensor's buffer starts sampling some milliseconds after the
    capture opens: a first step at once put its stimulus (a press, a plug:
    the wake it causes) where the capture had no power yet. The run waits
    for the sensor's first samples."""
    scn = rig.tmp / "first.scn"
    scn.write_text('hold "first" 20ms\nsettle 100ms\n')
    for i in range(3):
        cap = rig.tmp / f"run-first{i}"
        res = sbrig(rig.sock, "run", str(scn), "-o", str(cap))
        assert res.returncode == 0, res.stdout + res.stderr
        first = read_rows(cap, "samples", typed=True)[0]
        press = read_rows(cap, "stimuli", typed=True)[0]
        assert press.what == "hold", press
        assert first.t_ns < press.t_ns, (first, press)


def test_run_wait_timeout_fails_and_keeps_capture(rig):
    scn = rig.tmp / "late.scn"
    scn.write_text("settle 50ms\nwait event resume timeout 1s\nsettle 1s\n")
    cap = rig.tmp / "run-late"
    t = time.monotonic()
    res = sbrig(rig.sock, "run", str(scn), "-o", str(cap))
    assert res.returncode == 1, res.stdout + res.stderr
    assert time.monotonic() - t < 10
    want = f"failed: {scn}:2: wait event resume timed out after 1s"
    assert want in res.stderr
    assert meta_section(cap, "end")["status"] == want
    assert read_rows(cap, "samples"), "the capture lost its samples"
    # the daemon is fine afterwards
    assert sbrig(rig.sock, "status").returncode == 0


def test_usage_errors_exit_2(rig):
    for args in (["nosuchcommand"], ["press"], ["press", "power", "2 s"],
                 ["plug", "sideways"], ["capture", "-d", "2s"],
                 ["capture", "-o", "x", "-d", "soon"], ["latency", "-n", "0"],
                 ["run", "-o", "x"], ["status", "extra"], []):
        res = sbrig(rig.sock, *args)
        assert res.returncode == 2, (args, res.stdout, res.stderr)
        assert res.stderr.strip(), args
    bad = rig.tmp / "bad.scn"
    bad.write_text("settle 1s\nwait event\n")
    res = sbrig(rig.sock, "run", str(bad), "-o", str(rig.tmp / "never"))
    assert res.returncode == 2 and f"{bad}:2:" in res.stderr
    assert not (rig.tmp / "never").exists()


def test_operation_errors_exit_1(rig):
    # no keys and no charger on this rig: the daemon says so
    res = sbrig(rig.sock, "press", "power")
    assert res.returncode == 1 and "no key 'power'" in res.stderr
    res = sbrig(rig.sock, "plug", "in")
    assert res.returncode == 1 and "charger" in res.stderr
    res = sbrig(rig.sock, "latency", "-n", "1")
    assert res.returncode == 1 and "no key 'power'" in res.stderr
    existing = rig.tmp / "full"
    existing.mkdir()
    (existing / "x").write_text("x")
    res = sbrig(rig.sock, "capture", "-d", "1s", "-o", str(existing))
    assert res.returncode == 1 and str(existing) in res.stderr


def test_daemon_not_running_exits_3(tmp_path):
    res = sbrig(tmp_path / "nobody.sock", "status")
    assert res.returncode == 3
    assert "cannot reach sbrigd" in res.stderr and "nobody.sock" in res.stderr


def test_help_everywhere_and_in_the_man_page():
    man = (REPO / "host" / "man" / "sbrig.1").read_text()
    res = sbrig(None, "--help")
    assert res.returncode == 0
    cmds = re.findall(r"^  (\w+) ", res.stdout.split("Commands:")[1], re.M)
    assert {"status", "press", "plug", "capture", "run", "latency"} <= set(cmds)
    for c in cmds:
        h = sbrig(None, c, "--help")
        assert h.returncode == 0 and h.stdout.startswith("Usage: sbrig"), c
        assert f".B {c}" in man or f"\\fB{c}\\fR" in man, f"{c} not in sbrig.1"
    d = subprocess.run([str(SBRIGD), "--help"], capture_output=True, text=True)
    assert d.returncode == 0 and "-c, --config" in d.stdout
    assert subprocess.run([str(SBRIGD)], capture_output=True).returncode == 2


def test_garbage_client_gets_err_and_daemon_survives(rig):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(str(rig.sock))
        f = s.makefile("rwb")
        for req in (b"\x00\xff\xfegarbage\n", b"press\n", b"capture relative\n",
                    b"capture /tmp/x duration=forever\n", b'press "open\n',
                    b"latency n=-3\n", b"run /tmp/x bytes=zz origin=/a\n"):
            f.write(req)
            f.flush()
            line = f.readline().decode()
            assert line.startswith("err "), (req, line)
        # pipelined requests: one final answer each, in order
        f.write(b"version\nstatus\nversion\n")
        f.flush()
        finals = []
        while len(finals) < 3:
            line = f.readline().decode()
            assert line, "connection closed"
            if not line.startswith("data "):
                finals.append(line)
        assert finals[0].startswith("ok sbrigd ") and finals[1] == "ok\n"
        assert finals[2] == finals[0]
        # an over-long line closes the connection with an err
        f.write(b"x" * 10000)
        f.flush()
        assert f.readline().startswith(b"err 7 ")
    # half a request, then gone
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(str(rig.sock))
        s.sendall(b"stat")
    assert sbrig(rig.sock, "status").returncode == 0
    assert rig.daemon.proc.poll() is None


def test_kill9_mid_capture_leaves_readable_capture(rig):
    cap = rig.tmp / "killed"
    cli = subprocess.Popen([str(SBRIG), "-s", str(rig.sock), "capture", "-o",
                            str(cap)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    rig.daemon.wait_log(f"capture {cap} started")
    # wait until a sync has put samples on disk
    end = time.monotonic() + 20
    while len(read_rows(cap, "samples")) < 1000:
        assert time.monotonic() < end, "no samples reached the disk"
        time.sleep(0.1)
    rig.daemon.proc.kill()
    rig.daemon.proc.wait()
    out, err = cli.communicate(timeout=20)
    assert cli.returncode == 3, (out, err)
    assert "closed the connection" in err
    samples = read_rows(cap, "samples", typed=True)
    assert len(samples) >= 1000
    assert meta_section(cap, "end") is None      # never closed
    assert meta_section(cap, "provenance")["rig_name"] == "hosttest"


def test_sigterm_aborts_capture_and_second_daemon_refused(rig):
    other = subprocess.run([str(SBRIGD), "-c", str(rig.conf), "-s",
                            str(rig.sock)], capture_output=True, text=True,
                           timeout=30)
    assert other.returncode == 1
    assert "another sbrigd" in other.stderr
    cap = rig.tmp / "term"
    cli = subprocess.Popen([str(SBRIG), "-s", str(rig.sock), "capture", "-o",
                            str(cap)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    rig.daemon.wait_log(f"capture {cap} started")
    assert rig.daemon.stop() == 0
    out, err = cli.communicate(timeout=20)
    assert meta_section(cap, "end")["status"] == "aborted"
    assert kv(out).get("status") == "aborted", (out, err)
    assert not rig.sock.exists()


def test_ctrl_c_stops_capture_cleanly(rig):
    cap = rig.tmp / "ctrlc"
    cli = subprocess.Popen([str(SBRIG), "-s", str(rig.sock), "capture", "-o",
                            str(cap)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    rig.daemon.wait_log(f"capture {cap} started")
    cli.send_signal(signal.SIGINT)
    out, err = cli.communicate(timeout=20)
    assert cli.returncode == 0, err
    assert kv(out)["status"] == "complete"
    assert meta_section(cap, "end")["status"] == "complete"


def test_stale_socket_replaced(tmp_path):
    conf = tmp_path / "rig.conf"
    conf.write_text("[rig]\nname = bare\n")
    sock = tmp_path / "s.sock"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(sock))
    s.close()           # a socket file nobody listens on
    d = Daemon(conf, sock)
    try:
        st = status_json(sock)
        assert st["sensor"] is None and st["link"] is None
        res = sbrig(sock, "status")
        assert res.returncode == 0
        assert "sensor:    none (the rig has no [power] sensor)" in res.stdout
        assert "target:    none (the rig has no [target] link)" in res.stdout
    finally:
        assert d.stop() == 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_status_puts_what_is_wrong_first(tmp_path):
    """No sensor answering, no agent ever: sbrig status says so first (and
    still exits 0: that is the answer); --json has the same list."""
    conf = tmp_path / "rig.conf"
    conf.write_text(f"""[rig]
name = broken
[power]
uri = ip:127.0.0.1:{free_port()}
device = ina226
[target]
uri = tcp:127.0.0.1:{free_port()}
""")
    sock = tmp_path / "s.sock"
    d = Daemon(conf, sock)
    try:
        res = sbrig(sock, "status")
        assert res.returncode == 0, res.stderr
        lines = res.stdout.splitlines()
        assert lines[0].startswith("problems:  sensor: "), lines
        assert lines[1].startswith("           target: no agent answers on "
                                   "tcp:127.0.0.1:"), lines
        assert lines[2].startswith("rig:       broken (" + str(conf)), lines
        assert "target:    NOT connected: tcp:127.0.0.1:" in res.stdout
        assert "clock:     no exchange yet" in res.stdout
        st = status_json(sock)
        assert len(st["problems"]) == 2 and st["problems"][0] == \
            lines[0][11:] and st["problems"][1] == lines[1][11:], st
        assert st["link"]["connected"] is False and st["link"]["asleep"] is False
        assert "current_mA" not in st["sensor"] and st["sensor"]["error"]
        assert st["line"] == {} and st["capture"] is None
        assert sbrig(sock, "status", "--yaml").returncode == 2
    finally:
        assert d.stop() == 0


def test_status_problems_module_not_loaded_and_events_lost(rig):
    """sbrig(1) status: 'suspend_block not loaded on the target' and
    'target events lost' are problems, listed first, in --json too; a
    healthy rig has none."""
    res = sbrig(rig.sock, "status")
    assert res.stdout.startswith("problems:  none\n"), res.stdout
    assert status_json(rig.sock)["problems"] == []
    agent = rig.agent
    t0 = agent.clock()
    for i in range(3):
        agent.send_event(i, t0 + i, "block", '"before"')
    # the agent restarts on a target whose module is gone, its ring having
    # lost 3..7 meanwhile
    agent.drop_connection()
    for i in range(3, 10):
        agent.send_event(i, t0 + i, "block", '"after"')
    agent.forget_before(8)
    agent.module = "-"
    st = poll(lambda: status_json(rig.sock), lambda s: len(s["problems"]) == 2,
              interval=0.1)
    assert st["problems"] == ["target: suspend_block is not loaded",
                              "link: 5 target events were lost"], st
    assert st["link"]["module"] == "-" and st["link"]["events_lost"] == 5, st
    res = sbrig(rig.sock, "status")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[:2] == ["problems:  target: suspend_block is not loaded",
                         "           link: 5 target events were lost"], lines


def test_a_sensor_down_at_start_up_is_opened_when_needed(tmp_path):
    """sbrigd(8): a configured sensor that cannot be opened at start is
    opened again when a capture or a status needs it. Nothing listens on
    the sensor's port when the daemon starts; once the emulator does,
    status reads the sensor and a capture records its samples."""
    port = free_port()
    with make_rig(tmp_path, power_uri=f"ip:127.0.0.1:{port}") as r:
        st = status_json(r.sock)
        assert st["sensor"]["error"] and "current_mA" not in st["sensor"], st
        assert st["problems"][0].startswith("sensor: "), st
        late_dir = tmp_path / "late"
        late_dir.mkdir()
        late = Emulator(late_dir, "--port", str(port), "--current-uA", "20000",
                        "--rate", "1000")
        try:
            assert late.port == port
            st = poll(lambda: status_json(r.sock),
                      lambda s: "current_mA" in s["sensor"], 30, 0.2)
            assert abs(st["sensor"]["current_mA"] - 20.0) < 0.5, st
            assert "error" not in st["sensor"] and st["problems"] == [], st
            cap = tmp_path / "late-cap"
            res = sbrig(r.sock, "capture", "-d", "1s", "-o", str(cap))
            assert res.returncode == 0, res.stderr
            assert meta_section(cap, "end")["status"] == "complete"
            assert len(read_rows(cap, "samples")) > 500
        finally:
            late.stop()


def test_sensor_vanishing_fails_capture_daemon_lives(rig):
    cap = rig.tmp / "vanish"
    cli = subprocess.Popen([str(SBRIG), "-s", str(rig.sock), "capture", "-d",
                            "30s", "-o", str(cap)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    rig.daemon.wait_log(f"capture {cap} started")
    end = time.monotonic() + 20
    while len(read_rows(cap, "samples")) < 100:
        assert time.monotonic() < end, "no samples reached the disk"
        time.sleep(0.1)
    rig.emu.stop()
    out, err = cli.communicate(timeout=40)
    assert cli.returncode == 1, (out, err)
    status = meta_section(cap, "end")["status"]
    assert status.startswith("failed: sensor: "), status
    # the error names the sensor; the capture's summary still goes to stdout
    assert "sbrig: capture: failed: sensor: " in err, err
    assert kv(out)["status"] == status and kv(out)["dir"] == str(cap), out
    assert len(read_rows(cap, "samples")) >= 100
    st = status_json(rig.sock)
    assert st["sensor"]["error"], st
    assert st["problems"][0] == "sensor: " + st["sensor"]["error"], st
    # for a person: what is wrong first
    res = sbrig(rig.sock, "status")
    assert res.returncode == 0
    assert res.stdout.startswith("problems:  sensor: "), res.stdout


def test_hold_passes_through_to_the_agent(rig):
    res = sbrig(rig.sock, "hold", "from cli", "150ms")
    assert res.returncode == 0, res.stderr
    frames = [c.raw_args for c in rig.agent.cmd_frames]
    assert any('hold "from cli" 150' in f for f in frames), frames
    assert sbrig(rig.sock, "hold", "x", "soon").returncode == 2


def test_client_gone_mid_capture(rig):
    """A capture with a duration outlives its client; an open-ended one is
    closed as aborted (nobody could end it otherwise)."""
    timed, open_ended = rig.tmp / "timed", rig.tmp / "open"
    for cap, args in ((timed, ["-d", "1s"]), (open_ended, [])):
        cli = subprocess.Popen([str(SBRIG), "-s", str(rig.sock), "capture",
                                *args, "-o", str(cap)],
                               stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        rig.daemon.wait_log(f"capture {cap} started")
        cli.kill()
        cli.wait()
        rig.daemon.wait_log(f"capture {cap} closed")
    assert meta_section(timed, "end")["status"] == "complete"
    assert meta_section(open_ended, "end")["status"] == \
        "aborted: client disconnected"
    assert sbrig(rig.sock, "status").returncode == 0


@pytest.fixture
def full_rig(tmp_path):
    """The rig, its daemon in a mount namespace of its own (and a user
    namespace, so that no privilege is needed) where DIR/tiny is a 256 KiB
    tmpfs: a real file system that fills up, wherever the tests run. The
    test sees the daemon's files through /proc/PID/root."""
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    prefix = ("unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
              'mount -t tmpfs -o size=256k sbrig-tiny "$0" && exec "$@"', str(tiny))
    with make_rig(tmp_path, prefix=prefix) as r:
        r.tiny = tiny
        r.seen = lambda p: Path(f"/proc/{r.daemon.proc.pid}/root{p}")
        st = os.statvfs(r.seen(tiny))
        assert st.f_blocks * st.f_frsize == 256 << 10, st
        yield r


def test_disk_full_fails_capture_daemon_lives(full_rig):
    """The capture directory's file system fills up: the capture fails with
    a message naming the file and ENOSPC, what is on disk is whole rows,
    meta.ini says failed (with counts of the rows written), and the daemon
    serves the next request."""
    rig = full_rig
    cap = rig.tiny / "cap"      # as the daemon names it
    t = time.monotonic()
    res = sbrig(rig.sock, "capture", "-d", "60s", "-o", str(cap), timeout=90)
    assert res.returncode == 1, (res.stdout, res.stderr)
    assert time.monotonic() - t < 40, "the capture did not fail when full"
    err = res.stderr
    assert re.search(rf"{re.escape(str(cap))}/\w+\.(tsv|bin)", err), err
    assert "No space left on device" in err and "ENOSPC" in err, err
    cap = rig.seen(cap)         # as this test reads it
    # whole rows only (read_rows raises on a cut row), counted in meta.ini
    end = meta_section(cap, "end")
    assert end is not None, (cap / "meta.ini").read_text()
    assert end["status"].startswith("failed: ") and \
        "No space left on device" in end["status"], end
    assert end["errno"] == "28", end
    # the daemon writes format version 2: the samples are 32-byte records
    assert samples_file(cap).name == "samples.bin"
    for name in ("samples", "gaps", "edges", "stimuli", "events", "stats",
                 "clock"):
        if name == "samples":
            size = samples_file(cap).stat().st_size
            assert (size - 32) % 32 == 0, "samples.bin ends in a cut record"
        else:
            raw = (cap / f"{name}.tsv").read_bytes()
            assert raw.endswith(b"\n"), f"{name}.tsv ends in a cut row"
        assert len(read_rows(cap, name)) == int(end[name]), (name, end)
    assert len(read_rows(cap, "samples")) > 1000
    assert not (cap / ".reserve").exists(), "close left its space reserve"
    assert rig.daemon.proc.poll() is None, "".join(rig.daemon.log)
    assert status_json(rig.sock)["capture"] is None
    res = sbrig(rig.sock, "capture", "-d", "300ms", "-o", str(rig.tmp / "after"))
    assert res.returncode == 0, res.stderr
    assert meta_section(rig.tmp / "after", "end")["status"] == "complete"


def test_run_wait_asleep_then_hold_reaches_the_woken_target(rig):
    """'wait asleep' ends once the agent has been quiet for quiet_ms (the
    FakeAgent 'sleeps': frozen, what the host sends is lost); a hold sent to
    the sleeping target is delivered when it wakes (the link resends it)."""
    scn = rig.tmp / "asleep.scn"
    scn.write_text('wait asleep timeout 20s\nhold "while asleep" 100ms\n'
                   'wait event block timeout 10s\n')
    cap = rig.tmp / "run-asleep"
    p = subprocess.Popen([str(SBRIG), "-s", str(rig.sock), "run", str(scn), "-o",
                          str(cap)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        time.sleep(0.5)          # awake for a while: not asleep yet
        assert not [f for f in rig.agent.lost_while_asleep if f.type == "CMD"]
        rig.agent.sleep()
        t_sleep = time.monotonic()
        rig.agent.wait_for(lambda a: [f for f in a.lost_while_asleep
                                      if f.type == "CMD"], 20)
        t_cmd = time.monotonic()
        # default quiet_ms: 2.5 s of silence, counted from the agent's last
        # frame, which may come up to a ping period (200 ms) before sleep()
        assert 2.25 <= t_cmd - t_sleep < 6, t_cmd - t_sleep
        assert not rig.agent.commands
        rig.agent.wake()
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, out + err
    assert "wait asleep timeout 20s" in out
    assert kv(out)["status"] == "complete"
    lost = [f.int(0) for f in rig.agent.lost_while_asleep if f.type == "CMD"]
    got = [f.int(0) for f in rig.agent.cmd_frames if "hold" in f.raw_args]
    # sent while asleep (lost), sent again after the wake, run once
    assert rig.agent.commands == got[:1] and set(lost) == set(got), (lost, got)


def test_run_wait_asleep_times_out_on_an_awake_target(rig):
    scn = rig.tmp / "awake.scn"
    scn.write_text("wait asleep timeout 1s\n")
    cap = rig.tmp / "run-awake"
    res = sbrig(rig.sock, "run", str(scn), "-o", str(cap))
    assert res.returncode == 1, res.stdout + res.stderr
    want = f"failed: {scn}:1: wait asleep timed out after 1s"
    assert want in res.stderr and "quiet_ms 2500 ms" in res.stderr, res.stderr


@pytest.fixture(scope="module")
def slowio(tmp_path_factory):
    """tests/host/slowio.c: fdatasync()/fsync() that take SLOWSYNC_MS,
    getaddrinfo() of a name that takes SLOWDNS_MS."""
    out = tmp_path_factory.mktemp("shim") / "slowio.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-Wall", "-Werror",
                    "-o", str(out), str(REPO / "tests" / "host" / "slowio.c"),
                    "-ldl"], check=True)
    return out


def shim_env(shim: Path, **delays: str) -> dict[str, str]:
    return {"LD_PRELOAD": str(shim), **delays,
            "ASAN_OPTIONS": "verify_asan_link_order=0:"
                            + os.environ.get("ASAN_OPTIONS", "")}


def worst_round_trip(sock: Path, seconds: float) -> float:
    """The longest 'status' round trip on one connection over @seconds."""
    c = Conn(sock)
    worst = 0.0
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            t = time.monotonic()
            c.send(b"status\n")
            final, _ = c.answer()
            assert final.startswith("ok"), final
            worst = max(worst, time.monotonic() - t)
            time.sleep(0.05)
    finally:
        c.close()
    return worst


def test_slow_disk_does_not_stall_the_loop(tmp_path, slowio):
    """Each fdatasync of the capture's files takes 0.4 s (an SD card, a busy
    NFS server: the shim stands in for one, see slowio.c): sbrigd's
    loop still answers at once, the link does not flap, and no sample is
    lost; the syncs happen off the loop (every 5 s, capture-format.md:
    the shim's log shows those that ran while the round trips were
    timed)."""
    log = tmp_path / "syncs.log"
    with make_rig(tmp_path, env=shim_env(slowio, SLOWSYNC_MS="400",
                                         SLOWSYNC_LOG=str(log))) as r:
        cap = r.tmp / "slow"
        cli = subprocess.Popen([str(SBRIG), "-s", str(r.sock), "capture",
                                "-d", "13s", "-o", str(cap)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
        r.daemon.wait_log(f"capture {cap} started")
        t0 = time.monotonic_ns()
        worst = worst_round_trip(r.sock, 11)
        t1 = time.monotonic_ns()
        st = status_json(r.sock)
        out, err = cli.communicate(timeout=60)
        assert cli.returncode == 0, (out, err)
        synced = [int(x) for x in log.read_text().split()] if log.exists() else []
        during = [t for t in synced if t0 <= t <= t1]
        print(f"worst status round trip {worst * 1000:.0f} ms with 0.4 s "
              f"syncs ({len(during)} of them meanwhile)")
        # at 5 s and 10 s of the capture: the data files, 0.4 s each
        assert len(during) >= 2, (t0, t1, synced)
        assert worst < 0.5, worst
        assert st["link"]["connected"] is True and \
            st["link"]["reconnects"] == 0, st
        assert meta_section(cap, "end")["status"] == "complete"
        assert int(kv(out)["samples"]) == len(read_rows(cap, "samples"))
        assert read_rows(cap, "gaps") == []


def test_slow_dns_does_not_stall_the_loop(tmp_path, slowio):
    """The target's host name takes 1.5 s to resolve (a DNS server that does
    not answer: the shim stands in for one): every reconnect resolves it
    off the loop, so the daemon answers at once meanwhile and the link
    comes back."""
    with make_rig(tmp_path, env=shim_env(slowio, SLOWDNS_MS="1500"),
                  target_host="localhost") as r:
        ups = sum("agent fake up" in line for line in r.daemon.log)
        r.agent.drop_connection()
        worst = worst_round_trip(r.sock, 4)
        print(f"worst status round trip {worst * 1000:.0f} ms, 1.5 s DNS")
        assert worst < 0.5, worst
        end = time.monotonic() + 20
        while sum("agent fake up" in line for line in r.daemon.log) <= ups:
            assert time.monotonic() < end, "".join(r.daemon.log)
            time.sleep(0.1)


@contextlib.contextmanager
def silent_server():
    """A TCP server that accepts connections and never answers: an iiod
    host that hangs (a sensor's host half-dead, a firewall that eats the
    replies)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    conns = []
    stop = threading.Event()

    def accept():
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                conns.append(srv.accept()[0])
            except OSError:
                pass
    th = threading.Thread(target=accept, daemon=True)
    th.start()
    try:
        yield srv.getsockname()[1]
    finally:
        stop.set()
        th.join()
        for c in conns:
            c.close()
        srv.close()


def test_hung_sensor_host_does_not_stall_the_loop(tmp_path):
    """The sensor's iiod accepts and never answers: opening it and reading
    it run on the sensor's thread, so the daemon answers every status
    within the second it waits for a reading, says what the sensor is
    stuck in, and its link does not flap; a capture fails naming the
    sensor, without hanging."""
    with silent_server() as port, \
            make_rig(tmp_path, power_uri=f"ip:127.0.0.1:{port}") as r:
        worst = worst_round_trip(r.sock, 6)
        st = status_json(r.sock)
        print(f"worst status round trip {worst * 1000:.0f} ms, sensor hung")
        assert worst < 1.5, worst
        assert st["sensor"]["busy"] == "opening the sensor", st
        assert st["sensor"]["busy_ms"] >= 1000, st
        # for a person: the stuck sensor is the first problem (or the
        # error of the last attempt, which libiio ends after a few s)
        res = sbrig(r.sock, "status")
        assert res.returncode == 0
        assert res.stdout.startswith((
            "problems:  sensor: opening the sensor for ",
            f"problems:  sensor: ip:127.0.0.1:{port}: ")), res.stdout
        assert st["link"]["connected"] is True and \
            st["link"]["reconnects"] == 0, st
        t = time.monotonic()
        res = sbrig(r.sock, "capture", "-d", "2s", "-o", str(r.tmp / "cap"))
        took = time.monotonic() - t
        print(f"capture failed after {took:.1f} s: {res.stderr.strip()}")
        assert res.returncode == 1, res
        assert "sbrig: capture: failed: sensor: " in res.stderr, res.stderr
        assert meta_section(r.tmp / "cap", "end")["status"].startswith(
            "failed: sensor: ")


def run_request(dir_: Path, text: str, origin: str = "/pipe.scn") -> bytes:
    body = text.encode()
    return (f"run {dir_} bytes={len(body)} origin={origin}\n").encode() + body


def test_pipelined_requests_of_every_kind(rig):
    """Every request kind, written in one go on one connection: each gets
    exactly one final answer, in order, and a request never finds the
    previous one still running (two runs back to back used to answer the
    second with 'err 16 an operation is running')."""
    d = rig.tmp
    reqs = (run_request(d / "p1", "settle 50ms\n")
            + run_request(d / "p2", 'hold "pipe" 100ms\nsettle 20ms\n')
            + f"capture {d / 'p3'} duration=200ms\n".encode()
            + b"status\nversion\n"
            + b"agent 5s stats\n"
            + f"latency {d / 'p4'} n=1\n".encode()      # no key on this rig
            + b"press power\nplug in\n"
            + b"stop\n"                                  # nothing runs now
            + run_request(d / "p5", "repeat 3\nsettle 10ms\nend\n")
            + b"bogus\nversion\n")
    c = Conn(rig.sock)
    try:
        c.send(reqs)
        finals = [c.answer() for _ in range(13)]
    finally:
        c.close()
    want = [("ok ", "p1"), ("ok ", "p2"), ("ok ", "p3"), ("ok", None),
            ("ok sbrigd ", None), ("ok", None), ("err 2 ", "no key 'power'"),
            ("err 2 ", "no key 'power'"), ("err 2 ", "charger"),
            ("err 2 ", "nothing is running"), ("ok ", "p5"),
            ("err 22 ", "unknown request"), ("ok sbrigd ", None)]
    for (final, before), (prefix, text) in zip(finals, want):
        assert final.startswith(prefix), (finals, prefix)
        if text:
            assert text in final, (final, text)
    # the runs and the capture completed, each into its own directory
    for name in ("p1", "p2", "p3", "p5"):
        assert meta_section(d / name, "end")["status"] == "complete", name
    assert "status=complete" in finals[0][0]
    # status while nothing runs, from the pipeline
    assert "data operation: none" in finals[3][1], finals[3]
    assert [s.arg for s in read_rows(d / "p2", "stimuli", typed=True)] == ["pipe"]
    # the repeat ran its steps in order: step lines 1..N as they started
    steps = [l for l in finals[10][1] if l.startswith("progress step=")]
    assert len(steps) == 7 and steps[-1].startswith("progress step=3/3"), steps


def test_pipelined_requests_are_served_fairly(rig):
    """A client that pipelines thousands of requests does not hold up
    another one: the daemon takes one request per loop turn and client, so
    the other client's status is answered within a few of the flood's
    answers (the daemon used to work through a whole input buffer, about a
    thousand requests, in one go)."""
    flood = Conn(rig.sock)
    other = Conn(rig.sock)

    def ready() -> int:
        try:
            return flood.s.recv(1 << 20, socket.MSG_PEEK |
                                socket.MSG_DONTWAIT).count(b"\n")
        except BlockingIOError:
            return 0
    try:
        flood.send(b"version\n" * 4000)
        end = time.monotonic() + 20
        while ready() < 10:          # the flood is being answered
            assert time.monotonic() < end
        before = ready()
        other.send(b"status\n")
        final, _ = other.answer()
        after = ready()
        assert final == "ok"
        assert after < 4000, "the flood was answered before the status"
        assert after - before < 300, (before, after)
        got = 0
        while got < 4000:
            final, _ = flood.answer()
            assert final.startswith("ok sbrigd ")
            got += 1
    finally:
        flood.close()
        other.close()


# ---- the target from the CLI (issue 14) -------------------------------------

# A quiet time of its own (the default 2.5 s would make these tests slow):
# with pings every 200 ms an awake agent is never quiet for 800 ms.
FAST_QUIET = "quiet_ms = 800\n"


@pytest.fixture
def trig(tmp_path):
    with make_rig(tmp_path, FAST_QUIET) as r:
        yield r


def target_handler(agent: FakeAgent, *, state_done_err: int = 0,
                   sleep_on_mem: bool = True, rows=None):
    """The agent's policy/state/stats/hold as the real one answers them
    (link-protocol.md): 'state mem' is accepted at once and the target then
    falls asleep (frozen) when @sleep_on_mem, else it stays up (a blocker);
    'state on' is accepted, then DONE with @state_done_err."""
    seq = [500]

    def handler(cmd_id: int, verb: str, args: str) -> list:
        if verb == "policy":
            return [frame(f'@sb1 R {cmd_id} 0 "policy {args}"')]
        if verb == "state":
            out = [frame(f'@sb1 R {cmd_id} 0 "writing state {args}"')]
            if args != "on" and state_done_err:
                out.append(frame(f'@sb1 D {cmd_id} {state_done_err} '
                                 f'"state Device or resource busy"'))
            elif args != "on" and sleep_on_mem:
                out.append(agent.sleep)
            elif args == "on":
                out.append(frame(f'@sb1 D {cmd_id} {state_done_err} '
                                 f'"state done"'))
            return out
        if verb == "stats":
            table = rows or [("main", 3, 0, 0, 5_000_000, 0, 2_000_000, 100),
                             ("rig agent", 1, 1, 1_500_000, 1_500_000,
                              0, 1_500_000, 200_000_000)]
            out = [frame(f'@sb1 ST {cmd_id} {i} {len(table)} "{r[0]}" '
                         + " ".join(str(x) for x in r[1:]))
                   for i, r in enumerate(table)]
            return out + [frame(f'@sb1 R {cmd_id} 0 "{len(table)} rows"')]
        if verb == "hold":
            name = args.rsplit(" ", 1)[0]
            agent.send_event(seq[0], time.monotonic_ns(), "block", name)
            seq[0] += 1
            return [frame(f'@sb1 R {cmd_id} 0 "holding"'),
                    frame(f'@sb1 D {cmd_id} 0 "expired {name.strip(chr(34))}"')]
        return [frame(f'@sb1 R {cmd_id} 22 "unknown verb"')]
    return handler


def test_target_policy_and_state_on(trig):
    trig.agent.cmd_handler = target_handler(trig.agent)
    res = sbrig(trig.sock, "target", "policy", "opportunistic")
    assert res.returncode == 0, res.stderr
    assert kv(res.stdout)["policy"] == "opportunistic"
    assert kv(res.stdout)["text"] == "policy opportunistic"
    res = sbrig(trig.sock, "target", "state", "on")
    assert res.returncode == 0, res.stderr
    assert kv(res.stdout)["state"] == "on" and "slept" not in kv(res.stdout)
    sent = [f.raw_args.split(" ", 1)[1] for f in trig.agent.cmd_frames]
    assert sent == ["policy opportunistic", "state on"], sent


def test_target_state_mem_succeeds_when_the_target_sleeps(trig):
    """The agent takes 'state mem' and then falls silent (its user space is
    frozen: no DONE comes). The request succeeds once the link has been
    quiet for quiet_ms, not before the target slept and not with err 110."""
    trig.agent.cmd_handler = target_handler(trig.agent)
    t = time.monotonic()
    res = sbrig(trig.sock, "target", "state", "mem")
    took = time.monotonic() - t
    assert res.returncode == 0, res.stdout + res.stderr
    out = kv(res.stdout)
    assert out["state"] == "mem" and out["slept"] == "quiet", out
    assert trig.agent.asleep
    # quiet_ms after the agent's last frame (which may precede its reply
    # by a ping period), and not much more
    assert 0.6 <= took < 5, took
    quiet_since = int(out["quiet_since_ns"])
    assert quiet_since <= time.monotonic_ns() - 600_000_000
    # the status: asleep, no problem; awake again once it wakes
    st = status_json(trig.sock)
    assert st["link"]["asleep"] is True and st["problems"] == [], st
    assert st["link"]["silent_ms"] >= 800, st
    text = sbrig(trig.sock, "status").stdout
    assert re.search(r"^target:    asleep: no frame from its agent for "
                     r"[\d.]+ s \(or it stopped\), over tcp:", text, re.M), text
    trig.agent.wake()
    trig.agent.wait_for(lambda a: a.synced, 10)
    end = time.monotonic() + 10
    while status_json(trig.sock)["link"]["asleep"]:
        assert time.monotonic() < end, "still asleep after the wake"
        time.sleep(0.05)


def test_agent_state_mem_over_the_raw_protocol(trig):
    """The issue's case: 'agent 5s state mem' answered err 110 because the
    target did what it was asked. Now: ok once it is asleep."""
    trig.agent.cmd_handler = target_handler(trig.agent)
    c = Conn(trig.sock)
    try:
        c.send(b"agent 5s state mem\n")
        final, before = c.answer()
    finally:
        c.close()
    assert before == ["progress accepted writing state mem"], before
    assert final.startswith("ok slept=quiet witness=link quiet_since_ns="), final
    assert 'text="writing state mem"' in final, final
    trig.agent.wake()


def test_target_state_mem_resumed_before_quiet(trig):
    """A short sleep (forced policy, a wake source at once): the agent's
    DONE comes after the resume with the cycle's events, and the link was
    never quiet for quiet_ms: the exit event says it slept."""
    agent = trig.agent

    def handler(cmd_id, verb, args):
        now = time.monotonic_ns()
        return [frame(f'@sb1 R {cmd_id} 0 "writing state {args}"'),
                lambda: agent.send_event(0, now + 1_000_000, "enter", "deep"),
                lambda: agent.send_event(1, now + 2_000_000, "exit", "deep"),
                frame(f'@sb1 D {cmd_id} 0 "state done"')]
    agent.cmd_handler = handler
    t = time.monotonic()
    res = sbrig(trig.sock, "target", "state", "mem")
    assert res.returncode == 0, res.stdout + res.stderr
    assert time.monotonic() - t < 0.8 + 2     # not the quiet time's doing
    out = kv(res.stdout)
    assert (out["slept"], out["exit"]) == ("resumed", "deep"), out


def test_target_state_mem_times_out_while_a_blocker_holds(trig):
    """Accepted, but the target stays up (opportunistic with a blocker
    active): exit 1 after --timeout, saying why."""
    trig.agent.cmd_handler = target_handler(trig.agent, sleep_on_mem=False)
    t = time.monotonic()
    res = sbrig(trig.sock, "target", "state", "mem", "--timeout", "2s")
    assert res.returncode == 1, res.stdout + res.stderr
    assert 1.9 <= time.monotonic() - t < 6
    assert ("sbrig: target state: the target did not fall asleep within 2s: "
            "its agent was never quiet for quiet_ms 800 ms") \
        in res.stderr, res.stderr
    assert "ETIMEDOUT" in res.stderr


def test_target_state_refused_by_the_target(trig):
    """The write fails (an aborted forced suspend): the agent's DONE error
    ends the request at once."""
    trig.agent.cmd_handler = target_handler(trig.agent, state_done_err=16)
    res = sbrig(trig.sock, "target", "state", "freeze")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "agent: state Device or resource busy" in res.stderr
    assert "EBUSY" in res.stderr


def test_target_blockers_table_and_tsv(trig):
    trig.agent.cmd_handler = target_handler(trig.agent)
    res = sbrig(trig.sock, "target", "blockers")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].split() == ["name", "count", "wake_count",
                                "active_since_ms", "total_time_ms",
                                "sleep_time_ms", "max_time_ms",
                                "last_change_ms"], lines
    # '*' marks the active blocker; times in ms, aligned columns
    assert lines[1].split() == ["main", "3", "0", "0.000", "5.000", "0.000",
                                "2.000", "0.000"], lines
    assert lines[2].startswith("* rig agent ") and lines[2].split()[3:] == \
        ["1", "1", "1.500", "1.500", "0.000", "1.500", "200.000"], lines
    assert len({len(x) for x in lines}) == 1, "columns are not aligned"
    res = sbrig(trig.sock, "target", "blockers", "--tsv", "--active")
    assert res.returncode == 0, res.stderr
    assert res.stdout == ("name\tcount\twake_count\tactive_since_ns\t"
                          "total_time_ns\tsleep_time_ns\tmax_time_ns\t"
                          "last_change_ns\n"
                          "rig agent\t1\t1\t1500000\t1500000\t0\t1500000\t"
                          "200000000\n"), res.stdout
    # the raw protocol: one data line per row, then the count
    c = Conn(trig.sock)
    try:
        c.send(b"target blockers\n")
        final, before = c.answer()
    finally:
        c.close()
    assert final == "ok rows=2", final
    assert before[1].startswith('data blocker name="rig agent" count=1 '), before


def test_target_events_and_follow(trig):
    agent = trig.agent
    t0 = agent.clock()
    for i, (typ, arg) in enumerate([("block", '"a b"'), ("unblock", '"a b" 17'),
                                    ("policy", "opportunistic mem")]):
        agent.send_event(i, t0 + i * 1_000_000, typ, arg)
    trig.daemon.wait_log("link: agent")
    end = time.monotonic() + 10
    while True:
        res = sbrig(trig.sock, "target", "events")
        if res.stdout.count("\n") >= 4 or time.monotonic() > end:
            break
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == "-- boot boot-sbrigd-test --", lines
    assert re.fullmatch(r"\s+0\s+\d+\.\d{9}  block   \"a b\"", lines[1]), lines
    # the blocker object's id, when the agent sent one (link revision 2)
    assert re.fullmatch(r"\s+1\s+\d+\.\d{9}  unblock \"a b\" #17", lines[2]), lines
    assert lines[3].split()[2:] == ["policy", "opportunistic", "mem"], lines
    res = sbrig(trig.sock, "target", "events", "--tsv", "-n", "1")
    rows = res.stdout.splitlines()
    assert rows[0] == "host_t_ns\tuncert_ns\ttarget_t_ns\tboot_id\tseq\ttype\targ\tcut\tobj"
    assert len(rows) == 2 and rows[1].split("\t")[3:] == \
        ["boot-sbrigd-test", "2", "policy", "opportunistic mem", "0", "0"], rows
    # --follow: the kept ones, then each new one as it comes, until Ctrl-C
    p = subprocess.Popen([str(SBRIG), "-s", str(trig.sock), "target", "events",
                          "-n", "1", "--follow"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == "-- boot boot-sbrigd-test --\n"
        # the last one kept: the daemon follows from here on
        assert p.stdout.readline().split()[2] == "policy"
        got = []
        for i in range(3, 6):
            agent.send_event(i, t0 + i * 1_000_000, "block", f'"live{i}"')
            got.append(p.stdout.readline().split())
        assert [g[2:] for g in got] == [["block", f'"live{i}"'] for i in
                                       range(3, 6)], got
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, err
    assert out == "", out


def test_target_hold(trig):
    trig.agent.cmd_handler = target_handler(trig.agent)
    res = sbrig(trig.sock, "target", "hold", "from target", "150ms")
    assert res.returncode == 0, res.stderr
    assert kv(res.stdout)["hold"] == "from target"
    assert kv(res.stdout)["text"] == "expired from target"
    assert any('hold "from target" 150' in f.raw_args
               for f in trig.agent.cmd_frames)


def test_target_bad_input_names_the_argument(trig):
    """Unknown policy/state names and bad durations: a usage error (exit 2)
    naming the argument and the choices, nothing sent; the daemon refuses
    the same in the raw protocol (err 22)."""
    cases = [
        (["target", "policy", "sometimes"],
         "unknown policy 'sometimes' (forced, opportunistic)"),
        (["target", "state", "disk"],
         "unknown state 'disk' (on, mem, standby, freeze)"),
        (["target", "state", "MEM"], "unknown state 'MEM'"),
        (["target", "state"], "expected on|mem|standby|freeze"),
        (["target", "state", "mem", "--timeout", "5"],
         "--timeout: bad duration '5'"),
        (["target", "state", "mem", "--timeout", "0s"],
         "--timeout: bad duration '0s'"),
        (["target", "hold", "x", "soon"], "DURATION: bad duration 'soon'"),
        (["target", "hold", "x", "10us"], "DURATION: '10us' is below 1ms"),
        (["target", "hold", 'a"b', "1s"], "NAME: 'a\"b' is not a blocker name"),
        (["target", "hold", "", "1s"], "NAME: 1 to 255 characters"),
        (["target", "events", "-n", "x"], "-n: 'x' is not 0..1024"),
        (["target", "blockers", "--follow"], "bad option"),
        (["target", "nope"], "unknown sub-command 'nope'"),
        (["target"], "expected policy, state, blockers, events or hold"),
        (["hold", "x"], "expected NAME DURATION"),
    ]
    for args, msg in cases:
        res = sbrig(trig.sock, *args)
        assert res.returncode == 2, (args, res.stdout, res.stderr)
        assert msg in res.stderr, (args, res.stderr)
    assert not [f for f in trig.agent.cmd_frames
                if f.raw_args.split(" ")[1] in ("policy", "state", "hold")]
    raw = [(b"target policy sometimes\n",
            "err 22 policy: unknown policy 'sometimes' (forced, opportunistic)"),
           (b"target state disk\n",
            "err 22 state: unknown state 'disk' (on, mem, standby, freeze)"),
           (b"target state mem timeout=soon\n",
            "err 22 timeout: bad duration 'soon'"),
           (b"target state mem timeout=0s\n", "err 22 timeout: must be positive"),
           (b"target state mem later=1s\n", "err 22 unknown option 'later'"),
           (b"target hold \"\" 1s\n", "err 22 NAME: '' is not a blocker name"),
           (b"target hold x 0s\n", "err 22 DURATION: must be at least 1ms"),
           (b"target events n=-1\n", "err 22 n: '-1' is not 0..1024"),
           (b"target events follow=maybe\n", "err 22 follow: 'maybe' is not yes or no"),
           (b"target\n", "err 22 usage: target policy|state|hold|blockers|events"),
           (b"target dance\n", "(not 'dance')")]
    c = Conn(trig.sock)
    try:
        for req, want in raw:
            c.send(req)
            final, _ = c.answer()
            assert want in final, (req, final)
    finally:
        c.close()


def test_run_policy_and_state_steps(trig):
    """A scenario puts the target into opportunistic suspend itself: the
    policy step ends with the agent's reply, the state step once the target
    is asleep; the next steps run after it woke."""
    agent = trig.agent
    agent.cmd_handler = target_handler(agent)
    scn = trig.tmp / "opp.scn"
    scn.write_text("policy opportunistic\nstate mem timeout 10s\n"
                   "wait event resume timeout 20s\n")
    cap = trig.tmp / "run-opp"
    p = subprocess.Popen([str(SBRIG), "-s", str(trig.sock), "run", str(scn),
                          "-o", str(cap)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    steps = []
    try:
        # the wait for the resume starts only once the target slept
        for line in p.stdout:
            steps.append(line)
            if line.startswith("step 3/3"):
                break
        assert agent.asleep
        assert time.monotonic_ns() - agent.asleep_since >= 700_000_000
        # logged while it sleeps, sent when it wakes
        agent.send_event(0, agent.clock(), "resume", "0")
        agent.wake()
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, "".join(steps) + out + err
    assert steps[:2] == ["step 1/3 line=1 policy opportunistic\n",
                         "step 2/3 line=2 state mem timeout 10s\n"], steps
    assert kv(out)["status"] == "complete"
    stimuli = read_rows(cap, "stimuli", typed=True)
    assert [(s.what, s.arg) for s in stimuli] == [("policy", "opportunistic"),
                                                 ("state", "mem")], stimuli


def test_run_state_step_fails_on_an_awake_target(trig):
    trig.agent.cmd_handler = target_handler(trig.agent, sleep_on_mem=False)
    scn = trig.tmp / "awake.scn"
    scn.write_text("policy opportunistic\nstate mem timeout 1500ms\n")
    res = sbrig(trig.sock, "run", str(scn), "-o", str(trig.tmp / "run-awake"))
    assert res.returncode == 1, res.stdout + res.stderr
    want = (f"failed: {scn}:2: state mem: the target did not fall asleep "
            "within 1500ms (its agent was never quiet for quiet_ms 800 ms")
    assert want in res.stderr, res.stderr
