"""Shared pieces of the VM harness: paths, per-architecture facts, command
running with loud failures, progress output and build locks.

Everything the harness produces lives under ``<repo>/build/`` (gitignored);
set ``SBRIG_BUILD_DIR`` to put it elsewhere.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

#: Root of the git work tree (tests/vm/common.py -> ../../).
REPO = Path(__file__).resolve().parents[2]

#: Root of all build outputs.
BUILD = Path(os.environ.get("SBRIG_BUILD_DIR", REPO / "build")).resolve()
CACHE = BUILD / "cache"        # downloaded .debs, extracted helpers
KERNELS = BUILD / "kernels"    # unpacked kernel image + headers, per arch
MODBUILD = BUILD / "mod"       # out-of-tree copies of module sources, per arch
BINDIR = BUILD / "bin"         # static target programs, per arch
IMAGES = BUILD / "images"      # initramfs archives and DTBs, per arch
LOGS = BUILD / "logs"          # console and QMP logs of every boot


@dataclass(frozen=True)
class ArchSpec:
    """What differs between the guest kinds ("arches" of the harness).

    A guest kind is a machine (``deb_arch``: what ``vm.arch`` says, what
    tests branch on) with a kernel: Debian's own (``kernel="debian"``) or
    the debug kernel built from linux-source by tests/vm/debugkernel.py
    (``kernel="debug"``, the amd64-debug guest)."""

    name: str            # guest kind: build/<dir>/<name>, --vm-arch, Vm(name)
    deb_arch: str        # Debian architecture: the machine (and its programs)
    flavour: str         # Debian kernel flavour
    image_suffix: str    # suffix of the image package name ("-unsigned")
    kernel_arch: str     # ARCH= for kbuild
    cross_compile: str   # CROSS_COMPILE= for kbuild ("" = native)
    console: str         # serial console device in the guest
    qemu: str            # QEMU system emulator binary
    s3: bool             # suspend-to-RAM (ACPI S3) usable in the guest
    kernel: str = "debian"   # "debian" (kernels.py) or "debug" (debugkernel.py)
    smp: int = 1             # QEMU -smp
    memory_mb: int = 512     # QEMU -m
    cmdline: str = ""        # extra kernel command line
    #: How much slower than the amd64 guest this one runs (timeouts and
    #: timing bounds of tests scale by it: ``vm.slow(seconds)``).
    slowness: float = 1.0
    #: Tests run on this guest only if they carry this marker (opt-in):
    #: the debug guest runs the module suites that say ``debug_kernel``.
    opt_in_marker: str | None = None

    @property
    def cc(self) -> str:
        """C compiler for static target programs."""
        return f"{self.cross_compile}gcc"

    @property
    def debug(self) -> bool:
        """The guest runs the debug kernel (lockdep, KASAN, ...)."""
        return self.kernel == "debug"


ARCHES: dict[str, ArchSpec] = {
    "amd64": ArchSpec("amd64", "amd64", "amd64", "-unsigned", "x86", "",
                      "ttyS0", "qemu-system-x86_64", True),
    "armhf": ArchSpec("armhf", "armhf", "armmp", "", "arm",
                      "arm-linux-gnueabihf-", "ttyAMA0", "qemu-system-arm",
                      False),
    # The amd64 machine with the debug kernel (tests/vm/debug-kernel.config):
    # two CPUs so lockdep sees real concurrency, more memory for KASAN's
    # shadow, quarantine and kmemleak's metadata; every KASAN report, not
    # only the first (kasan_multi_shot).
    "amd64-debug": ArchSpec("amd64-debug", "amd64", "amd64", "", "x86", "",
                            "ttyS0", "qemu-system-x86_64", True,
                            kernel="debug", smp=2, memory_mb=1024,
                            cmdline="kasan_multi_shot",
                            slowness=3.0, opt_in_marker="debug_kernel"),
}


def arch_spec(arch: str) -> ArchSpec:
    """Return the ArchSpec for ``arch`` ("amd64", "armhf", "amd64-debug")."""
    try:
        return ARCHES[arch]
    except KeyError:
        raise ValueError(f"unknown arch {arch!r}; expected one of "
                         f"{sorted(ARCHES)}") from None


class BuildError(RuntimeError):
    """A fetch or build step failed; the message has the command and output."""


_T0 = time.monotonic()


def progress(msg: str) -> None:
    """Print a progress line to stderr (unbuffered, with elapsed seconds)."""
    stream = sys.__stderr__ or sys.stderr
    stream.write(f"[sbrig-vm {time.monotonic() - _T0:7.1f}s] {msg}\n")
    stream.flush()


def _tail(text: str, limit: int = 6000) -> str:
    return text if len(text) <= limit else "...\n" + text[-limit:]


def run_cmd(argv: list[str], *, cwd: Path | str | None = None,
            env: dict[str, str] | None = None, input: bytes | None = None,
            what: str | None = None) -> subprocess.CompletedProcess:
    """Run ``argv``; on failure raise BuildError with the command and output.

    ``env`` entries are added to the current environment. Output is captured
    (bytes) and returned on success.
    """
    full_env = None
    if env:
        full_env = dict(os.environ)
        full_env.update(env)
    try:
        proc = subprocess.run(argv, cwd=cwd, env=full_env, input=input,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except FileNotFoundError as exc:
        raise BuildError(f"{what or 'command'}: cannot run "
                         f"{shlex.join(map(str, argv))}: {exc}") from exc
    if proc.returncode != 0:
        envs = " ".join(f"{k}={shlex.quote(v)}" for k, v in (env or {}).items())
        raise BuildError(
            f"{what or 'command'} failed (exit {proc.returncode}):\n"
            f"  cd {cwd or os.getcwd()} && {envs + ' ' if envs else ''}"
            f"{shlex.join(map(str, argv))}\n"
            f"--- stderr ---\n{_tail(proc.stderr.decode(errors='replace'))}\n"
            f"--- stdout ---\n{_tail(proc.stdout.decode(errors='replace'))}")
    return proc


@contextlib.contextmanager
def build_lock(name: str):
    """Hold an exclusive inter-process lock ``BUILD/.lock-<name>``.

    Two pytest runs (or a test run and ``python3 -m tests.vm build``) then
    never write the same tree at once.
    """
    BUILD.mkdir(parents=True, exist_ok=True)
    with open(BUILD / f".lock-{name}", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def populate_atomically(dest: Path, stamp: str, fill, stamp_text: str = "") -> Path:
    """Create directory ``dest`` by calling ``fill(tmp)`` on a sibling temp
    directory, then write ``tmp/stamp`` and rename it into place, so an
    interrupted run never leaves a half-filled ``dest``. Returns ``dest``
    at once if ``dest/stamp`` already exists."""
    if (dest / stamp).exists():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}.partial-"))
    tmp.chmod(0o755)
    try:
        fill(tmp)
        (tmp / stamp).write_text(stamp_text)
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest
