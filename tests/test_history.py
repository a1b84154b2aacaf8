"""sbrig history: the per-commit history of runs, in SQLite and in PostgreSQL.

Every test that is not about one backend's own file or server runs on both
(``backend``: a file under tmp_path, or a new database of the session's
PostgreSQL 15 server, tests/pgserver.py); the SQLite-only ones are about
its file (WAL, application_id, read-only directory, corrupt pages, the
version-1 fixture), the PostgreSQL-only ones (tests/test_history_pg.py)
about its server.

* add files runs under their commit, scenario and rig; the same capture
  twice is one run; show, export (CSV) and trend say what was added; the
  database is where the documented default says (SBRIG_HISTORY,
  XDG_DATA_HOME) and an error names the file.
* Change points: a step at commit k of 30 (synthetic runs with a 5 %
  rise) is found at k with its magnitude; series with no step are not
  flagged.
* Concurrency: adders running at once lose nothing; a writer killed with
  SIGKILL while it holds the write lock (inside its transaction) loses
  only what it had not committed, and the database opens and takes adds.
* Schema: a version-1 database (tests/fixtures/history/v1.sql) is
  migrated (the commit order kept); a newer version, or a file that is no
  database, is refused naming the file.
* Bad input: a report of another schema version, a run without a commit,
  an unknown metric or scenario, a scenario on several rigs: clear errors,
  exit codes as documented, no crash.

sbrig is the ASan/UBSan build (the release build for the series of
trials).
"""

from __future__ import annotations

import csv
import io
import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests import pgserver
from tests.skips import cannot_run

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.synth import runs  # noqa: E402

SBRIG = REPO / "build" / "host" / "asan" / "sbrig"
RELEASE = REPO / "build" / "host" / "release" / "sbrig"
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=1",
           UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_NOT_COMPARABLE = 0, 1, 2, 5
EXIT_BAD_INPUT, EXIT_DB = 6, 7
SCENARIO = "rig/scenarios/keypress.scn"     # the fixture report's


@pytest.fixture(scope="module", autouse=True)
def build():
    for variant in ("asan", "release"):
        r = subprocess.run(["make", "-C", str(REPO / "host"), f"VARIANT={variant}", "-j2"],
                           capture_output=True, text=True)
        if r.returncode:
            pytest.fail(f"make -C host VARIANT={variant} failed:\n{r.stdout[-3000:]}\n"
                        f"{r.stderr[-3000:]}", pytrace=False)


pg_server = pgserver.pg_server     # the session's PostgreSQL server


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request):
    return request.param


@pytest.fixture
def newdb(backend, tmp_path, request):
    """newdb(NAME): a database that does not exist yet (SQLite: a file
    under tmp_path) or is empty (PostgreSQL: a new database)"""
    if backend == "sqlite":
        return lambda name="h": tmp_path / f"{name}.db"
    return request.getfixturevalue("pg_server").newdb


def is_pg(db) -> bool:
    return str(db).startswith("postgresql://")


def env_for(db, env=None) -> dict:
    """the environment for sbrig on @db: libpq's password file for a
    PostgreSQL one"""
    env = env or ENV
    return pgserver.CURRENT.env(env) if is_pg(db) else env


def history(db, *args, sbrig=SBRIG, env=None, timeout=600, **kw) -> subprocess.CompletedProcess:
    cmd = [str(sbrig), "history"] + (["--db", str(db)] if db else []) + list(map(str, args))
    return subprocess.run(cmd, capture_output=True, text=True, env=env_for(db, env),
                          timeout=timeout, **kw)


def query(db, sql: str) -> list[tuple]:
    """@sql's rows from either backend (PostgreSQL's numbers as ints)"""
    if not is_pg(db):
        with sqlite3.connect(db) as c:
            return c.execute(sql).fetchall()
    rows = pgserver.CURRENT.query(pgserver.dbname(str(db)), sql)
    return [tuple(int(v) if re.fullmatch(r"-?[0-9]+", v) else v for v in r) for r in rows]


def series(d: Path, commits: int = 30, per_commit: int = 3, step_at: int | None = None,
           rise: float = 0.05, seed: int = 1, noise: float = 0.01,
           wifi: float = 1.0) -> list[Path]:
    """report.json files of ``per_commit`` runs of each of ``commits``
    commits c00, c01, ...; energy per wakeup ``1 + rise`` times higher
    from commit ``step_at`` on, wifi's energy ``wifi`` times higher."""
    rng = random.Random(seed)
    reports = []
    for k in range(commits):
        stepped = step_at is not None and k >= step_at
        f = 1 + rise if stepped else 1
        for _ in range(per_commit):
            reports.append(runs.fake_report(rng, energy_uJ=100_000 * f, noise=noise,
                                            git_sha=f"c{k:02d}",
                                            blockers={"wifi": 50_000 * (wifi if stepped else 1)}))
    return runs.write_reports(reports, d)


def db_runs(db) -> list[tuple]:
    return query(db, "SELECT id, commit_sha, report FROM runs ORDER BY id")


def metrics_per_run(db) -> set[int]:
    return {n for (n,) in query(db, "SELECT COUNT(m.metric) FROM runs r LEFT JOIN metrics m "
                                    "ON m.run_id = r.id GROUP BY r.id")}


# ---- add, show, export ----------------------------------------------------

def test_add_is_idempotent_and_show_export_say_what_was_added(tmp_path, newdb):
    reps = series(tmp_path / "r", commits=3, per_commit=2)
    db = newdb("lab")
    r = history(db, "add", *reps)
    assert r.returncode == EXIT_OK, r.stderr
    assert r.stdout.count("added: ") == 6
    assert f"history: {db}: 6 added, 0 present" in r.stdout
    # the same captures again (one twice on the command line): one run each
    r = history(db, "add", reps[0], *reps)
    assert r.returncode == EXIT_OK, r.stderr
    assert "0 added, 7 present" in r.stdout
    assert len(db_runs(db)) == 6
    if is_pg(db):   # sbrig_meta: PRAGMA application_id and user_version's stand-in
        assert query(db, "SELECT application_id, schema_version FROM sbrig_meta") == \
            [(0x53425247, 2)]
    else:
        with sqlite3.connect(db) as c:
            assert c.execute("PRAGMA journal_mode").fetchone() == ("wal",)
            assert c.execute("PRAGMA user_version").fetchone() == (2,)
    assert query(db, "SELECT sha, seq FROM commits ORDER BY seq") == \
        [("c00", 1), ("c01", 2), ("c02", 3)]

    r = history(db, "show")
    assert r.returncode == EXIT_OK, r.stderr
    assert f"history: {db} (schema version 2)" in r.stdout
    row = next(line for line in r.stdout.splitlines() if line.startswith(SCENARIO))
    assert row.split()[1:5] == ["virtual", "3", "6", "c02"]
    r = history(db, "show", "keypress")
    assert r.returncode == EXIT_OK, r.stderr
    assert [line.split()[:4] for line in r.stdout.splitlines()[3:]] == \
        [["1", "c00", "virtual", "2"], ["2", "c01", "virtual", "2"],
         ["3", "c02", "virtual", "2"]]

    out = tmp_path / "all.csv"
    r = history(db, "export", "-o", out)
    assert r.returncode == EXIT_OK, r.stderr
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert {r["report"] for r in rows} == {str(p) for p in reps}
    e = [r for r in rows if r["metric"] == "energy_per_wakeup_uJ" and r["report"] == str(reps[0])]
    assert len(e) == 1 and e[0]["unit"] == "uJ" and e[0]["commit"] == "c00"
    want = json.loads(reps[0].read_text())["wakeups"]
    assert float(e[0]["value"]) == pytest.approx(
        sum(w["energy_uJ"] for w in want) / len(want), rel=1e-9)
    assert any(r["metric"] == "blocker_energy_per_wakeup_uJ" and r["blocker"] == "wifi"
               for r in rows)
    r = history(db, "export", "--scenario", "keypress")
    assert r.returncode == EXIT_OK and r.stdout == out.read_text()


