# sbrig top-level Makefile. The two commands of the README:
#
#   make demo    set up (Debian packages, kernels) and run the main job
#   make test    set up and run the whole test suite (with the debug-kernel
#                tier: the module suites under lockdep/KASAN; make test-debug
#                runs that tier alone)
#   make fuzz    run each libFuzzer harness of host/fuzz/ for FUZZ_SECONDS
#                (default 600, one at a time)
#   make lab     bring up a local LAVA lab (lava-server, its scheduler and
#                PostgreSQL, a lava-worker with the virtual rig's device;
#                lava-jobs/README.md); make lab-down stops all of it
#   make soak    the suspend-cycle campaign for SOAK_CYCLES cycles on each
#                guest (default 500: 1000 in all), with its figures
#
# Everything built or downloaded goes under build/ (kept between runs).
PY     ?= /usr/bin/python3
PYTEST ?= $(PY) -m pytest
KSRC   := build/linux-source-6.1
# make fuzz: seconds per harness; make test runs each for FUZZ_TEST_SECONDS
FUZZ_SECONDS      ?= 600
FUZZ_TEST_SECONDS ?= 5
# make soak: cycles of the suspend-cycle campaign on each guest
SOAK_CYCLES       ?= 500

all: demo

deps:
	.ci/install-deps

# checkpatch.pl, kernel-doc and friends from Debian's linux-source-6.1,
# and the PM core's files whose private tables the module copies
# (kernel-module/scripts/check-kernel-tables).
$(KSRC)/scripts/checkpatch.pl: Makefile
	mkdir -p build
	tar -C build -xf /usr/src/linux-source-6.1.tar.xz \
		linux-source-6.1/scripts/checkpatch.pl \
		linux-source-6.1/scripts/kernel-doc \
		linux-source-6.1/scripts/spelling.txt \
		linux-source-6.1/scripts/const_structs.checkpatch \
		linux-source-6.1/drivers/base/power/main.c \
		linux-source-6.1/kernel/power/suspend.c
	touch $@

demo: deps host
	$(PY) rig/demo/rig_demo.py

# The module alone on a QEMU target (no rig): the keypad walkthrough.
demo-module: deps
	$(PY) rig/demo/module_demo.py

# The host programs: release build (what the guests and benchmarks run)
# and the ASan/UBSan build (what the host-side tests run).
host: deps
	$(MAKE) -C host -j2
	$(MAKE) -C host -j2 VARIANT=asan
	$(MAKE) -C host -j2 unit

# The suite: the module's style checks (checkpatch --strict, kernel-doc,
# sparse), then pytest: host unit and daemon tests, and the target (QEMU)
# tests on amd64 and armhf, and the debug-kernel tier: the nine amd64
# module suites (API, suspend, hardening, input, power supply, kevents,
# marker, torture, campaign) again on the amd64-debug guest, whose kernel is built from
# linux-source-6.1 with lockdep, KASAN, UBSAN, kmemleak, debug objects and
# list debugging (tests/vm/debug-kernel.config). That kernel is built once
# per machine and config (~5 min cold on 2 cores, printed) and cached in
# ~/.cache/sbrig/debug-kernel/ (outside build/: a fresh clone reuses it);
# the tier's tests add ~10 min (a fresh clone's make test: 32 min). A kernel splat on any guest fails the test
# during which it appeared.
# The fuzz harnesses: their corpus replayed (a regression fails) and a few
# seconds of fuzzing each, then the suite.
test: deps host $(KSRC)/scripts/checkpatch.pl
	$(MAKE) -C host fuzz-run FUZZ_SECONDS=$(FUZZ_TEST_SECONDS)
	$(PY) -m tests.vm build amd64 armhf amd64-debug
	$(MAKE) -C kernel-module check KSRC=$(CURDIR)/$(KSRC) \
		KDIR=$$(ls -d $(CURDIR)/build/kernels/amd64/usr/src/linux-headers-*-amd64 | head -1)
	$(PYTEST) -v -rfE tests

# The debug-kernel tier alone: the module suites on the amd64-debug guest.
test-debug: deps
	$(PY) -m tests.vm build amd64-debug
	$(PYTEST) -v -rfE --vm-arch amd64-debug $(DEBUG_SUITES)
DEBUG_SUITES = $(addprefix tests/test_module_,$(addsuffix .py,\
	api suspend hardening input power_supply kevents marker torture campaign))

fuzz: deps
	$(MAKE) -C host -j2 fuzz-build
	$(MAKE) -C host fuzz-run FUZZ_SECONDS=$(FUZZ_SECONDS)

# The suspend-cycle campaign (tests/campaign.py) at length: SOAK_CYCLES
# opportunistic cycles on the amd64 guest's S3 and as many on the arm
# guest's s2idle, a blocker taken at a random point of the suspend path in
# each; prints the figures (outcomes per hook, cycles by kind, resume
# latency, violations) and fails on any violation.
soak: deps
	$(PY) -m tests.vm build amd64 armhf
	SBRIG_CAMPAIGN_CYCLES=$(SOAK_CYCLES) $(PYTEST) -s -v -rfE \
		tests/test_module_campaign.py -k test_suspend_cycle_campaign

# The device-tree overlays (firmware/README.md); `make -C firmware check`
# runs their checks without a board.
firmware: deps
	$(MAKE) -C firmware

bench: deps host
	$(PY) tests/bench/bench_module.py
	$(PY) tests/bench/bench_capture.py --vm
	$(PY) tests/bench/bench_samples.py
	$(PY) tests/bench/bench_analyze.py
	$(PY) tests/bench/bench_history.py
	$(PY) tests/bench/bench_compare.py
	$(PY) tests/bench/bench_rigs.py

# A local LAVA lab (lava-jobs/lab.py; lava-jobs/README.md, "A lab here"):
# lava-server unpacked from Debian's package under build/, its PostgreSQL,
# web API and scheduler, and a lava-worker, all processes of this user
# (no system service); `make lab` again starts only what is not running.
lab: deps host
	$(PY) lava-jobs/lab.py up

lab-down:
	$(PY) lava-jobs/lab.py down

install: host
	$(MAKE) -C host install

clean:
	rm -rf build

.PHONY: all deps host lab lab-down firmware demo demo-module test test-debug fuzz soak bench install clean
