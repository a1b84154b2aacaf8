"""Boot a guest under QEMU (TCG) and drive its serial shell and QMP.

    from tests.vm.qemu import Vm
    with Vm("amd64") as vm:                 # builds what is missing, boots
        rc, out = vm.run("uname -r")
        p = vm.run_async("echo mem > /sys/power/state; echo back")
        vm.wait_status("suspended", 60)
        vm.system_wakeup()
        rc, out = p.wait(60)                # out == "back\\n"

The serial console is a unix socket that this process listens on (QEMU
connects as a client, so nothing is lost before we attach); QMP is a second
socket. Every byte of the console goes to ``build/logs/<name>.console.log``
and every QMP message to ``<name>.qmp.log``.

Command protocol: the guest runs with ``sbrig.harness`` on its command line,
so /init sets the console ``stty -echo -onlcr`` and runs a non-interactive
shell (no prompts, no job control; restarted by init if it exits). Each
command is first parsed by the host's busybox (``sh -n``: an unterminated
quote would swallow every later command) and then sent as::

    printf '%s_%s\\n' SBB <token>; { <cmd>
    } </dev/null; printf '\\n%s_%s %d\\n' SBE <token> $?

and its output is the text between the two markers. Kernel log lines
(``[   12.345678] ...``) that the kernel's console writes in between are
removed from command output (and kept in the log and in ``vm.kmsg``):
with ``-onlcr`` the shell's lines end in ``\\n`` while the kernel console
always ends its lines in ``\\r\\n``, which tells them apart even when a
command prints dmesg-like text.
"""

from __future__ import annotations

import base64
import bisect
import codecs
import ctypes
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .common import IMAGES, LOGS, arch_spec, progress, run_cmd
from .initramfs import READY_MARKER, SHELL_EXITED_MARKER
from .qmp import QmpClient, QmpError

DEFAULT_TIMEOUT = 60.0
BOOT_TIMEOUT = 180.0
MEMORY_MB = 512

#: Called with each Vm whose shell has just become ready after a boot
#: (tests/conftest.py watches every guest's console for kernel splats).
ON_START: list = []

KMEMLEAK = "/sys/kernel/debug/kmemleak"


class VmError(RuntimeError):
    """The guest or QEMU misbehaved; the message ends with the console tail."""


class VmTimeout(VmError, TimeoutError):
    """Something expected from the guest did not happen in time."""


class CommandFailed(VmError):
    """run_ok: the command exited non-zero."""

    def __init__(self, cmd: str, rc: int, output: str) -> None:
        super().__init__(f"guest command failed (exit {rc}): {cmd}\n--- output ---\n{output}")
        self.cmd, self.rc, self.output = cmd, rc, output


# ------------------------------------------------------------- kmsg filter --

_KMSG_LINE = re.compile(r"\[\s*\d+\.\d+\](?:\[\s*[TC]\d+\])? [^\r\n]*\r\n")
# anything that may still grow into a _KMSG_LINE (deliberately permissive)
_KMSG_PREFIX = re.compile(r"\[[ \d.]*(?:\][\[\] TC\d]*(?: [^\r\n]*\r?)?)?\Z")


class KmsgFilter:
    """Split a console stream into shell text and kernel log lines.

    A kernel console line is ``[ seconds.micro] text\\r\\n`` and may start
    anywhere, even in the middle of a line the shell is printing. A tail
    that may be the start of such a line is held back until it is decided.
    """

    def __init__(self) -> None:
        self._pending = ""

    def feed(self, text: str) -> tuple[str, list[str]]:
        data = self._pending + text
        clean: list[str] = []
        kmsg: list[str] = []
        pos = 0
        for m in _KMSG_LINE.finditer(data):
            clean.append(data[pos:m.start()])
            kmsg.append(m.group(0).rstrip("\r\n"))
            pos = m.end()
        rest = data[pos:]
        hold = ""
        i = rest.rfind("[")
        while i >= 0:
            if _KMSG_PREFIX.match(rest, i):
                hold = rest[i:]
                rest = rest[:i]
                break
            i = rest.rfind("[", 0, i)
        clean.append(rest)
        self._pending = hold
        return "".join(clean), kmsg


