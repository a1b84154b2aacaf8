"""Several rigs on one host: sbrigd@NAME.service, sbrig -r and status --all.

Each daemon is started with exactly the ExecStart of the template unit
host/systemd/sbrigd@.service, its specifiers expanded for the instance
as systemd does (%i the instance name as in the unit's name, %I
unescaped, %% a percent sign; any other specifier fails the test), its
absolute paths (/usr/local/sbin, /etc/sbrig, /run/sbrig) taken under the
test's directory. Each rig has its own INA226 emulator and scripted agent
(as tests/test_sbrigd.py). The units are checked by systemd-analyze verify
(no unit is started: PID 1 is not systemd here).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.capture import read_rows
from tests.skips import cannot_run
from tests.test_power import Emulator
from tests.sbrigdrig import SBRIG, SBRIGD, build, hold_handler  # noqa: F401
from tests.rigproto import FakeAgent

REPO = Path(__file__).resolve().parents[1]
TEMPLATE = REPO / "host" / "systemd" / "sbrigd@.service"
DEFAULT_UNIT = REPO / "host" / "systemd" / "sbrigd.service"


def unit_exec_start(unit: Path, instance: str) -> list[str]:
    """The ExecStart argv of @unit for @instance (its specifiers expanded)."""
    lines = [l for l in unit.read_text().splitlines()
             if l.startswith("ExecStart=")]
    assert len(lines) == 1, lines
    raw = lines[0].split("=", 1)[1]
    out, i = "", 0
    unescaped = subprocess.run(["systemd-escape", "--unescape", instance],
                               capture_output=True, text=True,
                               check=True).stdout.strip() \
        if shutil.which("systemd-escape") else instance
    while i < len(raw):
        if raw[i] != "%":
            out += raw[i]
            i += 1
            continue
        spec = raw[i + 1:i + 2]
        assert spec in ("i", "I", "%"), f"{unit}: specifier %{spec} not expanded here"
        out += {"i": instance, "I": unescaped, "%": "%"}[spec]
        i += 2
    return shlex.split(out)


class TemplateDaemon:
    """sbrigd started as sbrigd@NAME.service would start it."""

    def __init__(self, root: Path, name: str, unit: Path = TEMPLATE,
                 env: dict | None = None) -> None:
        self.argv_unit = unit_exec_start(unit, name)
        argv = []
        for a in self.argv_unit:
            if a == "/usr/local/sbin/sbrigd":
                argv.append(str(SBRIGD))
            elif a.startswith("/"):
                argv.append(str(root / a.lstrip("/")))
            else:
                argv.append(a)
        self.argv = argv
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, **(env or {})})
        self.log: list[str] = []
        self.up = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.log.append(line)
            if "link: agent" in line:
                self.up.set()
        self.up.set()

    def wait_up(self) -> None:
        assert self.up.wait(30) and self.proc.poll() is None, "".join(self.log)

    def stop(self, sig=signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        log = "".join(self.log)
        assert "ERROR: AddressSanitizer" not in log, log
        assert "runtime error" not in log, log
        return self.proc.returncode


class HostRig:
    def __init__(self, root: Path, name: str, current_uA: int,
                 unit: Path = TEMPLATE, conf_name: str | None = None,
                 env: dict | None = None) -> None:
        d = root / "work" / name
        d.mkdir(parents=True)
        self.name = name
        self.emu = Emulator(d, "--current-uA", str(current_uA), "--rate", "1000")
        self.agent = FakeAgent(boot_id=f"boot-{name}", kernel="6.1.0-test")
        self.agent.cmd_handler = hold_handler(self.agent)
        conf = root / "etc" / "sbrig" / (conf_name or f"{name}.conf")
        conf.parent.mkdir(parents=True, exist_ok=True)
        self.rig_name = "rig-" + name.replace(".", "-")   # no '.' in [rig] name
        conf.write_text(f"""[rig]