def test_default_database_location(tmp_path):
    reps = series(tmp_path / "r", commits=1, per_commit=1)
    env = {k: v for k, v in ENV.items() if k != "SBRIG_HISTORY"}
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg")
    r = history(None, "add", reps[0], env=env)
    assert r.returncode == EXIT_OK, r.stderr
    assert (tmp_path / "xdg" / "sbrig" / "history.db").is_file()
    env2 = dict(env, SBRIG_HISTORY=str(tmp_path / "env.db"))
    assert history(None, "add", reps[0], env=env2).returncode == EXIT_OK
    assert (tmp_path / "env.db").is_file()
    # --db wins; a database that is not there is not created by show
    r = history(tmp_path / "none.db", "show", env=env2)
    assert r.returncode == EXIT_DB
    assert str(tmp_path / "none.db") in r.stderr and "sbrig history add" in r.stderr
    assert not (tmp_path / "none.db").exists()


# ---- change points --------------------------------------------------------

@pytest.mark.parametrize("k", [5, 17, 25])
def test_a_step_at_commit_k_of_30_is_found_at_k(tmp_path, newdb, k):
    db = newdb("h")
    r = history(db, "add", *series(tmp_path / "r", step_at=k, seed=k))
    assert r.returncode == EXIT_OK, r.stderr
    tj = tmp_path / "trend.json"
    r = history(db, "trend", "keypress", "energy_per_wakeup_uJ", "--json", tj)
    assert r.returncode == EXIT_OK, r.stderr
    steps = [line for line in r.stdout.splitlines() if line.startswith("step: ")]
    assert len(steps) == 1, r.stdout
    assert steps[0].startswith(f"step: c{k:02d}: +") and steps[0].endswith("regressed")
    doc = json.loads(tj.read_text())
    assert doc["schema"] == "sbrig-trend" and doc["version"] == 2
    assert len(doc["points"]) == 30
    assert sum(p["n"] for p in doc["points"]) == 90
    (s,) = doc["steps"]
    assert s["commit"] == f"c{k:02d}" and s["after_commit"] == f"c{k - 1:02d}"
    assert s["seq"] == k + 1 and s["direction"] == "regressed"
    assert s["provisional"] is False
    assert s["commits_before"] == s["commits_after"] == 5
    assert s["change_rel"] == pytest.approx(0.05, abs=0.015)
    assert s["change"] == pytest.approx(5000, rel=0.3)
    # each point links its runs' reports
    assert all(Path(p).is_file() for pt in doc["points"] for p in pt["reports"])
    # a metric that did not move has no step
    r = history(db, "trend", "keypress", "latency_median_ns")
    assert r.returncode == EXIT_OK, r.stderr
    assert "steps: none" in r.stdout


@pytest.mark.parametrize("k", [3, 27])
def test_a_step_without_full_windows_is_provisional(tmp_path, newdb, k):
    """A step 3 commits from either end (window 5) is found, marked
    provisional: the windows it was judged on are not full."""
    db = newdb("h")
    assert history(db, "add", *series(tmp_path / "r", step_at=k, rise=0.15,
                                      seed=k)).returncode == 0
    tj = tmp_path / "trend.json"
    r = history(db, "trend", "keypress", "energy_per_wakeup_uJ", "--json", tj)
    assert r.returncode == EXIT_OK, r.stderr
    (line,) = [x for x in r.stdout.splitlines() if x.startswith("step: ")]
    assert line.startswith(f"step: c{k:02d}: +")
    assert line.endswith("regressed (provisional: a window is not full yet)")
    (s,) = json.loads(tj.read_text())["steps"]
    assert s["commit"] == f"c{k:02d}" and s["provisional"] is True
    assert (s["commits_before"], s["commits_after"]) == ((3, 5) if k == 3 else (5, 3))


def test_a_25_percent_step_is_named_and_nothing_else_flagged(tmp_path, newdb):
    """The detection figure of issue 24: runs with realistic noise (a
    run-to-run CV of 5 %, 3 runs a commit, 40 commits), one blocker's energy per
    wakeup +25 % from commit c23 on: every metric of every blocker
    looked at (the trend page's data), the step is named at c23 and
    nothing else anywhere is flagged."""
    rng = random.Random(24)
    reports = []
    for k in range(40):
        for _ in range(3):
            # the blocker's energy per wakeup: CV sqrt(2) x noise
            reports.append(runs.fake_report(rng, noise=0.035, git_sha=f"c{k:02d}", blockers={
                "wifi": 50_000 * (1.25 if k >= 23 else 1), "gps": 20_000}))
    db = newdb("h")
    r = history(db, "add", *runs.write_reports(reports, tmp_path / "r"), sbrig=RELEASE)
    assert r.returncode == EXIT_OK, r.stderr
    page = tmp_path / "t.html"
    r = history(db, "html", "keypress", "-o", page, sbrig=RELEASE)
    assert r.returncode == EXIT_OK, r.stderr
    text = page.read_text()
    start = text.index('id="sbrig-trend">') + len('id="sbrig-trend">')
    doc = json.loads(text[start:text.index("</script>", start)])
    assert len(doc["trends"]) >= 12
    flagged = {(t["metric"], t["blocker"]): [(s["commit"], s["direction"], s["provisional"])
                                             for s in t["steps"]]
               for t in doc["trends"] if t["steps"]}
    assert flagged == {("blocker_energy_per_wakeup_uJ", "wifi"): [("c23", "regressed", False)]}
    (s,) = next(t for t in doc["trends"] if t["blocker"] == "wifi" and
                t["metric"] == "blocker_energy_per_wakeup_uJ")["steps"]
    assert 0.15 < s["change_rel"] < 0.35     # 5 commits a side, 5 % noise per run


