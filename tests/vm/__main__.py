"""Command line for engineers.

    /usr/bin/python3 -m tests.vm build [ARCH...]   fetch + build everything
                                                   (ARCH: amd64, armhf, amd64-debug;
                                                   default all; amd64-debug builds
                                                   the debug kernel once, cached)
    /usr/bin/python3 -m tests.vm shell ARCH [--load] [--append ARGS]
                                                   boot with the console on
                                                   this terminal (Ctrl-A X quits)
    /usr/bin/python3 -m tests.vm run ARCH CMD      boot, run CMD, print, power off
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

from .build import build_all
from .common import ARCHES, BuildError, progress
from .qemu import Vm, kernel_cmdline, qemu_argv


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m tests.vm", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="fetch kernels and build everything")
    b.add_argument("arches", nargs="*", metavar="ARCH",
                   help=f"one of {', '.join(ARCHES)} (default: all)")
    s = sub.add_parser("shell", help="boot a guest interactively")
    s.add_argument("arch", choices=list(ARCHES))
    s.add_argument("--load", action="store_true",
                   help="let /init load suspend_block (and sb_test)")
    s.add_argument("--append", default="", help="extra kernel command line")
    r = sub.add_parser("run", help="boot, run one command, power off")
    r.add_argument("arch", choices=list(ARCHES))
    r.add_argument("command")
    args = ap.parse_args(argv)

    try:
        if args.cmd == "build":
            bad = [x for x in args.arches if x not in ARCHES]
            if bad:
                ap.error(f"unknown arch {bad}; choose from {list(ARCHES)}")
            for arch in args.arches or list(ARCHES):
                t0 = time.monotonic()
                a = build_all(arch)
                print(f"{arch}: kernel {a.kernel.kver} ({a.kernel.version}), "
                      f"modules {sorted(a.modules.modules)}"
                      f"{' missing ' + str(a.modules.missing) if a.modules.missing else ''}, "
                      f"{len(a.programs)} program(s), initramfs {a.initramfs} "
                      f"[{time.monotonic() - t0:.1f} s]")
            return 0
        if args.cmd == "run":
            with Vm(args.arch) as vm:
                rc, out = vm.run(args.command, timeout=600)
                sys.stdout.write(out)
            return rc
        a = build_all(args.arch)
        extra = " ".join(x for x in (args.append, "sb.load" if args.load else "") if x)
        qmp = os.path.join(tempfile.mkdtemp(prefix="sbrig-shell-"), "qmp.sock")
        argv_ = qemu_argv(args.arch, a.kernel.vmlinuz, a.initramfs,
                          kernel_cmdline(args.arch, extra, harness=False), dtb=a.dtb)
        argv_ = [x for x in argv_ if x not in ("-nographic",)]
        i = argv_.index("-monitor")
        del argv_[i:i + 2]
        argv_ += ["-nographic", "-serial", "mon:stdio",
                  "-qmp", f"unix:{qmp},server=on,wait=off"]
        progress(f"QMP socket: {qmp}   (Ctrl-A X quits, Ctrl-A C monitor)")
        os.execvp(argv_[0], argv_)
    except BuildError as exc:
        print(f"BUILD FAILED: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
