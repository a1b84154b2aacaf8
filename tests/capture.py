"""Read sbrig capture directories (format: host/doc/capture-format.md).

A small reader for tests: ``read_meta(dir)`` gives meta.ini as a list of
``(section, {key: value})`` pairs in file order ([target] may repeat);
``read_rows(dir, "samples")`` gives a file's rows as dicts with typed values
(ints for ``*_ns``/``*_uA``/... columns, unescaped strings for text). A last
line without its newline (a writer killed mid-write) is ignored, as the
format says; any other malformed line raises ``CaptureFormatError``.
"""

from __future__ import annotations

from collections import namedtuple
from pathlib import Path

FILES = {
    "samples": ("t_ns", "current_uA", "bus_uV", "shunt_nV", "power_uW"),
    "gaps": ("t_ns", "next_t_ns", "missing"),
    "edges": ("t_ns", "line", "edge", "seqno"),
    "stimuli": ("t_ns", "what", "arg"),
    "events": ("host_t_ns", "uncert_ns", "target_t_ns", "boot_id", "seq",
               "type", "arg", "cut"),
    "stats": ("t_ns", "name", "count", "wake_count", "active_since_ns",
              "total_time_ns", "sleep_time_ns", "max_time_ns",
              "last_change_ns"),
    "clock": ("host_send_ns", "host_recv_ns", "target_ns", "retained"),
}
TEXT_COLUMNS = {"line", "edge", "what", "arg", "boot_id", "type", "name"}

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


def read_rows(capture_dir, name: str, typed: bool = False) -> list:
    """Rows of ``NAME.tsv``: dicts, or namedtuples when ``typed``."""
    cols = FILES[name]
    path = Path(capture_dir) / f"{name}.tsv"
    rows = []
    for lineno, line in _complete_lines(path):
        fields = line.split("\t")
        if lineno == 1:
            if tuple(fields) != cols:
                raise CaptureFormatError(
                    f"{path}:1: header {fields} is not {list(cols)}")
            continue
        if len(fields) != len(cols):
            raise CaptureFormatError(
                f"{path}:{lineno}: {len(fields)} columns, expected {len(cols)}")
        try:
            values = [_convert(c, v) for c, v in zip(cols, fields)]
        except ValueError as e:
            raise CaptureFormatError(f"{path}:{lineno}: {e}") from None
        rows.append(Row[name](*values) if typed else dict(zip(cols, values)))
    return rows


def read_capture(capture_dir) -> dict:
    """Everything: {"meta": read_meta(), "samples": [...], ...}."""
    out = {"meta": read_meta(capture_dir)}
    for name in FILES:
        out[name] = read_rows(capture_dir, name)
    return out
