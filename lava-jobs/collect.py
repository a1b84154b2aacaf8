#!/usr/bin/python3
"""collect.py - a finished LAVA job's results, read back through the
server's REST API, and its power runs filed into the history.

    /usr/bin/python3 lava-jobs/collect.py JOB_ID --rig-dir DIR --db DB
                     [--url URL --token-file FILE] [--sbrig PATH] [--json FILE]

Reads the job (``/api/v0.2/jobs/ID/``: it must be Finished and Complete;
its metadata ``sbrig.commit`` and ``sbrig.scenario``) and every test case
of its suites (``/api/v0.2/jobs/ID/suites/``, ``.../tests/``: name, test
set, result, measurement, units), prints them one a line (``SUITE/[SET/]
CASE RESULT [MEASUREMENT UNITS]``), and, for a power job, files the runs
LAVA reported into the history: the run of test set ``run-N`` is the rig
host's ``DIR/runs/SCENARIO/COMMIT/STAMP-N/report/report.json`` (DIR: the
device's ``sbrig_dir``) whose total energy is the ``energy_total`` LAVA
recorded for it (to the mJ's third decimal, what LAVA was sent), and
they are added with ``sbrig history add --db DB`` (idempotent: a run
already there is ``present``).

The server and its token default to the local lab's (``make lab``,
build/lab/lab.json); ``--url`` and ``--token-file`` (a file holding the
token, never the token on the command line) name another server.
``--json FILE`` writes what was read: the job, its test cases, the
reports filed.

Exit status: 0 every test case passed; 1 the results were read (and the
runs filed) but a test case failed (each is named on stderr: for a power
job a ``compare_verdict`` of ``fail`` is a regression); 2 the results
could not be read or filed (the job is not complete, the server, a run
that is not on the rig host), with the reason.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BUILD = Path(os.environ.get("SBRIG_BUILD_DIR", REPO / "build")).resolve()
LAB_STATE = BUILD / "lab" / "lab.json"

#: bounds on what a server may send
MAX_CASES = 20000
MAX_BYTES = 16 << 20
NAME = re.compile(r"[A-Za-z0-9_.-]{1,200}")
COMMIT = re.compile(r"[0-9a-f]{7,40}")


class CollectError(RuntimeError):
    pass


def printable(text: object, limit: int = 200) -> str:
    """@text for a terminal: control characters escaped, bounded."""
    s = str(text)[:limit]
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in s)


class Server:
    def __init__(self, url: str, token: str):
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("http", "https") or not u.netloc:
            raise CollectError(f"--url {url!r}: not an http(s) URL")
        self.base = url.rstrip("/") + "/api/v0.2/"
        self.token = token

    def get(self, path: str):
        url = path if path.startswith(self.base) else self.base + path
        if not url.startswith(self.base):
            raise CollectError(f"the server sent a link off its API: {printable(url)}")
        req = urllib.request.Request(url, headers={"Authorization": f"Token {self.token}",
                                                   "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                body = r.read(MAX_BYTES + 1)
        except urllib.error.HTTPError as e:
            raise CollectError(f"{url}: HTTP {e.code} {printable(e.reason)}") from None
        except (urllib.error.URLError, OSError) as e:
            raise CollectError(f"{url}: {printable(e)}") from None
        if len(body) > MAX_BYTES:
            raise CollectError(f"{url}: more than {MAX_BYTES} bytes")
        try:
            return json.loads(body)
        except ValueError as e:
            raise CollectError(f"{url}: not JSON: {e}") from None

    def all(self, path: str) -> list[dict]:
        out: list[dict] = []
        page = self.get(path + "?limit=500")
        while True:
            if not isinstance(page, dict) or not isinstance(page.get("results"), list):
                raise CollectError(f"{self.base}{path}: not a list of results")
            out += page["results"]
            if len(out) > MAX_CASES:
                raise CollectError(f"{self.base}{path}: more than {MAX_CASES} results")
            if not page.get("next"):
                return out
            page = self.get(str(page["next"]))


def field(obj: dict, key: str, kind, where: str):
    v = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(v, kind):
        raise CollectError(f"{where}: {key}: missing or not {getattr(kind, '__name__', kind)}")
    return v


def read_job(srv: Server, job_id: int) -> dict:
    """The job and its test cases, checked."""
    where = f"job {job_id}"
    job = srv.get(f"jobs/{job_id}/")
    state = field(job, "state", str, where)
    health = field(job, "health", str, where)
    if (state, health) != ("Finished", "Complete"):
        raise CollectError(f"{where}: {printable(state)}, {printable(health)}: "
                           f"not a finished and complete job")
    try:
        definition = yaml.safe_load(field(job, "definition", str, where))
    except yaml.YAMLError as e:
        raise CollectError(f"{where}: its definition is not YAML: {e}") from None
    meta = definition.get("metadata") if isinstance(definition, dict) else None
    if not isinstance(meta, dict):
        raise CollectError(f"{where}: its definition has no metadata (not an sbrig job)")
    commit = str(meta.get("sbrig.commit", ""))
    if not COMMIT.fullmatch(commit):
        raise CollectError(f"{where}: metadata sbrig.commit {printable(commit)!r}: "
                           f"not a commit (7-40 hex digits)")
    scenario = meta.get("sbrig.scenario")
    if scenario is not None and not (NAME.fullmatch(str(scenario))
                                     and str(scenario) not in (".", "..")):
        raise CollectError(f"{where}: metadata sbrig.scenario {printable(scenario)!r}: "
                           f"not a LAVA name")
    cases = []
    for suite in srv.all(f"jobs/{job_id}/suites/"):
        sname = str(field(suite, "name", str, f"{where}: a suite"))
        sid = field(suite, "id", int, f"{where}: suite {printable(sname)}")
        for t in srv.all(f"jobs/{job_id}/suites/{sid}/tests/"):
            w = f"{where}: suite {printable(sname)}: a test case"
            try:
                meta_t = yaml.safe_load(t.get("metadata") or "") or {}
            except yaml.YAMLError:
                meta_t = {}
            tset = meta_t.get("set") if isinstance(meta_t, dict) else None
            m = t.get("measurement")
            try:
                m = float(m) if m is not None else None
            except (TypeError, ValueError):
                raise CollectError(f"{w}: measurement {printable(m)!r}: not a number") from None
            cases.append({"suite": sname, "set": str(tset) if tset else None,
                          "name": str(field(t, "name", str, w)),
                          "result": str(field(t, "result", str, w)),
                          "measurement": m, "units": str(t.get("unit") or "")})
    return {"id": job_id, "commit": commit, "scenario": scenario,
            "device": job.get("actual_device"), "cases": cases}


def label(c: dict) -> str:
    return "/".join(printable(x) for x in (c["suite"], c["set"], c["name"]) if x)


def power_reports(job: dict, rig_dir: Path) -> list[Path]:
    """The report.json of each run-N of a power job on the rig host."""
    runs = {}
    for c in job["cases"]:
        m = re.fullmatch(r"run-([0-9]{1,4})", c["set"] or "")
        if m and c["name"] == "energy_total":
            runs[int(m.group(1))] = c
    if not runs:
        return []
    if not job["scenario"]:
        raise CollectError(f"job {job['id']}: power results but no sbrig.scenario")
    base = rig_dir / "runs" / job["scenario"] / job["commit"]
    if not base.is_dir():
        raise CollectError(f"job {job['id']}: {base}: no runs of commit "
                           f"{job['commit']} on the rig host (--rig-dir)")
    out = []
    for n, case in sorted(runs.items()):
        if case["measurement"] is None or case["units"] != "mJ":
            raise CollectError(f"job {job['id']}: {label(case)}: no measurement in mJ")
        found = []
        for d in sorted(base.glob(f"*-{n}")):
            rep = d / "report" / "report.json"
            try:
                total = json.loads(rep.read_text())["energy"]["total_uJ"] / 1000
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if abs(total - case["measurement"]) <= 0.0015:
                found.append(rep)
        if not found:
            raise CollectError(f"job {job['id']}: {label(case)} {case['measurement']} mJ: "
                               f"no run of the rig host's {base}/*-{n} has that energy")
        out.append(found[-1])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 2)[2])
    ap.add_argument("job", type=int, help="the LAVA job id")
    ap.add_argument("--rig-dir", type=Path,
                    help="the device's sbrig_dir on the rig host (its runs/); default: "
                         "the local lab's device")
    ap.add_argument("--db", type=Path, help="the history database (sbrig history --db)")
    ap.add_argument("--url", help="the LAVA server (default: the local lab's)")
    ap.add_argument("--token-file", type=Path, help="a file holding the API token")
    ap.add_argument("--sbrig", default=str(BUILD / "host" / "release" / "sbrig"),
                    help="the sbrig program (default build/host/release/sbrig)")
    ap.add_argument("--json", type=Path, help="write what was read to this file")
    a = ap.parse_args(argv)
    try:
        if a.job <= 0:
            raise CollectError(f"JOB_ID {a.job}: not a job id")
        if a.url:
            if not a.token_file:
                raise CollectError("--url: needs --token-file")
            try:
                token = a.token_file.read_text().strip()
            except OSError as e:
                raise CollectError(f"--token-file: {e}") from None
            srv = Server(a.url, token)
            rig_dir = a.rig_dir
        else:
            try:
                state = json.loads(LAB_STATE.read_text())
                srv = Server(state["url"], state["api_token"])
            except (OSError, ValueError, KeyError) as e:
                raise CollectError(f"no local lab ({LAB_STATE}: {e}): make lab, "
                                   f"or --url and --token-file") from None
            rig_dir = a.rig_dir or BUILD / "lab" / "qemu-sbrig-01"
        job = read_job(srv, a.job)
        for c in job["cases"]:
            m = (f" {c['measurement']:g} {printable(c['units'])}"
                 if c["measurement"] is not None and c["units"] != "seconds" else "")
            print(f"{label(c)} {printable(c['result'])}{m}")
        reports = power_reports(job, rig_dir) if rig_dir else []
        if reports:
            if not a.db:
                raise CollectError("a power job's runs: --db names the history")
            p = subprocess.run([a.sbrig, "history", "--db", str(a.db), "add",
                                *map(str, reports)], capture_output=True, text=True,
                               timeout=300)
            sys.stdout.write(p.stdout)
            if p.returncode != 0:
                raise CollectError(f"sbrig history add: exit {p.returncode}: "
                                   f"{printable(p.stderr.strip(), 2000)}")
        if a.json:
            tmp = a.json.with_name(a.json.name + ".tmp")
            tmp.write_text(json.dumps(dict(job, reports=[str(r) for r in reports]),
                                      indent=2) + "\n")
            os.replace(tmp, a.json)
    except CollectError as e:
        print(f"collect.py: {e}", file=sys.stderr)
        return 2
    failed = [c for c in job["cases"] if c["result"] == "fail"]
    for c in failed:
        print(f"collect.py: job {a.job}: {label(c)}: fail", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
