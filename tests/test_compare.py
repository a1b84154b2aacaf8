"""sbrig compare: regression verdicts between repeated runs, on runs whose
truth is known exactly.

* Real captures (tests/synth/runs.py press_scenario through synthcap),
  analysed by ``sbrig analyze`` or on the fly by ``sbrig compare``
  itself: a 5 % rise in energy per press with 10 runs a side is
  ``regressed`` (and the change's interval holds the truth); no shift is
  not flagged; a blocker whose energy doubles is named in the summary;
  3 runs a side are ``inconclusive`` with how many more to run.
* The false-positive rate over 200 trials of 10 + 10 runs with no shift,
  on report.json-level synthetic runs (runs.fake_report, fast), is under
  the configured significance.
* compare.json has its documented shape; thresholds from a config file
  change the verdict; a new leak is a regression by itself; runs of
  another scenario are refused (exit 5) unless --force; bad input (another
  schema version, a missing field, an empty set, a file that is no
  report, a bad thresholds file) is a clear error naming where, no crash.

sbrig is the ASan/UBSan build.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.synth import runs, synthcap  # noqa: E402

SBRIG = REPO / "build" / "host" / "asan" / "sbrig"
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=1",
           UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
EXIT_OK, EXIT_REGRESSED, EXIT_USAGE, EXIT_INCONCLUSIVE = 0, 1, 2, 4
EXIT_NOT_COMPARABLE, EXIT_BAD_INPUT = 5, 6


def compare(*args, cwd=None, sbrig=SBRIG) -> subprocess.CompletedProcess:
    return subprocess.run([str(sbrig), "compare", *map(str, args)], capture_output=True,
                          text=True, env=ENV, timeout=600, cwd=cwd)


def metric(doc: dict, name: str, blocker: str | None = None) -> dict:
    found = [m for m in doc["metrics"] if m["metric"] == name and m["blocker"] == blocker]
    assert len(found) == 1, f"{name} {blocker}: {[m['metric'] for m in doc['metrics']]}"
    return found[0]


@pytest.fixture(scope="module")
def sbrig():
    r = subprocess.run(["make", "-C", str(REPO / "host"), "VARIANT=asan", "-j2"],
                       capture_output=True, text=True)
    if r.returncode:
        pytest.fail(f"make -C host VARIANT=asan failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}",
                    pytrace=False)
    return SBRIG


@pytest.fixture(scope="module")
def sbrig_release():
    """The release build, for the 200 trials (the statistics are the same
    code; ASan would make the test 40 s instead of a few)."""
    r = subprocess.run(["make", "-C", str(REPO / "host"), "-j2"], capture_output=True, text=True)
    if r.returncode:
        pytest.fail(f"make -C host failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}",
                    pytrace=False)
    return REPO / "build" / "host" / "release" / "sbrig"


def build_run(d: Path, seed: int, analyze: bool = True, **kw) -> Path:
    """One synthetic run: its report.json (analysed) or its capture."""
    truth = synthcap.build(runs.press_scenario(seed, **kw), d)
    (d / "truth-energy.json").write_text(json.dumps(
        [w["energy_uJ"] for w in truth["wakeups"]]))
    (d / "truth-blockers.json").write_text(json.dumps(
        {b["name"]: b["energy_uJ"] / len(truth["wakeups"]) for b in truth["blockers"]}))
    if not analyze:
        return d / "capture"
    r = subprocess.run([str(SBRIG), "analyze", "-q", str(d / "capture"), "-o",
                        str(d / "report")], capture_output=True, text=True, env=ENV,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return d / "report" / "report.json"


def run_dir(run: Path) -> Path:
    return run.parent.parent if run.name == "report.json" else run.parent


def true_energy(run: Path) -> float:
    """The run's true energy per wakeup (synthcap's truth), from its path."""
    e = json.loads((run_dir(run) / "truth-energy.json").read_text())
    return sum(e) / len(e)


def true_blocker(run: Path, name: str) -> float:
    """The run's true energy of blocker @name per wakeup."""
    return json.loads((run_dir(run) / "truth-blockers.json").read_text())[name]


