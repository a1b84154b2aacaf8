"""sbagent on the host, against a debugfs directory of fixture files.

The real agent (kernel-module/tools/sbagent.c, built natively here) reads
a regular file in place of the module's event log and speaks the link
protocol on its standard input and output (``--stdio``). What it forwards
of a block/unblock's object id depends on the revision the host's HELLO
announced (host/doc/link-protocol.md: Revisions). The agent on a real
target is tests/test_agent_vm.py's.
"""

from __future__ import annotations

import queue
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.rigproto import decode, frame

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "kernel-module" / "tools" / "sbagent.c"
UAPI = REPO / "kernel-module" / "include" / "uapi"

# the module's log: ids on block/unblock (suspend-block.rst: ID), and a
# record of an older module without one
LOG = ('0\t100\tblock\t"evdev"\t3\n'
       '1\t200\tblock\t"evdev"\t4\n'
       '2\t300\tunblock\t"evdev"\t3\n'
       '3\t400\tpolicy\topportunistic mem\n'
       '4\t500\tunblock\t"evdev"\t4\n'
       '5\t600\tblock\t"' + "L" * 52 + '"+\t5\n'
       '6\t700\tunblock\t"old module"\n')


@pytest.fixture(scope="module")
def sbagent(tmp_path_factory):
    out = tmp_path_factory.mktemp("sbagent") / "sbagent"
    subprocess.run(["gcc", "-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror",
                    "-I", str(UAPI), "-o", str(out), str(SRC)], check=True)
    return out


def agent_events(sbagent, tmp_path, revision: int) -> list:
    """Start the agent, say HELLO with ``revision``, and return the EV
    frames of the 7 records (decoded)."""
    dbg = tmp_path / "debugfs"
    dbg.mkdir()
    (dbg / "suspend_blocker_events").write_text(LOG)
    p = subprocess.Popen([str(sbagent), "--stdio", "--debugfs", str(dbg)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(ln) for ln in p.stdout],
                     daemon=True).start()
    evs = []
    try:
        end = time.monotonic() + 20
        hello_sent = False
        while len(evs) < 7:
            left = end - time.monotonic()
            assert left > 0, f"the agent sent {len(evs)} of 7 events"
            try:
                f = decode(lines.get(timeout=left))
            except queue.Empty:
                continue
            if f and f.type == "HELLO" and not hello_sent:
                # the agent waits for the host's HELLO before it streams
                p.stdin.write(frame(f"@sb1 HELLO {revision} - 0"))
                p.stdin.flush()
                hello_sent = True
            elif f and f.type == "EV":
                evs.append(f)
    finally:
        p.kill()
        p.wait(10)
    return evs


def test_agent_forwards_object_ids_to_a_revision_2_host(sbagent, tmp_path):
    evs = agent_events(sbagent, tmp_path, 2)
    assert [f.raw_args for f in evs] == [
        '0 100 block "evdev" 3', '1 200 block "evdev" 4',
        '2 300 unblock "evdev" 3', '3 400 policy opportunistic mem',
        '4 500 unblock "evdev" 4', '5 600 block "' + "L" * 52 + '"+ 5',
        '6 700 unblock "old module"']


def test_agent_sends_a_revision_1_host_no_ids(sbagent, tmp_path):
    """A host from before the ids (HELLO 1) gets the frames it always
    did: its decoder refuses anything after the name."""
    evs = agent_events(sbagent, tmp_path, 1)
    assert [f.raw_args for f in evs] == [
        '0 100 block "evdev"', '1 200 block "evdev"',
        '2 300 unblock "evdev"', '3 400 policy opportunistic mem',
        '4 500 unblock "evdev"', '5 600 block "' + "L" * 52 + '"+',
        '6 700 unblock "old module"']
