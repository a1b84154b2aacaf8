"""pytest fixtures for tests that run in QEMU guests (see tests/vm/).

Fixtures:

* ``vm_amd64``, ``vm_armhf``, ``vm_amd64_debug`` -- session-scoped: build
  everything for the guest once (kernel fetch or build, modules, programs,
  initramfs), boot once, and share the :class:`tests.vm.qemu.Vm` across
  tests. Before each test that uses one, the VM is checked (woken if left
  suspended, shell resynced, rebooted if dead, or if the test before left
  a kernel splat that switched lockdep off or killed a task). Modules are NOT loaded at boot: load them in your fixtures
  (``vm.load_module("suspend_block")``).
* ``vm`` -- parametrized over the guests: ``test_x[amd64]``,
  ``test_x[armhf]``, ``test_x[amd64-debug]`` (``--vm-arch amd64`` on the
  pytest command line keeps only that guest; repeatable).
* ``vm_pool`` -- the session's pool, ``vm_pool.get(arch)``.

Markers (for tests using ``vm``):

* ``@pytest.mark.arch("amd64")`` -- only these machines; "amd64" is both
  the amd64 and the amd64-debug guest (``arch("amd64-debug")`` names the
  debug guest alone)
* ``@pytest.mark.s3`` -- needs suspend-to-RAM: only arches with S3 (amd64)
* ``@pytest.mark.debug_kernel`` (usually a module's ``pytestmark``) -- also
  run on the amd64-debug guest, whose kernel has lockdep, KASAN, UBSAN,
  kmemleak, debug objects and list debugging (tests/vm/debug-kernel.config).
  Tests without it never run there.
* ``@pytest.mark.expect_splat(r"regex", ...)`` -- kernel reports whose first
  line matches one of the regexes are expected (the test provokes them);
  any other still fails the test.

Kernel splats: the console of every guest (session VMs, the ones tests boot
themselves, and, through their logs in build/logs/, the ones other processes
boot: rig/virtual/vrig.py, the demos) is read for kernel reports
(tests/vm/splat.py: lockdep, KASAN, UBSAN, BUG:, WARNING:, Oops, list
corruption, ODEBUG, hung tasks, ...). A report that appeared during a test
(its setup, call or teardown, or since the check before it: a guest's boot
is checked by the first test that uses it) fails that test with the report's
text, unless expected; a session VM with an unexpected report is rebooted
before the next test if lockdep turned itself off (it does after its first
report; at most ``SBRIG_SPLAT_REBOOTS``, default 10, times per guest and
session) or a task died in the kernel (taint D). On the debug guest,
kmemleak scans at the end of each test module that used it (the project's
modules unloaded first, so what only they referenced shows up): a suspected
leak fails the module's last test at teardown.

A failed build fails every test that needs that arch with the failing
command and its output (never a skip). Build/boot progress goes to the
terminal even with output capture on. When a test fails, the guest console
output printed during the test is attached to its report.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

_REPO = str(Path(__file__).resolve().parents[1])
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

from tests.vm import qemu as vm_qemu  # noqa: E402
from tests.vm import splat  # noqa: E402
from tests.vm.build import build_all  # noqa: E402
from tests.vm.common import ARCHES, LOGS, BuildError, progress  # noqa: E402
from tests.vm.qemu import Vm, VmError  # noqa: E402


def pytest_addoption(parser):
    parser.addoption("--vm-arch", action="append", choices=list(ARCHES),
                     help="run VM tests only on this guest (repeatable)")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "arch(*names): run only on these machines (amd64 includes "
        "amd64-debug, armhf) or guests (amd64-debug)")
    config.addinivalue_line(
        "markers", "s3: needs suspend-to-RAM (ACPI S3): runs on amd64 only")
    config.addinivalue_line(
        "markers", "debug_kernel: also run on the amd64-debug guest (lockdep, "
        "KASAN, UBSAN, kmemleak: tests/vm/debug-kernel.config)")
    config.addinivalue_line(
        "markers", "expect_splat(*regexes): kernel reports (WARNING:, BUG:, ...) "
        "whose first line matches one of these are expected, not failures")
    config.addinivalue_line(
        "markers", "demo: runs the whole demo on the virtual rig (-m 'not demo' skips it)")
    _WATCH.config = config
    _WATCH.start_logs()
    vm_qemu.ON_START.append(_WATCH.add)


def pytest_unconfigure(config):
    if _WATCH.add in vm_qemu.ON_START:
        vm_qemu.ON_START.remove(_WATCH.add)


def test_arches(node_or_metafunc) -> list[str]:
    """Guest arches a test wants, from its ``arch``/``s3`` markers."""
    get = getattr(node_or_metafunc, "get_closest_marker", None) or \
        node_or_metafunc.definition.get_closest_marker
    arches = list(ARCHES)
    m = get("arch")
    if m:
        known = set(ARCHES) | {s.deb_arch for s in ARCHES.values()}
        unknown = [a for a in m.args if a not in known]
        if unknown:
            raise pytest.UsageError(f"unknown arch in marker: {unknown}")
        # a machine name ("amd64") stands for every guest of that machine
        arches = [a for a in arches if a in m.args or ARCHES[a].deb_arch in m.args]
    if get("s3"):
        arches = [a for a in arches if ARCHES[a].s3]
    # opt-in guests (amd64-debug): only for tests that carry their marker
    arches = [a for a in arches
              if not ARCHES[a].opt_in_marker or get(ARCHES[a].opt_in_marker)]
    return arches


test_arches.__test__ = False  # not a test, despite the name


def pytest_generate_tests(metafunc):
    if "vm" in metafunc.fixturenames:
        arches = test_arches(metafunc)
        only = metafunc.config.getoption("--vm-arch")
        if only:
            arches = [a for a in arches if a in only]
        metafunc.parametrize("vm", arches, indirect=True)


class VmPool:
    """Builds and boots at most one VM per arch per session."""

    def __init__(self, config) -> None:
        self.config = config
        self.vms: dict[str, Vm] = {}
        self.errors: dict[str, str] = {}
        self.reboots: dict[str, int] = {}    # reboots after splats, per guest

    def _uncaptured(self):
        capman = self.config.pluginmanager.getplugin("capturemanager")
        if capman is None:
            import contextlib
            return contextlib.nullcontext()
        return capman.global_and_fixture_disabled()

    def get(self, arch: str) -> Vm:
        if arch in self.errors:
            pytest.fail(self.errors[arch], pytrace=False)
        if arch not in self.vms:
            with self._uncaptured():
                try:
                    artifacts = build_all(arch)
                    vm = Vm(arch, artifacts)
                    vm.start()
                    self.vms[arch] = vm
                except (BuildError, VmError) as exc:
                    kind = "build" if isinstance(exc, BuildError) else "boot"
                    self.errors[arch] = f"{arch} {kind} failed:\n{exc}"
                    progress(self.errors[arch])
            if arch in self.errors:
                pytest.fail(self.errors[arch], pytrace=False)
        return self.vms[arch]

    def check(self, vm: Vm) -> None:
        with self._uncaptured():
            vm.ensure_healthy()
            if getattr(vm, "sbrig_splatted", False):
                vm.sbrig_splatted = False
                why = _damage(vm)
                done = self.reboots.setdefault(vm.name, 0)
                if why == LOCKDEP_OFF and done >= MAX_SPLAT_REBOOTS:
                    if done == MAX_SPLAT_REBOOTS:
                        progress(f"{vm.name}: {MAX_SPLAT_REBOOTS} reboots for lockdep "
                                 f"already (SBRIG_SPLAT_REBOOTS): lockdep stays off "
                                 f"for the rest of this session on this guest")
                        self.reboots[vm.name] += 1
                    why = None
                if why:
                    self.reboots[vm.name] += 1
                    progress(f"{vm.name}: rebooting after a kernel splat ({why})")
                    vm.restart()
                else:
                    # the report failed its own test: tests after it that
                    # read the kernel log must not find it again
                    vm.run("dmesg -c >/dev/null", timeout=20)

    def close(self) -> None:
        for vm in self.vms.values():
            vm.shutdown()
        self.vms.clear()


LOCKDEP_OFF = "lockdep turned itself off"
#: Reboots per guest and session for lockdep's sake: a module that trips
#: lockdep in every test (as in a teardown) would otherwise add a boot
#: (~25 s on amd64-debug) to each; after that many, lockdep stays off and
#: the tests that already failed say why. Deaths (taint D) always reboot.
MAX_SPLAT_REBOOTS = int(os.environ.get("SBRIG_SPLAT_REBOOTS", "10"))


def _damage(vm: Vm) -> str | None:
    """Why a guest that printed a kernel report should not serve the next
    test (None: it may): lockdep switched itself off (it does after its
    first report, and the next test would run unchecked), or a task died
    in the kernel (an Oops or BUG(): taint flag D)."""
    try:
        out = vm.run_ok("cat /proc/sys/kernel/tainted; "
                        "grep -s '^ *debug_locks:' /proc/lockdep_stats; true", timeout=20)
    except VmError as exc:
        return f"cannot read its state: {str(exc).splitlines()[0]}"
    lines = out.split()
    if lines and lines[0].isdigit() and int(lines[0]) & (1 << 7):
        return "a task died in the kernel"
    if "debug_locks:" in out and out.split("debug_locks:")[1].split()[0] == "0":
        return LOCKDEP_OFF
    return None


@pytest.fixture(scope="session")
def vm_pool(request):
    pool = VmPool(request.config)
    yield pool
    pool.close()


@pytest.fixture(scope="session")
def vm_amd64(vm_pool) -> Vm:
    return vm_pool.get("amd64")


@pytest.fixture(scope="session")
def vm_armhf(vm_pool) -> Vm:
    return vm_pool.get("armhf")


@pytest.fixture(scope="session")
def vm_amd64_debug(vm_pool) -> Vm:
    return vm_pool.get("amd64-debug")


def _fixture_name(arch: str) -> str:
    return "vm_" + arch.replace("-", "_")


@pytest.fixture
def vm(request, vm_pool) -> Vm:
    """The VM of the guest this test instance is parametrized with."""
    v = request.getfixturevalue(_fixture_name(request.param))
    vm_pool.check(v)
    request.node.sbrig_console_marks = {v.name: (v, v.console_mark())}
    _note_debug_use(request, v)
    return v


@pytest.fixture(autouse=True)
def _vm_health(request, vm_pool):
    """Check session VMs a test uses directly; note console positions."""
    marks = {}
    for name in map(_fixture_name, ARCHES):
        if name in request.fixturenames:
            v = request.getfixturevalue(name)
            vm_pool.check(v)
            marks[v.name] = (v, v.console_mark())
            _note_debug_use(request, v)
    if marks:
        request.node.sbrig_console_marks = marks
    yield


# ------------------------------------------------------------ kernel splats --

class _LogGuest:
    """A guest this process did not boot (a vrig or demo subprocess's), known
    by its console log in build/logs."""

    def __init__(self, path: Path) -> None:
        self.name = path.name.replace(".console.log", "")


class SplatWatch:
    """Reads the console of every guest booted in this session for kernel
    reports (tests/vm/splat.py), each stretch of it once: the Vm objects of
    this process, and the console logs other processes (rig/virtual/vrig.py
    run by a test, the demos) write to build/logs/."""

    def __init__(self) -> None:
        self.config = None
        self.vms: dict[int, list] = {}     # id -> [vm, boot_count, position]
        self.debug_used: dict[str, set] = {}   # test module -> debug VMs used
        self.own_logs: set[str] = set()    # console logs of self.vms
        self.log_pos: dict[str, int] | None = None   # other logs: bytes read

    def add(self, vm: Vm) -> None:
        """qemu.ON_START hook: a guest (re)booted."""
        self.own_logs.add(str(vm.console_log))
        entry = self.vms.get(id(vm))
        if entry is None or entry[0] is not vm:
            self.vms[id(vm)] = [vm, vm.boot_count, 0]

    def start_logs(self) -> None:
        """Logs that exist now are old (another session's): skip them."""
        self.log_pos = {}
        if LOGS.is_dir():
            for path in LOGS.glob("*.console.log"):
                if not path.is_symlink():
                    self.log_pos[str(path)] = path.stat().st_size

    def _other_logs(self) -> list[tuple[_LogGuest, str]]:
        """New complete lines of console logs written by other processes."""
        if self.log_pos is None or not LOGS.is_dir():
            return []
        out = []
        for path in sorted(LOGS.glob("*.console.log")):
            key = str(path)
            if path.is_symlink() or key in self.own_logs:
                continue
            pos = self.log_pos.get(key, 0)
            try:
                size = path.stat().st_size
                if size <= pos:
                    continue
                with open(path, "rb") as fh:
                    fh.seek(pos)
                    data = fh.read(size - pos)
            except OSError:
                continue
            end = data.rfind(b"\n") + 1      # whole lines only
            self.log_pos[key] = pos + end
            if end:
                out.append((_LogGuest(path), data[:end].decode(errors="replace")))
        return out

    def _sync(self, vm: Vm) -> None:
        """One shell round trip, so what the kernel printed before it has
        arrived (skipped if the guest is busy, asleep or gone)."""
        try:
            if vm.is_alive() and not vm._busy() and vm.query_status() == "running":
                vm.run("true", timeout=10)
        except (VmError, OSError, Exception):  # noqa: BLE001 - best effort
            pass

    def collect(self, used: set[int]) -> list[tuple[Vm, splat.Splat]]:
        """Reports printed since the last collect, on every guest; guests
        whose ids are in ``used`` get a shell round trip first."""
        found = []
        for key, entry in list(self.vms.items()):
            vm, boot, pos = entry
            if key in used:
                self._sync(vm)
            texts = []
            if vm.boot_count != boot:
                # rebooted since: the rest of the old boot, the new one whole
                if vm.boot_count == boot + 1 and vm.previous_console is not None:
                    texts.append(vm.previous_console.since(pos))
                pos = 0
            with vm._cond:
                texts.append(vm._raw.since(pos))
                entry[1], entry[2] = vm.boot_count, vm._raw.length
            for text in texts:
                found += [(vm, s) for s in splat.find_splats(text)]
            if not vm.is_alive():
                del self.vms[key]
        for guest, text in self._other_logs():
            found += [(guest, s) for s in splat.find_splats(text)]
        return found


_WATCH = SplatWatch()


def _expected(item) -> list[str]:
    pats = []
    for m in item.iter_markers("expect_splat"):
        pats += list(m.args)
    return pats


def _check_splats(item, report) -> None:
    """Fail ``report`` (this test's call or teardown) with the kernel
    reports printed since the last check that the test did not declare."""
    used = {id(v) for v, _ in getattr(item, "sbrig_console_marks", {}).values()}
    found = _WATCH.collect(used)
    pats = _expected(item)
    bad = [(v, s) for v, s in found if not s.matches(pats)]
    ok = [(v, s) for v, s in found if s.matches(pats)]
    for v, s in ok:
        report.sections.append((f"expected kernel report ({v.name})", s.text()))
    if not bad:
        return
    for v, _ in bad:
        v.sbrig_splatted = True          # the pool reboots it before the next test
    names = sorted({v.name for v, _ in bad})
    msg = splat.describe([s for _, s in bad], ", ".join(names))
    if report.passed:
        report.outcome = "failed"
        report.longrepr = msg
    else:
        report.sections.append(("kernel splats", msg))


@pytest.fixture(scope="module", autouse=True)
def _kmemleak_per_module(request):
    """After the last test of a module that used a debug guest: unload the
    project's modules (what only they referenced becomes unreferenced),
    let 5 s pass (kmemleak ignores younger objects), scan; a suspected
    leak fails the module's last test at teardown."""
    yield
    used = _WATCH.debug_used.pop(request.module.__name__, set())
    msgs = []
    for vm in used:
        if not vm.is_alive():
            continue
        try:
            vm.ensure_healthy()
            vm.run("for m in sb_test sb_wire suspend_block; do "
                   "rmmod $m 2>/dev/null; done; sleep 6", timeout=60)
            report = vm.kmemleak_scan()
        except VmError as exc:
            msgs.append(f"{vm.name}: kmemleak scan failed: {exc}")
            continue
        if report.strip():
            leaks = report.count("unreferenced object")
            msgs.append(f"kmemleak: {leaks} suspected leak(s) on {vm.name} at the end "
                        f"of {request.module.__name__} (its modules unloaded):\n"
                        f"{report[:12000]}")
    if msgs:
        pytest.fail("\n\n".join(msgs), pytrace=False)


def _note_debug_use(request, v: Vm) -> None:
    if v.debug and request.node.module is not None:
        _WATCH.debug_used.setdefault(request.node.module.__name__, set()).add(v)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when in ("call", "teardown"):
        _check_splats(item, report)
    if report.when != "call" or not report.failed:
        return
    for name, (v, mark) in getattr(item, "sbrig_console_marks", {}).items():
        text = v.console_text(mark)
        if len(text) > 8000:
            text = "...\n" + text[-8000:]
        report.sections.append((f"guest console ({name}, full log {v.console_log})",
                                text))


#: (test id, why) of every retry a test made (the ``retried`` fixture)
_RETRIES: list[tuple[str, str]] = []


@pytest.fixture
def retried(request, record_property):
    """Call ``retried(WHY)`` when a test starts over because of a known,
    documented race (and only then): each retry is counted, recorded as a
    ``retry`` property of the test (JUnit XML) and listed with the count
    at the end of the session, so that a race that grows is seen."""
    def note(why: str) -> None:
        _RETRIES.append((request.node.nodeid, why))
        record_property("retry", why)
    return note


def pytest_terminal_summary(terminalreporter):
    if _RETRIES:
        terminalreporter.section(f"retries: {len(_RETRIES)}")
        for nodeid, why in _RETRIES:
            terminalreporter.write_line(f"{nodeid}: {why}")


def pytest_sessionfinish(session, exitstatus):
    """Reports printed after the last test's check (a guest's shutdown)
    still fail the run."""
    found = _WATCH.collect(set())
    if found:
        sys.stderr.write("\n" + splat.describe([s for _, s in found], "a guest after "
                                                "the last test") + "\n")
        session.exitstatus = 1
