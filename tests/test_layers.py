"""The host code's module structure, checked from its sources.

* No include cycle between the daemon's modules (host/sbrigd/: foo.c and
  foo.h are one module) nor between libsbrig's (host/lib/foo.c and
  host/include/sbrig/foo.h are one module): layers call downwards only.
* The daemon and the CLI use only libsbrig's public headers (sbrig/*.h),
  never host/lib's private ones.
* Only main.c includes the server (the top module).
* No include cycle between the analysis's modules (host/analysis/: foo.c
  and foo.h are one module); the statistics of compare (compare-stats)
  use no other analysis module.
* No circle of files in host/analysis/ nor host/sbrigd/ when a header
  named after a .c (foo.h, foo-anything.h) counts as that .c's, and a
  call to a function another .c defines counts as much as an include:
  the types a lower file shares with a higher one live in a header that
  no .c is named after (an-timeline.h, cm-shared.h, ex-formats.h), and a
  helper the lower files call lives below them (an-base.c, ex-text.c).
* No circle of files in kernel-module/ either (one internal header,
  sb_internal.h, that no .c is named after): the clock (clock.c) lies
  below the event log, the marker line below the core, and the core
  calls the worker above it only through the kick main.c hands it.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HOST = REPO / "host"
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def includes(path: Path) -> list[tuple[str, str]]:
    """(kind, name) of each #include: kind '<' or '"'."""
    return INCLUDE.findall(path.read_text())


def graph(files: list[Path], module_of) -> dict[str, set[str]]:
    g: dict[str, set[str]] = {}
    for f in files:
        m = f.stem
        g.setdefault(m, set())
        for _, name in includes(f):
            dep = module_of(name)
            if dep and dep != m:
                g[m].add(dep)
    return g


