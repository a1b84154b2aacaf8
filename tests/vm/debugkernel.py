"""The amd64-debug guest's kernel: Debian's linux-source-6.1 built with
lockdep, KASAN, UBSAN, kmemleak, debug objects and list debugging.

    from tests.vm import debugkernel
    k = debugkernel.fetch()        # a kernels.Kernel; builds it once (~4 min)

Recipe (``build()``):

1. unpack ``/usr/src/linux-source-6.1.tar.xz`` (the Debian package
   ``linux-source-6.1``) into ``usr/src/linux-source-6.1``;
   and apply SOURCE_PATCHES (one: a lockdep false positive of 6.1's
   printk with PROVE_RAW_LOCK_NESTING, fixed the same way in mainline);
2. ``scripts/kconfig/merge_config.sh -n`` with ``ARCH=x86``: ``allnoconfig``
   with the fragment ``tests/vm/debug-kernel.config`` (every option
   documented there) into the object tree ``usr/src/linux-headers-<kver>``;
3. check that every option of the fragment ended up in the final ``.config``
   exactly as requested (Kconfig silently drops an option whose dependencies
   are not met: a fragment that asks for KASAN but gets none fails here,
   naming ``CONFIG_KASAN``);
4. ``make -j2 bzImage modules`` under ``nice -n 10`` (log in ``build.log``),
   ``modules_install`` into ``lib/modules/<kver>`` (depmod'ed);
   ``boot/vmlinuz-<kver>`` and ``boot/config-<kver>``;
5. drop what building external modules does not need (objects, the
   uncompressed vmlinux, most of the source: PRUNE_SOURCE): ~250 MB stay.

The result has the layout of an unpacked Debian kernel (``tests.vm.kernels``),
so the rest of the harness uses it like one: out-of-tree modules build with
``make -C usr/src/linux-headers-<kver> M=...`` (the object tree; its
``Makefile`` and ``source`` link point at the unpacked source and are
re-pointed on every ``fetch()``, the tree may have moved), the initramfs
builder takes modules from ``lib/modules/<kver>``.

Cache: outside the work tree, in ``$SBRIG_DEBUG_KERNEL_CACHE`` or else
``${XDG_CACHE_HOME:-~/.cache}/sbrig/debug-kernel/<key>/``, so a fresh clone
on the same machine (a second CI run) reuses it. ``<key>`` is the
linux-source package version and a hash of what decides the result: the
fragment's options (sorted; its comments do not count, so documenting an
option costs no rebuild), that version, the compiler (``gcc --version``)
and RECIPE. A build fills a temporary sibling directory that is renamed
into place only when complete (a killed build never looks finished; its
leftovers are removed by the next build), under an inter-process lock
(``.lock-<key>``: a second process waits for the first's build). The
``KEEP`` most recently used keys are kept, older ones removed.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from . import kernels
from .common import BuildError, progress, run_cmd

#: The config fragment (documented line by line).
FRAGMENT = Path(__file__).resolve().with_name("debug-kernel.config")
SERIES = "6.1"
SOURCE_PKG = f"linux-source-{SERIES}"
TARBALL = Path(f"/usr/src/{SOURCE_PKG}.tar.xz")
#: kbuild's ARCH (x86 + CONFIG_64BIT=y, as Debian's amd64 headers).
KARCH = "x86"
#: Appended to the kernel release: ``uname -r`` is e.g. 6.1.192-sbrig-debug.
LOCALVERSION = "-sbrig-debug"
#: Bump when the steps below change what ends up in the cache.
RECIPE = 1
#: Parallel jobs and niceness of the kernel build (2 cores; QEMU tests may
#: run at the same time).
JOBS = int(os.environ.get("SBRIG_DEBUG_KERNEL_JOBS", "2"))
NICE = 10
#: Changes to linux-source before it is built: (file, old, new, why); each
#: ``old`` must occur exactly once. Part of the cache key.
SOURCE_PATCHES: list[tuple[str, str, str, str]] = [
    # With PROVE_RAW_LOCK_NESTING, 6.1's lockdep reports "BUG: Invalid wait
    # context" whenever a printk() from hard-irq context or under a raw
    # spinlock reaches the 8250 console, whose write() takes the port's
    # spinlock_t (seen at every boot under TCG: hrtimer_interrupt's
    # "hrtimer: interrupt took N ns"). It is a false positive for !RT
    # kernels (on RT, consoles do not print from the caller's context) and
    # lockdep switches itself off after it, so nothing later would be
    # checked. Mainline 6.12 fixed it with printk_legacy_allow_spinlock_
    # enter()/exit() around the legacy console's write(): the same wait-type
    # override, with the lockdep annotations 6.1.192 already has
    # (DEFINE_WAIT_OVERRIDE_MAP, lock_map_acquire_try; lib/debugobjects.c).
    ("kernel/printk/printk.c",
     "static bool console_emit_next_record(struct console *con, char *text, char *ext_text,\n",
     "/* sbrig debug kernel: mainline's printk_legacy_map (6.12) */\n"
     "static DEFINE_WAIT_OVERRIDE_MAP(printk_legacy_map, LD_WAIT_SLEEP);\n\n"
     "static bool console_emit_next_record(struct console *con, char *text, char *ext_text,\n",
     "the wait-type override map for legacy consoles"),
    ("kernel/printk/printk.c",
     "\tcall_console_driver(con, write_text, len, dropped_text);\n",
     "\tlock_map_acquire_try(&printk_legacy_map);\n"
     "\tcall_console_driver(con, write_text, len, dropped_text);\n"
     "\tlock_map_release(&printk_legacy_map);\n",
     "a legacy console's write() may take a spinlock_t in any context (!RT)"),
]

#: Most recently used cache entries kept.
KEEP = 3
STAMP = ".sbrig-debug-kernel.json"


def cache_root() -> Path:
    """``$SBRIG_DEBUG_KERNEL_CACHE`` or ``${XDG_CACHE_HOME:-~/.cache}/sbrig/debug-kernel``."""
    env = os.environ.get("SBRIG_DEBUG_KERNEL_CACHE")
    if env:
        return Path(env).resolve()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg).resolve() / "sbrig" / "debug-kernel"


# ------------------------------------------------------------ the fragment --

_OPT = re.compile(r"^(CONFIG_[A-Za-z0-9_]+)=(.+)$")
_UNSET = re.compile(r"^# (CONFIG_[A-Za-z0-9_]+) is not set$")


def parse_config(text: str, *, strict: bool = False, what: str = "config") -> dict[str, str]:
    """``{"CONFIG_X": "y" | "m" | "n" | value}`` of a .config or fragment
    ("is not set" reads as "n"). ``strict``: any other line that is not a
    comment or blank, and a repeated option, is an error."""
    out: dict[str, str] = {}
    for no, line in enumerate(text.splitlines(), 1):
        line = line.rstrip()
        m = _OPT.match(line)
        u = _UNSET.match(line)
        if m or u:
            name, value = (m.group(1), m.group(2)) if m else (u.group(1), "n")
            if strict and name in out:
                raise BuildError(f"{what}:{no}: {name} given twice")
            out[name] = value
        elif strict and line and not line.startswith("#"):
            raise BuildError(f"{what}:{no}: not an option line: {line!r}")
        elif strict and re.match(r"#\s*CONFIG_", line):
            raise BuildError(f"{what}:{no}: write '# CONFIG_X is not set' exactly: {line!r}")
    return out


def fragment_options(path: Path | None = None) -> dict[str, str]:
    """The fragment's options (``FRAGMENT`` by default)."""
    path = path or FRAGMENT
    return parse_config(path.read_text(), strict=True, what=str(path))


