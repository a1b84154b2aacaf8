"""The sbrig target-link protocol in Python: codec + a scriptable fake agent.

The protocol is host/doc/link-protocol.md (C codec: host/lib/proto.c).
A fake agent stands in for kernel-module/tools/sbagent where no target
runs (host-only tests): it serves ONE TCP port like a ser2net console, and
keeps its state (event ring, boot id, command replies) across
connections, as the real agent does across host reconnects.

    from tests.rigproto import FakeAgent
    with FakeAgent(boot_id="b1") as agent:          # listens on 127.0.0.1:agent.port
        agent.send_event(0, 1_000, "block", '"x"')  # stored, streamed once synced
        run(["sbrig-linkdump", f"tcp:127.0.0.1:{agent.port}", ...])
        agent.wait_for(lambda a: a.acked >= 0)

API (all thread-safe; a background thread serves the socket):

* ``FakeAgent(sock_or_port=0, boot_id=..., kernel=..., module=..., agent=...)``
  ``sock_or_port``: a listening socket, or a port to listen on (0 = any).
* ``send_event(seq, t_ns, type, arg)`` -- add a module record (``arg``
  exactly as in the log line, e.g. ``'"name"'``, ``'"cut"+'``,
  ``'opportunistic mem'``) and stream it if a host is synced.
* ``send_burst(start, n, t_ns)`` -- log n records and write their frames
  in one ``sendall`` (a burst).
* ``corrupt_next(n=1)`` -- flip a byte in the next n EV frames sent.
* ``drop_next_cmds(n)`` -- ignore the next n CMD frames (tests retries).
* ``send_garbage(data)``, ``send_raw(data)``, ``send_kmsg(text)`` (a
  kernel-console line), ``send_kmsg_then_frame(text, body)``.
* ``beat()``, ``send_gap(a, b)``, ``announce()`` (restarted agent:
  ``HELLO ... new``, streams again after the host's HELLO), ``reboot(boot_id)`` (new boot: ring
  cleared), ``drop_connection()``, ``forget_before(seq)`` (ring no longer
  holds older records: they are answered with GAP).
* ``blip()`` -- wake and fall asleep again at once (no PONG in between).
* ``sleep()`` / ``wake()`` -- a suspending target: asleep, the agent is
  frozen (sends nothing, not even PONG; what the host sends is lost, like
  UART bytes to a target in S3) while ``send_event`` still logs records
  (the module's log); ``wake()`` goes on streaming where it stopped (the
  agent does not know it slept) and sends a BEAT. ``asleep_since`` is the
  time.monotonic_ns() of the last ``sleep()``; ``lost_while_asleep`` the
  host frames dropped. ``clock_offset_ns`` is added to the agent's clock
  (PONG, BEAT): a test can make it jump across a sleep, as a target's
  CLOCK_BOOTTIME does when the kernel injects an RTC-measured sleep time;
  ``clock()`` is the agent's clock now. With ``keep_while_asleep`` set,
  host frames that arrive during a sleep are kept instead (a virtio port
  or a UART FIFO that holds them) and handled at ``wake()``, before the
  records logged meanwhile are streamed: PINGs sent to the sleeping
  target are answered with its clock after the wake.
* ``cmd_handler(cmd_id, verb, args) -> list[bytes]`` -- replace to script
  replies; the default answers ``R id 0 "ok"`` (and ``stats`` with one
  ``ST`` row first). An item of the list may also be a callable (e.g.
  ``agent.sleep``, a target that suspends once it has answered): it is
  called, in order, where its frame would have been written (again for a
  duplicate of the command).
* Observations: ``received`` (decoded host frames), ``commands`` (cmd ids
  actually executed), ``cmd_frames`` (every CMD frame seen, duplicates
  included), ``acked`` (highest ACK, -1), ``resends`` (RESEND seqs),
  ``connections``; ``wait_for(pred, timeout)``.
* Codec: ``frame(body) -> bytes``, ``decode(line) -> Frame | None``
  (raises ``BadFrame``), ``quote(s)``.

The host side for tests: ``LinkDump(uri, *args)`` runs
build/host/asan/sbrig-linkdump (``build_linkdump()`` makes it) with
``--stdin`` and fast timings, collects its JSON lines in ``msgs``;
``wait(pred)``, ``send(cmd)``, ``of(type)``, ``status()``, ``close()``
(asserts exit 0 and no sanitizer report).
"""

