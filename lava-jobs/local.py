#!/usr/bin/python3
"""local.py - run sbrig's LAVA jobs here, with a real lava-run and no lab.

    /usr/bin/python3 lava-jobs/local.py device DICT [--job JOB.yaml] [-o DEVICE.yaml]
    /usr/bin/python3 lava-jobs/local.py run JOB.yaml [--device DICT] [--out DIR]
    /usr/bin/python3 lava-jobs/local.py results LOG

``device`` renders a device dictionary (lava-jobs/devices/*.jinja2, the
snippets a lab admin pastes) with lava-server's device-type templates, as
lava-server does for a job: the job's ``context`` variables are the
template's variables. The templates come from Debian's lava-server
package, downloaded (``apt-get download``) and unpacked (``dpkg-deb -x``)
into build/cache/lava-server/, never installed.

``run`` renders the device (default lava-jobs/devices/qemu-sbrig.jinja2)
and runs the job with ``lava-run`` (lava-dispatcher, as root; its work
directory is /var/lib/lava/dispatcher/tmp/<job id>); its log goes to
OUT/lava-run.log (default build/lava/run-<job id>/). It prints every test
case LAVA recorded (``lvl: results`` lines of the log, YAML) and exits 0
when the job finished and no test case failed, 1 otherwise (lava-run
itself exits 0 with failed test cases).

``results`` prints the test cases of a lava-run log.

``validate`` builds and validates the dispatcher's whole pipeline for a
job without running it (``lava-run --validate``), for jobs of boards that
are not here: only the dispatcher's three checks of this host are stubbed
(the TFTP server's binary and directory, which /etc/default/tftpd-hpa
names; the connection command's binary, telnet to a ser2net console; the
dispatcher's IP address, which an HTTP or TFTP boot puts on the U-Boot
command line); everything else is the real dispatcher's.
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BUILD = Path(os.environ.get("SBRIG_BUILD_DIR", REPO / "build")).resolve()
CACHE = BUILD / "cache" / "lava-server"
DEVICES = HERE / "devices"


class LocalError(RuntimeError):
    """Something outside the job is wrong (a tool missing, a download)."""


# --------------------------------------------------------- device types --

def lava_server_device_types(cache: Path = CACHE) -> Path:
    """lava-server's device-type templates (base.jinja2, qemu.jinja2,
    beaglebone-black.jinja2, ...), from its Debian package unpacked into
    ``cache`` (once)."""
    root = cache / "root"
    dtypes = root / "usr" / "share" / "lava-server" / "device-types"
    if (cache / ".complete").exists():
        return dtypes
    cache.mkdir(parents=True, exist_ok=True)
    debs = sorted(cache.glob("lava-server_*.deb"))
    if not debs:
        p = subprocess.run(["apt-get", "download", "lava-server"], cwd=cache,
                           capture_output=True, text=True)
        debs = sorted(cache.glob("lava-server_*.deb"))
        if p.returncode != 0 or not debs:
            raise LocalError("apt-get download lava-server failed (is there an apt "
                             f"source for Debian 12?):\n{p.stderr.strip()}")
    tmp = cache / "root.partial"
    subprocess.run(["rm", "-rf", str(tmp), str(root)], check=True)
    p = subprocess.run(["dpkg-deb", "-x", str(debs[-1]), str(tmp)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise LocalError(f"dpkg-deb -x {debs[-1]}: {p.stderr.strip()}")
    os.replace(tmp, root)
    if not (dtypes / "base.jinja2").exists():
        raise LocalError(f"{debs[-1]} has no device-types/base.jinja2")
    (cache / ".complete").write_text(debs[-1].name + "\n")
    return dtypes


def render_device(dictionary: Path, context: dict | None = None,
                  device_types: Path | None = None) -> tuple[str, dict]:
    """Render a device dictionary as lava-server does (a sandboxed jinja2
    environment, trim_blocks, the job's context as variables); return the
    device configuration's text and its parsed form."""
    import jinja2
    from jinja2.sandbox import SandboxedEnvironment

    dtypes = device_types or lava_server_device_types()
    env = SandboxedEnvironment(loader=jinja2.FileSystemLoader(
        [str(dictionary.parent), str(dtypes)]), trim_blocks=True, autoescape=False)
    try:
        text = env.get_template(dictionary.name).render(**(context or {}))
    except jinja2.TemplateError as e:
        line = getattr(e, "lineno", None)
        raise LocalError(f"{dictionary}{':' + str(line) if line else ''}: {e}") from None
    try:
        return text, yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise LocalError(f"{dictionary}: the rendered device is not YAML: {e}") from None


# --------------------------------------------------------------- results --

@dataclass
class Result:
    """One ``lvl: results`` record: a test case of a definition."""

    definition: str
    case: str
    result: str
    measurement: str | None = None
    units: str | None = None
    set: str | None = None
    raw: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        """definition/[set/]case, as LAVA's UI shows it"""
        return "/".join(x for x in (self.definition, self.set, self.case) if x)


def parse_results(log_text: str) -> list[Result]:
    """Every test case of a lava-run log. The log is one record per line,
    in YAML flow syntax (lava-run's values carry YAML tags such as
    ``! "576"``, so it is not JSON); the results are the records of level
    ``results``."""
    out = []
    for no, line in enumerate(log_text.splitlines(), 1):
        if '"lvl": "results"' not in line:
            continue
        try:
            rec = yaml.safe_load(line)
        except yaml.YAMLError as e:
            raise LocalError(f"lava-run log line {no}: not a YAML record: {e}") from None
        msg = rec.get("msg") or {}
        out.append(Result(str(msg.get("definition")), str(msg.get("case")),
                          str(msg.get("result")),
                          None if msg.get("measurement") is None else str(msg["measurement"]),
                          msg.get("units"), msg.get("set"), msg))
    return out


def test_cases(results: list[Result]) -> list[Result]:
    """The results of the job's own test definitions (not LAVA's actions,
    whose definition is "lava")."""
    return [r for r in results if r.definition != "lava"]


# ------------------------------------------------------------------- run --

@dataclass
class Run:
    job_id: int
    returncode: int
    log: Path
    results: list[Result]
    seconds: float

    @property
    def finished(self) -> bool:
        """LAVA's own verdict on the job (its ``job`` result)."""
        return any(r.definition == "lava" and r.case == "job" and r.result == "pass"
                   for r in self.results)

    def case(self, name: str, definition: str | None = None) -> Result:
        found = [r for r in test_cases(self.results) if r.case == name
                 and (definition is None or r.definition.endswith(definition))]
        if len(found) != 1:
            raise KeyError(f"test case {name!r}: {len(found)} results in {self.log}")
        return found[0]


_ids = itertools.count()


def new_job_id() -> int:
    """A job id no other lava-run on this machine uses now (its work
    directory is /var/lib/lava/dispatcher/tmp/<id>)."""
    return 900_000_000 + (os.getpid() % 100_000) * 1000 + next(_ids) % 1000


def run_job(job: Path, device: Path, out: Path, *, job_id: int | None = None,
            timeout: float = 1800) -> Run:
    """lava-run JOB on DEVICE (a rendered device configuration)."""
    if os.geteuid() != 0:
        raise LocalError("lava-run needs root (it works in /var/lib/lava/dispatcher)")
    if not Path("/usr/bin/lava-run").exists():
        raise LocalError("lava-run missing: apt-get install lava-dispatcher "
                         "(.ci/install-deps does)")
    job_id = new_job_id() if job_id is None else job_id
    out.mkdir(parents=True, exist_ok=True)
    log = out / "lava-run.log"
    t0 = time.monotonic()
    with open(log, "wb") as f:
        try:
            p = subprocess.run(["lava-run", "--job-id", str(job_id), "--output-dir",
                                str(out / "output"), "--device", str(device), str(job)],
                               stdout=f, stderr=subprocess.STDOUT, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise LocalError(f"lava-run did not end within {timeout} s; log {log}") from None
    return Run(job_id, p.returncode, log, parse_results(log.read_text(errors="replace")),
               time.monotonic() - t0)


#: executables the dispatcher looks for on a lab's worker (stubbed by validate)
HOST_TOOLS = ("in.tftpd", "telnet")


def validate_offline(argv: list[str], tftp_root: Path) -> int:
    """``lava-run --validate ARGV`` in this process, with the host checks
    stubbed (see the module docstring); returns lava-run's exit status."""
    import runpy
    import lava_dispatcher.parser  # noqa: F401 - loads every action's module
    import lava_dispatcher.utils.filesystem as filesystem
    import lava_dispatcher.utils.network as network
    import lava_dispatcher.utils.shell as shell

    real_which = shell.which

    def which(path, match=os.path.isfile):
        if path in HOST_TOOLS:
            return f"/usr/sbin/{path}"
        return real_which(path, match)

    def dispatcher_ip(config, protocol=None):
        return "192.0.2.1"          # TEST-NET-1: this host has no lab network

    tftp_root.mkdir(parents=True, exist_ok=True)
    filesystem.tftpd_dir = lambda: str(tftp_root)
    for name, mod in list(sys.modules.items()):
        if name.startswith("lava_dispatcher"):
            if getattr(mod, "which", None) is real_which:
                mod.which = which
            if getattr(mod, "dispatcher_ip", None) is network.dispatcher_ip:
                mod.dispatcher_ip = dispatcher_ip
    network.dispatcher_ip = dispatcher_ip
    sys.argv = ["lava-run", "--validate", *argv]
    try:
        runpy.run_path("/usr/bin/lava-run", run_name="__main__")
    except SystemExit as e:
        return int(e.code or 0)
    return 0


def print_results(results: list[Result]) -> int:
    failed = 0
    for r in results:
        meas = f"  {r.measurement} {r.units or ''}".rstrip() if r.measurement is not None else ""
        print(f"{r.result:5}  {r.name}{meas}")
        failed += r.result == "fail"
    return failed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("device", help="render a device dictionary")
    d.add_argument("dictionary", type=Path)
    d.add_argument("--job", type=Path, help="take the context variables of this job")
    d.add_argument("-o", "--output", type=Path)
    r = sub.add_parser("run", help="run a job with lava-run")
    r.add_argument("job", type=Path)
    r.add_argument("--device", type=Path, default=DEVICES / "qemu-sbrig.jinja2",
                   help="device dictionary (default lava-jobs/devices/qemu-sbrig.jinja2)")
    r.add_argument("--out", type=Path, help="log directory (default build/lava/run-ID)")
    s = sub.add_parser("results", help="the test cases of a lava-run log")
    s.add_argument("log", type=Path)
    v = sub.add_parser("validate", help="lava-run --validate, the host checks stubbed")
    v.add_argument("job", type=Path)
    v.add_argument("--device", type=Path, required=True, help="device dictionary")
    v.add_argument("--out", type=Path, help="log directory (default build/lava/validate-ID)")
    for x in (d, r, v):
        x.add_argument("--device-var", action="append", default=[], metavar="NAME=VALUE",
                       help="a variable of the device dictionary (e.g. sbrig_dir=DIR)")

    args = ap.parse_args(argv)
    try:
        if args.cmd == "results":
            return 1 if print_results(test_cases(parse_results(args.log.read_text()))) else 0
        job = yaml.safe_load(args.job.read_text()) if getattr(args, "job", None) else {}
        dictionary = args.dictionary if args.cmd == "device" else args.device
        context = dict((job or {}).get("context") or {})
        for item in args.device_var:
            name, eq, value = item.partition("=")
            if not eq:
                ap.error(f"--device-var {item!r}: want NAME=VALUE")
            context[name] = value
        text, _ = render_device(dictionary, context)
        if args.cmd == "device":
            if args.output:
                args.output.write_text(text)
            else:
                sys.stdout.write(text)
            return 0
        job_id = new_job_id()
        if args.cmd == "validate":
            out = args.out or BUILD / "lava" / f"validate-{job_id}"
            out.mkdir(parents=True, exist_ok=True)
            (out / "device.yaml").write_text(text)
            log = out / "lava-run.log"
            saved = os.dup(2)
            with open(log, "wb") as f:          # lava-run logs on stderr
                os.dup2(f.fileno(), 2)
                try:
                    rc = validate_offline(["--job-id", str(job_id), "--output-dir",
                                           str(out / "output"), "--device",
                                           str(out / "device.yaml"), str(args.job)],
                                          out / "tftp")
                finally:
                    sys.stderr.flush()
                    os.dup2(saved, 2)
                    os.close(saved)
            results = parse_results(log.read_text(errors="replace"))
            job_result = next((r for r in results if r.case == "job"), None)
            print_results([r for r in results if r.case in ("validate", "job")])
            if job_result is None or job_result.result != "pass":
                why = job_result.raw.get("error_msg") if job_result else "no job result"
                print(f"validation failed: {why}; log {log}")
                return 1
            print(f"validation passed; log {log}, pipeline {out / 'output' / 'description.yaml'}")
            return rc
        out = args.out or BUILD / "lava" / f"run-{job_id}"
        out.mkdir(parents=True, exist_ok=True)
        (out / "device.yaml").write_text(text)
        run = run_job(args.job, out / "device.yaml", out, job_id=job_id)
        failed = print_results(test_cases(run.results))
        print(f"lava-run exit {run.returncode}, job {'finished' if run.finished else 'FAILED'}"
              f", {failed} test case(s) failed, {run.seconds:.0f} s; log {run.log}")
        return 0 if run.finished and not failed else 1
    except (LocalError, OSError) as e:
        print(f"local.py: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
