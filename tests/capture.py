"""Read sbrig capture directories (format: host/doc/capture-format.md).

A small reader for tests: ``read_meta(dir)`` gives meta.ini as a list of
``(section, {key: value})`` pairs in file order ([target] may repeat);
``read_rows(dir, "samples")`` gives a file's rows as dicts with typed values
(ints for ``*_ns``/``*_uA``/... columns, unescaped strings for text). A last
line without its newline (a writer killed mid-write) is ignored, as the
format says; any other malformed line raises ``CaptureFormatError``.

Both format versions are read: in version 2 the samples are binary
records in ``samples.bin`` (decoded with ``struct``), and ``read_rows(dir,
"samples")`` returns them exactly as it returns the rows of a version 1
``samples.tsv`` (same columns, same order). A cut last record is ignored
like a cut line (``samples_cut_bytes()`` says how long it was); a bad
header raises ``CaptureFormatError`` naming the file and the offset.

``write_samples_bin(path, rows)`` and ``to_version2(src, dst)`` go the
other way, from the format document alone (struct, not the C writer): the
version 2 form of a version 1 capture, for tests that check a reader of
both versions gives the same answers.
"""

from __future__ import annotations

import shutil
import struct
from collections import namedtuple
from pathlib import Path

FILES = {
    "samples": ("t_ns", "current_uA", "bus_uV", "shunt_nV", "power_uW"),
    "gaps": ("t_ns", "next_t_ns", "missing"),
    "edges": ("t_ns", "line", "edge", "seqno"),
    "stimuli": ("t_ns", "what", "arg"),
    "events": ("host_t_ns", "uncert_ns", "target_t_ns", "boot_id", "seq",
               "type", "arg", "cut", "obj"),
    "stats": ("t_ns", "name", "count", "wake_count", "active_since_ns",
              "total_time_ns", "sleep_time_ns", "max_time_ns",
              "last_change_ns"),
    "clock": ("host_send_ns", "host_recv_ns", "target_ns", "retained"),
}
TEXT_COLUMNS = {"line", "edge", "what", "arg", "boot_id", "type", "name"}
#: columns appended since a file's first format, which a file written
#: before may lack (their value is then 0): events.tsv's obj (issue 23)
APPENDED = {"events": ("obj",)}

# samples.bin (format version 2): a 32-byte header, then 32-byte records
SAMPLES_BIN = "samples.bin"
BIN_MAGIC = b"SBRIGSMP"
BIN_HEADER = struct.Struct("<8sIII12x")     # magic, record format, size, flags
BIN_RECORD = struct.Struct("<qqiiiI")       # t, power, current, bus, shunt, 0
BIN_RECORD_FORMAT = 1

Row = {name: namedtuple(name.capitalize() + "Row", cols)
       for name, cols in FILES.items()}


class CaptureFormatError(ValueError):
    """A capture file that does not follow the format (names file:line)."""


