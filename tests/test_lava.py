"""LAVA: sbrig's job definitions, checked by LAVA's own code and run by a
real lava-run (lava-dispatcher from Debian), with no lab.

* every job lava-jobs/render.py makes (both device types, each suite)
  passes ``lava_common.schemas.validate(strict=True)``, the test
  definitions pass LAVA's test-definition schema, and the device
  dictionaries of lava-jobs/devices/ render from Debian's lava-server
  device-type templates (downloaded and unpacked, not installed);
* the BeagleBone Black jobs pass the dispatcher's whole pipeline
  validation (lava-run --validate) with only its three checks of this host
  stubbed (lava-jobs/local.py validate), and a job the dispatcher cannot
  run fails it;
* the qemu functional job boots the artifacts of lava-jobs/artifacts.py
  under lava-run and every check of the module's seed API is one passing
  test case (read back from the ``lvl: results`` lines of lava-run's log);
  the same job with a deliberately broken suspend_block.ko (its UNBLOCK
  ioctl forgets to unblock) fails exactly the checks that see it;
* two qemu power jobs (lava-jobs/rig_host.py attached to LAVA's QEMU by
  the device dictionary's user command), five runs each: the first files
  its runs under a base commit, the second (the same build) compares with
  them and finds every metric unchanged (with the virtual rig's minimum
  changes, rig/virtual/compare.conf); every figure LAVA recorded is the
  one of the report.json (or compare.json) the rig wrote, and each run's
  samples and total energy are those the rig host's INA226 emulator
  emitted (its truth file, DIR/power-truth.jsonl);
* a board's rig host (rig_host.py attach-board) from a copy of the
  script alone (no QEMU or virtual rig modules): its TCP rig channel
  wants the shared secret of a file nobody else may read, serves a
  second client while a first stays silent, tells a fifth it is busy and
  drops the silent one after the read timeout;
* the renderer's bad input: a template variable nobody sets, an artifact
  URL that does not resolve, a LAVA name with a space, a tcp: power job
  without the secret's token.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import importlib.util
import json
import re
import shlex
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
LAVA_JOBS = REPO / "lava-jobs"
sys.path.insert(0, str(REPO))

from rig.virtual import ina226_iiod  # noqa: E402
from tests import exportrules  # noqa: E402
from tests.capture import read_rows  # noqa: E402
from tests.vm.common import BUILD  # noqa: E402


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"lava_{name}", LAVA_JOBS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod        # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


render = _load("render")
local = _load("local")
artifacts = _load("artifacts")

WORK = BUILD / "lava" / "test"
BIN = BUILD / "host" / "release"
SCENARIOS = REPO / "tests" / "fixtures" / "lava" / "scenarios"
SUITES = [["functional"], ["power"], ["functional", "power"]]


def git_sha(rev: str) -> str | None:
    p = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", "-q", rev],
                       capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else None


#: the commit the jobs are for, and the one the power suite compares with
#: (the tree is built once: both commits' artifacts are that build; a
#: shallow clone has no parent: a made-up SHA stands for it)
NEW = git_sha("HEAD") or hashlib.sha1(b"sbrig test commit").hexdigest()
BASE = git_sha("HEAD~1") or hashlib.sha1(f"parent of {NEW}".encode()).hexdigest()


def publish(src: Path, dst: Path, commit: str) -> Path:
    """The artifacts in @src filed as @commit's in @dst (files copied,
    the manifest's commit set)."""
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    m = json.loads((dst / "artifacts.json").read_text())
    m["commit"] = commit
    (dst / "artifacts.json").write_text(json.dumps(m, indent=2) + "\n")
    return dst


@pytest.fixture(scope="module")
def amd64():
    """The qemu jobs' artifacts of this tree (file:// URL base)."""
    artifacts.build("amd64", WORK / "amd64", commit=NEW)
    return WORK / "amd64"


@pytest.fixture(scope="module")
def armhf():
    artifacts.build("armhf", WORK / "armhf", commit=NEW)
    return WORK / "armhf"


