"""Build the kernel modules and static target programs for one arch.

Modules are built out of tree: each module directory is mirrored (same
relative path as in the repo) under ``build/mod/<arch>/`` and built there
with ``make -C <headers> M=<copy>``, so the source tree stays clean and
both arches can be built side by side. Mirroring copies only files whose
content changed, so kbuild's incremental build still works.

Modules, in order (a directory without a ``Kbuild`` file is skipped and
reported as missing):

* ``tests/vm/hello`` -- the harness's self-check module ``sbrig_hello.ko``
* ``kernel-module`` -- ``suspend_block.ko``
* ``tests/target/sb_test`` -- ``sb_test.ko``, linked against
  ``kernel-module``'s ``Module.symvers`` via ``KBUILD_EXTRA_SYMBOLS``
* ``tests/target/sb_torture`` -- ``sb_torture.ko``, the torture client
  (tests/test_module_torture.py), linked the same way
* ``tests/target/sb_campaign`` -- ``sb_campaign.ko``, which blocks at a
  chosen point of the suspend path (tests/test_module_campaign.py), linked
  the same way
* ``tests/target/test_power`` -- ``test_power.ko`` (amd64 only), the
  kernel's test power-supply driver from linux-source-6.1
* ``tests/target/sb_wire`` -- ``sb_wire.ko`` (amd64 only), a test GPIO
  chip that is a piece of wire (the marker line's end-to-end test)
* ``tests/target/gpio_sim`` -- ``gpio-sim.ko`` (amd64 only, see
  MODULE_ARCHES), whose C sources come from linux-source-6.1 and are
  patched while being copied (LINUX_SOURCE_FILES)

The amd64-debug guest builds the same modules against the debug kernel's
object tree (tests/vm/debugkernel.py), except gpio_sim and test_power:
its kernel builds gpio-sim and test_power itself (``=m``).

``SBRIG_VM_MODULES=tests/vm/hello,kernel-module`` builds only a subset.

Static programs: every ``tests/target/*.c``, ``kernel-module/tools/*.c``
and ``rig/virtual/target/*.c`` is one program, named after the file, built with
``<cc> -static -O2 -Wall -Werror -I kernel-module/include/uapi``. A source
line ``vm-build-flags: ...`` (e.g. in a comment) adds flags such as ``-lm``.

armhf: Debian's linux-kbuild only exists as an amd64 binary here and its
modpost gets ARM device-table sizes wrong, so ``prepare_kbuild`` rebuilds
modpost from linux-source's ``scripts/mod`` with ARM's elfconfig.h and
devicetable-offsets.h (once per unpacked tree).
"""

from __future__ import annotations

import concurrent.futures
import filecmp
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from . import kernels
from .common import (BINDIR, BUILD, CACHE, MODBUILD, REPO, BuildError,
                     arch_spec, build_lock, populate_atomically, progress,
                     run_cmd)

#: (repo-relative module dir, repo-relative dir whose Module.symvers it needs)
MODULE_DIRS: list[tuple[str, str | None]] = [
    ("tests/vm/hello", None),
    ("kernel-module", None),
    ("tests/target/sb_test", "kernel-module"),
    ("tests/target/sb_torture", "kernel-module"),
    ("tests/target/sb_campaign", "kernel-module"),
    ("tests/target/gpio_sim", None),
    ("tests/target/test_power", None),
    ("tests/target/sb_wire", None),
]
if os.environ.get("SBRIG_VM_MODULES"):
    # for engineers iterating on one module: a comma-separated subset
    _only = os.environ["SBRIG_VM_MODULES"].split(",")
    MODULE_DIRS = [m for m in MODULE_DIRS if m[0] in _only]

#: Module dirs built only for some arches (default: every arch). armmp
#: has no irq_sim/gpio-sim support worth patching in: gpio-sim is amd64 only.
#: The debug kernel (amd64-debug) has gpio-sim and test_power as its own
#: modules (tests/vm/debug-kernel.config), so only Debian's amd64 needs
#: the out-of-tree builds.
MODULE_ARCHES: dict[str, tuple[str, ...]] = {
    "tests/target/gpio_sim": ("amd64",),
    "tests/target/test_power": ("amd64",),
    "tests/target/sb_wire": ("amd64", "amd64-debug"),
}

