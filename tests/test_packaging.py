"""The Debian packages of debian/, built, checked, installed and used.

The packages are built with dpkg-buildpackage in a copy of the tree
(build/pkg/sbrig: the files git knows or would add, nothing of build/), so
the checkout stays clean and nothing built elsewhere is reused:

* ``dpkg-buildpackage -b -us -uc``: sbrig, sbrig-dkms and
  sbrig-target-tools for amd64;
* ``dpkg-buildpackage -aarmhf -B -Ppkg.sbrig.target-only -us -uc``:
  sbrig-target-tools for armhf with the cross compiler.

Then: lintian at its default level on both; sbrig installed with
``dpkg --root`` into a throwaway root (maintainer scripts run outside a
chroot with DPKG_ROOT, as dpkg's --force-script-chrootless does: they
create the "sbrig" group and /run/sbrig inside that root); its daemon
started from the ExecStart line of the installed unit against the INA226
emulator -- there is no systemd in the test environment, so the line is run
by the test, with its absolute paths taken inside the root and the unit's
Group= applied -- and answering ``sbrig status``; ``dkms build`` of
sbrig-dkms (unpacked with dpkg-deb -x: its postinst would build for the
machine's kernels) against Debian's headers from the build cache, in a
DKMS tree under the test's temporary directory (nothing is installed into
/lib/modules, /usr/src or /var/lib/dkms); and the packaged bash completion.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.test_power import Emulator
from tests.qemuqmp import QemuQmp
from tests.sbrigdrig import stop_daemon

REPO = Path(__file__).resolve().parents[1]
PKG = REPO / "build" / "pkg"
#: where the sbrig package puts rig/virtual/compare.conf (read-only data,
#: not /etc/sbrig: a NAME.conf there is a rig description to sbrigd@NAME)
VIRTUAL_COMPARE_CONF = "/usr/share/sbrig/virtual-compare.conf"
SRC = PKG / "sbrig"


def changelog_version() -> str:
    first = (REPO / "debian" / "changelog").read_text().splitlines()[0]
    m = re.match(r"sbrig \(([^)]+)\)", first)
    assert m, f"debian/changelog: first line {first!r}"
    return m.group(1)


VERSION = changelog_version()


def run(argv, cwd=None, timeout=900, env=None, check=True):
    p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True,
                       timeout=timeout, env=env)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, argv))}: exit {p.returncode}\n"
                             f"{p.stdout[-4000:]}\n{p.stderr[-4000:]}")
    return p


def copy_tree(dst: Path) -> None:
    """The files of the checkout git tracks or would add (not build/)."""
    out = run(["git", "-C", str(REPO), "ls-files", "-z", "-co",
               "--exclude-standard"]).stdout
    for rel in filter(None, out.split("\0")):
        if rel.startswith("build/"):
            continue
        src = REPO / rel
        if not src.exists() and not src.is_symlink():
            continue        # deleted in the work tree, not yet in the index
        d = dst / rel
        d.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), d)
        else:
            shutil.copy2(src, d)


def git_status() -> str:
    return run(["git", "-C", str(REPO), "status", "--porcelain"]).stdout


@pytest.fixture(scope="module")
def debs():
    """Build the packages once; a dict of name_arch -> .deb path."""
    before = git_status()
    shutil.rmtree(PKG, ignore_errors=True)
    SRC.mkdir(parents=True)
    copy_tree(SRC)
    t0 = time.monotonic()
    run(["dpkg-buildpackage", "-b", "-us", "-uc"], cwd=SRC)
    t1 = time.monotonic()
    run(["dpkg-buildpackage", "-aarmhf", "-B", "-Ppkg.sbrig.target-only",
         "-us", "-uc"], cwd=SRC)
    t2 = time.monotonic()
    print(f"package builds: amd64 {t1 - t0:.1f} s, armhf {t2 - t1:.1f} s")
    found = {}
    for deb in PKG.glob("*.deb"):
        name, version, arch = deb.stem.split("_")
        assert version == VERSION, deb
        found[f"{name}_{arch}"] = deb
    return {"debs": found, "status_before": before}


def deb_files(deb: Path) -> set[str]:
    listing = run(["dpkg-deb", "-c", str(deb)]).stdout
    return {line.split(None, 5)[5].split(" -> ")[0].lstrip(".")
            for line in listing.splitlines()}


def deb_field(deb: Path, field: str) -> str:
    return run(["dpkg-deb", "-f", str(deb), field]).stdout.strip()


def test_packages_build(debs):
    d = debs["debs"]
    for want in ("sbrig_amd64", "sbrig-dkms_all", "sbrig-target-tools_amd64",
                 "sbrig-target-tools_armhf"):
        assert want in d, f"{want} not built: {sorted(d)}"
    # the armhf build (target-only profile) leaves out the host package
    assert "sbrig_armhf" not in d

    files = deb_files(d["sbrig_amd64"])
    for f in ("/usr/bin/sbrig", "/usr/sbin/sbrigd",
              "/usr/libexec/sbrig/sbrig-powercat",
              "/usr/libexec/sbrig/sbrig-linkdump",
              "/usr/libexec/sbrig/sbrig-gpio",
              "/usr/libexec/sbrig/sbrig-capwrite",
              "/usr/share/man/man1/sbrig.1.gz",
              "/usr/share/man/man5/sbrig.conf.5.gz",
              "/usr/share/man/man8/sbrigd.8.gz",
              "/lib/systemd/system/sbrigd.service",
              "/lib/systemd/system/sbrigd@.service",
              "/usr/lib/sysusers.d/sbrig.conf",
              "/usr/lib/tmpfiles.d/sbrig.conf",
              "/usr/share/bash-completion/completions/sbrig",
              "/lib/udev/rules.d/60-sbrig.rules",
              "/usr/libexec/sbrig/sbrig-iio-access",
              "/usr/share/doc/sbrig/examples/virtual.conf",
              VIRTUAL_COMPARE_CONF):
        assert f in files, f"{f} not in sbrig: {sorted(files)}"
    # the virtual rig's compare thresholds, as the qemu device dictionary
    # names them by default: the source's file, and sbrig compare takes it
    x = PKG / "x-sbrig"
    shutil.rmtree(x, ignore_errors=True)
    run(["dpkg-deb", "-x", str(d["sbrig_amd64"]), str(x)])
    conf = x / VIRTUAL_COMPARE_CONF.lstrip("/")
    assert conf.read_bytes() == (REPO / "rig/virtual/compare.conf").read_bytes()
    assert stat.S_IMODE(conf.stat().st_mode) == 0o644
    dictionary = (REPO / "lava-jobs/devices/qemu-sbrig.jinja2").read_text()
    assert f"default('{VIRTUAL_COMPARE_CONF}')" in dictionary
    printed = run([str(x / "usr/bin/sbrig"), "compare", "-c", str(conf),
                   "--print-config"]).stdout
    assert re.search(r"^\[energy_total_uJ\]\nmin_change\s*=\s*0\.12\n", printed,
                     re.M), printed
    # the module and DKMS belong to sbrig-dkms only
    assert not any(f.startswith("/usr/src/") for f in files)
    assert "dkms" not in deb_field(d["sbrig_amd64"], "Depends")

    dkms_files = deb_files(d["sbrig-dkms_all"])
    src = f"/usr/src/suspend_block-{VERSION}"
    for f in ("dkms.conf", "Makefile", "Kbuild", "main.c", "sb_internal.h",
              "include/linux/suspend_blocker.h",
              "include/uapi/linux/suspend_block_dev.h"):
        assert f"{src}/{f}" in dkms_files, f"{src}/{f} not in sbrig-dkms"
    assert deb_field(d["sbrig-dkms_all"], "Depends").startswith("dkms")

    machine = {"amd64": "Advanced Micro Devices X86-64", "armhf": "ARM"}
    for arch, want in machine.items():
        deb = d[f"sbrig-target-tools_{arch}"]
        assert deb_field(deb, "Architecture") == arch
        assert {"/usr/sbin/sbctl", "/usr/sbin/sbagent",
                "/usr/share/man/man8/sbctl.8.gz",
                "/usr/share/man/man8/sbagent.8.gz"} <= deb_files(deb)
        x = PKG / f"x-{arch}"
        shutil.rmtree(x, ignore_errors=True)
        run(["dpkg-deb", "-x", str(deb), str(x)])
        for prog in ("sbctl", "sbagent"):
            path = x / "usr" / "sbin" / prog
            hdr = run(["readelf", "-h", str(path)]).stdout
            assert re.search(r"Machine:\s+" + re.escape(want), hdr), hdr
            # static: no program interpreter, no shared library
            prog_hdrs = run(["readelf", "-l", "-d", str(path)]).stdout
            assert "INTERP" not in prog_hdrs and "NEEDED" not in prog_hdrs, \
                f"{arch} {prog} is not static:\n{prog_hdrs}"

    # built in the copy: the checkout is as it was
    assert git_status() == debs["status_before"]
    assert not (REPO / "debian" / "build").exists()


def test_lintian_default_level(debs):
    for changes in (f"sbrig_{VERSION}_amd64.changes",
                    f"sbrig_{VERSION}_armhf.changes"):
        p = run(["lintian", "--fail-on", "error,warning", str(PKG / changes)],
                check=False, timeout=300)
        tags = [l for l in p.stdout.splitlines() if re.match(r"[EW]: ", l)]
        assert p.returncode == 0 and not tags, \
            f"lintian {changes}: exit {p.returncode}\n{p.stdout}{p.stderr}"


def make_root(tmp: Path) -> Path:
    root = tmp / "root"
    for d in ("var/lib/dpkg/info", "var/lib/dpkg/updates", "etc"):
        (root / d).mkdir(parents=True)
    (root / "var/lib/dpkg/status").touch()
    return root


def unit_value(unit: Path, key: str) -> str:
    for line in unit.read_text().splitlines():
        if line.startswith(key + "="):
            return line.split("=", 1)[1]
    raise AssertionError(f"{unit}: no {key}=")


class PkgDaemon:
    """The packaged sbrigd, started from the unit's ExecStart line."""

    def __init__(self, root: Path, env: dict, gid: int) -> None:
        unit = root / "lib/systemd/system/sbrigd.service"
        argv = unit_value(unit, "ExecStart").split()
        # absolute paths of the line are paths inside the root
        self.argv = [str(root / a.lstrip("/")) if a.startswith("/") else a
                     for a in argv]
        self.proc = subprocess.Popen(self.argv, env=env, group=gid,
                                     stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        self.log: list[str] = []
        self.up = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        if not self.up.wait(20):
            self.stop()
            raise AssertionError("sbrigd did not start:\n" + "".join(self.log))

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.log.append(line)
            if "listening on" in line:
                self.up.set()
        self.up.set()

    def stop(self) -> int:
        return stop_daemon(self.proc)


@pytest.fixture(scope="module")
def installed(debs, tmp_path_factory):
    """sbrig installed into a throwaway root and its daemon running (from
    the unit's ExecStart line) against the INA226 emulator, with two keys
    on a real QEMU's QMP socket (tests/qemuqmp.py)."""
    tmp = tmp_path_factory.mktemp("pkg")
    deb = debs["debs"]["sbrig_amd64"]
    # the machine has what the package depends on (no change is made)
    run(["dpkg", "--dry-run", "-i", str(deb)])
    root = make_root(tmp)
    # --force-depends: the throwaway root has none of the libraries; the
    # programs run with the machine's (checked just above)
    run(["dpkg", f"--root={root}", "--force-script-chrootless",
         "--force-depends", "--log=/dev/null", "-i", str(deb)])

    emu = Emulator(tmp, "--current-uA", "30000", "--rate", "500")
    qmp = QemuQmp(tmp / "qmp.sock")
    conf = root / "etc/sbrig/rig.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text(f"""[rig]
name = pkgtest
[power]
uri = {emu.uri}
device = ina226
shunt_uohm = 100000
[key:power]
chip = qmp:{tmp / 'qmp.sock'}
line = 116
[key:volume-up]
chip = qmp:{tmp / 'qmp.sock'}
line = 115
""")
    groups = {l.split(":")[0]: int(l.split(":")[2])
              for l in (root / "etc/group").read_text().splitlines()}
    env = dict(os.environ)
    # /run is the machine's: the socket goes into the root's /run/sbrig
    # (made by the postinst through tmpfiles.d)
    env["SBRIG_SOCKET"] = str(root / "run/sbrig/sbrigd.sock")
    daemon = PkgDaemon(root, env, groups["sbrig"])

    class I:
        pass
    i = I()
    i.root, i.env, i.groups, i.daemon, i.conf = root, env, groups, daemon, conf
    i.sbrig = root / "usr/bin/sbrig"
    yield i
    rc = daemon.stop()
    emu.stop()
    qmp.close()
    assert rc == 0, "".join(daemon.log)


def test_sbrig_installs_and_its_daemon_answers(installed):
    i = installed
    root = i.root
    status = run(["dpkg", f"--root={root}", "-s", "sbrig"]).stdout
    assert "Status: install ok installed" in status
    # the postinst: the "sbrig" system group (sysusers.d), /run/sbrig owned
    # by it (tmpfiles.d), the unit enabled (deb-systemd-helper)
    assert "sbrig" in i.groups and i.groups["sbrig"] < 1000
    run_dir = (root / "run/sbrig").stat()
    assert run_dir.st_gid == i.groups["sbrig"]
    assert stat.S_IMODE(run_dir.st_mode) == 0o750
    assert (root / "etc/systemd/system/multi-user.target.wants/sbrigd.service"
            ).is_symlink()
    unit = root / "lib/systemd/system/sbrigd.service"
    assert unit_value(unit, "ExecStart") == "/usr/sbin/sbrigd -c /etc/sbrig/rig.conf"
    assert unit_value(unit, "Group") == "sbrig"

    # the socket: mode 0660, group sbrig (the unit's Group=)
    sock = Path(i.env["SBRIG_SOCKET"])
    st = sock.stat()
    assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o660
    assert st.st_gid == i.groups["sbrig"]

    p = run([str(i.sbrig), "status", "--json"], env=i.env, timeout=30)
    st = json.loads(p.stdout)
    assert st["rig"]["name"] == "pkgtest", p.stdout
    assert st["rig"]["config"] == str(i.conf), p.stdout
    assert st["sensor"]["device"] == "ina226", p.stdout
    assert st["sensor"]["current_mA"] == pytest.approx(30.0, rel=0.05), p.stdout
    v = run([str(i.sbrig), "--version"]).stdout
    assert VERSION in v, v


def test_packaged_template_runs_a_second_rig(installed):
    """sbrigd@lab-2.service as packaged: its ExecStart for the instance
    (tests/test_rigs.py expands the specifiers), paths inside the root,
    next to the default rig; sbrig -r and status --all find both."""
    from tests.test_rigs import unit_exec_start
    i = installed
    unit = i.root / "lib/systemd/system/sbrigd@.service"
    argv = unit_exec_start(unit, "lab-2")
    assert argv == ["/usr/sbin/sbrigd", "-r", "lab-2", "-c",
                    "/etc/sbrig/lab-2.conf", "-s", "/run/sbrig/lab-2.sock"]
    assert unit_value(unit, "Group") == "sbrig"
    # the template is not enabled by itself (an instance is)
    assert not list((i.root / "etc/systemd/system").rglob("sbrigd@*"))
    conf = i.root / "etc/sbrig/lab-2.conf"
    power = [l for l in i.conf.read_text().splitlines() if l.startswith("uri")]
    conf.write_text(f"[rig]\nname = lab2\n[power]\n{power[0]}\ndevice = ina226\n")
    proc = subprocess.Popen([str(i.root / a.lstrip("/")) if a.startswith("/")
                             else a for a in argv], env=i.env,
                            group=i.groups["sbrig"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        sock = i.root / "run/sbrig/lab-2.sock"
        deadline = time.monotonic() + 20
        while not sock.exists():
            assert proc.poll() is None and time.monotonic() < deadline, \
                proc.stderr.read() if proc.poll() is not None else "no socket"
            time.sleep(0.1)
        assert sock.stat().st_gid == i.groups["sbrig"]
        env = {k: v for k, v in i.env.items() if k != "SBRIG_SOCKET"}
        env["SBRIG_RUN_DIR"] = str(i.root / "run/sbrig")
        p = run([str(i.sbrig), "-r", "lab-2", "status", "--json"], env=env,
                timeout=30)
        assert json.loads(p.stdout)["rig"]["name"] == "lab2"
        p = run([str(i.sbrig), "status", "--all", "--json"], env=env,
                timeout=30)
        rigs = {r["rig"]: r for r in json.loads(p.stdout)["rigs"]}
        assert rigs["sbrigd"]["default"] and rigs["sbrigd"]["answering"]
        assert rigs["sbrigd"]["status"]["rig"]["name"] == "pkgtest"
        assert rigs["lab-2"]["status"]["rig"]["name"] == "lab2"
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0


def udev_rules(path: Path) -> list[dict[str, tuple[str, str]]]:
    """The rules of a udev rules file: each a dict KEY -> (operator,
    value), KEY with its {attribute} if it has one."""
    rules = []
    for line in path.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        pairs = re.findall(r'([A-Z]+(?:\{[^}]*\})?)\s*(==|!=|\+=|:=|=)\s*"([^"]*)"', line)
        assert pairs, f"{path}: {line!r}"
        rules.append({k: (op, v) for k, op, v in pairs})
    return rules


#: an ina226 of Linux 6.1's ina2xx-adc in sysfs, as the kernel makes it
#: (tests/fixtures/iio-ina226-sysfs.txt, listed in a guest): each file's
#: path in the device's directory and its mode
def ina226_sysfs_fixture() -> list[tuple[str, int]]:
    out = []
    for line in (REPO / "tests/fixtures/iio-ina226-sysfs.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            mode, path = line.split()
            out.append((path, int(mode, 8)))
    return out


#: what sbrigd (host/lib/power.c) and libiio write of such a device (and
#: the sampling frequency, which other drivers set directly)
WRITTEN = {"current_timestamp_clock", "in_oversampling_ratio", "in_sampling_frequency",
           "in_voltage0_integration_time", "in_voltage1_integration_time",
           "in_shunt_resistor", "buffer/enable", "buffer/length",
           "buffer/watermark", "buffer0/enable", "buffer0/length",
           "buffer0/watermark"}


def test_udev_rules_give_the_sbrig_group_the_rigs_devices(installed, tmp_path):
    """The packaged 60-sbrig.rules give the group the postinst made the
    GPIO chips and IIO devices, and its RUN helper (run here as udev runs
    it, on a copy of an ina226's sysfs directory with the kernel's modes)
    gives that group exactly the attributes sbrigd and libiio write."""
    i = installed
    rules = udev_rules(i.root / "lib/udev/rules.d/60-sbrig.rules")
    gpio = [r for r in rules if r.get("SUBSYSTEM") == ("==", "gpio")]
    iio = [r for r in rules if r.get("SUBSYSTEM") == ("==", "iio")]
    assert len(gpio) == 1 and len(iio) == 1, rules
    assert gpio[0]["KERNEL"] == ("==", "gpiochip[0-9]*")
    assert iio[0]["KERNEL"] == ("==", "iio:device[0-9]*")
    for r in (gpio[0], iio[0]):
        # every event but remove: a change event would reset the node
        assert r["ACTION"] == ("!=", "remove")
        assert r["GROUP"] == ("=", "sbrig") and r["MODE"] == ("=", "0660")
    assert "sbrig" in i.groups          # the group the postinst made
    argv = iio[0]["RUN"][1].split()
    assert argv[0] == "/usr/libexec/sbrig/sbrig-iio-access" and argv[1:] == ["sbrig", "%S%p"]
    helper = i.root / argv[0].lstrip("/")
    assert os.access(helper, os.X_OK)

    dev = tmp_path / "sys/devices/platform/i2c/i2c-0/0-0040/iio:device0"
    files = ina226_sysfs_fixture()
    for rel, mode in files:
        (dev / rel).parent.mkdir(parents=True, exist_ok=True)
        (dev / rel).write_text("0\n")
        (dev / rel).chmod(mode)
    gid = i.groups["sbrig"]
    # %S%p is the device's directory; the group by number: this machine
    # has no "sbrig" group, the throwaway root has
    run([str(helper), str(gid), str(dev)])
    for rel, mode in files:
        st = (dev / rel).stat()
        if rel in WRITTEN or rel.startswith(("scan_elements/", "buffer0/")) \
                and rel.endswith("_en"):
            assert (st.st_gid, stat.S_IMODE(st.st_mode)) == (gid, mode | 0o020), rel
        else:
            assert (st.st_gid, stat.S_IMODE(st.st_mode)) == (0, mode), rel
    # the helper names a device directory it cannot use
    p = run([str(helper), str(gid), str(tmp_path / "nonexistent")], check=False)
    assert p.returncode == 2 and "DEVICE_DIR" in p.stderr


def complete(sbrig: Path, words: list[str], env: dict,
             completion: Path) -> list[str]:
    """COMPREPLY of _sbrig for the command line sbrig WORDS... (the last
    word being completed), in a bash with the completion sourced."""
    script = ('source "$1"; shift; COMP_WORDS=("$@"); '
              'COMP_CWORD=$(($# - 1)); _sbrig; printf "%s\\n" "${COMPREPLY[@]}"')
    p = run(["bash", "--norc", "-c", script, "bash", str(completion),
             str(sbrig), *words], env=env, timeout=30)
    return [w for w in p.stdout.splitlines() if w]


def test_bash_completion_commands_options_keys(installed):
    i = installed
    comp = i.root / "usr/share/bash-completion/completions/sbrig"
    assert complete(i.sbrig, ["sta"], i.env, comp) == ["status"]
    assert set(complete(i.sbrig, ["h"], i.env, comp)) == {"hold", "history"}
    assert complete(i.sbrig, ["capture", "--ou"], i.env, comp) == ["--output"]
    assert complete(i.sbrig, ["--so"], i.env, comp) == ["--socket"]
    assert complete(i.sbrig, ["plug", ""], i.env, comp) == ["in", "out"]
    assert complete(i.sbrig, ["export", "r.json", "--samples", "t"], i.env,
                    comp) == ["tsv"]
    # sub-commands and their own options
    assert complete(i.sbrig, ["history", "tr"], i.env, comp) == ["trend"]
    assert "--window" in complete(i.sbrig, ["history", "trend", "--w"],
                                  i.env, comp)
    # key names: the [key:NAME] sections of the daemon's rig description
    assert complete(i.sbrig, ["press", ""], i.env, comp) == ["power", "volume-up"]
    assert complete(i.sbrig, ["latency", "--key", "vol"], i.env,
                    comp) == ["volume-up"]
    sock = i.env["SBRIG_SOCKET"]
    env = {k: v for k, v in i.env.items() if k != "SBRIG_SOCKET"}
    assert complete(i.sbrig, ["-s", sock, "press", "p"], env,
                    comp) == ["power"]


def test_bash_completion_reads_new_commands_from_the_help(tmp_path):
    """A command and options the completion has never seen complete from
    the help alone (a stand-in program prints the help: a mock of a future
    sbrig, since no such command exists yet)."""
    fake = tmp_path / "sbrig"
    fake.write_text("""#!/bin/sh
if [ "$1" = --help ]; then cat <<'EOF'
Usage: sbrig [-s SOCKET] COMMAND [ARGS...]

  -s, --socket PATH   daemon socket
  -h, --help          this help

Commands:
  status   show the rig
  target   the target: policy, state, blockers
EOF
elif [ "$1 $2" = "target --help" ]; then cat <<'EOF'
Usage: sbrig [-s SOCKET] target policy|state|blockers [ARGS...]

  policy forced|opportunistic
  blockers [--tsv] [--sort COLUMN]
      the stats table

      --tsv               tab-separated
EOF
fi
""")
    fake.chmod(0o755)
    comp = REPO / "host/bash-completion/sbrig"
    env = dict(os.environ)
    assert complete(fake, ["ta"], env, comp) == ["target"]
    assert complete(fake, ["target", ""], env, comp) == \
        ["policy", "state", "blockers"]
    assert complete(fake, ["target", "policy", ""], env, comp) == \
        ["forced", "opportunistic"]
    assert set(complete(fake, ["target", "blockers", "--"], env, comp)) == \
        {"--tsv", "--sort", "--help"}


# --- what the completion offers, against the help it reads ------------------

_OPT_LINE = re.compile(r"^ {1,8}(-[A-Za-z0-9])?(?:, )?(--[A-Za-z0-9][A-Za-z0-9-]*)?")
_OPT_WORD = re.compile(r"^--?[A-Za-z0-9][A-Za-z0-9-]*$")


def help_table(text: str) -> tuple[set[str], dict[str, str]]:
    """The options of a help's table ("  -o, --output DIR ...", an option
    within 8 columns of the margin) and their other names."""
    names, alias = set(), {}
    for line in text.splitlines():
        m = _OPT_LINE.match(line)
        if not line.lstrip().startswith("-") or not m or not (m[1] or m[2]):
            continue
        names |= {n for n in m.groups() if n}
        if m[1] and m[2]:
            alias[m[1]], alias[m[2]] = m[2], m[1]
    return names, alias


def usage_options(text: str) -> set[str]:
    """The options a usage text names ("[-o DIR]", "(--samples csv|tsv |
    --perfetto)")."""
    return {w for w in re.sub(r"[][()|]", " ", text).split() if _OPT_WORD.match(w)}


