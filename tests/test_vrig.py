"""The virtual rig end to end: sbrigd (ASan build) and sbrig against a real
QEMU target (suspend_block + sbagent), an INA226 emulator whose current
follows the guest's state, and keys pressed through QMP, all reached
through the URIs of the rig config that rig/virtual/vrig.py writes.

One boot for the module; the tests run in order and share it:
status -> opportunistic suspend (current drops) -> a key wakes it ->
wakeup latency -> a scenario holding a blocker.
"""

from __future__ import annotations

import csv
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "rig" / "virtual"))

from vrig import PowerModel, VirtualRig  # noqa: E402

BIN = REPO / "build" / "host" / "asan"
MS = 1_000_000


@pytest.fixture(scope="module")
def vr(tmp_path_factory):
    subprocess.run(["make", "-C", str(REPO / "host"), "VARIANT=asan", "-j2"],
                   check=True, capture_output=True)
    d = tmp_path_factory.mktemp("vrig")
    rig = VirtualRig(d, sbrigd=True, sbrigd_bin=BIN / "sbrigd", name="vrig-test",
                     # the target sleeps for seconds: silence is not death
                     sbrigd_args=["-o", "timing.link_timeout_ms=60000"])
    rig.start()
    try:
        yield rig
    finally:
        rig.stop()
        log = (d / "sbrigd.log").read_text()
        assert "ERROR: AddressSanitizer" not in log and "runtime error" not in log, log


def sbrig(vr, *args, timeout=90) -> str:
    p = subprocess.run([str(BIN / "sbrig"), "-s", vr.socket, *args], text=True,
                       capture_output=True, timeout=timeout)
    assert p.returncode == 0, f"sbrig {args}: exit {p.returncode}\n{p.stdout}{p.stderr}"
    return p.stdout