def test_a_blocker_whose_energy_doubles_steps_at_its_commit(tmp_path, newdb):
    db = newdb("h")
    history(db, "add", *series(tmp_path / "r", step_at=12, rise=0, wifi=2))
    r = history(db, "trend", "keypress", "blocker_energy_per_wakeup_uJ", "--blocker", "wifi")
    assert r.returncode == EXIT_OK, r.stderr
    (step,) = [line for line in r.stdout.splitlines() if line.startswith("step: ")]
    m = re.match(r"step: (\S+): \+[\d.]+ uJ \(\+([\d.]+) %\), .*: (\w+)$", step)
    assert m, step
    # the doubling, named at its commit; 5 % noise a run, medians of 5 a side
    assert m[1] == "c12" and 85 <= float(m[2]) <= 115 and m[3] == "regressed", step
    r = history(db, "trend", "keypress", "energy_per_wakeup_uJ")
    assert "steps: none" in r.stdout


def test_a_blocker_that_comes_and_goes_steps_where_it_does(tmp_path, newdb):
    """A blocker the scenario has had counts as 0 in the runs without
    it, before it appears and after it goes (as compare counts it): its
    steps are seen at the commits where it came (c10) and went (c20)."""
    rng = random.Random(5)
    reports = []
    for k in range(30):
        bl = {"wifi": 50_000.0}
        if 10 <= k < 20:
            bl["gps"] = 20_000.0
        for _ in range(3):
            reports.append(runs.fake_report(rng, git_sha=f"c{k:02d}", blockers=bl))
    db = newdb("h")
    assert history(db, "add", *runs.write_reports(reports, tmp_path / "r")).returncode == 0
    tj = tmp_path / "t.json"
    r = history(db, "trend", "keypress", "blocker_energy_per_wakeup_uJ", "--blocker", "gps",
                "--json", tj)
    assert r.returncode == EXIT_OK, r.stderr
    assert "30 commits, 90 runs" in r.stdout
    doc = json.loads(tj.read_text())
    assert [p["median"] == 0 for p in doc["points"]] == [not 10 <= k < 20 for k in range(30)]
    assert [(s["commit"], s["direction"], s["before"]) for s in doc["steps"]] == \
        [("c10", "regressed", 0), ("c20", "improved", pytest.approx(20_000, rel=0.05))]
    assert "step: c10: +" in r.stdout and "(from 0)" in r.stdout
    r = history(db, "trend", "keypress", "blocker_activations", "--blocker", "gps")
    assert r.returncode == EXIT_OK, r.stderr
    assert [line.split(":")[1] for line in r.stdout.splitlines()
            if line.startswith("step: ")] == [" c10", " c20"]
    # a blocker the scenario never had has no values, not zeros
    r = history(db, "trend", "keypress", "blocker_activations", "--blocker", "nfc")
    assert r.returncode == EXIT_FAIL and "no run of scenario" in r.stderr


def test_series_without_a_step_are_not_flagged(tmp_path, newdb):
    flagged = 0
    for seed in range(8):
        db = newdb(f"h{seed}")
        reps = series(tmp_path / f"r{seed}", seed=100 + seed)
        assert history(db, "add", *reps, sbrig=RELEASE).returncode == EXIT_OK
        r = history(db, "trend", "keypress", "energy_per_wakeup_uJ", sbrig=RELEASE)
        assert r.returncode == EXIT_OK, r.stderr
        flagged += "step: " in r.stdout
    assert flagged == 0


def test_an_improvement_is_a_step_too(tmp_path, newdb):
    db = newdb("h")
    history(db, "add", *series(tmp_path / "r", step_at=10, rise=-0.1))
    r = history(db, "trend", "keypress", "energy_per_wakeup_uJ")
    assert r.returncode == EXIT_OK, r.stderr
    assert "step: c10: -" in r.stdout and "improved" in r.stdout


# ---- the commit order from git --------------------------------------------

def git_repo(d: Path, n: int) -> list[str]:
    """A repository at @d with a linear history of @n commits; their
    SHAs, oldest first."""
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.org")
    subprocess.run(["git", "init", "-q", str(d)], check=True)
    shas = []
    for k in range(n):
        # the commit times go backwards: only the parents give the order
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"{2_000_000_000 - k * 60} +0000"
        subprocess.run(["git", "-C", str(d), "commit", "-q", "--allow-empty", "-m", f"{d.name} c{k}"],
                       check=True, env=env)
        shas.append(subprocess.run(["git", "-C", str(d), "rev-parse", "HEAD"], check=True,
                                   capture_output=True, text=True).stdout.strip())
    return shas


def test_commit_order_from_git(tmp_path, newdb):
    """--git-dir orders the commits by their parents, not by when their
    runs were added: commits added out of order, and an old commit
    backfilled last, land where they belong, and the step is found at its
    commit; a commit the repository lacks is left out and counted."""
    shas = git_repo(tmp_path / "repo", 24)
    rng = random.Random(3)
    order = list(range(24))
    rng.shuffle(order)
    order.remove(2)
    order.append(2)             # an old commit, backfilled last
    reports = []
    for k in order:
        for _ in range(3):
            reports.append(runs.fake_report(rng, energy_uJ=100_000 * (1.1 if k >= 12 else 1),
                                            git_sha=shas[k][:12] if k % 2 else shas[k]))
    reports.append(runs.fake_report(rng, git_sha="--output=/tmp/x"))   # not a commit
    reports.append(runs.fake_report(rng, git_sha="c0ffee00"))          # not in the repository
    db = newdb("h")
    assert history(db, "add", *runs.write_reports(reports, tmp_path / "r")).returncode == 0
    name = [s[:12] if k % 2 else s for k, s in enumerate(shas)]

    # without --git-dir: the order of adds
    r = history(db, "show", "keypress")
    assert r.returncode == EXIT_OK, r.stderr
    assert [line.split()[1] for line in r.stdout.splitlines()[3:]][:24] == \
        [name[k] for k in order]
    # with it: git's
    for git_dir in (tmp_path / "repo", tmp_path / "repo" / ".git"):
        r = history(db, "show", "keypress", "--git-dir", git_dir)
        assert r.returncode == EXIT_OK, r.stderr
        assert [line.split()[:2] for line in r.stdout.splitlines()[3:]] == \
            [[str(k + 1), name[k]] for k in range(24)]
        assert f"{git_dir}: 2 commits of {db} not in this repository: left out" in r.stderr
    tj = tmp_path / "t.json"
    r = history(db, "trend", "keypress", "energy_per_wakeup_uJ", "--git-dir", tmp_path / "repo",
                "--json", tj)
    assert r.returncode == EXIT_OK, r.stderr
    doc = json.loads(tj.read_text())
    assert [p["commit"] for p in doc["points"]] == name
    assert [(s["commit"], s["provisional"]) for s in doc["steps"]] == [(name[12], False)]
    r = history(db, "export", "--git-dir", tmp_path / "repo")
    assert r.returncode == EXIT_OK, r.stderr
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert [int(x["seq"]) for x in rows] == sorted(int(x["seq"]) for x in rows)
    assert {x["commit"]: int(x["seq"]) for x in rows} == {n: k + 1 for k, n in enumerate(name)}
    r = history(db, "html", "keypress", "-o", tmp_path / "t.html", "--git-dir", tmp_path / "repo")
    assert r.returncode == EXIT_OK, r.stderr
    # the database was only read
    assert "the next 'sbrig history add'" not in r.stderr
    # not a repository; a repository without any of the commits
    r = history(db, "show", "--git-dir", tmp_path / "r")
    assert r.returncode == EXIT_USAGE
    assert f"--git-dir: {tmp_path / 'r'}: not a git repository" in r.stderr
    git_repo(tmp_path / "other", 1)
    r = history(db, "trend", "keypress", "energy_per_wakeup_uJ", "--git-dir", tmp_path / "other")
    assert r.returncode == EXIT_FAIL
    assert f"{tmp_path / 'other'}: none of the 26 commits of {db} is in this repository" \
        in r.stderr


