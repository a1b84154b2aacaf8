#!/usr/bin/python3
"""rig_host.py - the rig host of a LAVA device: it answers the target's
requests for power scenarios (lava-jobs/README.md), on the virtual rig
attached to the QEMU that LAVA boots (``attach``) or on a board's rig
(``attach-board``).

    rig_host.py attach --dir DIR --target-port P --power-port Q
                       [--scenarios DIR] [--sbrig-bin DIR] [--history DB]
                       [--compare-config FILE] [--warm-up N]
    rig_host.py attach-board --dir DIR --rig-conf FILE --listen HOST:PORT
                       --secret-file FILE [--read-timeout S] [--key KEY]
                       [--scenarios DIR] [--sbrig-bin DIR] [--history DB]
                       [--compare-config FILE] [--warm-up N]
    rig_host.py detach --dir DIR

A LAVA qemu job boots QEMU itself, so the virtual rig cannot boot its own
(rig/virtual/vrig.py does): the device dictionary
(lava-jobs/devices/qemu-sbrig.jinja2) gives LAVA's QEMU the rig's wiring,
all served by QEMU in DIR, and a power job's user command runs ``attach``
once the target has booted:

    DIR/qemu-qmp.sock   QEMU's QMP: the run state for the power model, the
                        keypad's wake (system_wakeup), QEMU's pid (the peer
                        credentials of the socket)
    DIR/keypad.sock     the virtio-serial port org.sbrig.keypad (vkeypad)
    DIR/rig.sock        the virtio-serial port org.sbrig.rig: the rig channel
    127.0.0.1:P         the guest's ttyS1 (the target agent's link)

``attach`` starts a daemon (its log DIR/rig-host.log, its pid
DIR/rig-host.pid) and returns once it is attached, printing what it
serves; the daemon runs the parts of vrig.py on them: the INA226 emulator
(rig/virtual/ina226_iiod.py on 127.0.0.1:Q, its current following QEMU's
run state and CPU time through vrig.PowerModel), the keys' QMP socket for
sbrigd (vrig.LineProxy on DIR/keys.sock: a key down wakes S3 and is a
line on the keypad port), DIR/rig.conf (rig/virtual.conf with these URIs:
the same file for every job of the device, so runs of different jobs are
comparable), and the rig channel's request server. ``detach`` (the user
command's undo) stops it and waits for it to end.

The rig channel (one request per job; lines of text):

    target: run SCENARIO RUNS COMMIT BASELINE|-
    rig:    ready                    sbrigd (with SBRIG_GIT_SHA=COMMIT) has
                                     the agent's link; the target now
                                     suspends opportunistically
            ... the rig runs SCENARIO RUNS times (each from S3: it waits
            for QEMU's "suspended"; first --warm-up runs it discards:
            captured, nothing else), ``sbrig analyze``s each capture,
            ``sbrig compare``s them with its runs of BASELINE (with
            ``-c FILE`` of --compare-config: this rig's minimum changes,
            e.g. rig/virtual/compare.conf for the virtual rig), files them
            with ``sbrig history add`` (--history) ...
    rig:    LINES, then end          with the key held down (the target is
                                     woken and kept up by its keypad-scan):
                                     ``lava-test-set start run-N``, the
                                     lines of ``sbrig export --lava`` of
                                     run N's report.json, ``lava-test-set
                                     stop``, the same for compare.json in
                                     the set ``compare`` (or
                                     ``compare_verdict`` skip without a
                                     baseline, or with ``note no verdict:
                                     WHY`` when compare refuses the runs),
                                     ``error TEXT`` for what failed
    target: ack                      it left opportunistic suspend; the rig
                                     lets the key go

``attach-board`` is the same request server for a board (a BeagleBone
with rig/beaglebone.conf's GPIO keys, INA226 and UART): the rig channel is
a TCP port on the lab address --listen names (there is no default), the
scenarios wait for the target to sleep themselves (``wait asleep``), and
the key is held down through sbrigd (a ``press KEY`` request) while the
target takes the answer. As it presses the board's keys and files runs in
the history, the TCP channel wants the shared secret of --secret-file
(mode 0600, the rig host's user's) first:

    target: auth SECRET              compared in constant time; else
    rig:    error auth: wrong secret, then end, and the connection closes

Each connection has its own thread (MAX_CLIENTS at once, more are
answered ``error busy: ...``), and a target silent for --read-timeout
seconds before its request is dropped (``error silent for S s: dropped``).
Only one sbrigd may own the rig's lines: the rig host starts its own for
each request (with SBRIG_GIT_SHA), so one request runs at a time; a
second is answered ``error busy: ...`` and ``end``. A board's rig host
does not load the virtual rig's modules (no QEMU there).

Runs are kept in DIR/runs/SCENARIO/COMMIT/STAMP-N/{capture,report}/ and a
comparison in DIR/runs/SCENARIO/COMMIT/STAMP-compare/; DIR/session.json
lists the last request's runs, comparison and lines (and ``warm_up``: the
discarded warm-up runs' directories, STAMP-warmK/; ``rewakes``: how often
the virtual keypad woke a guest again that suspended before taking its
key's line, vrig.py). Scenarios are
SCENARIO.scn in --scenarios (default rig/scenarios/); a name must be a
LAVA name, so it cannot leave that directory.
"""