@pytest.fixture(scope="module")
def http_artifacts():
    """An HTTP server of WORK, as a lab serves its artifacts."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(WORK))
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


@pytest.fixture(scope="module")
def device_types():
    return local.lava_server_device_types()


def url(p: Path) -> str:
    return f"file://{p}"


def render_job(device_type: str, art: str, suites, **kw) -> dict:
    text, job = render.render_job(device_type, commit=kw.pop("commit", NEW),
                                  artifacts=art, suites=suites, **kw)
    return job


def run_lava(job: dict, name: str, device_vars: dict | None = None):
    """lava-run @job on the qemu device (lava-jobs/devices/qemu-sbrig.jinja2
    rendered with @device_vars); returns local.Run."""
    out = WORK / name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (out / "rig").mkdir()
    (out / "job.yaml").write_text(yaml.safe_dump(job, sort_keys=False))
    # the device's own directory and a free port for its ttyS1 (the
    # dictionary's default, 30430, is the virtual rig's and make demo's)
    ctx = dict(job.get("context") or {}, **(device_vars or {
        "sbrig_dir": str(out / "rig"), "sbrig_target_port": local_free_port()}))
    text, _ = local.render_device(LAVA_JOBS / "devices" / "qemu-sbrig.jinja2", ctx)
    (out / "device.yaml").write_text(text)
    run = local.run_job(out / "job.yaml", out / "device.yaml", out, timeout=900)
    print(f"{name}: lava-run {run.seconds:.1f} s, exit {run.returncode}")
    assert run.returncode == 0, run.log.read_text()[-3000:]
    assert run.finished, f"the job did not finish: {run.log}\n" + "\n".join(
        str(r.raw) for r in run.results if r.result == "fail")
    return run


def functional_checks() -> list[str]:
    p = subprocess.run(["/bin/busybox", "sh", str(LAVA_JOBS / "target" / "sbrig-lava-functional"),
                        "--list"], capture_output=True, text=True, check=True)
    return p.stdout.split()


# ----------------------------------------------------------- LAVA's schemas --

@pytest.mark.parametrize("suites", SUITES, ids=lambda s: "+".join(s))
@pytest.mark.parametrize("device_type", ["qemu", "beaglebone-black"])
def test_every_job_passes_lavas_schema(device_type, suites, amd64, armhf):
    from lava_common.schemas import validate
    art = amd64 if device_type == "qemu" else armhf
    kw = ({"rig_channel": "tcp:sbrig-rig:30432", "rig_secret_token": "sbrig-rig-01"}
          if device_type != "qemu" else {})
    job = render_job(device_type, url(art), suites, baseline=BASE, **kw)
    validate(job, strict=True, extra_context_variables=[])
    names = [d["name"] for a in job["actions"] if "test" in a
             for d in a["test"]["definitions"]]
    # lava-server's submission schema takes only these keys in an inline
    # definition (lava_scheduler_app/schema.py, _inline_schema; LAVA's
    # job schema above is laxer): a power job's params were refused
    for a in job["actions"]:
        for d in a.get("test", {}).get("definitions", []):
            assert set(d["repository"]) <= {"metadata", "install", "run", "parse"}, d["name"]
    assert names == [f"sbrig-{s}" for s in suites]
    assert job["metadata"]["sbrig.commit"] == NEW
    kinds = [next(iter(a)) for a in job["actions"]]
    assert kinds == ["deploy", "boot"] + (["command"] if "power" in suites else []) + ["test"]
    for path, u in render.walk_urls(job["actions"]):
        assert u.startswith(url(art) + "/"), path
    # the console kept powered through suspend in functional jobs only: in
    # a power job it would bias every suspended figure
    kargs = (job["context"]["extra_kernel_args"] if device_type != "qemu" else
             job["actions"][0]["deploy"]["images"]["kernel"]["image_arg"])
    assert "panic=-1" in kargs
    assert ("no_console_suspend" in kargs) == ("power" not in suites), kargs
    if "power" in suites:
        steps = next(d for d in job["actions"][-1]["test"]["definitions"]
                     if d["name"] == "sbrig-power")["repository"]["run"]["steps"]
        power = dict(shlex.split(x)[0].split("=", 1) for x in steps if re.match(r"[A-Z_]+=", x))
        assert power["COMMIT"] == NEW and power["BASELINE"] == BASE
        assert power["RIG"] == ("virtio:org.sbrig.rig" if device_type == "qemu"
                                else "tcp:sbrig-rig:30432")
    # a tcp: rig channel's secret: the job names LAVA's token, the target
    # gets its value as SBRIG_RIG_SECRET; a virtio channel has none
    want = ({"SBRIG_RIG_SECRET": "sbrig-rig-01"}
            if "power" in suites and device_type != "qemu" else None)
    assert job.get("secrets") == want


def test_test_definitions_pass_lavas_testdef_schema():
    from lava_common.schemas.test.testdef import validate
    for path in sorted((LAVA_JOBS / "testdefs").glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        validate(doc)
        assert doc["metadata"]["format"] == "Lava-Test Test Definition 1.0"
        assert render.LAVA_NAME.match(doc["metadata"]["name"]), path
        for step in doc["run"]["steps"]:
            assert (LAVA_JOBS / "target" / step.split()[0]).exists(), step


def test_device_dictionaries_render_from_lava_servers_templates(device_types, amd64, armhf):
    assert (device_types / "qemu.jinja2").exists()
    job = render_job("qemu", url(amd64), ["power"])
    _, dev = local.render_device(LAVA_JOBS / "devices" / "qemu-sbrig.jinja2",
                                 dict(job["context"], sbrig_dir="/srv/q1"), device_types)
    qemu = dev["actions"]["boot"]["methods"]["qemu"]["parameters"]
    assert qemu["command"] == "qemu-system-x86_64"
    # the job's context (S3) and the device's rig wiring, in that order
    assert qemu["extra"][0] == "-global PIIX4_PM.disable_s3=0"
    assert "-serial stdio" in qemu["extra"]
    assert "-qmp unix:/srv/q1/qemu-qmp.sock,server=on,wait=off" in qemu["extra"]
    assert any("name=org.sbrig.rig" in x for x in qemu["extra"])
    assert "-enable-kvm" not in qemu["options"]       # the job's no_kvm
    cmd = dev["commands"]["users"]["sbrig_rig_attach"]
    assert cmd["do"].split()[2:5] == ["attach", "--dir", "/srv/q1"]
    assert cmd["undo"].endswith("detach --dir /srv/q1")

    bbb = render_job("beaglebone-black", url(armhf), ["functional"])
    text, dev = local.render_device(LAVA_JOBS / "devices" / "beaglebone-black-sbrig.jinja2",
                                    bbb["context"], device_types)
    uboot = dev["actions"]["boot"]["methods"]["u-boot"]
    commands = uboot["ramdisk"]["commands"]
    assert "tftp {KERNEL_ADDR} {KERNEL}" in commands and commands[-1] == "{BOOTX}"
    assert "console=ttyS0,115200n8" in text and "no_console_suspend" in text
    assert dev["actions"]["deploy"]["parameters"]["add_header"] == "u-boot"
    assert dev["commands"]["connect"].startswith("telnet ")
    # the rig host over ssh as a lab runs it: never a password prompt, a
    # dead host fails in seconds; a config path that does not start the
    # packaged sbrigd.service (it would own the rig's lines)
    attach = dev["commands"]["users"]["sbrig_rig_attach"]["do"].split()
    assert attach[0] == "ssh"
    for opt in ("BatchMode=yes", "ConnectTimeout=10", "ServerAliveInterval=15"):
        assert opt in attach[1:attach.index("sbrig@bbb-rig-01")], attach
    conf = attach[attach.index("--rig-conf") + 1]
    assert conf != "/etc/sbrig/rig.conf", conf
    # the rig channel on the lab address, with a secret
    host = attach[attach.index("--listen") + 1].rpartition(":")[0]
    assert host not in ("", "0.0.0.0", "::", "[::]"), attach
    assert attach[attach.index("--secret-file") + 1].startswith("/etc/sbrig/"), attach


def _rig_attach_args(context: dict, device_types: Path, text: str | None = None) -> list[str]:
    """The rig host's arguments in the qemu device's sbrig_rig_attach,
    the dictionary (or @text in its place) rendered with @context."""
    d = WORK / "dict"
    d.mkdir(parents=True, exist_ok=True)
    (d / "qemu-sbrig.jinja2").write_text(
        text if text is not None else (LAVA_JOBS / "devices" / "qemu-sbrig.jinja2").read_text())
    _, dev = local.render_device(d / "qemu-sbrig.jinja2", context, device_types)
    return dev["commands"]["users"]["sbrig_rig_attach"]["do"].split()


def _option(argv: list[str], name: str) -> str | None:
    """@name's value as rig_host.py's argparse takes it (the last one)."""
    values = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == name]
    return values[-1] if values else None


def test_the_qemu_device_compares_with_the_virtual_rigs_minimum_changes(device_types):
    """The qemu device is the virtual rig: its rig host's sbrig compare
    takes rig/virtual/compare.conf as the sbrig package installs it
    (/usr/share/sbrig/virtual-compare.conf, tests/test_packaging.py) with
    no option from the lab; sbrig_compare_config names another one or
    none (''), and a --compare-config in sbrig_rig_options still wins.
    lab.py's dictionary names this checkout's file."""
    ctx = {"sbrig_dir": "/srv/q1"}
    argv = _rig_attach_args(ctx, device_types)
    assert argv[2] == "attach"
    assert _option(argv, "--compare-config") == "/usr/share/sbrig/virtual-compare.conf"
    argv = _rig_attach_args(dict(ctx, sbrig_compare_config="/etc/sbrig/mine.conf"),
                            device_types)
    assert _option(argv, "--compare-config") == "/etc/sbrig/mine.conf"
    argv = _rig_attach_args(dict(ctx, sbrig_compare_config=""), device_types)
    assert "--compare-config" not in argv
    argv = _rig_attach_args(dict(ctx, sbrig_rig_options="--compare-config /x.conf"),
                            device_types)
    assert _option(argv, "--compare-config") == "/x.conf"
    # what lab.py gives lava-server for its device
    lab = _load("lab")
    text = lab.device_dictionary({"target_port": 30440, "power_port": 30441})
    argv = _rig_attach_args({}, device_types, text)
    assert _option(argv, "--compare-config") == str(VIRTUAL_COMPARE_CONF)
    assert argv.count("--compare-config") == 1, argv


def test_beaglebone_jobs_pass_the_dispatchers_pipeline_validation(armhf, http_artifacts):
    """lava-run --validate of the BBB jobs, their artifacts over HTTP as in
    a lab; stubbed: the TFTP server, telnet, the dispatcher's IP only."""
    dictionary = LAVA_JOBS / "devices" / "beaglebone-black-sbrig.jinja2"
    for suites in SUITES:
        job = render_job("beaglebone-black", f"{http_artifacts}/armhf", suites,
                         rig_channel="tcp:192.0.2.7:30432", rig_secret_token="bbb-01",
                         baseline=BASE)
        name = "validate-bbb-" + "-".join(suites)
        out = WORK / name
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        (out / "job.yaml").write_text(yaml.safe_dump(job, sort_keys=False))
        p = subprocess.run([sys.executable, str(LAVA_JOBS / "local.py"), "validate",
                            str(out / "job.yaml"), "--device", str(dictionary), "--out", str(out)],
                           capture_output=True, text=True, timeout=300)
        results = local.parse_results((out / "lava-run.log").read_text())
        job_result = [r for r in results if r.case == "job"]
        assert p.returncode == 0 and job_result and job_result[0].result == "pass", \
            p.stdout[-3000:] + p.stderr[-2000:]
        assert "validation passed" in p.stdout
        validated = [r for r in results if r.case == "validate"]
        assert validated and validated[0].result == "pass"
        desc = yaml.safe_load((out / "output" / "description.yaml").read_text())
        assert "tftp-deploy" in json.dumps(desc) and "uboot-action" in json.dumps(desc)

    # and it can fail: the power job on a board whose dictionary has no
    # sbrig_rig_attach user command (no rig host next to this dispatcher)
    plain = WORK / "bbb-plain.jinja2"
    plain.write_text("{% extends 'beaglebone-black.jinja2' %}\n"
                     "{% set connection_command = 'telnet ser2net-host 7001' %}\n"
                     "{% set hard_reset_command = 'pduclient --command reboot' %}\n")
    job = render_job("beaglebone-black", f"{http_artifacts}/armhf", ["power"],
                     rig_channel="tcp:192.0.2.7:30432", rig_secret_token="bbb-01")
    (WORK / "bbb-power.yaml").write_text(yaml.safe_dump(job, sort_keys=False))
    p = subprocess.run([sys.executable, str(LAVA_JOBS / "local.py"), "validate",
                        str(WORK / "bbb-power.yaml"), "--device", str(plain),
                        "--out", str(WORK / "validate-bbb-plain")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 1, p.stdout
    assert "validation failed: " in p.stdout
    log = (WORK / "validate-bbb-plain" / "lava-run.log").read_text()
    assert "Device has no configured user commands" in log


# -------------------------------------------------------- the functional job --

def test_qemu_functional_job_reports_every_check(amd64):
    run = run_lava(render_job("qemu", url(amd64), ["functional"]), "functional")
    cases = {r.case: r for r in local.test_cases(run.results)}
    checks = functional_checks()
    assert len(checks) >= 20
    assert sorted(cases) == sorted(checks)
    failed = {c: r.raw for c, r in cases.items() if r.result != "pass"}
    assert not failed, f"{failed}; log {run.log}"
    assert {r.definition for r in cases.values()} == {"0_sbrig-functional"}


#: the checks that see an UNBLOCK ioctl that does not unblock
BROKEN_UNBLOCK_FAILS = {"block-unblock-do-not-nest", "user-blocker-statistics"}


def test_a_broken_module_fails_the_checks_that_see_it(amd64):
    """suspend_block.ko built from a copy of kernel-module/ whose UNBLOCK
    ioctl forgets suspend_unblock(): the checks of unblocking fail, the
    rest (close still destroys the blocker) pass."""
    src = WORK / "broken-src" / "kernel-module"
    shutil.rmtree(src.parent, ignore_errors=True)
    shutil.copytree(REPO / "kernel-module", src,
                    ignore=shutil.ignore_patterns("*.o", "*.ko", "*.mod*", ".*.cmd"))
    userdev = src / "userdev.c"
    text = userdev.read_text()
    unblock = "\t\tsuspend_unblock(&bl->blocker);\n\t\tret = 0;\n"
    assert text.count(unblock) == 1, \
        "kernel-module/userdev.c's UNBLOCK case changed: update this test's mutation"
    userdev.write_text(text.replace(unblock, "\t\tret = 0;\t/* broken on purpose */\n"))
    art = WORK / "amd64-broken"
    artifacts.build("amd64", art, module_src=src, commit=NEW)
    run = run_lava(render_job("qemu", url(art), ["functional"]), "functional-broken")
    cases = {r.case: r.result for r in local.test_cases(run.results)}
    assert sorted(cases) == sorted(functional_checks())
    assert {c for c, res in cases.items() if res == "fail"} == BROKEN_UNBLOCK_FAILS, cases
    assert all(res == "pass" for c, res in cases.items() if c not in BROKEN_UNBLOCK_FAILS)


# ------------------------------------------------------------- the power jobs --

def expected_report_cases(report: dict) -> dict[str, tuple]:
    """host/doc/export-formats.md, "--lava" from a report, as the
    measurements LAVA must have recorded: name -> (value, units)."""
    e = report["energy"]
    exp = {"energy_total": (e["total_uJ"] / 1000, "mJ"),
           "energy_suspended": (e["suspended_uJ"] / 1000, "mJ"),
           "energy_awake": (e["awake_uJ"] / 1000, "mJ")}
    if e.get("baseline_uW") is not None:
        exp["baseline_power"] = (e["baseline_uW"] / 1000, "mW")
    if report["wakeups"]:
        exp["energy_per_wakeup"] = (sum(w["energy_uJ"] for w in report["wakeups"])
                                    / len(report["wakeups"]) / 1000, "mJ")
        exp["wakeups"] = (len(report["wakeups"]), "count")
    if report["latency"]["n"]:
        exp["latency_median"] = (report["latency"]["median_ns"] / 1e6, "ms")
        exp["latency_p95"] = (report["latency"]["p95_ns"] / 1e6, "ms")
    for b in report["blockers"]:
        exp[exportrules.lava_name("blocker_energy_" + b["name"])] = \
            (b["energy_uJ"] / 1000, "mJ")
    return exp


def check_run_cases(cases: dict, report: dict, where: str) -> None:
    exp = expected_report_cases(report)
    for name, (value, units) in exp.items():
        assert name in cases, f"{where}: no test case {name}; have {sorted(cases)}"
        r = cases[name]
        assert r.result == "pass", f"{where}/{name}: {r.raw}"
        assert r.units == units, f"{where}/{name}: units {r.units}, want {units}"
        assert float(r.measurement) == pytest.approx(value, abs=0.0015), f"{where}/{name}"
    for name in ("leaks", "aborted_suspends"):
        assert cases[name].units == "count"
    leaks = sum(f["kind"] == "leak" for f in report["findings"])
    assert float(cases["leaks"].measurement) == leaks
    assert cases["leaks"].result == ("fail" if leaks else "pass")
    assert set(cases) == set(exp) | {"leaks", "aborted_suspends"}


def check_run_truth(cases: dict, run_dir: Path, recs: list[dict], where: str) -> str:
    """What LAVA recorded of a run held to what the rig host's INA226
    emulator really emitted (rig_host.py's DIR/power-truth.jsonl) over the
    raw capture's span: every sample sent on the capture's buffer is in
    the capture or declared missing; the total energy within 1 %, as the
    demo's. Returns the figures.

    The split into suspended and awake is printed, not held: here the
    analysis counts about half of what QEMU ran suspended as awake (every
    run: the emitted suspended energy about twice the report's), a known
    bug, not the LAVA path's. Its cause (issue 27's report): every run ends
    asleep, 1.0-1.4 s before the capture's last sample, but the records of
    that last suspend reach the rig only after the next resume (the agent
    is frozen), so the capture has no `enter` for it and its tail counts as
    awake: the tail at 15 mW (14.9, 16.9, 15.8, 20.5 mJ in four runs) is
    what the report's suspended energy lacks (15.4, 16.9, 15.9, 20.6 mJ)."""
    raw = read_rows(run_dir / "capture", "samples", typed=True)
    missing = sum(int(g["missing"]) for g in read_rows(run_dir / "capture", "gaps"))
    t = ina226_iiod.truth_energy(recs, raw[0].t_ns, raw[-1].t_ns)
    (closed,) = [x for x in recs if x["type"] == "close" and x["stream"] == t["stream"]]
    susp = t["by_state"].get("suspended", 0.0)
    lava = {k: float(cases[k].measurement) * 1000
            for k in ("energy_total", "energy_suspended", "energy_awake")}
    figures = (f"{where}: emitted {closed['samples']} samples, captured {len(raw)} + "
               f"{missing} missing; LAVA {lava['energy_total']:.0f} / "
               f"{lava['energy_suspended']:.0f} / {lava['energy_awake']:.0f} uJ, emitted "
               f"{t['total_uJ']:.0f} / {susp:.0f} / {t['total_uJ'] - susp:.0f} uJ "
               f"(total / suspended / awake; the stream {closed['energy_uJ']:.0f} uJ)")
    assert len(raw) + missing == closed["samples"], figures
    assert susp > 0 and t["total_uJ"] > susp, figures
    # every emitted sample is in the capture or declared missing, so the
    # whole stream's energy (the emulator's own integral, at close) is the
    # truth: a window cut at the capture's mapped times would be off by the
    # ip: sensor's least buffer delay (up to ~10 ms under load, at 1.5 W
    # while the target runs: 1-2 % of a 3 s run), which no rig can know
    assert abs(lava["energy_total"] - closed["energy_uJ"]) <= \
        0.01 * closed["energy_uJ"], figures
    assert lava["energy_suspended"] + lava["energy_awake"] == \
        pytest.approx(lava["energy_total"], abs=2), figures
    return figures


#: the virtual rig's minimum changes for sbrig compare (its rig host's
#: --compare-config)
VIRTUAL_COMPARE_CONF = REPO / "rig" / "virtual" / "compare.conf"

#: runs a power job makes: sbrig compare's min_runs (compare-format.md), so
#: that a build compared with itself can be found unchanged
RUNS = 5


#: a verdict as a LAVA test case's result (host/doc/export-formats.md)
LAVA_RESULT = {"regressed": "fail", "inconclusive": "skip", "unchanged": "pass",
               "improved": "pass"}


def power_run(name: str, commit: str, baseline: str, amd64: Path, rig_dir: Path,
              ports: tuple[int, int]):
    art = publish(amd64, WORK / f"amd64-{commit[:12]}", commit)
    job = render_job("qemu", url(art), ["power"], commit=commit, baseline=baseline,
                     scenario="lava-press", runs=RUNS)
    return run_lava(job, name, {
        "sbrig_dir": str(rig_dir), "sbrig_target_port": ports[0],
        "sbrig_power_port": ports[1],
        "sbrig_rig_host": f"{sys.executable} {LAVA_JOBS / 'rig_host.py'}",
        "sbrig_rig_options": f"--sbrig-bin {BIN} --scenarios {SCENARIOS} "
                             f"--history {rig_dir / 'history.db'}",
        "sbrig_compare_config": str(VIRTUAL_COMPARE_CONF)})


def by_set(run) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for r in local.test_cases(run.results):
        out.setdefault(r.set or "", {})[r.case] = r
    return out


def check_warm_up(session: dict) -> None:
    """The rig host's warm-up run (--warm-up, default 1) before a job's
    runs: captured, never analysed (so never a report, a LAVA test set, a
    baseline or a history entry)."""
    assert len(session["warm_up"]) == 1, session["warm_up"]
    for d in map(Path, session["warm_up"]):
        assert (d / "capture" / "meta.ini").is_file() and not (d / "report").exists(), d
        assert str(d) not in session["runs"]


def check_self_comparison(session: dict, sets: dict) -> None:
    """The new job's compare.json and LAVA results: the same build on both
    sides (BASE and NEW differ in name only)."""
    cmp = json.loads(Path(session["compare"]).read_text())
    for m in cmp["metrics"]:
        print(f"compare {m['metric']} {m['blocker'] or ''}: {m['verdict']} "
              f"({m.get('change_rel')}: {m.get('reason')})")
    assert cmp["base"]["git_sha"] == [BASE] and cmp["new"]["git_sha"] == [NEW]
    assert cmp["base"]["n"] == RUNS and cmp["new"]["n"] == RUNS
    cases = sets["compare"]
    verdict = cases.pop("compare_verdict")
    regressed = sum(m["verdict"] == "regressed" for m in cmp["metrics"])
    # the same build on both sides (BASE and NEW differ in name only): every
    # metric unchanged (issue 27), by compare-format.md's rules with the
    # virtual rig's minimum changes (rig/virtual/compare.conf, which the rig
    # host passes to sbrig compare: the runs of one build on QEMU/TCG spread
    # with the host's load, and its minimums come from that spread, measured;
    # lava-jobs/README.md, "The virtual rig's minimum changes"). A run
    # without a metric's value (rule 1, "too few runs") fails it too:
    # lava-press.scn captures half a second of sleep before its first
    # press, so each run has two suspended stretches for its baseline and
    # both presses as stimulus wakeups (latency n 2).
    assert cmp["config"]["path"] == str(VIRTUAL_COMPARE_CONF), cmp["config"]
    assert [(m["metric"], m["blocker"], m["verdict"], m["reason"]) for m in cmp["metrics"]
            if m["verdict"] != "unchanged"] == []
    assert cmp["verdict"] == "unchanged" and regressed == 0
    assert verdict.result == LAVA_RESULT[cmp["verdict"]], (verdict, cmp["verdict"])
    assert float(verdict.measurement) == regressed and verdict.units == "count"
    assert len(cases) == len(cmp["metrics"])
    for m in cmp["metrics"]:
        name = exportrules.lava_name(
            "compare_" + m["metric"] + (f"_{m['blocker']}" if m["blocker"] else ""))
        assert cases[name].result == LAVA_RESULT[m["verdict"]], (name, m["verdict"])


def test_qemu_power_jobs_report_the_rigs_figures(amd64):
    subprocess.run(["make", "-C", str(REPO / "host"), "-j2", f"O={BIN.parent}"],
                   check=True, capture_output=True)
    rig_dir = WORK / "rig-qemu-sbrig"
    shutil.rmtree(rig_dir, ignore_errors=True)
    rig_dir.mkdir(parents=True)
    ports = (local_free_port(), local_free_port())

    # the base commit's job: two runs, no comparison yet
    base = power_run("power-base", BASE, "", amd64, rig_dir, ports)
    sets = by_set(base)
    assert sets[""]["power-setup"].result == "pass"
    assert sets[""]["power-rig"].result == "pass", base.log
    session = json.loads((rig_dir / "session.json").read_text())
    assert session["commit"] == BASE and len(session["runs"]) == RUNS
    check_warm_up(session)
    base_runs = session["runs"]
    for i, run_dir in enumerate(session["runs"], 1):
        report = json.loads((Path(run_dir) / "report" / "report.json").read_text())
        assert report["capture"]["provenance"]["git_sha"] == BASE
        assert report["energy"]["total_uJ"] > 0 and report["wakeups"]
        check_run_cases(sets[f"run-{i}"], report, f"base run-{i}")
    # the rig host's truth file is this job's (it starts one per attach)
    recs = ina226_iiod.read_truth(rig_dir / "power-truth.jsonl")
    for i, run_dir in enumerate(session["runs"], 1):
        print(check_run_truth(sets[f"run-{i}"], Path(run_dir), recs, f"base run-{i}"))
    assert sets["compare"]["compare_verdict"].result == "skip"
    assert set(sets) == {"", "compare"} | {f"run-{i}" for i in range(1, RUNS + 1)}

    # the new commit's job compares with the base's runs on this rig
    new = power_run("power-new", NEW, BASE, amd64, rig_dir, ports)
    sets = by_set(new)
    assert sets[""]["power-rig"].result == "pass", new.log
    session = json.loads((rig_dir / "session.json").read_text())
    assert session["commit"] == NEW and session["baseline"] == BASE
    check_warm_up(session)
    for i, run_dir in enumerate(session["runs"], 1):
        report = json.loads((Path(run_dir) / "report" / "report.json").read_text())
        assert report["capture"]["provenance"]["git_sha"] == NEW
        check_run_cases(sets[f"run-{i}"], report, f"new run-{i}")
    recs = ina226_iiod.read_truth(rig_dir / "power-truth.jsonl")
    for i, run_dir in enumerate(session["runs"], 1):
        print(check_run_truth(sets[f"run-{i}"], Path(run_dir), recs, f"new run-{i}"))
    if session["compare"] is None:
        # compare refuses runs with declared gaps (compare-format.md): under
        # load the emulated driver can be late and lose samples. Then a run
        # must really have gaps, and the job says so instead of a verdict.
        gappy = [r for r in session["runs"] + base_runs
                 if read_rows(Path(r) / "capture", "gaps")]
        assert gappy and "gap" in session["compare_refused"], session
        assert sets["compare"]["compare_verdict"].result == "skip"
        print(f"no verdict: {session['compare_refused']}")
    else:
        check_self_comparison(session, sets)

    # every run was filed in the rig host's history, under its commit
    p = subprocess.run([str(BIN / "sbrig"), "history", "--db", str(rig_dir / "history.db"),
                        "show", "lava-press"], capture_output=True, text=True, check=True)
    assert NEW[:7] in p.stdout and BASE[:7] in p.stdout


def test_a_boards_rig_host_serves_the_rig_channel_on_tcp():
    """rig_host.py attach-board, a board's rig host, with the virtual rig
    (vrig.py's own QEMU target, INA226 emulator and keypad) standing in
    for the board and its rig; this test plays the target's side of the
    rig channel over TCP, as sbrig-lava-power does on a board."""
    sys.path.insert(0, str(REPO / "rig" / "virtual"))
    from vrig import VirtualRig

    d = WORK / "rig-board"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    secret = hashlib.sha256(b"the lab's rig channel").hexdigest()
    (d / "secret").write_text(secret + "\n")
    (d / "secret").chmod(0o600)
    port = local_free_port()
    with VirtualRig(d / "vrig", name="lava-board") as vr:
        p = subprocess.run([sys.executable, str(LAVA_JOBS / "rig_host.py"), "attach-board",
                            "--dir", str(d / "host"), "--rig-conf", str(vr.conf),
                            "--listen", f"127.0.0.1:{port}", "--secret-file", str(d / "secret"),
                            "--scenarios", str(SCENARIOS),
                            "--sbrig-bin", str(BIN)], capture_output=True, text=True,
                           timeout=60)
        assert p.returncode == 0, p.stderr
        assert f"rig channel  tcp:127.0.0.1:{port}" in p.stdout
        lines = []
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
                f = s.makefile("rb")
                s.sendall(f"auth {secret}\nrun lava-press 1 {NEW} -\n".encode())
                assert f.readline() == b"ready\n"
                # the target's part: suspend opportunistically (in the
                # background: the shell may be frozen before it answers)
                vr.vm.start_bg("sbctl policy opportunistic && sbctl state mem")
                s.settimeout(600)
                while (ln := f.readline().decode()) not in ("end\n", ""):
                    lines.append(ln.rstrip("\n"))
                # the rig holds the key down (a press through its sbrigd):
                # the target wakes and stays up while it takes the answer
                vr.vm.wait_status("running", 30)
                vr.vm.run_ok("sbctl policy forced")
                s.sendall(b"ack\n")
                s.shutdown(socket.SHUT_WR)
                assert f.read() == b""          # the rig ends the session
        finally:
            subprocess.run([sys.executable, str(LAVA_JOBS / "rig_host.py"), "detach",
                            "--dir", str(d / "host")], check=True, timeout=60)
    assert not [ln for ln in lines if ln.startswith("error")], lines
    session = json.loads((d / "host" / "session.json").read_text())
    report = Path(session["runs"][0]) / "report" / "report.json"
    assert json.loads(report.read_text())["capture"]["provenance"]["git_sha"] == NEW
    export = subprocess.run([str(BIN / "sbrig"), "export", str(report), "--lava"],
                            capture_output=True, text=True, check=True).stdout.splitlines()
    assert lines == ["lava-test-set start run-1", *export, "lava-test-set stop",
                     "lava-test-set start compare",
                     "lava-test-case compare_verdict --result skip", "lava-test-set stop"]
    log = (d / "host" / "rig-host.log").read_text()
    assert "the target took the answer" in log and "sbrigd: ok pressed_ns=" in log


def read_to_end(s: socket.socket) -> bytes:
    buf = b""
    while data := s.recv(4096):
        buf += data
    return buf


def test_a_boards_rig_channel_wants_the_secret_and_drops_the_silent(tmp_path):
    """attach-board's TCP rig channel (it presses a board's keys and files
    runs), run from a copy of rig_host.py alone: a board's rig host has no
    QEMU, so neither rig/virtual/ nor tests/vm/ are there. A secret file
    others may read is refused; with the right one: a wrong secret is
    refused, a second client is served while a first stays silent, a
    fifth connection at once is told busy, and the silent one is dropped
    after the read timeout."""
    subprocess.run(["make", "-C", str(REPO / "host"), "-j2", f"O={BIN.parent}"],
                   check=True, capture_output=True)
    tree = tmp_path / "board-host"
    (tree / "lava-jobs").mkdir(parents=True)
    shutil.copy2(LAVA_JOBS / "rig_host.py", tree / "lava-jobs")
    conf = tmp_path / "lava-rig.conf"
    conf.write_text("[rig]\nname = board\n")
    secret = "0123456789abcdef" * 4
    secret_file = tmp_path / "lava-rig.secret"
    secret_file.write_text(secret + "\n")
    secret_file.chmod(0o644)
    d = tmp_path / "host"
    port = local_free_port()
    timeout_s = 3
    argv = [sys.executable, str(tree / "lava-jobs" / "rig_host.py"), "attach-board",
            "--dir", str(d), "--rig-conf", str(conf), "--listen", f"127.0.0.1:{port}",
            "--secret-file", str(secret_file), "--read-timeout", str(timeout_s),
            "--scenarios", str(SCENARIOS), "--sbrig-bin", str(BIN)]

    # every interface is no default, and an explicit host is wanted
    p = subprocess.run([*argv[:8], ":30432", *argv[9:]], capture_output=True, text=True,
                       cwd=tmp_path, timeout=30)
    assert p.returncode == 2 and "--listen: ':30432': name the address" in p.stderr, p.stderr
    # a secret others may read is refused, naming the file and its mode
    p = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert p.returncode == 1, p.stdout
    assert f"--secret-file {secret_file}: mode 0644: others may read it" in p.stderr, p.stderr

    secret_file.chmod(0o600)
    p = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert p.returncode == 0, p.stderr
    assert f"rig channel  tcp:127.0.0.1:{port}" in p.stdout
    conns = []
    try:
        def connect() -> socket.socket:
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            conns.append(s)
            return s

        silent = connect()
        t0 = time.monotonic()
        wrong = connect()
        wrong.sendall(b"auth " + secret.replace("0", "1").encode() + b"\n")
        assert read_to_end(wrong) == b"error auth: wrong secret\nend\n"
        noauth = connect()
        noauth.sendall(f"run lava-press 1 {NEW} -\n".encode())
        assert read_to_end(noauth) == \
            b"error auth: the rig channel wants 'auth SECRET' first\nend\n"
        # the second client is served while the first stays silent (a
        # request the rig can answer without a target: a scenario it lacks)
        good = connect()
        good.sendall(f"auth {secret}\nrun no-such-scenario 1 {NEW} -\n".encode())
        f = good.makefile("rb")
        assert f.readline().startswith(b"error run: no scenario 'no-such-scenario'")
        assert f.readline() == b"end\n"
        good.shutdown(socket.SHUT_WR)
        assert f.read() == b""
        # four connections at once (the silent one and three more): the
        # fifth is told busy
        others = [connect() for _ in range(3)]
        fifth = connect()
        assert read_to_end(fifth).startswith(b"error busy: the rig host serves 4 connections")
        # the silent one is dropped after the read timeout
        assert read_to_end(silent) == f"error silent for {timeout_s} s: dropped\nend\n".encode()
        elapsed = time.monotonic() - t0
        print(f"the silent client was dropped after {elapsed:.2f} s")
        assert timeout_s - 0.5 <= elapsed <= timeout_s + 5, elapsed
        for o in others:
            assert read_to_end(o).startswith(b"error silent")
    finally:
        for s in conns:
            s.close()
        subprocess.run([sys.executable, str(tree / "lava-jobs" / "rig_host.py"), "detach",
                        "--dir", str(d)], check=True, timeout=60)
    log = (d / "rig-host.log").read_text()
    assert "refused: error auth: wrong secret" in log and "dropped" in log, log
    assert secret not in log
    # the board's rig host never needed the virtual rig's modules
    assert not (tree / "rig").exists() and not (tree / "tests").exists()


def local_free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------- the renderer's errors --

def test_a_rig_hosts_compare_config_is_checked_at_attach(tmp_path):
    """rig_host.py --compare-config: a thresholds file sbrig compare would
    refuse fails the attach, with compare's file:line: [section]: why,
    before the rig is touched; the virtual rig's own file is taken."""
    subprocess.run(["make", "-C", str(REPO / "host"), "-j2", f"O={BIN.parent}"],
                   check=True, capture_output=True)
    rig_host = _load("rig_host")

    class Untouched:
        def attach(self):
            raise AssertionError("the rig was attached with a bad --compare-config")

    bad = tmp_path / "compare.conf"
    bad.write_text("[latency_median_ns]\nmin_change = 0.5\nmin_chnage = 0.6\n")
    host = rig_host.RigHost(tmp_path, Untouched(), bindir=BIN, compare_config=bad)
    with pytest.raises(rig_host.RigError,
                       match=rf"^--compare-config: .*{re.escape(str(bad))}:3: "
                             r"\[latency_median_ns\]: unknown key 'min_chnage'"):
        host.attach()
    host = rig_host.RigHost(tmp_path, Untouched(), bindir=BIN,
                            compare_config=VIRTUAL_COMPARE_CONF)
    with pytest.raises(AssertionError, match="the rig was attached"):
        host.attach()           # the file passed: on to the rig


def test_a_template_variable_nobody_sets_is_named_with_its_line(amd64, tmp_path):
    tpl = tmp_path / "mine.yaml.jinja2"
    tpl.write_text((render.TEMPLATES / "qemu.yaml.jinja2").read_text().replace(
        "priority: medium", "priority: medium\ntags: [{{ board_serial }}]"))
    line = next(i for i, ln in enumerate(tpl.read_text().splitlines(), 1)
                if "board_serial" in ln)
    with pytest.raises(render.RenderError) as e:
        render_job("qemu", url(amd64), ["functional"], template=tpl)
    assert str(e.value).startswith(f"{tpl}:{line}: 'board_serial' is undefined")
    assert "--set board_serial=VALUE" in str(e.value)
    # given, the same template renders
    render.render_job("qemu", commit=NEW, artifacts=url(amd64), template=tpl,
                      extra={"board_serial": "bbb-0042"})


def test_an_artifact_url_that_does_not_resolve(amd64, tmp_path, http_artifacts):
    with pytest.raises(render.RenderError, match=r"--artifacts file:///nowhere: "
                       r"file:///nowhere/artifacts.json does not resolve: no such file"):
        render_job("qemu", "file:///nowhere", ["functional"])
    with pytest.raises(render.RenderError, match=r"artifacts.json does not resolve: HTTP 404"):
        render_job("qemu", f"{http_artifacts}/no-such-dir", ["functional"])
    # a manifest whose ramdisk is not there: the job's key path is named
    art = publish(amd64, tmp_path / "art", NEW)
    (art / "ramdisk.cpio.gz").unlink()
    with pytest.raises(render.RenderError) as e:
        render_job("qemu", url(art), ["functional"])
    assert "actions[0].deploy.images.ramdisk.url" in str(e.value)
    assert f"no such file: {art / 'ramdisk.cpio.gz'}" in str(e.value)
    # and artifacts of another commit or arch are not taken
    with pytest.raises(render.RenderError, match=f"built from commit {NEW}, not {BASE}"):
        render_job("qemu", url(amd64), ["functional"], commit=BASE)
    with pytest.raises(render.RenderError, match="the artifacts are for 'amd64'"):
        render_job("beaglebone-black", url(amd64), ["functional"])


def test_a_lava_name_with_a_space_is_refused(amd64, tmp_path):
    with pytest.raises(render.RenderError) as e:
        render_job("qemu", url(amd64), ["power"], scenario="key press")
    assert str(e.value) == ("--scenario 'key press': not a LAVA name: only A-Z a-z 0-9 "
                            "_ . - are allowed (it has ' ')")
    # from the command line: exit 1, the message, and no job written
    out = tmp_path / "job.yaml"
    p = subprocess.run([sys.executable, str(LAVA_JOBS / "render.py"), "qemu", "--commit", NEW,
                        "--artifacts", url(amd64), "--suite", "power", "--scenario",
                        "key press", "-o", str(out)], capture_output=True, text=True)
    assert p.returncode == 1 and not out.exists()
    assert "render.py: --scenario 'key press': not a LAVA name" in p.stderr
    # a template whose definition name has a space: the job's key path
    tpl = tmp_path / "t.yaml.jinja2"
    tpl.write_text((render.TEMPLATES / "qemu.yaml.jinja2").read_text().replace(
        "name: sbrig-{{ suite }}", "name: sbrig {{ suite }}"))
    with pytest.raises(render.RenderError, match=r"actions\[2\].test.definitions\[0\].name "
                       r"'sbrig functional': not a LAVA name"):
        render_job("qemu", url(amd64), ["functional"], template=tpl)
    # the other variables are checked by kind
    with pytest.raises(render.RenderError, match="--commit 'HEAD': not a commit SHA"):
        render_job("qemu", url(amd64), ["functional"], commit="HEAD")
    with pytest.raises(render.RenderError, match="--rig-channel: a beaglebone-black power "
                       "job needs the rig channel"):
        render_job("beaglebone-black", url(amd64), ["power"])
    # a tcp: rig channel presses a board's keys: its secret's token is wanted
    with pytest.raises(render.RenderError, match="--rig-secret-token: a power job on the rig "
                       "channel tcp:192.0.2.7:30432 needs the name of the LAVA token"):
        render_job("beaglebone-black", url(amd64), ["power"], rig_channel="tcp:192.0.2.7:30432")
    with pytest.raises(render.RenderError, match="--rig-secret-token 'my token': not a LAVA name"):
        render_job("beaglebone-black", url(amd64), ["power"], rig_channel="tcp:192.0.2.7:30432",
                   rig_secret_token="my token")


def test_the_readme_shows_the_device_dictionaries_as_they_are():
    """lava-jobs/README.md carries the device dictionaries a lab admin
    pastes: they must be the files the tests use."""
    readme = (LAVA_JOBS / "README.md").read_text()
    blocks = re.findall(r"```jinja\n(.*?)```", readme, re.S)
    for name in ("qemu-sbrig.jinja2", "beaglebone-black-sbrig.jinja2"):
        assert (LAVA_JOBS / "devices" / name).read_text() in blocks, \
            f"lava-jobs/README.md's copy of devices/{name} is not the file"