#: Module dirs whose sources come from linux-source-<series>.tar.xz:
#: rel dir -> [(path in the tarball, name in the build copy,
#: [(old, new), ...] replacements that must each match exactly once)].
LINUX_SOURCE_FILES: dict[str, list[tuple[str, str, list[tuple[str, str]]]]] = {
    "tests/target/gpio_sim": [
        ("drivers/gpio/gpio-sim.c", "sim.c", []),
        ("drivers/gpio/gpiolib.h", "gpiolib.h", []),
        # IRQ_SIM is off in Debian's config: link it in; irq_to_desc is
        # not exported to modules (FACTS.md)
        ("kernel/irq/irq_sim.c", "irq_sim.c",
         [("handle_simple_irq(irq_to_desc(irqnum));",
           "generic_handle_irq_safe(irqnum);"),
          ('#include <linux/irq_sim.h>',
           '#include <linux/irq_sim.h>\n#include <linux/module.h>')]),
    ],
    "tests/target/test_power": [
        ("drivers/power/supply/test_power.c", "test_power.c", []),
    ],
}

#: Directories whose *.c files are each one static target program.
PROGRAM_DIRS = ["tests/target", "kernel-module/tools", "rig/virtual/target"]

UAPI_INCLUDE = "kernel-module/include/uapi"

_ARTIFACT_RE = re.compile(
    r"(\.(o|ko|mod|mod\.c|cmd|a|order|symvers|d|tmp)$)|^\.tmp|^\.cache\.mk$")


@dataclass
class ModuleBuild:
    """Result of build_modules: name -> built .ko, plus dirs without Kbuild."""

    arch: str
    modules: dict[str, Path] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)


# --------------------------------------------------------------- modpost --

def _linux_source_mod(series: str) -> Path:
    """Extract linux-source's scripts/mod and the two headers modpost
    includes into build/cache (once); return that directory."""
    dest = CACHE / f"linux-source-{series}-modpost"
    if (dest / ".complete").exists():
        return dest
    tarball = Path(f"/usr/src/linux-source-{series}.tar.xz")
    if not tarball.exists():
        raise BuildError(f"{tarball} missing: apt-get install linux-source-{series}")
    progress(f"extracting scripts/mod from {tarball.name} (~10 s)")
    top = f"linux-source-{series}"
    return populate_atomically(dest, ".complete", lambda tmp: run_cmd(
        ["tar", "-xJf", str(tarball), "-C", str(tmp), "--strip-components=1",
         f"{top}/scripts/mod", f"{top}/include/linux/license.h",
         f"{top}/include/linux/mod_devicetable.h"],
        what="extract scripts/mod from linux-source"))


def _offsets_header(asm: str) -> str:
    """Turn kbuild's devicetable-offsets.s into devicetable-offsets.h (the
    ``sed-offsets`` rule of scripts/Makefile.lib, in Python)."""
    out = ["#ifndef __DEVICETABLE_OFFSETS_H__",
           "#define __DEVICETABLE_OFFSETS_H__",
           "/* generated by tests/vm/build.py for ARM */", ""]
    for line in asm.splitlines():
        m = re.search(r'\.ascii\s*"(.*)"', line)
        text = m.group(1) if m else line.strip()
        if not text.startswith("->"):
            continue
        d = re.match(r"->(\S+) [$#]*(\S+) (.*)", text)
        if d:
            out.append(f"#define {d.group(1)} {d.group(2)} /* {d.group(3)} */")
        elif text.startswith("->#"):
            out.append(f"/* {text[3:]} */")
    out += ["", "#endif", ""]
    if not any(x.startswith("#define SIZE_of_device_id") for x in out):
        raise BuildError("devicetable-offsets.s has no SIZE_of_device_id:\n" + asm[:3000])
    return "\n".join(out)