def unescape(s: str) -> str:
    """Undo the writer's escaping: \\\\ \\t \\n \\r \\xHH."""
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        nxt = s[i + 1:i + 2]
        if nxt in ("\\", "t", "n", "r"):
            out.append({"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}[nxt])
            i += 2
        elif nxt == "x" and len(s) >= i + 4:
            out.append(chr(int(s[i + 2:i + 4], 16)))
            i += 4
        else:
            raise ValueError(f"bad escape at {i} in {s!r}")
    return "".join(out)


def _complete_lines(path: Path) -> list[tuple[int, str]]:
    data = path.read_bytes().decode("utf-8", errors="surrogateescape")
    lines = data.split("\n")
    # the piece after the last newline is either "" or a cut line: dropped
    return list(enumerate(lines[:-1], start=1))


def read_meta(capture_dir) -> list[tuple[str, dict[str, str]]]:
    """meta.ini as [(section, {key: value})] in file order."""
    path = Path(capture_dir) / "meta.ini"
    sections: list[tuple[str, dict[str, str]]] = []
    for lineno, line in _complete_lines(path):
        if not line.strip() or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            sections.append((line[1:-1], {}))
            continue
        key, sep, value = line.partition(" = ")
        if not sep or not sections:
            raise CaptureFormatError(f"{path}:{lineno}: expected key = value")
        sections[-1][1][key] = unescape(value)
    return sections


def meta_section(capture_dir, name: str) -> dict[str, str] | None:
    """The first section called ``name`` of meta.ini, or None."""
    for section, values in read_meta(capture_dir):
        if section == name:
            return values
    return None


def _convert(col: str, value: str):
    return unescape(value) if col in TEXT_COLUMNS else int(value)


def capture_version(capture_dir) -> int:
    """meta.ini's [capture] version (without a meta.ini: 2 if there is a
    samples.bin, else 1)."""
    if not (Path(capture_dir) / "meta.ini").exists():
        return 2 if (Path(capture_dir) / SAMPLES_BIN).exists() else 1
    capture = meta_section(capture_dir, "capture") or {}
    try:
        return int(capture.get("version", "1"))
    except ValueError:
        raise CaptureFormatError(
            f"{Path(capture_dir) / 'meta.ini'}: [capture] version "
            f"{capture['version']!r}: not a number") from None


def samples_file(capture_dir) -> Path:
    """The file holding the samples: samples.tsv (v1) or samples.bin (v2)."""
    name = SAMPLES_BIN if capture_version(capture_dir) >= 2 else "samples.tsv"
    return Path(capture_dir) / name


def _bin_body(path: Path) -> tuple[memoryview, int]:
    """The whole records of samples.bin and the length of a cut last one."""
    data = path.read_bytes()
    if len(data) < BIN_HEADER.size:
        raise CaptureFormatError(
            f"{path}: offset {len(data)}: no header ({len(data)} bytes, "
            f"expected {BIN_HEADER.size})")
    magic, fmt, size, flags = BIN_HEADER.unpack_from(data)
    if magic != BIN_MAGIC:
        raise CaptureFormatError(f"{path}: offset 0: {magic!r}: not a "
                                 f"samples file (expected {BIN_MAGIC!r})")
    if fmt != BIN_RECORD_FORMAT:
        raise CaptureFormatError(f"{path}: offset 8: record format {fmt}: "
                                 f"this reader knows {BIN_RECORD_FORMAT}")
    if size != BIN_RECORD.size:
        raise CaptureFormatError(f"{path}: offset 12: record size {size}, "
                                 f"expected {BIN_RECORD.size}")
    if flags:
        raise CaptureFormatError(f"{path}: offset 16: flags {flags:#x}: "
                                 "this reader knows none")
    n = (len(data) - BIN_HEADER.size) // BIN_RECORD.size
    end = BIN_HEADER.size + n * BIN_RECORD.size
    return memoryview(data)[BIN_HEADER.size:end], len(data) - end


def samples_cut_bytes(capture_dir) -> int:
    """Bytes of a cut last sample row or record (0: the file ends whole)."""
    path = samples_file(capture_dir)
    if path.name == SAMPLES_BIN:
        return _bin_body(path)[1]
    return len(path.read_bytes().rpartition(b"\n")[2])


def _read_samples_bin(path: Path, typed: bool) -> list:
    body, _ = _bin_body(path)
    cols = FILES["samples"]
    make = Row["samples"]._make if typed else (lambda v: dict(zip(cols, v)))
    # record order t, power, current, bus, shunt -> the columns' order
    return [make((t, c, b, sh, p))
            for t, p, c, b, sh, _ in BIN_RECORD.iter_unpack(body)]


def read_rows(capture_dir, name: str, typed: bool = False) -> list:
    """Rows of ``NAME.tsv`` (the samples of a version 2 capture: the records
    of samples.bin): dicts, or namedtuples when ``typed``."""
    cols = FILES[name]
    if name == "samples":
        path = samples_file(capture_dir)
        if path.name == SAMPLES_BIN:
            return _read_samples_bin(path, typed)
    path = Path(capture_dir) / f"{name}.tsv"
    rows = []
    missing: tuple = ()
    for lineno, line in _complete_lines(path):
        fields = line.split("\t")
        if lineno == 1:
            base = cols[:len(cols) - len(APPENDED.get(name, ()))]
            if tuple(fields) == base:
                missing = cols[len(base):]
            elif tuple(fields) != cols:
                raise CaptureFormatError(
                    f"{path}:1: header {fields} is not {list(cols)}")
            continue
        if len(fields) != len(cols) - len(missing):
            raise CaptureFormatError(
                f"{path}:{lineno}: {len(fields)} columns, expected "
                f"{len(cols) - len(missing)}")
        try:
            values = [_convert(c, v) for c, v in zip(cols, fields)]
            values += [0] * len(missing)
        except ValueError as e:
            raise CaptureFormatError(f"{path}:{lineno}: {e}") from None
        rows.append(Row[name](*values) if typed else dict(zip(cols, values)))
    return rows


def write_samples_bin(path, rows) -> None:
    """Write ``rows`` (dicts or typed rows of the samples columns) as a
    samples.bin: its header, then one record per row."""
    out = bytearray(BIN_HEADER.pack(BIN_MAGIC, BIN_RECORD_FORMAT,
                                    BIN_RECORD.size, 0))
    for r in rows:
        r = r._asdict() if hasattr(r, "_asdict") else r
        out += BIN_RECORD.pack(r["t_ns"], r["power_uW"], r["current_uA"],
                               r["bus_uV"], r["shunt_nV"], 0)
    Path(path).write_bytes(bytes(out))


def to_version2(src, dst) -> Path:
    """Copy the version 1 capture ``src`` to ``dst`` as version 2: its
    samples.tsv becomes samples.bin (a cut last row is dropped, as a reader
    would), meta.ini says version 2, every other file is unchanged."""
    src, dst = Path(src), Path(dst)
    if capture_version(src) != 1:
        raise ValueError(f"{src}: not a version 1 capture")
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("samples.tsv"))
    write_samples_bin(dst / SAMPLES_BIN, read_rows(src, "samples"))
    meta = (dst / "meta.ini").read_text()
    head, sep, rest = meta.partition("\nversion = 1\n")
    if not sep or not head.startswith("[capture]"):
        raise ValueError(f"{src}/meta.ini: no [capture] version = 1 line")
    (dst / "meta.ini").write_text(head + "\nversion = 2\n" + rest)
    return dst


def read_capture(capture_dir) -> dict:
    """Everything: {"meta": read_meta(), "samples": [...], ...}."""
    out = {"meta": read_meta(capture_dir)}
    for name in FILES:
        out[name] = read_rows(capture_dir, name)
    return out