from __future__ import annotations

import json
import queue
import re
import selectors
import socket
import subprocess
import threading
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

VERSION = 1
FRAME_MAX = 1024
REPO = Path(__file__).resolve().parents[1]
LINKDUMP = REPO / "build/host/asan/sbrig-linkdump"
FAST = ["--ping-ms", "200", "--timeout-ms", "1500", "--reconnect-ms", "100",
        "--retry-ms", "300"]


def build_linkdump() -> Path:
    """Build the ASan sbrig-linkdump (incremental); return its path."""
    subprocess.run(["make", "-s", "-C", str(REPO / "host"), "VARIANT=asan", "-j2",
                    str(LINKDUMP)], check=True)
    return LINKDUMP


class BadFrame(ValueError):
    """A line holds "@sb" but no valid frame."""


def frame(body: str) -> bytes:
    """``'@sb1 EV 1 2 block "x"'`` -> the complete frame with CRC and '\\n'."""
    data = (body + " ").encode()
    return data + b"*%08x\n" % zlib.crc32(data)


def quote(s: str) -> str:
    return '"' + "".join(c if 0x20 <= ord(c) <= 0x7E and c not in '"\\' else "?"
                         for c in s) + '"'


_TOKEN = re.compile(r'"([^"]*)"|(\S+)')


@dataclass
class Frame:
    type: str
    fields: list[str]
    raw_args: str            # everything after TYPE (before the CRC)
    noise: bytes = b""       # bytes before the frame on its line

    def int(self, i: int) -> int:
        return int(self.fields[i])


def decode(line: bytes) -> Frame | None:
    """Decode the last valid frame on a line (no '\\n'); None if no '@sb'."""
    line = line.rstrip(b"\r\n")
    if b"@sb" not in line:
        return None
    pos = len(line)
    while True:
        pos = line.rfind(b"@sb", 0, pos)
        if pos < 0:
            raise BadFrame(line[:200])
        cand = line[pos:]
        m = re.fullmatch(rb"(@sb(\d+) .* )\*([0-9a-f]{8})", cand)
        if m and zlib.crc32(m.group(1)) == int(m.group(3), 16):
            if int(m.group(2)) != VERSION:
                raise BadFrame(b"version " + m.group(2))
            body = m.group(1).decode()[len(f"@sb{VERSION} "):].strip()
            typ, _, rest = body.partition(" ")
            fields = [mm.group(1) if mm.group(1) is not None else mm.group(2)
                      for mm in _TOKEN.finditer(rest)]
            return Frame(typ, fields, rest, line[:pos])


@dataclass
class _Rec:
    t_ns: int
    type: str
    arg: str