def check_config(wanted: dict[str, str], config: dict[str, str]) -> list[str]:
    """The fragment's options that the final .config does not have as
    requested, one sentence each (empty: all there)."""
    def show(v: str | None) -> str:
        return "not set" if v in (None, "n") else f"={v}"
    bad = []
    for name, value in wanted.items():
        got = config.get(name, "n")
        if got != value:
            bad.append(f"{name}: the fragment asks for {show(value)}, the final "
                       f".config has {show(config.get(name))} (a dependency not "
                       f"met or a choice decided otherwise: see its Kconfig entry)")
    return bad


# -------------------------------------------------------------- cache key --

def _cmd_out(argv: list[str]) -> str:
    return run_cmd(argv, what=" ".join(argv)).stdout.decode().strip()


def source_version() -> str:
    """Installed version of the linux-source-6.1 package."""
    if not TARBALL.exists():
        raise BuildError(f"{TARBALL} missing: apt-get install {SOURCE_PKG} "
                         f"(.ci/install-deps does)")
    try:
        return _cmd_out(["dpkg-query", "-W", "-f", "${Version}", SOURCE_PKG])
    except BuildError as exc:
        raise BuildError(f"{SOURCE_PKG} is not installed as a package: {exc}") from None


def key_inputs() -> dict:
    """What decides the built kernel (and so the cache key)."""
    options = "".join(f"{k}={v}\n" for k, v in sorted(fragment_options().items()))
    return {
        # the options, not the file: editing a comment costs no rebuild
        "fragment_sha256": hashlib.sha256(options.encode()).hexdigest(),
        "source": f"{SOURCE_PKG} {source_version()}",
        "gcc": _cmd_out(["gcc", "--version"]).splitlines()[0],
        "base": f"allnoconfig ARCH={KARCH} LOCALVERSION={LOCALVERSION}",
        "patches_sha256": hashlib.sha256(json.dumps(SOURCE_PATCHES).encode()).hexdigest(),
        "recipe": RECIPE,
    }


