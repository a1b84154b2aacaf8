#!/usr/bin/python3
"""vrig.py - the virtual rig: a QEMU target, its agent and an INA226 emulator.

Boots the amd64 target through the tests/vm harness (Debian's kernel,
suspend_block loaded with keypad_scan=1, the virtual keypad
``vkeypad``, the kernel's test_power supply with the virtual charger
``vcharger``, the agent ``sbagent --input`` on the guest's ttyS1), and
serves everything sbrigd needs as plain URIs:

    target link   ttyS1 as a ser2net-style raw TCP port
                  (QEMU ``-serial tcp:127.0.0.1:PORT,server=on,wait=off``)
    keys,         a QMP-speaking socket of vrig's own (LineProxy), for
    charger       sbrigd's ``qmp:`` lines: key lines (input-send-event),
                  the keypad interrupt (below); the charger line
                  (__org.sbrig_charger-set), the charger-detect line (below)
    power         rig/virtual/ina226_iiod.py on a TCP port, its current
                  following PowerModel (below), driven by the guest's state

The keypad interrupt: QEMU resets its devices when it wakes the guest
from S3, so a PS/2 key that wakes it reaches no driver. The keys are
instead a virtio-serial port (org.sbrig.keypad) read in the guest by
``vkeypad`` (rig/virtual/target/vkeypad.c), which reports each line
("d CODE", "u CODE") as a key event of a uinput keyboard. It watches the
port with EPOLLWAKEUP, so the bytes' arrival during the resume activates
a kernel wakeup source that keeps the guest up until the key has been
reported (as gpio-keys holds one from its interrupt on a real target).
A key going down while the guest sleeps
first wakes it (QMP system_wakeup, as the key's interrupt line would),
then, once QEMU has reset the devices (its WAKEUP event), the line is
written: QEMU holds it until the resuming guest's virtio driver takes it.
The line comes after the wake, so an opportunistic guest can suspend again
before it (seen: 48 ms from QEMU's WAKEUP to its next SUSPEND while the
rig host, at a load average of 4, took 49 ms to hear the WAKEUP): the line
then waits in QEMU and the press is lost. A real key's interrupt is
latched by its driver during the resume, so a guest that is suspended
again once the line is written is woken again (at most twice, counted in
``LineProxy.rewakes``), and takes the line.
The whole chain of seed 002 then runs in the guest: keypad-scan (held by
suspend_block's keypad_scan from key down to key up), the sbevent queue's
"evdev", sbagent's process-input-events, and suspend again.

The charger-detect line works the same way on a second port
(org.sbrig.charger): plugging wakes a sleeping guest (system_wakeup, as
gpio-charger's interrupt would), then the line "c 1" ("c 0" unplugged)
is written; ``vcharger`` (rig/virtual/target/vcharger.c), watching the
port with EPOLLWAKEUP, writes test_power's ac_online, whose
power_supply_changed() holds the supply's wakeup source until its
notifications have run, and the guest suspends again after them.

It writes DIR/rig.conf (rig/virtual.conf with the ports and paths it
chose) and can start sbrigd on it (DIR/sbrigd.sock). The emulator's ground
truth (every interval of samples it emitted, with the model's state and the
exact energy; format in ina226_iiod.py) goes to DIR/power-truth.jsonl
(``truth=``/``--truth FILE``; for ``make demo``: build/demo/vrig/).

    /usr/bin/python3 rig/virtual/vrig.py up [--sbrigd] [--dir build/vrig]

stays in the foreground until Ctrl-C. From Python (tests, demos)::

    with VirtualRig(workdir, sbrigd=True) as vr:
        vr.vm.run_ok("...")          # the guest's harness shell
        vr.conf, vr.socket           # rig.conf, sbrigd's socket

Power model (constants in PowerModel, documented in rig/virtual/README.md):
a sampler thread asks QEMU for its run state (QMP query-status) and reads
the CPU time of all of QEMU's threads (/proc/PID/task/*/schedstat, ns)
every SAMPLE_S. ``suspended`` (S3) draws SUSPEND_UA; ``running`` draws
IDLE_UA plus (BUSY_UA - IDLE_UA) x the share of one CPU QEMU used over
the last interval (capped at 1); any other state (paused, shutdown)
draws 0. The emulator's samples read this history at their own time
stamps, so the trace lags the guest by at most one sampler interval.
"""

from __future__ import annotations

import argparse
import bisect
import fcntl
import glob
import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.vm.build import build_all  # noqa: E402
from tests.vm.qemu import Vm  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "ina226_iiod", Path(__file__).with_name("ina226_iiod.py"))
ina226_iiod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ina226_iiod)