def prepare_kbuild(k: kernels.Kernel) -> None:
    """Make the unpacked kbuild usable for ``k.arch`` (armhf: rebuild modpost)."""
    spec = k.spec
    if not spec.cross_compile:
        return
    mod_dir = k.kbuild / "scripts" / "mod"
    stamp = mod_dir / f".sbrig-modpost-{spec.kernel_arch}"
    if stamp.exists():
        return
    series = kernels.kbuild_series(k.abi)
    src = _linux_source_mod(series)
    progress(f"{k.arch}: rebuilding modpost for ARCH={spec.kernel_arch}")
    work = Path(tempfile.mkdtemp(dir=k.root, prefix=".modpost-"))
    try:
        shutil.copytree(src / "scripts", work / "scripts")
        shutil.copytree(src / "include", work / "include")
        sm = work / "scripts" / "mod"
        # devicetable-offsets.s with the target's kbuild flags
        dto = work / "dto"
        dto.mkdir()
        shutil.copy(sm / "devicetable-offsets.c", dto)
        (dto / "Kbuild").write_text("# devicetable-offsets.s only\n")
        run_cmd(["make", "-s", "-C", str(k.headers), f"M={dto}",
                 f"ARCH={spec.kernel_arch}", f"CROSS_COMPILE={spec.cross_compile}",
                 "devicetable-offsets.s"], what="compile devicetable-offsets.c")
        (sm / "devicetable-offsets.h").write_text(
            _offsets_header((dto / "devicetable-offsets.s").read_text()))
        # elfconfig.h from an object of the target
        run_cmd([spec.cc, "-c", "-o", str(sm / "empty.o"), str(sm / "empty.c")],
                what="compile empty.c")
        run_cmd(["gcc", "-O2", "-o", str(sm / "mk_elfconfig"),
                 str(sm / "mk_elfconfig.c")], what="build mk_elfconfig")
        elf = run_cmd([str(sm / "mk_elfconfig")],
                      input=(sm / "empty.o").read_bytes(), what="mk_elfconfig")
        (sm / "elfconfig.h").write_bytes(elf.stdout)
        run_cmd(["gcc", "-O2", "-o", str(sm / "modpost"),
                 *(str(sm / f) for f in ("modpost.c", "file2alias.c", "sumversion.c"))],
                cwd=sm, what="build modpost")
        shutil.copy(sm / "modpost", mod_dir / ".modpost.new")
        os.replace(mod_dir / ".modpost.new", mod_dir / "modpost")
        stamp.write_text(f"rebuilt from linux-source-{series} for ARM\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    src_ver = _dpkg_version(f"linux-source-{series}")
    if src_ver and src_ver != k.version:
        progress(f"note: modpost source is linux-source {src_ver}, kernel is {k.version}")


def _dpkg_version(pkg: str) -> str | None:
    try:
        return run_cmd(["dpkg-query", "-W", "-f", "${Version}", pkg]).stdout.decode()
    except BuildError:
        return None


# --------------------------------------------------------------- modules --

def _linux_source_files(k: kernels.Kernel, rel: str, dst: Path) -> None:
    """Extract LINUX_SOURCE_FILES[rel] from linux-source into ``dst``,
    patched; files are rewritten only when their content changes (so kbuild
    does not rebuild them every time)."""
    series = kernels.kbuild_series(k.abi)
    cache = CACHE / f"linux-source-{series}-files"
    wanted = [src for src, _, _ in LINUX_SOURCE_FILES[rel]]
    if not all((cache / w).exists() for w in wanted):
        tarball = Path(f"/usr/src/linux-source-{series}.tar.xz")
        if not tarball.exists():
            raise BuildError(f"{tarball} missing (needed by {rel}): "
                             f"apt-get install linux-source-{series}")
        progress(f"extracting {len(wanted)} file(s) from {tarball.name} for {rel}")
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cache) as tmp:
            run_cmd(["tar", "-xJf", str(tarball), "-C", tmp, "--strip-components=1",
                     *(f"linux-source-{series}/{w}" for w in wanted)],
                    what=f"extract {rel} sources from linux-source")
            for w in wanted:
                (cache / w).parent.mkdir(parents=True, exist_ok=True)
                os.replace(Path(tmp) / w, cache / w)
    for src, name, fixes in LINUX_SOURCE_FILES[rel]:
        text = (cache / src).read_text()
        for old, new in fixes:
            if text.count(old) != 1:
                raise BuildError(f"{rel}: patching {src}: {old!r} found "
                                 f"{text.count(old)} times, expected once")
            text = text.replace(old, new)
        out = dst / name
        if not out.exists() or out.read_text() != text:
            out.write_text(text)


