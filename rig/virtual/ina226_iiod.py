#!/usr/bin/python3
"""ina226_iiod.py - an INA226 behind a user-space server of the libiio protocol.

Speaks the text protocol that iiod (libiio 0.x) serves on TCP port 30431,
so that unmodified ``iio_info -u ip:127.0.0.1:PORT``, ``iio_readdev`` and
libsbrig's ``ip:`` contexts talk to it as to a real rig host. It presents
one device, ``iio:device0`` named ``ina226``, with exactly the channels,
attributes and scales that libiio 0.24 shows for Linux 6.1's ina2xx-adc
(the XML below was taken from the real driver on i2c-stub):

    voltage0 (shunt, 2.5 uV LSB)  voltage1 (bus, 1.25 mV LSB)
    power2 (25 x current LSB)     current3 (2.5 uV / shunt LSB)
    timestamp (s64, ns)           pseudo-channels shunt/resistor (ohm),
    sampling/frequency, oversampling/ratio, allow/async_readout;
    device attributes current_timestamp_clock, integration_time_available

Raw values are u16 as the driver declares them (a negative shunt voltage
or current wraps, as it does on the real driver). The sampling frequency
follows the chip: 1e6 / ((bus + shunt conversion time) x averaging),
rounded; writing in_sampling_frequency is refused with EINVAL as on the
real driver; write the integration times and the oversampling ratio.

Samples are generated in real time, as the chip and the driver make
them (class Kthread): the chip converts on its own grid, each conversion
averaging the model over its shunt and bus conversion windows (a short
spike counts by its charge, or not at all in a bus window: model.mean()
if the model has it, else WINDOW_POINTS points per window); the
registers are quantised as the chip does (power = current x bus / 20000
from the two registers); ina2xx-adc's kthread polls the ready flag,
stamps, reads the enabled registers over an I2C bus of --i2c-hz (one
SMBus word read each) and sleeps usleep_range(d, 1.5 d), so stamps jitter
by up to a period and the driver loses conversions above
ceiling_hz() (1667 samples/s at 400 kHz; none lost up to 893). READBUF
answers each kernel buffer once its last sample has been read. Timestamps follow
the device attribute current_timestamp_clock like the kernel's (default
``realtime``; ``monotonic`` = this host's CLOCK_MONOTONIC).

Protocol (one command per line, ``\\r\\n`` ends; every answer starts with
a decimal integer line, negative = -errno):

    VERSION                  -> "0.24.ina226e"
    PRINT                    -> len, XML, "\\n"
    TIMEOUT ms               -> 0        (any one word: kept by none)
    OPEN dev n MASK [CYCLIC] -> 0        (MASK: one %08x word; CYCLIC: -EPERM)
                                n as iiod takes it (atol() into an
                                unsigned int, modulo 2^32), the kernel
                                buffer n x BUFFERS_COUNT samples as
                                Linux bounds it (open_error()): -EINVAL
                                for 0, -ERANGE past UINT_MAX samples,
                                -ENOMEM past a 4 MiB kfifo (65536
                                samples of all channels)
    READBUF dev len          -> per kernel buffer of n samples: its length,
                                the MASK line (first only), its bytes,
                                each sent once read; "0" if len is less
                                than a sample (or no number: atol() 0).
                                len is iiod's unsigned
                                int (modulo 2^32, as atol() gives it):
                                no error for a huge one, and never more
                                than one kernel buffer in memory
    CLOSE dev                -> 0        (-ENXIO: none open)
    READ dev [INPUT ch|DEBUG|BUFFER] attr        -> len, value NUL, "\\n"
    READ dev [INPUT ch|DEBUG|BUFFER]             -> every attribute: a
                                big-endian s32 length (or -errno) and the
                                value padded to 4 bytes, each
    WRITE dev [INPUT ch|DEBUG|BUFFER] attr len   (then len bytes) -> len
                                the payload read in 64 KiB pieces, its
                                first 4096 bytes (a sysfs page) kept;
                                len past 1 GiB or negative (iiod's
                                malloc() fails): -ENOMEM, none read;
                                len 0 (or no number): -EIO, -EACCES
                                for a file that cannot be written
    GETTRIG dev, SETTRIG dev [trig]              -> -ENOENT (no trigger)
    SET dev BUFFERS_COUNT n  -> 0        (n >= 1 modulo 2^32, default 4: the
                                next buffer opened is n of OPEN's; while
                                one is open: 0, and nothing changes)
    EXIT

A command line longer than 4096 bytes is skipped whole with -EINVAL.
Answers and errors are those of Debian's iiod 0.24 serving the real
driver (tests/test_iiod_remote.py compares them request by request):
-ENODEV a device, -ENXIO a channel, -ENOENT an attribute the device
lacks; -EACCES a write to a read-only or missing file; -EINVAL what the
driver refuses.

The power model is pluggable: anything with ``sample(t_ns) -> (current_uA,
bus_uV)`` (see ConstantModel). The command line uses a ConstantModel set
at run time through the control socket (``--control PATH``, a Unix stream
socket, one command per line, each answered by ``ok ...`` or ``error
...``):

    current_uA N     set the supply current
    bus_uV N         set the bus voltage
    drop N           the kthread of every open buffer sleeps N periods
                     longer: N conversions are lost (a gap)
    hold 1|0         1: deliver no more buffers until "hold 0" (a hung
                     server: the samples are not lost, only late)
    get              "ok current_uA=N bus_uV=N rate_hz=N buffers=N"

Ground truth (``--truth FILE``, or ``Ina226(model, truth=TruthRecorder(path))``):
what the emulator really emitted, as JSON lines, written as it goes (each
line flushed; a killed emulator leaves every finished line valid). Every
open buffer is a *stream*; its samples are cut into *intervals*, maximal
runs of consecutive samples with the same model state, current, bus
voltage and registers. Times are host CLOCK_MONOTONIC ns (sample
timestamps on another current_timestamp_clock are shifted by that
clock's offset, measured when the buffer opened). Records:

    {"type": "header", "format": "ina226-truth", "version": 1, ...}
    {"type": "open", "stream": N, "t_ns": T, "clock": "monotonic",
     "clock_offset_ns": 0, "period_ns": P, "power_lsb_uW": 625, ...}
    {"type": "interval", "stream": N, "state": "suspended",
     "start_ns": first sample, "last_ns": last sample,
     "end_ns": the next interval's first sample (or last_ns before a drop
               or at the end), "samples": n,
     "current_uA": model, "bus_uV": model, "power_uW": model (I x V),
     "sample_power_uW": what the power register says (= sbrig's power_uW),
     "sample_iv_uW": |current| x bus as sbrig converts them (what its
                     analysis integrates),
     "energy_uJ": trapezoids of sample_iv_uW over the emitted samples from
                  start_ns to end_ns}
    {"type": "drop", "stream": N, "t_ns": last sample, "next_t_ns": first
     after, "missing": n, "cause": "drop" (the control socket) or "late"
     (the simulated driver)}               (conversions lost: not integrated)
    {"type": "close", "stream": N, "t_ns": T, "samples": n, "energy_uJ": total}

Consecutive intervals of a stream tile its time, so their energies add up
to the trapezoidal integral of everything it emitted, gaps left out.
read_truth() and truth_energy() (total and per state over a host time
window, interpolating where the window cuts an interval) read it back.

Run: ``ina226_iiod.py --port 0 --print-port --control /tmp/ina.sock``
"""

from __future__ import annotations

import argparse
import decimal
import errno
import json
import math
import os
import random
import re
import signal
import socket
import socketserver
import struct
import sys
import threading
import time

DEVICE_ID = "iio:device0"
DEVICE_NAME = "ina226"

