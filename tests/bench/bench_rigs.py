#!/usr/bin/python3
"""bench_rigs.py - several rigs on one host: N sbrigd at once, next to iio_readdev.

    /usr/bin/python3 tests/bench/bench_rigs.py [--rigs 8 16 32] [--seconds 60]
                                               [--rate 3500] [--idle 20]
                                               [--buffer-samples 0]
                                               [--reference-buffer-samples 256]
                                               [--reference file|pipe]

For each count N of ``--rigs`` (default 8, then 16 and 32), this host runs
N virtual rigs at once, each as a lab would run them (one sbrigd per rig,
as sbrigd@NAME.service does: its own rig description and its own socket):

  * an INA226 emulator (rig/virtual/ina226_iiod.py, its own process) at
    ``--rate`` (default 3500: the INA226 setting nearest is 2 x 140 us,
    averaging 1, 3571.4 S/s) on a 2.94 MHz I2C bus, writing its ground
    truth (every sample it emitted, per buffer);
  * a scripted agent (tests/rigproto.py's FakeAgent, a thread here) that
    logs a block and an unblock event every 0.5 s;
  * the release sbrigd, ``-c RIG.conf -s RUN/RIG.sock``, and one
    ``sbrig -s RUN/RIG.sock capture -d SECONDS``;
  * the reference: one ``iio_readdev`` per sensor (all its channels, the
    same rate x SECONDS samples, at its own default buffer size, 256
    samples: ``--reference-buffer-samples``, ``same`` for sbrigd's) on the
    same emulator, writing its samples to a file beside the capture, on the
    same file system (``--reference file``, the default), started once the
    capture's buffer is open, so both run at the same time.

Each program runs at its own defaults, as a lab would run it: sbrigd's
``[power] buffer_samples`` (``--buffer-samples``, default 0) sizes its
buffer in time, a quarter second's worth (892 samples at 3571.4 S/s;
``sbrig status`` shows it), iio_readdev's is 256 samples whatever the
rate. A refill costs about the same whatever its size, so at this rate
sbrigd refills 4 times a second and iio_readdev 14; with equal buffers
(``--reference-buffer-samples same``) the figure shows what sbrigd does
on top of the same refills (the capture's files, its loop, its syncs).

Then it prints one line per rig: the samples the emulator emitted into
sbrigd's buffer (its truth's own count), those in the capture, the
difference (dropped: the target is 0), the capture's declared gaps, how
far the emulator's stream was behind the host's clock when the capture
closed (``late``: its last sample's stamp against the capture's close;
a few ms when the emulator keeps up), whether sbrigd had to give up the
buffer in flight at the stop (``tail lost``: it logs that the sensor did
not deliver the samples up to the stop in time), and sbrigd's host CPU (its process CPU clock, all threads, in ns, over the
capture) beside iio_readdev's (user + system from wait4, in us) and their
ratio (target <= 1.0x), with sbrigd's CPU over --idle seconds before the
captures (no capture: link pings, the agent's events), scaled to the
capture's length, so that the capture's own share shows; then
the totals (host CPU per rig as a share of one core), whether the host kept up (no sample dropped, and every stream
within 1 % of real time: an emulator that falls behind the clock is this
host failing to keep up too), and after the last count, where it stopped
keeping up.

Why 2.94 MHz. sbrig refuses a rate above what ina2xx-adc reads without
losses (sbrig_power_max_rate(), host/include/sbrig/power.h): five SMBus
word reads of 48 bit times a sample and the driver's 200 us early poll.
At [power] i2c_hz = 400000 (fast mode) that is 1e6 / (5 x 48 x 2.5 us +
200 us) = 1250 S/s. The INA226 also speaks high-speed mode, up to
2.94 MHz: a bit is 0.340 us, five words 81.6 us, 1e6 / (81.6 + 200) =
3550 S/s >= 3500, so the rigs' descriptions say i2c_hz = 2940000 and the
emulators run their simulated driver at that clock (--i2c-hz). The
INA226's own setting nearest 3.5 kS/s is 3571.4 S/s (2 x 140 us), 0.6 %
above that ceiling, and sbrig picks the timings of a *requested*
sample_rate_hz only among settings at or under the ceiling (it would
program 2451 S/s for 3500); so the rigs keep the device's rate
(sample_rate_hz = 0: the emulator starts at 3571.4 S/s, as a sensor
configured by its board would), and the samples' count against the
emulator's own tells whether that is read without a loss. The ceiling is
not changed.

Why the reference writes to a file. sbrigd keeps what it captures: it
writes every sample to the capture's samples.bin and fdatasyncs the data
files once a second (host/doc/capture-format.md: a crash loses about a
second). A user capturing with iio_readdev instead would keep its samples
too, ``iio_readdev ... > FILE``, so that is the reference: the same
samples written to a file on the same file system (16 bytes a sample
against samples.bin's 32), without an fsync (iio_readdev has none; the
kernel's flusher threads write it back, on nobody's account here).
``--reference pipe`` gives the figure against an iio_readdev whose output
only goes to a pipe this script counts (what the script measured before:
it leaves out any cost of keeping the samples). Neither is made dearer
than a user would run it: iio_readdev's own defaults, the same buffer
size as sbrigd's.

Host CPU: on this 2-core machine the emulators (Python) and the agents
take most of it; the figures are sbrigd's and iio_readdev's own.

Where the drops come from. A rig that drops samples here has lost the
buffer in flight at the stop (``tail lost``): its emulator, starved of
CPU, had fallen behind the host's clock, and sbrigd gives up a sensor that
delivers no buffer for a buffer's duration and a quarter plus a second (or
that has not reached the stop 10 s after it). Such drops, and streams
below 99 % of real time, are this host not keeping up; a drop on a rig
without ``tail lost`` is not explained so and is printed as such.
Needs: make host (build/host/release), iio_readdev (libiio-utils).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from rig.virtual.ina226_iiod import read_truth  # noqa: E402
from tests.capture import meta_section, read_rows, samples_file  # noqa: E402
from tests.rigproto import FakeAgent, frame  # noqa: E402
from tests.test_power import Emulator  # noqa: E402

BIN = REPO / "build" / "host" / "release"
I2C_HZ = 2940000
# iio_readdev's sample with every channel: 4 x u16 + s64 timestamp
READDEV_SAMPLE = 16
# what sbrigd logs when the sensor's samples up to a capture's stop did not
# come within a buffer's duration and a second (sbrig_power_stop(), power.c:
# the refill in flight is cancelled and its buffer lost)
TAIL_LOST = "did not deliver the samples up to the stop in time"


def proc_cpu(pid: int) -> float:
    """CPU time of process @pid (all its threads, the ended ones too), in
    seconds: its CPU-time clock (clock_getcpuclockid(3): CPUCLOCK_SCHED of
    the process, ns), not /proc's utime + stime in 10 ms ticks."""
    return time.clock_gettime(((~pid) << 3) | 2)


