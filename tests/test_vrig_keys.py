"""rig/virtual/vrig.py's keypad interrupt (LineProxy), without QEMU: a
fake QEMU run state plays the race issue 27's LAVA power test met. The
key's line is written after QEMU's WAKEUP, and an opportunistic guest can
suspend again before it comes (seen: SUSPEND 48 ms after WAKEUP while the
rig host heard the WAKEUP 49 ms late); the line then waits in QEMU and the
press is lost unless the keypad wakes the guest again, as a real key's
latched interrupt would."""

from __future__ import annotations

import importlib.util
import socket
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _vrig():
    spec = importlib.util.spec_from_file_location("vrig_keys", REPO / "rig" / "virtual"
                                                  / "vrig.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


vrig = _vrig()


class FakeQemu:
    """QEMU's run state as LineProxy sees it (vrig's rig.vm): a guest in
    S3 whose first @resuspends wakes end in a suspend before it reads its
    keypad port (the opportunistic loop outrunning the line); on a later
    wake it takes what the port holds and stays up."""

    def __init__(self, resuspends: int, port: socket.socket) -> None:
        self.status = "suspended"
        self.resuspends = resuspends
        self.port = port            # the guest's end of the keypad port
        self.events: list[str] = []
        self.taken = b""

    def query_status(self) -> str:
        return self.status

    def qmp_mark(self) -> int:
        return len(self.events)

    def system_wakeup(self) -> None:
        assert self.status == "suspended", "system_wakeup of a running guest"
        self.events.append("WAKEUP")
        if self.resuspends:
            self.resuspends -= 1
            self.events.append("SUSPEND")
            return
        self.status = "running"
        self.port.setblocking(False)
        try:
            self.taken += self.port.recv(4096)
        except BlockingIOError:
            pass

    def wait_qmp_event(self, name: str, timeout: float, since: int | None = None) -> dict:
        assert name in self.events[since or 0:], (name, self.events, since)
        return {"event": name}


def proxy(tmp_path: Path, resuspends: int) -> tuple:
    ours, guests = socket.socketpair()
    rig = type("Rig", (), {})()
    rig.vm = FakeQemu(resuspends, guests)
    keys = vrig.LineProxy(str(tmp_path / "keys.sock"), rig)
    keys.port = ours
    return keys, rig.vm


def test_a_guest_that_suspends_before_its_key_line_is_woken_again(tmp_path):
    keys, qemu = proxy(tmp_path, resuspends=1)
    keys.key(vrig.KEY_POWER, True)
    # woken, suspended again before the line, woken again: it took the line
    assert qemu.events == ["WAKEUP", "SUSPEND", "WAKEUP"]
    assert qemu.status == "running" and qemu.taken == f"d {vrig.KEY_POWER}\n".encode()
    assert keys.lines == [f"d {vrig.KEY_POWER}\n"]          # written once
    assert keys.rewakes == [f"d {vrig.KEY_POWER}\n"]        # and counted
    keys.key(vrig.KEY_POWER, False)                          # a key up wakes nothing
    assert qemu.events == ["WAKEUP", "SUSPEND", "WAKEUP"] and len(keys.rewakes) == 1


def test_a_guest_that_takes_its_line_is_woken_once(tmp_path):
    keys, qemu = proxy(tmp_path, resuspends=0)
    keys.key(vrig.KEY_POWER, True)
    assert qemu.events == ["WAKEUP"] and qemu.status == "running"
    assert keys.rewakes == []


def test_the_keypad_wakes_again_at_most_twice(tmp_path):
    keys, qemu = proxy(tmp_path, resuspends=5)
    keys.key(vrig.KEY_POWER, True)
    assert qemu.events.count("WAKEUP") == 3 and len(keys.rewakes) == 2
    assert qemu.status == "suspended"       # what the scenario's wait then reports