# INA226 constants as Linux's ina2xx-adc uses them.
SHUNT_LSB_NV = 2500          # 2.5 uV
BUS_LSB_UV = 1250            # 1.25 mV
POWER_LSB_FACTOR = 25
INT_TIMES_US = [140, 204, 332, 588, 1100, 2116, 4156, 8244]
AVERAGES = [1, 4, 16, 64, 128, 256, 512, 1024]
# The driver writes calibration 2048: current register = shunt register
# x 2048 / 2048; the chip's power register = current x bus / 20000.
CALIBRATION = 2048
POWER_DIVISOR = 20000

# The bus and ina2xx-adc's capture kthread (drivers/iio/adc/ina2xx-adc.c,
# Linux 6.1). An SMBus word read is 48 bit times (start, address + W,
# register, repeated start, address + R, two data bytes, each byte with
# its acknowledge bit, stop): 120 us at 400 kHz. The kthread reads the
# ready flag (MASK_ENABLE) and each enabled register, one word each: five
# reads for all four channels, 600 us at 400 kHz, so at most
# I2C_HZ / (5 x 48) = 1667 samples per second whatever the chip is set to.
I2C_HZ = 400000
SMBUS_WORD_BITS = 48
DRIVER_EARLY_US = 200        # the kthread wakes this much before a period
WINDOW_POINTS = 2            # points per conversion window (a model without mean())


def smbus_word_ns(i2c_hz: int) -> int:
    """Duration of one SMBus word read on an @i2c_hz bus."""
    return round(SMBUS_WORD_BITS * 1e9 / i2c_hz)


def ceiling_hz(i2c_hz: int = I2C_HZ, registers: int = 4) -> float:
    """Most samples per second ina2xx-adc reads over an @i2c_hz bus: the
    ready flag and @registers registers, one SMBus word read each."""
    return i2c_hz / ((1 + registers) * SMBUS_WORD_BITS)

XML_DTD = (
    '<?xml version="1.0" encoding="utf-8"?><!DOCTYPE context [<!ELEMENT context '
    '(device | context-attribute)*><!ELEMENT context-attribute EMPTY><!ELEMENT '
    'device (channel | attribute | debug-attribute | buffer-attribute)*><!ELEMENT '
    'channel (scan-element?, attribute*)><!ELEMENT attribute EMPTY><!ELEMENT '
    'scan-element EMPTY><!ELEMENT debug-attribute EMPTY><!ELEMENT buffer-attribute '
    'EMPTY><!ATTLIST context name CDATA #REQUIRED version-major CDATA #REQUIRED '
    'version-minor CDATA #REQUIRED version-git CDATA #REQUIRED description CDATA '
    '#IMPLIED><!ATTLIST context-attribute name CDATA #REQUIRED value CDATA '
    '#REQUIRED><!ATTLIST device id CDATA #REQUIRED name CDATA #IMPLIED label CDATA '
    '#IMPLIED><!ATTLIST channel id CDATA #REQUIRED type (input|output) #REQUIRED '
    'name CDATA #IMPLIED><!ATTLIST scan-element index CDATA #REQUIRED format CDATA '
    '#REQUIRED scale CDATA #IMPLIED><!ATTLIST attribute name CDATA #REQUIRED '
    'filename CDATA #IMPLIED><!ATTLIST debug-attribute name CDATA #REQUIRED>'
    '<!ATTLIST buffer-attribute name CDATA #REQUIRED>]>')

# (channel id, scan index, storage bytes, signed, attributes)
SCAN_CHANNELS = [
    ("voltage0", 0, 2, False, ["integration_time", "raw", "scale"]),
    ("voltage1", 1, 2, False, ["integration_time", "raw", "scale"]),
    ("power2", 2, 2, False, ["raw", "scale"]),
    ("current3", 3, 2, False, ["raw", "scale"]),
    ("timestamp", 4, 8, True, []),
]
# libiio turns the shared in_* files into these pseudo-channels.
PSEUDO_CHANNELS = [             # in the order libiio lists them for the driver
    ("shunt", "resistor"),
    ("oversampling", "ratio"),
    ("sampling", "frequency"),
    ("allow", "async_readout"),
]
DEVICE_ATTRS = ["current_timestamp_clock", "integration_time_available"]
# every channel's attributes, in the order libiio lists them
CHANNEL_ATTRS = {**{c[0]: c[4] for c in SCAN_CHANNELS},
                 **{cid: [a] for cid, a in PSEUDO_CHANNELS}}
BUFFER_ATTRS = ["data_available", "direction"]
DEBUG_ATTRS = ["direct_reg_access"]
# INA226 registers as ina2xx-adc's regmap serves them through
# direct_reg_access (0 configuration ... 7 alert limit)
REG_CONFIG, REG_CALIBRATION, REG_MASK_ENABLE, MAX_REGISTER = 0, 5, 6, 7
CVRF = 1 << 3                # mask/enable: conversion ready


class ConstantModel:
    """Supply current and bus voltage that stay put until set."""

    def __init__(self, current_uA: int = 100000, bus_uV: int = 5000000) -> None:
        self.current_uA = current_uA
        self.bus_uV = bus_uV

    def sample(self, t_ns: int) -> tuple[int, int]:
        return self.current_uA, self.bus_uV

    def sample_state(self, t_ns: int) -> tuple[int, int, str]:
        """sample() and the model's state, for the ground truth."""
        return self.current_uA, self.bus_uV, "constant"

    def mean(self, t0_ns: int, t1_ns: int) -> tuple[float, float]:
        """Mean current and bus voltage over [t0, t1] (the chip's windows)."""
        return float(self.current_uA), float(self.bus_uV)

    def set(self, name: str, value: int) -> None:
        if name not in ("current_uA", "bus_uV"):
            raise KeyError(name)
        setattr(self, name, value)


class TruthStream:
    """The ground truth of one open buffer (see the module doc): called
    with every emitted sample, in order, under the chip's lock."""

    def __init__(self, rec: "TruthRecorder", sid: int, offset_ns: int,
                 lsb_uW: decimal.Decimal, cur_lsb_uA: decimal.Decimal) -> None:
        self.rec, self.sid, self.offset = rec, sid, offset_ns
        self.lsb = lsb_uW
        self.lsb_int = int(lsb_uW) if lsb_uW == int(lsb_uW) else None
        self.cur_lsb = cur_lsb_uA
        self.cur = None           # the open interval (a dict) or None
        self.key = None
        self.prev_t = self.prev_p = None
        self.pending_drop = self.pending_req = 0
        self.samples = 0
        self.energy = 0.0         # uW x ns, everything closed so far
        self.closed = False

    def power_uW(self, raw: int) -> int:
        """The power register as sbrig converts it (exact decimal scale)."""
        if self.lsb_int is not None:
            return raw * self.lsb_int
        return int((raw * self.lsb).quantize(decimal.Decimal(1),
                                             rounding=decimal.ROUND_HALF_UP))

    def iv_uW(self, raw_current: int, raw_bus: int) -> float:
        """|current| x bus as sbrig converts and the analysis integrates
        them (report-format.md, "Integration")."""
        c = raw_current - 0x10000 if raw_current & 0x8000 else raw_current
        ua = int((abs(c) * self.cur_lsb).quantize(decimal.Decimal(1),
                                                   rounding=decimal.ROUND_HALF_UP))
        return ua * raw_bus * BUS_LSB_UV / 1e6

    def lost(self, n: int, dropped: int) -> None:
        """@n conversions nobody read before the next sample; @dropped of
        them asked for by the control socket (the rest: the simulated
        driver was late)."""
        self.pending_drop += n
        self.pending_req += dropped

    def sample(self, t_chip: int, state: str, current_uA: int, bus_uV: int,
               raws: list[int]) -> None:
        t = t_chip - self.offset
        raw_power = raws[2]
        p = self.iv_uW(raws[3], raws[1])
        key = (state, current_uA, bus_uV, tuple(raws))
        self.samples += 1
        if self.cur is not None:
            if self.pending_drop:
                self.rec.write({"type": "drop", "stream": self.sid, "t_ns": self.prev_t,
                                "next_t_ns": t, "missing": self.pending_drop,
                                "cause": "drop" if self.pending_req else "late"})
                self.pending_drop = self.pending_req = 0
                self._finish(self.prev_t)
            elif key != self.key:
                self.cur["_e"] += (self.prev_p + p) / 2 * (t - self.prev_t)
                self._finish(t)
            else:
                self.cur["_e"] += p * (t - self.prev_t)
                self.cur["last_ns"] = t
                self.cur["samples"] += 1
        self.pending_drop = self.pending_req = 0
        if self.cur is None:
            self.key = key
            self.cur = {"type": "interval", "stream": self.sid, "state": state,
                        "start_ns": t, "last_ns": t, "end_ns": t, "samples": 1,
                        "current_uA": current_uA, "bus_uV": bus_uV,
                        "power_uW": current_uA * bus_uV / 1e6,
                        "sample_power_uW": self.power_uW(raw_power),
                        "sample_iv_uW": p, "energy_uJ": 0.0, "_e": 0.0}
        self.prev_t, self.prev_p = t, p

    def _finish(self, end_ns: int) -> None:
        c = self.cur
        e = c.pop("_e")
        c["end_ns"] = end_ns
        c["energy_uJ"] = e / 1e9
        self.energy += e
        self.rec.write(c)
        self.cur = None

    def close(self, t_ns: int) -> None:
        if self.closed:
            return
        self.closed = True
        if self.cur is not None:
            self._finish(self.prev_t)
        self.rec.write({"type": "close", "stream": self.sid, "t_ns": t_ns,
                        "samples": self.samples, "energy_uJ": self.energy / 1e9})