TEMPLATE = REPO / "rig" / "virtual.conf"
# the input-event handler of seed 002 from the start (process-input-events)
AGENT = "sbagent -d /dev/ttyS1 --input"
KEY_POWER = 116
#: QEMU qcodes sbrigd's qmp: key lines send (host/lib/gpio.c) -> Linux
#: input key codes, for the keypad port
QCODE_KEYS = {"power": 116, "volumeup": 115, "volumedown": 114, "esc": 1,
              "ret": 28, "spc": 57, "up": 103, "down": 108, "left": 105,
              "right": 106, "menu": 139, "home": 102, "back": 158,
              **{c: 30 + i for i, c in enumerate("asdfghjkl")},
              **{c: 16 + i for i, c in enumerate("qwertyuiop")},
              **{c: 44 + i for i, c in enumerate("zxcvbnm")},
              **{str((i + 1) % 10): 2 + i for i in range(10)}}
KEYPAD_PORT = "org.sbrig.keypad"
CHARGER_PORT = "org.sbrig.charger"
#: the module's policies and the states its "state" file takes
#: (kernel-module/Documentation/suspend-block.rst)
POLICIES = ("forced", "opportunistic")
STATES = ("on", "mem", "freeze", "standby")
#: the running rig's files in its work dir: the lock (its pid; held while
#: it runs), what it serves (JSON, written once it is up), its log
#: (up --detach)
PID_FILE, INFO_FILE, LOG_FILE = "vrig.pid", "vrig.json", "vrig.log"
#: the downstream QMP command of sbrigd's qmp: charger line (host/lib/gpio.c)
CHARGER_COMMAND = "__org.sbrig_charger-set"


class PowerModel:
    """Supply current of the virtual target from its real state.

    ``sample(t_ns)`` is called by the emulator with a sample's time stamp
    on the emulator's clock; the history is kept on CLOCK_MONOTONIC, so a
    sample is looked up by its age (``now_fn() - t_ns``)."""

    SUSPEND_UA = 3_000      # S3: only the RAM in self-refresh and the PMIC
    IDLE_UA = 60_000        # running, CPU idle
    BUSY_UA = 400_000       # running, one CPU fully busy
    BUS_UV = 5_000_000      # USB-style 5 V supply
    SAMPLE_S = 0.025        # sampler period

    def __init__(self) -> None:
        self.bus_uV = self.BUS_UV
        self.now_fn = lambda: time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        self._lock = threading.Lock()   # protects _t, _ua and _st
        self._t: list[int] = [0]
        self._ua: list[int] = [self.IDLE_UA]
        self._st: list[str] = ["unknown"]
        self.status = "unknown"
        self.cpu_share = 0.0

    def current_for(self, status: str, cpu_share: float) -> int:
        if status == "suspended":
            return self.SUSPEND_UA
        if status != "running":
            return 0
        share = min(1.0, max(0.0, cpu_share))
        return round(self.IDLE_UA + (self.BUSY_UA - self.IDLE_UA) * share)

    def record(self, t_mono_ns: int, status: str, cpu_share: float) -> int:
        ua = self.current_for(status, cpu_share)
        with self._lock:
            self.status, self.cpu_share = status, cpu_share
            self._t.append(t_mono_ns)
            self._ua.append(ua)
            self._st.append(status)
            if len(self._t) > 100_000:          # ~40 min at 25 ms
                del self._t[:50_000], self._ua[:50_000], self._st[:50_000]
        return ua

    def current_at(self, t_mono_ns: int) -> int:
        with self._lock:
            i = bisect.bisect_right(self._t, t_mono_ns) - 1
            return self._ua[max(i, 0)]

    # --- the emulator's model interface ---------------------------------
    def sample(self, t_ns: int) -> tuple[int, int]:
        return self.sample_state(t_ns)[:2]

    def sample_state(self, t_ns: int) -> tuple[int, int, str]:
        """sample() and the QEMU run state it came from (the ground truth)."""
        age = self.now_fn() - t_ns
        mono = time.clock_gettime_ns(time.CLOCK_MONOTONIC) - age
        with self._lock:
            i = max(bisect.bisect_right(self._t, mono) - 1, 0)
            return self._ua[i], self.bus_uV, self._st[i]

    def set(self, name: str, value: int) -> None:
        if name != "bus_uV":
            raise KeyError(f"{name} follows the target (only bus_uV can be set)")
        self.bus_uV = value