name = {self.rig_name}
[power]
uri = {self.emu.uri}
device = ina226
shunt_uohm = 100000
[target]
uri = tcp:127.0.0.1:{self.agent.port}
[timing]
ping_interval_ms = 200
""")
        self.conf = conf
        self.daemon = TemplateDaemon(root, name, unit, env)

    def close(self) -> int:
        rc = self.daemon.stop()
        self.agent.close()
        self.emu.stop()
        return rc


def sbrig(*args: str, env: dict | None = None, timeout: float = 60):
    e = {k: v for k, v in os.environ.items()
         if k not in ("SBRIG_SOCKET", "SBRIG_RIG", "SBRIG_RUN_DIR")}
    e.update(env or {})
    return subprocess.run([str(SBRIG), *args], capture_output=True, text=True,
                          env=e, timeout=timeout)


@pytest.fixture
def host(tmp_path):
    """Two template rigs, "lab-1" (20 mA) and "lab.2" (70 mA), running."""
    rigs = [HostRig(tmp_path, "lab-1", 20000), HostRig(tmp_path, "lab.2", 70000)]
    try:
        for r in rigs:
            r.daemon.wait_up()
        yield tmp_path, rigs
    finally:
        for r in rigs:
            assert r.close() in (0, -9)


def test_template_exec_start_is_the_contract():
    argv = unit_exec_start(TEMPLATE, "bench-3")
    assert argv == ["/usr/local/sbin/sbrigd", "-r", "bench-3", "-c",
                    "/etc/sbrig/bench-3.conf", "-s", "/run/sbrig/bench-3.sock"]
    # the default rig stays as it was
    assert unit_exec_start(DEFAULT_UNIT, "") == \
        ["/usr/local/sbin/sbrigd", "-c", "/etc/sbrig/rig.conf"]
    text = TEMPLATE.read_text()
    assert "ConditionPathExists=/etc/sbrig/%i.conf" in text
    assert "RuntimeDirectoryPreserve=yes" in text


def test_two_rigs_run_concurrently_with_separate_sockets(host):
    root, (a, b) = host
    run = root / "run" / "sbrig"
    assert sorted(p.name for p in run.iterdir()) == ["lab-1.sock", "lab.2.sock"]
    env = {"SBRIG_RUN_DIR": str(run)}
    # -r NAME picks the rig, and so does $SBRIG_RIG
    for r in (a, b):
        p = sbrig("-r", r.name, "status", "--json", env=env)
        assert p.returncode == 0, p.stderr
        st = json.loads(p.stdout)
        assert st["rig"]["name"] == r.rig_name
        assert st["rig"]["config"] == str(r.conf)
        p = sbrig("status", "--json", env={**env, "SBRIG_RIG": r.name})
        assert json.loads(p.stdout)["rig"]["name"] == r.rig_name
    p = sbrig("--run-dir", str(run), "-r", "lab.2", "status", "--json")
    assert json.loads(p.stdout)["rig"]["name"] == "rig-lab-2"

    # both capture at the same time, each from its own sensor
    caps = {r.name: root / f"cap-{r.name}" for r in (a, b)}
    procs = {r.name: subprocess.Popen(
        [str(SBRIG), "--run-dir", str(run), "-r", r.name, "capture", "-d",
         "2s", "-o", str(caps[r.name])], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True) for r in (a, b)}
    time.sleep(0.8)
    # while both run, status --all shows each capturing
    p = sbrig("--run-dir", str(run), "status", "--all", "--json")
    rigs = json.loads(p.stdout)["rigs"]
    assert [r["rig"] for r in rigs] == ["lab-1", "lab.2"], p.stdout
    assert all(r["status"]["capture"] is not None for r in rigs), p.stdout
    for name, pr in procs.items():
        out, err = pr.communicate(timeout=60)
        assert pr.returncode == 0, err
    for r, mA in ((a, 20.0), (b, 70.0)):
        samples = read_rows(caps[r.name], "samples", typed=True)
        assert len(samples) > 1500, len(samples)
        assert all(abs(s.current_uA / 1000 - mA) < 0.2 for s in samples)


def test_bash_completion_of_rig_names(host):
    from tests.test_packaging import complete
    root, (a, b) = host
    run = root / "run" / "sbrig"
    comp = REPO / "host/bash-completion/sbrig"
    env = {**os.environ, "SBRIG_RUN_DIR": str(run)}
    assert complete(SBRIG, ["-r", ""], env, comp) == ["lab-1", "lab.2"]
    assert complete(SBRIG, ["--rig", "lab."], env, comp) == ["lab.2"]
    env.pop("SBRIG_RUN_DIR")
    assert complete(SBRIG, ["--run-dir", str(run), "-r", "l"], env,
                    comp) == ["lab-1", "lab.2"]
    assert "--rig" in complete(SBRIG, ["--r"], env, comp)
    # after -r RIG the command and its options complete as before
    assert complete(SBRIG, ["-r", "lab-1", "sta"], env, comp) == ["status"]
    assert "--all" in complete(SBRIG, ["-r", "lab-1", "status", "--a"], env,
                               comp)


def test_status_all_lists_every_rig_problems_first(host):
    root, (a, b) = host
    run = root / "run" / "sbrig"
    # a rig whose daemon died (a stale socket: nobody listens)
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(run / "lab-0.sock"))
    s.close()
    # the default rig (sbrigd.sock) and a rig whose agent is gone
    b.agent.close()
    env = {"SBRIG_RUN_DIR": str(run)}
    deadline = time.monotonic() + 20
    while True:
        p = sbrig("status", "--all", env=env)
        lines = p.stdout.splitlines()
        if any(l.startswith("lab.2 ") and "problem" in l for l in lines) \
                or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert p.returncode == 0, p.stderr
    assert lines[0].split() == ["RIG", "STATE"]
    # problems first: the dead daemon, then the rig with a problem, then ok
    assert lines[1].startswith("lab-0 ") and "not answering" in lines[1] \
        and "Connection refused" in lines[1] and \
        str(run / "lab-0.sock") in lines[1], p.stdout
    assert lines[2].startswith("lab.2 ") and "1 problem: target: no agent" \
        in lines[2], p.stdout
    assert lines[3].startswith("lab-1 ") and " ok (rig rig-lab-1, 20.0" \
        in lines[3], p.stdout
    assert len(lines) == 4, p.stdout

    j = json.loads(sbrig("status", "--all", "--json", env=env).stdout)
    assert j["run_dir"] == str(run)
    by = {r["rig"]: r for r in j["rigs"]}
    assert [r["rig"] for r in j["rigs"]] == ["lab-0", "lab.2", "lab-1"]
    assert by["lab-0"]["answering"] is False and by["lab-0"]["status"] is None
    assert by["lab-0"]["problems"] == [by["lab-0"]["error"]]
    assert by["lab-1"]["answering"] is True and by["lab-1"]["problems"] == []
    assert by["lab-1"]["status"]["rig"]["name"] == "rig-lab-1"
    assert by["lab-1"]["socket"] == str(run / "lab-1.sock")
    assert not any(r["default"] for r in j["rigs"])


def test_default_rig_next_to_template_rigs(tmp_path):
    """sbrigd.service (the default rig) and sbrigd@lab-1 on one host."""
    run = tmp_path / "run" / "sbrig"
    # the default unit names no socket (sbrigd's default, /run/sbrig/
    # sbrigd.sock): here it is the test's, through $SBRIG_SOCKET
    rigs = [HostRig(tmp_path, "sbrigd", 30000, unit=DEFAULT_UNIT,
                    conf_name="rig.conf",
                    env={"SBRIG_SOCKET": str(run / "sbrigd.sock")})]
    try:
        rigs.append(HostRig(tmp_path, "lab-1", 20000))
        for r in rigs:
            r.daemon.wait_up()
        j = json.loads(sbrig("--run-dir", str(run), "status", "--all",
                             "--json").stdout)
        by = {r["rig"]: r for r in j["rigs"]}
        assert by["sbrigd"]["default"] is True
        assert by["sbrigd"]["status"]["rig"]["name"] == "rig-sbrigd"
        assert by["lab-1"]["default"] is False
        # precedence: -s, -r, $SBRIG_SOCKET, $SBRIG_RIG
        e = {"SBRIG_RUN_DIR": str(run), "SBRIG_SOCKET": str(run / "sbrigd.sock"),
             "SBRIG_RIG": "lab-1"}

        def name(*args, env):
            p = sbrig(*args, "status", "--json", env=env)
            assert p.returncode == 0, p.stderr
            return json.loads(p.stdout)["rig"]["name"]
        assert name(env=e) == "rig-sbrigd"
        assert name("-r", "lab-1", env=e) == "rig-lab-1"
        assert name("-r", "sbrigd", env={**e, "SBRIG_SOCKET": ""}) == "rig-sbrigd"
        assert name("-s", str(run / "sbrigd.sock"),
                    env={**e, "SBRIG_SOCKET": ""}) == "rig-sbrigd"
        assert name(env={**e, "SBRIG_SOCKET": ""}) == "rig-lab-1"
    finally:
        for r in rigs:
            assert r.close() in (0, -9)


BAD_NAMES = [
    ("a/b", "character 2 ('/') is not a letter, digit"),
    ("..", "it starts with '.'"),
    ("a..b", "characters 2-3 are '..'"),
    ("-x", "it starts with '-'"),
    ("", "it is empty"),
    ("x" * 65, "it has 65 characters, at most 64"),
    ("a b", "character 2 (' ') is not"),
    ("r\x1b[2J", "character 2 (byte 0x1b)"),
]


@pytest.mark.parametrize("name,why", BAD_NAMES)
def test_bad_rig_names_are_refused(tmp_path, name, why):
    for args, env, what in ((["-r", name], {}, "-r"),
                            ([], {"SBRIG_RIG": name}, "$SBRIG_RIG")):
        if not name and what == "$SBRIG_RIG":
            continue        # an empty $SBRIG_RIG is unset
        p = sbrig(*args, "--run-dir", str(tmp_path), "status", env=env)
        assert p.returncode == 2, p.stderr
        assert f"sbrig: {what}: bad rig name '" in p.stderr, p.stderr
        assert why in p.stderr, p.stderr
        assert "\x1b" not in p.stderr
    # 64 characters is a name (nobody answers there: exit 3, not 2)
    p = sbrig("-r", "x" * 64, "--run-dir", str(tmp_path), "status")
    assert p.returncode == 3 and f"{tmp_path}/{'x' * 64}.sock" in p.stderr


@pytest.mark.parametrize("name,why", BAD_NAMES)
def test_daemon_refuses_a_bad_instance_name(tmp_path, name, why):
    """sbrigd@NAME.service with a NAME sbrig -r would refuse: the daemon
    itself refuses it (sbrigd -r %i, the same rule), naming the argument,
    before it reads a rig description or makes a socket. (The argv is
    built here: shlex would split "a b" where systemd, whose unit names
    have no space, passes %i as one word.)"""
    conf, sock = tmp_path / "x.conf", tmp_path / "x.sock"
    conf.write_text("[rig]\nname = x\n")
    p = subprocess.run([str(SBRIGD), "-r", name, "-c", str(conf),
                        "-s", str(sock)], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith("sbrigd: -r: bad rig name '"), p.stderr
    assert why in p.stderr, p.stderr
    assert "\x1b" not in p.stderr
    assert not sock.exists()


def test_daemon_rig_name_gives_its_socket(tmp_path):
    """sbrigd -r NAME without -s listens on $SBRIG_RUN_DIR/NAME.sock."""
    conf = tmp_path / "x.conf"
    conf.write_text("[rig]\nname = x\n")
    run = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k != "SBRIG_SOCKET"}
    env["SBRIG_RUN_DIR"] = str(run)
    d = subprocess.Popen([str(SBRIGD), "-r", "lab.9", "-c", str(conf)],
                         env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    try:
        p = None
        for _ in range(200):
            if (run / "lab.9.sock").exists():
                p = sbrig("--run-dir", str(run), "-r", "lab.9", "status",
                          "--json")
                if p.returncode == 0:
                    break
            assert d.poll() is None, d.stderr.read()
            time.sleep(0.05)
        assert p is not None and p.returncode == 0, p and p.stderr
        assert json.loads(p.stdout)["rig"]["config"] == str(conf)
    finally:
        d.terminate()
        assert d.wait(20) == 0


def test_socket_and_rig_together_are_an_error(tmp_path):
    p = sbrig("-s", str(tmp_path / "x.sock"), "-r", "lab-1", "status")
    assert p.returncode == 2 and "-s SOCKET and -r RIG" in p.stderr


def test_status_all_does_not_hang_on_a_silent_daemon(tmp_path):
    # listens, never accepts nor answers (a stopped daemon)
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(tmp_path / "stuck.sock"))
    s.listen(1)
    try:
        t0 = time.monotonic()
        p = sbrig("--run-dir", str(tmp_path), "status", "--all", "--timeout",
                  "500ms", timeout=30)
        took = time.monotonic() - t0
        assert p.returncode == 0, p.stderr
        assert "stuck  not answering: sbrigd at " in p.stdout, p.stdout
        assert "did not answer within 500 ms" in p.stdout, p.stdout
        assert took < 5, took
    finally:
        s.close()
        (tmp_path / "stuck.sock").unlink()
    # a stopped daemon whose listen queue is full: a blocking connect
    # would wait for ever; it is refused at once
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(tmp_path / "full.sock"))
    s.listen(0)
    fillers = []
    try:
        while True:
            c = socket.socket(socket.AF_UNIX)
            c.setblocking(False)
            try:
                c.connect(str(tmp_path / "full.sock"))
            except BlockingIOError:
                c.close()
                break
            fillers.append(c)
            assert len(fillers) < 1000
        t0 = time.monotonic()
        p = sbrig("--run-dir", str(tmp_path), "status", "--all", timeout=30)
        assert time.monotonic() - t0 < 5
        assert "full  not answering: sbrigd at " in p.stdout, p.stdout
        assert "does not accept connections (its queue is full" in p.stdout
    finally:
        for c in fillers:
            c.close()
        s.close()
        (tmp_path / "full.sock").unlink()
    p = sbrig("--run-dir", str(tmp_path / "none"), "status", "--all")
    assert p.returncode == 3 and "No such file or directory" in p.stderr
    p = sbrig("--run-dir", str(tmp_path), "status", "--all")
    assert p.returncode == 3 and "no rig's socket" in p.stderr, p.stderr


@contextlib.contextmanager
def _mute_rigs(run_dir: Path, prefix: str, n: int, width: int = 1):
    """n listening sockets PREFIXk.sock in run_dir that never answer."""
    socks = []
    try:
        for i in range(n):
            sock = socket.socket(socket.AF_UNIX)
            sock.bind(str(run_dir / f"{prefix}{i:0{width}d}.sock"))
            sock.listen(4)
            socks.append(sock)
        yield
    finally:
        for sock in socks:
            sock.close()


def test_status_all_asks_silent_daemons_together(tmp_path):
    """Four daemons that never answer cost one --timeout, not four: the
    rigs are asked together (sbrig(1)). One after the other this took
    4 x 1.5 s = 6 s at least; the bound leaves the ASan build's start-up
    and a loaded machine 2.5 s."""
    with _mute_rigs(tmp_path, "stuck", 4):
        t0 = time.monotonic()
        p = sbrig("--run-dir", str(tmp_path), "status", "--all", "--json",
                  "--timeout", "1500ms", timeout=60)
        took = time.monotonic() - t0
        assert p.returncode == 0, p.stderr
        rigs = json.loads(p.stdout)["rigs"]
        assert sorted(r["rig"] for r in rigs) == [f"stuck{i}" for i in range(4)]
        for r in rigs:
            assert not r["answering"]
            assert "did not answer within 1500 ms" in r["error"], r
            assert r["socket"] == str(tmp_path / (r["rig"] + ".sock"))
        assert took < 4.0, f"status --all took {took:.1f} s for 4 silent daemons"


def test_status_all_many_silent_daemons_cost_one_timeout(tmp_path):
    """70 daemons that never answer (more than the 64 asked at once
    before) cost about one --timeout in all: every rig is asked at once,
    under one deadline. In batches of 64 this took two timeouts (4 s)."""
    with _mute_rigs(tmp_path, "mute", 70, 2):
        t0 = time.monotonic()
        p = sbrig("--run-dir", str(tmp_path), "status", "--all", "--json",
                  "--timeout", "2s", timeout=60)
        took = time.monotonic() - t0
        assert p.returncode == 0, p.stderr
        rigs = json.loads(p.stdout)["rigs"]
        assert sorted(r["rig"] for r in rigs) == \
            [f"mute{i:02d}" for i in range(70)]
        for r in rigs:
            assert not r["answering"]
            assert "did not answer within 2000 ms" in r["error"], r
        assert took < 1.5 * 2.0, \
            f"status --all took {took:.2f} s for 70 silent daemons"


def test_status_all_fd_limit_keeps_the_deadline(tmp_path):
    """With 40 file descriptors sbrig asks fewer rigs at once than there
    are; those not asked by the deadline are listed as such, and the
    whole still takes one --timeout."""
    import resource
    with _mute_rigs(tmp_path, "mute", 70, 2):
        env = {k: v for k, v in os.environ.items()
               if k not in ("SBRIG_SOCKET", "SBRIG_RIG", "SBRIG_RUN_DIR")}
        t0 = time.monotonic()
        p = subprocess.run(
            [str(SBRIG), "--run-dir", str(tmp_path), "status", "--all",
             "--json", "--timeout", "1s"], capture_output=True, text=True,
            env=env, timeout=60, preexec_fn=lambda: resource.setrlimit(
                resource.RLIMIT_NOFILE, (40, 40)))
        took = time.monotonic() - t0
        assert p.returncode == 0, p.stderr
        errors = [r["error"] for r in json.loads(p.stdout)["rigs"]]
        assert len(errors) == 70
        asked = [e for e in errors if "did not answer within 1000 ms" in e]
        skipped = [e for e in errors if e.startswith(
            "not asked: --timeout (1000 ms) ran out before its turn")]
        assert len(asked) + len(skipped) == 70, errors
        assert 0 < len(asked) < 70 and skipped, errors
        assert took < 1.5 * 1.0, f"status --all took {took:.2f} s"


def test_units_verify(tmp_path):
    if not shutil.which("systemd-analyze"):
        cannot_run("systemd-analyze is missing (Debian package systemd)")
    dest = tmp_path / "dest"
    subprocess.run(["make", "-C", str(REPO / "host"), "-j2", "install",
                    "PREFIX=/usr", f"DESTDIR={dest}"],
                   check=True, capture_output=True, timeout=900)
    units = dest / "lib/systemd/system"
    # the installed template runs the installed sbrigd
    assert unit_exec_start(units / "sbrigd@.service", "x")[:5] == \
        ["/usr/sbin/sbrigd", "-r", "x", "-c", "/etc/sbrig/x.conf"]
    # the units as installed, but for ExecStart's program, which is the
    # one installed in @dest (verify checks that it is executable; --root
    # would need a whole systemd tree there), and their man pages in @dest
    vdir = tmp_path / "verify"
    vdir.mkdir()
    for u in ("sbrigd.service", "sbrigd@.service"):
        (vdir / u).write_text((units / u).read_text().replace(
            "ExecStart=/usr/sbin/", f"ExecStart={dest}/usr/sbin/"))
    env = {**os.environ, "MANPATH": str(dest / "usr/share/man")}
    for u in ("sbrigd.service", "sbrigd@lab-1.service"):
        p = subprocess.run(["systemd-analyze", "verify", u], cwd=vdir,
                           capture_output=True, text=True, env=env,
                           timeout=120)
        assert p.returncode == 0 and not p.stderr.strip(), \
            f"{u}: {p.returncode}\n{p.stdout}{p.stderr}"
