"""The LAVA path through a real server: `make lab` (lava-jobs/lab.py).

* ``lab.py up`` brings up lava-server 2023.01 (unpacked from Debian's
  package), its PostgreSQL, web API and scheduler, and a lava-worker
  registered over HTTP: the REST API lists the worker online and the
  virtual rig's device idle and good; a second ``up`` starts nothing new;
* a functional job of this tree (artifacts served over HTTP on
  localhost, rendered by render.py, submitted with lavacli) is scheduled
  by the server onto the worker's device and every check of the module
  is one passing test case read back through the REST API;
* ``lab.py down`` leaves nothing of the lab running.

The lab is left as it was found: brought down at the end only if this
test brought it up.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
LAVA_JOBS = REPO / "lava-jobs"
sys.path.insert(0, str(REPO))

from tests.skips import cannot_run  # noqa: E402


def _load(name: str):
    sys.path.insert(0, str(LAVA_JOBS))
    spec = importlib.util.spec_from_file_location(f"lab_{name}", LAVA_JOBS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


lab = _load("lab")
render = _load("render")
artifacts = _load("artifacts")


def git_sha(rev: str) -> str:
    p = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", "-q", rev],
                       capture_output=True, text=True)
    return p.stdout.strip()


def functional_checks() -> list[str]:
    p = subprocess.run(["/bin/busybox", "sh", str(LAVA_JOBS / "target" / "sbrig-lava-functional"),
                        "--list"], capture_output=True, text=True, check=True)
    return p.stdout.split()


def lab_cmd(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(LAVA_JOBS / "lab.py"), *args],
                          capture_output=True, text=True, timeout=timeout)


FIGURES: dict[str, float] = {}


@pytest.fixture(scope="module")
def the_lab():
    if os.geteuid() != 0:
        cannot_run("the lab's worker runs lava-run, which needs root")
    for tool in ("/usr/bin/lava-worker", "/usr/bin/lavacli", "/usr/bin/gunicorn",
                 str(lab.PGBIN / "initdb")):
        if not Path(tool).exists():
            cannot_run(f"{tool} missing (.ci/install-deps installs it)")
    was_up = lab_cmd("status").returncode == 0
    t0 = time.monotonic()
    p = lab_cmd("up")
    FIGURES["bring-up"] = time.monotonic() - t0
    print(f"lab.py up: {FIGURES['bring-up']:.1f} s (it was {'up' if was_up else 'down'})")
    assert p.returncode == 0, p.stderr
    yield lab.load_state()
    print("lab figures: " + ", ".join(f"{k} {v:.1f} s" for k, v in FIGURES.items()))
    if not was_up:
        p = lab_cmd("down")
        assert p.returncode == 0, p.stderr


def api(state: dict, path: str):
    return lab.api(state, path)


def api_all(state: dict, path: str) -> list[dict]:
    """Every result of a paginated REST list."""
    out = []
    page = api(state, path + ("&" if "?" in path else "?") + "limit=100")
    while True:
        out += page["results"]
        if not page["next"]:
            return out
        page = api(state, page["next"].split("/api/v0.2/", 1)[1])


def test_up_brings_the_worker_online(the_lab):
    w = api(the_lab, f"workers/{lab.WORKER}/")
    assert (w["state"], w["health"]) == ("Online", "Active"), w
    d = api(the_lab, f"devices/{lab.DEVICE}/")
    assert d["device_type"] == "qemu" and d["worker_host"] == lab.WORKER, d
    assert (d["state"], d["health"]) == ("Idle", "Good"), d
    # the device dictionary the server renders is the virtual rig's
    p = lab.lavacli(["devices", "dict", "get", "--render", lab.DEVICE],
                    capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    dev = yaml.safe_load(p.stdout)
    assert "sbrig_rig_attach" in dev["commands"]["users"]
    assert any("org.sbrig.rig" in o for o in
               dev["actions"]["boot"]["methods"]["qemu"]["parameters"]["extra"])
    # again: everything is there, nothing new is started
    pids = {n: lab.alive(n) for n in lab.PROGRAMS}
    t0 = time.monotonic()
    p = lab_cmd("up")
    FIGURES["bring-up again"] = time.monotonic() - t0
    assert p.returncode == 0, p.stderr
    assert {n: lab.alive(n) for n in lab.PROGRAMS} == pids
    assert all(pids.values()), pids


def publish(commit: str, **kw) -> str:
    """The artifacts of this tree as @commit's, on the lab's HTTP server."""
    out = lab.LAB / "www" / commit / "amd64"
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.monotonic()
    artifacts.build("amd64", out, commit=commit, **kw)
    FIGURES[f"artifacts {commit[:7]}"] = time.monotonic() - t0
    return f"{lab.load_state()['www']}/{commit}/amd64"


def submit(job_text: str, name: str) -> int:
    f = lab.LAB / f"{name}.yaml"
    f.write_text(job_text)
    p = lab.lavacli(["jobs", "submit", str(f)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return int(p.stdout.strip())


def wait(state: dict, job: int, timeout: float = 1200) -> dict:
    t0 = time.monotonic()
    p = lab.lavacli(["jobs", "wait", str(job), "--timeout", str(int(timeout))],
                    capture_output=True, text=True, timeout=timeout + 60)
    assert p.returncode == 0, p.stderr
    j = api(state, f"jobs/{job}/")
    FIGURES[f"job {job}"] = time.monotonic() - t0
    print(f"job {job}: submitted {j['submit_time']}, started {j['start_time']}, "
          f"ended {j['end_time']}: {j['state']}, {j['health']}")
    assert (j["state"], j["health"]) == ("Finished", "Complete"), j
    assert j["actual_device"] == lab.DEVICE
    return j


def test_a_functional_job_runs_through_the_server(the_lab):
    commit = git_sha("HEAD")
    url = publish(commit)
    text, _ = render.render_job("qemu", commit=commit, artifacts=url, suites=["functional"])
    job = submit(text, "functional")
    wait(the_lab, job)
    suites = {s["name"]: s["id"] for s in api_all(the_lab, f"jobs/{job}/suites/")}
    assert "0_sbrig-functional" in suites, suites
    cases = {t["name"]: t["result"] for t in
             api_all(the_lab, f"jobs/{job}/suites/{suites['0_sbrig-functional']}/tests/")}
    assert sorted(cases) == sorted(functional_checks())
    assert set(cases.values()) == {"pass"}, cases


def test_down_leaves_nothing_running(the_lab):
    """Last: down stops every program and PostgreSQL; up brings it back."""
    pids = [lab.alive(n) for n in lab.PROGRAMS]
    assert all(pids)
    p = lab_cmd("down")
    assert p.returncode == 0, p.stderr
    for pid in pids:
        assert not Path(f"/proc/{pid}/cmdline").exists() or \
            not Path(f"/proc/{pid}/cmdline").read_bytes(), pid
    assert not lab.pg_running()
    assert lab_cmd("status").returncode == 1
    p = lab_cmd("up")
    assert p.returncode == 0, p.stderr
    assert api(lab.load_state(), f"workers/{lab.WORKER}/")["state"] == "Online"