def find_cycle(g: dict[str, set[str]]) -> list[str] | None:
    """A cycle of modules, or None (depth-first search, colours)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for d in sorted(g.get(n, ())):
            if state.get(d) == 1:
                return stack[stack.index(d):] + [d]
            if not state.get(d):
                found = visit(d)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(g):
        if not state.get(n):
            found = visit(n)
            if found:
                return found
    return None


def test_find_cycle_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def folder_graph(d: Path) -> dict[str, set[str]]:
    """The include graph of the modules of @d (foo.c and foo.h are one),
    by its own headers only."""
    local = {p.stem for p in d.glob("*.h")}
    return graph(sorted(d.glob("*.[ch]")),
                 lambda name: Path(name).stem if Path(name).stem in local
                 and "/" not in name else None)


def sbrigd_graph() -> dict[str, set[str]]:
    return folder_graph(HOST / "sbrigd")


def test_no_include_cycle_between_daemon_modules():
    g = sbrigd_graph()
    assert {"rig", "rec", "run", "latency", "agentop", "server", "sched",
            "evlog", "sleepwatch"} <= set(g)
    assert find_cycle(g) is None, f"include cycle: {' -> '.join(find_cycle(g))}"


def test_no_include_cycle_between_library_modules():
    files = sorted((HOST / "lib").glob("*.[ch]")) + \
        sorted((HOST / "include" / "sbrig").glob("*.h"))

    def module_of(name: str) -> str | None:
        stem = Path(name).stem
        if name.startswith("sbrig/") or "/" not in name:
            return stem
        return None
    g = graph(files, module_of)
    assert find_cycle(g) is None, f"include cycle: {' -> '.join(find_cycle(g))}"


def test_programs_use_only_public_headers():
    private = {p.name for p in (HOST / "lib").glob("*.h")}
    for d in ("sbrigd", "sbrig", "tools"):
        for f in sorted((HOST / d).glob("*.[ch]")):
            for kind, name in includes(f):
                assert Path(name).name not in private or kind == "<" and \
                    name.startswith("sbrig/"), \
                    f"{f.relative_to(REPO)} includes libsbrig's private {name}"


def test_only_main_includes_the_server():
    for f in sorted((HOST / "sbrigd").glob("*.c")):
        if f.name in ("main.c", "server.c"):
            continue
        assert ("\"", "server.h") not in includes(f), \
            f"{f.relative_to(REPO)} includes the server (the top module)"


def analysis_graph() -> dict[str, set[str]]:
    return folder_graph(HOST / "analysis")


def test_no_include_cycle_between_analysis_modules():
    g = analysis_graph()
    assert {"compare", "compare-stats", "report-load", "report-html"} <= set(g)
    assert find_cycle(g) is None, f"include cycle: {' -> '.join(find_cycle(g))}"


# comments, strings and character constants, blanked before a name is looked for
C_NOISE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                     re.S)
# a function defined at file scope and not static: its name
C_DEFINITION = re.compile(r'^(?!static\b)[A-Za-z_][\w \t\n*]*?[\s*](\w+)\s*'
                          r'\([^;{}]*\)\s*\{', re.M)


def c_code(path: Path) -> str:
    return C_NOISE.sub(lambda m: " " if m[0][0] == "/" else '""',
                       path.read_text())


def file_graph(d: Path) -> dict[str, set[str]]:
    """The files of @d as they depend on each other: a header named after
    a .c (foo.h or foo-anything.h; the longest name wins) is that .c's
    node; an arrow for each include of a file of @d and for each call of
    (or other use of the name of) a function that another .c defines."""
    sources = {p.stem for p in d.glob("*.c")}

    def node(name: str) -> str:
        stem = Path(name).stem
        if name.endswith(".c"):
            return stem
        owners = [c for c in sources if stem == c or stem.startswith(c + "-")]
        return max(owners, key=len) if owners else name

    local = {p.name for p in d.glob("*.[ch]")}
    g: dict[str, set[str]] = {}
    for f in sorted(d.glob("*.[ch]")):
        n = node(f.name)
        g.setdefault(n, set())
        for kind, name in includes(f):
            if kind == '"' and name in local and node(name) != n:
                g[n].add(node(name))
    defined = {p.stem: set(C_DEFINITION.findall(c_code(p)))
               for p in d.glob("*.c")}
    for p in sorted(d.glob("*.c")):
        words = set(re.findall(r"\b\w+\b", c_code(p)))
        for other, names in defined.items():
            if other != p.stem and names & words:
                g[p.stem].add(other)
    return g


def test_file_graph_sees_a_shared_type_header_and_a_call_back_up(tmp_path):
    """A header named after the top file (top-internal.h) included by a
    file the top calls is a circle; so is a call back up; moving the
    shared types into a header no .c is named after opens it."""
    (tmp_path / "top-internal.h").write_text("struct t { int x; };\nint low(void);\n")
    (tmp_path / "top.c").write_text('#include "top-internal.h"\n'
                                    "int main(void)\n{\n\treturn low();\n}\n")
    (tmp_path / "low.c").write_text('#include "top-internal.h"\n'
                                    "int low(void)\n{\n\treturn 0;\n}\n")
    assert find_cycle(file_graph(tmp_path)) == ["low", "top", "low"]
    (tmp_path / "top-internal.h").rename(tmp_path / "shared.h")
    for f in ("top.c", "low.c"):
        p = tmp_path / f
        p.write_text(p.read_text().replace("top-internal.h", "shared.h"))
    assert find_cycle(file_graph(tmp_path)) is None
    (tmp_path / "helper.c").write_text("int helper(void)\n{\n\treturn 1;\n}\n")
    (tmp_path / "low.c").write_text('#include "shared.h"\n'
                                    "int low(void)\n{\n\treturn main();\n}\n")
    assert find_cycle(file_graph(tmp_path)) == ["low", "top", "low"]
    # a name in a comment or a string is no call
    (tmp_path / "low.c").write_text('#include "shared.h"\n/* not main() */\n'
                                    'int low(void)\n{\n\treturn !"main()";\n}\n')
    assert find_cycle(file_graph(tmp_path)) is None


def test_no_circle_of_files_in_the_analysis_nor_the_daemon():
    for d in (HOST / "analysis", HOST / "sbrigd"):
        g = file_graph(d)
        assert len(g) > 10, g
        cycle = find_cycle(g)
        assert cycle is None, f"{d.relative_to(REPO)}: circle: {' -> '.join(cycle)}"
    g = file_graph(HOST / "analysis")
    # the steps call downwards (analysis.c's head comment)
    for hi, lo in (("analysis", "clockfit"), ("clockfit", "place"),
                   ("place", "edges"), ("export-perfetto", "ex-text"),
                   ("export-ci", "ex-text")):
        assert lo in g[hi], f"{hi}.c does not reach {lo}.c: {sorted(g[hi])}"


def test_no_circle_of_files_in_the_kernel_module():
    d = REPO / "kernel-module"
    g = file_graph(d)
    assert {"core", "events", "marker", "policy", "main"} <= set(g), g
    cycle = find_cycle(g)
    assert cycle is None, f"kernel-module: circle: {' -> '.join(cycle)}"
    # the layers of core.c's and sb_internal.h's comments, downwards
    for hi, lo in (("policy", "core"), ("core", "events"), ("core", "marker"),
                   ("events", "clock"), ("main", "policy")):
        assert lo in g[hi], f"{hi}.c does not reach {lo}.c: {sorted(g[hi])}"
    for lo in ("clock", "marker"):
        assert g[lo] <= {"sb_internal.h"}, f"{lo}.c calls up: {sorted(g[lo])}"


def test_compare_statistics_stand_alone():
    local = {p.name for p in (HOST / "analysis").glob("*.h")}
    for f in ("compare-stats.c", "compare-stats.h"):
        deps = {n for _, n in includes(HOST / "analysis" / f) if n in local}
        assert deps <= {"compare-stats.h"}, f"{f} includes {deps}"


def history_graph() -> dict[str, set[str]]:
    return folder_graph(HOST / "history")


def test_history_stands_on_the_analysis_and_nothing_above():
    """host/history/: no include cycle; steps.c (the change points) is
    pure; the history includes the CLI's headers never, of the analysis's
    private ones only its atomic writer, its page maker and its CSV cell
    writer; the analysis and libsbrig never include the history."""
    g = history_graph()
    assert {"db", "add", "trend", "steps", "export", "page", "internal"} <= set(g)
    assert find_cycle(g) is None, f"include cycle: {' -> '.join(find_cycle(g))}"
    analysis_private = {p.name for p in (HOST / "analysis").glob("*.h")}
    cli = {p.name for p in (HOST / "sbrig").glob("*.h")}
    for f in sorted((HOST / "history").glob("*.[ch]")):
        names = {n for _, n in includes(f)}
        assert not names & cli, f"{f.name} includes the CLI's {names & cli}"
        assert names & analysis_private <= {"atomic.h", "html-page.h", "csv.h"}, \
            f"{f.name} includes the analysis's private {names & analysis_private}"
    steps = {n for k, n in includes(HOST / "history" / "steps.c") if k == '"'}
    assert steps <= {"internal.h"}, steps
    for d in ("analysis", "lib"):
        for f in sorted((HOST / d).glob("*.[ch]")):
            assert "sbrig/history.h" not in {n for _, n in includes(f)}, \
                f"{f.relative_to(REPO)} includes the history (a layer above it)"


def test_history_backends_alone_know_their_database_library():
    """host/history/: one backend interface (internal.h's struct
    hi_backend, issue 28); only db-sqlite.c includes SQLite's header and
    only db-pg.c libpq's, and no other file calls either library."""
    own = {"sqlite3.h": "db-sqlite.c", "libpq-fe.h": "db-pg.c"}
    calls = {"db-sqlite.c": re.compile(r"\bsqlite3_\w+\s*\("),
             "db-pg.c": re.compile(r"\bPQ\w+\s*\(")}
    for f in sorted((HOST / "history").glob("*.[ch]")):
        names = {n for _, n in includes(f)}
        for header, backend in own.items():
            assert header not in names or f.name == backend, f"{f.name} includes {header}"
        text = f.read_text()
        for backend, pattern in calls.items():
            assert f.name == backend or not pattern.search(text), \
                f"{f.name} calls {backend}'s library: {pattern.search(text)[0]}"