def sync_tree(src: Path, dst: Path, keep: frozenset[str] = frozenset()) -> None:
    """Mirror source files of ``src`` into ``dst``, copying only changed
    files (kbuild outputs in ``dst`` are kept; stale sources removed, except
    the ``dst``-relative paths in ``keep``)."""
    dst.mkdir(parents=True, exist_ok=True)
    seen: set[Path] = set()
    for path in src.rglob("*"):
        rel = path.relative_to(src)
        if _ARTIFACT_RE.search(path.name) or "__pycache__" in rel.parts:
            continue
        target = dst / rel
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        seen.add(rel)
        if not target.exists() or not filecmp.cmp(path, target, shallow=False):
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    for path in list(dst.rglob("*")):
        rel = path.relative_to(dst)
        if path.is_file() and rel not in seen and str(rel) not in keep \
                and not _ARTIFACT_RE.search(path.name):
            path.unlink()


def build_modules(arch: str, kernel: kernels.Kernel | None = None) -> ModuleBuild:
    """Build every module of MODULE_DIRS for ``arch``; return the .ko files.

    Runs ``make -C <headers> M=build/mod/<arch>/<dir> modules`` (with
    ``ARCH``/``CROSS_COMPILE`` on armhf and ``KBUILD_EXTRA_SYMBOLS`` for
    modules that use another one's exports). Raises BuildError with the
    command and its output on any failure.
    """
    spec = arch_spec(arch)
    k = kernel or kernels.fetch(arch)
    result = ModuleBuild(arch)
    with build_lock(f"mod-{arch}"):
        prepare_kbuild(k)
        for rel, needs in MODULE_DIRS:
            if arch not in MODULE_ARCHES.get(rel, (arch,)):
                continue
            src = REPO / rel
            if not (src / "Kbuild").exists() and not (src / "Makefile").exists():
                result.missing.append(rel)
                continue
            dst = MODBUILD / arch / rel
            generated = LINUX_SOURCE_FILES.get(rel, [])
            sync_tree(src, dst, frozenset(name for _, name, _ in generated))
            if generated:
                _linux_source_files(k, rel, dst)
            argv = ["make", "-C", str(k.headers), f"M={dst}", f"-j{os.cpu_count() or 2}",
                    f"ARCH={spec.kernel_arch}"]
            if spec.cross_compile:
                argv.append(f"CROSS_COMPILE={spec.cross_compile}")
            if needs:
                symvers = MODBUILD / arch / needs / "Module.symvers"
                if not symvers.exists():
                    raise BuildError(f"{rel} needs {needs}/Module.symvers, "
                                     f"but {needs} was not built (no Kbuild?)")
                argv.append(f"KBUILD_EXTRA_SYMBOLS={symvers}")
            argv.append("modules")
            progress(f"{arch}: building module(s) in {rel}")
            run_cmd(argv, what=f"{arch} module build of {rel}")
            kos = sorted(dst.rglob("*.ko"))
            if not kos:
                raise BuildError(f"{arch}: make in {rel} produced no .ko")
            for ko in kos:
                result.modules[ko.stem] = ko
    return result


# -------------------------------------------------------------- programs --

