"""A tiny QMP (QEMU Machine Protocol) client over a connected unix socket.

Usage::

    q = QmpClient(sock, log_path)     # reads the greeting, negotiates
    q.execute("query-status")         # -> {"running": True, "status": ...}
    ev = q.wait_event("SUSPEND", 30)  # -> {"event": "SUSPEND", "timestamp":
                                      #     {...}, "host_time": <monotonic>}

A reader thread collects responses and asynchronous events. Every event is
kept (``events``) with QEMU's ``timestamp`` and the host's monotonic arrival
time ``host_time``; ``wait_event`` hands each event out at most once unless
given ``since=`` (an index from ``mark()``).
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
import time
from pathlib import Path
from typing import Any


class QmpError(RuntimeError):
    """QEMU answered a command with an error, or the connection failed."""


class QmpClient:
    def __init__(self, sock: socket.socket, log_path: Path | None = None,
                 timeout: float = 30.0) -> None:
        self._sock = sock
        self._log = open(log_path, "a", buffering=1) if log_path else None
        self._cond = threading.Condition()
        self._responses: dict[str, dict] = {}
        self.events: list[dict] = []
        self._handed_out: set[int] = set()
        self._ids = itertools.count(1)
        self._closed = False
        self._greeting: dict | None = None
        self._send_lock = threading.Lock()
        self._thread = threading.Thread(target=self._reader, name="qmp-reader",
                                        daemon=True)
        self._thread.start()
        with self._cond:
            if not self._cond.wait_for(lambda: self._greeting or self._closed, timeout):
                raise QmpError("no QMP greeting")
        if self._closed:
            raise QmpError("QMP connection closed before greeting")
        self.execute("qmp_capabilities", timeout=timeout)

    # ------------------------------------------------------------ reader --
    def _reader(self) -> None:
        buf = b""
        try:
            while True:
                data = self._sock.recv(65536)
                if not data:
                    break
                buf += data
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if line.strip():
                        self._dispatch(line)
        except OSError:
            pass
        finally:
            with self._cond:
                self._closed = True
                self._cond.notify_all()

    def _dispatch(self, line: bytes) -> None:
        if self._log:
            self._log.write(f"{time.time():.6f} <- {line.decode(errors='replace')}\n")
        try:
            msg = json.loads(line)
        except ValueError:
            return
        with self._cond:
            if "QMP" in msg:
                self._greeting = msg
            elif "event" in msg:
                msg["host_time"] = time.monotonic()
                self.events.append(msg)
            elif "id" in msg:
                self._responses[str(msg["id"])] = msg
            self._cond.notify_all()

    # ----------------------------------------------------------- commands --
    @property
    def closed(self) -> bool:
        return self._closed

    def execute(self, command: str, arguments: dict | None = None,
                timeout: float = 30.0) -> Any:
        """Run a QMP command and return its ``return`` value.

        Raises QmpError on an ``error`` answer, a closed connection or timeout.
        """
        cid = f"sb{next(self._ids)}"
        msg: dict[str, Any] = {"execute": command, "id": cid}
        if arguments:
            msg["arguments"] = arguments
        raw = json.dumps(msg)
        if self._log:
            self._log.write(f"{time.time():.6f} -> {raw}\n")
        try:
            with self._send_lock:
                self._sock.sendall(raw.encode() + b"\n")
        except OSError as exc:
            raise QmpError(f"QMP send of {command} failed: {exc}") from exc
        with self._cond:
            ok = self._cond.wait_for(lambda: cid in self._responses or self._closed,
                                     timeout)
            resp = self._responses.pop(cid, None)
        if resp is None:
            raise QmpError(f"QMP {command}: " + ("connection closed" if ok else
                                                 f"no answer in {timeout} s"))
        if "error" in resp:
            err = resp["error"]
            raise QmpError(f"QMP {command} {arguments or ''} failed: "
                           f"{err.get('class')}: {err.get('desc')}")
        return resp.get("return")

    # ------------------------------------------------------------- events --
    def mark(self) -> int:
        """Index of the next event; pass it as ``since`` to wait_event."""
        with self._cond:
            return len(self.events)

    def wait_event(self, name: str, timeout: float, since: int | None = None) -> dict:
        """Wait for the event ``name`` and return it.

        Without ``since``: the oldest ``name`` event not returned before by
        wait_event (so each event is consumed once). With ``since``: the
        first ``name`` event at index >= since. Raises TimeoutError.
        """
        def find() -> int | None:
            start = since or 0
            for i in range(start, len(self.events)):
                if self.events[i]["event"] == name and (
                        since is not None or i not in self._handed_out):
                    return i
            return None

        with self._cond:
            idx = None
            end = time.monotonic() + timeout
            while (idx := find()) is None:
                left = end - time.monotonic()
                if left <= 0 or self._closed:
                    seen = [e["event"] for e in self.events[-10:]]
                    raise TimeoutError(f"no QMP event {name} within {timeout} s"
                                       f"{' (QMP closed)' if self._closed else ''};"
                                       f" last events: {seen}")
                self._cond.wait(left)
            self._handed_out.add(idx)
            return self.events[idx]

    def close(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        self._thread.join(timeout=5)
        if self._log:
            self._log.close()
            self._log = None