from __future__ import annotations

import argparse
import datetime
import hmac
import importlib.util
import json
import os
import re
import signal
import socket
import stat
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# The virtual rig's modules (rig/virtual/vrig.py and its ina226_iiod,
# tests/vm/qmp.py) are loaded by `attach` only (_load_virtual): a board's
# rig host (`attach-board`) has no QEMU and need not have them.
vrig = None
ina226_iiod = None
QmpClient = None


def _load_virtual() -> None:
    global vrig, ina226_iiod, QmpClient
    if vrig is not None:
        return
    from tests.vm.qmp import QmpClient as qmp_client
    path = REPO / "rig" / "virtual" / "vrig.py"
    spec = importlib.util.spec_from_file_location("vrig", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    vrig, ina226_iiod, QmpClient = mod, mod.ina226_iiod, qmp_client


DEFAULT_SCENARIOS = REPO / "rig" / "scenarios"
DEFAULT_BIN = REPO / "build" / "host" / "release"
NAME = re.compile(r"^[A-Za-z0-9_.-]{1,31}$")
SHA = re.compile(r"^[0-9a-f]{7,40}$")
LAVA_LINE = re.compile(r"^lava-test-case [A-Za-z0-9_.-]{1,100} --result (pass|fail|skip)"
                       r"( --measurement -?[0-9]+(\.[0-9]+)? --units [A-Za-z0-9_%/.-]+)?$")

SECRET_MIN, SECRET_MAX = 16, 256
SECRET = re.compile(rb"[A-Za-z0-9+/=_.-]{%d,%d}" % (SECRET_MIN, SECRET_MAX))
MAX_CLIENTS = 4            # a board's rig channel: connections at once
MAX_LINE = 512             # bytes of one line of the rig channel
READ_TIMEOUT_S = 30        # default --read-timeout of a board's rig channel

ATTACH_TIMEOUT_S = 30      # QEMU's sockets must be there: it booted
LINK_TIMEOUT_S = 60        # sbrigd hears the agent
ASLEEP_TIMEOUT_S = 120     # the target goes to S3 before each run
RUN_TIMEOUT_S = 600        # one scenario run
ACK_TIMEOUT_S = 60         # the target takes the answer


class RigError(RuntimeError):
    """Something the rig host cannot do; the message says what."""


def log(msg: str) -> None:
    stamp = datetime.datetime.now().strftime("%H:%M:%S.%f")[:-3]
    print(f"{stamp} rig_host: {msg}", flush=True)


def connect_unix(path: Path, timeout: float) -> socket.socket:
    """Connect to a socket QEMU serves, waiting up to @timeout for it."""
    end = time.monotonic() + timeout
    while True:
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(str(path))
            return s
        except OSError as e:
            s.close()
            if time.monotonic() > end:
                raise RigError(f"cannot connect to {path}: {e} (is this device's "
                               f"QEMU running with the device dictionary's "
                               f"extra_options?)") from None
            time.sleep(0.05)


class QemuPeer:
    """The QEMU LAVA started, through its QMP socket: what vrig.LineProxy
    and the power sampler need of the harness's Vm."""

    def __init__(self, path: Path, qmp_log: Path) -> None:
        sock = connect_unix(path, ATTACH_TIMEOUT_S)
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                struct.calcsize("3i"))
        self.pid = struct.unpack("3i", creds)[0]
        self.qmp = QmpClient(sock, qmp_log)

    def query_status(self) -> str:
        return self.qmp.execute("query-status")["status"]

    def qmp_mark(self) -> int:
        return self.qmp.mark()

    def system_wakeup(self) -> None:
        self.qmp.execute("system_wakeup")

    def wait_qmp_event(self, name: str, timeout: float, since: int | None = None) -> dict:
        return self.qmp.wait_event(name, timeout, since)

    def wait_status(self, status: str, timeout: float) -> None:
        end = time.monotonic() + timeout
        while (seen := self.query_status()) != status:
            if time.monotonic() > end:
                raise RigError(f"QEMU stayed {seen!r}, not {status!r}, for {timeout} s")
            time.sleep(0.02)

    def is_alive(self) -> bool:
        return not self.qmp.closed

    def close(self) -> None:
        self.qmp.close()


