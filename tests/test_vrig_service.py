"""rig/virtual/vrig.py as a service (issue 14): ``up --detach`` returns once
the rig is up, ``status`` and ``down`` find it through the pid file's lock
in its work dir, two rigs run at once in two work dirs (ports chosen, not
fixed), ``--policy``/``--state`` put the target to sleep by itself, and
SIGINT stops a rig that a shell started in the background (which starts
it with SIGINT ignored)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VRIG = [sys.executable, str(REPO / "rig" / "virtual" / "vrig.py")]


def vrig(*args, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run([*VRIG, *args], capture_output=True, text=True,
                          timeout=timeout)


def _status(d: Path) -> dict:
    p = vrig("status", "--dir", str(d), "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    return json.loads(p.stdout)


def _alive(pid: int) -> bool:
    """Running (a zombie nobody reaped, as a detached rig's becomes where
    no init reaps, counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def _wait(pred, timeout: float, what: str):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def built():
    subprocess.run(["make", "-C", str(REPO / "host"), "-j2"], check=True,
                   capture_output=True)
    subprocess.run([sys.executable, "-m", "tests.vm", "build", "amd64"], cwd=REPO,
                   check=True, capture_output=True)


def test_detached_rig_sleeps_by_itself_and_stops_on_down(built, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    up = vrig("up", "--detach", "--dir", str(a), "--sbrigd",
              "--policy", "opportunistic", "--state", "mem", timeout=400)
    assert up.returncode == 0, up.stdout + up.stderr
    assert f"sbrigd       {a}/sbrigd.sock" in up.stdout, up.stdout
    try:
        info = _status(a)
        assert (info["policy"], info["state"]) == ("opportunistic", "mem")
        # a second rig in another dir at the same time: its own ports
        up_b = vrig("up", "--detach", "--dir", str(b), timeout=400)
        assert up_b.returncode == 0, up_b.stdout + up_b.stderr
        info_b = _status(b)
        assert info_b["power_uri"] != info["power_uri"]
        assert info_b["target_uri"] != info["target_uri"]
        # the same dir twice is refused, naming the rig there
        again = vrig("up", "--detach", "--dir", str(a))
        assert again.returncode == 1
        assert f"a virtual rig already runs in {a} (pid {info['pid']})" in again.stderr
        # opportunistic + mem: nothing blocks, the target suspends (S3)
        _wait(lambda: _status(a)["target"] == "suspended", 60, "rig a's target asleep")
        assert _status(b)["target"] == "running"      # forced: never sleeps
        assert info_b["target"] == "running"          # known from the start
        person = vrig("status", "--dir", str(a))
        assert person.returncode == 0
        assert f"virtual rig in {a}: up (pid {info['pid']})" in person.stdout
        assert "target suspended" in person.stdout
    finally:
        for d in (a, b):
            down = vrig("down", "--dir", str(d), timeout=120)
            assert down.returncode == 0, down.stdout + down.stderr
    for d, i in ((a, info), (b, info_b)):
        st = vrig("status", "--dir", str(d))
        assert st.returncode == 3 and "no virtual rig runs in" in st.stderr
        # the lock goes with the rig's last step: the process ends right after
        _wait(lambda: not _alive(i["pid"]), 10, f"pid {i['pid']} gone")
        assert not (d / "vrig.json").exists()
    # nothing to stop is not an error
    assert vrig("down", "--dir", str(a)).returncode == 0


def test_sigint_stops_a_rig_started_in_the_background(built, tmp_path):
    d = tmp_path / "bg"
    # what `vrig.py up &` in a script does: SIGINT ignored in the child
    p = subprocess.Popen([*VRIG, "up", "--dir", str(d)], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        _wait(lambda: (d / "vrig.json").exists() or p.poll() is not None, 300,
              "the rig up")
        assert p.poll() is None, p.stdout.read()
        qemu = _wait(lambda: subprocess.run(
            ["pgrep", "-f", f"{d}/"], capture_output=True, text=True).stdout.split(),
            10, "its QEMU")
        p.send_signal(signal.SIGINT)
        assert p.wait(120) == 0
        out = p.stdout.read()
        assert "vrig: stopping" in out, out
        assert not any(_alive(int(q)) for q in qemu), qemu
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
