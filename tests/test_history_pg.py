"""sbrig history on PostgreSQL: what is its server's own (issue 28).

The tests of tests/test_history.py run on both backends; these are about
PostgreSQL alone, against the session's real PostgreSQL 15 server
(tests/pgserver.py):

* the password: a URI that carries one is refused and the password never
  printed; libpq's own mechanisms (PGPASSFILE here) give it; without one
  the error names the database;
* a database that is not sbrig's, or of a newer schema, is refused and left
  as it is; one that does not exist is named;
* a URI of an unknown scheme is refused naming the known ones;
* a server restarted or stopped under a reader, or one that never
  answers: an error naming the database, bounded in time, not a hang;
* readers do not wait for a writer's lock; tables another program altered
  (NULLs, NaN, control bytes) are read safely.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests import test_history  # noqa: E402
from tests.pgserver import PASSWORD, dbname  # noqa: E402
from tests.test_history import ENV, EXIT_DB, EXIT_OK, SBRIG, env_for, history, query, \
    series  # noqa: E402

build = test_history.build
pg_server = test_history.pg_server


def test_a_password_in_the_uri_is_refused_and_never_printed(pg_server, tmp_path):
    reps = series(tmp_path / "r", commits=1, per_commit=1)
    uri = pg_server.newdb("pw")
    host = uri.split("@", 1)[1]
    for bad in (f"postgresql://sbrig:{PASSWORD}@{host}",
                f"{uri}?password={PASSWORD}", f"postgres://sbrig:{PASSWORD}@{host}"):
        for args in (("add", reps[0]), ("show",)):
            r = history(bad, *args)
            assert r.returncode == EXIT_DB, r.stderr
            assert PASSWORD not in r.stderr + r.stdout
            assert "a password in the URI is refused" in r.stderr and ".pgpass" in r.stderr
    assert query(uri, "SELECT COUNT(*) FROM pg_tables WHERE schemaname = 'public'") == [(0,)]
    # libpq's password file gives it (history() sets PGPASSFILE) ...
    r = history(uri, "add", reps[0])
    assert r.returncode == EXIT_OK, r.stderr
    # ... and without it the server refuses us, naming the database
    env = {k: v for k, v in ENV.items() if not k.startswith("PG")}
    env["PGPASSFILE"] = str(tmp_path / "none")
    r = subprocess.run([str(SBRIG), "history", "--db", uri, "show"], capture_output=True,
                       text=True, env=env, timeout=60)
    assert r.returncode == EXIT_DB
    assert f"{uri}: connecting: " in r.stderr and "password" in r.stderr
    assert "the server is down" not in r.stderr     # it is up: the login failed


def test_a_foreign_or_newer_database_is_refused_and_left_as_it_is(pg_server, tmp_path):
    reps = series(tmp_path / "r", commits=1, per_commit=1)
    theirs = pg_server.newdb("theirs")
    pg_server.psql(dbname(theirs), "CREATE TABLE notes (body TEXT); "
                   "INSERT INTO notes VALUES ('mine')")
    marked = pg_server.newdb("marked")
    pg_server.psql(dbname(marked), "CREATE TABLE sbrig_meta (application_id INTEGER, "
                   "schema_version INTEGER); INSERT INTO sbrig_meta VALUES (1234, 2); "
                   "CREATE TABLE runs (id INTEGER)")
    newer = pg_server.newdb("newer")
    assert history(newer, "add", reps[0]).returncode == EXIT_OK
    pg_server.psql(dbname(newer), "UPDATE sbrig_meta SET schema_version = 99")
    tables = "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
    for db, why in ((theirs, "not an sbrig history database (tables of another program"),
                    (marked, "not an sbrig history database (sbrig_meta's application_id "
                             "is 0x4d2, sbrig's is 0x53425247)"),
                    (newer, "schema version 99 is newer than this sbrig reads (2)")):
        before = query(db, tables)
        for args in (("add", reps[0]), ("show",), ("export",),
                     ("trend", "keypress", "energy_per_wakeup_uJ")):
            r = history(db, *args)
            assert r.returncode == EXIT_DB, (args, r.stderr)
            assert f"{db}: {why}" in r.stderr, r.stderr
        assert query(db, tables) == before
    assert query(theirs, "SELECT body FROM notes") == [("mine",)]
    # a database that is not there: named, not created
    gone = pg_server.uri("nosuchdb")
    r = history(gone, "add", reps[0])
    assert r.returncode == EXIT_DB
    assert f"{gone}: connecting: " in r.stderr and "does not exist" in r.stderr
    assert "createdb" in r.stderr
    # an empty one is no history for a reader, and add makes it one
    empty = pg_server.newdb("empty")
    r = history(empty, "show")
    assert r.returncode == EXIT_DB and f"{empty}: an empty database" in r.stderr
    assert query(empty, tables) == []


def test_an_unknown_scheme_is_refused(tmp_path):
    r = history("mysql://lab/history", "show")
    assert r.returncode == EXIT_DB
    assert "mysql: not a history backend (a path, sqlite:PATH, or postgresql://...)" \
        in r.stderr
    # sqlite:PATH is the file PATH
    reps = series(tmp_path / "r", commits=1, per_commit=1)
    r = history(f"sqlite:{tmp_path / 'h.db'}", "add", reps[0])
    assert r.returncode == EXIT_OK, r.stderr
    assert (tmp_path / "h.db").is_file()
    r = history(tmp_path / "h.db", "show")
    assert r.returncode == EXIT_OK and "keypress" in r.stdout


def waiting_reader(pg_server, db: str) -> bool:
    """whether sbrig's session on @db waits for a lock now"""
    return query(pg_server.uri(db), "SELECT COUNT(*) FROM pg_stat_activity WHERE "
                 f"application_name = 'sbrig' AND datname = '{db}' AND "
                 "wait_event_type = 'Lock'") == [(1,)]


