#!/usr/bin/python3
"""render.py - LAVA job definitions of one commit, from lava-jobs/templates/.

    /usr/bin/python3 lava-jobs/render.py DEVICE_TYPE --commit SHA \\
        --artifacts URL [--suite functional] [--suite power] \\
        [--baseline SHA] [--scenario NAME] [--runs N] [-o JOB.yaml]

DEVICE_TYPE is a template of lava-jobs/templates/ (``qemu``,
``beaglebone-black``); ``--template FILE`` renders another one. The
template gets the variables of VARIABLES below (each checked first, by the
rule of its kind), ``artifacts`` (each file of the artifacts' manifest as
a URL), ``testdefs`` (the Lava-Test Test Definitions of
lava-jobs/testdefs/, with the power suite's parameters filled in) and any
``--set NAME=VALUE``. The job is rendered with jinja2 (an undefined
variable is an error naming the template's line), parsed, checked and
written as YAML:

* every artifact URL must resolve (file:// to a file, http(s):// to a
  2xx answer of a HEAD request), and the manifest must be of the job's
  commit and of the device type's arch;
* every name LAVA restricts (test definitions, the scenario that names
  the power suite's test set) must match ``[-_a-zA-Z0-9.]+``;
* the job must pass ``lava_common.schemas.validate(strict=True)``, the
  check lava-server makes on submission.

Every error names where the input is wrong (the option, the template and
line, the job's key path, the URL) and nothing is written (``-o`` is
replaced atomically). Exit status: 0, 1 a render error, 2 usage.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import shlex
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import jinja2
import yaml

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"
TESTDEFS = HERE / "testdefs"

#: device type -> the Debian arch its artifacts are built for
DEVICE_ARCH = {"qemu": "amd64", "beaglebone-black": "armhf"}

#: device type -> the power suite's parameters that follow from it: the
#: rig channel (None: the job must name it, --rig-channel), the keypad and
#: the agent's UART (lava-jobs/testdefs/power.yaml)
DEVICE_POWER_PARAMS = {
    "qemu": {"RIG": "virtio:org.sbrig.rig", "KEYPAD": "virtio:org.sbrig.keypad",
             "AGENT_TTY": "/dev/ttyS1"},
    # real keys; the telemetry UART1 of firmware/pins.tsv; the rig host on
    # the lab's network
    "beaglebone-black": {"RIG": None, "KEYPAD": "none", "AGENT_TTY": "/dev/ttyS1"},
}
CHANNEL = re.compile(r"^(virtio:[A-Za-z0-9_.-]+|tcp:[A-Za-z0-9_.-]+:[0-9]{1,5})$")

SUITES = ("functional", "power")

#: what LAVA accepts as a test definition or test set name
LAVA_NAME = re.compile(r"^[-_a-zA-Z0-9.]+$")
SHA = re.compile(r"^[0-9a-f]{7,40}$")
URL_TIMEOUT_S = 15


class RenderError(Exception):
    """The input is wrong; the message says where."""


@dataclass(frozen=True)
class Var:
    kind: str           # sha | url | lava-name | token | int | channel | suites
    required: bool
    default: object
    help: str


#: The renderer's variables (options of the same name), checked by kind.
VARIABLES: dict[str, Var] = {
    "commit": Var("sha", True, None,
                  "the commit under test: 7 to 40 lower-case hex digits"),
    "artifacts": Var("url", True, None,
                     "URL of the directory that holds artifacts.json "
                     "(lava-jobs/artifacts.py): file://, http:// or https://"),
    "suites": Var("suites", False, ["functional"],
                  "the test definitions to run: functional, power"),
    "baseline": Var("sha", False, "",
                    "the commit whose runs the power suite compares with "
                    "(none: no regression verdict)"),
    "scenario": Var("lava-name", False, "keypad-wake",
                    "the power suite's scenario on the rig host (a LAVA name)"),
    "runs": Var("int", False, 5, "how often the power suite runs the scenario (1..100; "
                "sbrig compare needs 5 a side for a verdict)"),
    "rig_channel": Var("channel", False, "",
                       "the power suite's rig channel: virtio:PORT or tcp:HOST:PORT "
                       "(default: the device type's; beaglebone-black has none)"),
    "rig_secret_token": Var("token", False, "",
                            "a tcp: rig channel's shared secret: the name of the "
                            "submitter's LAVA remote artifact token that holds it (the job "
                            "names the token, never the secret; LAVA gives the target its "
                            "value as SBRIG_RIG_SECRET)"),
}


# ------------------------------------------------------------- variables --

def check_variable(name: str, value):
    """Return ``value`` checked (and converted) by VARIABLES[name]'s kind."""
    var = VARIABLES[name]
    where = "--" + {"suites": "suite"}.get(name, name).replace("_", "-")
    if var.kind == "sha":
        if value == "" and not var.required:
            return ""
        if not isinstance(value, str) or not SHA.match(value):
            raise RenderError(f"{where} {value!r}: not a commit SHA ({var.help})")
    elif var.kind == "url":
        scheme = urllib.parse.urlsplit(str(value)).scheme
        if scheme not in ("file", "http", "https"):
            raise RenderError(f"{where} {value!r}: not a file://, http:// or https:// URL")
        value = str(value).rstrip("/")
    elif var.kind == "lava-name":
        check_lava_name(where, value)
    elif var.kind == "token":
        if value:
            check_lava_name(where, value)
    elif var.kind == "int":
        try:
            value = int(value)
        except (TypeError, ValueError):
            raise RenderError(f"{where} {value!r}: not an integer") from None
        if not 1 <= value <= 100:
            raise RenderError(f"{where} {value}: out of range 1..100")
    elif var.kind == "channel":
        if value and not CHANNEL.match(value):
            raise RenderError(f"{where} {value!r}: want virtio:PORT or tcp:HOST:PORT")
    elif var.kind == "suites":
        for s in value:
            if s not in SUITES:
                raise RenderError(f"{where} {s!r}: no such suite (have {', '.join(SUITES)})")
        if not value:
            raise RenderError(f"{where}: no suite")
    return value


