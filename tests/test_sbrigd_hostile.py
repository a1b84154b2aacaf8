"""sbrigd against hostile and careless input (issue: foundation repairs).

The real daemon (ASan build) with the INA226 emulator and a FakeAgent, as
in test_sbrigd.py. Each test is a case that once hung, crashed or
misbehaved: scenarios that never yield, durations at the top of the
int64 range, one client's stop ending another's capture, a capture
directory whose name poses as summary keys, idle connections locking
everyone out, SIGTERM starting the next pipelined request.

Keys: no GPIO here, so the rig's key is a qmp: key (gpio.c's backend that
presses a QEMU guest's keys) on a real QEMU (tests/qemuqmp.py: no disk, its
firmware idles; a tap notes the keys the daemon sent). The asleep-witness
tests (wrig) need QEMU's run state "suspended", which only a guest that
enters S3 produces: they keep QmpStub below, a scripted QMP peer (a mock),
and test_vrig.py holds the same witness to a real suspended guest.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.capture import meta_section, read_rows
from tests.qemuqmp import QemuQmp
from tests.sbrigdrig import (SBRIG, SBRIGD, Conn, build, kv, sbrig,  # noqa: F401
                             key_power, sbrigd_rig, status, wait_status)
from tests.test_sbrigd import run_request

NEVER = "9223372036854775807ns"


class QmpStub:
    """A scripted QMP peer, a mock: QEMU's run state "suspended" comes only
    from a guest entering S3, which no host test boots (test_vrig.py's
    guest does). Greets, answers every command with an empty return but
    query-status (``status``: the run state, "running" until a test sets
    it), records the input-send-event keys and counts the query-status
    questions."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.status = "running"
        self.queries = 0
        self.keys: list[tuple[str, bool]] = []
        self.lock = threading.Lock()
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(str(path))
        self.srv.listen(4)
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.srv.accept()
            except OSError:
                return
            threading.Thread(target=self._client, args=(conn,),
                             daemon=True).start()

    def _client(self, conn: socket.socket) -> None:
        f = conn.makefile("rwb")
        f.write(b'{"QMP": {"version": {}, "capabilities": []}}\r\n')
        f.flush()
        for line in f:
            try:
                req = json.loads(line)
            except ValueError:
                continue
            if req.get("execute") == "input-send-event":
                for ev in req["arguments"]["events"]:
                    d = ev["data"]
                    with self.lock:
                        self.keys.append((d["key"]["data"], d["down"]))
            ans = {"return": {}}
            if req.get("execute") == "query-status":
                with self.lock:
                    self.queries += 1
                    ans = {"return": {"status": self.status,
                                      "running": self.status == "running",
                                      "singlestep": False}}
            if "id" in req:
                ans["id"] = req["id"]
            f.write(json.dumps(ans).encode() + b"\r\n")
            f.flush()

    def downs(self) -> list[tuple[str, bool]]:
        with self.lock:
            return list(self.keys)

    def close(self) -> None:
        self.srv.close()


@pytest.fixture
def hrig(tmp_path):
    """Emulator + fake agent + a qmp: key on a real QEMU + sbrigd."""
    with sbrigd_rig(tmp_path, "hostile", "boot-hostile",
                    ("--current-uA", "20000", "--rate", "500"), qmp=QemuQmp,
                    sections=key_power(tmp_path / "qmp.sock"),
                    timing="settle_ms = 700\n") as r:
        yield r


def words(text: str) -> dict[str, str]:
    """key=value words of an answer (values may be double-quoted)."""
    return dict(w.split("=", 1) for w in shlex.split(text) if "=" in w)


# ---------------------------------------------------------------- yield --

def test_a_scenario_that_never_waits_yields_to_the_loop(hrig):
    """repeat 1000000 / repeat 1000000 / end / end never waits for anything:
    it spun in the daemon for good (no client answered, stop and SIGTERM
    ignored). Now other clients are answered while it runs, samples keep
    coming, and stop ends it at once."""
    c = Conn(hrig.sock)
    try:
        c.send(run_request(hrig.tmp / "spin", "repeat 1000000\nrepeat 1000000\n"
                           "end\nend\n"))
        assert c.line().startswith("progress started ")
        t = time.monotonic()
        st = status(hrig)
        assert time.monotonic() - t < 5, "status waited for the scenario"
        assert st["operation"] == "running (run)"
        n1 = int(words(st["capture"])["samples"])
        # samples keep coming: the capture is served while the run spins
        wait_status(hrig, lambda s: int(words(s["capture"])["samples"]) >
                    n1 + 100)
        res = sbrig(hrig.sock, "stop", timeout=10)
        assert res.returncode == 0 and "run" in res.stdout, res
        final, _ = c.answer()
        assert final.startswith("err 125 "), final
    finally:
        c.close()
    assert meta_section(hrig.tmp / "spin", "end")["status"] == \
        "aborted: stopped by a client"