def usage_lines(text: str, sub: str | None = None) -> str:
    """The "Usage:" line (or, with @sub, the indented line starting with
    it) and its continuation lines (indented, starting with "[")."""
    lines, out = text.splitlines(), []
    for i, line in enumerate(lines):
        if (sub is None and line.startswith("Usage:")) or \
                (sub is not None and re.match(rf"^\s+{re.escape(sub)}(\s|$)", line)):
            out.append(line.split("Usage:", 1)[-1] if sub is None else line.strip()[len(sub):])
            for more in lines[i + 1:]:
                if not re.match(r"^\s+\[", more):
                    break
                out.append(more)
            break
    return " ".join(out)


def expected_options(sbrig: Path, cmd: str) -> dict[str | None, set[str]]:
    """What `sbrig CMD --help` says CMD takes after its name: None -> the
    options before a sub-command (all of them for a command without
    one), SUB -> those after the sub-command SUB. The usage line's options
    and the table's, an option with its other name; with sub-commands,
    each takes the command's usage line's, its own usage line's and the
    table's that no usage line names, not those the table says are "not
    with" it. --help always (sbrig COMMAND --help)."""
    text = run([str(sbrig), cmd, "--help"]).stdout
    table, alias = help_table(text)

    def named(t: str) -> set[str]:
        o = usage_options(t)
        return o | {alias[n] for n in o if n in alias}

    usage = usage_lines(text).split(f" {cmd}", 1)[1]
    # the first positional (option groups and their arguments left out)
    bare = re.sub(r"[\[(]-[^\]\[()]*[\])]", " ", usage)
    words = [w for w in re.sub(r"[][]", " ", bare).split() if not w.startswith("-")]
    subs = words[0].split("|") if words and "|" in words[0] else []
    if not subs:
        return {None: named(usage) | table | {"--help"}}
    all_named = named(usage).union(*(named(usage_lines(text, s)) for s in subs))
    free = table - all_named
    out = {None: named(usage) | free | {"--help"}}
    for s in subs:
        not_with = set()
        for line in text.splitlines():
            m = _OPT_LINE.match(line)
            w = re.search(r"\(.*not with ([a-z][a-z, |]*)", line)
            if m and w and s in re.split(r"[ ,|]+", w[1]):
                not_with |= {n for n in m.groups() if n}
        not_with |= {alias[n] for n in not_with if n in alias}
        out[s] = (named(usage) | named(usage_lines(text, s)) | free | {"--help"}) - not_with
    return out