def test_a_server_restarted_or_stopped_under_a_reader_is_an_error_not_a_hang(pg_server,
                                                                             tmp_path):
    """A reader inside its query (held by another session's lock) when
    the server restarts gets an error naming the database at once; a
    stopped server is an error naming it; afterwards it reads again."""
    uri = pg_server.newdb("restart")
    assert history(uri, "add", *series(tmp_path / "r", commits=4, per_commit=2)).returncode == 0
    holder = subprocess.Popen(["psql", "-X", "-q", "-h", str(pg_server.run), "-p",
                               str(pg_server.port), "-U", "sbrig", "-d", dbname(uri)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True,
                              env=pg_server.env(dict(os.environ)))
    reader = None
    try:
        holder.stdin.write("BEGIN; LOCK TABLE runs IN ACCESS EXCLUSIVE MODE;\n")
        holder.stdin.flush()
        deadline = time.monotonic() + 30
        while query(uri, "SELECT COUNT(*) FROM pg_locks l JOIN pg_class c ON c.oid = "
                    "l.relation WHERE c.relname = 'runs' AND l.mode = "
                    "'AccessExclusiveLock' AND l.granted") != [(1,)]:
            assert holder.poll() is None and time.monotonic() < deadline, "no lock taken"
            time.sleep(0.05)
        reader = subprocess.Popen([str(SBRIG), "history", "--db", uri, "show", "keypress"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=env_for(uri))
        deadline = time.monotonic() + 30
        while not waiting_reader(pg_server, dbname(uri)):
            assert reader.poll() is None, reader.communicate()
            assert time.monotonic() < deadline, "the reader never waited for the lock"
            time.sleep(0.1)
        t = time.monotonic()
        pg_server.restart()
        out, err = reader.communicate(timeout=30)
        took = time.monotonic() - t
        assert reader.returncode == EXIT_DB, (out, err)
        assert f"sbrig history: {uri}: " in err, err
        assert "terminating connection" in err or "server closed the connection" in err, err
        assert "(the server is down, restarting, or unreachable)" in err
        assert took < 15, took
    finally:
        for p in (holder, reader):
            if p and p.poll() is None:
                p.kill()
                p.communicate()
    r = history(uri, "show", "keypress")
    assert r.returncode == EXIT_OK and "keypress" in r.stdout, r.stderr
    # stopped: refused at once, naming the database
    pg_server.stop_server()
    try:
        t = time.monotonic()
        r = history(uri, "trend", "keypress", "energy_per_wakeup_uJ", timeout=60)
        assert r.returncode == EXIT_DB
        assert f"{uri}: connecting: " in r.stderr and "refused" in r.stderr, r.stderr
        assert time.monotonic() - t < 10
    finally:
        pg_server.start_server()
    assert history(uri, "show").returncode == EXIT_OK


def test_a_server_that_never_answers_times_out_naming_the_database(tmp_path):
    """A port that accepts and never speaks (a hung server, a black hole):
    connect_timeout ends it, from the URI or sbrig's default (10 s)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        port = s.getsockname()[1]
        for query_string, bound in (("?connect_timeout=2", 8), ("", 20)):
            uri = f"postgresql://sbrig@127.0.0.1:{port}/h{query_string}"
            t = time.monotonic()
            r = history(uri, "show", timeout=120)
            took = time.monotonic() - t
            assert r.returncode == EXIT_DB, r.stderr
            assert f"{uri}: connecting: " in r.stderr and "timeout" in r.stderr, r.stderr
            assert took < bound, (uri, took)


def test_readers_do_not_wait_for_a_writer_holding_the_write_lock(pg_server, tmp_path):
    """show, trend, html and export while another session holds the
    writers' advisory lock inside a transaction that deleted every metric:
    they answer at once and see what was committed."""
    uri = pg_server.newdb("readers")
    assert history(uri, "add", *series(tmp_path / "r", commits=6, per_commit=2)).returncode == 0
    holder = subprocess.Popen(["psql", "-X", "-q", "-h", str(pg_server.run), "-p",
                               str(pg_server.port), "-U", "sbrig", "-d", dbname(uri)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True,
                              env=pg_server.env(dict(os.environ)))
    try:
        holder.stdin.write("BEGIN; SELECT pg_advisory_xact_lock(1396855367); "
                           "DELETE FROM metrics;\n")
        holder.stdin.flush()
        deadline = time.monotonic() + 30
        while not test_history.locked(uri):
            assert holder.poll() is None and time.monotonic() < deadline, "no lock taken"
            time.sleep(0.05)
        for args in (("show",), ("show", "keypress"), ("export",),
                     ("trend", "keypress", "energy_per_wakeup_uJ"),
                     ("html", "keypress", "-o", tmp_path / "t.html")):
            t = time.monotonic()
            r = history(uri, *args, timeout=30)
            assert r.returncode == EXIT_OK, (args, r.stderr)
            assert time.monotonic() - t < 5, args
        assert "6 commits, 12 runs" in history(uri, "trend", "keypress",
                                               "energy_per_wakeup_uJ").stdout
    finally:
        holder.kill()
        holder.communicate()


def test_a_database_altered_by_another_program_is_read_safely(pg_server, tmp_path):
    """sbrig's tables in PostgreSQL as another program may leave them
    (NOT NULL dropped, NULLs, a NaN, text with control bytes): every
    reader answers without a crash, prints nothing raw."""
    uri = pg_server.newdb("altered")
    pg_server.psql(dbname(uri), """
        CREATE TABLE sbrig_meta (application_id INTEGER, schema_version INTEGER);
        INSERT INTO sbrig_meta VALUES (1396855367, 2);
        CREATE TABLE runs (id BIGINT, commit_sha TEXT, scenario TEXT, scenario_sha256 TEXT,
            rig_name TEXT, rig_sha256 TEXT, capture_path TEXT, start_ns BIGINT, end_ns BIGINT,
            samples BIGINT, added_utc TEXT, report TEXT, host_version TEXT);
        CREATE TABLE metrics (run_id BIGINT, metric TEXT, blocker TEXT, value DOUBLE PRECISION);
        CREATE TABLE commits (sha TEXT, seq BIGINT);
        INSERT INTO runs (id, commit_sha) VALUES (1, 'c1');
        INSERT INTO runs (id, commit_sha, scenario, rig_sha256, rig_name)
            VALUES (2, 'c1', 's', 'r', E'rig\\x1b[2J');
        INSERT INTO runs (id, scenario, rig_sha256, rig_name)
            VALUES (3, 's', 'r', E'rig\\x1b[2J');
        INSERT INTO commits VALUES ('c1', 1), (NULL, 2), ('c2', NULL);
        INSERT INTO metrics VALUES (1, 'energy_per_wakeup_uJ', NULL, NULL),
            (2, 'energy_per_wakeup_uJ', '', 10), (2, 'energy_total_uJ', '', NULL),
            (2, 'latency_median_ns', '', 'NaN'), (2, 'blocker_activations', NULL, 3),
            (NULL, NULL, NULL, NULL);
    """)
    outs = [history(uri, "show"), history(uri, "show", "s"),
            history(uri, "trend", "s", "energy_per_wakeup_uJ"),
            history(uri, "html", "s", "-o", tmp_path / "n.html"), history(uri, "export")]
    assert [r.returncode for r in outs] == [EXIT_OK] * 5, [r.stderr for r in outs]
    assert "(no scenario)" in outs[0].stdout
    assert "1 commits, 1 runs" in outs[2].stdout
    assert ",energy_total_uJ,,," in outs[4].stdout     # a NULL value is no value
    assert ",latency_median_ns,,," in outs[4].stdout   # nor is a NaN
    r = history(uri, "trend", "s", "latency_median_ns")
    assert r.returncode == 1 and "no run of scenario 's' has a value" in r.stderr
    for r in outs[:4]:      # (export writes CSV, for a file: the data as it is)
        assert "\x1b" not in r.stdout + r.stderr


def test_sbrig_history_names_a_postgresql_database(pg_server, tmp_path):
    """$SBRIG_HISTORY may be a postgresql:// URI (--db wins over it)."""
    reps = series(tmp_path / "r", commits=2, per_commit=1)
    uri = pg_server.newdb("env")
    env = dict(pg_server.env(ENV), SBRIG_HISTORY=uri)
    r = subprocess.run([str(SBRIG), "history", "add", *map(str, reps)], capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode == EXIT_OK, r.stderr
    assert f"history: {uri}: 2 added, 0 present" in r.stdout
    assert len(query(uri, "SELECT id FROM runs")) == 2
    r = subprocess.run([str(SBRIG), "history", "--db", str(tmp_path / "none.db"), "show"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == EXIT_DB and str(tmp_path / "none.db") in r.stderr


def test_the_uri_options_set_the_lock_timeout(pg_server, tmp_path):
    """sbrig's 60 s lock timeout unless the URI's options say otherwise:
    with options=-clock_timeout=1000 an add behind a writer holding the
    lock gives up after ~1 s, naming the database and the lock."""
    uri = pg_server.newdb("locktimeout")
    reps = series(tmp_path / "r", commits=2, per_commit=1)
    assert history(uri, "add", reps[0]).returncode == EXIT_OK
    holder = subprocess.Popen(["psql", "-X", "-q", "-h", str(pg_server.run), "-p",
                               str(pg_server.port), "-U", "sbrig", "-d", dbname(uri)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True,
                              env=pg_server.env(dict(os.environ)))
    try:
        holder.stdin.write("BEGIN; SELECT pg_advisory_xact_lock(1396855367);\n")
        holder.stdin.flush()
        deadline = time.monotonic() + 30
        while not test_history.locked(uri):
            assert holder.poll() is None and time.monotonic() < deadline, "no lock taken"
            time.sleep(0.05)
        t = time.monotonic()
        r = history(f"{uri}?options=-clock_timeout%3D1000", "add", reps[1], timeout=60)
        took = time.monotonic() - t
        assert r.returncode == EXIT_DB, r.stderr
        assert "lock timeout" in r.stderr and dbname(uri) in r.stderr, r.stderr
        assert took < 10, took
    finally:
        holder.kill()
        holder.communicate()
    assert len(query(uri, "SELECT id FROM runs")) == 1


def test_a_version_1_database_is_read_as_it_is_and_migrated_by_add(pg_server, tmp_path):
    """As on SQLite (tests/test_history.py's test of the same name): the
    readers read a version-1 history as version 2 through TEMP objects
    of their own session, writing nothing; add migrates it."""
    uri = pg_server.newdb("v1")
    v1 = (REPO / "tests" / "fixtures" / "history" / "v1.sql").read_text()
    inserts = v1[v1.index("INSERT INTO runs"):v1.index("PRAGMA user_version")]
    pg_server.psql(dbname(uri), """
        CREATE TABLE sbrig_meta (application_id INTEGER NOT NULL,
            schema_version INTEGER NOT NULL);
        INSERT INTO sbrig_meta VALUES (1396855367, 1);
        CREATE TABLE runs (
            id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            commit_sha TEXT NOT NULL, scenario TEXT NOT NULL,
            scenario_sha256 TEXT NOT NULL, rig_name TEXT NOT NULL,
            rig_sha256 TEXT NOT NULL, capture_path TEXT NOT NULL,
            start_ns BIGINT NOT NULL, end_ns BIGINT NOT NULL,
            samples BIGINT NOT NULL, added_utc TEXT NOT NULL,
            UNIQUE (capture_path, start_ns, end_ns, samples));
        CREATE TABLE metrics (
            run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            metric TEXT NOT NULL, blocker TEXT NOT NULL DEFAULT '',
            value DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (run_id, metric, blocker));
        """ + inserts + """
        SELECT setval(pg_get_serial_sequence('runs', 'id'), 6);""")
    tables = "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
    columns = ("SELECT column_name FROM information_schema.columns WHERE "
               "table_schema = 'public' AND table_name = 'runs' ORDER BY 1")
    before = (query(uri, tables), query(uri, columns),
              query(uri, "SELECT * FROM sbrig_meta"))
    assert before[0] == [("metrics",), ("runs",), ("sbrig_meta",)]
    r = history(uri, "show", "old")
    assert r.returncode == EXIT_OK, r.stderr
    assert f"{uri}: schema version 1, read as 2 (not migrated" in r.stderr
    assert f"history: {uri} (schema version 1)" in r.stdout
    # the commit order of version 1 (by first run) is kept
    assert [line.split()[:2] for line in r.stdout.splitlines()[3:]] == \
        [["1", "zz-first"], ["2", "aa-second"], ["3", "mm-third"]]
    r = history(uri, "trend", "old", "energy_per_wakeup_uJ")
    assert r.returncode == EXIT_OK, r.stderr
    assert [line.split()[1:4] for line in r.stdout.splitlines()[2:5]] == \
        [["zz-first", "2", "100000"], ["aa-second", "2", "120000"],
         ["mm-third", "2", "120000"]]
    r = history(uri, "export")
    assert r.returncode == EXIT_OK, r.stderr
    assert r.stdout.count("energy_per_wakeup_uJ") == 6
    # the readers wrote nothing
    assert (query(uri, tables), query(uri, columns),
            query(uri, "SELECT * FROM sbrig_meta")) == before
    # add migrates it; the old commit order is kept, a new run joins it
    reps = series(tmp_path / "r", commits=1, per_commit=1)
    r = history(uri, "add", reps[0])
    assert r.returncode == EXIT_OK, r.stderr
    assert f"{uri}: migrated from schema version 1 to 2" in r.stderr
    assert query(uri, "SELECT schema_version FROM sbrig_meta") == [(2,)]
    assert query(uri, "SELECT sha, seq FROM commits ORDER BY seq") == \
        [("zz-first", 1), ("aa-second", 2), ("mm-third", 3), ("c00", 4)]
    r = history(uri, "show", "old")
    assert r.returncode == EXIT_OK and r.stderr == ""


def test_copy_from_postgresql_reads_its_runs_a_batch_at_a_time(pg_server, tmp_path):
    """history copy's run list from PostgreSQL is read through a cursor,
    a batch at a time, not received whole: copying 20 000 runs of 4 KiB
    each (80 MB of rows) stays far below that in peak memory (GNU time's
    %M of the release build: 17 MB). Received whole it was 100 MB."""
    uri = pg_server.newdb("bigcopy")
    reps = series(tmp_path / "r", commits=1, per_commit=1)
    assert history(uri, "add", reps[0]).returncode == EXIT_OK
    pg_server.psql(dbname(uri), """
        INSERT INTO commits (sha, seq) VALUES ('big', 2);
        INSERT INTO runs (commit_sha, scenario, scenario_sha256, rig_name, rig_sha256,
            capture_path, start_ns, end_ns, samples, added_utc, report, host_version)
        SELECT 'big', 'big', 'aa', 'rig', 'bb', '/lab/big/' || i, 1000, 2000, 10,
            '2026-01-01T00:00:00Z', repeat('r', 4096), 'v1'
        FROM generate_series(1, 20000) AS i;""")
    to = tmp_path / "to.db"
    peak = tmp_path / "peak"
    r = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", str(peak),
                        str(test_history.RELEASE), "history", "copy", uri, str(to)],
                       capture_output=True, text=True, env=test_history.env_for(uri),
                       timeout=600)
    assert r.returncode == EXIT_OK, r.stderr
    assert "20001 runs" in r.stdout and "20001 added" in r.stdout, r.stdout
    assert query(to, "SELECT COUNT(*) FROM runs WHERE length(report) = 4096") == [(20000,)]
    kib = int(peak.read_text().split()[-1])
    print(f"\ncopy of 20 000 runs of 4 KiB from PostgreSQL: peak {kib} KiB")
    assert kib < 40 * 1024, f"peak {kib} KiB"
