#!/usr/bin/python3
"""artifacts.py - build what a LAVA job of one commit boots.

    /usr/bin/python3 lava-jobs/artifacts.py --arch amd64 -o DIR
    /usr/bin/python3 lava-jobs/artifacts.py --arch armhf -o DIR   # BeagleBone Black

Writes into DIR (created; files replaced atomically):

    vmlinuz           Debian's kernel for the arch (armhf: a zImage)
    ramdisk.cpio.gz   the busybox initramfs of tests/vm (suspend_block.ko,
                      sb_test.ko and the kernel modules they need, every
                      target program: sbctl, sbagent, sbprobe, evread,
                      vkeypad, ...) plus the target-side LAVA scripts of
                      lava-jobs/target/ in /usr/bin (armhf: and the
                      BeagleBone's Ethernet driver, for the rig channel)
    am335x-boneblack-sbrig.dtb   (armhf only) the BeagleBone Black's tree
                      rebuilt with __symbols__ and firmware/sbrig-target.dts
                      applied (firmware/Makefile's sbrig-target.merged.dtb)
    artifacts.json    the manifest lava-jobs/render.py reads: the commit,
                      the arch, the kernel release, and each file's name,
                      size and SHA-256

The kernel, modules and programs come from the tests/vm harness
(tests/vm/build.py; everything it builds stays under build/), so a LAVA
job boots exactly what the test suite boots. ``--module-src DIR`` builds
suspend_block.ko from another copy of kernel-module/ (the test suite's
deliberately broken module); ``--commit`` records the commit (default:
``git describe --always --dirty --abbrev=40`` of this checkout).

Exit status: 0, 1 when a build step fails (the message has the command and
its output), 2 on usage errors.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.vm import initramfs, kernels  # noqa: E402
from tests.vm.build import (ModuleBuild, build_modules,  # noqa: E402
                            build_programs, sync_tree)
from tests.vm.common import (BUILD, BuildError, arch_spec,  # noqa: E402
                             build_lock, progress, run_cmd)

#: the target-side scripts the test definitions run (lava-jobs/target/)
TARGET_SCRIPTS = sorted((HERE / "target").iterdir()) if (HERE / "target").is_dir() else []

#: what each arch's jobs boot: manifest key -> file name in DIR
FILES = {
    "amd64": {"kernel": "vmlinuz", "ramdisk": "ramdisk.cpio.gz"},
    "armhf": {"kernel": "vmlinuz", "ramdisk": "ramdisk.cpio.gz",
              "dtb": "am335x-boneblack-sbrig.dtb"},
}

#: Debian kernel modules the jobs need beyond tests/vm's: a board's
#: Ethernet (its power jobs reach the rig host over the lab's network)
EXTRA_KMODS = {"amd64": [], "armhf": ["ti_cpsw", "davinci_mdio"]}

MANIFEST = "artifacts.json"
MANIFEST_SCHEMA = "sbrig-lava-artifacts"


def git_commit() -> str:
    """This checkout's commit (``-dirty`` when it has changes), or ""."""
    p = subprocess.run(["git", "-C", str(REPO), "describe", "--always",
                        "--dirty", "--abbrev=40"], capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else ""


def build_module_from(arch: str, k: kernels.Kernel, src: Path, tag: str) -> Path:
    """Build suspend_block.ko from the kernel-module/ copy ``src`` in
    build/lava/mod-<tag>/<arch>/ and return it."""
    spec = arch_spec(arch)
    if not (src / "Kbuild").exists():
        raise BuildError(f"--module-src {src}: no Kbuild file (not a kernel-module/ copy)")
    dst = BUILD / "lava" / f"mod-{tag}" / arch / "kernel-module"
    with build_lock(f"lava-mod-{tag}-{arch}"):
        sync_tree(src, dst)
        argv = ["make", "-C", str(k.headers), f"M={dst}", f"-j{os.cpu_count() or 2}",
                f"ARCH={spec.kernel_arch}"]
        if spec.cross_compile:
            argv.append(f"CROSS_COMPILE={spec.cross_compile}")
        progress(f"{arch}: building suspend_block.ko from {src}")
        run_cmd(argv + ["modules"], what=f"{arch} module build of {src}")
    ko = dst / "suspend_block.ko"
    if not ko.exists():
        raise BuildError(f"the build in {dst} made no suspend_block.ko")
    return ko


def board_dtb() -> Path:
    """firmware/'s BeagleBone Black tree with the target overlay applied."""
    out = BUILD / "firmware"
    dtb = out / "sbrig-target.merged.dtb"
    run_cmd(["make", "-s", "-C", str(REPO / "firmware"), f"O={out}", str(dtb)],
            what="make -C firmware (the BeagleBone Black tree with sbrig-target.dtbo)")
    return dtb


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _install(src: Path, dst: Path) -> None:
    tmp = dst.with_name(f".{dst.name}.tmp")
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


def build(arch: str, out: Path, *, module_src: Path | None = None,
          commit: str | None = None) -> dict:
    """Build the artifacts of ``arch`` into ``out``; return the manifest."""
    if arch not in FILES:
        raise BuildError(f"no LAVA artifacts for arch {arch!r} (have {sorted(FILES)})")
    out.mkdir(parents=True, exist_ok=True)
    k = kernels.fetch(arch)
    mods = build_modules(arch, k)
    tag = "lava"
    if module_src is not None:
        tag = "lava-" + hashlib.sha256(str(module_src.resolve()).encode()).hexdigest()[:8]
        mods = ModuleBuild(arch, dict(mods.modules), list(mods.missing))
        mods.modules["suspend_block"] = build_module_from(arch, k, module_src.resolve(), tag)
    progs = build_programs(arch) + TARGET_SCRIPTS
    img = initramfs.build_initramfs(arch, k, mods, progs, extra_kmods=EXTRA_KMODS[arch],
                                    name=f"initramfs-{tag}")
    sources = {"kernel": k.vmlinuz, "ramdisk": img}
    if arch == "armhf":
        sources["dtb"] = board_dtb()
    files = {}
    for key, name in FILES[arch].items():
        _install(sources[key], out / name)
        files[key] = {"name": name, "size": (out / name).stat().st_size,
                      "sha256": _sha256(out / name)}
    manifest = {"schema": MANIFEST_SCHEMA, "version": 1,
                "commit": git_commit() if commit is None else commit,
                "arch": arch, "kernel_release": k.kver,
                "module_src": str(module_src) if module_src else None,
                "files": files}
    tmp = out / f".{MANIFEST}.tmp"
    tmp.write_text(json.dumps(manifest, indent=2) + "\n")
    os.replace(tmp, out / MANIFEST)
    progress(f"{arch}: LAVA artifacts in {out} (commit {manifest['commit'] or 'unknown'})")
    return manifest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 2)[2])
    ap.add_argument("--arch", required=True, choices=sorted(FILES),
                    help="amd64: the qemu device type; armhf: beaglebone-black")
    ap.add_argument("-o", "--out", required=True, type=Path, help="output directory")
    ap.add_argument("--module-src", type=Path,
                    help="build suspend_block.ko from this copy of kernel-module/")
    ap.add_argument("--commit", help="the commit to record (default: git describe)")
    args = ap.parse_args(argv)
    try:
        build(args.arch, args.out, module_src=args.module_src, commit=args.commit)
    except BuildError as e:
        print(f"artifacts.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