def test_bash_completion_offers_what_each_usage_lists():
    """For every command of `sbrig --help`, and every sub-command of one
    that has them, the options the completion offers ("sbrig CMD [SUB]
    -") are exactly those its `--help` lists (expected_options(), read
    from the real help here); before a command, the global options of
    `sbrig --help`, less one given and the others of its usage group
    ("[-s SOCKET | -r RIG]"), and after them only the commands whose
    usage line lets them stand before it. The completion offered the
    options of every sub-command's usage line to each sub-command and
    before any (target's -n/--count, -f/--follow, --tsv to policy and
    hold; history's --git-dir before the sub-command, which sbrig
    refuses) and -s again after -s or -r."""
    sbrig = REPO / "build" / "host" / "release" / "sbrig"
    if not sbrig.exists():
        run(["make", "-C", str(REPO / "host"), "-j2", str(sbrig)], timeout=900)
    comp = REPO / "host/bash-completion/sbrig"
    env = dict(os.environ)
    env.pop("SBRIG_SOCKET", None)
    top = run([str(sbrig), "--help"]).stdout
    cmds = [m[1] for m in re.finditer(r"^  ([a-z][a-z0-9_-]*)\s", top.split("Commands:")[1],
                                       re.M)]
    assert {"status", "target", "history", "render", "export"} <= set(cmds), cmds
    seen = {}
    for cmd in cmds:
        for sub, want in expected_options(sbrig, cmd).items():
            words = [cmd] + ([sub] if sub else []) + ["-"]
            got = complete(sbrig, words, env, comp)
            assert len(got) == len(set(got)), (words, got)
            assert set(got) == want, f"sbrig {' '.join(words)}: offered {sorted(got)}, " \
                                     f"the help lists {sorted(want)}"
            seen[(cmd, sub)] = want
    # the derivation is no tautology: what the help says, as a person reads it
    assert seen[("target", "hold")] == {"--help"}
    assert seen[("target", "policy")] == {"--timeout", "--help"}
    assert seen[("target", "events")] == {"-n", "--count", "--follow", "-f", "--tsv", "--help"}
    assert seen[("history", None)] == {"--db", "--help"}
    assert "--db" not in seen[("history", "copy")]
    assert "--print-config" in seen[("compare", None)]      # the table's only

    # the global options: the usage line's and the table's
    table, alias = help_table(top)
    gusage = usage_lines(top)
    glob = usage_options(gusage.split("COMMAND")[0]) | table
    assert set(complete(sbrig, ["-"], env, comp)) == glob
    for given, group in ((["-s", "x"], {"-s", "--socket", "-r", "--rig"}),
                         (["--rig", "x"], {"-s", "--socket", "-r", "--rig"}),
                         (["--run-dir", "d"], {"--run-dir"}),
                         (["-r", "x", "--run-dir", "d"],
                          {"-s", "--socket", "-r", "--rig", "--run-dir"})):
        assert set(complete(sbrig, given + ["-"], env, comp)) == glob - group, given
    # after global options only the commands whose usage takes them
    takes = {c for c in cmds
             if "-" in usage_lines(run([str(sbrig), c, "--help"]).stdout).split(f" {c}")[0]}
    assert "render" not in takes and "status" in takes
    assert set(complete(sbrig, ["-r", "x", ""], env, comp)) == takes
    assert set(complete(sbrig, [""], env, comp)) == set(cmds)