class VirtualRig:
    """The virtual rig's parts on LAVA's QEMU (``attach``): the INA226
    emulator with vrig's power model, the keypad proxy, DIR/rig.conf; the
    rig channel is QEMU's org.sbrig.rig port."""

    def __init__(self, d: Path, target_port: int, power_port: int) -> None:
        _load_virtual()
        self.dir = d
        self.target_port = target_port
        self.power_port = power_port
        self.conf = d / "rig.conf"
        self.keys_path = d / "keys.sock"
        self.stop_event = threading.Event()
        self.model = vrig.PowerModel()
        self.vm: QemuPeer | None = None        # vrig.LineProxy calls rig.vm
        self.keys = None
        self.server = None
        self.chip = None
        self.truth = None
        self.threads: list[threading.Thread] = []

    def attach(self) -> None:
        self.vm = QemuPeer(self.dir / "qemu-qmp.sock", self.dir / "qmp.log")
        log(f"attached to QEMU pid {self.vm.pid} ({self.vm.query_status()})")
        self.truth = ina226_iiod.TruthRecorder(self.dir / "power-truth.jsonl")
        self.chip = ina226_iiod.Ina226(self.model, 893, self.truth)
        self.model.now_fn = self.chip.now_ns
        try:
            self.server = ina226_iiod.Server(("127.0.0.1", self.power_port), self.chip)
        except OSError as e:
            raise RigError(f"INA226 emulator: port {self.power_port}: {e}") from None
        self._thread(self.server.serve_forever, "ina226", poll_interval=0.2)
        self._thread(vrig.follow_qemu, "power", self.model, self.vm.pid,
                     self.vm.query_status, self.stop_event)
        if self.keys_path.exists():
            self.keys_path.unlink()
        # the keys only: this device's QEMU has no charger port
        self.keys = vrig.LineProxy(str(self.keys_path), self)
        self.keys.port = vrig.LineProxy.connect_port(str(self.dir / "keypad.sock"),
                                                     timeout=ATTACH_TIMEOUT_S)
        self._thread(self.keys.serve, "keys", self.stop_event)
        vrig.write_rig_conf(self.conf, self.power_port, self.target_port,
                            str(self.keys_path), charger=False)

    #: QEMU's port is the guest's alone: no secret, no read timeout (the
    #: guest asks when its test shell gets there)
    secret = None

    def channels(self):
        """The rig channel: QEMU's port, once."""
        yield connect_unix(self.dir / "rig.sock", ATTACH_TIMEOUT_S), "org.sbrig.rig"

    def describe(self) -> list[str]:
        return [f"virtual rig attached to QEMU pid {self.vm.pid}",
                f"  power        ip:127.0.0.1:{self.power_port} (INA226 emulator)",
                f"  target link  tcp:127.0.0.1:{self.target_port} (guest ttyS1)",
                f"  keys         qmp:{self.keys_path} (keypad port {vrig.KEYPAD_PORT})",
                f"  rig channel  {self.dir / 'rig.sock'} (port org.sbrig.rig)"]

    def alive(self) -> bool:
        return self.vm.is_alive()

    def wait_asleep(self, host: "RigHost") -> None:
        """Each run starts from S3, which QEMU shows."""
        self.vm.wait_status("suspended", ASLEEP_TIMEOUT_S)

    def hold_key(self, host: "RigHost", down: bool) -> None:
        """The key's interrupt: a key down wakes S3 first (vrig)."""
        self.keys.key(vrig.KEY_POWER, down)

    def rewakes(self) -> int:
        """How often the keypad woke the guest again because it suspended
        before taking a key's line (vrig's LineProxy), so far."""
        return len(self.keys.rewakes) if self.keys else 0

    def _thread(self, fn, name, *args, **kwargs) -> None:
        t = threading.Thread(target=fn, args=args, kwargs=kwargs,
                             name=f"rig-host-{name}", daemon=True)
        t.start()
        self.threads.append(t)

    def stop(self) -> None:
        self.stop_event.set()
        if self.keys:
            self.keys.close()
        if self.server:
            self.server.stop.set()
            self.server.shutdown()
            self.server.server_close()
        if self.vm:
            self.vm.close()
        for t in self.threads:
            t.join(5)
        if self.truth and self.chip:
            with self.chip.lock:
                self.truth.close()         # no stream is emitting meanwhile
        elif self.truth:
            self.truth.close()


class ChannelRefused(RuntimeError):
    """A rig channel connection refused; the message is its error line."""