def test_sigterm_ends_a_scenario_that_never_waits(hrig):
    cli = subprocess.Popen([str(SBRIG), "-s", str(hrig.sock), "run",
                            str(_scn(hrig, "spin2.scn", "repeat 1000000\n"
                                     "repeat 1000000\nend\nend\n")),
                            "-o", str(hrig.tmp / "spin2")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    hrig.daemon.wait_log(f"capture {hrig.tmp / 'spin2'} started")
    t = time.monotonic()
    assert hrig.daemon.stop() == 0
    assert time.monotonic() - t < 10
    out, err = cli.communicate(timeout=20)
    assert meta_section(hrig.tmp / "spin2", "end")["status"] == "aborted"


def test_a_million_steps_run_to_the_end_and_the_client_keeps_up(hrig):
    """One repeat 1000000 with a step inside: 2 M step lines would drop the
    client ('too far behind') and sbrig exited 3 although the run
    completed. Step progress is coalesced for a client that reads slower:
    sbrig sees the run through and exits 0."""
    scn = _scn(hrig, "million.scn", "repeat 1000000\nunplug\nend\n")
    # no charger on this rig: unplug fails; a step that does nothing:
    scn.write_text("repeat 1000000\nrepeat 1\nend\nend\n")
    res = sbrig(hrig.sock, "run", str(scn), "-o", str(hrig.tmp / "million"),
                timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert kv(res.stdout)["status"] == "complete"
    lines = [l for l in res.stdout.splitlines() if l.startswith("step ")]
    # each line one of the scenario's 4 steps, the run's first and last
    # step among them
    assert lines and {l[:9] for l in lines} <= {f"step {i}/4 " for i in range(1, 5)}
    assert lines[0].startswith("step 1/4 "), lines[0]
    assert lines[-1].startswith("step 4/4 "), lines[-1]
    assert "too far behind" not in "".join(hrig.daemon.log)


def test_a_client_that_reads_nothing_during_a_million_steps_gets_coalesced_progress(hrig):
    """The same run with a client that reads not a byte until the run is
    over (its capture's [end] is in meta.ini): the 3 M step lines, over
    80 MB, are not queued for it (it would be dropped 'too far behind' at
    4 MiB); it gets what fitted before coalescing began (the daemon's
    64 KiB and the socket's buffer), the newest progress line and the
    final answer."""
    out = hrig.tmp / "million-unread"
    c = Conn(hrig.sock, timeout=300)
    try:
        c.send(run_request(out, "repeat 1000000\nrepeat 1\nend\nend\n"))
        end = time.monotonic() + 300
        while not (out / "meta.ini").exists() or \
                "[end]" not in (out / "meta.ini").read_text():
            assert time.monotonic() < end, "the run did not end"
            time.sleep(0.1)
        final, before = c.answer()
    finally:
        c.close()
    assert final.startswith("ok "), final
    steps = [l for l in before if l.startswith("progress step=")]
    # what the daemon queued before coalescing (64 KiB) and the socket's
    # buffer held, then the newest line: well under the 4 MiB at which a
    # client is dropped; uncoalesced, over 80 MB
    size = sum(len(l) + 1 for l in steps)
    assert 0 < size < 1 << 20, (len(steps), size)
    assert steps[-1].startswith("progress step=4/4 "), steps[-1]
    assert meta_section(out, "end")["status"] == "complete"
    assert "too far behind" not in "".join(hrig.daemon.log)


def _scn(r, name: str, text: str) -> Path:
    p = r.tmp / name
    p.write_text(text)
    return p


# ------------------------------------------------------------ durations --

@pytest.mark.parametrize("step", [
    f"settle {NEVER}", "settle 9223372036s",
    f"wait event block timeout {NEVER}",
    f"wait asleep timeout {NEVER}",
])
def test_huge_durations_mean_never(hrig, step):
    """Deadlines saturate: these steps used to overflow (ASan killed the
    daemon) or wrap into the past (the step ended at once)."""
    c = Conn(hrig.sock)
    try:
        c.send(run_request(hrig.tmp / "huge", step + "\n"))
        assert c.line().startswith("progress started ")
        assert c.line().startswith("progress step=1/1 ")
        st = wait_status(hrig, lambda s: s["operation"] == "running (run)")
        time.sleep(1.0)     # the step must still be running after a while
        assert status(hrig)["operation"] == "running (run)"
        c.send(b"stop\n")
        final, _ = c.answer()
        assert final.startswith("err 125 "), final
    finally:
        c.close()
    assert meta_section(hrig.tmp / "huge", "end")["status"] == \
        "aborted: stopped by the client"


def test_huge_capture_duration_and_stats_period(hrig):
    c = Conn(hrig.sock)
    try:
        c.send(f"capture {hrig.tmp / 'hugecap'} duration={NEVER} "
               f"stats_every={NEVER}\n".encode())
        assert c.line().startswith("progress started ")
        time.sleep(1.5)
        st = status(hrig)       # still answering, the capture still runs
        assert st["capture"].startswith("dir="), st
        c.send(b"stop\n")
        final, _ = c.answer()
        assert final.startswith("ok ") and "status=complete" in final, final
    finally:
        c.close()
    # a huge agent timeout: answered by the agent as usual
    c = Conn(hrig.sock)
    try:
        c.send(f"agent {NEVER} stats\n".encode())
        final, _ = c.answer()
        assert final.startswith("ok"), final
    finally:
        c.close()


def test_a_stats_period_below_100ms_is_refused(hrig):
    res = sbrig(hrig.sock, "capture", "-d", "1s", "--stats-every", "1ms",
                "-o", str(hrig.tmp / "fast"))
    assert res.returncode == 1 and "stats_every" in res.stderr, res.stderr
    assert not (hrig.tmp / "fast").exists()


def test_settle_without_a_duration_waits_settle_ms(hrig):
    scn = _scn(hrig, "settle.scn", "settle\n")
    t = time.monotonic()
    res = sbrig(hrig.sock, "run", str(scn), "-o", str(hrig.tmp / "settle"))
    took = time.monotonic() - t
    assert res.returncode == 0, res.stderr
    assert "step 1/1 line=1 settle default" in res.stdout, res.stdout
    assert 0.7 <= took < 5, took      # [timing] settle_ms = 700


# ------------------------------------------------------------- clients --

def test_one_clients_stop_ends_only_its_own_request(hrig):
    """A captures; B presses a key for a long time and stops: B's press
    ends (the key is released early), A's capture runs on. B's stop used
    to end A's capture."""
    a = Conn(hrig.sock)
    b = Conn(hrig.sock)
    try:
        a.send(f"capture {hrig.tmp / 'cap-a'}\n".encode())
        assert a.line().startswith("progress started ")
        b.send(b"press power 60s\n")
        end = time.monotonic() + 10
        while ("Power", True) not in hrig.qmp.downs() and \
                ("power", True) not in hrig.qmp.downs():
            assert time.monotonic() < end, hrig.qmp.downs()
            time.sleep(0.02)
        t = time.monotonic()
        b.send(b"stop\n")
        final, _ = b.answer()
        assert final.startswith("ok pressed_ns="), final
        assert time.monotonic() - t < 5, "the key was not released early"
        assert status(hrig)["capture"].startswith("dir="), \
            "B's stop ended A's capture"
        a.send(b"stop\n")
        final, _ = a.answer()
        assert "status=complete" in final, final
    finally:
        a.close()
        b.close()
    keys = [down for _, down in hrig.qmp.downs()]
    assert keys[-2:] == [True, False], hrig.qmp.downs()
    stimuli = [(s.what, s.arg) for s in read_rows(hrig.tmp / "cap-a", "stimuli",
                                                   typed=True)]
    assert stimuli == [("press", "power"), ("release", "power")], stimuli


def test_sigterm_does_not_start_the_next_pipelined_request(hrig):
    c = Conn(hrig.sock)
    try:
        c.send(f"capture {hrig.tmp / 'first'}\n"
               f"capture {hrig.tmp / 'second'} duration=1s\n".encode())
        assert c.line().startswith("progress started ")
        hrig.daemon.proc.send_signal(signal.SIGTERM)
        final, _ = c.answer()
        assert "status=aborted" in final, final
        assert hrig.daemon.proc.wait(20) == 0
    finally:
        c.close()
    assert meta_section(hrig.tmp / "first", "end")["status"] == "aborted"
    assert not (hrig.tmp / "second").exists()


def test_idle_connections_do_not_lock_others_out(hrig):
    """32 connections that send nothing took every slot, for good. The one
    idle the longest now makes room for a new client (and is told why).
    (70: more than the 64 slots there are now.)"""
    idle = [Conn(hrig.sock, timeout=10) for _ in range(70)]
    try:
        res = sbrig(hrig.sock, "status", timeout=10)
        assert res.returncode == 0, res.stderr
        # the oldest idle connections were closed, with a line saying why
        assert idle[0].line().startswith("err 87 closed: too many clients")
    finally:
        for c in idle:
            c.close()
    assert sbrig(hrig.sock, "status").returncode == 0


def test_a_directory_named_like_summary_keys_cannot_spoof_them(hrig):
    out = hrig.tmp / "x samples=7 status=bogus"
    res = sbrig(hrig.sock, "capture", "-d", "300ms", "-o", str(out))
    assert res.returncode == 0, res.stderr
    summary = kv(res.stdout)
    assert summary["dir"] == str(out), res.stdout
    assert summary["status"] == "complete"
    assert int(summary["samples"]) == len(read_rows(out, "samples"))
    assert res.stdout.count("status: ") == 1, res.stdout


def test_capture_run_and_latency_create_the_directories_they_lack(hrig):
    """The daemon made DIR but not its parents ('err 2 DIR: mkdir: No
    such file or directory'), while sbrig analyze -o DIR makes both: every
    output option creates what it lacks (issue 25)."""
    out = hrig.tmp / "not" / "there" / "cap"
    res = sbrig(hrig.sock, "capture", "-d", "200ms", "-o", str(out))
    assert res.returncode == 0, res.stderr
    assert kv(res.stdout)["status"] == "complete"
    scn = _scn(hrig, "s.scn", "settle 10ms\n")
    out = hrig.tmp / "not" / "there" / "either" / "run"
    res = sbrig(hrig.sock, "run", str(scn), "-o", str(out))
    assert res.returncode == 0, res.stderr
    assert meta_section(out, "end")["status"] == "complete"
    (hrig.tmp / "afile").write_text("")
    res = sbrig(hrig.sock, "capture", "-d", "200ms", "-o",
                str(hrig.tmp / "afile" / "cap"))
    assert res.returncode == 1 and str(hrig.tmp / "afile") in res.stderr, res


def test_a_nul_in_a_run_body_is_an_error_at_its_place(hrig):
    body = "settle 10ms\nsettle 1\x00s\n"
    c = Conn(hrig.sock)
    try:
        c.send(run_request(hrig.tmp / "nul", body, origin="/nul.scn"))
        final, _ = c.answer()
    finally:
        c.close()
    assert final.startswith("err 22 /nul.scn:2:9: "), final
    assert not (hrig.tmp / "nul").exists()


# --------------------------------------------------- start-up and the CLI --

def test_a_gpio_failure_at_start_up_names_the_chip(tmp_path):
    conf = tmp_path / "rig.conf"
    conf.write_text("[rig]\nname = nochip\n[key:power]\n"
                    "chip = /dev/gpiochip-does-not-exist\nline = 3\n")
    res = subprocess.run([str(SBRIGD), "-c", str(conf), "-s",
                          str(tmp_path / "s.sock")], capture_output=True,
                         text=True, timeout=30)
    assert res.returncode == 1, res
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("sbrigd: ") and "gpiochip-does-not-exist" in last, \
        res.stderr


def test_a_fifo_as_config_is_refused_at_once(tmp_path):
    fifo = tmp_path / "rig.conf"
    os.mkfifo(fifo)
    res = subprocess.run([str(SBRIGD), "-c", str(fifo), "-s",
                          str(tmp_path / "s.sock")], capture_output=True,
                         text=True, timeout=30)
    assert res.returncode == 1 and str(fifo) in res.stderr, res


def test_sbrig_gives_up_on_a_wedged_daemon_after_a_second_ctrl_c(tmp_path):
    """A daemon that accepts but never answers (mock: a bare listening
    socket): Ctrl-C sends stop; a second Ctrl-C ends sbrig at once (it
    waited for ever)."""
    path = tmp_path / "wedged.sock"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen(1)
    cli = subprocess.Popen([str(SBRIG), "-s", str(path), "capture", "-o",
                            str(tmp_path / "c")], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        srv.settimeout(10)
        conn, _ = srv.accept()
        conn.settimeout(10)
        buf = b""

        def more() -> None:
            nonlocal buf
            got = conn.recv(4096)
            assert got, f"sbrig closed the connection: {cli.communicate()}"
            buf += got
        while b"\n" not in buf:
            more()
        cli.send_signal(signal.SIGINT)
        while b"stop\n" not in buf:
            more()
        t = time.monotonic()
        cli.send_signal(signal.SIGINT)
        out, err = cli.communicate(timeout=10)
        assert time.monotonic() - t < 5
        assert cli.returncode == 3, (out, err)
        assert "interrupted again" in err, err
    finally:
        if cli.poll() is None:
            cli.kill()
        srv.close()


# ------------------------------------------- followers and CRLF (issue 25) --

# A process that opens N connections, each asking to follow the target's
# events (n=1: an accepted follower is sent the kept event at once, a
# refused one "err 16"), prints what each got first as one JSON line, and
# keeps them open until its standard input closes.
FOLLOWERS = r"""
import json, socket, sys
path, n = sys.argv[1], int(sys.argv[2])
conns, first = [], []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)     # blocking: waits while the backlog is full
        s.settimeout(30)
    except OSError as e:
        first.append("connect: " + e.strerror)
        continue
    try:
        s.sendall(b"target events n=1 follow=yes\n")
    except OSError:
        # refused before the request went out (EPIPE): what the daemon
        # said before it closed is still there to read
        try:
            first.append(s.makefile("rb").readline().decode().strip()
                         or "closed")
        except OSError as e:
            first.append("recv: " + str(e))
        continue
    conns.append(s)
for s in conns:
    f = s.makefile("rb")
    try:
        first.append(f.readline().decode().strip() or "closed")
    except OSError as e:
        first.append("recv: " + str(e))
print(json.dumps(first), flush=True)
sys.stdin.read()
"""


class Followers:
    """N follow requests from one process of their own (SO_PEERCRED pid)."""

    def __init__(self, sock: Path, n: int) -> None:
        self.proc = subprocess.Popen(["/usr/bin/python3", "-c", FOLLOWERS,
                                      str(sock), str(n)],
                                     stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.first: list[str] | None = None

    def wait(self, timeout: float = 60) -> list[str]:
        """What each connection got first (once every one answered)."""
        if self.first is None:
            line = _readline(self.proc.stdout, timeout)
            assert line, "the follower process died"
            self.first = json.loads(line)
        return self.first

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        self.proc.wait(30)


def _readline(f, timeout: float) -> str:
    out: list[str] = []
    t = threading.Thread(target=lambda: out.append(f.readline()), daemon=True)
    t.start()
    t.join(timeout)
    assert out, f"no answer within {timeout} s"
    return out[0]


def _one_event(r) -> None:
    """Give the daemon one kept event (a follower's first line)."""
    r.agent.send_event(1, time.monotonic_ns(), "block", '"kept"')
    wait_status(r, lambda s: True)      # the link is served
    end = time.monotonic() + 10
    while True:
        c = Conn(r.sock, timeout=10)
        try:
            c.send(b"target events n=1\n")
            final, before = c.answer()
        finally:
            c.close()
        if before:
            return
        assert time.monotonic() < end, final
        time.sleep(0.05)


def _answers_quickly(r, limit_s: float = 5.0) -> None:
    """sbrig status, version and stop are answered, each within limit_s: a
    liveness bound (a locked-out client waited for ever or was refused),
    not a latency figure: on a loaded 2-core CI machine an ASan sbrig takes
    a good part of a second to start."""
    t = time.monotonic()
    res = sbrig(r.sock, "status", timeout=30)
    took = time.monotonic() - t
    assert res.returncode == 0, res.stderr
    assert took < limit_s, f"sbrig status took {took:.2f} s"
    for req, want in ((b"version\n", "ok sbrigd "),
                      (b"stop\n", "err 2 nothing is running")):
        t = time.monotonic()
        c = Conn(r.sock, timeout=10)
        try:
            c.send(req)
            final, _ = c.answer()
        finally:
            c.close()
        assert final.startswith(want), (req, final)
        assert time.monotonic() - t < limit_s, req


def test_32_followers_do_not_lock_anyone_out(hrig):
    """32 'target events follow=yes' took every slot for good: status,
    version and stop got err 24 or a broken pipe, sbrig status exited 3.
    Followers are bounded per process (4) and in all (16), and the slots
    of lasting requests leave room for everyone else."""
    _one_event(hrig)
    f = Followers(hrig.sock, 32)
    try:
        first = f.wait()
        _answers_quickly(hrig)
        followed = [x for x in first if x.startswith("data event ")]
        refused = [x for x in first if x.startswith("err 16 follow: ")]
        assert len(followed) == 4 and len(refused) == 28, first
        st = status(hrig)
        assert st["daemon.followers"] == "4", st
    finally:
        f.close()
    wait_status(hrig, lambda s: s["daemon.followers"] == "0")


def test_400_followers_from_8_processes_do_not_lock_anyone_out(hrig):
    """400 followers from 8 processes: at most 16 follow at a time (the
    longest following makes room for a new one, told 'evicted=yes'), the
    refused and the idle connections make room for new clients, and a
    person's status, version and stop are answered (within 5 s: a liveness bound)."""
    _one_event(hrig)
    procs = [Followers(hrig.sock, 50) for _ in range(8)]
    try:
        firsts = [p.wait() for p in procs]
        for first in firsts:
            assert sum(x.startswith("data event ") for x in first) >= 1, first
            assert all(x.startswith(("data event ", "err 16 follow: ",
                                     "err 87 closed: too many clients",
                                     "closed")) for x in first), first
        _answers_quickly(hrig)
        st = status(hrig)
        assert int(st["daemon.followers"]) == 16, st
        assert int(st["daemon.clients"]) <= 64, st
        # a new follower still gets in: the one following longest yields
        c = Conn(hrig.sock, timeout=10)
        try:
            c.send(b"target events n=1 follow=yes\n")
            assert c.line().startswith("data event "), "new follower refused"
            assert status(hrig)["daemon.followers"] == "16"
            c.send(b"stop\n")
            final, _ = c.answer()
            assert final.startswith("ok events=1 dropped=0"), final
        finally:
            c.close()
    finally:
        for p in procs:
            p.close()
    wait_status(hrig, lambda s: s["daemon.followers"] == "0")
    _answers_quickly(hrig)


def test_a_run_body_that_never_comes_holds_no_slot(hrig):
    """'run DIR bytes=1048576 ...' and no body: the connection counted as
    busy (no eviction, no idle timeout) and 1 MiB was allocated at once.
    It is idle now: 70 of them leave room for status."""
    conns = []
    try:
        for i in range(70):
            try:
                c = Conn(hrig.sock, timeout=10)
                c.send(f"run {hrig.tmp / ('b%d' % i)} bytes=1048576 "
                       f"origin=/x.scn\n".encode())
                conns.append(c)
            except OSError:
                break
        _answers_quickly(hrig)
    finally:
        for c in conns:
            c.close()


CRLF_REQUESTS = [
    # (request, the final answer's start for LF and CRLF alike)
    ("status", "ok"),
    ("version", "ok sbrigd "),
    ("press power 20ms", "ok pressed_ns="),
    ("plug in", "err 2 "),
    ("capture {d}/cap duration=200ms", "ok dir="),
    ("agent 5s stats", "ok"),
    ("latency {d}/lat n=1 timeout=300ms", "err 110 "),
    ("target policy forced", "ok policy=forced "),
    ("target state nonsense", "err 22 state: unknown state 'nonsense'"),
    ("target hold crlf 20ms", "ok hold=crlf "),
    ("target blockers", "ok rows=1"),
    ("target events n=0", "ok events=0 "),
    ("target events n=0 follow=no", "ok events=0 "),
    ("stop", "err 2 nothing is running"),
]


@pytest.mark.parametrize("eol", ["\n", "\r\n"], ids=["LF", "CRLF"])
def test_requests_of_every_verb_end_with_lf_or_crlf(hrig, eol):
    """Every CRLF request was refused 'err 22 bad request: NUL byte' (the
    \\r became a NUL, then the line was checked for NULs). A trailing \\r
    is ignored, as daemon-protocol.md says: each verb answers the same to
    LF and CRLF lines."""
    d = hrig.tmp / ("lf" if eol == "\n" else "crlf")
    d.mkdir()
    for req, want in CRLF_REQUESTS:
        line = req.format(d=d)
        c = Conn(hrig.sock, timeout=30)
        try:
            c.send((line + eol).encode())
            final, _ = c.answer()
        finally:
            c.close()
        assert final.startswith(want), (line, final)
    # run: the request line, then its body
    body = "settle 10ms\n"
    c = Conn(hrig.sock, timeout=30)
    try:
        c.send(f"run {d}/run bytes={len(body)} origin=/x.scn{eol}{body}"
               .encode())
        final, _ = c.answer()
        assert final.startswith("ok dir=") and "status=complete" in final, \
            final
        # an empty line is ignored; stop ends the client's own request
        c.send(f"{eol}capture {d}/own{eol}".encode())
        assert c.line().startswith("progress started ")
        c.send(f"stop{eol}".encode())
        final, _ = c.answer()
        assert "status=complete" in final, final
    finally:
        c.close()
    # a NUL before the line end is still refused
    c = Conn(hrig.sock, timeout=30)
    try:
        c.send(f"version\0x{eol}".encode())
        final, _ = c.answer()
        assert final == "err 22 bad request: NUL byte", final
    finally:
        c.close()


# --------------------------------------------- the asleep witness (issue 25) --

@pytest.fixture
def wrig(tmp_path):
    """The hostile rig with witnesses besides the link: the machine's run
    state on the QmpStub ([target] state_uri) and the supply at 5 mA or
    less ([power] asleep_uA); the agent answers state requests."""
    qmp = tmp_path / "qmp.sock"
    with sbrigd_rig(tmp_path, "witness", "boot-witness",
                    ("--current-uA", "20000", "--rate", "500"), qmp=QmpStub,
                    power="asleep_uA = 5000\n", target=f"state_uri = qmp:{qmp}\n",
                    timing="quiet_ms = 2500\n") as r:
        yield r


def test_the_machine_witness_decides_first_and_says_so(wrig):
    """The daemon decided "asleep" from the link's silence alone. With a
    [target] state_uri, QEMU's "suspended" says asleep at once (the agent
    still talks here: the stronger witness wins), and the daemon says
    which witness decided: status, and a sleep request's answer."""
    st = wait_status(wrig, lambda s: s.get("asleep.witness") == "power")
    assert st["link.asleep"] == "no", st        # 20 mA: awake, by the supply
    assert "20.000 mA, above the 5.000 mA" in st["asleep.detail"], st
    wrig.qmp.status = "suspended"
    st = wait_status(wrig, lambda s: s["link.asleep"] == "yes", timeout=5)
    assert st["asleep.witness"] == "machine", st
    assert st["asleep.detail"].endswith("says suspended"), st
    res = sbrig(wrig.sock, "status", timeout=10)
    assert "asleep, seen by the machine" in res.stdout, res.stdout
    c = Conn(wrig.sock)
    try:
        t = time.monotonic()
        c.send(b"target state mem timeout=20s\n")
        final, _ = c.answer()
        took = time.monotonic() - t
    finally:
        c.close()
    w = words(final[3:])
    assert final.startswith("ok ") and w["slept"] == "asleep", final
    assert w["witness"] == "machine" and "says suspended" in w["detail"], final
    assert took < 2.5, f"{took:.2f} s: waited for the link's quiet_ms"
    # a stopped machine is not asleep, whatever the link says
    wrig.qmp.status = "paused"
    wrig.agent.sleep()
    st = wait_status(wrig, lambda s: s["asleep.detail"].endswith("says paused"),
                     timeout=5)
    assert st["link.asleep"] == "no" and st["asleep.witness"] == "machine", st


def test_the_power_witness_tells_during_a_capture_after_a_quiet_spell(wrig):
    """While a capture runs and nobody asks whether the target sleeps, the
    sensor wakes the daemon for its samples only once a second (a wake-up
    is the dearest thing its loop does; rig.c power_pace()), so the newest
    sample it holds may be older than the power witness accepts. Asked
    again, the witness gets fresh samples within a second and a quarter
    and decides from the supply, every time it is asked from then on: the
    quiet spell costs it no verdict."""
    cap = wrig.tmp / "quiet-cap"
    cli = subprocess.Popen([str(SBRIG), "-s", str(wrig.sock), "capture", "-d",
                            "30s", "-o", str(cap)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        wrig.daemon.wait_log(f"capture {cap} started")
        time.sleep(6.5)     # nobody asks: the watch lapses after 5 s
        wrig.emu.ctl("current_uA 1000")
        t = time.monotonic()
        st = wait_status(wrig, lambda s: s.get("asleep.witness") == "power"
                         and s["link.asleep"] == "yes", timeout=10)
        took = time.monotonic() - t
        assert "1.000 mA, within the 5.000 mA" in st["asleep.detail"], st
        assert st["capture"] != "none", st      # the capture's own samples
        # a second's wake-up, the buffer (a quarter second at 500 S/s),
        # the emulator's and the status round trips' slack
        assert took < 2.5, f"{took:.2f} s before the supply could tell"
        # watched, the samples come every quarter second: the newest is
        # never too old for the witness, which tells every time it is asked
        seen = []
        end = time.monotonic() + 2.5
        while time.monotonic() < end:
            seen.append(status(wrig).get("asleep.witness"))
            time.sleep(0.1)
        assert set(seen) == {"power"}, seen
    finally:
        wrig.emu.ctl("current_uA 20000")
        cli.send_signal(signal.SIGINT)
        cli.communicate(timeout=60)


def test_a_deep_sleeper_that_qemu_shows_running_is_awake(wrig):
    """QEMU says "running": for a target that sleeps in s2idle that tells
    nothing, but the event log says this one sleeps deep (its "suspend mem
    deep" and "enter deep" records), which QEMU shows "suspended". So a
    running machine is awake, whatever the link and the supply say: a
    "wait asleep" that took the agent's silence on the way down (the
    suspend path freezes it seconds before QEMU stops) let a press meet
    the suspend and abort it (lava-press.scn's "wait event resume timed
    out")."""
    wrig.emu.ctl("current_uA 3000")             # the supply says asleep too
    # s2idle-like (no record says how it sleeps): the supply decides
    st = wait_status(wrig, lambda s: s.get("asleep.witness") == "power"
                     and s["link.asleep"] == "yes")
    assert "3.000 mA, within" in st["asleep.detail"], st
    t = wrig.agent.clock()
    wrig.agent.send_event(1, t, "suspend", "mem deep")
    wrig.agent.send_event(2, t + 1_000_000, "enter", "deep")
    st = wait_status(wrig, lambda s: s.get("asleep.witness") == "machine",
                     timeout=5)
    assert st["link.asleep"] == "no", st
    assert st["asleep.detail"].endswith("says running (its sleep is deep)"), st
    wrig.agent.sleep()                          # silent beyond quiet_ms
    time.sleep(3.0)
    st = status(wrig)
    assert st["link.asleep"] == "no" and st["asleep.witness"] == "machine", st
    wrig.qmp.status = "suspended"
    st = wait_status(wrig, lambda s: s["link.asleep"] == "yes", timeout=5)
    assert st["asleep.witness"] == "machine", st
    # its sleeps are s2idle again: "running" tells nothing, the supply decides
    wrig.qmp.status = "running"
    wrig.agent.wake()
    wrig.agent.send_event(3, wrig.agent.clock(), "suspend", "mem s2idle")
    st = wait_status(wrig, lambda s: s.get("asleep.witness") == "power",
                     timeout=5)
    assert st["link.asleep"] == "yes", st


def test_the_supply_witness_tells_asleep_from_a_silent_agent(wrig):
    """QEMU says running (s2idle looks so): the supply decides. A silent
    agent with the supply at its running level is not asleep (the link
    alone said it was); the supply at its sleep level is asleep before
    the link's quiet_ms are over."""
    wrig.agent.sleep()          # the agent falls silent
    t = time.monotonic()
    while time.monotonic() - t < 3.5:           # longer than quiet_ms
        st = status(wrig)
        assert st["link.asleep"] == "no", st    # 20 mA: awake
        assert st["asleep.witness"] == "power", st
        time.sleep(0.25)
    wrig.agent.wake()
    wait_status(wrig, lambda s: s.get("link.connected") == "yes")
    c = Conn(wrig.sock)
    try:
        c.send(b"target state mem timeout=20s\n")
        assert c.line().startswith("progress accepted ")
        wrig.emu.ctl("current_uA 3000")     # the target suspends
        t = time.monotonic()
        final, _ = c.answer()
        took = time.monotonic() - t
    finally:
        c.close()
    w = words(final[3:])
    assert w["slept"] == "asleep" and w["witness"] == "power", final
    assert "3.000 mA, within the 5.000 mA" in w["detail"], final
    assert took < 2.0, took


def test_without_other_witnesses_the_link_decides_and_says_so(hrig):
    """The hostile rig has no state_uri, no asleep_uA, no marker: the
    link decides, and says so."""
    st = status(hrig)
    assert st["asleep.witness"] == "link" and st["link.asleep"] == "no", st
    assert "no frame from the agent for" in st["asleep.detail"], st
    c = Conn(hrig.sock)
    try:
        c.send(b"target state mem timeout=20s\n")
        assert c.line().startswith("progress accepted ")
        hrig.agent.sleep()
        final, _ = c.answer()
    finally:
        c.close()
    w = words(final[3:])
    assert w["slept"] == "quiet" and w["witness"] == "link", final
