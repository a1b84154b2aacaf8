#!/usr/bin/python3
"""bench_capture.py - sustained supply capture: sbrig-powercat next to iio_readdev.

    /usr/bin/python3 tests/bench/bench_capture.py [--duration 600] [--rate 893]
                                                  [--tsv] [--vm]

Starts rig/virtual/ina226_iiod.py (the INA226 libiio-protocol emulator) on
an ephemeral port and, at the same time and for the same duration, runs

  * sbrig-powercat (release build) on ip:127.0.0.1:PORT with -q: the
    capture path only (libsbrig's power.c), its counters read by this
    script; with --tsv its full TSV output instead (one printf'd line per
    sample, several times the capture path's CPU: the tool's presentation,
    not the capture), and
  * iio_readdev on the same source reading rate x duration samples of all
    five channels (binary, read by this script, which looks for gaps in its
    timestamps),

then prints for each: samples (and how many the nominal rate makes in
that time), gaps, missing samples, drops (powercat's queue overruns), host
CPU time (user + system, from wait4) and CPU per 1000 samples/s (ms of
CPU per second of capture, per kS/s), and the powercat / iio_readdev
ratio measured in this one run, on a line of its own:

    cpu ratio sbrig/iio_readdev: 1.05x
 The emulator never loses samples itself
(it generates them for the times they are asked for), so gaps here mean a
client fell behind or lost data; on the real ina2xx-adc the kernel drops
samples when late.

With --vm it then also measures (b): the real ina2xx-adc on i2c-stub in
the amd64 host-interface guest (tests/vm build_hostif), local: context, at
the fastest setting sbrig uses (2 x 140 us, averaging 4: 893 S/s),
sbrig-powercat -q and then iio_readdev (a local IIO buffer has one reader
at a time) for the same duration each, after a short warm-up run of each
(TCG translates shared library code on first use); CPU from the guest
shell's cutime + cstime (10 ms ticks), compared per sample delivered. The guest runs under TCG, so the driver's polling
thread is often late: the gaps it reports there are the kernel's drops.
"""

from __future__ import annotations

import argparse
import os
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.test_power import Emulator, build_powercat  # noqa: E402

SAMPLE = struct.Struct("<HHHHq")


