"""A real QEMU's QMP socket for host tests that press keys through it.

sbrigd's qmp: keys (host/lib/gpio-qmp.c) send QEMU's input-send-event.
The host tests used a scripted QMP peer (QmpStub) that answered every
command with an empty return; this is QEMU itself: qemu-system-x86_64
with no disk, whose firmware finds nothing to boot and idles (a few %
of a core), so every answer (the greeting, qmp_capabilities,
input-send-event into its PS/2 keyboard, query-status, errors) is
QEMU's. Between the daemon and QEMU a tap copies the bytes both ways
and notes the keys the daemon sent (``downs()``), which QEMU does not
report; what a key does in a guest is test_vrig.py's (a booted guest).

    q = QemuQmp(tmp / "qmp.sock")   # sbrigd connects to tmp/qmp.sock
    ...; q.downs() -> [("power", True), ("power", False)]
    q.on_key = fn                   # fn(qcode, down, t_ns) as each passes
    q.execute("stop")               # QEMU's run state: paused
    q.close()
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

from tests.skips import cannot_run

QEMU = "qemu-system-x86_64"


class QemuQmp:
    def __init__(self, path: Path) -> None:
        if not shutil.which(QEMU):
            cannot_run(f"{QEMU} is not installed (Debian: qemu-system-x86)")
        self.path = path
        self.real = path.with_name(path.name + ".qemu")
        self.keys: list[tuple[str, bool]] = []
        self.on_key = None
        self.lock = threading.Lock()
        self.proc = subprocess.Popen(
            [QEMU, "-machine", "pc", "-nodefaults", "-display", "none",
             "-m", "32", "-qmp", f"unix:{self.real},server=on,wait=off"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE)
        end = time.monotonic() + 30
        while not self.real.exists():
            if self.proc.poll() is not None or time.monotonic() > end:
                err = self.proc.stderr.read() if self.proc.poll() is not None else b""
                self.close()
                raise RuntimeError(f"QEMU did not start: {err.decode(errors='replace')}")
            time.sleep(0.02)
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(str(path))
        self.srv.listen(8)
        threading.Thread(target=self._serve, daemon=True).start()

    # ------------------------------------------------------------- the tap --
    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.srv.accept()
            except OSError:
                return
            qemu = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                qemu.connect(str(self.real))
            except OSError:
                client.close()
                continue
            threading.Thread(target=self._up, args=(client, qemu), daemon=True).start()
            threading.Thread(target=self._pipe, args=(qemu, client), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _up(self, client: socket.socket, qemu: socket.socket) -> None:
        """Daemon -> QEMU, noting the keys of input-send-event."""
        buf = b""
        try:
            while data := client.recv(65536):
                qemu.sendall(data)
                buf += data
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    self._note(line)
        except OSError:
            pass
        for s in (client, qemu):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _note(self, line: bytes) -> None:
        try:
            req = json.loads(line)
        except ValueError:
            return
        if not isinstance(req, dict) or req.get("execute") != "input-send-event":
            return
        t_ns = time.monotonic_ns()
        for ev in req.get("arguments", {}).get("events", []):
            d = ev.get("data", {})
            key = (d.get("key", {}).get("data"), d.get("down"))
            with self.lock:
                self.keys.append(key)
            if self.on_key:
                self.on_key(*key, t_ns)

    # --------------------------------------------------------- the test's --
    def downs(self) -> list[tuple[str, bool]]:
        """The keys the daemon sent, in order: (qcode, down)."""
        with self.lock:
            return list(self.keys)

    def execute(self, command: str) -> dict:
        """One QMP command on a connection of the test's own."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(10)
            s.connect(str(self.real))
            f = s.makefile("rwb")
            f.readline()                                    # the greeting
            for cmd in ("qmp_capabilities", command):
                f.write(json.dumps({"execute": cmd}).encode() + b"\r\n")
                f.flush()
                while True:
                    ans = json.loads(f.readline())
                    if "return" in ans or "error" in ans:
                        break                               # not an event
            return ans

    def close(self) -> None:
        try:
            self.srv.close()
        except AttributeError:
            pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for p in (self.path, self.real):
            try:
                p.unlink()
            except FileNotFoundError:
                pass