class TruthRecorder:
    """Writes the emulator's ground truth to @path (JSON lines)."""

    def __init__(self, path) -> None:
        self.path = path
        self.lock = threading.Lock()      # protects f, next_id and streams
        self.f = open(path, "w", encoding="utf-8")
        self.next_id = 1
        self.streams: list[TruthStream] = []
        self.write({"type": "header", "format": "ina226-truth", "version": 1,
                    "pid": os.getpid(),
                    "t_ns": time.clock_gettime_ns(time.CLOCK_MONOTONIC)})

    def write(self, rec: dict) -> None:
        with self.lock:
            if self.f.closed:
                return
            self.f.write(json.dumps(rec) + "\n")
            self.f.flush()

    def open_stream(self, chip: "Ina226", period_ns: int) -> TruthStream:
        if chip.clock == "monotonic":
            offset = 0
        else:
            offset = chip.now_ns() - time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        lsb = decimal.Decimal(chip.scale("power2")) * 1000
        cur_lsb = decimal.Decimal(chip.scale("current3")) * 1000
        with self.lock:
            sid = self.next_id
            self.next_id += 1
        ts = TruthStream(self, sid, offset, lsb, cur_lsb)
        with self.lock:
            self.streams.append(ts)
        self.write({"type": "open", "stream": sid,
                    "t_ns": time.clock_gettime_ns(time.CLOCK_MONOTONIC),
                    "clock": chip.clock, "clock_offset_ns": offset,
                    "period_ns": period_ns, "power_lsb_uW": float(lsb),
                    "shunt_uohm": chip.shunt_uohm})
        return ts

    def close(self) -> None:
        """Close every stream still open (their last intervals) and the file."""
        now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        with self.lock:
            streams = list(self.streams)
        for ts in streams:
            ts.close(now)
        with self.lock:
            self.f.close()