def status_key(sock: Path, key: str, timeout: float = 30) -> str:
    """One of sbrigd's status keys ("sensor.buffer_samples"), once the
    daemon has it (the sensor's keys once it is open)."""
    end = time.monotonic() + timeout
    while True:
        out = subprocess.run([str(BIN / "sbrig"), "-s", str(sock), "status",
                              "--json"], capture_output=True, text=True,
                             timeout=30).stdout
        node = json.loads(out) if out.strip() else {}
        for part in key.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            return str(node)
        if time.monotonic() > end:
            raise RuntimeError(f"{sock}: no {key} in sbrigd's status")
        time.sleep(0.2)


def agent_handler(agent: FakeAgent):
    def handler(cmd_id: int, verb: str, args: str) -> list[bytes]:
        out = []
        if verb == "stats":
            out.append(frame(f'@sb1 ST {cmd_id} 0 1 "main" 1 0 0 5 0 5 100'))
        out.append(frame(f'@sb1 R {cmd_id} 0 "ok"'))
        return out
    return handler


class Rig:
    def __init__(self, i: int, tmp: Path, rate: int, run: Path,
                 buffer_samples: int) -> None:
        self.name = f"bench-{i}"
        self.dir = tmp / self.name
        self.dir.mkdir()
        self.truth = self.dir / "truth.jsonl"
        self.emu = Emulator(self.dir, "--rate", str(rate), "--i2c-hz",
                            str(I2C_HZ), "--current-uA", str(20000 + 1000 * i),
                            "--truth", str(self.truth))
        self.agent = FakeAgent(boot_id=f"boot-{self.name}", kernel="6.1.0-bench")
        self.agent.cmd_handler = agent_handler(self.agent)
        self.conf = self.dir / f"{self.name}.conf"
        self.conf.write_text(f"""[rig]
name = {self.name}
[power]
uri = {self.emu.uri}
device = ina226
shunt_uohm = 100000
i2c_hz = {I2C_HZ}
buffer_samples = {buffer_samples}
[target]
uri = tcp:127.0.0.1:{self.agent.port}
""")
        self.sock = run / f"{self.name}.sock"
        self.log = self.dir / "sbrigd.log"
        self.daemon = subprocess.Popen(
            [str(BIN / "sbrigd"), "-c", str(self.conf), "-s", str(self.sock)],
            stdout=subprocess.DEVNULL, stderr=open(self.log, "w"))
        self.cap = self.dir / "cap"
        self.capture = self.readdev = None
        self.readdev_bytes = 0
        self.readdev_out = self.dir / "readdev.bin"

    def wait_up(self, timeout: float = 60) -> None:
        end = time.monotonic() + timeout
        while "link: agent" not in self.log.read_text():
            if self.daemon.poll() is not None or time.monotonic() > end:
                raise RuntimeError(f"{self.name}: sbrigd did not come up:\n"
                                   + self.log.read_text())
            time.sleep(0.1)

    def opened(self) -> int:
        return sum(1 for r in read_truth(self.truth) if r["type"] == "open")

    def start_readdev(self, nsamples: int, buffer_samples: int,
                      reference: str) -> None:
        """One iio_readdev on this rig's emulator: to a file beside the
        capture (reference "file"), or to a pipe this script only counts
        ("pipe")."""
        cmd = ["iio_readdev", "-u", self.emu.uri, "-b", str(buffer_samples),
               "-s", str(nsamples), "ina226"]
        if reference == "file":
            with open(self.readdev_out, "wb") as out:
                self.readdev = subprocess.Popen(cmd, stdout=out,
                                                stderr=subprocess.PIPE)
            return
        self.readdev = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE)
        threading.Thread(target=self.count_readdev, daemon=True).start()

    def count_readdev(self) -> None:
        while True:
            b = self.readdev.stdout.read(1 << 16)
            if not b:
                break
            self.readdev_bytes += len(b)

    def readdev_samples(self) -> int:
        if self.readdev_out.exists():
            return self.readdev_out.stat().st_size // READDEV_SAMPLE
        return self.readdev_bytes // READDEV_SAMPLE

    def stop(self) -> None:
        for p in (self.capture, self.readdev, self.daemon):
            if p and p.poll() is None:
                p.terminate()
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.agent.close()
        self.emu.stop()