def request(vr, line: str, timeout: float = 30, until: str = "") -> list[str]:
    """One request on the daemon's socket (daemon-protocol.md); its lines up
    to the final one (or to the first starting with @until)."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(timeout)
        s.connect(vr.socket)
        s.sendall(line.encode() + b"\n")
        out = []
        with s.makefile() as f:
            for ln in f:
                out.append(ln.rstrip("\n"))
                if ln.startswith(("ok", "err")) or (until and ln.startswith(until)):
                    return out
    raise AssertionError(f"{line}: connection closed: {out}")


def kv(text: str) -> dict[str, str]:
    return dict(ln.split(": ", 1) for ln in text.splitlines() if ": " in ln)


def samples(cap: Path) -> list[tuple[int, int]]:
    with open(cap / "samples.tsv") as f:
        r = csv.DictReader(f, delimiter="\t")
        return [(int(x["t_ns"]), int(x["current_uA"])) for x in r]


def wait_until(pred, timeout: float, what: str):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_status_shows_link_sensor_and_key(vr):
    boot = vr.vm.run_ok("cat /proc/sys/kernel/random/boot_id").strip()
    st = wait_until(lambda: (s := kv(sbrig(vr, "status")))["link.connected"] == "yes"
                    and s, 30, "link up")
    assert st["link.boot_id"] == boot
    assert st["link.module"] == "0.1.0" and st["link.kernel"] == vr.vm.kver
    assert st["sensor.uri"] == vr.power_uri and st["sensor.device"] == "ina226"
    assert st["link.uri"] == vr.target_uri
    assert st["line.power"] == "out inactive"
    # running, mostly idle: the idle current plus some CPU share
    mA = float(st["sensor.current_mA"])
    assert PowerModel.IDLE_UA / 1000 <= mA <= PowerModel.BUSY_UA / 1000


def test_opportunistic_suspend_drops_the_current(vr, tmp_path):
    assert request(vr, "agent 10s policy opportunistic")[-1].startswith("ok")
    assert "[opportunistic]" in vr.vm.run_ok("cat /sys/kernel/suspend_block/policy")
    mark = vr.vm.qmp_mark()
    # the agent's DONE comes only when the target next wakes: the reply
    # (the write started) is enough; the daemon drops the request when we go
    assert request(vr, "agent 10s state mem",
                   until="progress accepted")[-1].startswith("progress accepted")
    vr.vm.wait_qmp_event("SUSPEND", 30, since=mark)
    vr.vm.wait_status("suspended", 30)
    cap = tmp_path / "asleep"
    sbrig(vr, "capture", "-o", str(cap), "-d", "1s")
    cur = [ua for _, ua in samples(cap)]
    assert len(cur) > 2000
    # the target stayed in S3 throughout (nothing presses keys here)
    assert vr.vm.query_status() == "suspended"
    assert sum(ua == PowerModel.SUSPEND_UA for ua in cur) > 0.9 * len(cur)


def test_qmp_key_wakes_the_target(vr):
    vr.vm.wait_status("suspended", 30)
    mark = vr.vm.qmp_mark()
    out = sbrig(vr, "press", "power", "50ms")
    assert re.search(r"pressed_ns", out) or out == "" or "press" in out
    ev = vr.vm.wait_qmp_event("WAKEUP", 10, since=mark)
    assert ev["event"] == "WAKEUP"
    # nothing holds it awake: opportunistic suspend takes it down again
    vr.vm.wait_qmp_event("SUSPEND", 30, since=mark)


# Found broken (see the report in the commit): under opportunistic S3 the
# agent is frozen before its 'suspend' frame leaves, so that frame arrives
# together with the same cycle's 'exit'/'resume' after the next wake; the
# engine then voids every round and never presses. Needs the module or the
# agent to flush the event log before freezing (e.g. EPOLLWAKEUP on it).
@pytest.mark.xfail(reason="the target's 'suspend' event only reaches the host "
                   "after the next wake (agent frozen first)", strict=True)
def test_latency_over_three_presses(vr, tmp_path):
    csv_path = tmp_path / "lat.csv"
    out = sbrig(vr, "latency", "-n", "3", "--key", "power", "--csv", str(csv_path),
                "--timeout", "10s", timeout=60)
    print(out)
    rows = list(csv.DictReader(open(csv_path)))
    assert len(rows) == 3
    for r in rows:
        assert 0 < int(r["latency_ns"]) < 3000 * MS, rows
    events = vr.vm.run_ok("cat /sys/kernel/debug/suspend_blocker_events")
    assert len(re.findall(r"\tresume\t", events)) >= 3


# Found broken: the scenario's first agent command goes to a target in S3;
# bytes sent to a UART in S3 are lost and do not wake it (FACTS.md), so
# the agent never answers. Needs a wake-on-receive model of the target's
# UART (e.g. vrig proxying the target port and waking the guest when host
# bytes arrive) or a rig step that wakes the target first.
@pytest.mark.xfail(reason="agent commands do not reach a target in S3", strict=True)
def test_scenario_with_a_blocker(vr, tmp_path):
    cap = tmp_path / "hold"
    out = sbrig(vr, "run", str(REPO / "rig/scenarios/hold.scn"), "-o", str(cap),
                timeout=120)
    print(out)
    with open(cap / "events.tsv") as f:
        ev = list(csv.DictReader(f, delimiter="\t"))
    hold = [e for e in ev if e["arg"] == "rig agent"]
    assert [e["type"] for e in hold] == ["block", "unblock"], ev
    s = samples(cap)
    t0, t1 = s[0][0], s[-1][0]
    for e in hold:
        assert t0 <= int(e["host_t_ns"]) <= t1
    tb, tu = (int(e["host_t_ns"]) for e in hold)
    awake = [ua for t, ua in s if tb + 100 * MS <= t <= tu - 100 * MS]
    asleep = [ua for t, ua in s if ua == PowerModel.SUSPEND_UA]
    assert awake and asleep
    assert min(awake) > PowerModel.SUSPEND_UA
    assert sum(awake) / len(awake) >= PowerModel.IDLE_UA
