"""Capture format version 2 (samples.bin) from Python and from the CLI.

tests/fixtures/captures/complete-v2 and killed-v2 are the captures
complete and killed of format version 1 with their samples moved into a
samples.bin built from capture-format.md by hand (struct, not the C
writer): killed-v2 ends in 11 bytes of a cut record. Checked here:
tests/capture.py reads both versions alike; ``sbrig export`` turns the
samples of either version back into text (TSV byte-identical to a
version 1 samples.tsv); the real sbrigd writes version 2 and export gives
back the numbers the daemon saw. The C reader and writer themselves are
tested by host/tests/test_capture_read.c and test_capture.c.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from tests.capture import (FILES, CaptureFormatError, capture_version,
                           meta_section, read_capture, read_rows,
                           samples_cut_bytes, samples_file)

REPO = Path(__file__).resolve().parents[1]
CAPTURES = REPO / "tests" / "fixtures" / "captures"


def test_python_reads_both_versions_alike():
    for name in ("complete", "killed"):
        v1, v2 = CAPTURES / name, CAPTURES / f"{name}-v2"
        assert capture_version(v1) == 1 and capture_version(v2) == 2
        assert samples_file(v2).name == "samples.bin"
        a, b = read_capture(v1), read_capture(v2)
        for f in FILES:
            assert a[f] == b[f], (name, f)
        assert read_rows(v1, "samples", typed=True) == \
            read_rows(v2, "samples", typed=True)
    end = meta_section(CAPTURES / "complete-v2", "end")
    assert int(end["samples"]) == len(read_rows(CAPTURES / "complete-v2",
                                                "samples"))
    assert read_rows(CAPTURES / "complete-v2", "samples")[0] == {
        "t_ns": 1200000000, "current_uA": 5100, "bus_uV": 5000000,
        "shunt_nV": 510000, "power_uW": 25500}


def test_python_ignores_cut_record():
    killed = CAPTURES / "killed-v2"
    assert (killed / "samples.bin").stat().st_size == 32 + 3 * 32 + 11
    assert len(read_rows(killed, "samples")) == 3
    assert samples_cut_bytes(killed) == 11
    assert samples_cut_bytes(CAPTURES / "complete-v2") == 0
    assert samples_cut_bytes(CAPTURES / "killed") == len(
        (CAPTURES / "killed" / "samples.tsv").read_bytes().rpartition(b"\n")[2])


def _corrupt(tmp_path: Path, offset: int, data: bytes) -> Path:
    cap = tmp_path / f"cap-{offset}-{data.hex()}"
    shutil.copytree(CAPTURES / "complete-v2", cap)
    b = bytearray((cap / "samples.bin").read_bytes())
    b[offset:offset + len(data)] = data
    (cap / "samples.bin").write_bytes(bytes(b))
    return cap


@pytest.mark.parametrize("offset,data,msg", [
    (0, b"X", r"samples\.bin: offset 0: b'XBRIGSMP': not a samples file"),
    (8, struct.pack("<I", 2), r"samples\.bin: offset 8: record format 2"),
    (12, struct.pack("<I", 48), r"samples\.bin: offset 12: record size 48"),
    (16, struct.pack("<I", 1), r"samples\.bin: offset 16: flags 0x1"),
])
def test_python_bad_header_names_file_and_offset(tmp_path, offset, data, msg):
    with pytest.raises(CaptureFormatError, match=msg):
        read_rows(_corrupt(tmp_path, offset, data), "samples")


def test_python_short_header(tmp_path):
    cap = tmp_path / "short"
    shutil.copytree(CAPTURES / "complete-v2", cap)
    (cap / "samples.bin").write_bytes(b"SBRIGSMP\x01")
    with pytest.raises(CaptureFormatError,
                       match=r"samples\.bin: offset 9: no header \(9 bytes"):
        read_rows(cap, "samples")
