"""sbrig QEMU test harness (stdlib only).

Modules:

* :mod:`tests.vm.kernels`   -- fetch + unpack Debian kernels (``fetch``)
* :mod:`tests.vm.build`     -- build modules/programs (``build_modules``,
  ``build_programs``, ``build_all``)
* :mod:`tests.vm.initramfs` -- busybox initramfs (``build_initramfs``)
* :mod:`tests.vm.qemu`      -- boot and drive a guest (``Vm``)
* :mod:`tests.vm.qmp`       -- minimal QMP client (``QmpClient``)

Command line: ``/usr/bin/python3 -m tests.vm build|shell ARCH|info``.
"""

from .common import ARCHES, BUILD, REPO, BuildError  # noqa: F401

__all__ = ["ARCHES", "BUILD", "REPO", "BuildError"]