def read_secret(path: Path) -> bytes:
    """The rig channel's shared secret from @path: a regular file of the
    user running the rig host, readable by nobody else, holding one line
    of 16..256 characters of A-Z a-z 0-9 + / = _ . -."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as e:
        raise RigError(f"--secret-file {path}: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise RigError(f"--secret-file {path}: not a regular file")
        if st.st_uid != os.geteuid():
            raise RigError(f"--secret-file {path}: owned by uid {st.st_uid}, not by "
                           f"the rig host's user (uid {os.geteuid()})")
        if st.st_mode & 0o077:
            raise RigError(f"--secret-file {path}: mode {stat.S_IMODE(st.st_mode):04o}: "
                           f"others may read it (chmod 600)")
        data = os.read(fd, SECRET_MAX + 2)
    finally:
        os.close(fd)
    secret = data[:-1] if data.endswith(b"\n") else data
    if not SECRET.fullmatch(secret):
        raise RigError(f"--secret-file {path}: want one line of {SECRET_MIN}..{SECRET_MAX} "
                       f"characters A-Z a-z 0-9 + / = _ . - (e.g. head -c 32 /dev/urandom "
                       f"| sha256sum | cut -d' ' -f1)")
    return secret


class BoardRig:
    """A board's rig (``attach-board``): its own rig config (GPIO keys,
    INA226, the agent's UART; rig/beaglebone.conf), the rig channel a TCP
    port on the lab's network that targets connect to. Each connection is
    served by its own thread (at most MAX_CLIENTS at once; more are told
    "busy"): it must name the shared secret first (``auth SECRET``) and
    send each line within the read timeout. The scenarios wait for the
    target to sleep themselves (``wait asleep``); the key is held down
    through sbrigd."""

    def __init__(self, conf: Path, listen: tuple[str, int], key: str,
                 secret_file: Path, read_timeout: float) -> None:
        self.conf = conf
        self.listen = listen
        self.key = key
        self.secret_file = secret_file
        self.secret: bytes | None = None
        self.read_timeout = read_timeout
        self.listener: socket.socket | None = None
        self.press: socket.socket | None = None
        self.stop_event = threading.Event()

    def attach(self) -> None:
        if not self.conf.is_file():
            raise RigError(f"--rig-conf {self.conf}: no such file")
        self.secret = read_secret(self.secret_file)
        try:
            self.listener = socket.create_server(self.listen, reuse_port=False)
        except OSError as e:
            raise RigError(f"--listen {self.listen[0]}:{self.listen[1]}: {e.strerror}") from None
        self.listener.settimeout(0.5)

    def channels(self):
        """Each connection of a target, with its peer's address."""
        while not self.stop_event.is_set():
            try:
                conn, peer = self.listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            conn.settimeout(self.read_timeout)
            yield conn, f"{peer[0]}:{peer[1]}"

    def authenticate(self, line: str) -> None:
        """The first line of a connection: ``auth SECRET``, compared in
        constant time."""
        words = line.split(" ")
        if len(words) != 2 or words[0] != "auth":
            raise ChannelRefused("error auth: the rig channel wants 'auth SECRET' first")
        if not hmac.compare_digest(words[1].encode(errors="replace"), self.secret):
            raise ChannelRefused("error auth: wrong secret")

    def describe(self) -> list[str]:
        host, port = self.listener.getsockname()[:2]
        return [f"board rig of {self.conf}",
                f"  rig channel  tcp:{host}:{port} (secret {self.secret_file}, "
                f"read timeout {self.read_timeout:g} s, {MAX_CLIENTS} connections)",
                f"  key          {self.key} (held down while the target takes the answer)"]

    def alive(self) -> bool:
        return True

    def wait_asleep(self, host: "RigHost") -> None:
        pass

    def rewakes(self) -> int:
        """A board's keys wake it themselves: never again."""
        return 0

    def hold_key(self, host: "RigHost", down: bool) -> None:
        """``press KEY`` on sbrigd's socket (daemon-protocol.md), released
        early by ``stop`` on the same connection."""
        if down:
            self.press = socket.socket(socket.AF_UNIX)
            self.press.settimeout(30)
            self.press.connect(str(host.sbrigd_sock))
            self.press.sendall(f"press {self.key} {ACK_TIMEOUT_S}s\n".encode())
        elif self.press:
            try:
                self.press.sendall(b"stop\n")
                answer = self.press.makefile("rb").readline().decode(errors="replace")
                log(f"sbrigd: {answer.strip()}")
            finally:
                self.press.close()
                self.press = None

    def stop(self) -> None:
        self.stop_event.set()
        if self.listener:
            self.listener.close()


