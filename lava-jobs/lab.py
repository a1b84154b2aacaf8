#!/usr/bin/python3
"""lab.py - a local LAVA lab: lava-server, its scheduler and a lava-worker.

    /usr/bin/python3 lava-jobs/lab.py up        (make lab)
    /usr/bin/python3 lava-jobs/lab.py down      (make lab-down)
    /usr/bin/python3 lava-jobs/lab.py status
    /usr/bin/python3 lava-jobs/lab.py lavacli ARGS...

``up`` brings up, as processes of this user under build/lab/ (no system
service is installed, enabled or started):

* PostgreSQL 15 (Debian's postgresql-15, installed): its own cluster in
  build/lab/pg/data (initdb, pg_ctl as the unprivileged user
  ``postgres``), on 127.0.0.1 and a free port, a socket in build/lab/pg/run;
* lava-server 2023.01, *unpacked* from Debian's package (``dpkg-deb -x``
  into build/cache/lava-server/root, as lava-jobs/local.py does for its
  device-type templates), not installed: its package depends on
  systemd-sysv and its postinst wants a database and enables services.
  Its Python dependencies are Debian packages (.ci/install-deps). It runs
  with settings from the environment (DATABASE_URL, SECRET_KEY,
  LAVA_YAML_SETTINGS_*: the paths under build/lab/lava/), so nothing in
  /etc is read or written: migrations, a superuser ``sbrig`` and its API
  token, the ``qemu`` device type, the worker and the device
  ``qemu-sbrig-01`` (lava-jobs/devices/qemu-sbrig.jinja2 with this
  lab's settings: sbrig_dir build/lab/qemu-sbrig-01, two free ports, the
  rig host lava-jobs/rig_host.py with build/host/release);
* its web API under gunicorn on 127.0.0.1 and a free port, and its
  scheduler (``lava-server manage lava-scheduler``);
* ``lava-worker`` (Debian's lava-dispatcher, installed) registered with
  the server over HTTP with the worker's token (a file, mode 0600);
* an HTTP server of build/lab/www on 127.0.0.1 (the artifacts a job
  fetches).

It waits until the REST API lists the worker ``online`` and the device
idle. A second ``up`` finds what runs and starts only what does not; the
database, migrations and objects are made once. ``down`` stops every
process ``up`` started (by the pids it wrote, each checked to be that
program first) and PostgreSQL (pg_ctl stop): nothing is left running.
The lab's state (ports, the tokens) is build/lab/lab.json, mode 0600.

``lavacli ARGS`` runs Debian's lavacli with the lab's identity (a config
file under build/lab/, so the token is never on a command line).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import local  # noqa: E402

BUILD = local.BUILD
LAB = BUILD / "lab"
STATE = LAB / "lab.json"
PG = LAB / "pg"
PGBIN = Path("/usr/lib/postgresql/15/bin")
PGUSER = "postgres"             # the unprivileged user that owns the cluster
WORKER = "sbrig-lab-worker"
DEVICE = "qemu-sbrig-01"
USER = "sbrig"
PROGRAMS = ("gunicorn", "scheduler", "worker", "www")


class LabError(RuntimeError):
    pass


def log(msg: str) -> None:
    print(f"lab: {msg}", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


# ------------------------------------------------------------------ state --

def load_state() -> dict:
    try:
        return json.loads(STATE.read_text())
    except FileNotFoundError:
        return {}
    except ValueError as e:
        raise LabError(f"{STATE}: not JSON ({e}); make lab-down and remove it") from None


def save_state(state: dict) -> None:
    LAB.mkdir(parents=True, exist_ok=True)
    tmp = STATE.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(state, f, indent=2)
    os.replace(tmp, STATE)


def secret_file(path: Path, value: str) -> Path:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(value + "\n")
    return path


# ------------------------------------------------------------- PostgreSQL --

def as_pguser(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    if os.geteuid() == 0:
        cmd = ["runuser", "-u", PGUSER, "--", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def pg_running() -> bool:
    return (PG / "data" / "postmaster.pid").exists() and as_pguser(
        [str(PGBIN / "pg_ctl"), "-D", str(PG / "data"), "status"]).returncode == 0


def pg_up(state: dict) -> None:
    data = PG / "data"
    if not (data / "PG_VERSION").exists():
        shutil.rmtree(PG, ignore_errors=True)
        (PG / "run").mkdir(parents=True)
        if os.geteuid() == 0:
            shutil.chown(PG, PGUSER)
            shutil.chown(PG / "run", PGUSER)
        state["pg_password"] = secrets.token_hex(16)
        pw = PG / "pwfile"
        secret_file(pw, state["pg_password"])
        if os.geteuid() == 0:
            shutil.chown(pw, PGUSER)
        p = as_pguser([str(PGBIN / "initdb"), "-D", str(data), "-U", PGUSER, "-E", "UTF8",
                       "--locale=C.UTF-8", "--auth-local=peer",
                       "--auth-host=scram-sha-256", f"--pwfile={pw}"])
        pw.unlink()
        if p.returncode != 0:
            raise LabError(f"initdb failed:\n{p.stdout}{p.stderr}")
        state.pop("db_ready", None)
        save_state(state)
    if pg_running():
        return
    if not state.get("pg_port") or not port_free(state["pg_port"]):
        state["pg_port"] = free_port()
        save_state(state)
    p = as_pguser([str(PGBIN / "pg_ctl"), "-D", str(data), "-l", str(PG / "postgres.log"),
                   "-w", "-t", "60", "-o",
                   f"-p {state['pg_port']} -k {PG / 'run'} -c listen_addresses=127.0.0.1",
                   "start"])
    if p.returncode != 0:
        raise LabError(f"pg_ctl start failed:\n{p.stderr}\n{PG / 'postgres.log'}")
    if not state.get("db_ready"):
        sql = (f"CREATE ROLE lavaserver LOGIN PASSWORD '{state['pg_password']}';"
               "CREATE DATABASE lavaserver OWNER lavaserver;")
        for stmt in sql.split(";")[:2]:
            p = as_pguser([str(PGBIN.parent / "bin" / "psql"), "-h", str(PG / "run"),
                           "-p", str(state["pg_port"]), "-U", PGUSER, "-d", "postgres",
                           "-v", "ON_ERROR_STOP=1", "-q", "-c", stmt])
            if p.returncode != 0 and "already exists" not in p.stderr:
                raise LabError(f"psql: {stmt.split(' PASSWORD')[0]}: {p.stderr}")
        state["db_ready"] = True
        save_state(state)


def pg_down() -> None:
    if (PG / "data" / "postmaster.pid").exists():
        p = as_pguser([str(PGBIN / "pg_ctl"), "-D", str(PG / "data"), "-m", "fast",
                       "-w", "stop"])
        if p.returncode != 0 and pg_running():
            raise LabError(f"pg_ctl stop failed: {p.stderr}")


# ------------------------------------------------------------ lava-server --

def server_root() -> Path:
    """lava-server's unpacked package (build/cache/lava-server/root)."""
    return local.lava_server_device_types().parents[3]


