#!/usr/bin/env python3
"""Whether tune's time per trial grows with the study's length (issue 27 point 1).

Runs `tune --trials N` once on a trivial study (sh -c 'echo v: {x}', regex objective, SQLite,
TPE, probes on as they are by default) and prints, per block of trials, the time per trial: from
one trial's start to the next one's (datetime_start), and of that the part between its start and
its end (datetime_complete), which holds the job (a few ms) and tune's work once the trial is
created (the probes' prediction included). The job's own time does not change with the study, so a
per-trial pass over the whole history shows as a number that grows from block to block.

  bench/tuner/per_trial_growth.py build/bin/tune [--trials 2000] [--block 500] [--no-probes]
"""
import argparse
import datetime
import os
import sqlite3
import subprocess
import sys
import tempfile
import time


def parse_time(text):
    return datetime.datetime.fromisoformat(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tune")
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--block", type=int, default=500)
    ap.add_argument("--no-probes", action="store_true")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, "study.db")
        study = os.path.join(d, "study.yaml")
        with open(study, "w") as f:
            f.write(
                "name: growth\n"
                f"output: {d}/out\n"
                f"storage: {db}\n"
                "command: [sh, -c, 'echo v: {x}']\n"
                "objective: {regex: 'v: ([0-9.]+)'}\ndirection: maximize\n"
                "sampler: {type: tpe, seed: 1}\n"
                "params:\n  x: {type: float, low: 1, high: 10}\n"
                + ("probes: {enabled: false}\n" if args.no_probes else "")
            )
        t0 = time.monotonic()
        r = subprocess.run([args.tune, "--quiet", "--trials", str(args.trials), study],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.monotonic() - t0
        if r.returncode != 0:
            sys.exit(f"tune exited {r.returncode}: {r.stderr.strip()}")
        con = sqlite3.connect(db)
        rows = con.execute(
            "SELECT number, datetime_start, datetime_complete FROM trials ORDER BY number").fetchall()
        con.close()

    starts = [parse_time(s) for _, s, _ in rows]
    runs = [(parse_time(c) - parse_time(s)).total_seconds() for _, s, c in rows]
    print(f"{len(rows)} trials in {wall:.1f} s, probes {'off' if args.no_probes else 'on'}")
    print(f"{'trials':>12} {'ms/trial':>9} {'of it start..complete':>22}")
    for lo in range(0, len(rows) - 1, args.block):
        hi = min(lo + args.block, len(rows) - 1)
        if hi <= lo:
            break
        span = (starts[hi] - starts[lo]).total_seconds()
        ran = sum(runs[lo:hi])
        print(f"{lo:>5}-{hi - 1:<6} {1000 * span / (hi - lo):>9.2f} {1000 * ran / (hi - lo):>22.2f}")


if __name__ == "__main__":
    main()