class RigHost:
    """One attach session: a rig (VirtualRig or BoardRig) and the rig
    channel's request server, which runs sbrigd (with SBRIG_GIT_SHA) on the
    rig's config for each request."""

    def __init__(self, d: Path, rig, *, scenarios: Path = DEFAULT_SCENARIOS,
                 bindir: Path = DEFAULT_BIN, history: Path | None = None,
                 compare_config: Path | None = None, warm_up: int = 1) -> None:
        self.dir = d
        self.rig = rig
        self.scenarios = scenarios
        self.bindir = bindir
        self.history = history
        # sbrig compare's thresholds file for this rig (None: its defaults)
        self.compare_config = compare_config
        # runs made and discarded before a request's runs (--warm-up)
        self.warm_up = warm_up
        self.sbrigd_sock = d / "sbrigd.sock"
        self.stop_event = threading.Event()
        # the connection whose request runs (one at a time: one sbrigd
        # owns the rig's lines), and its peer; run_lock is held meanwhile
        self.run_lock = threading.Lock()
        self.channel: socket.socket | None = None
        self.channel_peer = ""
        # every open connection of the rig channel, shut down by stop()
        self.conns_lock = threading.Lock()
        self.conns: set[socket.socket] = set()
        self.sbrigd: subprocess.Popen | None = None
        self.thread: threading.Thread | None = None

    # --- attach / detach ---------------------------------------------------
    def attach(self) -> None:
        for prog in ("sbrigd", "sbrig"):
            if not (self.bindir / prog).exists():
                raise RigError(f"{self.bindir / prog} missing (make host, or --sbrig-bin DIR)")
        if self.compare_config:
            # a file sbrig compare refuses would cost every job its verdict:
            # refuse it now, with compare's file:line: [section]: why
            p = self.sbrig("compare", "-c", self.compare_config, "--print-config",
                           timeout=60, check=False)
            if p.returncode != 0:
                raise RigError(f"--compare-config: {(p.stderr or p.stdout).strip()[-500:]}")
        self.rig.attach()
        self.thread = threading.Thread(target=self._serve, name="rig-host-channel",
                                       daemon=True)
        self.thread.start()

    def describe(self) -> str:
        return "\n".join([f"sbrig rig host in {self.dir}", *self.rig.describe(),
                          f"  rig config   {self.rig.conf}",
                          f"  runs         {self.dir / 'runs'}",
                          f"  log          {self.dir / 'rig-host.log'}"])

    def wait(self) -> None:
        """Until detach (SIGTERM) or the rig's end (QEMU gone)."""
        while not self.stop_event.wait(0.5):
            if not self.rig.alive():
                log("QEMU is gone")
                return

    def stop(self) -> None:
        self.stop_event.set()
        self._stop_sbrigd()
        with self.conns_lock:
            conns = list(self.conns)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.rig.stop()
        if self.thread:
            self.thread.join(5)

    # --- sbrigd and sbrig --------------------------------------------------
    def _start_sbrigd(self, commit: str) -> None:
        if self.sbrigd_sock.exists():
            self.sbrigd_sock.unlink()
        env = dict(os.environ, SBRIG_GIT_SHA=commit)
        out = open(self.dir / "sbrigd.log", "ab")
        self.sbrigd = subprocess.Popen(
            [str(self.bindir / "sbrigd"), "-c", str(self.rig.conf), "-s", str(self.sbrigd_sock),
             # seconds of S3 silence are no dead link
             "-o", "timing.link_timeout_ms=60000"],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env)
        out.close()
        end = time.monotonic() + LINK_TIMEOUT_S
        while time.monotonic() < end:
            if self.sbrigd.poll() is not None:
                raise RigError(f"sbrigd exited ({self.sbrigd.returncode}); see "
                               f"{self.dir / 'sbrigd.log'}")
            if self.sbrigd_sock.exists():
                st = self.sbrig("status", "--json", timeout=30, check=False)
                try:
                    if json.loads(st.stdout)["link"]["connected"] is True:
                        return
                except (ValueError, KeyError, TypeError):
                    pass        # not up yet: sbrig said why on stderr
            time.sleep(0.1)
        raise RigError(f"the target agent's link did not come up within {LINK_TIMEOUT_S} s "
                       f"(is sbagent running on the target's UART?)")

    def _stop_sbrigd(self) -> None:
        p, self.sbrigd = self.sbrigd, None
        if p and p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def _argv(self, args) -> list[str]:
        argv = [str(self.bindir / "sbrig")]
        if args[0] in ("run", "status", "press"):
            argv += ["-s", str(self.sbrigd_sock)]
        argv += [str(a) for a in args]
        log("$ sbrig " + " ".join(argv[1:]))
        return argv

    def sbrig(self, *args, timeout: float, check: bool = True) -> subprocess.CompletedProcess:
        try:
            p = subprocess.run(self._argv(args), capture_output=True, text=True,
                               timeout=timeout)
        except subprocess.TimeoutExpired:
            raise RigError(f"sbrig {args[0]}: no answer within {timeout} s") from None
        if check and p.returncode != 0:
            raise RigError(f"sbrig {args[0]} failed (exit {p.returncode}): "
                           f"{(p.stderr or p.stdout).strip()[-500:]}")
        return p

    # --- the rig channel ---------------------------------------------------
    def _serve(self) -> None:
        """Each connection of the rig's channels(): the virtual rig's one
        port served here; a board's TCP connections each in its own
        thread, at most MAX_CLIENTS at once (more are told "busy")."""
        slots = threading.BoundedSemaphore(MAX_CLIENTS)
        try:
            for conn, peer in self.rig.channels():
                if self.rig.secret is None:
                    self._serve_channel(conn, peer)
                elif not slots.acquire(blocking=False):
                    log(f"rig channel {peer}: busy: {MAX_CLIENTS} connections open")
                    self._refuse(conn, f"error busy: the rig host serves {MAX_CLIENTS} "
                                       f"connections already; try again later")
                else:
                    threading.Thread(target=self._serve_channel, args=(conn, peer, slots),
                                     name=f"rig-host-{peer}", daemon=True).start()
                if self.stop_event.is_set():
                    return
        except Exception as e:  # noqa: BLE001 - the session must end, not hang
            log(f"channel: {type(e).__name__}: {e}")


    @staticmethod
    def _refuse(conn: socket.socket, line: str) -> None:
        try:
            conn.sendall(f"{line}\nend\n".encode())
        except OSError:
            pass
        conn.close()

    def _serve_channel(self, conn: socket.socket, peer: str,
                       slot: threading.BoundedSemaphore | None = None) -> None:
        """The requests of one connection, until it closes; a rig with a
        secret first wants ``auth SECRET``, and every line within its
        read timeout (the socket's). @slot, if any, is released before the
        connection closes (its peer sees the end after the slot is free)."""
        with self.conns_lock:
            self.conns.add(conn)
        f = conn.makefile("rb", buffering=0)
        authed = self.rig.secret is None
        if not authed:
            log(f"rig channel {peer}: connected")
        try:
            while not self.stop_event.is_set():
                raw = f.readline(MAX_LINE + 1)
                if not raw:
                    return
                if len(raw) > MAX_LINE:
                    raise ChannelRefused(f"error a line longer than {MAX_LINE} bytes")
                line = raw.decode(errors="replace").strip()
                if not authed:
                    self.rig.authenticate(line)     # never logged: the secret
                    authed = True
                    log(f"rig channel {peer}: authenticated")
                    continue
                if not line or line == "ack":
                    continue
                log(f"target {peer}: {ascii(line)[1:-1]}")
                words = line.split()
                if words[0] != "run":
                    self._reply(conn, f"error unknown request {ascii(words[0])}", "end")
                    continue
                if not self.run_lock.acquire(blocking=False):
                    raise ChannelRefused(f"error busy: the rig is running the request of "
                                         f"{self.channel_peer}; try again later")
                try:
                    self.channel, self.channel_peer = conn, peer
                    self._run(words[1:])
                finally:
                    self.channel = None
                    self.run_lock.release()
        except ChannelRefused as e:
            log(f"rig channel {peer}: refused: {e}")
            self._reply(conn, str(e), "end")
        except socket.timeout:
            log(f"rig channel {peer}: silent for {conn.gettimeout():g} s: dropped")
            self._reply(conn, f"error silent for {conn.gettimeout():g} s: dropped", "end")
        except OSError as e:
            log(f"rig channel {peer}: {e}")
        finally:
            with self.conns_lock:
                self.conns.discard(conn)
            f.close()
            if slot:
                slot.release()
            conn.close()

    @staticmethod
    def _reply(conn: socket.socket, *lines: str) -> None:
        try:
            conn.sendall("".join(f"{ln}\n" for ln in lines).encode())
        except OSError:
            pass

    def _send(self, *lines: str) -> None:
        self.channel.sendall("".join(f"{ln}\n" for ln in lines).encode())

    def _check_request(self, args: list[str]) -> tuple[Path, int, str, str]:
        if len(args) != 4:
            raise RigError("run: want SCENARIO RUNS COMMIT BASELINE|-")
        name, runs, commit, base = args
        if not NAME.match(name):
            raise RigError(f"run: scenario {name!r}: not a scenario name")
        scn = self.scenarios / f"{name}.scn"
        if not scn.is_file():
            raise RigError(f"run: no scenario {name!r} on this rig ({scn})")
        if not runs.isdigit() or not 1 <= int(runs) <= 100:
            raise RigError(f"run: runs {runs!r}: want 1..100")
        if not SHA.match(commit):
            raise RigError(f"run: commit {commit!r}: not a commit SHA")
        if base != "-" and not SHA.match(base):
            raise RigError(f"run: baseline {base!r}: not a commit SHA")
        return scn, int(runs), commit, "" if base == "-" else base

    def _run(self, args: list[str]) -> None:
        lines: list[str] = []
        session: dict = {"request": args, "runs": [], "compare": None}
        ready = False
        rewakes = self.rig.rewakes()
        try:
            scn, runs, commit, base = self._check_request(args)
            session.update(scenario=scn.stem, commit=commit, baseline=base)
            self._start_sbrigd(commit)
            self._send("ready")
            ready = True
            stamp = datetime.datetime.utcnow().strftime("%Y%m%dT%H%M%SZ")
            store = self.dir / "runs" / scn.stem / commit
            reports = []
            # warm-up runs first (--warm-up): captured, never analysed,
            # reported, compared or filed (no report/: no baseline either)
            session["warm_up"] = []
            for i in range(1, self.warm_up + 1):
                self.rig.wait_asleep(self)
                run_dir = store / f"{stamp}-warm{i}"
                run_dir.mkdir(parents=True)
                self.sbrig("run", scn, "-o", run_dir / "capture", timeout=RUN_TIMEOUT_S)
                session["warm_up"].append(str(run_dir))
            for i in range(1, runs + 1):
                self.rig.wait_asleep(self)
                run_dir = store / f"{stamp}-{i}"
                run_dir.mkdir(parents=True)
                self.sbrig("run", scn, "-o", run_dir / "capture",
                           timeout=RUN_TIMEOUT_S)
                self.sbrig("analyze", run_dir / "capture", "-o", run_dir / "report",
                           timeout=RUN_TIMEOUT_S)
                report = run_dir / "report" / "report.json"
                reports.append(report)
                session["runs"].append(str(run_dir))
                lines += [f"lava-test-set start run-{i}"]
                lines += self._lava_lines(report)
                lines += ["lava-test-set stop"]
            lines += ["lava-test-set start compare"]
            if base:
                base_reports = self._runs_of(scn.stem, base)
                if not base_reports:
                    lines += [f"error no runs of the baseline {base} of {scn.stem} on "
                              f"this rig ({self.dir / 'runs' / scn.stem})",
                              "lava-test-case compare_verdict --result skip"]
                else:
                    out = store / f"{stamp}-compare"
                    cfg = ["-c", self.compare_config] if self.compare_config else []
                    p = self.sbrig("compare", *cfg, "-o", out, *base_reports, "--", *reports,
                                   timeout=RUN_TIMEOUT_S, check=False)
                    if p.returncode in (2, 5) and not (out / "compare.json").exists():
                        # refused: too few runs for any verdict (2), or runs
                        # unfit to compare (5: open, gaps, durations): no
                        # verdict, and the job says why
                        why = " ".join(p.stderr.split())[-400:]
                        session["compare_refused"] = why
                        lines += [f"note no verdict: {why}",
                                  "lava-test-case compare_verdict --result skip"]
                    elif p.returncode not in (0, 1, 4):
                        raise RigError(f"sbrig compare failed (exit {p.returncode}): "
                                       f"{p.stderr.strip()[-500:]}")
                    else:
                        session["compare"] = str(out / "compare.json")
                        lines += self._lava_lines(out / "compare.json")
            else:
                lines += ["lava-test-case compare_verdict --result skip"]
            lines += ["lava-test-set stop"]
            if self.history:
                self.sbrig("history", "add", "--db", self.history, *reports, timeout=120)
        except (RigError, OSError) as e:
            log(f"error: {e}")
            lines.append(f"error {e}")
        # the virtual keypad's second wakes in this request (vrig.py: a
        # guest that suspended again before its key's line), counted
        session["rewakes"] = self.rig.rewakes() - rewakes
        if session["rewakes"]:
            log(f"the keypad woke the target again {session['rewakes']} time(s): it "
                f"suspended before its key's line")
        session["lines"] = lines
        tmp = self.dir / ".session.json.tmp"
        tmp.write_text(json.dumps(session, indent=2) + "\n")
        os.replace(tmp, self.dir / "session.json")
        try:
            # a board's key goes through sbrigd; a target that got no
            # "ready" did not go to sleep: no key
            self._answer(lines, hold_key=ready)
        finally:
            self._stop_sbrigd()

    def _runs_of(self, scenario: str, commit: str) -> list[Path]:
        """The reports of this rig's runs of @scenario on @commit (a SHA
        or a prefix of one)."""
        d = self.dir / "runs" / scenario
        dirs = [c for c in sorted(d.iterdir()) if c.name.startswith(commit)
                or commit.startswith(c.name)] if d.is_dir() else []
        return sorted(r for c in dirs for r in c.glob("*/report/report.json"))

    def _lava_lines(self, doc: Path) -> list[str]:
        p = self.sbrig("export", doc, "--lava", timeout=60)
        out = []
        for ln in p.stdout.splitlines():
            if not LAVA_LINE.match(ln):
                raise RigError(f"sbrig export --lava {doc}: unexpected line {ln!r}")
            out.append(ln)
        return out

    def _answer(self, lines: list[str], hold_key: bool) -> None:
        """Wake the target and keep it up with its key held down while it
        takes the lines (@hold_key: it was told "ready", so it sleeps)."""
        if not hold_key:
            self._send(*lines, "end")
            return
        timeout = self.channel.gettimeout()
        self.rig.hold_key(self, True)
        try:
            self._send(*lines, "end")
            log(f"answered {len(lines)} line(s); waiting for the target's ack")
            self.channel.settimeout(ACK_TIMEOUT_S)
            buf = b""
            while b"ack\n" not in buf:
                data = self.channel.recv(4096)
                if not data:
                    raise RigError("the rig channel closed before the target's ack")
                buf += data
            log("the target took the answer")
        except (OSError, RigError) as e:
            log(f"no ack: {e}")
        finally:
            self.channel.settimeout(timeout)
            self.rig.hold_key(self, False)