def server_env(state: dict) -> dict:
    root = server_root()
    lava = LAB / "lava"
    env = dict(os.environ)
    env.update({
        "PYTHONPATH": str(root / "usr" / "lib" / "python3" / "dist-packages"),
        "DJANGO_SETTINGS_MODULE": "lava_server.settings.prod",
        "DATABASE_URL": (f"postgres://lavaserver:{state['pg_password']}@127.0.0.1:"
                         f"{state['pg_port']}/lavaserver"),
        "SECRET_KEY": state["secret_key"],
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "LAVA_YAML_SETTINGS_DEVICES_PATH": json.dumps(str(lava / "devices")),
        "LAVA_YAML_SETTINGS_DEVICE_TYPES_PATHS": json.dumps(
            [str(lava / "device-types"), str(root / "usr/share/lava-server/device-types")]),
        "LAVA_YAML_SETTINGS_HEALTH_CHECKS_PATH": json.dumps(str(lava / "health-checks")),
        "LAVA_YAML_SETTINGS_DISPATCHER_CONFIG_PATH": json.dumps(str(lava / "dispatcher.d")),
        "LAVA_YAML_SETTINGS_MEDIA_ROOT": json.dumps(str(lava / "media") + "/"),
        "LAVA_YAML_SETTINGS_DJANGO_LOGFILE": json.dumps(str(lava / "django.log")),
        "LAVA_YAML_SETTINGS_STATIC_ROOT": json.dumps(str(lava / "static")),
    })
    return env