def check_lava_name(where: str, value) -> None:
    if not isinstance(value, str) or not LAVA_NAME.match(value):
        bad = "" if not isinstance(value, str) else "".join(
            sorted({c for c in value if not re.match(r"[-_a-zA-Z0-9.]", c)}))
        detail = f" (it has {bad!r})" if bad else ""
        raise RenderError(f"{where} {value!r}: not a LAVA name: only A-Z a-z 0-9 "
                          f"_ . - are allowed{detail}")


# ------------------------------------------------------------------- URLs --

def url_problem(url: str) -> str | None:
    """Why ``url`` does not resolve to a file, or None when it does."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "file":
        path = urllib.parse.unquote(parts.path)
        if not os.path.exists(path):
            return f"no such file: {path}"
        if not os.path.isfile(path):
            return f"not a regular file: {path}"
        if not os.access(path, os.R_OK):
            return f"not readable: {path}"
        return None
    if parts.scheme in ("http", "https"):
        req = urllib.request.Request(url, method="HEAD")
        try:
            with urllib.request.urlopen(req, timeout=URL_TIMEOUT_S) as resp:
                if not 200 <= resp.status < 300:
                    return f"HTTP {resp.status}"
        except urllib.error.HTTPError as e:
            return f"HTTP {e.code} {e.reason}"
        except (urllib.error.URLError, OSError) as e:
            return f"{getattr(e, 'reason', e)}"
        return None
    return f"unsupported URL scheme {parts.scheme!r}"


def load_manifest(base: str, device_type: str, commit: str) -> dict:
    """The artifacts' manifest at ``base``/artifacts.json, checked against
    the device type and the commit; returns {key: URL}."""
    url = f"{base}/artifacts.json"
    problem = url_problem(url)
    if problem:
        raise RenderError(f"--artifacts {base}: {url} does not resolve: {problem} "
                          f"(build it with lava-jobs/artifacts.py)")
    try:
        with urllib.request.urlopen(url, timeout=URL_TIMEOUT_S) as resp:
            manifest = json.loads(resp.read())
    except (OSError, ValueError) as e:
        raise RenderError(f"--artifacts: {url}: cannot read the manifest: {e}") from None
    if not isinstance(manifest, dict) or manifest.get("schema") != "sbrig-lava-artifacts":
        raise RenderError(f"--artifacts: {url}: not an sbrig-lava-artifacts manifest")
    want_arch = DEVICE_ARCH.get(device_type)
    if want_arch and manifest.get("arch") != want_arch:
        raise RenderError(f"--artifacts: {url}: the artifacts are for "
                          f"{manifest.get('arch')!r}; {device_type} jobs boot {want_arch!r} "
                          f"(lava-jobs/artifacts.py --arch {want_arch})")
    built = str(manifest.get("commit") or "")
    if built and not (built.startswith(commit) or commit.startswith(built)):
        raise RenderError(f"--artifacts: {url}: built from commit {built}, "
                          f"not {commit} (--commit)")
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        raise RenderError(f"--artifacts: {url}: files: missing or empty")
    urls = {}
    for key, entry in files.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise RenderError(f"--artifacts: {url}: files.{key}.name: missing")
        urls[key] = f"{base}/{urllib.parse.quote(entry['name'])}"
    return urls


def walk_urls(node, path=""):
    """Yield (key path, URL) of every ``url`` key in a parsed job."""
    if isinstance(node, dict):
        for k, v in node.items():
            p = f"{path}.{k}" if path else str(k)
            if k == "url" and isinstance(v, str):
                yield p, v
            else:
                yield from walk_urls(v, p)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from walk_urls(v, f"{path}[{i}]")


# -------------------------------------------------------------- testdefs --

def load_testdefs(suites: list[str], params: dict[str, dict[str, str]]) -> dict:
    """lava-jobs/testdefs/<suite>.yaml for each suite as a job carries it
    inline: its ``params`` with ``params[suite]`` set become the first
    steps of its run (``NAME='VALUE'``, shell-quoted), as the dispatcher
    would write them at the top of the test's run script. An inline
    definition can take its values no other way in LAVA 2023.01:
    lava-server's submission schema refuses an inline definition with
    ``params`` (only metadata, install, run and parse), and LAVA's job
    schema refuses ``parameters`` on an inline definition."""
    out = {}
    for suite in suites:
        path = TESTDEFS / f"{suite}.yaml"
        try:
            doc = yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError) as e:
            raise RenderError(f"{path}: {e}") from None
        doc = copy.deepcopy(doc)
        values = {k: str(v) for k, v in (doc.pop("params", None) or {}).items()}
        for key, value in params.get(suite, {}).items():
            if key not in values:
                raise RenderError(f"{path}: params: no parameter {key!r} to set")
            values[key] = str(value)
        extra = set(doc) - INLINE_KEYS
        if extra:
            raise RenderError(f"{path}: {', '.join(sorted(extra))}: an inline test "
                              f"definition may have only {', '.join(sorted(INLINE_KEYS))} "
                              f"(lava-server's submission schema)")
        for key in values:
            if not re.fullmatch(r"[A-Z_][A-Z0-9_]*", key):
                raise RenderError(f"{path}: params: {key!r} is no shell variable name")
        steps = doc.setdefault("run", {}).setdefault("steps", [])
        doc["run"]["steps"] = [f"{k}={shlex.quote(v)}" for k, v in values.items()] + steps
        out[suite] = doc
    return out


#: what lava-server's submission schema allows in an inline test definition
#: (lava_scheduler_app/schema.py, _inline_schema: it refuses any other key)
INLINE_KEYS = {"metadata", "install", "run", "parse"}


# ---------------------------------------------------------------- render --

def _template_line(exc: BaseException, template: Path) -> int | None:
    """The template line an exception was raised at (jinja2 rewrites its
    tracebacks to show template frames)."""
    line = getattr(exc, "lineno", None)
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == str(template):
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def render_template(template: Path, context: dict) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(template.parent)),
                             undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True, autoescape=False,
                             keep_trailing_newline=True)
    # JSON (a YAML flow mapping) in the order of the source, not sorted
    env.filters["tojson"] = lambda value: json.dumps(value)
    try:
        return env.get_template(template.name).render(**context)
    except jinja2.TemplateNotFound as e:
        raise RenderError(f"{template}: template not found ({e})") from None
    except jinja2.TemplateSyntaxError as e:
        raise RenderError(f"{template}:{e.lineno}: template syntax error: {e.message}") from None
    except jinja2.UndefinedError as e:
        line = _template_line(e, template)
        msg = str(e.message)
        m = re.match(r"'(\w+)' is undefined", msg)
        hint = ""
        if m:
            hint = (f" (a renderer option --{m.group(1)}, or --set {m.group(1)}=VALUE)"
                    if m.group(1) in VARIABLES else f" (--set {m.group(1)}=VALUE)")
        raise RenderError(f"{template}:{line or '?'}: {msg}{hint}") from None


def render_job(device_type: str, *, commit: str, artifacts: str,
               suites: list[str] | None = None, baseline: str = "",
               scenario: str = "keypad-wake", runs: int = 5, rig_channel: str = "",
               rig_secret_token: str = "",
               template: Path | None = None, extra: dict | None = None,
               check_urls: bool = True) -> tuple[str, dict]:
    """Render, parse and check a job; return (YAML text, parsed job).
    Raises RenderError naming what is wrong."""
    values = {"commit": commit, "artifacts": artifacts,
              "suites": list(suites or VARIABLES["suites"].default),
              "baseline": baseline, "scenario": scenario, "runs": runs,
              "rig_channel": rig_channel, "rig_secret_token": rig_secret_token}
    for name, value in values.items():
        if value is None and VARIABLES[name].required:
            raise RenderError(f"--{name}: missing ({VARIABLES[name].help})")
        values[name] = check_variable(name, value)
    template = Path(template) if template else TEMPLATES / f"{device_type}.yaml.jinja2"
    if not template.exists():
        have = ", ".join(sorted(p.name.split(".")[0] for p in TEMPLATES.glob("*.yaml.jinja2")))
        raise RenderError(f"device type {device_type!r}: no template {template} (have {have})")
    power = dict(DEVICE_POWER_PARAMS.get(device_type, {}))
    if values["rig_channel"]:
        power["RIG"] = values["rig_channel"]
    if "power" in values["suites"] and not power.get("RIG", "virtio:org.sbrig.rig"):
        raise RenderError(f"--rig-channel: a {device_type} power job needs the rig "
                          f"channel, tcp:HOST:PORT of the rig host's request server")
    if ("power" in values["suites"] and power.get("RIG", "").startswith("tcp:")
            and not values["rig_secret_token"]):
        raise RenderError(f"--rig-secret-token: a power job on the rig channel {power['RIG']} "
                          f"needs the name of the LAVA token that holds the channel's "
                          f"shared secret (lava-jobs/README.md)")
    params = {"power": dict(power, SCENARIO=values["scenario"], RUNS=values["runs"],
                            COMMIT=values["commit"], BASELINE=values["baseline"])}
    if check_urls:
        urls = load_manifest(values["artifacts"], device_type, values["commit"])
    else:
        urls = {k: f"{values['artifacts']}/{n}" for k, n in
                (("kernel", "vmlinuz"), ("ramdisk", "ramdisk.cpio.gz"),
                 ("dtb", "am335x-boneblack-sbrig.dtb"))}
    context = dict(values, device_type=device_type, artifacts=urls,
                   testdefs=load_testdefs(values["suites"], params))
    for key, value in (extra or {}).items():
        if key in context:
            raise RenderError(f"--set {key}: use the option --{key}")
        context[key] = value

    text = render_template(template, context)
    try:
        job = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark else "?"
        src = text.splitlines()[mark.line] if mark and mark.line < len(text.splitlines()) else ""
        raise RenderError(f"{template}: the rendered job is not YAML at its line "
                          f"{line}: {getattr(e, 'problem', e)}: {src!r}") from None
    if not isinstance(job, dict):
        raise RenderError(f"{template}: the rendered job is not a mapping")
    check_job(job, template, check_urls)
    header = (f"# generated by lava-jobs/render.py from {template.name} for commit "
              f"{values['commit']}; do not edit\n")
    return header + yaml.safe_dump(job, sort_keys=False, width=100), job


def check_job(job: dict, template: Path, check_urls: bool = True) -> None:
    """The rendered job's URLs, LAVA names and LAVA's own schema."""
    for i, action in enumerate(job.get("actions") or []):
        test = action.get("test") if isinstance(action, dict) else None
        for j, d in enumerate((test or {}).get("definitions") or []):
            check_lava_name(f"{template.name}: actions[{i}].test.definitions[{j}].name",
                            d.get("name"))
    if check_urls:
        for path, url in walk_urls(job.get("actions")):
            problem = url_problem(url)
            if problem:
                raise RenderError(f"{template.name}: actions{path[path.index('['):] if '[' in path else path}: "
                                  f"{url} does not resolve: {problem}")
    try:
        from lava_common.schemas import validate
    except ImportError:
        raise RenderError("lava_common is missing: apt-get install lava-common "
                          "(.ci/install-deps does)") from None
    import voluptuous
    try:
        validate(job, strict=True, extra_context_variables=[])
    except voluptuous.Invalid as e:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.path).lstrip(".")
        raise RenderError(f"{template.name}: LAVA's job schema: {where}: {e.msg}") from None


# ------------------------------------------------------------------- main --

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="variables:\n" + "\n".join(
            f"  --{ {'suites': 'suite'}.get(n, n).replace('_', '-')}: {v.help}"
            + ("" if v.default in (None, "") else f" (default {v.default})")
            for n, v in VARIABLES.items()))
    ap.add_argument("device_type", metavar="DEVICE_TYPE",
                    help="a template of lava-jobs/templates/: " + ", ".join(DEVICE_ARCH))
    ap.add_argument("--commit", help=VARIABLES["commit"].help)
    ap.add_argument("--artifacts", help=VARIABLES["artifacts"].help)
    ap.add_argument("--suite", action="append", dest="suites", choices=SUITES,
                    help="a test definition to run (repeatable; default functional)")
    ap.add_argument("--baseline", default="", help=VARIABLES["baseline"].help)
    ap.add_argument("--scenario", default="keypad-wake", help=VARIABLES["scenario"].help)
    ap.add_argument("--runs", default=5, help=VARIABLES["runs"].help)
    ap.add_argument("--rig-channel", default="", help=VARIABLES["rig_channel"].help)
    ap.add_argument("--rig-secret-token", default="", help=VARIABLES["rig_secret_token"].help)
    ap.add_argument("--template", type=Path, help="render this template instead")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="another template variable (a string)")
    ap.add_argument("--no-url-check", action="store_true",
                    help="do not fetch the manifest nor check the URLs "
                         "(artifacts not uploaded yet; the files' default names)")
    ap.add_argument("-o", "--output", type=Path, help="write the job here (default stdout)")
    args = ap.parse_args(argv)
    extra = {}
    for item in args.set:
        name, eq, value = item.partition("=")
        if not eq or not re.match(r"^[A-Za-z_]\w*$", name):
            ap.error(f"--set {item!r}: want NAME=VALUE")
        extra[name] = value
    try:
        text, _ = render_job(args.device_type, commit=args.commit, artifacts=args.artifacts,
                             suites=args.suites, baseline=args.baseline,
                             scenario=args.scenario, runs=args.runs,
                             rig_channel=args.rig_channel,
                             rig_secret_token=args.rig_secret_token,
                             template=args.template, extra=extra,
                             check_urls=not args.no_url_check)
    except RenderError as e:
        print(f"render.py: {e}", file=sys.stderr)
        return 1
    if args.output:
        tmp = args.output.with_name(f".{args.output.name}.tmp")
        tmp.write_text(text)
        os.replace(tmp, args.output)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