# ----------------------------------------------------------- attach/detach --

def _daemon(args, ready_w: int) -> None:
    """The attached rig host, in its own session; tells the parent through
    ready_w ("ok\\n" + description, or "error ...")."""
    d = args.dir
    logf = os.open(d / "rig-host.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(logf, 1)
    os.dup2(logf, 2)
    os.close(null)
    os.close(logf)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    sys.stderr = sys.stdout
    if args.cmd == "attach":
        target = VirtualRig(d, args.target_port, args.power_port)
    else:
        target = BoardRig(args.rig_conf, args.listen, args.key, args.secret_file,
                          args.read_timeout)
    rig = RigHost(d, target, scenarios=args.scenarios, bindir=args.sbrig_bin,
                  history=args.history, compare_config=args.compare_config,
                  warm_up=args.warm_up)
    signal.signal(signal.SIGTERM, lambda *_: rig.stop_event.set())
    try:
        (d / "rig-host.pid").write_text(f"{os.getpid()}\n")
        rig.attach()
        os.write(ready_w, ("ok\n" + rig.describe()).encode())
        os.close(ready_w)
        ready_w = -1
        log(rig.describe())
        rig.wait()
    except Exception as e:  # noqa: BLE001 - reported to `attach`, which fails the job
        log(f"attach failed: {type(e).__name__}: {e}")
        if ready_w >= 0:
            os.write(ready_w, f"error {e}".encode())
    finally:
        rig.stop()
        try:
            (d / "rig-host.pid").unlink()
        except OSError:
            pass
        log("detached")


def attach(args) -> int:
    args.dir.mkdir(parents=True, exist_ok=True)
    if detach_pid(args.dir) is not None:
        print(f"rig_host: a rig host of {args.dir} was still running; stopped it")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                       # the daemon: its own session, no tty
        os.close(r)
        os.setsid()
        if os.fork():
            os._exit(0)
        try:
            _daemon(args, w)
        finally:
            os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    with os.fdopen(r, "rb") as f:
        answer = f.read().decode(errors="replace")
    if answer.startswith("ok\n"):
        print(answer[3:])
        return 0
    print(f"rig_host: attach failed: {answer[6:] if answer.startswith('error ') else answer!r}"
          f"; see {args.dir / 'rig-host.log'}", file=sys.stderr)
    return 1


def detach_pid(d: Path, timeout: float = 30) -> int | None:
    """Stop the rig host of @d if it runs; return its pid (None: none)."""
    try:
        pid = int((d / "rig-host.pid").read_text())
    except (OSError, ValueError):
        return None
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return None
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    return pid


def detach(args) -> int:
    pid = detach_pid(args.dir)
    print(f"rig_host: {'stopped the rig host ' + str(pid) if pid else 'no rig host running'}"
          f" ({args.dir})")
    return 0


def _listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r}: want HOST:PORT")
    if not host:
        raise argparse.ArgumentTypeError(
            f"{text!r}: name the address of the lab network the targets reach "
            f"(e.g. 192.0.2.10:30432), not every interface")
    return host.strip("[]"), int(port)