def manage(state: dict, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run([sys.executable, str(server_root() / "usr/bin/lava-server"),
                        "manage", *args], env=server_env(state),
                       capture_output=True, text=True, timeout=600)
    if check and p.returncode != 0:
        raise LabError(f"lava-server manage {' '.join(args[:2])}: "
                       f"{(p.stderr or p.stdout).strip()[-2000:]}")
    return p


def resolve(path: Path) -> Path | None:
    """@path of the unpacked package as it is when installed: a link's
    target within the unpacked tree, else the installed system's file
    (Debian's django, rest_framework, libjs-* packages); None if neither."""
    root = server_root()
    seen = 0
    while path.is_symlink() and seen < 40:
        path = path.parent / os.readlink(path)
        seen += 1
        if not path.exists() and not path.is_symlink():
            try:
                path = Path("/") / Path(os.path.normpath(path)).relative_to(root)
            except ValueError:
                return None
    path = Path(os.path.normpath(path))
    return path if path.exists() else None


def static_root() -> Path:
    """The package's static files, for the web server (whitenoise reads
    every file at start): its links point into its own tree or into
    Debian's installed packages; build/lab/lava/static has each file
    linked to where it really is (a file that is nowhere, such as the
    documentation of lava-server-doc, is left out)."""
    out = LAB / "lava" / "static"
    if (out / ".complete").exists():
        return out
    shutil.rmtree(out, ignore_errors=True)

    def mirror(src: Path, dst: Path) -> None:
        dst.mkdir(parents=True, exist_ok=True)
        for entry in src.iterdir():
            where = resolve(entry)
            if where is None:
                continue
            if where.is_dir():
                mirror(where, dst / entry.name)
            else:
                (dst / entry.name).symlink_to(where)
    mirror(server_root() / "usr/share/lava-server/static", out)
    (out / ".complete").write_text("")
    return out


def device_dictionary(state: dict) -> str:
    """lava-jobs/devices/qemu-sbrig.jinja2 with this lab's settings set
    before it (its own settings take a value set already)."""
    rig = LAB / DEVICE
    opts = (f"--sbrig-bin {BUILD / 'host' / 'release'} "
            f"--scenarios {state.get('scenarios', REPO / 'rig' / 'scenarios')}")
    head = ("{# the lab's settings (lava-jobs/lab.py), then the dictionary #}\n"
            f"{{% set sbrig_dir = '{rig}' %}}\n"
            f"{{% set sbrig_target_port = {state['target_port']} %}}\n"
            f"{{% set sbrig_power_port = {state['power_port']} %}}\n"
            f"{{% set sbrig_rig_host = '{sys.executable} {HERE / 'rig_host.py'}' %}}\n"
            f"{{% set sbrig_rig_options = '{opts}' %}}\n"
            # the device is the virtual rig: its comparisons take its
            # minimum changes, this checkout's rather than the package's
            # (rig/virtual/compare.conf; lava-jobs/README.md)
            f"{{% set sbrig_compare_config = "
            f"'{REPO / 'rig' / 'virtual' / 'compare.conf'}' %}}\n")
    return head + (local.DEVICES / "qemu-sbrig.jinja2").read_text()


def server_objects(state: dict) -> None:
    """Migrations, the user and its token, the device type, the worker and
    the device: each made once."""
    lava = LAB / "lava"
    for d in ("devices", "device-types", "health-checks", "dispatcher.d", "media"):
        (lava / d).mkdir(parents=True, exist_ok=True)
    (LAB / DEVICE).mkdir(parents=True, exist_ok=True)
    static_root()
    (lava / "devices" / f"{DEVICE}.jinja2").write_text(device_dictionary(state))
    if state.get("objects_ready"):
        return
    t0 = time.monotonic()
    manage(state, "migrate", "--noinput")
    log(f"migrated the database in {time.monotonic() - t0:.1f} s")
    if manage(state, "users", "details", USER, check=False).returncode != 0:
        manage(state, "users", "add", USER, "--superuser", "--staff",
               "--passwd", secrets.token_hex(16))
    state.setdefault("api_token", secrets.token_hex(32))
    save_state(state)
    if state["api_token"] not in manage(state, "tokens", "list", "--user", USER).stdout:
        manage(state, "tokens", "add", "--user", USER, "--description", "sbrig lab",
               "--secret", state["api_token"])
    if "qemu" not in manage(state, "device-types", "list").stdout.split():
        manage(state, "device-types", "add", "qemu")
    p = manage(state, "workers", "details", WORKER, check=False)
    if p.returncode != 0:
        manage(state, "workers", "add", WORKER, "--description", "sbrig lab worker")
        p = manage(state, "workers", "details", WORKER)
    token = [ln.split(":", 1)[1].strip() for ln in p.stdout.splitlines()
             if ln.startswith("token")]
    if not token:
        raise LabError(f"lava-server manage workers details {WORKER}: no token in\n{p.stdout}")
    secret_file(LAB / "worker.token", token[0])
    if manage(state, "devices", "details", DEVICE, check=False).returncode != 0:
        manage(state, "devices", "add", DEVICE, "--device-type", "qemu",
               "--worker", WORKER, "--description", "the virtual sbrig rig")
    # no health check is defined for the device type: the device is good
    manage(state, "devices", "update", DEVICE, "--health", "GOOD")
    state["objects_ready"] = True
    save_state(state)


# -------------------------------------------------------------- processes --

def pidfile(name: str) -> Path:
    return LAB / "run" / f"{name}.pid"


def alive(name: str) -> int | None:
    """The pid of the lab's @name when that process runs, else None."""
    try:
        pid = int(pidfile(name).read_text())
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return None
    # the pid is ours only while its command line names this lab
    return pid if str(LAB).encode() in cmd or f"lab-{name}".encode() in cmd else None


def spawn(name: str, cmd: list[str], env: dict | None = None) -> None:
    if alive(name):
        return
    (LAB / "run").mkdir(parents=True, exist_ok=True)
    (LAB / "log").mkdir(parents=True, exist_ok=True)
    out = open(LAB / "log" / f"{name}.log", "ab")
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                         env=env, cwd=str(LAB), start_new_session=True)
    out.close()
    pidfile(name).write_text(f"{p.pid}\n")
    # until it has exec'd, the child's command line is still this one's
    end = time.monotonic() + 10
    while time.monotonic() < end and p.poll() is None and not alive(name):
        time.sleep(0.05)
    log(f"{name}: pid {p.pid} ({LAB / 'log' / f'{name}.log'})")