def qemu_cpu_ns(pid: int) -> int:
    """CPU time (ns) of all of process @pid's threads so far."""
    total = 0
    for path in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(path) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass            # a thread that just ended
    return total


def follow_qemu(model: PowerModel, pid: int, status_fn, stop: threading.Event) -> None:
    """The power model's sampler (a thread's body): every model.SAMPLE_S
    until @stop, QEMU @pid's run state (``status_fn()``, QMP query-status;
    "unknown" when it fails) and the CPU time its threads used since the
    last sample, recorded for the interval just measured."""
    last_t = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    last_cpu = qemu_cpu_ns(pid)
    while not stop.wait(model.SAMPLE_S):
        try:
            status = status_fn()
        except Exception:       # QEMU gone or shutting down
            status = "unknown"
        now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        cpu = qemu_cpu_ns(pid)
        # the interval just measured is what the samples inside it show
        model.record(last_t, status, (cpu - last_cpu) / max(1, now - last_t))
        last_t, last_cpu = now, cpu


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_rig_conf(path: Path, power_port: int, target_port: int,
                   qmp_path: str, charger: bool = True) -> None:
    """rig/virtual.conf with this rig's URIs and the lines' QMP socket
    (without its [charger] for a target that has no charger port)."""
    text = TEMPLATE.read_text()
    section = None
    out = []
    for line in text.splitlines():
        m = re.match(r"\s*\[([^\]]+)\]", line)
        if m:
            section = m.group(1)
        if section == "charger" and not charger:
            continue
        key = line.split("=", 1)[0].strip() if "=" in line else None
        if section == "power" and key == "uri":
            line = f"uri = ip:127.0.0.1:{power_port}"
        elif section == "target" and key == "uri":
            line = f"uri = tcp:127.0.0.1:{target_port}"
        elif section == "target" and key == "state_uri":
            line = f"state_uri = qmp:{qmp_path}"
        elif (section and (section.startswith("key:") or section == "charger")
              and key == "chip"):
            line = f"chip = qmp:{qmp_path}"
        out.append(line)
    out.insert(0, f"# generated by rig/virtual/vrig.py from {TEMPLATE.relative_to(REPO)}")
    path.write_text("\n".join(out) + "\n")