def test_dkms_build_against_debian_headers(debs, tmp_path):
    from tests.vm import kernels
    k = kernels.fetch("amd64")
    x = tmp_path / "x"
    run(["dpkg-deb", "-x", str(debs["debs"]["sbrig-dkms_all"]), str(x)])
    tree = tmp_path / "dkms"
    tree.mkdir()
    before = {p: p.exists() for p in (Path("/var/lib/dkms/suspend_block"),
                                      Path("/var/lib/dkms/mok.key"),
                                      Path(f"/lib/modules/{k.kver}"))}
    env = dict(os.environ)
    # no module signing: dkms would make a key in /var/lib/dkms otherwise
    env["sign_file"] = "/nonexistent"
    try:
        p = run(["dkms", "build", f"suspend_block/{VERSION}", "-k", k.kver,
                 "--kernelsourcedir", str(k.headers),
                 "--sourcetree", str(x / "usr/src"), "--dkmstree", str(tree),
                 "--installtree", str(tmp_path / "modules")],
                env=env, timeout=600, check=False)
        log = tree / f"suspend_block/{VERSION}/build/make.log"
        assert p.returncode == 0, (p.stdout + p.stderr +
                                   (log.read_text() if log.exists() else ""))
        ko = tree / f"suspend_block/{VERSION}/{k.kver}/x86_64/module/suspend_block.ko"
        assert ko.exists(), p.stdout
        info = run(["modinfo", "-F", "vermagic", str(ko)]).stdout
        assert info.split()[0] == k.kver
        assert run(["modinfo", "-F", "version", str(ko)]).stdout.strip() == VERSION
        st = run(["dkms", "status", "--dkmstree", str(tree),
                  "--sourcetree", str(x / "usr/src")], env=env).stdout
        assert f"suspend_block/{VERSION}, {k.kver}, x86_64: built" in st, st
    finally:
        shutil.rmtree(tree, ignore_errors=True)
    # nothing of the machine's DKMS or module trees was touched
    after = {p: p.exists() for p in before}
    assert after == before


