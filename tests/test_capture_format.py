"""tests/capture.py against checked-in capture directories.

tests/fixtures/captures/complete is a finished capture; killed is the same
capture as a kill -9 leaves it (no [end] section, samples.tsv and
events.tsv cut in the middle of a row). The writer itself
(host/lib/capture.c) is tested by host/tests/test_capture.c; here the
column tables of the reader are also checked against the writer's source so
the two cannot drift apart.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.capture import (FILES, CaptureFormatError, meta_section,
                           read_capture, read_meta, read_rows, unescape)

REPO = Path(__file__).resolve().parents[1]
CAPTURES = REPO / "tests" / "fixtures" / "captures"


def test_complete_capture():
    cap = read_capture(CAPTURES / "complete")
    sections = [name for name, _ in cap["meta"]]
    assert sections == ["capture", "provenance", "target", "end"]
    assert meta_section(CAPTURES / "complete", "capture")["version"] == "1"
    prov = meta_section(CAPTURES / "complete", "provenance")
    assert prov["rig_name"] == "virtual"
    assert prov["power_uri"] == "ip:127.0.0.1:30431"
    end = meta_section(CAPTURES / "complete", "end")
    assert end["status"] == "complete"
    # the [end] counters match the rows
    for name in FILES:
        assert int(end[name]) == len(cap[name]), name
    assert cap["samples"][0] == {"t_ns": 1200000000, "current_uA": 5100,
                                 "bus_uV": 5000000, "shunt_nV": 510000,
                                 "power_uW": 25500}
    assert cap["gaps"][0]["missing"] == 2
    assert cap["edges"][0]["edge"] == "rising"


def test_typed_rows_and_escapes():
    events = read_rows(CAPTURES / "complete", "events", typed=True)
    assert events[0].type == "block" and events[0].arg == "keypad-scan"
    assert events[0].cut == 0
    assert events[1].arg == "rig\tagent \\ x"
    assert events[1].cut == 1
    stats = read_rows(CAPTURES / "complete", "stats", typed=True)
    assert stats[0].name == "rig agent"
    assert stats[0].last_change_ns == 90000000000


def test_killed_capture_is_readable():
    cap = read_capture(CAPTURES / "killed")
    assert meta_section(CAPTURES / "killed", "end") is None
    # the cut last rows are dropped, every whole row is there
    assert len(cap["samples"]) == 3
    assert len(cap["events"]) == 2
    raw = (CAPTURES / "killed" / "samples.tsv").read_text()
    assert not raw.endswith("\n")


def test_malformed_row_names_file_and_line(tmp_path):
    cap = tmp_path / "cap"
    shutil.copytree(CAPTURES / "complete", cap)
    with open(cap / "gaps.tsv", "a") as f:
        f.write("1\t2\n")
    with pytest.raises(CaptureFormatError, match=r"gaps\.tsv:3: 2 columns"):
        read_rows(cap, "gaps")
    with open(cap / "clock.tsv", "a") as f:
        f.write("1\t2\tx\t1\n")
    with pytest.raises(CaptureFormatError, match=r"clock\.tsv:3:"):
        read_rows(cap, "clock")
    (cap / "edges.tsv").write_text("t_ns\tline\n")
    with pytest.raises(CaptureFormatError, match=r"edges\.tsv:1: header"):
        read_rows(cap, "edges")


def test_meta_keeps_repeated_target_sections(tmp_path):
    cap = tmp_path / "cap"
    shutil.copytree(CAPTURES / "complete", cap)
    text = (cap / "meta.ini").read_text()
    text = text.replace("[end]", "[target]\nboot_id = second\n\n[end]")
    (cap / "meta.ini").write_text(text)
    targets = [v for name, v in read_meta(cap) if name == "target"]
    assert [t["boot_id"] for t in targets][-1] == "second"
    assert len(targets) == 2


def test_unescape():
    assert unescape(r"a\tb\nc\\d\x01\r") == "a\tb\nc\\d\x01\r"
    with pytest.raises(ValueError):
        unescape("bad\\q")


def test_reader_columns_match_writer():
    src = (REPO / "host" / "lib" / "capture.c").read_text()
    for name, cols in FILES.items():
        m = re.search(r'\{ "%s\.tsv",\s*((?:"[^"]*"\s*)+),' % name, src)
        assert m, name
        header = "".join(re.findall(r'"([^"]*)"', m.group(1)))
        assert header.replace("\\t", "\t").split("\t") == list(cols), name
