"""Wall, CPU and peak RSS of one command, as GNU time (Debian's "time")
counts them: the benchmarks run their subject under /usr/bin/time rather
than fork it from this (large) Python process, whose pages would be
counted in the child's peak."""

from __future__ import annotations

import subprocess


def measure(cmd: list[str], ok: tuple[int, ...] = (0,)) -> dict:
    """Run @cmd alone; exit with its stderr unless its status is in @ok."""
    r = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", *cmd], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    if r.returncode not in ok:
        raise SystemExit(f"{cmd[0]} failed ({r.returncode}): {r.stderr[-2000:]}")
    wall, user, sys_, rss = r.stderr.strip().splitlines()[-1].split()
    return {"wall_s": float(wall), "cpu_s": float(user) + float(sys_), "rss_MB": int(rss) / 1024}