def program_sources() -> list[Path]:
    """All static target program sources (discovered, sorted per dir)."""
    srcs: list[Path] = []
    for d in PROGRAM_DIRS:
        srcs += sorted((REPO / d).glob("*.c"))
    names: dict[str, Path] = {}
    for s in srcs:
        if s.stem in names:
            raise BuildError(f"two target programs named {s.stem}: {names[s.stem]} and {s}")
        names[s.stem] = s
    return srcs


def _newest_header_mtime(dirs: list[Path]) -> float:
    newest = 0.0
    for d in dirs:
        if d.exists():
            for h in d.rglob("*.h"):
                newest = max(newest, h.stat().st_mtime)
    return newest


#: Debian packages that give a cross compiler and its C library, per arch.
CROSS_PACKAGES: dict[str, tuple[str, ...]] = {
    "armhf": ("gcc-arm-linux-gnueabihf", "libc6-dev-armhf-cross"),
}

_toolchains_checked: set[str] = set()


def check_toolchain(arch: str) -> None:
    """Compile and link one static C program for ``arch`` (once per
    process), so a missing cross compiler or C library is named up front
    instead of failing every program's build with a header error."""
    if arch in _toolchains_checked:
        return
    spec = arch_spec(arch)
    pkgs = " ".join(CROSS_PACKAGES.get(arch, ("build-essential",)))
    with tempfile.TemporaryDirectory(prefix="sbrig-cc-") as tmp:
        src = Path(tmp) / "probe.c"
        src.write_text("#include <stdio.h>\n#include <sys/ioctl.h>\n"
                       "int main(void) { return puts(\"ok\") < 0; }\n")
        try:
            run_cmd([spec.cc, "-static", "-o", str(Path(tmp) / "probe"), str(src)],
                    what=f"{arch} toolchain check")
        except BuildError as exc:
            raise BuildError(
                f"the {arch} C toolchain ({spec.cc}, static) cannot build a "
                f"program: install {pkgs} (.ci/install-deps does)\n{exc}") from None
    _toolchains_checked.add(arch)


def build_programs(arch: str) -> list[Path]:
    """Compile every target program statically for ``arch``; return the
    binaries (``build/bin/<deb_arch>/<name>``: amd64-debug runs amd64's).
    Up to date binaries are kept."""
    spec = arch_spec(arch)
    out_dir = BINDIR / spec.deb_arch
    out_dir.mkdir(parents=True, exist_ok=True)
    srcs = program_sources()
    check_toolchain(arch)
    include_dirs = [REPO / UAPI_INCLUDE] + [REPO / d for d in PROGRAM_DIRS]
    hdr_mtime = _newest_header_mtime(include_dirs)

    def one(src: Path) -> Path:
        out = out_dir / src.stem
        # files a source #includes by relative path (e.g. sbagent.c
        # compiles host/lib/proto.c in) count as its sources too
        deps = [src] + [src.parent / inc for inc in re.findall(
            r'^#include "([^"]+)"', src.read_text(errors="replace"), re.M)]
        newest = max([hdr_mtime] + [d.stat().st_mtime for d in deps if d.exists()])
        if out.exists() and out.stat().st_mtime >= newest:
            return out
        progress(f"{arch}: compiling {src.relative_to(REPO)}")
        extra: list[str] = []
        m = re.search(r"vm-build-flags:(.*?)(\*/|$)", src.read_text(errors="replace"), re.M)
        if m:
            extra = m.group(1).split()
        tmp = out.with_name(f".{out.name}.tmp")
        run_cmd([spec.cc, "-static", "-O2", "-Wall", "-Werror",
                 "-I", str(REPO / UAPI_INCLUDE), "-I", str(src.parent),
                 "-o", str(tmp), str(src), *extra],
                what=f"{arch} build of {src.relative_to(REPO)}")
        os.replace(tmp, out)
        return out

    # amd64 and amd64-debug share the binaries: one writer at a time
    with build_lock(f"bin-{spec.deb_arch}"):
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
            outs = list(ex.map(one, srcs))
        wanted = {o.name for o in outs}
        for stale in out_dir.iterdir():
            if stale.name not in wanted:
                stale.unlink()
    return outs


