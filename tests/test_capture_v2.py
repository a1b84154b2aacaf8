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

import os
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from tests.capture import (FILES, CaptureFormatError, capture_version,
                           meta_section, read_capture, read_rows,
                           samples_cut_bytes, samples_file, write_samples_bin)

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


# ---- the C writer and reader, driven from here --------------------------
# sbrig-capwrite (host/tools) writes samples given as text with the real
# capture writer; `sbrig export` reads them back with the real reader.

BIN = REPO / "build" / "host" / "asan"
SBRIG = BIN / "sbrig"
CAPWRITE = BIN / "sbrig-capwrite"
COLS = FILES["samples"]
I64 = (-2**63, 2**63 - 1)
I32 = (-2**31, 2**31 - 1)


@pytest.fixture(scope="module", autouse=True)
def build():
    subprocess.run(["make", "-C", str(REPO / "host"), "VARIANT=asan", "-j2"],
                   check=True, stdout=subprocess.DEVNULL)


def tsv(rows, sep="\t") -> str:
    return "".join(sep.join(str(v) for v in r) + "\n"
                   for r in [COLS] + [tuple(r) for r in rows])


def capwrite(cap: Path, rows, version: int | None = None, *extra: str):
    args = [str(CAPWRITE)] + (["-V", str(version)] if version else [])
    p = subprocess.run(args + list(extra) + [str(cap)], input=tsv(rows),
                       text=True, capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return cap


def export(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run([str(SBRIG), "export", *map(str, args)], text=True,
                       capture_output=True, timeout=60)
    assert "Sanitizer" not in p.stderr, p.stderr
    if check:
        assert p.returncode == 0, p.stderr
    return p


def extreme_samples() -> list[tuple]:
    """Every field at its limits, negative and zero, and times that go
    backwards (the writer and reader keep what they are given), then
    enough ordinary samples to fill several writer and reader buffers."""
    rows = [
        (I64[0], I32[0], I32[0], I32[0], I64[0]),
        (I64[1], I32[1], I32[1], I32[1], I64[1]),
        (0, 0, 0, 0, 0),
        (-1, -1, -1, -1, -1),
        (1, -2, 3, -4, 5),
        (-1_000_000_000, 2**31 - 2, -(2**31) + 1, 255, -(2**63) + 1),
        (0x0123456789abcdef, 0x01234567, -0x01234567, 0x7f00ff00,
         -0x0123456789abcdef),
    ]
    rows += [(1_000_000_000 + i * 285_714, 50_000 + i % 1000,
              5_000_000 - i % 77, (i % 5000) * 25 - 60_000,
              250_000 - i * 7) for i in range(20_000)]
    return rows


def test_v2_round_trip_every_field(tmp_path):
    rows = extreme_samples()
    cap = capwrite(tmp_path / "cap", rows, 2)
    assert capture_version(cap) == 2 and not (cap / "samples.tsv").exists()
    # the C writer's bytes are the format document's (tests/capture.py)
    write_samples_bin(tmp_path / "ref.bin", [dict(zip(COLS, r)) for r in rows])
    assert (cap / "samples.bin").read_bytes() == \
        (tmp_path / "ref.bin").read_bytes()
    # read back by the Python reader and by the C reader (sbrig export)
    assert [tuple(r) for r in read_rows(cap, "samples", typed=True)] == rows
    assert export(cap, "--samples", "tsv").stdout == tsv(rows)
    assert int(meta_section(cap, "end")["samples"]) == len(rows)


def test_export_v1_and_v2_alike(tmp_path):
    rows = extreme_samples()
    v1 = capwrite(tmp_path / "v1", rows, 1)
    v2 = capwrite(tmp_path / "v2", rows, 2)
    assert capture_version(v1) == 1 and capture_version(v2) == 2
    for fmt, sep in (("csv", ","), ("tsv", "\t")):
        a = export(v1, "--samples", fmt).stdout
        b = export(v2, "--samples", fmt).stdout
        assert a == b == tsv(rows, sep), fmt
    # the fixtures: hand-made v2 from the format, v1 by the writer of its day
    for name in ("complete", "killed"):
        for fmt in ("csv", "tsv"):
            assert export(CAPTURES / name, "--samples", fmt).stdout == \
                export(CAPTURES / f"{name}-v2", "--samples", fmt).stdout


def test_export_tsv_of_v1_is_its_samples_tsv(tmp_path):
    v1 = capwrite(tmp_path / "v1", extreme_samples(), 1)
    for cap in (v1, CAPTURES / "complete", CAPTURES / "demo"):
        assert export(cap, "--samples", "tsv").stdout.encode() == \
            (cap / "samples.tsv").read_bytes(), cap


@pytest.mark.parametrize("cut", [1, 8, 16, 31])
def test_killed_mid_record_keeps_whole_records(tmp_path, cut):
    """A writer killed while writing a record: no [end] in meta.ini, and
    samples.bin ends in part of a record. The whole records before it are
    read by both readers; the cut one is left out and noted."""
    rows = extreme_samples()[:3000]
    cap = capwrite(tmp_path / "cap", rows + [(7, 7, 7, 7, 7)], 2,
                   "--no-close")
    assert meta_section(cap, "end") is None     # as a kill -9 leaves it
    f = cap / "samples.bin"
    whole = 32 + len(rows) * 32
    assert f.stat().st_size == whole + 32
    os.truncate(f, whole + cut)
    assert [tuple(r) for r in read_rows(cap, "samples", typed=True)] == rows
    assert samples_cut_bytes(cap) == cut
    p = export(cap, "--samples", "csv")
    assert p.stdout == tsv(rows, ",")
    assert f"{f}: the last record ({cut} bytes at offset {whole}) was cut " \
        "short by its writer and is left out" in p.stderr, p.stderr
    # a capture that ends on a record boundary has nothing to note
    os.truncate(f, whole)
    p = export(cap, "--samples", "csv")
    assert p.stdout == tsv(rows, ",") and p.stderr == ""


@pytest.mark.parametrize("offset,data,msg", [
    (0, b"SBRIGXXX", r"samples\.bin: offset 0: .*not a samples file"),
    (8, struct.pack("<I", 2), r"samples\.bin: offset 8: record format 2"),
    (12, struct.pack("<I", 48), r"samples\.bin: offset 12: record size 48"),
    (12, struct.pack("<I", 16), r"samples\.bin: offset 12: record size 16"),
    (16, struct.pack("<I", 1), r"samples\.bin: offset 16: flags"),
])
def test_export_corrupt_header_names_file_and_offset(tmp_path, offset, data,
                                                     msg):
    cap = _corrupt(tmp_path, offset, data)
    out = tmp_path / "out.csv"
    out.write_text("the old export\n")
    p = export(cap, "--samples", "csv", "-o", out, check=False)
    assert p.returncode == 1, p
    assert re.search(re.escape(str(cap)) + "/" + msg, p.stderr), p.stderr
    # nothing half-written: the old file as it was, no temporary left
    assert out.read_text() == "the old export\n"
    assert sorted(x.name for x in tmp_path.iterdir() if x.is_file()) == \
        ["out.csv"]


def test_export_short_header_and_unknown_version(tmp_path):
    cap = tmp_path / "short"
    shutil.copytree(CAPTURES / "complete-v2", cap)
    (cap / "samples.bin").write_bytes(b"SBRIGSMP\x01\x00")
    p = export(cap, "--samples", "tsv", check=False)
    assert p.returncode == 1 and p.stdout == ""
    assert f"{cap}/samples.bin: offset " in p.stderr, p.stderr
    # a capture format version this reader does not know
    cap = tmp_path / "v3"
    shutil.copytree(CAPTURES / "complete-v2", cap)
    meta = cap / "meta.ini"
    meta.write_text(meta.read_text().replace("version = 2", "version = 3"))
    p = export(cap, "--samples", "tsv", check=False)
    assert p.returncode == 1 and p.stdout == ""
    assert f"{cap}/meta.ini: [capture] version 3: this reader knows " \
        "versions 1 and 2" in p.stderr, p.stderr


def test_export_output_file_is_replaced_atomically(tmp_path):
    out = tmp_path / "samples.tsv"
    out.write_text("old\n")
    p = export(CAPTURES / "killed-v2", "--samples", "tsv", "-o", out)
    assert p.stdout == ""
    assert out.read_bytes() == (CAPTURES / "complete" / "samples.tsv").read_bytes()
    assert [x.name for x in tmp_path.iterdir()] == ["samples.tsv"]
    # the directories -o lacks are created (issue 25: every output option
    # does); one that cannot be is named
    p = export(CAPTURES / "complete-v2", "--samples", "csv", "-o",
               tmp_path / "no" / "such" / "dir.csv")
    assert (tmp_path / "no" / "such" / "dir.csv").read_text().startswith("t_ns,")
    (tmp_path / "afile").write_text("")
    p = export(CAPTURES / "complete-v2", "--samples", "csv", "-o",
               tmp_path / "afile" / "dir.csv", check=False)
    assert p.returncode == 1 and f"{tmp_path / 'afile'}: mkdir: Not a directory" in \
        p.stderr, p.stderr


def _read_fifo(path: Path, out: list):
    import threading

    def run():
        with open(path, "rb") as f:
            out.append(f.read())
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_output_that_is_no_regular_file_is_written_in_place(tmp_path):
    """-o FIFO (or /dev/null, a terminal): written into, never replaced by
    a renamed file (as root, `-o /dev/null` replaced the device with a
    regular file). Checked with a FIFO, which a rename would replace
    the same way, so this test cannot harm the machine."""
    import stat as st
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list = []
    t = _read_fifo(fifo, got)
    export(CAPTURES / "complete-v2", "--samples", "tsv", "-o", fifo)
    t.join(30)
    assert st.S_ISFIFO(os.stat(fifo).st_mode)
    assert got == [(CAPTURES / "complete" / "samples.tsv").read_bytes()]
    assert [x.name for x in tmp_path.iterdir()] == ["fifo"]
    # the report writer (sbrig render -o) alike
    rep = tmp_path / "rep"
    subprocess.run([str(SBRIG), "analyze", str(CAPTURES / "complete-v2"), "-o",
                    str(rep), "-q"], check=True, capture_output=True, timeout=60)
    got.clear()
    t = _read_fifo(fifo, got)
    subprocess.run([str(SBRIG), "render", str(rep / "report.json"), "-o",
                    str(fifo)], check=True, capture_output=True, timeout=60)
    t.join(30)
    assert st.S_ISFIFO(os.stat(fifo).st_mode)
    assert got and got[0] == (rep / "report.html").read_bytes()


def test_export_write_error_names_output_and_offset():
    with open("/dev/full", "w") as full:
        p = subprocess.run([str(SBRIG), "export", str(CAPTURES / "complete-v2"),
                            "--samples", "csv"], stdout=full, text=True,
                           stderr=subprocess.PIPE, timeout=60)
    assert p.returncode == 1
    assert "standard output: write at byte 0: No space left on device" in \
        p.stderr, p.stderr


@pytest.mark.parametrize("args,msg", [
    ([], "what to export?"),
    (["CAP"], "what to export?"),
    (["--samples", "csv"], "--samples: a CAPTURE is required"),
    (["CAP", "--samples", "json"], "--samples 'json': expected csv|tsv"),
    (["CAP", "CAP2", "--samples", "csv"], "unexpected argument 'CAP2'"),
    (["CAP", "--samples", "csv", "-o", ""], "-o: an empty file name"),
])
def test_export_usage_errors(args, msg):
    p = export(*args, check=False)
    assert p.returncode == 2 and msg in p.stderr, p.stderr
    assert "Try 'sbrig export --help'." in p.stderr


def test_export_help_names_the_options():
    p = export("--help")
    assert p.stdout.startswith("Usage: sbrig [-s SOCKET] export INPUT (--samples csv|tsv "
                               "| --perfetto | --csv TABLE | --junit | --lava) [-o FILE]\n")
    for opt in ("--samples csv|tsv", "--perfetto", "--csv blockers|wakeups|envelope",
                "--junit", "--lava", "-o, --output FILE", "Exit status:"):
        assert opt in p.stdout