class LineProxy:
    """The rig lines' QMP socket: speaks enough QMP for sbrigd's qmp: lines
    (greeting, qmp_capabilities, input-send-event for keys and
    __org.sbrig_charger-set for the charger) and its machine witness
    (query-status, answered with QEMU's own) and turns each key transition
    into the keypad interrupt and each charger change into the
    charger-detect line described in the module docstring. Clients are
    served each in a thread."""

    def __init__(self, path: str, rig: "VirtualRig") -> None:
        self.path = path
        self.rig = rig
        self.port: socket.socket | None = None     # the keypad's chardev
        self.charger_port: socket.socket | None = None  # the charger's
        self.port_lock = threading.Lock()           # protects port writes
        self.lines: list[str] = []                  # every line written
        self.plugged = False                        # the charger's state
        # the guests woken again because they suspended before their line
        # (the module docstring), and the line each time
        self.rewakes: list[str] = []
        self.listener = socket.socket(socket.AF_UNIX)
        self.listener.bind(path)
        self.listener.listen(4)
        self.listener.settimeout(0.2)

    @staticmethod
    def connect_port(path: str, timeout: float = 30) -> socket.socket:
        """A virtio-serial port's chardev socket (QEMU listens on it)."""
        end = time.monotonic() + timeout
        while True:
            try:
                s = socket.socket(socket.AF_UNIX)
                s.connect(path)
                return s
            except OSError:
                s.close()
                if time.monotonic() > end:
                    raise
                time.sleep(0.05)

    def serve(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except (socket.timeout, OSError):
                continue
            threading.Thread(target=self._client, args=(conn, stop),
                             name="vrig-keys", daemon=True).start()

    def close(self) -> None:
        self.listener.close()
        for p in (self.port, self.charger_port):
            if p:
                p.close()

    def _wake(self) -> None:
        """The line's wake interrupt: a guest in S3 is woken, and the line
        is written once QEMU has reset its devices (its WAKEUP event)."""
        vm = self.rig.vm
        if vm.query_status() == "suspended":
            mark = vm.qmp_mark()
            vm.system_wakeup()
            vm.wait_qmp_event("WAKEUP", timeout=10, since=mark)

    def _write(self, port: socket.socket, line: str) -> None:
        with self.port_lock:
            port.sendall(line.encode())
            self.lines.append(line)

    def _wake_for(self, line: str) -> None:
        """After a wake's @line was written: a guest that is suspended
        again did not take it (QEMU holds it), so wake it again (at most
        twice; the module docstring)."""
        for _ in range(2):
            if self.rig.vm.query_status() != "suspended":
                return
            self.rewakes.append(line)
            self._wake()

    def key(self, code: int, down: bool) -> None:
        """A key transition: wake a sleeping guest first, then the line."""
        line = f"{'d' if down else 'u'} {code}\n"
        if down:
            self._wake()
        self._write(self.port, line)
        if down:
            self._wake_for(line)

    def charger(self, plugged: bool) -> None:
        """A charger change: a detect interrupt wakes a sleeping guest
        (plugging and unplugging both, as gpio-charger's both-edge
        interrupt does), then the line."""
        if self.charger_port is None:
            raise ValueError("this rig's target has no charger port")
        self._wake()
        self._write(self.charger_port, f"c {int(plugged)}\n")
        self._wake_for(f"c {int(plugged)}\n")
        self.plugged = plugged

    def _client(self, conn: socket.socket, stop: threading.Event) -> None:
        import json
        greeting = {"QMP": {"version": {"qemu": {"major": 7, "minor": 2, "micro": 0},
                                        "package": "sbrig vrig keypad"},
                            "capabilities": []}}
        with conn, conn.makefile("rwb") as f:
            f.write((json.dumps(greeting) + "\n").encode())
            f.flush()
            for raw in f:
                if stop.is_set():
                    return
                try:
                    req = json.loads(raw)
                    cmd = req.get("execute")
                    ans: dict = {"return": {}}
                    if cmd == "input-send-event":
                        for ev in req.get("arguments", {}).get("events", []):
                            data = ev.get("data", {})
                            qcode = data.get("key", {}).get("data")
                            if ev.get("type") != "key" or qcode not in QCODE_KEYS:
                                raise ValueError(f"no keypad key {qcode!r}")
                            self.key(QCODE_KEYS[qcode], bool(data.get("down")))
                    elif cmd == "query-status":
                        # the machine's run state, a witness of the
                        # guest's sleep (sbrigd's [target] state_uri)
                        st = self.rig.vm.query_status()
                        ans = {"return": {"status": st,
                                          "running": st == "running",
                                          "singlestep": False}}
                    elif cmd == CHARGER_COMMAND:
                        plugged = req.get("arguments", {}).get("plugged")
                        if not isinstance(plugged, bool):
                            raise ValueError("'plugged' must be true or false")
                        self.charger(plugged)
                    elif cmd != "qmp_capabilities":
                        raise KeyError(f"command {cmd!r} not found")
                except Exception as e:     # answered as QMP errors
                    ans = {"error": {"class": "GenericError", "desc": str(e)}}
                if isinstance(req, dict) and "id" in req:
                    ans["id"] = req["id"]
                f.write((json.dumps(ans) + "\n").encode())
                f.flush()


class VirtualRig:
    """The virtual rig as a context manager (see the module docstring).

    ``power_port``/``target_port`` 0 pick free ports; ``sbrigd`` starts
    the daemon (``sbrigd_bin``: default build/host/release/sbrigd);
    ``truth`` is where the emulator's ground truth goes (default
    WORKDIR/power-truth.jsonl, None: not written)."""

    def __init__(self, workdir: Path | str, *, power_port: int = 0,
                 target_port: int = 0, sbrigd: bool = False,
                 sbrigd_bin: Path | str | None = None, name: str = "vrig",
                 sbrigd_args: list[str] | None = None,
                 verbose: bool = False,
                 truth: Path | str | None = "power-truth.jsonl",
                 policy: str | None = None, state: str | None = None) -> None:
        self.dir = Path(workdir).resolve()
        self.power_port = power_port
        self.target_port = target_port or free_port()
        self.want_sbrigd = sbrigd
        self.sbrigd_bin = Path(sbrigd_bin or REPO / "build/host/release/sbrigd")
        self.name = name
        self.verbose = verbose
        self.sbrigd_args = list(sbrigd_args or [])
        for what, val, ok in (("policy", policy, POLICIES), ("state", state, STATES)):
            if val is not None and val not in ok:
                raise ValueError(f"{what} {val!r}: one of {', '.join(ok)}")
        self.policy, self.state = policy, state
        self.qmp_path = str(self.dir / "qmp.sock")          # keys, charger
        self.keypad_path = str(self.dir / "keypad.sock")    # virtio ports
        self.charger_path = str(self.dir / "charger.sock")
        self.keys: LineProxy | None = None
        self.keypad = None                                  # guest's vkeypad
        self.vcharger = None                                # guest's vcharger
        self.conf = self.dir / "rig.conf"
        self.socket = str(self.dir / "sbrigd.sock")
        self.model = PowerModel()
        self.truth_path = None if truth is None else self.dir / truth
        self.truth = None                   # ina226_iiod.TruthRecorder
        self.chip = None                    # ina226_iiod.Ina226
        self.vm: Vm | None = None
        self.server = None
        self.sbrigd: subprocess.Popen | None = None
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # --- lifecycle ---------------------------------------------------------
    def start(self) -> "VirtualRig":
        self.dir.mkdir(parents=True, exist_ok=True)
        for p in (self.qmp_path, self.keypad_path, self.charger_path, self.socket):
            if os.path.exists(p):
                os.unlink(p)
        try:
            self._start_emulator()
            self.vm = Vm("amd64", build_all("amd64"), name=self.name, extra_qemu_args=[
                "-serial", f"tcp:127.0.0.1:{self.target_port},server=on,wait=off",
                "-device", "virtio-serial-pci,id=vser",
                "-chardev", f"socket,id=keypad,path={self.keypad_path},server=on,wait=off",
                "-device", f"virtserialport,bus=vser.0,chardev=keypad,name={KEYPAD_PORT}",
                "-chardev", f"socket,id=charger,path={self.charger_path},server=on,wait=off",
                "-device", f"virtserialport,bus=vser.0,chardev=charger,name={CHARGER_PORT}"])
            self.vm.start()
            self._start_keys()
            self.vm.load_module("suspend_block", keypad_scan=1)
            self.vm.run_ok("modprobe virtio_pci; modprobe virtio_console")
            self.vm.run_ok("modprobe uinput")
            self.keypad = self.vm.start_bg(f"vkeypad /dev/{self._port_node(KEYPAD_PORT)}")
            self.keypad.wait_output("vkeypad ready", timeout=30)
            # the charger: a real power supply, unplugged at the start
            self.vm.load_module("test_power", ac_online="off")
            self.vcharger = self.vm.start_bg(
                f"vcharger /dev/{self._port_node(CHARGER_PORT)}")
            self.vcharger.wait_output("vcharger ready", timeout=30)
            self.agent = self.vm.start_bg(AGENT + (" -v" if self.verbose else ""))
            self._start_sampler()
            # the power model follows the target from its first sample on
            end = time.monotonic() + 10
            while self.model.status == "unknown" and time.monotonic() < end:
                time.sleep(self.model.SAMPLE_S)
            write_rig_conf(self.conf, self.power_port, self.target_port, self.qmp_path)
            if self.want_sbrigd:
                self.start_sbrigd()
                # the agent's hello must reach sbrigd while the target is
                # up: a state that suspends it comes after
                self.wait_link_up()
            self._set_policy_state()
        except BaseException:
            self.stop()
            raise
        return self

    def _set_policy_state(self) -> None:
        """The target's policy and requested state (--policy, --state).
        In the background: a state that suspends the guest freezes the
        shell's command before it could answer."""
        cmds = []
        if self.policy:
            cmds.append(f"sbctl policy {self.policy}")
        if self.state:
            cmds.append(f"sbctl state {self.state}")
        if cmds:
            self.vm.start_bg(" && ".join(cmds))

    def _port_node(self, name: str) -> str:
        """The guest's node of virtio port @name (no udev in the guest, so
        no /dev/virtio-ports/NAME link)."""
        port = self.vm.run_ok(
            "p=; for i in $(seq 100); do p=$(grep -lx "
            f"{name} /sys/class/virtio-ports/*/name 2>/dev/null); "
            "[ -n \"$p\" ] && break; usleep 50000; done; "
            "p=${p%/name}; echo ${p##*/}").strip()
        if not port:
            raise RuntimeError(f"no virtio port {name} in the guest")
        return port

    def _start_keys(self) -> None:
        self.keys = LineProxy(self.qmp_path, self)
        self.keys.port = LineProxy.connect_port(self.keypad_path)
        self.keys.charger_port = LineProxy.connect_port(self.charger_path)
        t = threading.Thread(target=self.keys.serve, args=(self._stop,),
                             name="vrig-keys-accept", daemon=True)
        t.start()
        self._threads.append(t)

    def _start_emulator(self) -> None:
        if self.truth_path:
            self.truth = ina226_iiod.TruthRecorder(self.truth_path)
        chip = self.chip = ina226_iiod.Ina226(self.model, 893, self.truth)
        self.model.now_fn = chip.now_ns
        self.server = ina226_iiod.Server(("127.0.0.1", self.power_port), chip)
        self.power_port = self.server.server_address[1]
        t = threading.Thread(target=self.server.serve_forever,
                             kwargs={"poll_interval": 0.2}, name="vrig-ina226",
                             daemon=True)
        t.start()
        self._threads.append(t)

    def _start_sampler(self) -> None:
        t = threading.Thread(target=follow_qemu, name="vrig-power", daemon=True,
                             args=(self.model, self.vm.proc.pid, self.vm.query_status,
                                   self._stop))
        t.start()
        self._threads.append(t)

    def start_sbrigd(self) -> None:
        log = open(self.dir / "sbrigd.log", "ab")
        argv = [str(self.sbrigd_bin), "-c", str(self.conf), "-s", self.socket,
                *self.sbrigd_args]
        if self.verbose:
            argv.append("-v")
        self.sbrigd = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                       stderr=subprocess.STDOUT)
        log.close()
        end = time.monotonic() + 30
        while time.monotonic() < end:
            if self.sbrigd.poll() is not None:
                raise RuntimeError(f"sbrigd exited ({self.sbrigd.returncode}); "
                                   f"see {self.dir / 'sbrigd.log'}:\n"
                                   + (self.dir / "sbrigd.log").read_text()[-2000:])
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(self.socket)
                    return
            except OSError:
                time.sleep(0.05)
        raise TimeoutError(f"sbrigd did not open {self.socket} within 30 s")

    def wait_link_up(self, timeout: float = 60) -> None:
        """Until sbrigd's status says the agent's link is connected."""
        end = time.monotonic() + timeout
        while True:
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.settimeout(10)
                    s.connect(self.socket)
                    s.sendall(b"status\n")
                    text = b""
                    while not re.search(rb"^(ok|err)", text, re.M):
                        chunk = s.recv(65536)
                        if not chunk:
                            break
                        text += chunk
                if re.search(rb"^data link\.connected: yes$", text, re.M):
                    return
            except OSError:
                pass
            if time.monotonic() > end:
                raise TimeoutError(f"the agent's link did not come up in {timeout} s; "
                                   f"see {self.dir / 'sbrigd.log'}")
            time.sleep(0.1)

    def stop(self) -> None:
        self._stop.set()
        if self.sbrigd and self.sbrigd.poll() is None:
            self.sbrigd.send_signal(signal.SIGTERM)
            try:
                self.sbrigd.wait(15)
            except subprocess.TimeoutExpired:
                self.sbrigd.kill()
                self.sbrigd.wait()
        if self.vm:
            self.vm.shutdown()
        if self.keys:
            self.keys.close()
        if self.server:
            self.server.stop.set()
            self.server.shutdown()
            self.server.server_close()
        for t in self._threads:
            t.join(5)
        if self.truth:
            with (self.chip.lock if self.chip else threading.Lock()):
                self.truth.close()        # no stream is emitting meanwhile

    def __enter__(self) -> "VirtualRig":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # --- for tests and demos ------------------------------------------------
    @property
    def power_uri(self) -> str:
        return f"ip:127.0.0.1:{self.power_port}"

    @property
    def target_uri(self) -> str:
        return f"tcp:127.0.0.1:{self.target_port}"

    def describe(self) -> str:
        lines = [f"virtual rig in {self.dir}",
                 f"  target link  {self.target_uri}  (guest ttyS1, sbagent)",
                 f"  power        {self.power_uri}  (INA226 emulator, ina226)",
                 f"  keys         qmp:{self.qmp_path}  (keypad port {KEYPAD_PORT})",
                 f"  charger      qmp:{self.qmp_path} line 0  (port {CHARGER_PORT}, "
                 "test_power's ac_online)",
                 f"  rig config   {self.conf}"]
        if self.truth_path:
            lines.append(f"  power truth  {self.truth_path}  (what the emulator emitted)")
        if self.sbrigd:
            lines.append(f"  sbrigd       {self.socket}  (log {self.dir / 'sbrigd.log'})")
            lines.append(f"  try:         build/host/release/sbrig -s {self.socket} status")
        else:
            lines.append(f"  start:       build/host/release/sbrigd -c {self.conf} "
                         f"-s {self.socket}")
        return "\n".join(lines)