# ------------------------------------------------------------------ all --

@dataclass
class Artifacts:
    """Everything needed to boot one arch."""

    arch: str
    kernel: kernels.Kernel
    modules: ModuleBuild
    programs: list[Path]
    initramfs: Path
    dtb: Path | None = None


def build_all(arch: str) -> Artifacts:
    """Fetch the kernel and build modules, programs and the initramfs."""
    from . import initramfs  # local import: initramfs imports this module

    k = kernels.fetch(arch)
    mods = build_modules(arch, k)
    progs = build_programs(arch)
    img = initramfs.build_initramfs(arch, k, mods, progs)
    dtb = None
    if arch == "armhf":
        from .qemu import make_arm_dtb
        dtb = make_arm_dtb()
    progress(f"{arch}: build complete ({len(mods.modules)} module(s), "
             f"{len(progs)} program(s))")
    return Artifacts(arch, k, mods, progs, img, dtb)


# ------------------------------------------------- host-interface variant --

#: Debian tools the host-interface guest gets (dynamically linked, copied
#: with their libraries): libgpiod v2's tools, libiio's, and libiio's
#: network server iiod (a lab rig host's remote-sensor path).
HOSTIF_DEBIAN_TOOLS = ["gpiodetect", "gpioset", "gpioget", "gpioinfo", "gpiomon",
                       "iio_info", "iio_attr", "iio_readdev", "iiod"]

#: Debian kernel modules the host-interface guest adds: virtio-net, for
#: QEMU user networking (iiod reached through a forwarded host port).
HOSTIF_KMODS = ["virtio_net"]

#: Release build of host/ (libsbrig, sbrigd, sbrig, tools).
HOST_RELEASE = BUILD / "host" / "release"


def build_host_programs() -> list[Path]:
    """``make -C host -j2`` (release); return its programs: sbrigd, sbrig
    and every sbrig-* tool that exists (none yet is fine)."""
    progress("host: make -C host (release)")
    run_cmd(["make", "-C", str(REPO / "host"), "-j2", f"O={HOST_RELEASE.parent}"],
            what="host release build")
    return sorted(p for p in HOST_RELEASE.iterdir()
                  if p.is_file() and os.access(p, os.X_OK)
                  and (p.name in ("sbrigd", "sbrig") or p.name.startswith("sbrig-")))


def build_hostif(arch: str = "amd64") -> Artifacts:
    """Artifacts of the host-interface guest: build_all(arch) plus an
    initramfs variant (``initramfs-hostif.cpio.gz``) with the host programs
    of build_host_programs() and HOSTIF_DEBIAN_TOOLS, their shared
    libraries, gpio-sim and HOSTIF_KMODS. amd64 only: they are binaries of this machine."""
    from . import initramfs

    if arch != "amd64":
        raise BuildError(f"the host-interface guest is amd64 only, not {arch}")
    a = build_all(arch)
    if "gpio-sim" not in a.modules.modules:
        raise BuildError("gpio-sim.ko was not built (tests/target/gpio_sim)")
    tools: list[Path] = []
    for t in HOSTIF_DEBIAN_TOOLS:
        # iiod is in /usr/sbin, not on every user's PATH
        found = shutil.which(t, path=os.pathsep.join(
            [os.environ.get("PATH", ""), "/usr/sbin", "/sbin"]))
        if not found:
            raise BuildError(f"{t} not found: apt-get install gpiod libiio-utils "
                             f"iiod (gpiod 2.x from bookworm-backports)")
        tools.append(Path(found))
    host = build_host_programs()
    img = initramfs.build_initramfs(arch, a.kernel, a.modules, a.programs,
                                    host_programs=tools + host,
                                    extra_kmods=HOSTIF_KMODS,
                                    name="initramfs-hostif")
    progress(f"{arch}: hostif initramfs with {', '.join(p.name for p in host) or 'no sbrig programs'}")
    return Artifacts(arch, a.kernel, a.modules, a.programs, img, a.dtb)