def read_truth(path) -> list[dict]:
    """The records of a truth file (a cut last line is ignored)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.endswith("\n"):
                out.append(json.loads(line))
    return out


def truth_energy(records, t0: int, t1: int, stream: int | None = None) -> dict:
    """Energy the emulator emitted between host times @t0 and @t1 (uJ),
    in total and per state, from its truth records: {"total_uJ",
    "by_state": {state: uJ}, "ns_by_state", "stream"}. Within an interval
    the samples are flat (sample_iv_uW) up to last_ns, then linear to
    the next interval's first sample: the window's cuts interpolate there.
    @stream: which stream (default: the one that covers the window)."""
    ivs = [r for r in records if r["type"] == "interval"]
    if stream is None:
        cands = {r["stream"] for r in ivs if r["start_ns"] < t1 and r["end_ns"] > t0}
        if len(cands) != 1:
            raise ValueError(f"{len(cands)} streams overlap the window: pass stream=")
        stream = cands.pop()
    ivs = sorted((r for r in ivs if r["stream"] == stream), key=lambda r: r["start_ns"])
    by_state: dict[str, float] = {}
    ns_by_state: dict[str, int] = {}
    total = 0.0
    for i, r in enumerate(ivs):
        p, a, last, b = r["sample_iv_uW"], r["start_ns"], r["last_ns"], r["end_ns"]
        pn = ivs[i + 1]["sample_iv_uW"] if b > last and i + 1 < len(ivs) else p
        e = 0.0
        x0, x1 = max(a, t0), min(last, t1)           # the flat part
        if x1 > x0:
            e += p * (x1 - x0)
        x0, x1 = max(last, t0), min(b, t1)           # the ramp to the next one
        if x1 > x0:
            def f(x):
                return p + (pn - p) * (x - last) / (b - last)
            e += (f(x0) + f(x1)) / 2 * (x1 - x0)
        d = max(0, min(b, t1) - max(a, t0))
        total += e
        by_state[r["state"]] = by_state.get(r["state"], 0.0) + e / 1e9
        ns_by_state[r["state"]] = ns_by_state.get(r["state"], 0) + d
    return {"total_uJ": total / 1e9, "by_state": by_state, "ns_by_state": ns_by_state,
            "stream": stream}


def _xml_escape(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


class IioError(Exception):
    def __init__(self, err: int) -> None:
        super().__init__(os.strerror(err))
        self.err = err


def find_closest(x: float, table: list[int]) -> int:
    """The kernel's find_closest() (util_macros.h): the index of the entry
    of the ascending @table nearest to @x, the lower one on a tie."""
    for i in range(len(table) - 1):
        if x <= (table[i] + table[i + 1]) / 2:
            return i
    return len(table) - 1


def _parse_fixpoint(text: str) -> float:
    try:
        v = float(text.strip())
    except ValueError:
        raise IioError(errno.EINVAL) from None
    if not math.isfinite(v):
        raise IioError(errno.EINVAL)
    return v


class Ina226:
    """Register-level state of one INA226 as ina2xx-adc shows it."""

    def __init__(self, model, rate_hz: float | None = None,
                 truth: TruthRecorder | None = None, i2c_hz: int = I2C_HZ,
                 seed: int = 1) -> None:
        self.model = model
        self.truth = truth                # ground truth of what is emitted, or None
        self.i2c_hz = i2c_hz              # the bus the driver reads the chip over
        self.seed = seed                  # the kthread's sleep jitter (per buffer)
        self.late_ns = 0                  # the kthread's scheduling latency (max)
        self.slow = 0.0                   # a buffer is delivered this share later
        self.lock = threading.Lock()      # protects every field below
        self.shunt_uohm = 10000
        self.int_time_us = [1100, 1100]   # shunt, bus (driver default)
        self.average = 4
        self.clock = "realtime"
        self.allow_async = 0
        self.debug_reg = 0                # direct_reg_access's selected register
        self.alert_limit = 0              # register 7 (written through it only)
        self.hold = False                 # "hold 1": no buffer delivered
        self.buffers_count = NB_BLOCKS    # SET BUFFERS_COUNT: kernel buffer / client's
        self.streams: set[Stream] = set()
        self.opened = 0                   # buffers opened so far
        if rate_hz:
            self.pick_rate(rate_hz)

    # --- timing -------------------------------------------------------
    def pick_rate(self, rate_hz: float) -> None:
        """Choose the conversion time and averaging nearest @rate_hz."""
        best = None
        for avg in AVERAGES:
            for ct in INT_TIMES_US:
                f = 1e6 / (2 * ct * avg)
                d = abs(math.log(f / rate_hz))
                if best is None or d < best[0]:
                    best = (d, ct, avg)
        _, ct, avg = best
        self.int_time_us = [ct, ct]
        self.average = avg

    def period_ns(self) -> int:
        return (self.int_time_us[0] + self.int_time_us[1]) * self.average * 1000

    def rate_hz(self) -> int:
        return round(1e6 / ((self.int_time_us[0] + self.int_time_us[1]) * self.average))

    def now_ns(self) -> int:
        if self.clock == "monotonic":
            return time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        if self.clock == "boottime":
            return time.clock_gettime_ns(time.CLOCK_BOOTTIME)
        return time.clock_gettime_ns(time.CLOCK_REALTIME)

    # --- conversions (what the chip's registers would hold) ----------
    def current_lsb_uA(self) -> float:
        return SHUNT_LSB_NV * 1000.0 / self.shunt_uohm

    def sample(self, t_ns: int) -> tuple[int, int, str]:
        """(current_uA, bus_uV, state) of the model at @t_ns."""
        if hasattr(self.model, "sample_state"):
            return self.model.sample_state(t_ns)
        current_uA, bus_uV = self.model.sample(t_ns)
        return current_uA, bus_uV, "model"

    def _mean(self, windows: list[tuple[int, int]]) -> tuple[float, float]:
        """The model's mean (current, bus) over @windows (equal lengths)."""
        si = sv = 0.0
        mean = getattr(self.model, "mean", None)
        for a, b in windows:
            if mean:
                i, v = mean(a, b)
            else:          # midpoints of WINDOW_POINTS equal parts
                i = v = 0.0
                for j in range(WINDOW_POINTS):
                    ci, cv = self.model.sample(a + (2 * j + 1) * (b - a) // (2 * WINDOW_POINTS))[:2]
                    i += ci / WINDOW_POINTS
                    v += cv / WINDOW_POINTS
            si += i
            sv += v
        return si / len(windows), sv / len(windows)

    def conversion(self, end_ns: int) -> tuple[float, float, str]:
        """What the conversion that ends at @end_ns measured: the mean
        current over its shunt windows, the mean bus voltage over its bus
        windows, and the model's state at its end. In continuous shunt and
        bus mode the chip converts shunt, then bus, @average times, each
        integrating over its conversion time (a spike counts by its charge
        in a shunt window, not at all in a bus window)."""
        cs, cb = self.int_time_us[0] * 1000, self.int_time_us[1] * 1000
        start = end_ns - (cs + cb) * self.average
        shunt_w, bus_w = [], []
        for j in range(self.average):
            a = start + j * (cs + cb)
            shunt_w.append((a, a + cs))
            bus_w.append((a + cs, a + cs + cb))
        cur = self._mean(shunt_w)[0]
        bus = self._mean(bus_w)[1]
        return cur, bus, self.sample(end_ns)[2]

    def raws(self, t_ns: int) -> tuple[int, int, int, int]:
        """The registers of the latest conversion before @t_ns (a direct
        read of in_*_raw: the chip is free-running, its grid phase 0)."""
        end = t_ns - t_ns % self.period_ns()
        return self.raws_of(*self.conversion(end)[:2])

    def raws_of(self, current_uA: float, bus_uV: float) -> tuple[int, int, int, int]:
        """Register values (shunt, bus, power, current) for a conversion's
        mean current and bus voltage, computed as the chip does: the shunt
        and bus registers quantise the measured voltages, the current
        register is shunt x CALIBRATION / 2048, the power register
        |current| x bus / 20000 from those two registers (truncated), so
        its LSB is 25 current LSB."""
        shunt_nV = current_uA * self.shunt_uohm / 1000.0
        shunt = max(-32768, min(32767, round(shunt_nV / SHUNT_LSB_NV)))
        bus = max(0, min(0x7FFF, round(bus_uV / BUS_LSB_UV)))
        cur = max(-32768, min(32767, shunt * CALIBRATION // 2048))
        pw = min(0xFFFF, abs(cur) * bus // POWER_DIVISOR)
        return shunt & 0xFFFF, bus, pw, cur & 0xFFFF

    # --- attributes ----------------------------------------------------
    def scale(self, chan: str) -> str:
        if chan == "voltage0":
            v = SHUNT_LSB_NV / 1e6
        elif chan == "voltage1":
            v = BUS_LSB_UV / 1e3
        elif chan == "current3":
            v = SHUNT_LSB_NV / self.shunt_uohm
        else:
            v = POWER_LSB_FACTOR * SHUNT_LSB_NV / self.shunt_uohm
        return f"{v:.9f}"

    def read(self, chan: str | None, attr: str) -> str:
        with self.lock:
            if chan is None:
                if attr == "current_timestamp_clock":
                    # the kernel's file is "realtime\n\0" (sizeof the
                    # string): libiio's local backend replaces only its
                    # last byte, the newline stays in the value
                    return self.clock + "\n"
                if attr == "integration_time_available":
                    return " ".join(f"{t / 1e6:.6f}" for t in INT_TIMES_US)
                raise IioError(errno.ENOENT)
            if chan in ("voltage0", "voltage1", "power2", "current3"):
                if attr == "raw":
                    idx = ["voltage0", "voltage1", "power2", "current3"].index(chan)
                    return str(self.raws(self.now_ns())[idx])
                if attr == "scale":
                    return self.scale(chan)
                if attr == "integration_time" and chan.startswith("voltage"):
                    return f"{self.int_time_us[int(chan[-1])] / 1e6:.6f}"
            key = (chan, attr)
            if key == ("shunt", "resistor"):
                return f"{self.shunt_uohm / 1e6:.9f}"
            if key == ("sampling", "frequency"):
                return str(self.rate_hz())
            if key == ("oversampling", "ratio"):
                return str(self.average)
            if key == ("allow", "async_readout"):
                return str(self.allow_async)
            raise IioError(errno.ENOENT)

    def config_reg(self) -> int:
        """The configuration register the driver programmed: averaging,
        bus and shunt conversion times, continuous shunt and bus mode."""
        return (0x4000 | AVERAGES.index(self.average) << 9 |
                INT_TIMES_US.index(self.int_time_us[1]) << 6 |
                INT_TIMES_US.index(self.int_time_us[0]) << 3 | 7)

    def register(self, reg: int) -> int:
        if reg > MAX_REGISTER:
            raise IioError(errno.EIO)      # regmap: no such register
        if reg == REG_CONFIG:
            return self.config_reg()
        if 1 <= reg <= 4:
            return self.raws(self.now_ns())[reg - 1]
        if reg == REG_CALIBRATION:
            return CALIBRATION
        if reg == REG_MASK_ENABLE:
            return CVRF
        return self.alert_limit

    def debug_read(self, attr: str) -> str:
        """direct_reg_access: the selected register, as the IIO core
        prints it ("0x%X")."""
        if attr != "direct_reg_access":
            raise IioError(errno.ENOENT)
        with self.lock:
            return f"0x{self.register(self.debug_reg):X}"

    def debug_write(self, attr: str, value: str) -> None:
        """direct_reg_access: "REG" selects a register (any number: a
        register the chip lacks fails at the read, EIO), "REG VAL" writes
        one (the IIO core's sscanf("%i %i")). Only the alert limit (7) is
        written; the registers the model owns (0-6) refuse a write (EPERM)
        rather than silently disagree with what the emulator emits."""
        if attr != "direct_reg_access":
            raise IioError(errno.EACCES)
        nums = []
        for w in value.split()[:2]:
            try:
                nums.append(int(w, 0))
            except ValueError:
                break
        if not nums:
            raise IioError(errno.EINVAL)
        reg = nums[0] & 0xFFFFFFFF
        with self.lock:
            if len(nums) == 2:
                if reg > MAX_REGISTER:
                    raise IioError(errno.EIO)
                if reg != MAX_REGISTER:
                    raise IioError(errno.EPERM)
                self.alert_limit = nums[1] & 0xFFFF
            self.debug_reg = reg

    @staticmethod
    def writable(chan: str | None, attr: str) -> bool:
        """Whether the file of @attr (of channel @chan, DEBUG or BUFFER)
        can be opened for writing, as write() takes it."""
        if chan == "DEBUG":
            return attr == "direct_reg_access"
        if chan == "BUFFER":
            return False
        if chan is None:
            return attr == "current_timestamp_clock"
        if attr in ("raw", "scale"):
            return chan in ("voltage0", "voltage1", "power2", "current3")
        if attr == "integration_time":
            return chan in ("voltage0", "voltage1")
        return (chan, attr) in (("oversampling", "ratio"), ("shunt", "resistor"),
                                ("allow", "async_readout"), ("sampling", "frequency"))

    def write(self, chan: str | None, attr: str, value: str) -> None:
        with self.lock:
            # what the driver refuses while its buffer is enabled (the
            # shunt resistor it takes: no claim of direct mode there)
            timing = (attr == "integration_time" or
                      (chan, attr) in (("oversampling", "ratio"),
                                       ("sampling", "frequency")) or
                      attr == "current_timestamp_clock")
            if timing and self.streams:
                raise IioError(errno.EBUSY)
            if chan is None and attr == "current_timestamp_clock":
                v = value.strip()
                if v not in ("realtime", "monotonic", "monotonic_raw",
                             "realtime_coarse", "monotonic_coarse",
                             "boottime", "tai"):
                    raise IioError(errno.EINVAL)
                self.clock = v
            elif attr == "integration_time" and chan in ("voltage0", "voltage1"):
                # ina226_set_int_time_vbus/vshunt: seconds below 1, 140 us
                # to 8244 us, the nearest conversion time taken
                us = round(_parse_fixpoint(value) * 1e6)
                if not INT_TIMES_US[0] <= us <= INT_TIMES_US[-1]:
                    raise IioError(errno.EINVAL)
                self.int_time_us[int(chan[-1])] = INT_TIMES_US[find_closest(us, INT_TIMES_US)]
            elif (chan, attr) == ("oversampling", "ratio"):
                # ina226_set_average: 1 to 1024, the nearest averaging taken
                n = int(_parse_fixpoint(value))
                if not AVERAGES[0] <= n <= AVERAGES[-1]:
                    raise IioError(errno.EINVAL)
                self.average = AVERAGES[find_closest(n, AVERAGES)]
            elif (chan, attr) == ("shunt", "resistor"):
                uohm = round(_parse_fixpoint(value) * 1e6)
                if uohm <= 0 or uohm > 0x7FFFFFFF:
                    raise IioError(errno.EINVAL)
                self.shunt_uohm = uohm
            elif (chan, attr) == ("allow", "async_readout"):
                self.allow_async = 1 if round(_parse_fixpoint(value)) else 0
            elif (chan, attr) == ("sampling", "frequency"):
                # ina2xx-adc: the rate follows conversion times x averaging
                raise IioError(errno.EINVAL)
            elif chan is not None and attr in ("raw", "scale"):
                # the files are writable, ina2xx_write_raw() refuses them
                raise IioError(errno.EINVAL)
            else:
                # a read-only file, or none: libiio's local backend cannot
                # open it for writing in sysfs
                raise IioError(errno.EACCES)

    def xml(self) -> str:
        parts = [XML_DTD,
                 '<context name="local" version-major="0" version-minor="24" '
                 'version-git="v0.24" description="sbrig ina226_iiod.py: '
                 'emulated Linux ina2xx-adc" >',
                 # iiod serves its local: context: these two come first
                 '<context-attribute name="local,kernel" value="'
                 f'{_xml_escape(os.uname().release)}" />',
                 '<context-attribute name="uri" value="local:" />',
                 '<context-attribute name="sbrig,emulator" value="ina226_iiod" />',
                 f'<device id="{DEVICE_ID}" name="{DEVICE_NAME}" >']
        for cid, idx, size, signed, attrs in SCAN_CHANNELS:
            fmt = f"le:{'S' if signed else 'U'}{size * 8}/{size * 8}&gt;&gt;0"
            scale = "" if cid == "timestamp" else f' scale="{float(self.scale(cid)):f}"'
            parts.append(f'<channel id="{cid}" type="input" >'
                         f'<scan-element index="{idx}" format="{fmt}"{scale} />')
            for a in attrs:
                parts.append(f'<attribute name="{a}" filename="in_{cid}_{a}" />')
            parts.append("</channel>")
        for cid, a in PSEUDO_CHANNELS:
            parts.append(f'<channel id="{cid}" type="input" ><attribute name="{a}" '
                         f'filename="in_{cid}_{a}" /></channel>')
        parts += [f'<attribute name="{a}" />' for a in DEVICE_ATTRS]
        parts += [f'<buffer-attribute name="{a}" />' for a in BUFFER_ATTRS]
        parts += [f'<debug-attribute name="{a}" />' for a in DEBUG_ATTRS]
        parts.append("</device></context>")
        return "".join(parts)


class Kthread:
    """ina2xx-adc's capture kthread (Linux 6.1), simulated in time.

    The chip converts on its own grid: conversion k ends at
    ``grid0 + k x period``. The thread, as ina2xx_capture_thread() does:
    reads MASK_ENABLE until the conversion-ready flag is set (each read
    clears the flag and takes one SMBus word read; while it is clear the
    reference time ``next`` is reset to now), stamps the sample
    (iio_get_time_ns() right after the flag's read), reads the enabled
    registers one word read each (each read returns the register of the
    latest conversion then: at fast settings one sample's registers come
    from different conversions), advances ``next`` by the period less
    200 us until it is in the future, and sleeps usleep_range(d, 1.5 d),
    woken anywhere in that range (uniform, from a seeded generator). With
    ``allow_async_readout`` it does not poll the flag (and does not take
    the 200 us off). A conversion ended while the thread was late is lost:
    nobody reads it. ``drop`` conversions after the next sample's are
    lost: the thread wakes that many periods late, after the last of
    them (the control socket's ``drop``); ``late_ns`` adds up to that much
    to every wake-up (a loaded host's scheduling latency)."""

    def __init__(self, t0_ns: int, period_ns: int, word_ns: int, reads: int,
                 sync: bool, rng, late_ns: int = 0) -> None:
        self.P, self.w, self.reads, self.sync, self.rng = \
            period_ns, word_ns, reads, sync, rng
        self.late_ns = late_ns             # scheduling latency: up to this per wake
        self.grid0 = t0_ns - rng.randrange(period_ns)
        self.t = self.next = t0_ns
        self.flag_read = t0_ns - period_ns     # the flag is set at the start
        self.drop = 0

    def conv_at(self, t_ns: int) -> int:
        """Index of the latest conversion ended by @t_ns."""
        return (t_ns - self.grid0) // self.P

    def end_of(self, k: int) -> int:
        return self.grid0 + k * self.P

    def step(self) -> tuple[int, int, list[int]]:
        """The next sample: (stamp, conversion the flag announced, the
        conversion each register read returned)."""
        if self.sync:
            while True:
                x = self.t + self.w
                ready = self.conv_at(x) > self.conv_at(self.flag_read)
                self.flag_read = self.t = x
                if ready:
                    break
                self.next = self.t
        stamp = self.t
        ks = []
        for _ in range(self.reads):
            self.t += self.w
            ks.append(self.conv_at(self.t))
        per_us = self.P // 1000 - (DRIVER_EARLY_US if self.sync else 0)
        while True:
            self.next += per_us * 1000
            delay_us = (self.next - self.t) // 1000
            if delay_us > 0:
                break
        lo, hi = delay_us, (delay_us * 3) >> 1
        self.t += (lo + self.rng.random() * (hi - lo)) * 1000
        if self.late_ns:
            self.t += self.rng.random() * self.late_ns
        self.t = int(self.t)
        k = self.conv_at(stamp)
        if self.drop:
            self.t = max(self.t + self.drop * self.P, self.end_of(k + 1 + self.drop) + 1)
            self.drop = 0
        return stamp, k, ks


LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1
UINT_MAX = 0xFFFFFFFF
# The kernel's kmalloc() (Linux 6.1, 4 KiB pages, MAX_ORDER 11) gives at
# most 4 MiB in one piece: a larger kfifo is -ENOMEM (__alloc_pages()
# refuses order >= MAX_ORDER).
KMALLOC_MAX_SIZE = 1 << 22
# libiio's local backend (v0.24 local.c NB_BLOCKS): the kernel buffer
# holds this many of the client's buffers unless SET BUFFERS_COUNT says
NB_BLOCKS = 4
# What iiod's malloc() of a WRITE payload can have on a rig host (its
# RAM and swap: a small board's). A longer one is -ENOMEM, its payload
# left unread, as iiod leaves it.
WRITE_MALLOC_MAX = 1 << 30
SYSFS_PAGE = 4096            # what a sysfs store() sees of one write
LINE_MAX = 4096              # a longer command line: -EINVAL, skipped whole


def atol(word: str) -> int:
    """C's atol() as glibc does it (strtol base 10, saturating at the
    long's range; 0 if @word does not start with a number): how iiod's
    parser reads every count and length."""
    m = re.match(r"\s*([+-]?)(\d+)", word)
    if not m:
        return 0
    n = int(m.group(2)[:40])      # 40 digits: already far past saturation
    n = -n if m.group(1) == "-" else n
    return max(LONG_MIN, min(n, LONG_MAX))


def readbuf_length(n: int) -> int:
    """READBUF's length as iiod 0.24 takes it: atol() into an unsigned
    int (modulo 2^32). A huge length is no error there: it streams that
    many bytes, one kernel buffer at a time, until the client goes; so
    does the emulator."""
    n = max(LONG_MIN, min(n, LONG_MAX))
    return n & UINT_MAX


def open_error(samples: int, buffers_count: int, bytes_per_datum: int) -> int:
    """The errno with which an OPEN of @samples per buffer fails (0: it
    opens), as iiod 0.24 over libiio's local backend and Linux 6.1's
    IIO core and kfifo decide it for ina2xx-adc. @samples is iiod's
    (atol() into the unsigned int samples_count, modulo 2^32). libiio
    refuses 0 samples (EINVAL); its local backend writes buffer/length =
    samples x @buffers_count (the low-speed interface), which
    kstrtouint() refuses past UINT_MAX (ERANGE); enabling the buffer
    allocates the kfifo: the length rounded up to a power of two
    (at least 2) times @bytes_per_datum, EINVAL past UINT_MAX bytes,
    ENOMEM past what kmalloc() gives (KMALLOC_MAX_SIZE). So a kernel
    buffer is bounded whatever a client asks for."""
    samples &= UINT_MAX
    if not samples:
        return errno.EINVAL
    length = samples * buffers_count
    if length > UINT_MAX:
        return errno.ERANGE
    fifo = 1 << (max(2, length) - 1).bit_length()
    if fifo > UINT_MAX // bytes_per_datum:
        return errno.EINVAL
    if fifo * bytes_per_datum > KMALLOC_MAX_SIZE:
        return errno.ENOMEM
    return 0


def scan_bytes(mask: int) -> int:
    """The kernel's bytes per scan (iio_compute_scan_bytes()) for the
    channels of @mask: each aligned to its size, the whole to the
    largest."""
    off = largest = 0
    for _cid, idx, size, _signed, _a in SCAN_CHANNELS:
        if mask & (1 << idx):
            off += -off % size + size
            largest = max(largest, size)
    return off + (-off % largest if largest else 0)


class Stream:
    """One open buffer: the driver's kthread reading the chip in real
    time, and the enabled channels."""

    def __init__(self, chip: Ina226, mask: int, samples: int = 256) -> None:
        self.chip = chip
        self.mask = mask
        self.samples = samples            # the kernel buffer's samples (OPEN)
        self.period_ns = chip.period_ns()
        self.t0_ns = chip.now_ns()
        chip.opened += 1
        regs = [i for i in range(4) if mask & (1 << i)]
        self.kthread = Kthread(self.t0_ns, self.period_ns, smbus_word_ns(chip.i2c_hz),
                               len(regs), not chip.allow_async,
                               random.Random(chip.seed * 1000003 + chip.opened),
                               chip.late_ns)
        self.reg_of_read = regs          # register index of each word read
        self.next_k = 1                  # index of the next sample emitted
        self.last_conv = None            # conversion of the last sample
        self.lost = 0                    # conversions nobody read
        self.pending_drop = 0            # guarded by chip.lock
        self.truth = chip.truth.open_stream(chip, self.period_ns) if chip.truth else None
        fmt, off = "<", 0
        self.fields = []
        for cid, idx, size, _signed, _a in SCAN_CHANNELS:
            if not mask & (1 << idx):
                continue
            if off % size:
                fmt += "x" * (size - off % size)
                off += size - off % size
            fmt += "q" if size == 8 else "H"
            off += size
            self.fields.append(idx)
        self.struct = struct.Struct(fmt)
        self.sample_size = self.struct.size

    def read(self, nbytes: int, stop: threading.Event) -> bytes:
        n = nbytes // self.sample_size
        out = bytearray(n * self.sample_size)
        chip, kt = self.chip, self.kthread
        with chip.lock:
            drop, self.pending_drop = self.pending_drop, 0
        kt.drop += drop
        steps = [kt.step() for _ in range(n)]
        done_ns = kt.t if not steps else steps[-1][0] + len(self.reg_of_read) * kt.w
        # --slow: the stream falls behind the clock, its stamps do not
        done_ns += round((done_ns - self.t0_ns) * chip.slow)
        while True:
            dt = (done_ns - chip.now_ns()) / 1e9
            with chip.lock:
                held = chip.hold
            if dt <= 0 and not held:
                break
            if stop.wait(min(dt, 0.5) if not held else 0.02):
                raise ConnectionAbortedError("server stopping")
        off = 0
        with chip.lock:
            truth = self.truth
            convs: dict[int, tuple] = {}

            def conv(k: int) -> tuple:
                if k not in convs:
                    cur, bus, state = chip.conversion(kt.end_of(k))
                    convs[k] = (cur, bus, state, chip.raws_of(cur, bus))
                return convs[k]

            for stamp, k, ks in steps:
                missed = 0 if self.last_conv is None else k - self.last_conv - 1
                if missed > 0:
                    self.lost += missed
                self.last_conv = k
                raws = [0, 0, 0, 0]
                for reg, kr in zip(self.reg_of_read, ks):
                    raws[reg] = conv(kr)[3][reg]
                cur, bus, state, _ = conv(k)
                vals = raws + [stamp]
                self.struct.pack_into(out, off, *(vals[i] for i in self.fields))
                off += self.sample_size
                if truth:
                    if missed > 0:
                        truth.lost(missed, min(drop, missed))
                        drop -= min(drop, missed)
                    truth.sample(stamp, state, round(cur), round(bus), raws)
            self.next_k += n
        return bytes(out)


class Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    allow_reuse_address = True
    daemon_threads = True

    def __init__(self, addr, chip: Ina226) -> None:
        self.chip = chip
        self.stop = threading.Event()
        super().__init__(addr, Handler)


class Handler(socketserver.StreamRequestHandler):
    """One client connection (libiio opens one per buffer, plus one)."""

    def setup(self) -> None:
        super().setup()
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.stream: Stream | None = None

    def answer(self, value: int, payload: bytes = b"") -> None:
        self.wfile.write(b"%d\n" % value + payload)
        self.wfile.flush()

    def handle(self) -> None:
        chip = self.server.chip
        try:
            while not self.server.stop.is_set():
                line = self.rfile.readline(LINE_MAX)
                if not line:
                    return
                if not line.endswith(b"\n") and len(line) == LINE_MAX:
                    # no command is this long: skip the rest of the line
                    # (bounded reads), one -EINVAL for all of it
                    while line and not line.endswith(b"\n"):
                        line = self.rfile.readline(LINE_MAX)
                    self.answer(-errno.EINVAL)
                    continue
                words = line.decode("ascii", "replace").split()
                if not words:
                    continue
                if words[0].upper() == "EXIT":
                    return
                try:
                    self.command(chip, words[0].upper(), words[1:])
                except IioError as e:
                    self.answer(-e.err)
                except (IndexError, ValueError):
                    # a command without its device or a number that is
                    # none: iiod's parser refuses it, the connection stays
                    self.answer(-errno.EINVAL)
        except (ConnectionError, BrokenPipeError, OSError):
            pass   # client went away, possibly mid-buffer
        finally:
            self.close_stream()

    def close_stream(self) -> None:
        if self.stream:
            with self.server.chip.lock:
                self.server.chip.streams.discard(self.stream)
                if self.stream.truth:
                    self.stream.truth.close(time.clock_gettime_ns(time.CLOCK_MONOTONIC))
            self.stream = None

    def read_payload(self, n: int) -> bytes:
        """A WRITE's @n payload bytes, read in bounded pieces: the first
        SYSFS_PAGE of them kept (all a sysfs store() sees of one write),
        the rest read and dropped, so that none is taken for a command."""
        keep = bytearray()
        while n:
            part = self.rfile.read(min(n, 1 << 16))
            if not part:
                raise ConnectionError("short WRITE payload")
            n -= len(part)
            keep += part[:SYSFS_PAGE - len(keep)]
        return bytes(keep)

    def check_dev(self, name: str) -> None:
        if name not in (DEVICE_ID, DEVICE_NAME):
            raise IioError(errno.ENODEV)

    @staticmethod
    def attr_target(args: list[str]) -> tuple[str | None, str | None, list[str]]:
        """[INPUT ch|OUTPUT ch|DEBUG|BUFFER] [attr ...] -> (channel, attr
        or None for all of them, rest). A channel the device does not have
        (an output one included) is ENXIO, as iiod answers."""
        if len(args) >= 2 and args[0].upper() in ("INPUT", "OUTPUT"):
            if args[0].upper() == "OUTPUT" or args[1] not in CHANNEL_ATTRS:
                raise IioError(errno.ENXIO)
            return args[1], (args[2] if len(args) > 2 else None), args[3:]
        if args and args[0].upper() in ("DEBUG", "BUFFER"):
            return args[0].upper(), (args[1] if len(args) > 1 else None), args[2:]
        if args:
            return None, args[0], args[1:]
        return None, None, []

    @staticmethod
    def read_all(values: list[bytes | int]) -> bytes:
        """iiod's answer to a READ naming no attribute (libiio's
        iio_*_attr_read_all): per attribute a big-endian 32-bit length
        (-errno for one that failed), then the value padded to 4 bytes."""
        out = b""
        for v in values:
            if isinstance(v, int):
                out += struct.pack(">i", v)
            else:
                out += struct.pack(">i", len(v)) + v + b"\0" * (-len(v) % 4)
        return out

    def read_value(self, chip: Ina226, chan: str | None, attr: str) -> bytes:
        """One attribute's value as iiod sends it: NUL-terminated."""
        if chan == "BUFFER":
            if attr == "direction":
                value = "in"
            elif attr == "data_available":
                value = "0"
            else:
                raise IioError(errno.ENOENT)
        elif chan == "DEBUG":
            value = chip.debug_read(attr)
        else:
            value = chip.read(chan, attr)
        return value.encode() + b"\0"

    def read_cmd(self, chip: Ina226, args: list[str]) -> bytes:
        chan, attr, _ = self.attr_target(args)
        if attr is not None:
            return self.read_value(chip, chan, attr)
        names = (DEVICE_ATTRS if chan is None else BUFFER_ATTRS if chan == "BUFFER"
                 else DEBUG_ATTRS if chan == "DEBUG" else CHANNEL_ATTRS[chan])
        values: list[bytes | int] = []
        for name in names:
            try:
                values.append(self.read_value(chip, chan, name))
            except IioError as e:
                values.append(-e.err)
        return self.read_all(values)

    def command(self, chip: Ina226, cmd: str, args: list[str]) -> None:
        if cmd == "VERSION":
            self.wfile.write(b"0.24.ina226e\n")
            self.wfile.flush()
        elif cmd == "PRINT":
            xml = chip.xml().encode()
            self.answer(len(xml), xml + b"\n")
        elif cmd == "HELP":
            self.answer(0)
        elif cmd == "TIMEOUT":
            # iiod: one word, atoi() into an unsigned int, which the
            # local context takes whatever it is; the emulator keeps none
            if len(args) != 1:
                raise IioError(errno.EINVAL)
            self.answer(0)
        elif cmd == "OPEN":
            self.check_dev(args[0])
            if len(args) < 3:
                raise IioError(errno.EINVAL)
            if self.stream:
                raise IioError(errno.EBUSY)
            samples = atol(args[1]) & UINT_MAX    # iiod's unsigned int
            try:
                mask = int(args[2], 16)       # one 32-bit word: 5 channels
            except ValueError:
                raise IioError(errno.EINVAL) from None
            if len(args[2]) != 8 or len(args) > 4 or \
                    (len(args) == 4 and args[3].upper() != "CYCLIC"):
                raise IioError(errno.EINVAL)
            if len(args) == 4:
                raise IioError(errno.EPERM)    # CYCLIC: for output buffers only
            # a channel the device lacks, or no data channel (the
            # timestamp alone): the kernel or libiio refuses it
            if mask >> len(SCAN_CHANNELS) or not mask & 0xF:
                raise IioError(errno.EINVAL)
            # no samples, or a kernel buffer the kernel will not allocate
            # (a negative count is a huge one: atol() into an unsigned)
            with chip.lock:
                err = open_error(samples, chip.buffers_count,
                                 scan_bytes(mask))
                if err:
                    raise IioError(err)
                self.stream = Stream(chip, mask, samples)
                chip.streams.add(self.stream)
            self.answer(0)
        elif cmd == "CLOSE":
            self.check_dev(args[0])
            if not self.stream:
                raise IioError(errno.ENXIO)
            self.close_stream()
            self.answer(0)
        elif cmd == "READBUF":
            self.check_dev(args[0])
            if len(args) != 2:
                raise IioError(errno.EINVAL)   # iiod's parser: no length
            if not self.stream:
                raise IioError(errno.EBADF)
            # atol(): a length that is no number is 0 ("0" answered)
            want = readbuf_length(atol(args[1]))
            # iiod sends each kernel buffer as it is filled (the mask
            # with the first), never more than one in memory, until less
            # than a sample is left; none requested: "0" alone
            chunk = self.stream.samples * self.stream.sample_size
            first = True
            while want >= self.stream.sample_size:
                part = self.stream.read(min(want, chunk), self.server.stop)
                self.wfile.write(b"%d\n" % len(part) +
                                 (b"%08x\n" % self.stream.mask if first else b"") + part)
                self.wfile.flush()
                first = False
                want -= len(part)
            if first:
                self.wfile.write(b"0\n")
            self.wfile.flush()
        elif cmd == "READ":
            self.check_dev(args[0])
            data = self.read_cmd(chip, args[1:])
            self.answer(len(data), data + b"\n")
        elif cmd == "WRITE":
            # the payload is read first, whatever is wrong with the
            # request: left unread it would be taken for the next command
            # (unless iiod could not malloc() it: then it reads none)
            if len(args) < 3:
                raise IioError(errno.EINVAL)
            n = atol(args[-1]) & 0xFFFFFFFFFFFFFFFF    # iiod's size_t
            if n > WRITE_MALLOC_MAX:
                raise IioError(errno.ENOMEM)
            data = self.read_payload(n)
            self.check_dev(args[0])
            chan, attr, rest = self.attr_target(args[1:-1])
            if attr is None or rest:
                raise IioError(errno.EINVAL)
            if not n:
                # no bytes (0, or no number: atol()): libiio's local
                # backend opens the file and writes nothing, so the driver
                # sees nothing; a write of 0 bytes is its -EIO
                raise IioError(errno.EIO if chip.writable(chan, attr) else errno.EACCES)
            value = data.decode("ascii", "replace").rstrip("\0")
            if chan == "DEBUG":
                chip.debug_write(attr, value)
            elif chan == "BUFFER":
                raise IioError(errno.EACCES)
            else:
                chip.write(chan, attr, value)
            self.answer(n)
        elif cmd == "GETTRIG":
            self.check_dev(args[0])
            raise IioError(errno.ENOENT)
        elif cmd == "SETTRIG":
            # no trigger directory: setting or clearing one fails alike
            self.check_dev(args[0])
            raise IioError(errno.ENOENT)
        elif cmd == "SET":
            self.check_dev(args[0])
            # strtol() into iiod's unsigned int; libiio's local backend
            # takes it for the next buffer opened. While one is open the
            # real iiod answers 0 and the count stays as it was (its next
            # OPEN is sized by the old one: tests/test_iiod_remote.py)
            count = atol(args[2]) & UINT_MAX if len(args) == 3 and \
                args[1].upper() == "BUFFERS_COUNT" else 0
            if count < 1:
                raise IioError(errno.EINVAL)
            with chip.lock:
                if not chip.streams:
                    chip.buffers_count = count
            self.answer(0)
        else:
            raise IioError(errno.EINVAL)


def control_command(chip: Ina226, line: str) -> str:
    """Apply one control line; return the answer line."""
    words = line.split()
    if not words:
        return "error empty command"
    cmd = words[0]
    try:
        if cmd in ("current_uA", "bus_uV") and len(words) == 2:
            with chip.lock:
                chip.model.set(cmd, int(words[1]))
            return "ok"
        if cmd == "drop" and len(words) == 2:
            n = int(words[1])
            if n < 1:
                return "error drop needs N >= 1"
            with chip.lock:
                for s in chip.streams:
                    s.pending_drop += n
                nbuf = len(chip.streams)
            return f"ok buffers={nbuf}"
        if cmd == "hold" and len(words) == 2 and words[1] in ("0", "1"):
            with chip.lock:
                chip.hold = words[1] == "1"
            return "ok"
        if cmd == "get" and len(words) == 1:
            with chip.lock:
                m = chip.model
                return (f"ok current_uA={getattr(m, 'current_uA', '?')} "
                        f"bus_uV={getattr(m, 'bus_uV', '?')} "
                        f"rate_hz={chip.rate_hz()} buffers={len(chip.streams)}")
    except (ValueError, KeyError) as e:
        return f"error {e}"
    return f"error unknown command {line.strip()!r}"


def serve_control(chip: Ina226, path: str, stop: threading.Event) -> threading.Thread:
    """Accept control connections on Unix socket @path in a thread."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(path)
    sock.listen(8)

    def client(conn: socket.socket) -> None:
        with conn, conn.makefile("rw", encoding="ascii", errors="replace") as f:
            for line in f:
                f.write(control_command(chip, line) + "\n")
                f.flush()

    def accept_loop() -> None:
        sock.settimeout(0.5)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            conn.settimeout(None)
            threading.Thread(target=client, args=(conn,), daemon=True).start()
        sock.close()

    t = threading.Thread(target=accept_loop, daemon=True)
    t.start()
    return t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=30431,
                    help="TCP port (0: any free one; see --print-port)")
    ap.add_argument("--rate", type=float, default=893,
                    help="sampling frequency to start with (Hz); the nearest "
                         "INA226 setting is used (default 893: 140 us, "
                         "averaging 4, the fastest the driver reads without "
                         "a loss over a 400 kHz bus)")
    ap.add_argument("--i2c-hz", type=int, default=I2C_HZ,
                    help="I2C bus clock the simulated driver reads over "
                         f"(default {I2C_HZ}: at most {ceiling_hz():.0f} samples/s)")
    ap.add_argument("--late-us", type=float, default=0,
                    help="scheduling latency: up to this much added to each of "
                         "the driver kthread's wake-ups (a loaded host)")
    ap.add_argument("--slow", type=float, default=0, metavar="PERCENT",
                    help="deliver each buffer this much later than its "
                         "samples' time since the buffer opened (a host too "
                         "busy to keep up: the stream falls behind the clock, "
                         "its timestamps stay on the conversion grid)")
    ap.add_argument("--seed", type=int, default=1,
                    help="seed of the kthread's wake-up jitter")
    ap.add_argument("--clock", default="realtime",
                    help="initial current_timestamp_clock (kernel default: realtime)")
    ap.add_argument("--current-uA", type=int, default=100000)
    ap.add_argument("--bus-uV", type=int, default=5000000)
    ap.add_argument("--control", metavar="PATH",
                    help="Unix socket taking current_uA/bus_uV/drop/get commands")
    ap.add_argument("--print-port", action="store_true",
                    help="print the bound TCP port on stdout once listening")
    ap.add_argument("--truth", metavar="FILE",
                    help="write the ground truth of what is emitted (JSON lines)")
    args = ap.parse_args(argv)

    truth = TruthRecorder(args.truth) if args.truth else None
    if not 10000 <= args.i2c_hz <= 3400000:
        ap.error(f"--i2c-hz {args.i2c_hz}: an INA226 bus runs at 10 kHz to 3.4 MHz")
    if args.late_us < 0 or args.rate <= 0 or args.slow < 0:
        ap.error("--late-us, --slow and --rate must not be negative (--rate > 0)")
    chip = Ina226(ConstantModel(args.current_uA, args.bus_uV), args.rate, truth,
                  i2c_hz=args.i2c_hz, seed=args.seed)
    chip.late_ns = round(args.late_us * 1000)
    chip.slow = args.slow / 100
    chip.clock = args.clock
    server = Server((args.host, args.port), chip)
    if args.control:
        serve_control(chip, args.control, server.stop)

    def on_term(signum, frame):
        server.stop.set()
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    if args.print_port:
        print(server.server_address[1], flush=True)
    print(f"ina226_iiod: ip:{args.host}:{server.server_address[1]} "
          f"rate {chip.rate_hz()} Hz", file=sys.stderr, flush=True)
    if chip.rate_hz() > ceiling_hz(chip.i2c_hz):
        print(f"ina226_iiod: warning: {chip.rate_hz()} Hz is above what ina2xx-adc "
              f"reads over a {chip.i2c_hz} Hz I2C bus ({ceiling_hz(chip.i2c_hz):.0f} "
              "samples/s): conversions will be lost", file=sys.stderr, flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.stop.set()
        server.server_close()
        if truth:
            with chip.lock:
                truth.close()
        if args.control:
            try:
                os.unlink(args.control)
            except OSError:
                pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