def cpu_of(proc: subprocess.Popen, timeout: float) -> tuple[int, float]:
    """Wait for @proc with wait4; return (status, user + system CPU s)."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, ru.ru_utime + ru.ru_stime
        if time.monotonic() > deadline:
            proc.kill()
        time.sleep(0.05)


class PowercatReader(threading.Thread):
    def __init__(self, proc: subprocess.Popen) -> None:
        super().__init__(daemon=True)
        self.proc = proc
        self.samples = self.gap_lines = 0
        self.counters: dict[str, int] = {}
        self.rate_hz = 0.0

    def run(self) -> None:
        for line in self.proc.stdout:
            c = line[:1]
            if c == b"S":
                self.samples += 1
            elif c == b"G":
                self.gap_lines += 1
            elif line.startswith(b"# samples"):
                w = line.split()
                self.counters = {k.decode(): int(v) for k, v in zip(w[1::2], w[2::2])}
            elif line.startswith(b"# rate_hz"):
                self.rate_hz = float(line.split()[2])


class ReaddevReader(threading.Thread):
    def __init__(self, proc: subprocess.Popen, period_ns: int) -> None:
        super().__init__(daemon=True)
        self.proc = proc
        self.period_ns = period_ns
        self.samples = self.gaps = self.missing = 0

    def run(self) -> None:
        prev = None
        rest = b""
        while True:
            chunk = self.proc.stdout.read(65536)
            if not chunk:
                break
            data = rest + chunk
            n = len(data) // SAMPLE.size
            rest = data[n * SAMPLE.size:]
            for row in SAMPLE.iter_unpack(data[:n * SAMPLE.size]):
                ts = row[4]
                if prev is not None and 2 * (ts - prev) > 3 * self.period_ns:
                    self.gaps += 1
                    self.missing += round((ts - prev) / self.period_ns) - 1
                prev = ts
            self.samples += n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=float, default=600.0, help="seconds (default 600)")
    ap.add_argument("--rate", type=float, default=893, help="emulator rate (Hz)")
    ap.add_argument("--buffer", type=int, default=256, help="samples per buffer refill")
    ap.add_argument("--powercat", type=Path,
                    help="this sbrig-powercat binary instead of the release build "
                         "(A/B comparisons)")
    ap.add_argument("--tsv", action="store_true",
                    help="sbrig-powercat prints every sample (TSV) instead of -q")
    ap.add_argument("--vm", action="store_true",
                    help="also (b): the real ina2xx-adc in the amd64 guest (local:)")
    args = ap.parse_args()

    powercat = args.powercat or build_powercat("release")
    tmp = Path(os.environ.get("SBRIG_TMPDIR", "/tmp")) / f"bench_capture.{os.getpid()}"
    tmp.mkdir(parents=True, exist_ok=True)
    emu = Emulator(tmp, "--rate", str(args.rate))
    try:
        info = emu.ctl("get")
        rate = float(info.split("rate_hz=")[1].split()[0])
        # the emulator's exact period (rate_hz is rounded)
        period_ns = round(1e9 / rate)
        n_readdev = int(round(rate * args.duration))
        quiet = [] if args.tsv else ["-q"]
        pc = subprocess.Popen([str(powercat), *quiet, "-b", str(args.buffer), "-t",
                               str(args.duration), emu.uri],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        rd = subprocess.Popen(["iio_readdev", "-u", emu.uri, "-b", str(args.buffer),
                               "-s", str(n_readdev), "ina226"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        t0 = time.monotonic()
        pr = PowercatReader(pc)
        rr = ReaddevReader(rd, period_ns)
        pr.start()
        rr.start()
        pc_rc, pc_cpu = cpu_of(pc, args.duration + 60)
        rd_rc, rd_cpu = cpu_of(rd, args.duration + 60)
        wall = time.monotonic() - t0
        pr.join(30)
        rr.join(30)
        pc_err = pc.stderr.read().decode(errors="replace").strip()
        rd_err = rd.stderr.read().decode(errors="replace").strip()
    finally:
        emu.stop()

    if pr.rate_hz:
        period_ns = round(1e9 / pr.rate_hz)
    expected = rate * args.duration
    c = pr.counters
    ksps = rate / 1000.0
    # -q: the tool's counters (samples delivered); --tsv: the S lines
    pc_samples = pr.samples if args.tsv else c.get("samples", 0)
    rows = [
        ("sbrig-powercat" + (" (tsv)" if args.tsv else " -q"), pc_rc, pc_samples,
         c.get("gaps", -1), c.get("missing", -1), c.get("overruns", -1), pc_cpu),
        ("iio_readdev", rd_rc, rr.samples, rr.gaps, rr.missing, 0, rd_cpu),
    ]
    print(f"# bench_capture: emulator {emu.uri} at {rate:g} S/s (nominal "
          f"{1e9 / period_ns:.1f}), {args.duration:g} s, buffer {args.buffer} samples, "
          f"wall {wall:.1f} s")
    print("tool\texit\tsamples\texpected\tgaps\tmissing\tdrops\tcpu_s\t"
          "cpu_ms_per_s_per_kSps")
    for name, rc, n, gaps, missing, drops, cpu in rows:
        per = cpu * 1000.0 / args.duration / ksps
        print(f"{name}\t{rc}\t{n}\t{expected:.0f}\t{gaps}\t{missing}\t{drops}\t"
              f"{cpu:.3f}\t{per:.3f}")
    ratio = pc_cpu / rd_cpu if rd_cpu > 0 else float("inf")
    print(f"cpu ratio sbrig/iio_readdev: {ratio:.2f}x")
    ok = (pc_rc == 0 and rd_rc == 0 and c.get("gaps") == 0 and
          c.get("overruns") == 0 and rr.gaps == 0 and
          pc_samples >= 0.98 * expected)
    if pc_err:
        print(f"# sbrig-powercat stderr: {pc_err[-500:]}")
    if rd_rc and rd_err:
        print(f"# iio_readdev stderr: {rd_err[-500:]}")
    print("result: " + ("zero gaps and drops" if ok else "FAILED: gaps, drops or errors"))
    if args.vm:
        bench_vm(args.duration)
    return 0 if ok else 1


def bench_vm(duration: float) -> None:
    """(b): local: on the real ina2xx-adc in the amd64 guest."""
    from tests.test_host_interface import _setup_guest
    from tests.test_power import INA_REGS, parse
    from tests.vm.build import build_hostif
    from tests.vm.qemu import Vm

    vm = Vm("amd64", build_hostif("amd64"), name="bench-capture")
    try:
        vm.start()
        found = _setup_guest(vm)
        for reg, value in INA_REGS.items():
            swapped = ((value & 0xFF) << 8) | (value >> 8)
            vm.run_ok(f"i2cset -f -y {found['i2c_bus']} 0x40 {reg} {swapped:#06x} w")
        iio = found["iio_dir"]
        cpu = "; set -- $(cat /proc/$$/stat); echo cpu_ticks=$((${15} + ${16}))"
        # warm-up: under TCG a program's first run pays for translating the
        # code it shares with the other (libc, libiio): not its capture cost
        vm.run_ok("sbrig-powercat -r 893 -q -t 2 local: >/dev/null; "
                  "iio_readdev -s 7000 ina226 > /dev/null", timeout=120)
        out = vm.run_ok(f"sh -c 'sbrig-powercat -r 893 -q -t {duration:g} local:{cpu}'",
                        timeout=duration + 120)
        _, _, st, info = parse(out.splitlines())
        pc_cpu = int(out.split("cpu_ticks=")[1].split()[0]) / 100
        rate = float(info["rate_hz"])
        n = int(rate * duration)
        out2 = vm.run_ok(f"sh -c 'iio_readdev -s {n} ina226 > /tmp/rd.bin{cpu}'; "
                         f"wc -c < /tmp/rd.bin", timeout=duration * 4 + 120)
        rd_cpu = int(out2.split("cpu_ticks=")[1].split()[0]) / 100
        rd_samples = int(out2.split()[-1]) // SAMPLE.size
        print(f"# (b) local: real ina2xx-adc on i2c-stub, amd64 guest under TCG, "
              f"{rate:.1f} S/s nominal, {duration:g} s each")
        print("tool\tsamples\texpected\tgaps\tmissing\tdrops\tcpu_s\t"
              "cpu_ms_per_s_per_kSps")
        ksps = rate / 1000
        print(f"sbrig-powercat -q\t{st['samples']}\t{n}\t{st['gaps']}\t{st['missing']}\t"
              f"{st['overruns']}\t{pc_cpu:.2f}\t{pc_cpu * 1000 / duration / ksps:.2f}")
        print(f"iio_readdev\t{rd_samples}\t{n}\t-\t-\t-\t{rd_cpu:.2f}\t"
              f"{rd_cpu * 1000 / duration / ksps:.2f} (reads {n} samples: runs as long as that takes)")
        # the driver under TCG does not keep its nominal rate (more or fewer
        # samples than rate x duration), and iio_readdev reads a fixed count:
        # compare CPU per sample delivered
        if rd_cpu and rd_samples and st["samples"]:
            pc_us = pc_cpu * 1e6 / st["samples"]
            rd_us = rd_cpu * 1e6 / rd_samples
            print(f"# guest cpu per sample: sbrig-powercat {pc_us:.2f} us, "
                  f"iio_readdev {rd_us:.2f} us")
            print(f"cpu ratio sbrig/iio_readdev (guest, per sample): {pc_us / rd_us:.2f}x")
    finally:
        vm.shutdown()


if __name__ == "__main__":
    sys.exit(main())