def median(v):
    v = sorted(v)
    return (v[len(v) // 2] + v[(len(v) - 1) // 2]) / 2


@pytest.fixture(scope="module")
def real(sbrig, tmp_path_factory):
    """Real captures: 10 base runs, 10 new runs 5 % costlier per press
    (3 of them given as captures, analysed on the fly), 10 more base-like
    runs of another build, 5 runs where wifi's energy doubles (its extra
    power x 2.854: wifi shares the awake power with keypad-scan, so its
    attributed energy doubles with that; the test checks the truth)."""
    d = tmp_path_factory.mktemp("compare-real")
    out = {"base": [build_run(d / f"base{i}", seed=i, git_sha="base") for i in range(10)]}
    out["new"] = [build_run(d / f"new{i}", seed=100 + i, scale=1.05, git_sha="new",
                            analyze=i >= 3) for i in range(10)]
    out["same"] = [build_run(d / f"same{i}", seed=200 + i, git_sha="same") for i in range(10)]
    out["wifi"] = [build_run(d / f"wifi{i}", seed=300 + i, wifi_scale=2.854, git_sha="wifi")
                   for i in range(5)]
    out["dir"] = d
    return out


def test_a_five_percent_rise_per_press_is_regressed(real, tmp_path):
    r = compare("-o", tmp_path, *real["base"], "--", *real["new"])
    assert r.returncode == EXIT_REGRESSED, r.stdout + r.stderr
    doc = json.loads((tmp_path / "compare.json").read_text())
    assert doc["schema"] == "sbrig-compare" and doc["version"] == 1
    assert doc["verdict"] == "regressed"
    m = metric(doc, "energy_per_wakeup_uJ")
    assert m["verdict"] == "regressed", m
    assert m["base"]["n"] == 10 and m["new"]["n"] == 10
    # the truth's own shift (the runs' noise included) is inside the interval
    tb = sorted(true_energy(p) for p in real["base"])
    tn = sorted(true_energy(p) for p in real["new"])
    true_change = (tn[4] + tn[5]) / 2 - (tb[4] + tb[5]) / 2
    lo, hi = m["ci"]
    assert lo <= true_change <= hi, (lo, true_change, hi)
    assert 0.03 < m["change_rel"] < 0.08
    assert m["p_value"] <= doc["config"]["alpha"]
    assert "regressed: energy_per_wakeup_uJ:" in r.stdout
    assert r.stdout.splitlines()[0].startswith("verdict: regressed")
    # the runs given as captures were analysed on the fly, and nothing written there
    caps = [x for x in doc["new"]["runs"] if x["input"].endswith("/capture")]
    assert len(caps) == 3
    assert not (Path(caps[0]["input"]) / "report").exists()
    assert doc["new"]["git_sha"] == ["new"] and doc["base"]["git_sha"] == ["base"]


def test_no_shift_is_not_flagged(real, tmp_path):
    r = compare("-o", tmp_path, *real["base"], "--", *real["same"])
    doc = json.loads((tmp_path / "compare.json").read_text())
    flagged = [(m["metric"], m["blocker"], m["verdict"]) for m in doc["metrics"]
               if m["verdict"] in ("regressed", "improved")]
    assert flagged == []
    assert r.returncode in (EXIT_OK, EXIT_INCONCLUSIVE), r.stdout + r.stderr
    assert metric(doc, "energy_per_wakeup_uJ")["verdict"] == "unchanged"


def test_a_blocker_whose_energy_doubles_is_named(real, tmp_path):
    r = compare(*real["base"][:5], "--", *real["wifi"])
    assert r.returncode == EXIT_REGRESSED, r.stdout + r.stderr
    worse = [x for x in r.stdout.splitlines() if x.startswith("worse_blocker:")]
    assert worse and worse[0].startswith("worse_blocker: wifi: +"), r.stdout
    pct = float(worse[0].split("(")[1].split()[0])
    tb = median(true_blocker(p, "wifi") for p in real["base"][:5])
    tw = median(true_blocker(p, "wifi") for p in real["wifi"])
    assert 1.9 < tw / tb < 2.1                  # the truth: wifi's energy doubled
    assert abs(pct - (tw / tb - 1) * 100) < 3, (worse[0], tw / tb)
    mj = float(worse[0].split(": +")[1].split()[0])
    assert abs(mj - (tw - tb) / 1000) < 0.03 * (tw - tb) / 1000, (worse[0], tw - tb)
    # keypad-scan shares the stretches it overlaps wifi in (the equal split):
    # it got worse too, by less; every blocker named got worse in truth
    for line in worse:
        name = line.split(": ")[1]
        assert median(true_blocker(p, name) for p in real["wifi"]) > \
            1.05 * median(true_blocker(p, name) for p in real["base"][:5]), line


def test_too_few_runs_are_inconclusive(real, tmp_path):
    r = compare("-o", tmp_path, *real["base"][:3], "--", *real["new"][3:6])
    assert r.returncode == EXIT_INCONCLUSIVE, r.stdout + r.stderr
    doc = json.loads((tmp_path / "compare.json").read_text())
    m = metric(doc, "energy_per_wakeup_uJ")
    assert m["verdict"] == "inconclusive" and m["reason"] == "too few runs"
    assert m["more_runs"] >= 2 and m["runs_needed"] == 3 + m["more_runs"]
    assert "run %d more a side" % m["more_runs"] in r.stdout


def test_false_positive_rate_is_under_the_significance(sbrig_release, tmp_path):
    """200 trials of 10 + 10 runs drawn from one distribution (1 % noise):
    the share of trials where a metric is flagged (regressed or improved)
    stays at or under alpha."""
    trials, flagged, per_metric = 200, 0, {}
    rng = random.Random(20240501)
    alpha = 0.01
    for t in range(trials):
        d = tmp_path / f"t{t}"
        reps = [runs.fake_report(rng, git_sha="b" if i < 10 else "n") for i in range(20)]
        paths = runs.write_reports(reps, d)
        r = compare("-o", d, *paths[:10], "--", *paths[10:], sbrig=sbrig_release)
        assert r.returncode in (EXIT_OK, EXIT_INCONCLUSIVE, EXIT_REGRESSED), r.stderr
        doc = json.loads((d / "compare.json").read_text())
        assert doc["config"]["alpha"] == alpha
        bad = [m["metric"] for m in doc["metrics"] if m["verdict"] in ("regressed", "improved")]
        flagged += bool(bad)
        for name in bad:
            per_metric[name] = per_metric.get(name, 0) + 1
        for f in d.iterdir():
            f.unlink()
    assert flagged / trials <= alpha, per_metric


def test_a_shift_in_report_level_runs_is_found_every_time(sbrig, tmp_path):
    """The other side of the false-positive test: the same noise, 5 %
    more energy per wakeup, 20 trials: regressed in every one."""
    rng = random.Random(7)
    for t in range(20):
        d = tmp_path / f"t{t}"
        reps = [runs.fake_report(rng) for _ in range(10)] + \
               [runs.fake_report(rng, energy_uJ=105_000.0) for _ in range(10)]
        paths = runs.write_reports(reps, d)
        r = compare("-o", d, *paths[:10], "--", *paths[10:])
        doc = json.loads((d / "compare.json").read_text())
        assert metric(doc, "energy_per_wakeup_uJ")["verdict"] == "regressed", r.stdout


def fake_set(tmp_path: Path, n: int, seed: int = 1, **kw) -> list[Path]:
    rng = random.Random(seed)
    return runs.write_reports([runs.fake_report(rng, **kw) for _ in range(n)],
                              tmp_path / f"set{seed}")


def test_a_new_leak_is_a_regression_by_itself(sbrig, tmp_path):
    base = fake_set(tmp_path, 5, seed=1)
    new = fake_set(tmp_path, 5, seed=2)[:4] + fake_set(tmp_path, 1, seed=3, leak="wifi")
    r = compare("-o", tmp_path, *base, "--", *new)
    assert r.returncode == EXIT_REGRESSED, r.stdout + r.stderr
    doc = json.loads((tmp_path / "compare.json").read_text())
    m = metric(doc, "leak", "wifi")
    assert m["verdict"] == "regressed" and m["test"] == "new-leak"
    assert m["p_value"] is None and m["ci"] is None
    assert "new_leak: wifi" in r.stdout
    assert "regressed: blocker wifi: leak: in 1 of 5 new runs, 0 of 5 base runs" in r.stdout
    # the same leak on both sides is no regression
    r = compare(*new, "--", *new)
    assert r.returncode == EXIT_OK, r.stdout


def test_compare_json_has_its_documented_shape(sbrig, tmp_path):
    base, new = fake_set(tmp_path, 6, seed=1), fake_set(tmp_path, 6, seed=2)
    r = compare("-o", tmp_path / "out", *base, "--", *new)
    assert r.returncode == EXIT_OK, r.stdout + r.stderr
    assert r.stdout.splitlines()[-1] == f"compare: {tmp_path / 'out' / 'compare.json'}"
    doc = json.loads((tmp_path / "out" / "compare.json").read_text())
    assert set(doc) >= {"schema", "version", "generator", "verdict", "counts", "forced",
                        "warnings", "config", "provenance", "base", "new", "metrics"}
    assert set(doc["counts"]) == {"regressed", "improved", "unchanged", "inconclusive"}
    assert sum(doc["counts"].values()) == len(doc["metrics"])
    assert doc["base"]["n"] == 6 and len(doc["base"]["runs"]) == 6
    assert doc["provenance"]["scenario_sha256"] == runs.SCENARIO_SHA
    names = {m["metric"] for m in doc["metrics"]}
    assert names >= {"energy_total_uJ", "energy_per_wakeup_uJ", "awake_per_wakeup_ns",
                     "baseline_uW", "latency_median_ns", "latency_p95_ns",
                     "blocker_energy_per_wakeup_uJ", "blocker_activations",
                     "aborted_suspends", "unknown_wakeups"}
    for m in doc["metrics"]:
        assert m["verdict"] in ("regressed", "improved", "unchanged", "inconclusive")
        assert m["unit"] in ("uJ", "ns", "uW", "count")
        assert len(m["base"]["values"]) == 6 and len(m["new"]["values"]) == 6
        assert m["test"] == "mann-whitney-u"
        assert m["ci"] is None or m["ci"][0] <= m["ci"][1]
    # the same inputs give the same document (the bootstrap is seeded)
    r = compare("-o", tmp_path / "again", *base, "--", *new)
    again = json.loads((tmp_path / "again" / "compare.json").read_text())
    assert again["metrics"] == doc["metrics"]


def test_thresholds_come_from_a_config_file(sbrig, tmp_path):
    rng = random.Random(5)
    base = runs.write_reports([runs.fake_report(rng) for _ in range(8)], tmp_path / "b")
    new = runs.write_reports([runs.fake_report(rng, energy_uJ=105_000.0) for _ in range(8)],
                             tmp_path / "n")
    r = compare(*base, "--", *new)
    assert r.returncode == EXIT_REGRESSED
    cfg = tmp_path / "thr.conf"
    r = compare("--print-config")
    assert r.returncode == 0 and "[energy_per_wakeup_uJ]" in r.stdout
    text = r.stdout.replace("[energy_per_wakeup_uJ]\nmin_change   = 0.03",
                            "[energy_per_wakeup_uJ]\nmin_change   = 0.1")
    text = text.replace("[energy_total_uJ]\nmin_change   = 0.03",
                        "[energy_total_uJ]\nmin_change   = 0.1")
    text = text.replace("[blocker_energy_per_wakeup_uJ]\nmin_change   = 0.05",
                        "[blocker_energy_per_wakeup_uJ]\nmin_change   = 0.1")
    assert text != r.stdout
    cfg.write_text(text)
    r = compare("-c", cfg, "-o", tmp_path, *base, "--", *new)
    assert r.returncode == EXIT_OK, r.stdout
    doc = json.loads((tmp_path / "compare.json").read_text())
    m = metric(doc, "energy_per_wakeup_uJ")
    assert m["verdict"] == "unchanged" and m["min_change"] == 0.1
    assert m["reason"] == "significant, but below the threshold"
    assert doc["config"]["path"] == str(cfg)
    # --print-config with -c prints what it read, which reads back the same
    r = compare("-c", cfg, "--print-config")
    assert r.stdout == text


@pytest.mark.parametrize("text, where", [
    ("[compare]\nalpha = 0.7\n", "thr.conf:2: [compare]: alpha = 0.7: out of range"),
    ("[compare]\nalpah = 0.01\n", "thr.conf:2: [compare]: unknown key 'alpah'"),
    ("alpha = 0.01\n", "thr.conf:1: 'alpha = 0.01': a key before any [section]"),
    ("[energy]\n", "thr.conf:1: [energy]: no such section"),
    ("# fine\n[latency_p95_ns]\nmin_abs = x\n", "thr.conf:3: [latency_p95_ns]: min_abs = x: "
     "not a number"),
    ("[compare]\nmin_runs = 2.5\n", "thr.conf:2: [compare]: min_runs = 2.5: not a whole number"),
])
def test_a_bad_thresholds_file_names_its_line(sbrig, tmp_path, text, where):
    (tmp_path / "thr.conf").write_text(text)
    a = fake_set(tmp_path, 1)
    r = compare("-c", "thr.conf", *a, "--", *a, cwd=tmp_path)
    assert r.returncode == EXIT_USAGE
    assert where in r.stderr, r.stderr


def test_runs_of_another_scenario_are_refused_unless_forced(sbrig, tmp_path):
    base = fake_set(tmp_path, 5, seed=1)
    other = fake_set(tmp_path, 5, seed=2, scenario_sha="ab" * 32)
    r = compare(*base, "--", *other)
    assert r.returncode == EXIT_NOT_COMPARABLE, r.stdout + r.stderr
    assert "runs of different scenarios" in r.stderr
    assert str(base[0]) in r.stderr and str(other[0]) in r.stderr
    assert "abababababab" in r.stderr and "--force" not in r.stdout
    r = compare("-f", "-o", tmp_path, *base, "--", *other)
    assert r.returncode == EXIT_OK, r.stdout + r.stderr
    doc = json.loads((tmp_path / "compare.json").read_text())
    assert doc["forced"] is True and len(doc["warnings"]) == 1
    assert "warning: runs of different scenarios" in r.stdout


def test_bad_input_is_a_clear_error(sbrig, tmp_path):
    good = fake_set(tmp_path, 2)
    rep = json.loads(good[0].read_text())
    (tmp_path / "v2.json").write_text(json.dumps(dict(rep, version=2)))
    r = compare(tmp_path / "v2.json", "--", good[1])
    assert r.returncode == EXIT_BAD_INPUT
    assert f"{tmp_path / 'v2.json'}: field 'version': 2 is not supported" in r.stderr

    broken = json.loads(good[0].read_text())
    del broken["energy"]["total_uJ"]
    (tmp_path / "missing.json").write_text(json.dumps(broken))
    r = compare(good[0], "--", tmp_path / "missing.json")
    assert r.returncode == EXIT_BAD_INPUT
    assert "missing.json: field 'energy.total_uJ': missing" in r.stderr

    (tmp_path / "cut.json").write_text(good[0].read_text()[:500])
    r = compare(good[0], "--", tmp_path / "cut.json")
    assert r.returncode == EXIT_BAD_INPUT and "cut.json:" in r.stderr and "not JSON" in r.stderr

    (tmp_path / "empty-dir").mkdir()
    r = compare(good[0], "--", tmp_path / "empty-dir")
    assert r.returncode == EXIT_BAD_INPUT
    assert "empty-dir: neither a report.json" in r.stderr

    r = compare(good[0], "--", tmp_path / "nowhere.json")
    assert r.returncode == EXIT_BAD_INPUT and "nowhere.json: No such file" in r.stderr

    # an empty set on either side, no '--': usage errors
    for args, msg in (((good[0], "--"), "no NEW run after '--'"),
                      (("--", good[0]), "no BASE run before '--'"),
                      ((good[0], good[1]), "expected BASE... -- NEW...")):
        r = compare(*args)
        assert r.returncode == EXIT_USAGE and msg in r.stderr, r.stderr


def test_a_corrupt_capture_given_as_a_run_names_its_line(sbrig, tmp_path):
    truth = synthcap.build(synthcap.scenario("corrupt"), tmp_path / "c")
    good = fake_set(tmp_path, 1)
    r = compare(good[0], "--", tmp_path / "c" / "capture")
    assert r.returncode == EXIT_BAD_INPUT, r.stderr
    assert truth["expect_error"]["message_contains"] in r.stderr
    assert "analysing the capture" in r.stderr


def test_help_lists_the_exit_codes(sbrig):
    r = subprocess.run([str(SBRIG), "compare", "--help"], capture_output=True, text=True)
    assert r.returncode == 0
    text = " ".join(r.stdout.split())
    for code in ("0 nothing regressed", "1 a metric regressed", "4 none regressed",
                 "2 usage error", "5 the runs are of different scenarios",
                 "6 a run cannot be read", "7 compare.json or the page cannot be written"):
        assert code in text, code
    man = " ".join((REPO / "host" / "man" / "sbrig.1").read_text().split())
    assert "4 none regressed but one is inconclusive" in man