def cache_key(inputs: dict) -> str:
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()
    version = inputs["source"].split()[-1]
    return f"{re.sub(r'[^A-Za-z0-9.+-]', '_', version)}-{digest[:16]}"


# ------------------------------------------------------------------ build --

def _kernel_release(src: Path) -> str:
    """VERSION.PATCHLEVEL.SUBLEVEL EXTRAVERSION of the source + LOCALVERSION."""
    mk = (src / "Makefile").read_text()
    vals = {}
    for var in ("VERSION", "PATCHLEVEL", "SUBLEVEL", "EXTRAVERSION"):
        m = re.search(rf"^{var} = ?(.*)$", mk, re.M)
        if not m:
            raise BuildError(f"{src}/Makefile has no {var}")
        vals[var] = m.group(1).strip()
    return (f"{vals['VERSION']}.{vals['PATCHLEVEL']}.{vals['SUBLEVEL']}"
            f"{vals['EXTRAVERSION']}{LOCALVERSION}")


def _make(obj: Path, *targets: str, log: Path, what: str, env: dict | None = None) -> None:
    """``make -C <obj> ARCH=x86 LOCALVERSION=... targets`` with output to
    ``log``; a progress line every minute; BuildError with the log's tail."""
    argv = ["nice", "-n", str(NICE), "make", "-C", str(obj), f"-j{JOBS}",
            f"ARCH={KARCH}", f"LOCALVERSION={LOCALVERSION}", *targets]
    full_env = dict(os.environ, **(env or {}))
    t0 = time.monotonic()
    with open(log, "ab") as fh:
        fh.write(f"\n$ {' '.join(argv)}\n".encode())
        fh.flush()
        proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=full_env)
        try:
            while True:
                try:
                    rc = proc.wait(timeout=60)
                    break
                except subprocess.TimeoutExpired:
                    progress(f"debug kernel: {what}: {time.monotonic() - t0:.0f} s, "
                             f"{_log_tail(log, 1).strip()}")
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    if rc != 0:
        raise BuildError(f"debug kernel: {what} failed (exit {rc}): "
                         f"{' '.join(argv)}\n--- {log} (tail) ---\n{_log_tail(log, 60)}")