def running_pid(workdir: Path) -> int | None:
    """The pid of the ``up`` that runs a rig in @workdir, or None: the pid
    file's lock is held exactly while one runs (a killed one leaves the
    file, not the lock)."""
    try:
        f = open(Path(workdir) / PID_FILE)
    except FileNotFoundError:
        return None
    with f:
        try:
            fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                return int(f.read().strip() or 0) or None
            except ValueError:
                return None
        return None


def _take_lock(workdir: Path):
    """Lock @workdir for this process (the pid file stays open and locked
    until it exits); raise RuntimeError naming the rig that has it."""
    workdir.mkdir(parents=True, exist_ok=True)
    f = open(workdir / PID_FILE, "a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        pid = running_pid(workdir)
        raise RuntimeError(f"a virtual rig already runs in {workdir} (pid {pid}): "
                           f"vrig.py down --dir {workdir}") from None
    f.truncate(0)
    f.write(f"{os.getpid()}\n")
    f.flush()
    return f


def _write_info(vr: VirtualRig, started: float) -> str:
    """DIR/vrig.json: what the running rig serves (written atomically).
    Returns the target's state it wrote."""
    info = {"pid": os.getpid(), "dir": str(vr.dir), "started": started,
            "conf": str(vr.conf), "power_uri": vr.power_uri,
            "target_uri": vr.target_uri, "qmp": vr.qmp_path,
            "sbrigd_socket": vr.socket if vr.sbrigd else None,
            "policy": vr.policy, "state": vr.state,
            "target": vr.model.status, "description": vr.describe()}
    tmp = vr.dir / f".{INFO_FILE}.tmp"
    tmp.write_text(json.dumps(info, indent=1) + "\n")
    os.replace(tmp, vr.dir / INFO_FILE)
    return info["target"]


def _read_info(workdir: Path) -> dict | None:
    try:
        return json.loads((workdir / INFO_FILE).read_text())
    except (OSError, ValueError):
        return None


def cmd_up(args) -> int:
    if args.detach:
        return _up_detached(args)
    try:
        lock = _take_lock(args.dir)
    except RuntimeError as e:
        print(f"vrig: {e}", file=sys.stderr)
        return 1
    (args.dir / INFO_FILE).unlink(missing_ok=True)
    stop = threading.Event()
    up = False

    def on_signal(signum, _frame):
        # before the rig is up, abort the start (it cleans up after
        # itself); then ask the loop below to stop. Both signals, also
        # when started in the background by a shell (which leaves SIGINT
        # ignored, and Python then keeps it so)
        if not up:
            raise KeyboardInterrupt
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        vr = VirtualRig(args.dir, power_port=args.power_port,
                        target_port=args.target_port, sbrigd=args.sbrigd,
                        sbrigd_bin=args.sbrigd_bin, verbose=args.verbose,
                        truth=args.truth, policy=args.policy, state=args.state)
        with vr:
            up = True
            started = time.time()
            target = _write_info(vr, started)
            print(vr.describe(), flush=True)
            while not stop.wait(1.0):
                if not vr.vm.is_alive():
                    print("vrig: QEMU is gone", file=sys.stderr)
                    return 1
                if vr.sbrigd and vr.sbrigd.poll() is not None:
                    print(f"vrig: sbrigd exited ({vr.sbrigd.returncode})",
                          file=sys.stderr)
                    return 1
                if vr.model.status != target:
                    target = _write_info(vr, started)
            print("vrig: stopping", flush=True)
    except KeyboardInterrupt:
        print("vrig: interrupted", file=sys.stderr, flush=True)
        return 1
    finally:
        (args.dir / INFO_FILE).unlink(missing_ok=True)
        lock.close()
    return 0


def _up_detached(args) -> int:
    """Start ``up`` in a session of its own (output to DIR/vrig.log) and
    return once it serves the rig (its vrig.json), or with its log's tail
    when it failed."""
    pid = running_pid(args.dir)
    if pid:
        print(f"vrig: a virtual rig already runs in {args.dir} (pid {pid})",
              file=sys.stderr)
        return 1
    args.dir.mkdir(parents=True, exist_ok=True)
    (args.dir / INFO_FILE).unlink(missing_ok=True)
    argv = [sys.executable, str(Path(__file__).resolve()), "up",
            *[a for a in sys.argv[2:] if a not in ("-d", "--detach")]]
    with open(args.dir / LOG_FILE, "ab") as log:
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                 stderr=subprocess.STDOUT, start_new_session=True)
    end = time.monotonic() + args.timeout
    while time.monotonic() < end:
        info = _read_info(args.dir)
        if info and info.get("pid") == child.pid:
            print(info["description"])
            print(f"  stop:        {Path(__file__).name} down --dir {args.dir}")
            return 0
        if child.poll() is not None:
            break
        time.sleep(0.1)
    if child.poll() is None:
        child.terminate()
    tail = (args.dir / LOG_FILE).read_text(errors="replace")[-3000:]
    print(f"vrig: the rig did not come up (see {args.dir / LOG_FILE}):\n{tail}",
          file=sys.stderr)
    return 1


