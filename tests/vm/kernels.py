"""Fetch Debian kernels (image + headers + kbuild) and unpack them.

For each arch the packages are::

    amd64: linux-image-<abi>-amd64-unsigned, linux-headers-<abi>-amd64,
           linux-headers-<abi>-common, linux-kbuild-<M.m>            (amd64)
    armhf: linux-image-<abi>-armmp:armhf, linux-headers-<abi>-armmp:armhf,
           linux-headers-<abi>-common, linux-kbuild-<M.m>            (amd64,
           because modules are cross-compiled on the amd64 host)

The ABI (e.g. ``6.1.0-57``) comes from the dependency of the metapackage
(``linux-image-amd64`` / ``linux-image-armmp:armhf``) and is never
hard-coded. All packages are pinned to the image package's version.

``.deb`` files are cached in ``build/cache/debs/`` (downloaded into a
temporary directory, then renamed into place) and unpacked with
``dpkg-deb -x`` into ``build/kernels/<arch>/`` through a temporary
directory that is renamed when complete, so an interrupted fetch never
leaves a half tree that looks finished.

The amd64-debug guest's kernel is not Debian's: ``fetch("amd64-debug")``
hands over to tests/vm/debugkernel.py, which builds it from the
linux-source-6.1 package into the same layout (a :class:`Kernel`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .common import (CACHE, KERNELS, ArchSpec, BuildError, arch_spec,
                     build_lock, populate_atomically, progress, run_cmd)

DEBS = CACHE / "debs"
STAMP = ".sbrig-kernel.json"


@dataclass(frozen=True)
class Kernel:
    """An unpacked Debian kernel for one arch."""

    arch: str
    abi: str        # e.g. "6.1.0-57"
    kver: str       # `uname -r` in the guest, e.g. "6.1.0-57-amd64"
    version: str    # Debian package version, e.g. "6.1.192-3"
    root: Path      # build/kernels/<arch>

    @property
    def spec(self) -> ArchSpec:
        return arch_spec(self.arch)

    @property
    def vmlinuz(self) -> Path:
        return self.root / "boot" / f"vmlinuz-{self.kver}"

    @property
    def config(self) -> Path:
        return self.root / "boot" / f"config-{self.kver}"

    @property
    def headers(self) -> Path:
        """Directory to pass to ``make -C`` for out-of-tree modules."""
        return self.root / "usr" / "src" / f"linux-headers-{self.kver}"

    @property
    def common_headers(self) -> Path:
        return self.root / "usr" / "src" / f"linux-headers-{self.abi}-common"

    @property
    def kbuild(self) -> Path:
        """Unpacked linux-kbuild (amd64 host tools: modpost, fixdep, ...)."""
        return self.root / "usr" / "lib" / f"linux-kbuild-{kbuild_series(self.abi)}"

    @property
    def modules_dir(self) -> Path:
        return self.root / "lib" / "modules" / self.kver


def kbuild_series(abi: str) -> str:
    """"6.1.0-57" -> "6.1" (the linux-kbuild-<series> package suffix)."""
    return ".".join(abi.split(".")[:2])


def _apt_cache(*args: str) -> str:
    return run_cmd(["apt-cache", *args], what="apt-cache").stdout.decode()


def lookup_abi(arch: str) -> str:
    """Return the current kernel ABI for ``arch`` from its metapackage."""
    spec = arch_spec(arch)
    meta = f"linux-image-{spec.flavour}:{spec.deb_arch}"
    out = _apt_cache("depends", meta)
    m = re.search(rf"linux-image-(\d+\.\d+\.\d+-\d+)-{spec.flavour}\b", out)
    if not m:
        raise BuildError(f"cannot find the kernel ABI in `apt-cache depends "
                         f"{meta}` (needs `dpkg --add-architecture "
                         f"{spec.deb_arch}` and apt-get update):\n{out}")
    return m.group(1)


def lookup_version(pkg: str) -> str:
    """Return the candidate version of ``pkg`` (``name[:arch]``)."""
    out = _apt_cache("show", "--no-all-versions", pkg)
    m = re.search(r"^Version: (\S+)", out, re.M)
    if not m:
        raise BuildError(f"no Version in `apt-cache show {pkg}`:\n{out}")
    return m.group(1)


def package_list(arch: str, abi: str, version: str) -> list[tuple[str, str]]:
    """(package, debian-arch) pairs to unpack for ``arch``; ``all`` = arch-indep."""
    spec = arch_spec(arch)
    return [
        (f"linux-image-{abi}-{spec.flavour}{spec.image_suffix}", spec.deb_arch),
        (f"linux-headers-{abi}-{spec.flavour}", spec.deb_arch),
        (f"linux-headers-{abi}-common", "all"),
        # host tools: always amd64, we build on amd64
        (f"linux-kbuild-{kbuild_series(abi)}", "amd64"),
    ]


def download(pkg: str, deb_arch: str, version: str) -> Path:
    """Return the cached .deb of ``pkg`` at ``version``, downloading it once.

    The file is fetched with ``apt-get download`` into a temporary directory
    and renamed into ``build/cache/debs/``, so a partial download is never
    mistaken for a cached one.
    """
    DEBS.mkdir(parents=True, exist_ok=True)
    final = DEBS / f"{pkg}_{version}_{deb_arch}.deb"
    if final.exists():
        return final
    spec = pkg if deb_arch == "all" else f"{pkg}:{deb_arch}"
    progress(f"downloading {spec}={version}")
    with tempfile.TemporaryDirectory(dir=DEBS, prefix=".dl-") as tmp:
        run_cmd(["apt-get", "download", "-q", "-o", "APT::Sandbox::User=root",
                 f"{spec}={version}"], cwd=tmp, what=f"download {spec}")
        debs = list(Path(tmp).glob("*.deb"))
        if len(debs) != 1:
            raise BuildError(f"apt-get download {spec}={version} produced "
                             f"{[d.name for d in debs]}")
        os.replace(debs[0], final)
    return final


def _fix_headers_makefile(k: Kernel) -> None:
    """Point the flavour Makefile's absolute ``include /usr/src/...`` at the
    unpacked common headers (re-done every time: the tree may have moved)."""
    mk = k.headers / "Makefile"
    text = mk.read_text()
    new = re.sub(r"(?m)^include\s+\S*/linux-headers-[^/\s]+-common/Makefile\s*$",
                 f"include {k.common_headers}/Makefile", text)
    if "include " not in new or new.count(str(k.common_headers)) != 1:
        raise BuildError(f"unexpected {mk}:\n{text}")
    if new != text:
        mk.write_text(new)


def _load_stamp(root: Path) -> dict | None:
    try:
        return json.loads((root / STAMP).read_text())
    except (OSError, ValueError):
        return None


def _lookup_cached(arch: str) -> tuple[str, str]:
    """(abi, version) for ``arch``; apt-cache takes ~2 s a call, so the answer
    is kept in build/cache/ until apt's lists change (apt-get update)."""
    spec = arch_spec(arch)
    lists = Path("/var/lib/apt/lists")
    key = lists.stat().st_mtime if lists.exists() else 0
    memo = CACHE / f"abi-{arch}.json"
    try:
        data = json.loads(memo.read_text())
        if data["lists_mtime"] == key:
            return data["abi"], data["version"]
    except (OSError, ValueError, KeyError):
        pass
    abi = lookup_abi(arch)
    version = lookup_version(
        f"linux-image-{abi}-{spec.flavour}{spec.image_suffix}:{spec.deb_arch}")
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = memo.with_name(f".{memo.name}.{os.getpid()}")
    tmp.write_text(json.dumps({"lists_mtime": key, "abi": abi, "version": version}))
    os.replace(tmp, memo)
    return abi, version


