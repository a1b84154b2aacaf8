"""pytest fixtures for tests that run in QEMU guests (see tests/vm/).

Fixtures:

* ``vm_amd64``, ``vm_armhf`` -- session-scoped: build everything for the
  arch once (kernel fetch, modules, programs, initramfs), boot once, and
  share the :class:`tests.vm.qemu.Vm` across tests. Before each test that
  uses one, the VM is checked (woken if left suspended, shell resynced,
  rebooted if dead). Modules are NOT loaded at boot: load them in your
  fixtures (``vm.load_module("suspend_block")``).
* ``vm`` -- parametrized over the arches: ``test_x[amd64]``, ``test_x[armhf]``
  (``--vm-arch amd64`` on the pytest command line keeps only that arch).
* ``vm_pool`` -- the session's pool, ``vm_pool.get(arch)``.

Markers (for tests using ``vm``):

* ``@pytest.mark.arch("amd64")`` -- only these arches
* ``@pytest.mark.s3`` -- needs suspend-to-RAM: only arches with S3 (amd64)

A failed build fails every test that needs that arch with the failing
command and its output (never a skip). Build/boot progress goes to the
terminal even with output capture on. When a test fails, the guest console
output printed during the test is attached to its report.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_REPO = str(Path(__file__).resolve().parents[1])
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

from tests.vm.build import build_all  # noqa: E402
from tests.vm.common import ARCHES, BuildError, progress  # noqa: E402
from tests.vm.qemu import Vm, VmError  # noqa: E402


def pytest_addoption(parser):
    parser.addoption("--vm-arch", action="append", choices=list(ARCHES),
                     help="run VM tests only on this guest arch (repeatable)")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "arch(*names): run only on these guest arches (amd64, armhf)")
    config.addinivalue_line(
        "markers", "s3: needs suspend-to-RAM (ACPI S3): runs on amd64 only")
    config.addinivalue_line(
        "markers", "demo: runs the whole demo on the virtual rig (-m 'not demo' skips it)")
    config.addinivalue_line(
        "markers", "debug_kernel: also run under the debug kernel (lockdep, KASAN, "
        "kmemleak), where the debug-kernel guest exists")


def test_arches(node_or_metafunc) -> list[str]:
    """Guest arches a test wants, from its ``arch``/``s3`` markers."""
    get = getattr(node_or_metafunc, "get_closest_marker", None) or \
        node_or_metafunc.definition.get_closest_marker
    arches = list(ARCHES)
    m = get("arch")
    if m:
        unknown = [a for a in m.args if a not in ARCHES]
        if unknown:
            raise pytest.UsageError(f"unknown arch in marker: {unknown}")
        arches = [a for a in arches if a in m.args]
    if get("s3"):
        arches = [a for a in arches if ARCHES[a].s3]
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

    def close(self) -> None:
        for vm in self.vms.values():
            vm.shutdown()
        self.vms.clear()


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


@pytest.fixture
def vm(request, vm_pool) -> Vm:
    """The VM of the arch this test instance is parametrized with."""
    v = request.getfixturevalue(f"vm_{request.param}")
    vm_pool.check(v)
    request.node.sbrig_console_marks = {v.name: (v, v.console_mark())}
    return v


@pytest.fixture(autouse=True)
def _vm_health(request, vm_pool):
    """Check session VMs a test uses directly; note console positions."""
    marks = {}
    for name in ("vm_amd64", "vm_armhf"):
        if name in request.fixturenames:
            v = request.getfixturevalue(name)
            vm_pool.check(v)
            marks[v.name] = (v, v.console_mark())
    if marks:
        request.node.sbrig_console_marks = marks
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    for name, (v, mark) in getattr(item, "sbrig_console_marks", {}).items():
        text = v.console_text(mark)
        if len(text) > 8000:
            text = "...\n" + text[-8000:]
        report.sections.append((f"guest console ({name}, full log {v.console_log})",
                                text))
