"""sbrigd on the host for the tests: the daemon, its rig and its clients.

What tests/test_sbrigd.py, test_sbrigd_hostile.py, test_sbrigd_latency.py
(and test_sbrigd_limits.py, test_rigs.py) share: the real daemon (ASan
build) in the background, the CLI, a raw protocol connection, the status
read and polled, and the rig they stand it on: the INA226 libiio-protocol
emulator (rig/virtual/ina226_iiod.py) as its sensor, a FakeAgent
(tests/rigproto.py) answering holds as its target, and at will a QMP peer
for its key or its target's run state.

    with sbrigd_rig(tmp_path, "name", "boot-id", ("--current-uA", "20000"),
                    timing="quiet_ms = 600\n") as r:
        st = wait_status(r, lambda s: s["link.asleep"] == "no")

Importing build (``# noqa: F401``) into a test module builds the ASan
binaries once for it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.rigproto import FakeAgent, frame
from tests.test_power import Emulator

REPO = Path(__file__).resolve().parents[1]
BIN = REPO / "build" / "host" / "asan"
SBRIGD = BIN / "sbrigd"
SBRIG = BIN / "sbrig"


@pytest.fixture(scope="module", autouse=True)
def build():
    subprocess.run(["make", "-C", str(REPO / "host"), "VARIANT=asan", "-j2"],
                   check=True, stdout=subprocess.DEVNULL)


class Daemon:
    """sbrigd in the background; its stderr collected in a thread."""

    def __init__(self, conf: Path, sock: Path, *extra: str,
                 env: dict[str, str] | None = None,
                 prefix: tuple[str, ...] = ()) -> None:
        self.sock = sock
        # @prefix: a command that execs the rest (the pid stays sbrigd's)
        self.proc = subprocess.Popen([*prefix, str(SBRIGD), "-c", str(conf), "-s",
                                      str(sock), *extra],
                                     env={**os.environ, **(env or {})},
                                     stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        self.log: list[str] = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.wait_log("listening on")

    def _read(self) -> None:
        for line in self.proc.stderr:
            with self.cond:
                self.log.append(line)
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def wait_log(self, text: str, timeout: float = 20) -> None:
        end = time.monotonic() + timeout
        with self.cond:
            while not any(text in l for l in self.log):
                assert self.proc.poll() is None or time.monotonic() < end, \
                    "".join(self.log)
                if time.monotonic() > end or (self.proc.poll() is not None
                                              and not any(text in l for l in self.log)):
                    raise AssertionError(f"no '{text}' in sbrigd log:\n"
                                         + "".join(self.log))
                self.cond.wait(0.1)

    def stop(self) -> int:
        return stop_daemon(self.proc)


def stop_daemon(proc: subprocess.Popen) -> int:
    """SIGTERM a daemon still running, SIGKILL it after 20 s; its status."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def sbrig(sock: Path | None, *args: str, timeout: float = 60):
    cmd = [str(SBRIG)] + (["-s", str(sock)] if sock else []) + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def status_json(sock: Path) -> dict:
    """sbrig status --json: the daemon's status keys as JSON paths."""
    res = sbrig(sock, "status", "--json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def kv(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        k, sep, v = line.partition(": ")
        if sep:
            out[k] = v
    return out


def hold_handler(agent: FakeAgent):
    """Agent commands: 'hold "NAME" MS' logs a block event of NAME."""
    seq = [1000]

    def handler(cmd_id: int, verb: str, args: str) -> list[bytes]:
        if verb == "hold":
            name = args.rsplit(" ", 1)[0]
            agent.send_event(seq[0], time.monotonic_ns(), "block", name)
            seq[0] += 1
        out = []
        if verb == "stats":
            out.append(frame(f'@sb1 ST {cmd_id} 0 1 "main" 1 0 0 5 0 5 100'))
        out.append(frame(f'@sb1 R {cmd_id} 0 "ok"'))
        if verb == "hold":      # asynchronous: DONE when released
            out.append(frame(f'@sb1 D {cmd_id} 0 "released"'))
        return out
    return handler


class Conn:
    """A raw protocol connection to sbrigd (daemon-protocol.md)."""

    def __init__(self, sock: Path, timeout: float = 30) -> None:
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(timeout)
        # a Unix socket with a timeout connects without blocking: EAGAIN
        # while the daemon's listen backlog is full (many connections at
        # once); try again until the timeout
        end = time.monotonic() + timeout
        while True:
            try:
                self.s.connect(str(sock))
                break
            except BlockingIOError:
                if time.monotonic() > end:
                    raise
                time.sleep(0.01)
        self.f = self.s.makefile("rwb")

    def send(self, data: bytes) -> None:
        self.f.write(data)
        self.f.flush()

    def line(self) -> str:
        line = self.f.readline().decode()
        assert line, "sbrigd closed the connection"
        return line.rstrip("\n")

    def answer(self) -> tuple[str, list[str]]:
        """(final line, the lines before it)."""
        before = []
        while True:
            line = self.line()
            if line.startswith(("ok", "err ")):
                return line, before
            before.append(line)

    def close(self) -> None:
        self.f.close()
        self.s.close()


def status(r) -> dict[str, str]:
    """The daemon's status lines (daemon-protocol.md: "data key: value"),
    from the raw protocol: sbrig status writes them for a person."""
    out = {}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(str(r.sock))
        s.sendall(b"status\n")
        for line in s.makefile():
            if line.startswith("data "):
                k, _, v = line[5:].rstrip("\n").partition(": ")
                out[k] = v
            elif line.startswith(("ok", "err")):
                assert line.startswith("ok"), line
                return out
    raise AssertionError(f"status: connection closed: {out}")


def poll(get, pred, timeout: float = 20, interval: float = 0.05):
    """get() again until pred() holds of what it returns or @timeout
    seconds have passed; the last value either way (the caller asserts
    on it, and the message shows it)."""
    end = time.monotonic() + timeout
    while True:
        v = get()
        if pred(v) or time.monotonic() > end:
            return v
        time.sleep(interval)


def wait_status(r, pred, timeout: float = 20):
    """The daemon's status once pred() holds of it; fails after @timeout."""
    st = poll(lambda: status(r), pred, timeout)
    assert pred(st), st
    return st


def rig_conf(name: str, power_uri: str, agent_port: int, *, power: str = "",
             target: str = "", sections: str = "", timing: str = "",
             target_host: str = "127.0.0.1") -> str:
    """A rig.conf: the INA226 at @power_uri, the agent at
    tcp:@target_host:@agent_port, pinged every 200 ms; @power, @target
    and @timing: lines added to their section, @sections: whole sections
    added before [timing]."""
    return f"""[rig]
name = {name}
[power]
uri = {power_uri}
device = ina226
shunt_uohm = 100000
{power}[target]
uri = tcp:{target_host}:{agent_port}
{target}{sections}[timing]
ping_interval_ms = 200
{timing}"""


def key_power(qmp: Path) -> str:
    """A [key:power] section: the power key (qcode 116) on the QMP peer
    at @qmp."""
    return f"[key:power]\nchip = qmp:{qmp}\nline = 116\n"


def assert_clean_exit(d: Daemon, rc: int) -> None:
    """The daemon ended by SIGTERM (or SIGKILL) with no sanitizer report."""
    log = "".join(d.log)
    assert "ERROR: AddressSanitizer" not in log, log
    assert "runtime error" not in log, log
    assert rc in (0, -9), log


@contextlib.contextmanager
def sbrigd_rig(tmp_path: Path, name: str, boot_id: str,
               emulator_args: tuple[str, ...], *, qmp=None,
               power_uri: str | None = None, env: dict[str, str] | None = None,
               prefix: tuple[str, ...] = (), **conf):
    """The emulator (started with @emulator_args), a FakeAgent of boot
    @boot_id answering holds (hold_handler), @qmp(path) when given (a QMP
    peer at DIR/qmp.sock, for a key or a state_uri the caller writes in
    @conf) and sbrigd on DIR/rig.conf (rig_conf(): @name, the sensor at
    @power_uri or the emulator's, @conf's lines) and DIR/run/sbrigd.sock,
    its environment extended by @env and started through @prefix, once
    its link is up. Yields a namespace: emu, agent, qmp, daemon, sock,
    tmp, conf. Afterwards each is stopped, and the daemon must have ended
    cleanly (assert_clean_exit())."""
    with contextlib.ExitStack() as stack:
        emu = Emulator(tmp_path, *emulator_args)
        stack.callback(emu.stop)
        agent = FakeAgent(boot_id=boot_id, kernel="6.1.0-test")
        stack.callback(agent.close)
        agent.cmd_handler = hold_handler(agent)
        peer = None
        if qmp:
            peer = qmp(tmp_path / "qmp.sock")
            stack.callback(peer.close)
        path = tmp_path / "rig.conf"
        path.write_text(rig_conf(name, power_uri or emu.uri, agent.port, **conf))
        sock = tmp_path / "run" / "sbrigd.sock"
        d = Daemon(path, sock, env=env, prefix=prefix)
        try:
            d.wait_log("link: agent fake up")
            yield SimpleNamespace(emu=emu, agent=agent, qmp=peer, daemon=d,
                                  sock=sock, tmp=tmp_path, conf=path)
        finally:
            assert_clean_exit(d, d.stop())