class FakeAgent:
    """A scriptable agent on one TCP port (see the module docstring)."""

    def __init__(self, sock_or_port: socket.socket | int = 0, *,
                 boot_id: str = "fake-boot-1", kernel: str = "6.1.0-fake",
                 module: str = "0.1.0", agent: str = "fake") -> None:
        if isinstance(sock_or_port, socket.socket):
            self._lsock = sock_or_port
        else:
            self._lsock = socket.create_server(("127.0.0.1", sock_or_port))
        self._lsock.setblocking(False)
        self.port = self._lsock.getsockname()[1]
        self.boot_id, self.kernel, self.module, self.agent = boot_id, kernel, module, agent
        self.ring: dict[int, _Rec] = {}
        self.head = 0
        self.oldest = 0
        self.send_pos = 0
        self.synced = False
        self.received: list[Frame] = []
        self.commands: list[int] = []
        self.cmd_frames: list[Frame] = []
        self.acked = -1
        self.resends: list[int] = []
        self.connections = 0
        self.asleep = False
        self.asleep_since = 0
        self.clock_offset_ns = 0
        self.lost_while_asleep: list[Frame] = []
        self.keep_while_asleep = False
        self._kept: list[Frame] = []
        self._replies: dict[int, list[bytes]] = {}
        self._corrupt = 0
        self._drop_cmds = 0
        self._conn: socket.socket | None = None
        self._inbuf = b""
        self._cond = threading.Condition()
        self._stop = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    # ---------------------------------------------------------- lifecycle --
    def __enter__(self) -> "FakeAgent":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        with self._cond:
            self._stop = True
        self._thread.join(5)
        if self._conn:
            self._conn.close()
        self._lsock.close()

    def wait_for(self, pred, timeout: float = 10.0):
        """Wait until ``pred(self)`` is true (checked on every change)."""
        end = time.monotonic() + timeout
        with self._cond:
            while True:
                v = pred(self)
                if v:
                    return v
                left = end - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"FakeAgent: condition not met in {timeout} s")
                self._cond.wait(min(left, 0.05))

    # ------------------------------------------------------------- output --
    def _write(self, data: bytes) -> None:
        if self._conn is None or self.asleep:
            return
        try:
            self._conn.sendall(data)
        except OSError:
            self._drop_locked()

    def send_raw(self, data: bytes) -> None:
        with self._cond:
            self._write(data)

    def send_garbage(self, data: bytes = b"\x00\xffgarbage @sb1 EV 1 *zz\n") -> None:
        self.send_raw(data)

    def send_kmsg(self, text: str = "[   12.345678] usb 1-1: new device") -> None:
        self.send_raw(text.encode() + b"\r\n")

    def send_kmsg_then_frame(self, text: str, body: str) -> None:
        self.send_raw(text.encode() + frame(body))

    def beat(self) -> None:
        with self._cond:
            if self.synced:
                self._write(frame(f"@sb1 BEAT {self.send_pos} {self.clock()}"))

    def send_gap(self, a: int, b: int) -> None:
        self.send_raw(frame(f"@sb1 GAP {a} {b}"))

    def _hello(self, answer: bool = True) -> None:
        self._write(frame(f"@sb1 HELLO 1 {self.boot_id} {self.agent} "
                          f"{quote(self.kernel)} {self.module} {self.oldest} {self.head} "
                          + ("ok" if answer else "new")))

    def clock(self) -> int:
        """The agent's clock (its CLOCK_BOOTTIME) now."""
        return time.monotonic_ns() + self.clock_offset_ns

    def sleep(self) -> None:
        """The target suspends: the agent is frozen until wake()."""
        with self._cond:
            self.asleep = True
            self.asleep_since = time.monotonic_ns()
            self._cond.notify_all()

    def wake(self) -> None:
        """The target resumes: stream what was logged meanwhile, BEAT."""
        with self._cond:
            self.asleep = False
            kept, self._kept = self._kept, []
            for f in kept:
                self._handle(f)
            self._stream_locked()
            if self.synced:
                self._write(frame(f"@sb1 BEAT {self.send_pos} {self.clock()}"))
            self._cond.notify_all()

    def blip(self) -> None:
        """Wake, stream what was logged, BEAT, and fall asleep again at
        once: a target that suspends again before its agent answered a
        ping (nothing the host sends in between is answered)."""
        with self._cond:
            self.asleep = False
            self._stream_locked()
            if self.synced:
                self._write(frame(f"@sb1 BEAT {self.send_pos} {self.clock()}"))
            self.asleep = True
            self.asleep_since = time.monotonic_ns()
            self._cond.notify_all()

    def announce(self) -> None:
        """Act as a freshly started agent: unsynced, HELLO ... new."""
        with self._cond:
            self.synced = False
            self._hello(answer=False)

    def _stream_locked(self) -> None:
        while not self.asleep and self.synced and self.send_pos < self.head and self._conn:
            s = self.send_pos
            if s < self.oldest or s not in self.ring:
                end = s
                while end < self.head and (end < self.oldest or end not in self.ring):
                    end += 1
                self._write(frame(f"@sb1 GAP {s} {end - 1}"))
                self.send_pos = end
                continue
            r = self.ring[s]
            data = frame(f"@sb1 EV {s} {r.t_ns} {r.type} {r.arg}")
            if self._corrupt:
                self._corrupt -= 1
                i = data.index(b" EV ") + 5
                data = data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1:]
            self._write(data)
            self.send_pos = s + 1
        self._cond.notify_all()

    # ------------------------------------------------------------- script --
    def send_event(self, seq: int, t_ns: int, type: str, arg: str) -> None:
        with self._cond:
            self.ring[seq] = _Rec(t_ns, type, arg)
            self.head = max(self.head, seq + 1)
            self._stream_locked()

    def send_burst(self, start: int, n: int, t_ns: int, type: str = "block",
                   arg: str = '"burst"') -> int:
        """Log records start..start+n-1 (all at t_ns + i ns) and, if the host
        is synced and streaming is at ``start``, write all their frames with
        ONE sendall (a burst the host must take in without loss); returns
        the bytes sent (0 if they are left to the normal streaming)."""
        with self._cond:
            for i in range(n):
                self.ring[start + i] = _Rec(t_ns + i, type, arg)
            self.head = max(self.head, start + n)
            if (not self.synced or self.asleep or self._conn is None
                    or self.send_pos != start):
                self._stream_locked()
                return 0
            data = b"".join(frame(f"@sb1 EV {start + i} {t_ns + i} {type} {arg}")
                            for i in range(n))
            self._write(data)
            self.send_pos = start + n
            self._cond.notify_all()
            return len(data)

    def corrupt_next(self, n: int = 1) -> None:
        with self._cond:
            self._corrupt += n

    def drop_next_cmds(self, n: int) -> None:
        with self._cond:
            self._drop_cmds += n

    def forget_before(self, seq: int) -> None:
        with self._cond:
            self.oldest = seq
            for s in [s for s in self.ring if s < seq]:
                del self.ring[s]

    def reboot(self, boot_id: str) -> None:
        """New boot: empty ring, seq from 0; the connection is dropped (a
        rebooting target's agent goes away) unless the caller keeps it."""
        with self._cond:
            self.boot_id = boot_id
            self.ring.clear()
            self.head = self.oldest = self.send_pos = 0
            self._replies.clear()
            self._drop_locked()

    def restart_log(self) -> None:
        """The module was reloaded and the agent restarted (same boot): its
        log numbers records from 0 again; the agent announces itself."""
        with self._cond:
            self.ring.clear()
            self.head = self.oldest = self.send_pos = 0
            self._replies.clear()
            self.synced = False
        self.announce()

    def drop_connection(self) -> None:
        with self._cond:
            self._drop_locked()

    def _drop_locked(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except OSError:
                pass
        self._conn = None
        self.synced = False
        self._inbuf = b""
        self._cond.notify_all()

    def cmd_handler(self, cmd_id: int, verb: str, args: str) -> list[bytes]:
        """Default command behaviour; override or replace to script replies."""
        out = []
        if verb == "stats":
            out.append(frame(f'@sb1 ST {cmd_id} 0 1 "main" 1 0 0 5 0 5 100'))
        out.append(frame(f'@sb1 R {cmd_id} 0 "ok"'))
        return out

    # -------------------------------------------------------------- input --
    def _handle(self, f: Frame) -> None:
        self.received.append(f)
        t = f.type
        if t == "HELLO":
            boot, nxt = f.fields[1], f.int(2)
            self.send_pos = max(nxt, 0) if boot == self.boot_id else 0
            self.send_pos = min(self.send_pos, self.head)
            self.synced = True
            self._hello()
        elif t == "ACK":
            self.acked = max(self.acked, f.int(0))
        elif t == "RESEND":
            self.resends.append(f.int(0))
            if f.int(0) < self.send_pos:
                self.send_pos = f.int(0)
        elif t == "PING":
            self._write(frame(f"@sb1 PONG {f.int(0)} {self.clock()}"))
        elif t == "CMD":
            self.cmd_frames.append(f)
            if self._drop_cmds:
                self._drop_cmds -= 1
                return
            cid = f.int(0)
            if cid not in self._replies:
                verb, _, args = f.raw_args.partition(" ")[2].partition(" ")
                self.commands.append(cid)
                self._replies[cid] = self.cmd_handler(cid, verb, args.strip())
            for data in self._replies[cid]:
                if callable(data):
                    data()
                else:
                    self._write(data)
        self._stream_locked()

    def _serve(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self._lsock, selectors.EVENT_READ)
        registered = None
        while True:
            with self._cond:
                if self._stop:
                    break
                conn = self._conn
            if registered is not conn:
                if registered is not None:
                    try:
                        sel.unregister(registered)
                    except (KeyError, ValueError, OSError):
                        pass
                if conn is not None:
                    sel.register(conn, selectors.EVENT_READ)
                registered = conn
            for key, _ in sel.select(0.05):
                if key.fileobj is self._lsock:
                    try:
                        c, _ = self._lsock.accept()
                    except OSError:
                        continue
                    with self._cond:
                        self._drop_locked()
                        self._conn = c
                        self.connections += 1
                        self._cond.notify_all()
                    continue
                try:
                    data = key.fileobj.recv(65536)
                except OSError:
                    data = b""
                with self._cond:
                    if key.fileobj is not self._conn:
                        continue
                    if not data:
                        self._drop_locked()
                        continue
                    self._inbuf += data
                    while b"\n" in self._inbuf:
                        line, self._inbuf = self._inbuf.split(b"\n", 1)
                        try:
                            f = decode(line)
                        except BadFrame:
                            continue
                        if f and self.asleep and self.keep_while_asleep:
                            self._kept.append(f)
                        elif f and self.asleep:
                            self.lost_while_asleep.append(f)
                        elif f:
                            self._handle(f)
                    self._cond.notify_all()
        sel.close()


class LinkDump:
    """sbrig-linkdump as a subprocess; JSON lines collected by a thread."""

    def __init__(self, uri: str, *args: str) -> None:
        self.proc = subprocess.Popen([str(LINKDUMP), "--stdin", *FAST, *args, uri],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.msgs: list[dict] = []
        self._q: queue.Queue = queue.Queue()
        self._t = threading.Thread(target=self._reader, daemon=True)
        self._t.start()

    def _reader(self) -> None:
        for line in self.proc.stdout:
            self._q.put(json.loads(line))
        self._q.put(None)

    def _pump(self, timeout: float) -> bool:
        try:
            m = self._q.get(timeout=timeout)
        except queue.Empty:
            return True
        if m is None:
            return False
        self.msgs.append(m)
        return True

    def wait(self, pred, timeout: float = 15.0, what: str = "condition"):
        end = time.monotonic() + timeout
        while True:
            v = pred(self.msgs)
            if v:
                return v
            left = end - time.monotonic()
            if left <= 0 or not self._pump(min(left, 0.1)) and not pred(self.msgs):
                raise AssertionError(f"linkdump: {what} not seen; last messages: "
                                     f"{self.msgs[-10:]}")

    def send(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def of(self, type_: str) -> list[dict]:
        return [m for m in self.msgs if m["type"] == type_]

    def status(self) -> dict:
        n = len(self.of("status"))
        self.send("!status")
        return self.wait(lambda ms: len([m for m in ms if m["type"] == "status"]) > n
                         and [m for m in ms if m["type"] == "status"][-1], what="status")

    def close(self) -> str:
        if self.proc.poll() is None:
            self.send("!quit")
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        while self._pump(0.5):
            pass
        err = self.proc.stderr.read()
        assert self.proc.returncode == 0, err
        assert "ERROR: AddressSanitizer" not in err and "runtime error" not in err, err
        return err
