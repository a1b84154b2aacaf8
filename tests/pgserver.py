"""A real PostgreSQL 15 server for the history tests (issue 28).

``pg_server`` (session scope) runs Debian's initdb and pg_ctl from
/usr/lib/postgresql/15/bin as the unprivileged user ``nobody`` (the server
refuses root), with its data directory in build/pg/data, its unix socket in
build/pg/run and a free TCP port on 127.0.0.1. The role ``sbrig`` (the
cluster's superuser, owner of the databases) logs in over TCP with a
password (scram-sha-256) that reaches libpq only through PGPASSFILE
(build/pg/pgpass, 0600): the mechanism the history's users are told to use.
The server is stopped and build/pg removed at the end of the session, also
when a test fails or the run is interrupted (a finalizer and atexit); a
server a killed earlier run left behind is stopped first.

``PgServer.newdb()`` makes an empty database and returns its URI;
``PgServer.query()`` runs SQL through psql (over the unix socket) and
returns rows of strings.
"""

from __future__ import annotations

import atexit
import os
import pwd
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.skips import cannot_run

REPO = Path(__file__).resolve().parents[1]
BIN = Path("/usr/lib/postgresql/15/bin")
ROOT = REPO / "build" / "pg"
USER = "nobody"
CURRENT: "PgServer | None" = None     # the session's server, once started
ROLE = "sbrig"
PASSWORD = "s3cret-pg-pw"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    def __init__(self, root: Path = ROOT):
        self.root = root
        self.data = root / "data"
        self.run = root / "run"
        self.pgpass = root / "pgpass"
        self.port = 0
        self.n = 0
        self.up = False

    def _as_user(self, args, **kw) -> subprocess.CompletedProcess:
        pw = pwd.getpwnam(USER)
        kw.setdefault("capture_output", True)
        kw.setdefault("text", True)
        kw.setdefault("timeout", 120)
        if os.geteuid() == 0:
            kw.update(user=pw.pw_uid, group=pw.pw_gid, extra_groups=[])
        return subprocess.run([str(a) for a in args], cwd="/", **kw)

    def pg_ctl(self, *args, check=True) -> subprocess.CompletedProcess:
        r = self._as_user([BIN / "pg_ctl", "-D", self.data, "-w", "-t", "60", *args])
        if check and r.returncode:
            raise RuntimeError(f"pg_ctl {' '.join(args)}: {r.stdout}{r.stderr}")
        return r

    def start(self) -> None:
        if not (BIN / "initdb").exists():
            cannot_run(f"{BIN}/initdb: PostgreSQL 15 is not installed (postgresql-15)")
        if (self.data / "postmaster.pid").exists():     # left by a killed run
            self.pg_ctl("stop", "-m", "immediate", check=False)
        shutil.rmtree(self.root, ignore_errors=True)
        self.run.mkdir(parents=True)
        pwfile = self.root / "pw"
        pwfile.write_text(PASSWORD + "\n")
        if os.geteuid() == 0:
            pw = pwd.getpwnam(USER)
            for p in (self.root, self.run, pwfile):
                os.chown(p, pw.pw_uid, pw.pw_gid)
        if self._as_user(["test", "-w", self.root, "-a", "-r", pwfile]).returncode:
            raise RuntimeError(f"{self.root}: the user {USER}, who runs the server, cannot "
                               "write there (each parent directory must be searchable "
                               "by others: chmod o+x)")
        r = self._as_user([BIN / "initdb", "-D", self.data, "-U", ROLE, "--pwfile", pwfile,
                           "--auth-local=trust", "--auth-host=scram-sha-256",
                           "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"])
        pwfile.unlink()
        if r.returncode:
            raise RuntimeError(f"initdb failed: {r.stdout}{r.stderr}")
        self.port = free_port()
        self.start_server()
        self.pgpass.write_text(f"127.0.0.1:{self.port}:*:{ROLE}:{PASSWORD}\n")
        self.pgpass.chmod(0o600)

    def start_server(self) -> None:
        self.pg_ctl("start", "-l", self.root / "server.log", "-o",
                    f"-c listen_addresses=127.0.0.1 -p {self.port} "
                    f"-c unix_socket_directories={self.run} -c fsync=off "
                    f"-c max_connections=60")
        self.up = True

    def stop_server(self) -> None:
        """stop it (fast: sessions are ended), its data kept"""
        self.pg_ctl("stop", "-m", "fast")
        self.up = False

    def stop(self) -> None:
        if self.up:
            self.pg_ctl("stop", "-m", "immediate", check=False)
            self.up = False
        shutil.rmtree(self.root, ignore_errors=True)

    def env(self, base: dict) -> dict:
        """@base with libpq's password file, and nothing of the caller's
        PG* settings."""
        env = {k: v for k, v in base.items() if not k.startswith("PG")}
        env["PGPASSFILE"] = str(self.pgpass)
        return env

    def uri(self, db: str) -> str:
        return f"postgresql://{ROLE}@127.0.0.1:{self.port}/{db}"

    def psql(self, db: str, sql: str, check: bool = True) -> subprocess.CompletedProcess:
        r = subprocess.run(["psql", "-X", "-q", "-At", "-F", "\t", "-v", "ON_ERROR_STOP=1",
                            "-h", str(self.run), "-p", str(self.port), "-U", ROLE,
                            "-d", db, "-c", sql], capture_output=True, text=True, timeout=120,
                           env=self.env(os.environ))
        if check and r.returncode:
            raise RuntimeError(f"psql {db}: {sql}: {r.stderr}")
        return r

    def query(self, db: str, sql: str) -> list[tuple[str, ...]]:
        out = self.psql(db, sql).stdout
        return [tuple(line.split("\t")) for line in out.splitlines()]

    def newdb(self, name: str = "h") -> str:
        """An empty database (its name from @name and a counter): its URI"""
        self.n += 1
        db = f"{''.join(c for c in name.lower() if c.isalnum())[:40]}_{os.getpid()}_{self.n}"
        self.psql("postgres", f"CREATE DATABASE {db}")
        return self.uri(db)

    def restart(self) -> None:
        self.pg_ctl("restart", "-m", "fast", "-l", self.root / "server.log")


def dbname(uri: str) -> str:
    return uri.rsplit("/", 1)[1].split("?")[0]


@pytest.fixture(scope="session")
def pg_server(request):
    global CURRENT
    srv = CURRENT = PgServer()
    atexit.register(srv.stop)
    request.addfinalizer(srv.stop)
    t = time.monotonic()
    srv.start()
    print(f"\npg_server: PostgreSQL 15 on 127.0.0.1:{srv.port} "
          f"(up in {time.monotonic() - t:.1f} s)")
    return srv
