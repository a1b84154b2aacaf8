"""sbctl on the host, against fixture directories instead of the module.

sbctl is built natively (static, with the target's flags) into a temporary
directory. SBCTL_DEBUGFS and SBCTL_SYSFS point it at copies of the files in
tests/fixtures/, so list, policy, state and events are checked without a
kernel; hold needs /dev/suspend_blocker and is tested in the VM.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
SRC = ROOT / "kernel-module" / "tools" / "sbctl.c"
UAPI = ROOT / "kernel-module" / "include" / "uapi"
CFLAGS = ["-std=gnu11", "-static", "-O2", "-Wall", "-Wextra", "-Werror"]

HEADER = ("name\tcount\twake_count\tactive_since\ttotal_time\tsleep_time"
          "\tmax_time\tlast_change\n")
COLUMNS = ["name", "count", "wake_count", "active_since_ms", "total_time_ms",
           "sleep_time_ms", "max_time_ms", "last_change_ms"]
SUBCOMMANDS = ["list", "policy", "state", "hold", "events"]


@pytest.fixture(scope="session")
def sbctl_bin(tmp_path_factory):
    out = tmp_path_factory.mktemp("sbctl") / "sbctl"
    subprocess.run(["gcc", *CFLAGS, "-I", str(UAPI), "-o", str(out), str(SRC)],
                   check=True)
    return out


@pytest.fixture
def debugfs(tmp_path):
    d = tmp_path / "debugfs"
    d.mkdir()
    shutil.copy(FIXTURES / "suspend_blockers.txt", d / "suspend_blockers")
    shutil.copy(FIXTURES / "suspend_blocker_events.txt",
                d / "suspend_blocker_events")
    return d


def sysfs_copy(tmp_path, policy):
    d = tmp_path / f"sysfs_{policy}"
    shutil.copytree(FIXTURES / f"sysfs_{policy}", d)
    return d


@pytest.fixture
def run(sbctl_bin, tmp_path, debugfs):
    """run(*args, sysfs=..., debugfs=...) -> CompletedProcess (text)."""
    def _run(*args, sysfs=None, dbg=debugfs):
        env = dict(os.environ)
        env["SBCTL_DEBUGFS"] = str(dbg)
        env["SBCTL_SYSFS"] = str(sysfs or FIXTURES / "sysfs_opportunistic")
        return subprocess.run([str(sbctl_bin), *args], env=env, text=True,
                              capture_output=True, stdin=subprocess.DEVNULL,
                              timeout=10)
    return _run


def table(stdout):
    """Parse sbctl list output into (header, {name: (active, [cells])})."""
    lines = stdout.splitlines()
    rows = {}
    for line in lines[1:]:
        mark, rest = line[0], line[2:]
        cells = re.split(r"\s{2,}", rest.strip())
        # the name may contain single spaces; numbers never do
        rows[cells[0]] = (mark == "*", cells[1:])
    return lines[0], rows


# ---- help and usage -------------------------------------------------------

def test_help_lists_subcommands(run):
    r = run("--help")
    assert r.returncode == 0
    assert r.stdout.startswith("Usage: sbctl COMMAND")
    for sub in SUBCOMMANDS:
        assert re.search(rf"^  {sub}\s+\S", r.stdout, re.M), sub


@pytest.mark.parametrize("sub", SUBCOMMANDS)
def test_subcommand_help(run, sub):
    r = run(sub, "--help")
    assert r.returncode == 0
    assert r.stdout.startswith(f"Usage: sbctl {sub}")
    assert r.stderr == ""


@pytest.mark.parametrize("args, message", [
    ((), "Usage: sbctl"),
    (("frobnicate",), "unknown command 'frobnicate'"),
    (("list", "--bogus"), "unknown option '--bogus'"),
    (("list", "extra"), "unexpected argument 'extra'"),
    (("list", "--raw=yes"), "takes no value"),
    (("policy", "sometimes"), "unknown policy 'sometimes'"),
    (("policy", "forced", "again"), "unexpected argument 'again'"),
    (("hold",), "missing argument"),
    (("hold", "x", "--ms", "soon"), "bad number 'soon'"),
    (("hold", "x", "--ms"), "--ms needs a value"),
    (("hold", "x", "--ms", "5", "--", "true"), "exclude each other"),
    (("hold", "x", "--"), "no command after '--'"),
    (("hold", "n" * 256), "longer than NAME_MAX"),
    (("events", "--count", "0"), "out of range"),
])
def test_usage_errors_exit_2(run, args, message):
    r = run(*args)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr
    assert r.stdout == ""


# ---- list -----------------------------------------------------------------

def test_list_raw_is_the_file(run, debugfs):
    r = run("list", "--raw")
    assert r.returncode == 0
    assert r.stdout == (debugfs / "suspend_blockers").read_text()


def test_fixture_has_the_seed_format():
    text = (FIXTURES / "suspend_blockers.txt").read_text()
    assert text.startswith(HEADER)
    names = []
    for line in text.splitlines()[1:]:
        f = line.split("\t")
        assert len(f) == 8 and f[0][0] == f[0][-1] == '"'
        assert all(re.fullmatch(r"-?\d+", x) for x in f[1:])
        names.append(f[0].strip('"'))
    for builtin in ("main", "unknown_wakeups", "deleted_suspend_blockers"):
        assert builtin in names


def test_list_table(run):
    r = run("list")
    assert r.returncode == 0 and r.stderr == ""
    header, rows = table(r.stdout)
    assert header.split() == COLUMNS
    # aligned: every row as long as the header, numbers right-aligned
    assert len({len(line) for line in r.stdout.splitlines()}) == 1
    assert list(rows) == ["unknown_wakeups", "deleted_suspend_blockers",
                          "main", "input-event-queue", "process-input-events",
                          "rig agent", "keypad-scan", "PowerManagerService"]
    assert rows["PowerManagerService"] == (True, [
        "7", "0", "2503.445", "9512.334", "1.500", "5000.000", "117597.878"])
    assert rows["keypad-scan"] == (True, [
        "19", "19", "1.540", "4040.122", "0.000", "212.334", "120100.223"])
    assert rows["rig agent"] == (False, [
        "5", "0", "0.000", "0.007", "0.000", "0.002", "90000.000"])
    assert rows["deleted_suspend_blockers"][1][-1] == "0.000"
    assert [n for n, (act, _) in rows.items() if act] == [
        "keypad-scan", "PowerManagerService"]


def test_list_active(run):
    r = run("list", "--active")
    assert r.returncode == 0
    _, rows = table(r.stdout)
    assert list(rows) == ["keypad-scan", "PowerManagerService"]
    assert all(active for active, _ in rows.values())


def test_list_raw_active(run):
    r = run("list", "--raw", "--active")
    assert r.returncode == 0
    assert r.stdout == HEADER + (
        '"keypad-scan"\t19\t19\t1540229\t4040122345\t0\t212334556\t120100223344\n'
        '"PowerManagerService"\t7\t0\t2503445667\t9512334556\t1500000'
        '\t5000000000\t117597878123\n')


def test_list_empty_table(run, debugfs):
    (debugfs / "suspend_blockers").write_text(HEADER)
    r = run("list")
    assert r.returncode == 0
    assert r.stdout.split() == COLUMNS


@pytest.mark.parametrize("content, message", [
    ("", ":1: unexpected header ''"),
    ("name\tactive\n\"main\"\t0\n", ":1: unexpected header"),
    (HEADER + '"x"\t1\t0\t0\n', ":2: 4 fields, expected 8"),
    (HEADER + '"x"\t1\tlots\t0\t0\t0\t0\t0\n',
     ":2: field 'wake_count': bad number 'lots'"),
    (HEADER + '"x"\t-1\t0\t0\t0\t0\t0\t0\n', ":2: field 'count'"),
    (HEADER + '"x"\t4294967296\t0\t0\t0\t0\t0\t0\n', ":2: field 'count'"),
    (HEADER + 'x\t1\t0\t0\t0\t0\t0\t0\n', ":2: field 'name'"),
    (HEADER + '"x"\t1\t0\t0\t0\t0\t0\t0', ":2: line not terminated"),
])
def test_list_malformed(run, debugfs, content, message):
    path = debugfs / "suspend_blockers"
    path.write_text(content)
    r = run("list")
    assert r.returncode == 1
    assert f"{path}{message}" in r.stderr
    assert r.stdout == ""


def test_list_without_debugfs(run, tmp_path):
    r = run("list", dbg=tmp_path / "nowhere")
    assert r.returncode == 1
    assert "suspend_blockers: No such file or directory" in r.stderr
    assert "debugfs mounted" in r.stderr


# ---- policy ---------------------------------------------------------------

@pytest.mark.parametrize("policy", ["forced", "opportunistic"])
def test_policy_show(run, policy):
    r = run("policy", sysfs=FIXTURES / f"sysfs_{policy}")
    assert r.returncode == 0
    assert r.stdout == f"{policy}\n"


@pytest.mark.parametrize("policy", ["forced", "opportunistic"])
def test_policy_set_writes_the_word(run, tmp_path, policy):
    sysfs = sysfs_copy(tmp_path, "forced")
    r = run("policy", policy, sysfs=sysfs)
    assert r.returncode == 0 and r.stdout == ""
    assert (sysfs / "policy").read_bytes() == policy.encode()


def test_policy_without_brackets(run, tmp_path):
    sysfs = sysfs_copy(tmp_path, "forced")
    (sysfs / "policy").write_text("forced opportunistic\n")
    r = run("policy", sysfs=sysfs)
    assert r.returncode == 1
    assert "no current policy" in r.stderr


def test_policy_without_module(run, tmp_path):
    r = run("policy", sysfs=tmp_path / "nowhere")
    assert r.returncode == 1
    assert "suspend_block.ko loaded" in r.stderr


# ---- state ----------------------------------------------------------------

@pytest.mark.parametrize("policy, valid", [
    ("opportunistic", "on freeze mem"),
    ("forced", "freeze mem"),
])
def test_state_show(run, policy, valid):
    r = run("state", sysfs=FIXTURES / f"sysfs_{policy}")
    assert r.returncode == 0
    assert r.stdout == f"requested: mem\nvalid: {valid}\n"


@pytest.mark.parametrize("policy, state", [
    ("opportunistic", "on"),
    ("opportunistic", "freeze"),
    ("forced", "mem"),
])
def test_state_request(run, tmp_path, policy, state):
    sysfs = sysfs_copy(tmp_path, policy)
    r = run("state", state, sysfs=sysfs)
    assert r.returncode == 0 and r.stdout == ""
    assert (sysfs / "state").read_bytes() == state.encode()


@pytest.mark.parametrize("policy, state", [
    ("forced", "on"),
    ("opportunistic", "disk"),
    ("opportunistic", "me"),
])
def test_state_invalid_is_not_written(run, tmp_path, policy, state):
    sysfs = sysfs_copy(tmp_path, policy)
    before = (sysfs / "state").read_bytes()
    r = run("state", state, sysfs=sysfs)
    assert r.returncode == 1
    assert f"'{state}' is not valid under the current policy" in r.stderr
    assert (sysfs / "state").read_bytes() == before


# ---- events ---------------------------------------------------------------

def test_events_raw_is_the_stream(run, debugfs):
    r = run("events", "--raw")
    assert r.returncode == 0
    assert r.stdout == (debugfs / "suspend_blocker_events").read_text()


def test_events_pretty(run):
    r = run("events")
    assert r.returncode == 0 and r.stderr == ""
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["seq", "time_s", "type", "arg"]
    assert lines[1].split() == ["0", "4.900000000", "policy",
                                "opportunistic", "mem"]
    assert lines[2].split() == ["1", "5.012345678", "block", '"keypad-scan"']
    assert lines[13].split() == ["12", "9.100200000", "abort", "-16"]
    assert lines[14].split() == ["13", "9.100300000", "lost", "3"]
    assert lines[15].endswith('-61-byt"+')
    assert len(lines) == 16


def test_events_count(run):
    r = run("events", "--raw", "--count", "2")
    assert r.returncode == 0
    assert [line.split("\t")[0] for line in r.stdout.splitlines()] == ["0", "1"]


def test_events_show_the_object_id(run, debugfs):
    """A block/unblock line's fifth field, the blocker object's id
    (suspend-block.rst: ID), is printed after the name; --raw keeps the
    line as the module wrote it."""
    (debugfs / "suspend_blocker_events").write_text(
        '1\t5\tblock\t"evdev"\t7\n2\t6\tblock\t"evdev"\t9\n'
        '3\t7\tunblock\t"evdev"\t7\n')
    r = run("events")
    assert r.returncode == 0 and r.stderr == ""
    assert r.stdout.splitlines()[1:] == [
        '         1          0.000000005  block   "evdev" #7',
        '         2          0.000000006  block   "evdev" #9',
        '         3          0.000000007  unblock "evdev" #7',
    ]
    r = run("events", "--raw", "--count", "1")
    assert r.stdout == '1\t5\tblock\t"evdev"\t7\n'


def test_events_malformed_line_is_kept(run, debugfs):
    (debugfs / "suspend_blocker_events").write_text(
        '1\t5\tblock\t"a"\ngarbage\n2\t6\tunblock\t"a"\n')
    r = run("events")
    assert r.returncode == 1
    assert "malformed event line: garbage" in r.stderr
    assert r.stdout.splitlines()[1:] == [
        '         1          0.000000005  block   "a"',
        "garbage",
        '         2          0.000000006  unblock "a"',
    ]


# ---- hold (only what needs no device) -------------------------------------

@pytest.mark.skipif(os.path.exists("/dev/suspend_blocker"),
                    reason="the module is loaded here")
def test_hold_without_device(run):
    r = run("hold", "x", "--ms", "1")
    assert r.returncode == 1
    assert "/dev/suspend_blocker: No such file or directory" in r.stderr