def _warm_up(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 10:
        raise argparse.ArgumentTypeError(f"{text!r}: want a number of runs, 0..10")
    return int(text)


def _seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = 0
    if not 0.1 <= v <= 3600:
        raise argparse.ArgumentTypeError(f"{text!r}: want seconds, 0.1..3600")
    return v


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("attach", help="attach the virtual rig to this device's QEMU")
    a.add_argument("--target-port", type=int, required=True, help="QEMU's TCP port of ttyS1")
    a.add_argument("--power-port", type=int, required=True, help="the INA226 emulator's port")
    b = sub.add_parser("attach-board", help="serve a board's rig channel on TCP")
    b.add_argument("--rig-conf", type=Path, required=True,
                   help="the rig's config (e.g. rig/beaglebone.conf; sbrig.conf(5))")
    b.add_argument("--listen", type=_listen, required=True,
                   help="HOST:PORT of the rig channel: the rig host's address on the "
                        "lab network (no default: never every interface by accident)")
    b.add_argument("--secret-file", type=Path, required=True,
                   help="the rig channel's shared secret: a file of the rig host's user, "
                        "mode 0600, one line; a target sends 'auth SECRET' first")
    b.add_argument("--read-timeout", type=_seconds, default=READ_TIMEOUT_S,
                   help="seconds a target may stay silent before its request "
                        f"(default {READ_TIMEOUT_S}); a silent connection is dropped")
    b.add_argument("--key", default="power",
                   help="the rig's key that wakes the target (default power)")
    for x in (a, b):
        x.add_argument("--dir", type=Path, required=True,
                       help="the device's directory: logs, sbrigd's socket, the runs")
        x.add_argument("--scenarios", type=Path, default=DEFAULT_SCENARIOS,
                       help="where SCENARIO.scn are (default rig/scenarios)")
        x.add_argument("--sbrig-bin", type=Path, default=DEFAULT_BIN,
                       help="where sbrigd and sbrig are (default build/host/release)")
        x.add_argument("--history", type=Path,
                       help="sbrig history add every run to this database")
        x.add_argument("--warm-up", type=_warm_up, default=1, metavar="N",
                       help="scenario runs made before a request's runs and discarded "
                            "(captured in STAMP-warmK/, never analysed, reported, "
                            "compared or filed): the first run after the target boots "
                            "or idles runs colder (default 1; 0..10)")
        x.add_argument("--compare-config", type=Path,
                       help="sbrig compare -c FILE: this rig's minimum changes "
                            "(host/doc/compare-format.md; the virtual rig's: "
                            "rig/virtual/compare.conf); default sbrig compare's")
    d = sub.add_parser("detach", help="stop the rig host of a device")
    d.add_argument("--dir", type=Path, required=True)
    args = ap.parse_args(argv)
    args.dir = args.dir.resolve()
    if args.cmd in ("attach", "attach-board"):
        args.scenarios = args.scenarios.resolve()
        args.sbrig_bin = args.sbrig_bin.resolve()
        args.history = args.history.resolve() if args.history else None
        args.compare_config = args.compare_config.resolve() if args.compare_config else None
        if args.cmd == "attach-board":
            args.rig_conf = args.rig_conf.resolve()
            args.secret_file = args.secret_file.absolute()
        return attach(args)
    return detach(args)


if __name__ == "__main__":
    sys.exit(main())
