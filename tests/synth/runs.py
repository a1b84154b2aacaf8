"""runs - repeated synthetic runs of one scenario, for sbrig compare.

Two kinds, both with exactly known truth:

* :func:`press_scenario` is a :mod:`synthcap` scenario of ``presses`` key
  wakes, each followed by ``keypad-scan`` and ``wifi`` holds. A run's
  power levels (awake, each hold's extra) are multiplied by one factor
  ``scale x (1 + N(0, noise))`` drawn from the run's seed, so its energy
  per wakeup is the scenario's times that factor: a 5 % rise is
  ``scale=1.05``. ``wifi_scale`` multiplies only wifi's extra power (a
  blocker whose energy doubles). Every run has the same
  ``scenario_sha256`` (as repeated runs of one scenario file do) and the
  given ``git_sha``. Build it with ``synthcap.build()`` and analyse it
  with ``sbrig analyze`` as any capture.

* :func:`fake_report` is a report.json made from a real one (the
  checked-in ``tests/fixtures/report/minimal.json``) with its figures
  replaced: fast enough for hundreds of trials of ``sbrig compare``.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
from pathlib import Path

from tests.synth import synthcap

REPO = Path(__file__).resolve().parents[2]
MINIMAL = REPO / "tests" / "fixtures" / "report" / "minimal.json"
SCENARIO_SHA = hashlib.sha256(b"tests/synth/runs.py press").hexdigest()


def press_scenario(seed: int, *, presses: int = 3, scale: float = 1.0,
                   noise: float = 0.01, wifi_scale: float = 1.0,
                   git_sha: str = "base", scenario_sha: str = SCENARIO_SHA,
                   rate_hz: int = 1000) -> synthcap.Scenario:
    """One run: hold, sleep, press wake, ... (``presses`` wakes), at
    ``rate_hz``; the power factor is drawn from ``seed``."""
    rng = random.Random(seed)
    f = scale * (1 + rng.gauss(0, noise))
    holds, sleeps = [], []
    t = 0.5
    hold_set = [("keypad-scan", 0.0, 0.2, round(40_000 * f)),
                ("wifi", 0.05, 0.6, round(300_000 * f * wifi_scale))]
    for _ in range(presses):
        hs, s, t = synthcap._cycle(t, sleep=1.0, holds=hold_set)
        holds += hs
        sleeps.append(s)
    holds += [synthcap.Hold(n, t + a, t + b, uW) for n, a, b, uW in hold_set]
    duration = t + 0.6 + 0.03
    return synthcap.Scenario(
        "press", duration, rate_hz=rate_hz, seed=seed, format_version=2,
        awake_uW=round(250_000 * f), holds=holds, sleeps=sleeps,
        stats_every_s=None,
        provenance={"git_sha": git_sha, "scenario": "rig/scenarios/press.scn",
                    "scenario_sha256": scenario_sha})


def fake_report(rng: random.Random, *, energy_uJ: float = 100_000.0,
                noise: float = 0.01, wakeups: int = 3, git_sha: str = "base",
                scenario_sha: str = SCENARIO_SHA, leak: str | None = None,
                blockers: dict | None = None) -> dict:
    """A report.json (dict) whose figures are drawn from ``rng``: energy
    per wakeup ``energy_uJ`` x (1 + N(0, noise)), ``wakeups`` wakeups,
    latency and baseline with the same relative noise, ``blockers``
    (name -> energy per wakeup, uJ) likewise; ``leak``: a leak finding of
    that blocker."""
    r = json.loads(MINIMAL.read_text())
    f = 1 + rng.gauss(0, noise)
    w0 = r["wakeups"][0]
    r["wakeups"] = []
    for i in range(wakeups):
        w = copy.deepcopy(w0)
        w["t_ns"] = 1_000_000_000 * (i + 1)
        w["resume_t_ns"] = w["t_ns"] + 20_000_000
        w["energy_uJ"] = round(energy_uJ * f * (1 + rng.gauss(0, noise)), 3)
        w["awake_ns"] = round(500_000_000 * (1 + rng.gauss(0, noise)))
        r["wakeups"].append(w)
    lat = sorted(round(20_000_000 * (1 + rng.gauss(0, noise))) for _ in range(wakeups))
    r["latency"] = {"n": wakeups, "min_ns": lat[0], "median_ns": lat[len(lat) // 2],
                    "p95_ns": lat[-1], "max_ns": lat[-1]}
    r["energy"]["baseline_uW"] = round(300 * (1 + rng.gauss(0, noise)), 3)
    r["energy"]["total_uJ"] = round(sum(w["energy_uJ"] for w in r["wakeups"]) + 300, 3)
    b0 = r["blockers"][0]
    r["blockers"] = []
    for name, e in (blockers or {"wifi": energy_uJ / 2}).items():
        b = copy.deepcopy(b0)
        b["name"] = name
        b["energy_uJ"] = round(e * wakeups * f * (1 + rng.gauss(0, noise)), 3)
        b["activations"] = wakeups
        r["blockers"].append(b)
    r["findings"] = []
    if leak:
        r["findings"].append({"kind": "leak", "blocker": leak, "t_ns": 5_000_000_000,
                              "detail": "still active at the end, held 6 s (leak_s 5 s)"})
    prov = r["capture"]["provenance"]
    prov["git_sha"] = git_sha
    prov["scenario_sha256"] = scenario_sha
    r["capture"]["path"] = f"/synthetic/{git_sha}/{rng.getrandbits(32):08x}"
    return r


def write_reports(reports: list[dict], d: Path) -> list[Path]:
    """Each report as d/NNN.json; their paths."""
    d.mkdir(parents=True, exist_ok=True)
    out = []
    for i, r in enumerate(reports):
        p = d / f"{i:03d}.json"
        p.write_text(json.dumps(r))
        out.append(p)
    return out