def scripted_events(rigs: list[Rig], stop: threading.Event) -> None:
    seq = 0
    while not stop.wait(0.5):
        for r in rigs:
            kind = "block" if seq % 2 == 0 else "unblock"
            r.agent.send_event(seq, time.monotonic_ns(), kind, '"bench"')
        seq += 1


def run_count(n: int, seconds: int, rate: int, idle: int,
              buffer_samples: int, ref_buffer: str, reference: str) -> dict:
    nsamples = int(seconds * 1e6 / 280)  # 3571.4 S/s x seconds
    tmp = Path(tempfile.mkdtemp(prefix=f"bench-rigs-{n}-",
                                dir=REPO / "build"))
    run = tmp / "run"
    run.mkdir()
    rigs: list[Rig] = []
    stop = threading.Event()
    try:
        for i in range(n):
            rigs.append(Rig(i, tmp, rate, run, buffer_samples))
        for r in rigs:
            r.wait_up()
        # the size sbrigd uses (0: its quarter second's worth)
        sbrigd_buffer = int(status_key(rigs[0].sock, "sensor.buffer_samples"))
        ref_samples = sbrigd_buffer if ref_buffer == "same" else int(ref_buffer)
        ev = threading.Thread(target=scripted_events, args=(rigs, stop),
                              daemon=True)
        ev.start()
        # each daemon's CPU without a capture (link pings, the agent's
        # events): what a rig costs when it does not sample
        idle0 = {r.name: proc_cpu(r.daemon.pid) for r in rigs}
        time.sleep(idle)
        idle_cpu = {r.name: proc_cpu(r.daemon.pid) - idle0[r.name]
                    for r in rigs}
        cpu0 = {}
        for r in rigs:
            cpu0[r.name] = proc_cpu(r.daemon.pid)
            r.capture = subprocess.Popen(
                [str(BIN / "sbrig"), "-s", str(r.sock), "capture", "-d",
                 f"{seconds}s", "-o", str(r.cap)],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # the reference once each capture's buffer is open
        end = time.monotonic() + 60
        for r in rigs:
            while r.opened() < 1:
                if time.monotonic() > end:
                    raise RuntimeError(f"{r.name}: the capture opened no buffer")
                time.sleep(0.05)
            r.start_readdev(nsamples, ref_samples, reference)
        out = []
        for r in rigs:
            so, se = r.capture.communicate(timeout=seconds + 300)
            cpu = proc_cpu(r.daemon.pid) - cpu0[r.name]
            if r.capture.returncode != 0:
                raise RuntimeError(f"{r.name}: capture failed: {se}{so}")
            _pid, status, ru = os.wait4(r.readdev.pid, 0)
            r.readdev.returncode = os.waitstatus_to_exitcode(status)
            ref_cpu = ru.ru_utime + ru.ru_stime
            time.sleep(0.2)
            recs = read_truth(r.truth)
            opens = sorted(x["stream"] for x in recs if x["type"] == "open")
            closes = {x["stream"]: x for x in recs if x["type"] == "close"}
            sim_lost = {s: sum(x["missing"] for x in recs
                               if x["type"] == "drop" and x["stream"] == s)
                        for s in opens}
            period = next(x["period_ns"] for x in recs if x["type"] == "open")
            emitted = closes[opens[0]]["samples"] if opens[0] in closes else -1
            ref_emitted = (closes[opens[1]]["samples"]
                           if len(opens) > 1 and opens[1] in closes else -1)
            recorded = len(read_rows(r.cap, "samples"))
            gaps = len(read_rows(r.cap, "gaps"))
            # how far behind the host's clock the emulator's stream was
            # when sbrigd closed the capture: its last sample's stamp (the
            # truth is on host CLOCK_MONOTONIC) against the close
            closed = int(meta_section(r.cap, "end")["closed_monotonic_ns"])
            last = max((x["last_ns"] for x in recs if x["type"] == "interval"
                        and x["stream"] == opens[0]), default=closed)
            out.append({
                "rig": r.name, "emitted": emitted, "recorded": recorded,
                "dropped": emitted - recorded, "gaps": gaps,
                "sim_lost": sim_lost[opens[0]],
                "realtime": recorded * period / (seconds * 1e9),
                "cpu": cpu, "ref_cpu": ref_cpu,
                "idle_cpu": idle_cpu[r.name] * seconds / idle if idle else 0.0,
                "late": (closed - last) / 1e9,
                "tail_lost": TAIL_LOST in r.log.read_text(),
                "ref_samples": r.readdev_samples(),
                "ref_emitted": ref_emitted, "ref_rc": r.readdev.returncode,
                "ref_wanted": nsamples,
                "rate": 1e9 / period, "file": samples_file(r.cap).name,
            })
        return {"n": n, "rigs": out, "reference": reference,
                "buffer_samples": sbrigd_buffer, "ref_buffer": ref_samples}
    finally:
        stop.set()
        for r in rigs:
            r.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def report(res: dict, seconds: int) -> bool:
    n = res["n"]
    ref_name = ("iio_readdev > file" if res["reference"] == "file"
                else "iio_readdev | pipe")
    print(f"\n== {n} rigs at once, {seconds} s capture each "
          f"({res['rigs'][0]['rate']:.1f} S/s, i2c_hz {I2C_HZ}, "
          f"sbrigd's buffers {res['buffer_samples']} samples; reference: "
          f"{ref_name}, {res['ref_buffer']}-sample buffers) ==")
    print(f"{'rig':10} {'emitted':>8} {'recorded':>8} {'dropped':>7} "
          f"{'gaps':>4} {'realtime':>8} {'late':>6} | {'sbrigd cpu':>10} "
          f"{'(idle)':>7} {'iio_readdev cpu':>15} {'ratio':>6} | "
          f"readdev samples/asked")
    for r in res["rigs"]:
        ratio = r["cpu"] / r["ref_cpu"] if r["ref_cpu"] else float("inf")
        print(f"{r['rig']:10} {r['emitted']:8d} {r['recorded']:8d} "
              f"{r['dropped']:7d} {r['gaps']:4d} {100 * r['realtime']:7.1f}% "
              f"{r['late']:5.2f}s | "
              f"{r['cpu']:9.2f}s {r['idle_cpu']:6.2f}s "
              f"{r['ref_cpu']:14.2f}s {ratio:5.2f}x | "
              f"{r['ref_samples']:8d}/{r['ref_wanted']:<6d}"
              + ("  tail lost: sensor late at the stop" if r["tail_lost"]
                 else ""))
    cpu = sum(r["cpu"] for r in res["rigs"])
    idle = sum(r["idle_cpu"] for r in res["rigs"])
    ref = sum(r["ref_cpu"] for r in res["rigs"])
    dropped = sum(r["dropped"] for r in res["rigs"])
    ref_short = sum(max(0, r["ref_wanted"] - r["ref_samples"])
                    for r in res["rigs"])
    slow = [r["rig"] for r in res["rigs"] if r["realtime"] < 0.99]
    sim = sum(r["sim_lost"] for r in res["rigs"])
    print(f"total: sbrigd dropped {dropped} samples; host CPU per rig "
          f"{cpu / n / seconds * 100:.2f} % (sbrigd) vs "
          f"{ref / n / seconds * 100:.2f} % ({ref_name}), ratio "
          f"{cpu / ref if ref else float('inf'):.2f}x (sbrigd without a "
          f"capture, scaled to the same time: {idle / n / seconds * 100:.2f} %, "
          f"ratio of the difference {(cpu - idle) / ref if ref else 0:.2f}x); "
          f"samples iio_readdev "
          f"did not get of those it asked for: {ref_short}; conversions the simulated driver lost: {sim}")
    # a drop is the host's overload, not sbrigd's, when it is the buffer
    # the stop cancelled because the emulator's stream was behind the
    # host's clock by more than sbrig_power_stop() waits for
    tail = [r for r in res["rigs"] if r["tail_lost"]]
    other = [r["rig"] for r in res["rigs"]
             if r["dropped"] and not r["tail_lost"]]
    if tail:
        print(f"drops at the stop: {len(tail)} rigs lost the buffer in flight "
              f"({', '.join(str(r['dropped']) for r in tail)} samples) because "
              f"their emulator's stream was "
              f"{min(r['late'] for r in tail):.2f}-{max(r['late'] for r in tail):.2f} s "
              f"behind the host's clock at the stop (sbrigd waits a buffer "
              f"and a second, then cancels: a sensor that late is taken for "
              f"hung): the host is not keeping up, the emulators fell behind "
              f"real time")
    if other:
        print(f"drops NOT explained by a late sensor at the stop: "
              f"{', '.join(other)}")
    keeps = dropped == 0 and not slow
    print(f"keeps up: {'yes' if keeps else 'no'}"
          + (f" (streams behind real time: {', '.join(slow)})" if slow else "")
          + (f" ({dropped} samples dropped)" if dropped else ""))
    return keeps


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rigs", type=int, nargs="+", default=[8, 16, 32])
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--rate", type=int, default=3500)
    ap.add_argument("--buffer-samples", type=int, default=0,
                    help="sbrigd's [power] buffer_samples (default 0, its "
                    "own: a quarter second's worth)")
    ap.add_argument("--reference-buffer-samples", default="256",
                    help="iio_readdev's -b (default 256, its own default), "
                    "or 'same': sbrigd's size")
    ap.add_argument("--reference", choices=("file", "pipe"), default="file",
                    help="where iio_readdev writes its samples: a file "
                    "beside the capture (default) or a pipe only counted")
    ap.add_argument("--idle", type=int, default=20,
                    help="seconds of each daemon's CPU without a capture "
                    "(the '(idle)' column, scaled to --seconds)")
    a = ap.parse_args()
    if a.reference_buffer_samples != "same" and \
            not a.reference_buffer_samples.isdigit():
        ap.error("--reference-buffer-samples: a number of samples or 'same'")
    for tool in (BIN / "sbrigd", BIN / "sbrig"):
        if not tool.exists():
            sys.exit(f"{tool} missing: run make host")
    if not shutil.which("iio_readdev"):
        sys.exit("iio_readdev missing: apt install libiio-utils")
    first_fail = None
    for n in a.rigs:
        t0 = time.monotonic()
        keeps = report(run_count(n, a.seconds, a.rate, a.idle,
                                 a.buffer_samples, a.reference_buffer_samples,
                                 a.reference), a.seconds)
        print(f"({time.monotonic() - t0:.0f} s wall)", flush=True)
        if not keeps and first_fail is None:
            first_fail = n
    ok = [n for n in a.rigs if first_fail is None or n < first_fail]
    print("\nwhere this host stops keeping up: "
          + (f"at {first_fail} rigs (kept up at {max(ok)})" if first_fail and ok
             else f"at {first_fail} rigs already" if first_fail
             else f"not reached (kept up at {max(a.rigs)} rigs)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