class TextLog:
    """Append-only text kept as chunks (appending never copies it all);
    positions are absolute character offsets."""

    def __init__(self) -> None:
        self._chunks: list[str] = []
        self._starts: list[int] = []
        self.length = 0

    def append(self, text: str) -> None:
        if text:
            self._starts.append(self.length)
            self._chunks.append(text)
            self.length += len(text)
            if len(self._chunks) > 4096:
                self._compact()

    def _compact(self) -> None:
        """Merge all but the newest chunks into blocks of about 64 KiB."""
        old, keep = self._chunks[:-256], self._chunks[-256:]
        keep_starts = self._starts[-256:]
        chunks: list[str] = []
        starts: list[int] = []
        pos = 0
        block: list[str] = []
        block_len = 0
        for c in old:
            block.append(c)
            block_len += len(c)
            if block_len >= 65536:
                chunks.append("".join(block))
                starts.append(pos)
                pos += block_len
                block, block_len = [], 0
        if block:
            chunks.append("".join(block))
            starts.append(pos)
        self._chunks = chunks + keep
        self._starts = starts + keep_starts

    def since(self, pos: int) -> str:
        """Text from absolute position ``pos`` to the end."""
        pos = max(0, pos)
        if pos >= self.length:
            return ""
        i = max(0, bisect.bisect_right(self._starts, pos) - 1)
        return "".join(self._chunks[i:])[pos - self._starts[i]:]


# ---------------------------------------------------------------- helpers --

def _set_pdeathsig() -> None:
    """In the QEMU child: die with the parent (no stray VMs)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def make_arm_dtb(memory_mb: int = MEMORY_MB) -> Path:
    """Dump QEMU's arm ``virt`` DTB and add ``wakeup-source`` to the
    gpio-keys poweroff key, so QMP ``system_powerdown`` wakes s2idle.
    Returns ``build/images/armhf/virt-wakeup.dtb``."""
    out_dir = IMAGES / "armhf"
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / "virt-wakeup.dtb"
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".dtb-") as tmp:
        raw = Path(tmp) / "virt.dtb"
        run_cmd(["qemu-system-arm", "-M", f"virt,dumpdtb={raw}", *_arm_machine_args(memory_mb)],
                what="dump the arm virt DTB")
        dts = run_cmd(["dtc", "-q", "-I", "dtb", "-O", "dts", str(raw)],
                      what="decompile DTB").stdout.decode()
        m = re.search(r"\n(\s*)gpio-keys \{.*?\n\s*poweroff \{\n", dts, re.S)
        if not m:
            raise VmError("no gpio-keys/poweroff node in QEMU's virt DTB:\n" + dts[:4000])
        if "wakeup-source" not in dts[m.start():m.end() + 400]:
            dts = dts[:m.end()] + "\t\t\twakeup-source;\n" + dts[m.end():]
        (Path(tmp) / "virt.dts").write_text(dts)
        run_cmd(["dtc", "-q", "-I", "dts", "-O", "dtb", "-o", str(Path(tmp) / "new.dtb"),
                 str(Path(tmp) / "virt.dts")], what="compile patched DTB")
        os.replace(Path(tmp) / "new.dtb", out)
    return out


def arm_dtb_variant(name: str, edit) -> Path:
    """make_arm_dtb()'s DTB with its source text changed by ``edit(dts) ->
    dts`` (a test's own nodes), compiled to ``build/images/armhf/NAME``."""
    base = make_arm_dtb()
    out = IMAGES / "armhf" / name
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".dtb-") as tmp:
        dts = run_cmd(["dtc", "-q", "-I", "dtb", "-O", "dts", str(base)],
                      what="decompile DTB").stdout.decode()
        (Path(tmp) / "v.dts").write_text(edit(dts))
        run_cmd(["dtc", "-q", "-I", "dts", "-O", "dtb", "-o", str(Path(tmp) / "v.dtb"),
                 str(Path(tmp) / "v.dts")], what=f"compile {name}")
        os.replace(Path(tmp) / "v.dtb", out)
    return out


def _arm_machine_args(memory_mb: int) -> list[str]:
    return ["-cpu", "cortex-a15", "-m", str(memory_mb), "-smp", "1", "-accel", "tcg",
            "-nic", "none", "-nographic", "-monitor", "none"]


def qemu_argv(arch: str, kernel: Path, initrd: Path, append: str, *,
              dtb: Path | None = None, memory_mb: int | None = None) -> list[str]:
    """QEMU command line without the serial/QMP wiring (``arch`` is a guest
    kind: amd64-debug is the amd64 ``pc`` machine with its -smp and -m)."""
    spec = arch_spec(arch)
    memory_mb = memory_mb or spec.memory_mb
    if spec.deb_arch == "amd64":
        argv = [spec.qemu, "-M", "pc", "-m", str(memory_mb), "-smp", str(spec.smp),
                "-accel", "tcg", "-global", "PIIX4_PM.disable_s3=0",
                "-nic", "none", "-nographic", "-monitor", "none",
                "-parallel", "none"]
    else:
        argv = [spec.qemu, "-M", "virt", *_arm_machine_args(memory_mb)]
        if dtb:
            argv += ["-dtb", str(dtb)]
    return argv + ["-no-reboot", "-kernel", str(kernel), "-initrd", str(initrd),
                   "-append", append]