def proc_stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of @pid, None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[1])


def descendants(pid: int) -> list[int]:
    """Every process below @pid (lava-run, QEMU and the rig host run in
    sessions of their own: a process group does not hold them)."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            st = proc_stat(int(d.name))
            if st:
                children.setdefault(st[1], []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def running(pid: int) -> bool:
    st = proc_stat(pid)
    return st is not None and st[0] != "Z"


def stop(name: str, timeout: float = 30) -> None:
    """Stop the lab's @name and everything it started: SIGTERM (lava-run
    ends its job and its QEMU), then SIGKILL what is left."""
    pid = alive(name)
    if pid:
        pids = [pid] + descendants(pid)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for p in pids:
                try:
                    os.kill(p, sig)
                except ProcessLookupError:
                    pass
            end = time.monotonic() + timeout
            while time.monotonic() < end and any(running(p) for p in pids):
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass
                time.sleep(0.2)
            if not any(running(p) for p in pids):
                break
            log(f"{name}: still running after SIGTERM: "
                f"{', '.join(str(p) for p in pids if running(p))}: SIGKILL")
    pidfile(name).unlink(missing_ok=True)


def api(state: dict, path: str, timeout: float = 30):
    req = urllib.request.Request(f"{state['url']}/api/v0.2/{path.lstrip('/')}",
                                 headers={"Authorization": f"Token {state['api_token']}"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def wait_for(what: str, cond, timeout: float) -> None:
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        dead = [n for n in PROGRAMS if pidfile(n).exists() and not alive(n)]
        if dead:
            raise LabError(f"{', '.join(dead)} exited: see {LAB / 'log'}")
        try:
            if cond():
                return
        except (OSError, urllib.error.URLError, ValueError, KeyError) as e:
            last = e
        time.sleep(1)
    raise LabError(f"{what}: not within {timeout:.0f} s" + (f" ({last})" if last else "")
                   + f"; logs in {LAB / 'log'}")


def up(scenarios: Path | None = None) -> dict:
    t0 = time.monotonic()
    if not Path("/usr/bin/lava-worker").exists():
        raise LabError("lava-worker missing: apt-get install lava-dispatcher (.ci/install-deps)")
    LAB.mkdir(parents=True, exist_ok=True)
    state = load_state()
    state.setdefault("secret_key", secrets.token_urlsafe(40))
    for k in ("http_port", "www_port", "target_port", "power_port"):
        if not state.get(k) or (not alive("gunicorn") and k == "http_port"
                                and not port_free(state[k])):
            state[k] = free_port()
    if scenarios:
        state["scenarios"] = str(scenarios)
    state["url"] = f"http://127.0.0.1:{state['http_port']}"
    state["www"] = f"http://127.0.0.1:{state['www_port']}"
    save_state(state)
    pg_up(state)
    server_objects(state)
    env = server_env(state)
    import grp
    import pwd
    me = (pwd.getpwuid(os.getuid()).pw_name, grp.getgrgid(os.getgid()).gr_name)
    spawn("gunicorn", ["/usr/bin/gunicorn", "lava_server.wsgi", "--name", "lab-gunicorn",
                       "--bind", f"127.0.0.1:{state['http_port']}", "--workers", "2",
                       "--worker-class", "sync", "--timeout", "120",
                       "--pid", str(LAB / "run" / "gunicorn.master")], env)
    spawn("scheduler", [sys.executable, str(server_root() / "usr/bin/lava-server"), "manage",
                        "lava-scheduler", "--level", "INFO", "--user", me[0], "--group", me[1],
                        "--log-file", str(LAB / "log" / "scheduler.log")], env)
    (LAB / "www").mkdir(exist_ok=True)
    spawn("www", [sys.executable, "-m", "http.server", "--bind", "127.0.0.1",
                  "--directory", str(LAB / "www"), str(state["www_port"])])
    wait_for("the web API", lambda: api(state, "system/version/") is not None, 120)
    spawn("worker", ["/usr/bin/lava-worker", "--name", WORKER, "--url", state["url"] + "/",
                     "--token-file", str(LAB / "worker.token"),
                     "--worker-dir", str(LAB / "worker"), "--http-timeout", "150",
                     "--log-file", str(LAB / "log" / "worker-lava.log"), "--level", "INFO"])

    def online():
        w = api(state, f"workers/{WORKER}/")
        d = api(state, f"devices/{DEVICE}/")
        return w["state"] == "Online" and d["health"] == "Good" and d["state"] == "Idle"
    wait_for(f"the worker {WORKER} online with {DEVICE} idle", online, 120)
    state["up_seconds"] = round(time.monotonic() - t0, 1)
    log(f"up in {state['up_seconds']} s: {state['url']} (worker {WORKER} online, "
        f"device {DEVICE}), artifacts {state['www']}/")
    write_lavacli_config(state)
    return state


def down() -> None:
    for name in ("worker", "scheduler", "gunicorn", "www"):
        stop(name)
    pg_down()
    left = [n for n in PROGRAMS if alive(n)]
    if left:
        raise LabError(f"still running: {', '.join(left)}")
    log("down: nothing of the lab runs")


def write_lavacli_config(state: dict) -> Path:
    """lavacli's config (its identity ``lab``): XDG_CONFIG_HOME=build/lab/config."""
    d = LAB / "config"
    d.mkdir(exist_ok=True)
    f = d / "lavacli.yaml"
    fd = os.open(f, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump({"lab": {"uri": state["url"] + "/RPC2", "username": USER,
                           "token": state["api_token"]}}, out)
    return f


def lavacli(args: list[str], **kw) -> subprocess.CompletedProcess:
    env = dict(os.environ, XDG_CONFIG_HOME=str(LAB / "config"))
    return subprocess.run(["lavacli", "-i", "lab", *args], env=env, **kw)


def status() -> int:
    state = load_state()
    bad = 0
    for n in PROGRAMS:
        pid = alive(n)
        print(f"{n}: {'pid ' + str(pid) if pid else 'not running'}")
        bad |= not pid
    print(f"postgresql: {'running' if pg_running() else 'not running'}")
    if state.get("url") and alive("gunicorn"):
        try:
            w = api(state, f"workers/{WORKER}/")
            d = api(state, f"devices/{DEVICE}/")
            print(f"worker {WORKER}: {w['state']}, {w['health']}; "
                  f"device {DEVICE}: {d['state']}, {d['health']}; {state['url']}")
        except (OSError, urllib.error.URLError) as e:
            print(f"the web API: {e}")
            bad = 1
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    u = sub.add_parser("up", help="bring the lab up (idempotent)")
    u.add_argument("--scenarios", type=Path,
                   help="the rig host's scenarios directory (default rig/scenarios)")
    sub.add_parser("down", help="stop everything the lab runs")
    sub.add_parser("status", help="what runs; exit 1 if something does not")
    c = sub.add_parser("lavacli", help="lavacli with the lab's identity")
    c.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    try:
        if a.cmd == "up":
            up(a.scenarios.resolve() if a.scenarios else None)
        elif a.cmd == "down":
            down()
        elif a.cmd == "status":
            return status()
        else:
            return lavacli(a.args).returncode
    except (LabError, local.LocalError) as e:
        print(f"lab.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