def _log_tail(log: Path, lines: int) -> str:
    with open(log, "rb") as fh:
        fh.seek(max(0, fh.seek(0, 2) - 16384))
        return "\n".join(fh.read().decode(errors="replace").splitlines()[-lines:])


def _slim_objtree(obj: Path) -> None:
    """Drop what external module builds never read (objects, archives, the
    uncompressed kernel images); keep .config, generated headers, scripts and
    tools binaries, Module.symvers and the .ko files."""
    for path in obj.rglob("*"):
        if path.is_file() and not path.is_symlink() and (
                path.suffix in (".o", ".a") or path.name.startswith(".tmp_vmlinux")
                or path.name in ("vmlinux", "vmlinux.o", "vmlinux.a", "vmlinux.bin")):
            path.unlink()


#: Source directories that external module builds never read: removed
#: from the cache entry after the build (1.1 GB of its 1.4).
PRUNE_SOURCE = ["Documentation", "drivers", "sound", "net", "fs", "samples",
                "virt", "LICENSES"]


def _prune_source(src: Path) -> None:
    """Remove PRUNE_SOURCE and every arch but x86 from the unpacked source."""
    for d in PRUNE_SOURCE:
        shutil.rmtree(src / d, ignore_errors=True)
    for d in (src / "arch").iterdir():
        if d.is_dir() and d.name != "x86":
            shutil.rmtree(d, ignore_errors=True)


def patch_source(src: Path) -> None:
    """Apply SOURCE_PATCHES to the unpacked source."""
    for rel, old, new, why in SOURCE_PATCHES:
        path = src / rel
        text = path.read_text()
        if text.count(old) != 1:
            raise BuildError(f"debug kernel: patching {rel} ({why}): {old!r} found "
                             f"{text.count(old)} times, expected once")
        path.write_text(text.replace(old, new))


def build(dest: Path, inputs: dict) -> float:
    """Build the debug kernel into ``dest`` (an empty directory); return the
    seconds it took. See the module docstring for the steps."""
    t0 = time.monotonic()
    srcs = dest / "usr" / "src"
    srcs.mkdir(parents=True)
    log = dest / "build.log"
    log.write_text(json.dumps(inputs, indent=1) + "\n")
    progress(f"debug kernel: unpacking {TARBALL.name}")
    run_cmd(["tar", "-xJf", str(TARBALL), "-C", str(srcs)], what=f"unpack {TARBALL}")
    src = srcs / SOURCE_PKG
    if not (src / "Makefile").exists():
        raise BuildError(f"{TARBALL} did not unpack to {SOURCE_PKG}/")
    patch_source(src)
    kver = _kernel_release(src)
    obj = srcs / f"linux-headers-{kver}"
    obj.mkdir()
    progress(f"debug kernel: allnoconfig + {FRAGMENT.name} "
             f"({len(fragment_options())} options)")
    proc = run_cmd(["scripts/kconfig/merge_config.sh", "-n", "-O", str(obj), str(FRAGMENT)],
                   cwd=src, env={"ARCH": KARCH, "LOCALVERSION": LOCALVERSION},
                   what="merge_config.sh")
    with open(log, "ab") as fh:
        fh.write(proc.stdout + proc.stderr)
    bad = check_config(fragment_options(), parse_config((obj / ".config").read_text()))
    if bad:
        raise BuildError(f"debug kernel: {len(bad)} option(s) of {FRAGMENT} did not "
                         f"make it into the .config:\n  " + "\n  ".join(bad))
    release = _cmd_out(["make", "-s", "-C", str(obj), f"ARCH={KARCH}",
                        f"LOCALVERSION={LOCALVERSION}", "kernelrelease"])
    if release != kver:
        raise BuildError(f"debug kernel: make kernelrelease says {release!r}, "
                         f"expected {kver!r}")
    progress(f"debug kernel: building {kver} (make -j{JOBS} bzImage modules, "
             f"nice {NICE}; log {log})")
    _make(obj, "bzImage", "modules", log=log, what="make bzImage modules")
    _make(obj, "modules_install", log=log, what="modules_install",
          env={"INSTALL_MOD_PATH": str(dest)})
    mods = dest / "lib" / "modules" / kver
    for link in ("build", "source"):
        if (mods / link).is_symlink():
            (mods / link).unlink()
    boot = dest / "boot"
    boot.mkdir()
    shutil.copyfile(obj / "arch" / "x86" / "boot" / "bzImage", boot / f"vmlinuz-{kver}")
    shutil.copyfile(obj / ".config", boot / f"config-{kver}")
    shutil.copyfile(obj / "System.map", boot / f"System.map-{kver}")
    _slim_objtree(obj)
    _prune_source(src)
    return time.monotonic() - t0