def cmd_status(args) -> int:
    pid = running_pid(args.dir)
    if not pid:
        print(f"vrig: no virtual rig runs in {args.dir}", file=sys.stderr)
        return 3
    info = _read_info(args.dir)
    if args.json:
        print(json.dumps(info or {"pid": pid, "starting": True}, indent=1))
        return 0
    if not info:
        print(f"virtual rig in {args.dir}: starting (pid {pid})")
        return 0
    up_s = int(time.time() - info["started"])
    print(f"virtual rig in {args.dir}: up (pid {pid}) for "
          f"{up_s // 3600}h{up_s // 60 % 60:02d}m{up_s % 60:02d}s; "
          f"target {info['target']}")
    print("\n".join(info["description"].splitlines()[1:]))
    return 0


def cmd_down(args) -> int:
    pid = running_pid(args.dir)
    if not pid:
        print(f"vrig: no virtual rig runs in {args.dir}: nothing to stop")
        return 0
    os.kill(pid, signal.SIGTERM)
    end = time.monotonic() + args.timeout
    while running_pid(args.dir):
        if time.monotonic() > end:
            print(f"vrig: the rig (pid {pid}) did not stop within "
                  f"{args.timeout:g} s", file=sys.stderr)
            return 1
        time.sleep(0.1)
    print(f"vrig: stopped the virtual rig in {args.dir} (pid {pid})")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="Exit status: 0 ok, 1 failed, 2 usage, 3 (status) no rig runs there.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    dir_help = "working directory: rig.conf, sockets, logs (default build/vrig)"
    up = sub.add_parser("up", help="boot the virtual rig; Ctrl-C or SIGTERM stops it")
    up.add_argument("--dir", type=Path, default=REPO / "build" / "vrig", help=dir_help)
    up.add_argument("--power-port", type=int, default=0,
                    help="INA226 emulator TCP port (default 0: any free one)")
    up.add_argument("--target-port", type=int, default=0,
                    help="target link TCP port (default 0: any free one)")
    up.add_argument("--sbrigd", action="store_true", help="also start sbrigd")
    up.add_argument("--sbrigd-bin", type=Path, help="sbrigd binary "
                    "(default build/host/release/sbrigd)")
    up.add_argument("--policy", choices=POLICIES,
                    help="the target's policy once up (default: the module's, forced)")
    up.add_argument("--state", choices=STATES,
                    help="the state the target requests once up (opportunistic: "
                         "it suspends whenever nothing blocks; default: on)")
    up.add_argument("-d", "--detach", action="store_true",
                    help="run in the background (log DIR/vrig.log); return "
                         "once the rig is up")
    up.add_argument("--timeout", type=float, default=300,
                    help="with --detach: seconds to wait for the rig (default 300)")
    up.add_argument("-v", "--verbose", action="store_true",
                    help="agent and sbrigd log debug messages")
    up.add_argument("--truth", type=Path, default=Path("power-truth.jsonl"),
                    help="the emulator's ground truth, JSON lines (default "
                         "DIR/power-truth.jsonl; a relative path is in DIR)")
    up.set_defaults(func=cmd_up)
    st = sub.add_parser("status", help="is a rig up in DIR, and what it serves")
    st.add_argument("--dir", type=Path, default=REPO / "build" / "vrig", help=dir_help)
    st.add_argument("--json", action="store_true", help="DIR/vrig.json as it is")
    st.set_defaults(func=cmd_status)
    dn = sub.add_parser("down", help="stop the rig running in DIR (SIGTERM, then "
                        "wait until it has shut everything down)")
    dn.add_argument("--dir", type=Path, default=REPO / "build" / "vrig", help=dir_help)
    dn.add_argument("--timeout", type=float, default=60,
                    help="seconds to wait (default 60)")
    dn.set_defaults(func=cmd_down)
    args = ap.parse_args(argv)
    args.dir = args.dir.resolve()
    try:
        return args.func(args)
    except BrokenPipeError:         # `vrig.py status | head -1`
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
