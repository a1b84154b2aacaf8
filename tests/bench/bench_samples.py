#!/usr/bin/python3
"""bench_samples.py - capture format version 2 read throughput next to its references.

    /usr/bin/python3 tests/bench/bench_samples.py [--samples 12600000]
                                                  [--batch 4096] [--repeats 3]
                                                  [--dir DIR]

Builds tests/bench/bench_samples.c against the release libsbrig-core.a
(make -C host first) and runs it on one core: it writes SAMPLES samples
(default 12.6 M, an hour at 3.5 kS/s) into a capture of format version 2
(samples.bin) and one of version 1 (samples.tsv) with libsbrig's writer,
then reads them back with libsbrig's reader. Printed, from that one run:

  * the table of bench_samples (what, format, samples, CPU s, wall s,
    M samples/s; best of REPEATS passes, the v1 pass once: it is slow);
  * the ratios of the v2 batch reader (sbrig_capread_samples(), what
    `sbrig analyze` and `sbrig export` use) to the references it competes
    with, measured on the same samples in the same run:
      - the version 1 reader on samples.tsv (what version 2 replaces),
      - a plain read() of samples.bin in chunks of one batch with every
        64-bit word added up: the floor of any reader of the file,
      - and, for scale, the v2 reader one sample per call (next_sample()).

    ratio v2 batch/v1 samples.tsv: 18.51x (209.2 vs 11.3 M samples/s)

The files are in the page cache when read (just written): the figures are
CPU cost per sample, not disk speed. They are written to DIR (default: a
temporary directory under build/, or under DIR), removed afterwards.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RELEASE = REPO / "build" / "host" / "release"


def build() -> Path:
    r = subprocess.run(["make", "-C", str(REPO / "host"), "-j2"],
                       capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"make -C host failed:\n{r.stdout[-3000:]}"
                           f"\n{r.stderr[-3000:]}")
    exe = RELEASE / "bench" / "bench_samples"
    exe.parent.mkdir(parents=True, exist_ok=True)
    cmd = ["cc", "-std=c11", "-O2", "-D_GNU_SOURCE", "-Wall", "-Wextra",
           "-Werror", "-I", str(REPO / "host" / "include"), "-o", str(exe),
           str(REPO / "tests" / "bench" / "bench_samples.c"),
           str(RELEASE / "libsbrig-core.a"), "-lmd"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"{' '.join(cmd)}:\n{r.stderr[-3000:]}")
    return exe


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=12_600_000,
                    help="samples (default 12.6 M: an hour at 3.5 kS/s)")
    ap.add_argument("--batch", type=int, default=4096,
                    help="samples per sbrig_capread_samples() call")
    ap.add_argument("--repeats", type=int, default=3,
                    help="read passes, the best is kept")
    ap.add_argument("--dir", type=Path,
                    help="where to write the captures (default: build/)")
    a = ap.parse_args()

    exe = build()
    with tempfile.TemporaryDirectory(prefix="bench-samples-",
                                     dir=a.dir or REPO / "build") as tmp:
        # bench_samples removes its captures (DIR/v1, DIR/v2) and DIR
        p = subprocess.run(["taskset", "-c", "0", str(exe), "-n",
                            str(a.samples), "-b", str(a.batch), "-r",
                            str(a.repeats), str(Path(tmp) / "caps")],
                           capture_output=True, text=True)
    sys.stdout.write(p.stdout)
    if p.returncode:
        sys.stderr.write(p.stderr)
        return 1

    # what -> M samples/s (the last column of the "read" lines)
    speed = {}
    for line in p.stdout.splitlines():
        f = line.split("\t")
        if f[0] == "read":
            speed[f[1]] = float(f[5])
    v2 = speed[f"v2 samples.bin, batch {a.batch}"]
    refs = [
        ("v1 samples.tsv", f"v1 samples.tsv, batch {a.batch}"),
        ("plain read() samples.bin", next(k for k in speed
                                          if k.startswith("plain read()"))),
        ("v2 next_sample()", "v2 samples.bin, next_sample()"),
    ]
    print()
    print(f"v2 batch reader (batch {a.batch}): {v2:.1f} M samples/s "
          f"({v2 * 32:.0f} MB/s of samples.bin)")
    for name, key in refs:
        r = speed[key]
        print(f"ratio v2 batch/{name}: {v2 / r:.2f}x "
              f"({v2:.1f} vs {r:.1f} M samples/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