def _fix_paths(root: Path, kver: str) -> None:
    """Point the object tree's Makefile and ``source`` link at the unpacked
    source where it is now (the tree was built under another name)."""
    src = root / "usr" / "src" / SOURCE_PKG
    obj = root / "usr" / "src" / f"linux-headers-{kver}"
    mk = obj / "Makefile"
    text = mk.read_text()
    new = re.sub(r"(?m)^include\s+\S+/Makefile\s*$", f"include {src}/Makefile", text)
    if new.count(f"include {src}/Makefile") != 1:
        raise BuildError(f"unexpected {mk}:\n{text}")
    if new != text:
        mk.write_text(new)
    link = obj / "source"
    if not link.is_symlink() or os.readlink(link) != str(src):
        tmp = obj / ".source.new"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(src)
        os.replace(tmp, link)


class _Lock:
    """fcntl lock on ``<root>/.lock-<name>`` (blocking or not)."""

    def __init__(self, root: Path, name: str, block: bool = True) -> None:
        self.path = root / f".lock-{name}"
        self.block = block
        self.fh = None

    def __enter__(self) -> bool:
        self.fh = open(self.path, "w")
        try:
            fcntl.flock(self.fh, fcntl.LOCK_EX | (0 if self.block else fcntl.LOCK_NB))
            return True
        except BlockingIOError:
            return False

    def __exit__(self, *exc) -> None:
        fcntl.flock(self.fh, fcntl.LOCK_UN)
        self.fh.close()


def _prune(root: Path, current: str) -> None:
    """Remove cache entries beyond the KEEP most recently used and the
    leftovers of killed builds (never one in use: its lock is held while it
    is built or fetched)."""
    for junk in root.glob(".*.partial-*"):
        key = junk.name[1:].split(".partial-")[0]
        if key != current:
            with _Lock(root, key, block=False) as got:
                if got:
                    progress(f"debug kernel: removing {junk.name} (an interrupted build)")
                    shutil.rmtree(junk, ignore_errors=True)
    entries = []
    for d in root.iterdir():
        if d.is_dir() and not d.name.startswith(".") and d.name != current:
            st = d / STAMP
            entries.append((st.stat().st_mtime if st.exists() else 0.0, d))
    entries.sort(reverse=True)
    for _, d in entries[KEEP - 1:]:
        with _Lock(root, d.name, block=False) as got:
            if got:
                progress(f"debug kernel: removing old cache entry {d}")
                shutil.rmtree(d, ignore_errors=True)
                (root / f".lock-{d.name}").unlink(missing_ok=True)