def test_make_install_destdir_prefix(tmp_path):
    dest = tmp_path / "dest"
    run(["make", "-C", str(REPO / "host"), "-j2", "install",
         "PREFIX=/opt/sbrig", f"DESTDIR={dest}"], timeout=900)
    for f in ("opt/sbrig/bin/sbrig", "opt/sbrig/sbin/sbrigd",
              "opt/sbrig/libexec/sbrig/sbrig-powercat",
              "opt/sbrig/share/man/man1/sbrig.1",
              "opt/sbrig/share/man/man5/sbrig.conf.5",
              "opt/sbrig/share/man/man8/sbrigd.8",
              "opt/sbrig/share/bash-completion/completions/sbrig",
              "lib/systemd/system/sbrigd.service",
              "lib/systemd/system/sbrigd@.service",
              "usr/lib/sysusers.d/sbrig.conf",
              "usr/lib/tmpfiles.d/sbrig.conf",
              "lib/udev/rules.d/60-sbrig.rules",
              "opt/sbrig/libexec/sbrig/sbrig-iio-access",
              "opt/sbrig/share/sbrig/virtual-compare.conf"):
        assert (dest / f).is_file(), f
    assert (dest / "opt/sbrig/share/sbrig/virtual-compare.conf").read_bytes() == \
        (REPO / "rig/virtual/compare.conf").read_bytes()
    # the udev rule's helper where PREFIX put it
    rule = (dest / "lib/udev/rules.d/60-sbrig.rules").read_text()
    assert 'RUN+="/opt/sbrig/libexec/sbrig/sbrig-iio-access sbrig %S%p"' in rule
    assert os.access(dest / "opt/sbrig/sbin/sbrigd", os.X_OK)
    unit = dest / "lib/systemd/system/sbrigd.service"
    assert unit_value(unit, "ExecStart") == \
        "/opt/sbrig/sbin/sbrigd -c /etc/sbrig/rig.conf"
    assert unit_value(dest / "lib/systemd/system/sbrigd@.service",
                      "ExecStart") == \
        "/opt/sbrig/sbin/sbrigd -r %i -c /etc/sbrig/%i.conf -s /run/sbrig/%i.sock"
    assert "g sbrig" in (dest / "usr/lib/sysusers.d/sbrig.conf").read_text()
    # libsbrig is not installed (internal archives, no stable ABI)
    assert not list(dest.rglob("*.a")) and not list(dest.rglob("*.pc"))
    assert not list(dest.rglob("*.h"))