# ---- concurrency and a killed writer --------------------------------------

def test_concurrent_adders_lose_nothing(tmp_path, newdb):
    reps = series(tmp_path / "r", commits=10, per_commit=8)
    db = newdb("h")       # created by whichever adder comes first
    # four adders at once, overlapping: each takes a slice and the first 10
    procs = [subprocess.Popen([str(RELEASE), "history", "--db", str(db), "add",
                               *map(str, reps[:10] + reps[10 + i::4])],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env_for(db))
             for i in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == EXIT_OK, err
    got = db_runs(db)
    assert len(got) == len(reps)
    assert {Path(r[2]) for r in got} == set(reps)
    assert len(metrics_per_run(db)) == 1
    assert query(db, "SELECT COUNT(*), COUNT(DISTINCT seq), MAX(seq) FROM commits") == \
        [(10, 10, 10)]
    if not is_pg(db):
        with sqlite3.connect(db) as c:
            assert c.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_8_concurrent_adders_of_100_runs_lose_and_duplicate_nothing(tmp_path, newdb, backend):
    """Issue 28: 8 sbrig history add at once, 100 runs each, and each also
    adds 25 of its neighbour's (the same captures raced for): all 800 runs
    are there once, each with all its metrics, 100 commits numbered 1..100
    once each, and the adders' own counts say 800 added in all."""
    import time

    reps = series(tmp_path / "r", commits=100, per_commit=8)
    db = newdb("h")
    t = time.monotonic()
    todo = [reps[i::8] + reps[(i + 1) % 8::8][:25] for i in range(8)]
    for i, runs_of in enumerate(todo):     # each in its own order: commits raced for
        random.Random(i).shuffle(runs_of)
    procs = [subprocess.Popen([str(RELEASE), "history", "--db", str(db), "add",
                               *map(str, todo[i])],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env_for(db))
             for i in range(8)]
    added = 0
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == EXIT_OK, err
        added += int(re.search(r": (\d+) added, (\d+) present", out)[1])
    took = time.monotonic() - t
    print(f"\n8 x 100 adds on {backend}: {took:.1f} s, {added} added")
    assert added == 800
    got = db_runs(db)
    assert len(got) == 800 and {Path(r[2]) for r in got} == set(reps)
    assert query(db, "SELECT COUNT(*), COUNT(DISTINCT capture_path) FROM runs") == [(800, 800)]
    assert len(metrics_per_run(db)) == 1
    assert query(db, "SELECT COUNT(*), COUNT(DISTINCT seq), MIN(seq), MAX(seq) FROM commits") \
        == [(100, 100, 1, 100)]


def locked(db) -> bool:
    """Whether another connection holds the write lock now (PostgreSQL:
    the writers' advisory lock, db-pg.c)."""
    if is_pg(db):
        return query(db, "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' "
                         "AND granted AND objid = 1396855367") == [(1,)]
    c = sqlite3.connect(db, timeout=0, isolation_level=None)
    try:
        c.execute("BEGIN IMMEDIATE")
        c.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError as e:
        assert "locked" in str(e) or "busy" in str(e), e
        return True
    finally:
        c.close()


def test_a_writer_killed_mid_transaction_loses_nothing_committed(tmp_path, newdb):
    reps = series(tmp_path / "r", commits=50, per_commit=8)
    db = newdb("h")
    assert history(db, "add", reps[0]).returncode == EXIT_OK
    p = subprocess.Popen([str(RELEASE), "history", "--db", str(db), "add",
                          *map(str, reps[1:])], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env_for(db))
    done = [str(reps[0])]
    killed = False
    # after each run it reports committed, stop it where it is; when it
    # holds the write lock then (it is inside a transaction), kill it
    for line in p.stdout:
        assert line.startswith("added: "), line
        done.append(line.split(": ")[1])
        os.kill(p.pid, signal.SIGSTOP)
        if locked(db):
            os.kill(p.pid, signal.SIGKILL)
            killed = True
            break
        os.kill(p.pid, signal.SIGCONT)
    # read the rest through the same file object: communicate() reads the
    # pipe's fd directly and would drop the lines already in its buffer
    rest = p.stdout.read()
    p.stderr.read()
    p.wait(timeout=60)
    done += [line.split(": ")[1] for line in rest.splitlines() if line.startswith("added: ")]
    assert killed, "the writer never held the lock when stopped"
    assert p.returncode == -signal.SIGKILL
    # everything it reported committed is there, whole; what it was doing is not
    got = db_runs(db)
    assert set(done) <= {r[2] for r in got}
    assert len(got) in (len(done), len(done) + 1)   # +1: killed between commit and print
    assert len(metrics_per_run(db)) == 1
    if not is_pg(db):
        with sqlite3.connect(db) as c:
            assert c.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    # the database opens and takes the rest
    r = history(db, "add", *reps)
    assert r.returncode == EXIT_OK, r.stderr
    assert len(db_runs(db)) == len(reps)


# ---- schema versions ------------------------------------------------------

def test_a_version_1_database_is_read_as_it_is_and_migrated_by_add(tmp_path):
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as c:
        c.executescript((REPO / "tests" / "fixtures" / "history" / "v1.sql").read_text())
    before = db.read_bytes()
    r = history(db, "show", "old")
    assert r.returncode == EXIT_OK, r.stderr
    assert f"{db}: schema version 1, read as 2 (not migrated" in r.stderr
    assert f"history: {db} (schema version 1)" in r.stdout
    # the commit order of version 1 (by first run) is kept
    assert [line.split()[:2] for line in r.stdout.splitlines()[3:]] == \
        [["1", "zz-first"], ["2", "aa-second"], ["3", "mm-third"]]
    r = history(db, "trend", "old", "energy_per_wakeup_uJ")
    assert r.returncode == EXIT_OK, r.stderr
    assert [line.split()[1:4] for line in r.stdout.splitlines()[2:5]] == \
        [["zz-first", "2", "100000"], ["aa-second", "2", "120000"],
         ["mm-third", "2", "120000"]]
    assert history(db, "export").returncode == EXIT_OK
    # the readers wrote nothing
    assert db.read_bytes() == before
    assert not Path(f"{db}-wal").exists()
    # add migrates it; the old commit order is kept, a new run joins it
    reps = series(tmp_path / "r", commits=1, per_commit=1)
    r = history(db, "add", reps[0])
    assert r.returncode == EXIT_OK, r.stderr
    assert f"{db}: migrated from schema version 1 to 2" in r.stderr
    with sqlite3.connect(db) as c:
        assert c.execute("PRAGMA user_version").fetchone() == (2,)
        assert c.execute("PRAGMA application_id").fetchone() == (0x53425247,)
        assert c.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert c.execute("SELECT COUNT(*) FROM runs WHERE report = ''").fetchone() == (6,)
        assert c.execute("SELECT sha, seq FROM commits ORDER BY seq").fetchall() == \
            [("zz-first", 1), ("aa-second", 2), ("mm-third", 3), ("c00", 4)]
    r = history(db, "show", "old")
    assert r.returncode == EXIT_OK and r.stderr == ""
    # a second add migrates nothing
    r = history(db, "add", reps[0])
    assert r.returncode == EXIT_OK and "migrated" not in r.stderr


def test_a_newer_or_foreign_database_is_refused_naming_the_file(tmp_path):
    db = tmp_path / "new.db"
    with sqlite3.connect(db) as c:
        c.execute("PRAGMA user_version = 99")
        c.execute("CREATE TABLE runs (id INTEGER)")
    before = db.read_bytes()
    r = history(db, "add", *series(tmp_path / "r", commits=1, per_commit=1))
    assert r.returncode == EXIT_DB
    assert f"{db}: schema version 99 is newer than this sbrig reads (2)" in r.stderr
    assert db.read_bytes() == before
    junk = tmp_path / "junk.db"
    junk.write_text("this is not a database\n" * 100)
    r = history(junk, "show")
    assert r.returncode == EXIT_DB
    assert str(junk) in r.stderr and "database" in r.stderr
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as c:
        c.execute("CREATE TABLE t (x)")
        c.execute("PRAGMA user_version = 1")
    r = history(other, "show")
    assert r.returncode == EXIT_DB
    assert f"{other}: not an sbrig history database (schema version 1 but no runs " \
        "table)" in r.stderr


def test_a_foreign_sqlite_file_is_refused_and_left_byte_identical(tmp_path):
    """Someone else's SQLite file (another program's tables, or another
    application_id) is not turned into ours by add, nor touched by a
    reader: refused with a clear error, left as it was (no WAL either)."""
    reps = series(tmp_path / "r", commits=1, per_commit=1)
    theirs = tmp_path / "theirs.db"
    with sqlite3.connect(theirs) as c:
        c.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        c.execute("INSERT INTO notes (body) VALUES ('mine')")
    marked = tmp_path / "marked.db"
    with sqlite3.connect(marked) as c:
        c.execute("PRAGMA application_id = 1234")
        c.execute("PRAGMA user_version = 2")
        c.execute("CREATE TABLE runs (id INTEGER)")
    for f, why in ((theirs, "an SQLite database of another program"),
                   (marked, "its application_id is 0x4d2, sbrig's is 0x53425247")):
        before = f.read_bytes()
        for args in (("add", reps[0]), ("show",), ("export",),
                     ("trend", "keypress", "energy_per_wakeup_uJ")):
            r = history(f, *args)
            assert r.returncode == EXIT_DB, (args, r.stderr)
            assert f"{f}: not an sbrig history database ({why}" in r.stderr, r.stderr
            assert "refused, left as it is" in r.stderr
        assert f.read_bytes() == before
        assert not Path(f"{f}-wal").exists() and not Path(f"{f}-journal").exists()
    # ours are marked as ours
    db = tmp_path / "ours.db"
    assert history(db, "add", reps[0]).returncode == EXIT_OK
    with sqlite3.connect(db) as c:
        assert c.execute("PRAGMA application_id").fetchone() == (0x53425247,)


def test_readers_take_no_lock_and_write_nothing(tmp_path):
    """show, trend, html and export while another process holds the write
    lock inside a transaction: they answer at once (the old reader waited
    out the 60 s busy timeout) and see what was committed."""
    import time

    db = tmp_path / "h.db"
    assert history(db, "add", *series(tmp_path / "r", commits=6, per_commit=2)).returncode == 0
    w = sqlite3.connect(db, isolation_level=None)
    try:
        w.execute("BEGIN IMMEDIATE")
        w.execute("DELETE FROM metrics")
        for args in (("show",), ("show", "keypress"), ("export",),
                     ("trend", "keypress", "energy_per_wakeup_uJ"),
                     ("html", "keypress", "-o", tmp_path / "t.html")):
            t = time.monotonic()
            r = history(db, *args, sbrig=RELEASE, timeout=30)
            took = time.monotonic() - t
            assert r.returncode == EXIT_OK, (args, r.stderr)
            assert took < 5, (args, took)
        assert "6 commits, 12 runs" in history(db, "trend", "keypress",
                                               "energy_per_wakeup_uJ").stdout
    finally:
        w.execute("ROLLBACK")
        w.close()


def test_readers_read_a_database_in_a_read_only_directory(tmp_path):
    """The database's directory mounted read-only (a bind mount in a
    mount namespace of its own: root ignores a directory's mode): the
    readers read it; add says why it cannot write."""
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode:
        cannot_run("no mount namespace here (unshare -m)")
    d = tmp_path / "ro"
    d.mkdir()
    db = d / "h.db"
    reps = series(tmp_path / "r", commits=6, per_commit=2)
    assert history(db, "add", *reps[:-1]).returncode == EXIT_OK
    assert not Path(f"{db}-wal").exists()     # the last writer cleaned up
    before = db.read_bytes()
    script = (f'mount --bind -o ro "{d}" "{d}" || exit 99\n'
              f'S="{SBRIG}"; DB="{db}"\n'
              '"$S" history --db "$DB" show keypress || exit 1\n'
              '"$S" history --db "$DB" trend keypress energy_per_wakeup_uJ || exit 2\n'
              f'"$S" history --db "$DB" html -o "{tmp_path / "t.html"}" keypress || exit 3\n'
              '"$S" history --db "$DB" export >/dev/null || exit 4\n'
              f'"$S" history --db "$DB" add "{reps[-1]}"; echo "add: $?"\n')
    r = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True,
                       text=True, env=ENV, timeout=300)
    if r.returncode == 99:
        cannot_run(f"cannot bind-mount read-only: {r.stderr}")
    assert r.returncode == 0, r.stderr
    assert "6 commits, 11 runs" in r.stdout
    assert (tmp_path / "t.html").is_file()
    assert f"add: {EXIT_DB}" in r.stdout
    assert f"{db}: cannot add to it: Read-only file system" in r.stderr, r.stderr
    assert db.read_bytes() == before