def fetch(arch: str) -> Kernel:
    """Make sure the current kernel for ``arch`` is unpacked; return it.

    Reuses ``build/kernels/<arch>`` when it already holds the same packages.
    If apt's lists are unusable (offline), falls back to an existing tree.
    A guest kind with the debug kernel (amd64-debug) gets it from
    tests/vm/debugkernel.py (built from linux-source once, cached).
    """
    spec = arch_spec(arch)
    if spec.debug:
        from . import debugkernel
        return debugkernel.fetch(arch)
    root = KERNELS / arch
    with build_lock(f"kernel-{arch}"):
        try:
            abi, version = _lookup_cached(arch)
        except BuildError:
            stamp = _load_stamp(root)
            if not stamp:
                raise
            progress(f"{arch}: apt lookup failed, reusing unpacked {stamp['kver']}")
            abi, version = stamp["abi"], stamp["version"]
        kver = f"{abi}-{spec.flavour}"
        pkgs = package_list(arch, abi, version)
        want = {"abi": abi, "version": version, "kver": kver,
                "packages": [f"{p}_{version}_{a}" for p, a in pkgs]}
        k = Kernel(arch, abi, kver, version, root)
        if _load_stamp(root) != want:
            debs = [download(p, a, version) for p, a in pkgs]
            progress(f"{arch}: unpacking kernel {kver} ({version})")
            KERNELS.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(dir=KERNELS, prefix=f".{arch}.partial-"))
            tmp.chmod(0o755)
            try:
                for deb in debs:
                    run_cmd(["dpkg-deb", "-x", str(deb), str(tmp)],
                            what=f"unpack {deb.name}")
                (tmp / STAMP).write_text(json.dumps(want, indent=1) + "\n")
                old = None
                if root.exists():
                    old = KERNELS / f".{arch}.old-{os.getpid()}"
                    os.replace(root, old)
                os.replace(tmp, root)
                if old:
                    shutil.rmtree(old, ignore_errors=True)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        for p in (k.vmlinuz, k.headers, k.modules_dir):
            if not p.exists():
                raise BuildError(f"{arch}: unpacked kernel lacks {p}")
        _fix_headers_makefile(k)
        # leftovers of interrupted runs
        for junk in KERNELS.glob(f".{arch}.*"):
            shutil.rmtree(junk, ignore_errors=True)
    return k


def fetch_deb_tree(pkg: str, deb_arch: str, dest: Path) -> Path:
    """Download ``pkg:deb_arch`` (candidate version) and unpack it at ``dest``
    (atomically; reused when ``dest`` exists). Used for busybox-static:armhf."""
    if (dest / ".sbrig-unpacked").exists():
        return dest
    version = lookup_version(f"{pkg}:{deb_arch}")
    deb = download(pkg, deb_arch, version)
    return populate_atomically(
        dest, ".sbrig-unpacked",
        lambda tmp: run_cmd(["dpkg-deb", "-x", str(deb), str(tmp)],
                            what=f"unpack {deb.name}"),
        deb.name + "\n")
