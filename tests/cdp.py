"""A headless Chromium driven over the DevTools protocol (CDP), for page tests.

Debian's ``chromium`` is started with ``--remote-debugging-port=0`` and the
flags that keep it off the network (host/doc: the machine has none); one
WebSocket (``python3-websocket``) talks to the browser, and each
:class:`Page` is a target attached in flat mode (its messages carry a
sessionId). Everything waits on protocol events or on promises evaluated
in the page, each with a deadline; nothing sleeps.

    with Browser() as b:
        p = b.new_page()
        p.goto("file:///tmp/report.html")
        p.eval("document.title")
        p.errors          # console errors and uncaught exceptions so far
        p.requests        # every URL the page asked for
"""

from __future__ import annotations

import base64
import json
import os
import re
import select
import shutil
import subprocess
import tempfile
import threading
import time

import websocket  # python3-websocket

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--mute-audio", "--hide-scrollbars",
    "--remote-debugging-port=0", "--remote-allow-origins=*",
    # no network at all: any host name fails at once
    "--host-resolver-rules=MAP * ~NOTFOUND",
]


class CdpError(RuntimeError):
    pass


class Browser:
    def __init__(self, timeout: float = 30.0, window=(1280, 900)):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="sbrig-chromium-")
        self.proc = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--user-data-dir={self.profile}",
             f"--window-size={window[0]},{window[1]}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.log: list[str] = []
        url = self._devtools_url()
        self.ws = websocket.create_connection(url, timeout=timeout, suppress_origin=True)
        self.next_id = 0
        self.pending: dict[str, list] = {}   # sessionId -> events not yet taken

    def _devtools_url(self) -> str:
        """The line 'DevTools listening on ws://...' on Chromium's stderr."""
        deadline = time.monotonic() + self.timeout
        buf = b""
        fd = self.proc.stderr.fileno()
        while time.monotonic() < deadline:
            r, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not r:
                break
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            buf += chunk
            m = re.search(rb"DevTools listening on (ws://\S+)", buf)
            if m:
                self.log.append(buf.decode(errors="replace"))
                # keep reading stderr, or a chatty Chromium blocks on a full pipe
                threading.Thread(target=self._drain_stderr, daemon=True).start()
                return m.group(1).decode()
        self.close()
        raise CdpError(f"chromium did not start: {buf.decode(errors='replace')[-2000:]}")

    def _drain_stderr(self) -> None:
        for line in iter(self.proc.stderr.readline, b""):
            self.log.append(line.decode(errors="replace"))
            del self.log[:-200]

    def send(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float | None = None) -> dict:
        self.next_id += 1
        mid = self.next_id
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            m = self._recv(deadline, f"{method}")
            if m.get("id") == mid:
                if "error" in m:
                    raise CdpError(f"{method}: {m['error']}")
                return m.get("result", {})
            self._queue(m)

    def _recv(self, deadline: float, what: str) -> dict:
        left = deadline - time.monotonic()
        if left <= 0:
            raise CdpError(f"timed out waiting for {what}")
        self.ws.settimeout(left)
        try:
            return json.loads(self.ws.recv())
        except websocket.WebSocketTimeoutException:
            raise CdpError(f"timed out waiting for {what}") from None

    def _queue(self, m: dict) -> None:
        if "method" in m:
            self.pending.setdefault(m.get("sessionId", ""), []).append(m)

    def wait_event(self, session: str, method: str, timeout: float | None = None) -> dict:
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            q = self.pending.get(session, [])
            for i, m in enumerate(q):
                if m["method"] == method:
                    del q[i]
                    return m["params"]
            self._queue(self._recv(deadline, method))

    def new_page(self, width: int = 1280, height: int = 900) -> "Page":
        tid = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        sid = self.send("Target.attachToTarget", {"targetId": tid, "flatten": True})["sessionId"]
        return Page(self, sid, width, height)

    def close(self) -> None:
        try:
            if getattr(self, "ws", None):
                self.ws.close()
        finally:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Page:
    def __init__(self, browser: Browser, session: str, width: int, height: int):
        self.b = browser
        self.sid = session
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self.requests: list[str] = []
        for dom in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{dom}.enable")
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def send(self, method: str, params: dict | None = None, timeout: float | None = None) -> dict:
        res = self.b.send(method, params, self.sid, timeout)
        self._drain()
        return res

    def _drain(self) -> None:
        """Take console, exception and request events out of the queue."""
        q = self.b.pending.get(self.sid, [])
        keep = []
        for m in q:
            meth, p = m["method"], m["params"]
            if meth == "Runtime.consoleAPICalled":
                text = " ".join(str(a.get("value", a.get("description", ""))) for a in p["args"])
                if p["type"] in ("error", "assert"):
                    self.errors.append(f"console.{p['type']}: {text}")
                elif p["type"] == "warning":
                    self.warnings.append(text)
            elif meth == "Runtime.exceptionThrown":
                d = p["exceptionDetails"]
                self.errors.append("exception: " + d.get("exception", {}).get("description", d.get("text", "")))
            elif meth == "Log.entryAdded":
                e = p["entry"]
                if e["level"] == "error":
                    self.errors.append(f"log: {e.get('text')} {e.get('url', '')}")
                elif e["level"] == "warning":
                    self.warnings.append(e.get("text", ""))
            elif meth == "Network.requestWillBeSent":
                self.requests.append(p["request"]["url"])
            else:
                keep.append(m)
        self.b.pending[self.sid] = keep

    def goto(self, url: str, timeout: float | None = None) -> None:
        self.send("Page.navigate", {"url": url})
        self.b.wait_event(self.sid, "Page.loadEventFired", timeout)
        self._drain()

    def eval(self, expr: str, timeout: float | None = None):
        """The value of @expr in the page; a promise is awaited."""
        r = self.send("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                            "awaitPromise": True}, timeout)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise CdpError(f"{expr[:80]}: {d.get('exception', {}).get('description', d.get('text'))}")
        return r["result"].get("value")

    def mouse(self, kind: str, x: float, y: float, **kw) -> None:
        self.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, **kw})

    def drag(self, x0: float, y0: float, x1: float, y1: float, steps: int = 8) -> None:
        self.mouse("mouseMoved", x0, y0)
        self.mouse("mousePressed", x0, y0, button="left", buttons=1, clickCount=1)
        for i in range(1, steps + 1):
            self.mouse("mouseMoved", x0 + (x1 - x0) * i / steps, y0 + (y1 - y0) * i / steps,
                       button="left", buttons=1)
        self.mouse("mouseReleased", x1, y1, button="left", buttons=0, clickCount=1)

    def dblclick(self, x: float, y: float) -> None:
        for n in (1, 2):
            self.mouse("mousePressed", x, y, button="left", buttons=1, clickCount=n)
            self.mouse("mouseReleased", x, y, button="left", buttons=0, clickCount=n)

    def screenshot(self, full_page: bool = True) -> bytes:
        params = {"format": "png", "captureBeyondViewport": full_page}
        if full_page:
            m = self.send("Page.getLayoutMetrics")
            size = m.get("cssContentSize") or m["contentSize"]
            params["clip"] = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        return base64.b64decode(self.send("Page.captureScreenshot", params, timeout=60)["data"])