def kernel_cmdline(arch: str, extra: str = "", harness: bool = True) -> str:
    """console=<uart> no_console_suspend panic=-1 <the guest kind's own>
    [sbrig.harness] <extra>."""
    spec = arch_spec(arch)
    parts = [f"console={spec.console}", "no_console_suspend", "panic=-1"]
    if spec.cmdline:
        parts.append(spec.cmdline)
    if harness:
        parts.append("sbrig.harness")
    if extra:
        parts.append(extra)
    return " ".join(parts)


# ---------------------------------------------------------------- commands --

def check_syntax(script: str) -> None:
    """Parse ``script`` with the host's busybox ash (``sh -n``, the guest's
    parser) and raise ValueError on a syntax error: sent to the guest, an
    unterminated quote or here-document would swallow every later command."""
    proc = subprocess.run(["/bin/busybox", "sh", "-n", "-c", script],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise ValueError(f"shell syntax error ({proc.stderr.strip()}) in guest "
                         f"command:\n{script}")


class Pending:
    """A command sent to the guest shell whose end marker is awaited."""

    def __init__(self, vm: "Vm", cmd: str, token: str, start: int) -> None:
        self.vm, self.cmd, self.token, self.start = vm, cmd, token, start
        self._begin = f"SBB_{token}\n"
        self._end = re.compile(rf"\nSBE_{token} (\d+)\n")
        self._scanned = start      # shell text before this was searched
        self._out_at: int | None = None   # where the output starts
        self.result: tuple[int, str] | None = None

    def _check(self) -> bool:
        """Look for the markers in shell text that arrived since the last
        look (with an overlap for markers split across reads)."""
        if self.result is not None:
            return True
        log = self.vm._clean
        if log.length == self._scanned:
            return False
        base = max(self.start, self._scanned - 64)
        text = log.since(base)
        self._scanned = log.length
        if self._out_at is None:
            i = text.find(self._begin)
            if i < 0:
                self._check_exited(text)
                return False
            self._out_at = base + i + len(self._begin)
        lo = max(base, self._out_at)
        m = self._end.search(text, lo - base)
        if not m:
            self._check_exited(text)
            return False
        out = log.since(self._out_at)[:base + m.start() - self._out_at]
        self.result = (int(m.group(1)), out)
        return True

    def _check_exited(self, text: str) -> None:
        if SHELL_EXITED_MARKER in text:
            raise VmError(f"the guest shell exited while running {self.cmd!r} "
                          "(syntax error? exit? Ctrl-C?); init started a new one"
                          + self.vm._tail_msg())

    def done(self) -> bool:
        with self.vm._cond:
            return self._check()

    def wait(self, timeout: float = DEFAULT_TIMEOUT) -> tuple[int, str]:
        """Return (exit status, output); raise VmTimeout with the console tail."""
        self.vm._wait_for(self._check, timeout,
                          f"guest command did not finish: {self.cmd!r}")
        assert self.result is not None
        return self.result


@dataclass
class BgProcess:
    """A command started in the background with Vm.start_bg."""

    vm: "Vm"
    cmd: str
    pid: int
    base: str  # guest path prefix: .sh .log .rc

    @property
    def log(self) -> str:
        return self.base + ".log"

    @property
    def running(self) -> bool:
        """True while the command has not ended (a property, not a method)."""
        return self.vm.run(f"[ ! -e {self.base}.rc ]")[0] == 0

    def wait_output(self, pattern: str, timeout: float = DEFAULT_TIMEOUT) -> str:
        """Wait until the output so far matches ``pattern`` (an extended
        regex for the guest's ``grep -E``); return the output. Raises
        VmError if the command ends without printing it, VmTimeout."""
        q = shlex.quote(pattern)
        cmd = (f"while ! grep -qE {q} {self.log}; do [ -e {self.base}.rc ] && break; "
               f"usleep 20000; done; grep -qE {q} {self.log}")
        try:
            rc, _ = self.vm.run(cmd, timeout=timeout)
        except VmTimeout:
            self.vm.interrupt()
            raise
        out = self.output()
        if rc != 0:
            raise VmError(f"background command {self.cmd!r} ended without printing "
                          f"{pattern!r}; its output:\n{out}")
        return out

    def wait(self, timeout: float = DEFAULT_TIMEOUT) -> int:
        """Wait for the process to end and return its exit status."""
        try:
            out = self.vm.run_ok(
                f"while [ ! -e {self.base}.rc ]; do sleep 0.05; done; cat {self.base}.rc",
                timeout=timeout)
        except VmTimeout:
            self.vm.interrupt()
            raise
        return int(out.strip())

    def output(self) -> str:
        """What the process wrote so far (stdout and stderr)."""
        return self.vm.read_file(self.log)

    def kill(self, sig: str = "TERM") -> None:
        """Signal the process group of the background command."""
        self.vm.run(f"kill -{sig} -{self.pid}")


# --------------------------------------------------------------------- Vm --

class Vm:
    """One QEMU guest (amd64 ``pc`` or armhf ``virt``) with a busybox shell.

    ``Vm(arch)`` builds what is missing (``tests.vm.build.build_all``) unless
    ``artifacts`` is given. ``arch`` is a guest kind of
    ``tests.vm.common.ARCHES``; ``vm.guest`` keeps it, while ``vm.arch`` is
    the machine's Debian architecture, what tests branch on: "amd64" for
    both the amd64 and the amd64-debug guest (``vm.debug`` tells them
    apart), "armhf". ``vm.slow(t)`` scales a timeout or timing bound by
    the guest's slowness (the debug kernel runs several times slower). ``extra_cmdline`` is appended to the kernel
    command line (e.g. ``"sb.load"`` makes /init load the project's modules).
    ``extra_qemu_args`` are appended to QEMU's command line after the
    console and QMP wiring, so a further ``-serial`` is the guest's second
    UART (ttyS1 on amd64): e.g. ``["-serial", "tcp:127.0.0.1:PORT,server=on,
    wait=off"]`` gives a ser2net-style raw TCP port to it.
    The VM boots in ``start()`` (or on entering a ``with`` block).
    """

    def __init__(self, arch: str, artifacts: Any = None, *, extra_cmdline: str = "",
                 memory_mb: int | None = None, name: str | None = None,
                 boot_timeout: float = BOOT_TIMEOUT,
                 extra_qemu_args: list[str] | None = None) -> None:
        self.spec = arch_spec(arch)
        self.guest = arch                  # guest kind: amd64, amd64-debug, armhf
        self.arch = self.spec.deb_arch     # the machine: amd64, armhf
        self.debug = self.spec.debug       # the debug kernel (lockdep, KASAN, ...)
        self.boot_count = 0                # start() calls: a new console each
        if artifacts is None:
            from .build import build_all
            artifacts = build_all(arch)
        self.artifacts = artifacts
        self.kver: str = artifacts.kernel.kver
        self.extra_cmdline = extra_cmdline
        self.extra_qemu_args = list(extra_qemu_args or [])
        self.memory_mb = memory_mb or self.spec.memory_mb
        self.boot_timeout = boot_timeout
        self.name = name or arch
        self.proc: subprocess.Popen | None = None
        self.qmp_client: QmpClient | None = None
        self._serial: socket.socket | None = None
        self._tmp: str | None = None
        self._cond = threading.Condition()
        self._reset_console()

    # ------------------------------------------------------------ console --
    def _reset_console(self) -> None:
        # the console of the boot before (a restart()), until checked
        self.previous_console = getattr(self, "_raw", None)
        self._raw = TextLog()       # everything the console printed
        self._clean = TextLog()     # same minus kernel log lines
        self.kmsg: list[str] = []   # kernel log lines seen on the console
        self._filter = KmsgFilter()
        self._serial_closed = False
        self._bg_count = 0
        self.panicked = False       # the console showed a kernel panic
        self._outstanding: list[Pending] = []

    def _serial_reader(self, sock: socket.socket, log) -> None:
        dec = codecs.getincrementaldecoder("utf-8")(errors="replace")
        try:
            while True:
                data = sock.recv(65536)
                if not data:
                    break
                log.write(data)
                log.flush()
                text = dec.decode(data)
                clean, kmsg = self._filter.feed(text)
                with self._cond:
                    self._raw.append(text)
                    self._clean.append(clean)
                    self.kmsg += kmsg
                    if any("Kernel panic - not syncing" in k for k in kmsg):
                        self.panicked = True
                    self._cond.notify_all()
        except OSError:
            pass
        finally:
            log.close()
            with self._cond:
                self._serial_closed = True
                self._cond.notify_all()

    def console_tail(self, chars: int = 3000) -> str:
        """The last ``chars`` characters the console printed (raw)."""
        with self._cond:
            return self._raw.since(self._raw.length - chars)

    def console_mark(self) -> int:
        """Position in the raw console text, for wait_console(since=...)."""
        with self._cond:
            return self._raw.length

    def console_text(self, since: int = 0) -> str:
        with self._cond:
            return self._raw.since(since)

    def wait_console(self, pattern: str, timeout: float = DEFAULT_TIMEOUT,
                     since: int | None = None) -> re.Match:
        """Wait until the raw console (from ``since``, default: now) matches
        the regex ``pattern``; return the match (its positions are relative
        to ``since``)."""
        start = self.console_mark() if since is None else since
        rx = re.compile(pattern)
        found: list[re.Match] = []

        def check() -> bool:
            m = rx.search(self._raw.since(start))
            if m:
                found.append(m)
            return bool(m)
        self._wait_for(check, timeout, f"console never matched {pattern!r}")
        return found[0]

    def _alive_locked(self) -> bool:
        return (self.proc is not None and self.proc.poll() is None
                and not self._serial_closed and not self.panicked)

    def slow(self, seconds: float) -> float:
        """``seconds`` scaled by the guest's slowness (ArchSpec.slowness:
        1 for Debian's kernels, more for the debug kernel). Every timeout
        of this class is scaled already; use it for timing bounds a test
        asserts itself."""
        return seconds * self.spec.slowness

    def _wait_for(self, check, timeout: float, what: str) -> None:
        timeout = self.slow(timeout)
        end = time.monotonic() + timeout
        with self._cond:
            while not check():
                if not self._alive_locked():
                    rc = self.proc.poll() if self.proc else None
                    why = ("the guest kernel panicked" if self.panicked else
                           f"QEMU ({self.name}) is gone (exit {rc})")
                    raise VmError(f"{what}: {why}" + self._tail_msg())
                left = end - time.monotonic()
                if left <= 0:
                    raise VmTimeout(f"{what} (timeout {timeout} s)" + self._tail_msg())
                self._cond.wait(min(left, 0.5))

    def _tail_msg(self) -> str:
        return (f"\n--- console tail ({self.name}; full log {self.console_log}) ---\n"
                f"{self._raw.since(self._raw.length - 3000)}\n--- end of console tail ---")

    def _send(self, data: str) -> None:
        if not self._serial:
            raise VmError(f"{self.name} is not running")
        self._serial.sendall(data.encode())

    # ---------------------------------------------------------- lifecycle --
    def start(self) -> "Vm":
        """Boot the guest and wait until its shell answers."""
        LOGS.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        base = LOGS / f"{self.name}-{stamp}-{os.getpid()}"
        self.console_log = base.with_suffix(".console.log")
        self.qmp_log = base.with_suffix(".qmp.log")
        self.qemu_log = base.with_suffix(".qemu.log")
        for kind in ("console", "qmp", "qemu"):
            link = LOGS / f"{self.name}-latest.{kind}.log"
            try:  # best effort: another run may be doing the same
                link.unlink(missing_ok=True)
                link.symlink_to(base.with_suffix(f".{kind}.log").name)
            except OSError:
                pass

        self._reset_console()
        self.boot_count += 1
        self._tmp = tempfile.mkdtemp(prefix=f"sbrig-{self.name}-")
        ser_path = os.path.join(self._tmp, "serial.sock")
        qmp_path = os.path.join(self._tmp, "qmp.sock")
        listeners = []
        for p in (ser_path, qmp_path):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(p)
            s.listen(1)
            listeners.append(s)

        a = self.artifacts
        append = kernel_cmdline(self.guest, self.extra_cmdline)
        argv = qemu_argv(self.guest, a.kernel.vmlinuz, a.initramfs, append,
                         dtb=a.dtb, memory_mb=self.memory_mb)
        argv += ["-chardev", f"socket,id=con0,path={ser_path}", "-serial", "chardev:con0",
                 "-chardev", f"socket,id=qmp0,path={qmp_path}",
                 "-mon", "chardev=qmp0,mode=control"]
        argv += self.extra_qemu_args
        self.argv = argv
        progress(f"{self.name}: booting {self.kver} (log {self.console_log})")
        t0 = time.monotonic()
        with open(self.qemu_log, "wb") as qlog:
            qlog.write((shlex.join(argv) + "\n").encode())
            qlog.flush()
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=qlog,
                                         stderr=subprocess.STDOUT,
                                         preexec_fn=_set_pdeathsig)
        try:
            ser, qmp = (self._accept(s) for s in listeners)
            self._serial = ser
            threading.Thread(target=self._serial_reader, name=f"{self.name}-serial",
                             args=(ser, open(self.console_log, "ab")), daemon=True).start()
            self.qmp_client = QmpClient(qmp, self.qmp_log)
            self._wait_for(lambda: READY_MARKER in self._raw.since(0), self.boot_timeout,
                           f"{self.name} did not boot to /init's ready marker")
            self.run("true", timeout=60)
        except BaseException:
            self.kill()
            raise
        finally:
            for s in listeners:
                s.close()
        self.boot_seconds = time.monotonic() - t0
        progress(f"{self.name}: shell ready after {self.boot_seconds:.1f} s")
        if self.debug:
            # boot-time kmemleak suspects are not the tests' business
            self.kmemleak_scan()
        for hook in ON_START:
            hook(self)
        return self

    def kmemleak_scan(self, clear: bool = True) -> str:
        """Debug kernel: scan for leaks now and return kmemleak's report
        (empty: no suspected leak), then clear it (``clear``: reported
        objects are not reported again). Two scans: kmemleak reports an
        object only when a scan finds it unreferenced and unchanged since
        the scan before; objects younger than 5 s are not considered yet.
        ~8 s a scan under TCG."""
        self.run_ok(f"echo scan > {KMEMLEAK}; echo scan > {KMEMLEAK}", timeout=240)
        out = self.run_ok(f"cat {KMEMLEAK}")
        if clear:
            self.run_ok(f"echo clear > {KMEMLEAK}")
        return out

    def _accept(self, listener: socket.socket) -> socket.socket:
        end = time.monotonic() + 30
        listener.settimeout(0.2)
        while True:
            try:
                conn, _ = listener.accept()
                conn.settimeout(None)
                return conn
            except socket.timeout:
                if self.proc.poll() is not None or time.monotonic() > end:
                    out = Path(self.qemu_log).read_text(errors="replace")
                    raise VmError(f"QEMU did not connect (exit {self.proc.poll()}):\n"
                                  f"{shlex.join(self.argv)}\n{out[-3000:]}")

    def __enter__(self) -> "Vm":
        return self.start() if self.proc is None else self

    def __exit__(self, *exc) -> None:
        self.shutdown()

    def is_alive(self) -> bool:
        with self._cond:
            return self._alive_locked()

    def shutdown(self, timeout: float = 15.0) -> None:
        """Power the guest off (``poweroff -f``), then QMP ``quit``, then kill."""
        if self.is_alive():
            try:
                if self.query_status() == "suspended":
                    self.system_wakeup()
                self._send("\npoweroff -f\n")
                self.proc.wait(timeout=timeout)
            except (OSError, VmError, QmpError, subprocess.TimeoutExpired):
                try:
                    self.qmp("quit", timeout=5)
                    self.proc.wait(timeout=5)
                except (OSError, VmError, QmpError, subprocess.TimeoutExpired):
                    pass
        self.kill()

    def kill(self) -> None:
        """Kill QEMU if still running and release sockets (logs are kept)."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.qmp_client:
            self.qmp_client.close()
            self.qmp_client = None
        if self._serial:
            try:
                self._serial.close()
            except OSError:
                pass
            self._serial = None
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def restart(self) -> "Vm":
        """Kill and boot again (same object, new logs)."""
        self.kill()
        return self.start()

    def ensure_healthy(self, timeout: float = 20.0) -> bool:
        """Make the VM usable for the next test: wake it if a test left it
        asleep, interrupt a command still running, reboot if QEMU died, the
        kernel panicked or nothing else helped. Returns True if it rebooted."""
        try:
            if not self.is_alive():
                raise VmError("QEMU gone" if not self.panicked else "kernel panic")
            if self.query_status() == "suspended":
                self.system_wakeup()
                self.wait_status("running", timeout)
            if self._busy() and self._maybe_asleep():
                self.wake_any()
                self._wait_for(lambda: not self._busy(), 5,
                               "commands still running after waking the guest")
        except (VmError, QmpError, OSError) as exc:
            progress(f"{self.name}: health check: {str(exc).splitlines()[0]}")
        for action in (None, self.interrupt):
            try:
                if not self.is_alive():
                    break
                busy = self._busy()
                if action is None and busy:
                    continue
                if action:
                    progress(f"{self.name}: interrupting {busy}")
                    action(timeout)
                self.run("true", timeout=timeout)
                with self._cond:
                    self._outstanding.clear()
                return False
            except (VmError, QmpError, OSError) as exc:
                progress(f"{self.name}: health check: {str(exc).splitlines()[0]}")
        progress(f"{self.name}: unhealthy, rebooting")
        self.restart()
        return True

    def _busy(self) -> list[str]:
        """Commands sent with run_async whose end has not been seen."""
        busy = []
        with self._cond:
            for p in self._outstanding:
                try:
                    if not p._check():
                        busy.append(p.cmd)
                except VmError:  # its shell exited: it is over
                    pass
        return busy

    def _maybe_asleep(self) -> bool:
        """The last PM message on the console is a suspend entry."""
        with self._cond:
            for line in reversed(self.kmsg):
                if "PM: suspend entry" in line:
                    return True
                if "PM: suspend exit" in line:
                    return False
        return False

    def wake_any(self) -> None:
        """Wake the guest from whatever sleep a test may have left it in:
        amd64 system_wakeup (S3) and a key press (S3, s2idle if the
        keyboard may wake); armhf the gpio-keys power key (s2idle)."""
        if self.arch == "amd64":
            if self.query_status() == "suspended":
                self.system_wakeup()
            self.send_key()
        else:
            self.system_powerdown()

    # ---------------------------------------------------------- commands --
    def run_async(self, cmd: str) -> Pending:
        """Send ``cmd`` to the guest shell now; collect it with ``.wait()``.

        The command runs in the shell itself (``cd``/variables persist) with
        stdin from /dev/null. Lines must stay under 4000 characters (tty
        canonical mode); send longer data with write_file.
        """
        if any(len(line) > 4000 for line in cmd.splitlines()):
            raise ValueError("command line longer than 4000 characters; "
                             "use write_file and run a script")
        token = secrets.token_hex(8)
        line = (f"printf '%s_%s\\n' SBB {token}; {{ {cmd}\n}} </dev/null; "
                f"printf '\\n%s_%s %d\\n' SBE {token} $?\n")
        check_syntax(line)
        with self._cond:
            p = Pending(self, cmd, token, self._clean.length)
            self._outstanding = [q for q in self._outstanding if q.result is None]
            self._outstanding.append(p)
        self._send(line)
        return p

    def run(self, cmd: str, timeout: float = DEFAULT_TIMEOUT) -> tuple[int, str]:
        """Run ``cmd`` in the guest shell; return (exit status, output).

        Output is stdout+stderr as the console showed it, kernel log lines
        removed. Works across suspend/resume: the command may suspend the
        guest; its output is collected whenever it arrives. On timeout
        raises VmTimeout with the console tail (the shell may still be busy:
        call ``interrupt()`` or ``ensure_healthy()``).
        """
        return self.run_async(cmd).wait(timeout)

    def run_ok(self, cmd: str, timeout: float = DEFAULT_TIMEOUT) -> str:
        """Like run, but raise CommandFailed on a non-zero exit; return output."""
        rc, out = self.run(cmd, timeout)
        if rc != 0:
            raise CommandFailed(cmd, rc, out)
        return out

    def interrupt(self, timeout: float = 20.0) -> None:
        """Send Ctrl-C: kills the foreground command and the (non-interactive)
        shell; init starts a fresh shell (cwd and variables are reset)."""
        mark = self.console_mark()
        self._send("\x03")
        self.wait_console(SHELL_EXITED_MARKER, timeout, since=mark)
        self.run("true", timeout=timeout)

    def write_file(self, path: str, data: str | bytes, mode: int | None = None) -> None:
        """Create/replace a guest file with ``data`` exactly (binary safe)."""
        raw = data.encode() if isinstance(data, str) else data
        b64 = base64.encodebytes(raw).decode()
        q = shlex.quote(path)
        tmp = shlex.quote(path + ".sbrig-tmp")
        self.run_ok(f": > {tmp}")
        lines = b64.splitlines()
        for i in range(0, max(len(lines), 1), 40):  # ~3 KB per round trip
            chunk = "\n".join(lines[i:i + 40])
            self.run_ok(f"base64 -d >> {tmp} <<'SBRIG_EOF'\n{chunk}\nSBRIG_EOF")
        self.run_ok((f"chmod {mode:o} {tmp} && " if mode is not None else "") + f"mv {tmp} {q}")

    def read_file(self, path: str, binary: bool = False) -> str | bytes:
        """Return a guest file's content (transferred as base64)."""
        out = self.run_ok(f"base64 {shlex.quote(path)}")
        raw = base64.b64decode("".join(out.split()))
        return raw if binary else raw.decode(errors="replace")

    def start_bg(self, cmd: str) -> BgProcess:
        """Start ``cmd`` in the background; return a BgProcess (pid, wait,
        kill, output).

        ``cmd`` runs as ``sh <script>`` in its own session and process group
        (so ``kill()`` reaches its children), with output to a guest file;
        a small wrapper outside that group records the exit status.
        """
        self._bg_count += 1
        base = f"/tmp/sbrig-bg/{self._bg_count}"
        self.run_ok("mkdir -p /tmp/sbrig-bg")
        self.write_file(base + ".sh", cmd + "\n")
        self.write_file(base + ".wrap", (
            f"setsid sh {base}.sh >{base}.log 2>&1 </dev/null &\n"
            f"echo $! >{base}.pid\n"
            f"wait $!\n"
            f"echo $? >{base}.rc.tmp && mv {base}.rc.tmp {base}.rc\n"))
        out = self.run_ok(
            f"sh {base}.wrap </dev/null >/dev/null 2>&1 &\n"
            f"while [ ! -s {base}.pid ]; do usleep 10000; done; cat {base}.pid")
        return BgProcess(self, cmd, int(out.strip()), base)

    def load_module(self, name: str, **params: Any) -> None:
        """``modprobe name key=value ...`` (our .ko files are in extra/)."""
        args = " ".join(f"{k}={shlex.quote(str(v))}" for k, v in params.items())
        self.run_ok(f"modprobe {name} {args}".strip())

    def unload_module(self, name: str) -> None:
        self.run_ok(f"rmmod {name}")

    def dmesg(self) -> str:
        return self.run_ok("dmesg")

    # --------------------------------------------------------------- QMP --
    def qmp(self, command: str, arguments: dict | None = None, *,
            timeout: float = 30.0, **args: Any) -> Any:
        """Execute a QMP command and return its result. Arguments come as
        keywords (``vm.qmp("input-send-event", events=[...])``) or, for
        names with dashes, as a dict (``arguments={"command-line": ...}``).
        Raises QmpError if QEMU answers with an error."""
        if not self.qmp_client:
            raise VmError(f"{self.name} is not running")
        merged = dict(arguments or {}, **args)
        return self.qmp_client.execute(command, merged or None, timeout=timeout)

    def qmp_mark(self) -> int:
        """Index for ``wait_qmp_event(since=...)``: only later events count."""
        return self.qmp_client.mark()

    def wait_qmp_event(self, name: str, timeout: float = DEFAULT_TIMEOUT,
                       since: int | None = None) -> dict:
        """Wait for QMP event ``name`` (e.g. SUSPEND, WAKEUP, RESET,
        POWERDOWN); see QmpClient.wait_event. The event dict has QEMU's
        ``timestamp`` and the host's monotonic ``host_time``."""
        try:
            return self.qmp_client.wait_event(name, self.slow(timeout), since)
        except TimeoutError as exc:
            raise VmTimeout(str(exc) + self._tail_msg()) from None

    @property
    def qmp_events(self) -> list[dict]:
        return list(self.qmp_client.events)

    def query_status(self) -> str:
        """QEMU's run state: "running", "suspended" (S3), "shutdown", ..."""
        return self.qmp("query-status")["status"]

    def wait_status(self, status: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Poll query-status (every 20 ms) until it equals ``status``."""
        timeout = self.slow(timeout)
        end = time.monotonic() + timeout
        seen = None
        while True:
            seen = self.query_status()
            if seen == status:
                return
            if time.monotonic() > end:
                raise VmTimeout(f"QEMU status stayed {seen!r}, wanted {status!r} "
                                f"(timeout {timeout} s)" + self._tail_msg())
            if not self.is_alive():
                raise VmError(f"QEMU died waiting for status {status!r}" + self._tail_msg())
            time.sleep(0.02)

    def send_key(self, key: str = "shift") -> None:
        """Press and release ``key`` (a QEMU qcode) with two explicit
        ``input-send-event`` calls; wakes S3 (and s2idle when the keyboard's
        power/wakeup is enabled) on amd64. Unlike ``send-key``, nothing is
        queued on the virtual clock, so nothing gets stuck across S3."""
        for down in (True, False):
            self.qmp("input-send-event", events=[
                {"type": "key", "data": {"down": down,
                                         "key": {"type": "qcode", "data": key}}}])

    def system_wakeup(self) -> None:
        """QMP system_wakeup: wakes S3 (amd64); does nothing for s2idle."""
        self.qmp("system_wakeup")

    def system_powerdown(self) -> None:
        """QMP system_powerdown: ACPI power button (amd64) or the gpio-keys
        poweroff key (armhf; wakes s2idle thanks to the patched DTB)."""
        self.qmp("system_powerdown")