def fetch(arch: str = "amd64-debug") -> kernels.Kernel:
    """The debug kernel as a :class:`tests.vm.kernels.Kernel`, built on the
    first call for this key (printing how long it took), then cached."""
    inputs = key_inputs()
    key = cache_key(inputs)
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    dest = root / key
    with _Lock(root, key):
        stamp = dest / STAMP
        if not stamp.exists():
            for junk in root.glob(f".{key}.partial-*"):
                progress(f"debug kernel: removing {junk.name} (an interrupted build)")
                shutil.rmtree(junk, ignore_errors=True)
            if dest.exists():          # no stamp: not ours to trust
                shutil.rmtree(dest)
            progress(f"debug kernel: not cached ({dest}); building it (cold: ~4 min on 2 cores)")
            tmp = Path(tempfile.mkdtemp(dir=root, prefix=f".{key}.partial-"))
            tmp.chmod(0o755)
            try:
                seconds = build(tmp, inputs)
                kver = _kernel_release(tmp / "usr" / "src" / SOURCE_PKG)
                (tmp / STAMP).write_text(json.dumps(
                    dict(inputs, kver=kver, build_seconds=round(seconds, 1),
                         built=time.strftime("%Y-%m-%d %H:%M:%S")), indent=1) + "\n")
                os.replace(tmp, dest)
            except BaseException:
                if (tmp / "build.log").exists():   # keep the log of a failure
                    shutil.copyfile(tmp / "build.log", root / "failed-build.log")
                    progress(f"debug kernel: build log kept as {root / 'failed-build.log'}")
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            progress(f"debug kernel: built {kver} in {seconds:.0f} s "
                     f"({seconds / 60:.1f} min), cached in {dest}")
        info = json.loads(stamp.read_text())
        kver = info["kver"]
        _fix_paths(dest, kver)
        os.utime(stamp)                # most recently used
        k = kernels.Kernel(arch, kver, kver, inputs["source"].split()[-1], dest)
        for p in (k.vmlinuz, k.headers / "Module.symvers", k.modules_dir / "modules.dep"):
            if not p.exists():
                raise BuildError(f"debug kernel cache entry {dest} lacks {p}; "
                                 f"remove the entry to rebuild it")
    _prune(root, key)
    return k


def main() -> int:
    """``python3 -m tests.vm.debugkernel [--check-config]``: build (or find)
    the kernel and print where; with --check-config only merge the fragment
    into a scratch tree and check it (seconds)."""
    import argparse
    import sys
    ap = argparse.ArgumentParser(prog="python3 -m tests.vm.debugkernel")
    ap.add_argument("--check-config", action="store_true",
                    help="only merge and check the fragment (no kernel build)")
    args = ap.parse_args()
    try:
        if args.check_config:
            return check_only()
        t0 = time.monotonic()
        k = fetch()
        print(f"{k.kver}: {k.vmlinuz} [{time.monotonic() - t0:.1f} s]")
        return 0
    except BuildError as exc:
        print(f"BUILD FAILED: {exc}", file=sys.stderr)
        return 2


def check_only() -> int:
    """Merge the fragment onto allnoconfig in a scratch object tree of the
    unpacked source and report options that did not stick."""
    with tempfile.TemporaryDirectory(prefix="sbrig-kconfig-") as tmp:
        progress(f"unpacking {TARBALL.name} (Kconfig files only)")
        run_cmd(["tar", "-xJf", str(TARBALL), "-C", tmp, "--wildcards",
                 f"{SOURCE_PKG}/Makefile", f"{SOURCE_PKG}/scripts",
                 f"{SOURCE_PKG}/*Kconfig*", f"{SOURCE_PKG}/arch/x86",
                 f"{SOURCE_PKG}/include", f"{SOURCE_PKG}/tools"],
                what="unpack Kconfig files")
        src = Path(tmp) / SOURCE_PKG
        obj = Path(tmp) / "obj"
        obj.mkdir()
        run_cmd(["scripts/kconfig/merge_config.sh", "-n", "-O", str(obj), str(FRAGMENT)],
                cwd=src, env={"ARCH": KARCH}, what="merge_config.sh")
        bad = check_config(fragment_options(), parse_config((obj / ".config").read_text()))
    for b in bad:
        print(b)
    print(f"{len(fragment_options())} options, {len(bad)} not as requested")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