def test_a_database_with_null_columns_or_corrupt_pages(tmp_path):
    """A schema-2 file made by another program, with NULL where sbrig
    writes none, is read (no crash: it was strlen(NULL)); a corrupt one
    exits 7 as documented, naming the file."""
    db = tmp_path / "nulls.db"
    with sqlite3.connect(db) as c:
        c.executescript("""
            CREATE TABLE runs (id INTEGER PRIMARY KEY, commit_sha, scenario, scenario_sha256,
                rig_name, rig_sha256, capture_path, start_ns, end_ns, samples, added_utc,
                report, host_version);
            CREATE TABLE metrics (run_id, metric, blocker, value);
            CREATE TABLE commits (sha, seq);
            INSERT INTO runs (id, commit_sha) VALUES (1, 'c1');
            INSERT INTO runs (id, commit_sha, scenario, rig_sha256) VALUES (2, 'c1', 's', 'r');
            INSERT INTO runs (id, scenario, rig_sha256) VALUES (3, 's', 'r');
            INSERT INTO commits VALUES ('c1', 1), (NULL, 2), ('c2', NULL);
            INSERT INTO metrics VALUES (1, 'energy_per_wakeup_uJ', NULL, NULL),
                (2, 'energy_per_wakeup_uJ', '', 10), (2, 'energy_total_uJ', '', NULL),
                (2, 'blocker_activations', NULL, 3), (NULL, NULL, NULL, NULL);
            PRAGMA user_version = 2;
        """)
    r = history(db, "show")
    assert r.returncode == EXIT_OK, r.stderr
    assert "(no scenario)" in r.stdout
    r = history(db, "show", "s")
    assert r.returncode == EXIT_OK, r.stderr
    r = history(db, "trend", "s", "energy_per_wakeup_uJ")
    assert r.returncode == EXIT_OK, r.stderr
    assert "1 commits, 1 runs" in r.stdout
    r = history(db, "html", "s", "-o", tmp_path / "n.html")
    assert r.returncode == EXIT_OK, r.stderr
    r = history(db, "export")
    assert r.returncode == EXIT_OK, r.stderr
    assert ",energy_total_uJ,,," in r.stdout        # a NULL value is no value
    # corrupt: a real database whose pages after the first are overwritten
    bad = tmp_path / "corrupt.db"
    assert history(bad, "add", *series(tmp_path / "r", commits=30, per_commit=2)).returncode == 0
    data = bytearray(bad.read_bytes())
    assert len(data) > 8 * 4096
    data[4096:] = bytes(range(256)) * ((len(data) - 4096) // 256) + bytes(len(data) % 256)
    bad.write_bytes(bytes(data))
    for args in (("show",), ("show", "keypress"), ("export",),
                 ("trend", "keypress", "energy_per_wakeup_uJ")):
        r = history(bad, *args)
        assert r.returncode == EXIT_DB, (args, r.returncode, r.stderr)
        assert str(bad) in r.stderr and "malformed" in r.stderr, r.stderr


def test_names_with_control_bytes_cannot_drive_the_terminal(tmp_path, newdb):
    """A commit, scenario or rig name with escape sequences (a report's
    git_sha, a capture's meta.ini) is printed with its control bytes as
    \\xNN by add, show, trend and the errors that list names: nothing it
    holds reaches the terminal as a control byte."""
    evil = "\x1b]0;pwned\x07\x1b[2J\r"
    reps = series(tmp_path / "r", commits=12, per_commit=2, step_at=6, rise=0.2)
    for p in reps:
        doc = json.loads(p.read_text())
        prov = doc["capture"]["provenance"]
        prov["git_sha"] += evil
        prov["scenario"] = f"rig/scenarios/k{evil}.scn"
        prov["rig_name"] = f"v{evil}"
        p.write_text(json.dumps(doc))
    other = json.loads(reps[0].read_text())
    other["capture"]["provenance"].update(rig_name=f"b{evil}", rig_sha256="cd" * 32)
    other["capture"]["path"] = "/elsewhere"
    (tmp_path / "o.json").write_text(json.dumps(other))
    db = newdb("h")
    scen = f"rig/scenarios/k{evil}.scn"
    outs = [history(db, "add", *reps, tmp_path / "o.json")]
    outs.append(history(db, "show"))
    outs.append(history(db, "show", scen))
    outs.append(history(db, "trend", scen, "energy_per_wakeup_uJ", "--rig", "cdcdcdcd"))
    outs.append(history(db, "trend", scen, "energy_per_wakeup_uJ"))         # several rigs
    outs.append(history(db, "trend", "nosuch", "energy_per_wakeup_uJ"))     # lists them
    virtual = json.loads(reps[1].read_text())["capture"]["provenance"]["rig_sha256"][:8]
    outs.append(history(db, "trend", scen, "energy_per_wakeup_uJ", "--rig", virtual))
    assert [r.returncode for r in outs] == [EXIT_OK, EXIT_OK, EXIT_OK, EXIT_OK,
                                            EXIT_NOT_COMPARABLE, EXIT_FAIL, EXIT_OK]
    for r in outs:
        for text in (r.stdout, r.stderr):
            assert not any(ord(c) < 0x20 and c != "\n" or ord(c) == 0x7f for c in text), text
    shown = "\\x1b]0;pwned\\x07\\x1b[2J\\x0d"
    assert f"commit c00{shown}, scenario rig/scenarios/k{shown}.scn" in outs[0].stdout
    assert f"rig/scenarios/k{shown}.scn" in outs[1].stdout
    assert f"c05{shown}" in outs[2].stdout
    assert f"step: c06{shown}: +" in outs[6].stdout
    assert f"b{shown}" in outs[4].stderr and f"k{shown}" in outs[5].stderr


# ---- bad input ------------------------------------------------------------

def test_bad_runs_are_named_and_the_others_added(tmp_path, newdb):
    reps = series(tmp_path / "r", commits=2, per_commit=1)
    bad = json.loads(reps[0].read_text())
    bad["version"] = 99
    v99 = tmp_path / "v99.json"
    v99.write_text(json.dumps(bad))
    nocommit = json.loads(reps[0].read_text())
    nocommit["capture"]["provenance"]["git_sha"] = ""
    nc = tmp_path / "nocommit.json"
    nc.write_text(json.dumps(nocommit))
    missing = json.loads(reps[0].read_text())
    del missing["energy"]
    ms = tmp_path / "missing.json"
    ms.write_text(json.dumps(missing))
    db = newdb("h")
    locked = tmp_path / "unreadable.json"
    locked.write_text(reps[0].read_text())
    locked.chmod(0)
    notdir = reps[0] / "report.json"     # ENOTDIR: bad input too, not the database's
    r = history(db, "add", v99, reps[0], nc, ms, tmp_path / "absent.json", locked, notdir,
                reps[1])
    assert r.returncode == EXIT_BAD_INPUT
    assert f"{v99}: field 'version': 99" in r.stderr
    assert f"{nc}: capture.provenance.git_sha: empty" in r.stderr
    assert f"{ms}" in r.stderr and "energy" in r.stderr
    assert f"{tmp_path / 'absent.json'}: No such file" in r.stderr
    assert f"{notdir}: Not a directory" in r.stderr
    if os.geteuid() != 0:       # root reads it anyway
        assert f"{locked}: Permission denied" in r.stderr
    assert "2 added" in r.stdout     # (as root the unreadable one is read: reps[0] again)
    # a run without a commit can be filed under one
    r = history(db, "add", "--commit", "abc123", nc)
    assert r.returncode == EXIT_OK, r.stderr
    assert "commit abc123" in r.stdout


def test_trend_errors(tmp_path, newdb):
    db = newdb("h")
    reps = series(tmp_path / "r", commits=4, per_commit=2)
    other = json.loads(reps[0].read_text())
    other["capture"]["provenance"].update(rig_name="bench", rig_sha256="cd" * 32)
    other["capture"]["path"] = "/elsewhere"
    (tmp_path / "bench.json").write_text(json.dumps(other))
    assert history(db, "add", *reps).returncode == EXIT_OK
    r = history(db, "trend", "keypress", "energy_per_wakeup_uJ")
    assert r.returncode == EXIT_OK, r.stderr
    assert history(db, "add", tmp_path / "bench.json").returncode == EXIT_OK

    r = history(db, "trend", "keypress", "energy_per_wakeup_uJ")
    assert r.returncode == EXIT_NOT_COMPARABLE
    assert "several rigs" in r.stderr and "bench" in r.stderr and "virtual" in r.stderr
    r = history(db, "trend", "keypress", "energy_per_wakeup_uJ", "--rig", "bench")
    assert r.returncode == EXIT_OK, r.stderr
    assert "1 commits, 1 runs" in r.stdout
    r = history(db, "trend", "keypress", "energy_per_wakeup_uJ", "--rig", "cdcdcdcd")
    assert r.returncode == EXIT_OK, r.stderr
    r = history(db, "trend", "nosuch", "energy_per_wakeup_uJ")
    assert r.returncode == EXIT_FAIL
    assert f"{db}: no run of scenario 'nosuch'" in r.stderr and SCENARIO in r.stderr
    r = history(db, "trend", "keypress", "energy_of_nothing", "--rig", "bench")
    assert r.returncode == EXIT_USAGE and "unknown metric 'energy_of_nothing'" in r.stderr
    r = history(db, "trend", "keypress", "blocker_energy_per_wakeup_uJ", "--rig", "bench")
    assert r.returncode == EXIT_USAGE and "--blocker" in r.stderr
    r = history(db, "trend", "keypress", "blocker_energy_per_wakeup_uJ", "--rig", "bench",
                "--blocker", "nope")
    assert r.returncode == EXIT_FAIL and "no run of scenario" in r.stderr
    r = history(db, "trend", "keypress")
    assert r.returncode == EXIT_USAGE
    r = history(db, "frobnicate")
    assert r.returncode == EXIT_USAGE and "unknown subcommand 'frobnicate'" in r.stderr
    r = history(db, "trend", "keypress", "energy_per_wakeup_uJ", "--window", "0")
    assert r.returncode == EXIT_USAGE
    cfg = tmp_path / "bad.conf"
    cfg.write_text("[compare]\nalpha = lots\n")
    r = history(db, "trend", "-c", cfg, "keypress", "energy_per_wakeup_uJ")
    assert r.returncode == EXIT_USAGE and f"{cfg}:2" in r.stderr
    # a directory --json lacks is created, as for every output (issue 25);
    # one that cannot be is named
    r = history(db, "trend", "keypress", "energy_per_wakeup_uJ", "--rig", "bench",
                "--json", tmp_path / "no" / "dir" / "t.json")
    assert r.returncode == EXIT_OK, r.stderr
    assert json.loads((tmp_path / "no" / "dir" / "t.json").read_text())
    (tmp_path / "file").write_text("")
    r = history(db, "trend", "keypress", "energy_per_wakeup_uJ", "--rig", "bench",
                "--json", tmp_path / "file" / "dir" / "t.json")
    assert r.returncode == EXIT_DB and str(tmp_path / "file") in r.stderr


def test_help_names_every_subcommand():
    r = subprocess.run([str(SBRIG), "history", "--help"], capture_output=True, text=True,
                       env=ENV)
    assert r.returncode == EXIT_OK
    for word in ("add", "show", "trend", "export", "copy", "--db", "SBRIG_HISTORY",
                 "XDG_DATA_HOME", "history-format.md"):
        assert word in r.stdout


def test_a_capture_and_its_report_are_one_run(tmp_path, newdb):
    """A capture directory is analysed on the fly; its report.json (from
    sbrig analyze) added later is the same run."""
    from tests.synth import synthcap

    synthcap.build(runs.press_scenario(7, git_sha="abc1234"), tmp_path)
    cap = tmp_path / "capture"
    db = newdb("h")
    r = history(db, "add", cap)
    assert r.returncode == EXIT_OK, r.stderr
    assert "added: " in r.stdout and "commit abc1234, scenario rig/scenarios/press.scn" in r.stdout
    assert not (cap / "report.json").exists()       # nothing written into it
    a = subprocess.run([str(SBRIG), "analyze", "-q", str(cap), "-o", str(tmp_path / "rep")],
                       capture_output=True, text=True, env=ENV, timeout=300)
    assert a.returncode == 0, a.stderr
    r = history(db, "add", tmp_path / "rep" / "report.json", tmp_path / "rep")
    assert r.returncode == EXIT_OK, r.stderr
    assert "0 added, 2 present" in r.stdout
    assert len(db_runs(db)) == 1


# ---- copy between backends ---------------------------------------------------

def export_rows(db) -> list[dict]:
    """every value of @db as export writes it, without the run's id (each
    database numbers its own runs)"""
    r = history(db, "export")
    assert r.returncode == EXIT_OK, r.stderr
    return [{k: v for k, v in row.items() if k != "run"}
            for row in csv.DictReader(io.StringIO(r.stdout))]


def test_copy_sqlite_to_postgresql_and_back_whole_or_by_scenario(tmp_path, pg_server):
    """history copy FROM TO: every run with its metrics, commit order and
    report, from SQLite into PostgreSQL and back; twice adds nothing; a
    run TO has already is left alone; --scenario copies only its runs."""
    reps = series(tmp_path / "r", commits=12, per_commit=2, step_at=6, rise=0.2)
    other = series(tmp_path / "o", commits=3, per_commit=1, seed=9)
    for p in other:     # a second scenario, its commits interleaved
        doc = json.loads(p.read_text())
        doc["capture"]["provenance"]["scenario"] = "rig/scenarios/press.scn"
        doc["capture"]["provenance"]["git_sha"] = "o" + doc["capture"]["provenance"]["git_sha"]
        doc["capture"]["path"] += "-press"
        p.write_text(json.dumps(doc))
    src = tmp_path / "src.db"
    assert history(src, "add", *reps[:10], *other, *reps[10:]).returncode == EXIT_OK
    pg = pg_server.newdb("copy")
    assert history(pg, "add", reps[3]).returncode == EXIT_OK     # one it has
    r = history(None, "copy", src, pg, env=env_for(pg))
    assert r.returncode == EXIT_OK, r.stderr
    assert r.stdout == f"copied: 27 runs from {src} to {pg}: 26 added, 1 present\n"
    # the same values; the commit sequence is the source's but for the
    # commit the target had first (c01, seq 1 there)
    want, got = export_rows(src), export_rows(pg)
    key = lambda row: (row["capture"], row["metric"], row["blocker"])  # noqa: E731
    strip = lambda rows: sorted(({k: v for k, v in x.items() if k != "seq"}  # noqa: E731
                                 for x in rows), key=key)
    assert strip(got) == strip(want) and len(got) > 27 * 10
    assert [c for (c,) in query(pg, "SELECT sha FROM commits ORDER BY seq")] == \
        ["c01"] + [c for (c,) in query(src, "SELECT sha FROM commits ORDER BY seq") if c != "c01"]
    assert query(pg, "SELECT COUNT(*) FROM runs WHERE added_utc = '' OR report = ''") == [(0,)]
    t1 = history(src, "trend", "keypress", "energy_per_wakeup_uJ").stdout.splitlines()
    t2 = history(pg, "trend", "keypress", "energy_per_wakeup_uJ").stdout.splitlines()
    # (the order differs by c01 only: the step is the same commit's)
    assert [x[:12] for x in t1 if x.startswith("step: ")] == \
        [x[:12] for x in t2 if x.startswith("step: ")] == ["step: c06: +"]
    # twice: nothing added
    r = history(None, "copy", src, pg, env=env_for(pg))
    assert r.returncode == EXIT_OK, r.stderr
    assert "27 runs" in r.stdout and ": 0 added, 27 present" in r.stdout
    assert len(db_runs(pg)) == 27
    # one scenario, by its file name, into a new PostgreSQL database
    pg2 = pg_server.newdb("copy2")
    r = history(None, "copy", "--scenario", "press", src, pg2, env=env_for(pg2))
    assert r.returncode == EXIT_OK, r.stderr
    assert r.stdout.startswith("copied scenario rig/scenarios/press.scn: 3 runs")
    assert query(pg2, "SELECT DISTINCT scenario FROM runs") == [("rig/scenarios/press.scn",)]
    assert query(pg2, "SELECT sha, seq FROM commits ORDER BY seq") == \
        [("oc00", 1), ("oc01", 2), ("oc02", 3)]
    # and back into SQLite: the same values again
    back = tmp_path / "back.db"
    r = history(None, "copy", pg, back, env=env_for(pg))
    assert r.returncode == EXIT_OK, r.stderr
    assert strip(export_rows(back)) == strip(want)
    # errors: a scenario FROM lacks, a FROM that is not there (TO is not
    # made), a password on the command line, usage
    r = history(None, "copy", "--scenario", "nosuch", src, pg, env=env_for(pg))
    assert r.returncode == EXIT_FAIL and f"{src}: no run of scenario 'nosuch'" in r.stderr
    r = history(None, "copy", tmp_path / "none.db", tmp_path / "new.db")
    assert r.returncode == EXIT_DB and str(tmp_path / "none.db") in r.stderr
    assert not (tmp_path / "new.db").exists()
    r = history(None, "copy", src, pg.replace("sbrig@", "sbrig:hunter2@"), env=env_for(pg))
    assert r.returncode == EXIT_DB and "hunter2" not in r.stderr
    assert history(None, "copy", src).returncode == EXIT_USAGE
    assert history(src, "copy", src, pg).returncode == EXIT_USAGE
    assert len(db_runs(pg)) == 27


def _complete(words: list[str]) -> list[str]:
    """COMPREPLY of host/bash-completion/sbrig for sbrig WORDS... (the last
    word being completed), against the built sbrig's help."""
    script = ('source "$1"; shift; COMP_WORDS=("$@"); '
              'COMP_CWORD=$(($# - 1)); _sbrig; printf "%s\\n" "${COMPREPLY[@]}"')
    p = subprocess.run(["bash", "--norc", "-c", script, "bash",
                        str(REPO / "host" / "bash-completion" / "sbrig"),
                        str(SBRIG), *words], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    return [w for w in p.stdout.splitlines() if w]


def test_completion_offers_what_each_subcommand_takes():
    """history copy takes --scenario, FROM and TO, not --db (its help:
    'not with copy') nor show's --git-dir; each sub-command is offered
    its own options and the global --db."""
    assert set(_complete(["history", "copy", "--"])) == {"--scenario", "--help"}
    assert set(_complete(["history", "add", "--"])) == \
        {"--commit", "--db", "--help"}
    assert set(_complete(["history", "show", "--"])) == \
        {"--db", "--git-dir", "--help"}
    assert {"--db", "--git-dir", "--window", "--rig"} <= \
        set(_complete(["history", "trend", "--"]))
    # before the sub-command: the history-wide options of its usage line
    # (--git-dir is the sub-commands': sbrig refuses it there)
    assert set(_complete(["history", "--"])) == {"--db", "--help"}
    p = subprocess.run([str(SBRIG), "history", "--git-dir", ".", "show"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "--git-dir" in p.stderr, p.stderr
    # and what the help says copy refuses, sbrig refuses
    p = subprocess.run([str(SBRIG), "history", "copy", "--db", "x.db", "a", "b"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, p.stderr
