"""Soak test of the target link: a bounded flood into the real sbrigd.

The real daemon (ASan build) records a capture, driven as a black box over
its socket protocol (host/doc/daemon-protocol.md: ``capture DIR``, then
``stop``), while a scripted agent (tests.rigproto.FakeAgent: no target can
produce a flood on demand, so the agent is the fake; the daemon, its link
and its capture writer are real) floods it for SBRIG_SOAK_SECONDS (60 by
default): first a 40 MB burst of valid EV frames written with one sendall
(issue 7 §4.4: such a burst took the daemon to 334 MB RSS and left it at
222 MB), then a 4 MB burst every 2 s, with invalid frames between them
(line noise, bad CRCs, truncated and oversize lines, frames after kernel
messages, a wrong version, a valid frame from the past).

Asserted: the daemon's VmRSS (sampled from /proc/PID/status every 0.2 s)
stays within a bound during the flood and comes back down after it;
nothing is lost: every valid event's seq is in the capture's events.tsv,
once, in order; the daemon answers and ends the capture cleanly.

ASan keeps freed memory in its quarantine (256 MB by default) and returns
it to the kernel lazily: the daemon runs with a 16 MB quarantine and a
release interval of 200 ms, so RSS shows the program's memory.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.rigproto import FakeAgent, frame

REPO = Path(__file__).resolve().parents[1]
SBRIGD = REPO / "build" / "host" / "asan" / "sbrigd"
SOAK_S = float(os.environ.get("SBRIG_SOAK_SECONDS", "60"))
FIRST_BURST = 500_000       # events: about 40 MB of frames
BURST = 50_000              # events per later burst: about 4 MB
BURST_EVERY_S = 2.0
RSS_GROWTH_MAX_KB = 40 * 1024    # during the flood, above the idle daemon
RSS_AFTER_MAX_KB = 24 * 1024     # once it is over (ASan's 16 MB quarantine)


@pytest.fixture(scope="module", autouse=True)
def build():
    subprocess.run(["make", "-C", str(REPO / "host"), "VARIANT=asan", "-j2"],
                   check=True, stdout=subprocess.DEVNULL)


def vm_rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


class RssSampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.samples, self.stop = pid, [], threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.2):
            try:
                self.samples.append((time.monotonic(), vm_rss_kb(self.pid)))
            except (OSError, AssertionError):
                return


def wait_log(proc_log: list[str], cond: threading.Condition, text: str,
             timeout: float = 30) -> None:
    end = time.monotonic() + timeout
    with cond:
        while not any(text in line for line in proc_log):
            left = end - time.monotonic()
            assert left > 0, f"no '{text}' in sbrigd log:\n" + "".join(proc_log)
            cond.wait(min(left, 0.2))


def test_flood_bounded_rss_and_nothing_lost(tmp_path):
    agent = FakeAgent(boot_id="boot-soak", kernel="6.1.0-soak")
    conf = tmp_path / "soak.conf"
    conf.write_text(f"[rig]\nname = soak\n[target]\nuri = tcp:127.0.0.1:{agent.port}\n"
                    "[timing]\nping_interval_ms = 200\n")
    sock = tmp_path / "sbrigd.sock"
    env = dict(os.environ, ASAN_OPTIONS="quarantine_size_mb=16:"
               "allocator_release_to_os_interval_ms=200:detect_leaks=1")
    proc = subprocess.Popen([str(SBRIGD), "-c", str(conf), "-s", str(sock)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=env)
    log: list[str] = []
    cond = threading.Condition()

    def reader():
        for line in proc.stderr:
            with cond:
                log.append(line)
                cond.notify_all()
    threading.Thread(target=reader, daemon=True).start()
    sampler = RssSampler(proc.pid)
    cap = tmp_path / "cap"
    try:
        wait_log(log, cond, "listening on")
        wait_log(log, cond, "agent fake up")
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.settimeout(120)
        c.connect(str(sock))
        f = c.makefile("rwb")
        f.write(f"capture {cap}\n".encode())
        f.flush()
        assert f.readline().decode().startswith("progress started"), "no capture"
        # the idle daemon, capturing
        base_kb = vm_rss_kb(proc.pid)
        sampler.start()

        seq, bursts, invalid = 0, 0, 0
        t_end = time.monotonic() + SOAK_S
        pace = threading.Event()    # never set: its wait() paces the bursts
        while time.monotonic() < t_end:
            t_burst = time.monotonic()
            n = FIRST_BURST if not bursts else BURST
            sent = agent.send_burst(seq, n, time.monotonic_ns())
            seq += n
            bursts += 1
            # the host may not have been streaming at seq (a RESEND in
            # progress): then the records go out by normal streaming
            assert sent or agent.send_pos <= seq
            for junk in (b"\x00\xff random line noise \x01\n",
                         b"@sb1 EV 1 1 block \"x\" *00000000\n",      # bad CRC
                         b"@sb1 EV 5 1 block \"trunc",                # cut ...
                         b"\n",                                       # ... line
                         b"A" * 5000 + b"\n",                         # oversize
                         b"@sb7 EV 5 1 block \"x\" *12345678\n",      # version
                         frame("@sb1 EV 0 1000 block \"from the past\""),
                         b"[ 12.3] usb 1-1: reset " + frame(f"@sb1 BEAT {seq} 1")):
                agent.send_raw(junk)
                invalid += 1
            # the agent may forget what the host has acknowledged
            agent.wait_for(lambda a: a.acked >= seq - BURST // 2, 60)
            agent.forget_before(agent.acked + 1)
            pace.wait(max(0.0, t_burst + BURST_EVERY_S - time.monotonic()))
        # everything sent is acknowledged: the link has it all
        end = time.monotonic() + 120
        while agent.acked != seq - 1:
            assert time.monotonic() < end, (agent.acked, seq)
            agent.beat()        # BEAT: the host ACKs what it has
            try:
                agent.wait_for(lambda a: a.acked == seq - 1, 1)
            except TimeoutError:
                pass
        t_drained = time.monotonic()
        # RSS comes back down (ASan returns freed memory every 200 ms)
        deadline = time.monotonic() + 20
        after_kb = vm_rss_kb(proc.pid)
        while after_kb > base_kb + RSS_AFTER_MAX_KB and time.monotonic() < deadline:
            time.sleep(0.2)
            after_kb = vm_rss_kb(proc.pid)
        f.write(b"stop\n")
        f.flush()
        while True:
            line = f.readline().decode()
            assert line, "connection closed before the capture's answer"
            if not line.startswith(("progress", "data")):
                break
        assert line.startswith("ok "), line
        m = re.search(r"\bevents=(\d+)", line)
        assert m and int(m.group(1)) == seq, (line, seq)
        c.close()
    finally:
        sampler.stop.set()
        if sampler.samples:
            print(f"soak: sbrigd VmRSS peak {max(kb for _, kb in sampler.samples)} kB")
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        agent.close()
    text = "".join(log)
    assert "ERROR: AddressSanitizer" not in text and "runtime error" not in text, text
    assert proc.returncode == 0, text[-3000:]

    peak_kb = max(kb for _, kb in sampler.samples)
    print(f"soak: {bursts} bursts, {seq} events, {invalid} invalid frames in "
          f"{SOAK_S:.0f} s; RSS idle {base_kb} kB, peak {peak_kb} kB, "
          f"after {after_kb} kB ({time.monotonic() - t_drained:.1f} s after)")
    assert peak_kb - base_kb <= RSS_GROWTH_MAX_KB, (base_kb, peak_kb)
    assert after_kb - base_kb <= RSS_AFTER_MAX_KB, (base_kb, after_kb)
    assert bursts >= 2

    # nothing lost, nothing twice, in order (streamed: the file is big)
    want = 0
    with open(cap / "events.tsv") as ev:
        header = ev.readline().rstrip("\n").split("\t")
        col = header.index("seq")
        for row in ev:
            cols = row.rstrip("\n").split("\t")
            assert cols[3] == "boot-soak"
            assert int(cols[col]) == want, (int(cols[col]), want)
            want += 1
    assert want == seq
    meta = (cap / "meta.ini").read_text()
    assert "status = complete" in meta and f"\nevents = {seq}\n" in meta
