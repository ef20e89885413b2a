#!/usr/bin/env python3
"""Multi-objective TPE against python3-optuna's on ZDT1 (see motpe_bench.cpp): median front
hypervolume over SEEDS seeds at each trial count, ours (MOTPE, random) next to Optuna 3.1's
TPESampler on the same problem, in the same run.

    bench/search/motpe_vs_optuna.py --build build [--seeds 20] [--trials 30 60 100]
"""
import argparse
import csv
import io
import math
import statistics
import subprocess
import warnings

import numpy as np
import optuna
from optuna._hypervolume import WFG

BEST = 1.1 * 11.0 - 1.0 / 3.0  # the whole front x in [0, 1], y = 0, against (1.1, 11)


def zdt1(trial):
    x = trial.suggest_float("x", 0.0, 1.0)
    g = 1.0 + 9.0 * trial.suggest_float("y", 0.0, 1.0)
    return x, g * (1.0 - math.sqrt(x / g))


def optuna_volume(seed, n_trials):
    study = optuna.create_study(directions=["minimize", "minimize"],
                                sampler=optuna.samplers.TPESampler(seed=seed))
    study.optimize(zdt1, n_trials=n_trials)
    points = np.array([t.values for t in study.best_trials])
    return WFG().compute(points, np.array([1.1, 11.0]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--trials", type=int, nargs="+", default=[30, 60, 100])
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore")
    out = subprocess.run([f"{args.build}/bin/motpe_bench", str(args.seeds)] +
                         [str(n) for n in args.trials], check=True, capture_output=True,
                         text=True).stdout
    ours = {}
    for row in csv.DictReader(io.StringIO(out)):
        ours.setdefault((row["method"], int(row["trials"])), []).append(float(row["hypervolume"]))
    print(f"median hypervolume of the front, ZDT1, {args.seeds} seeds (best possible {BEST:.3f})")
    print("| trials | our MOTPE | Optuna TPE (MOTPE) | random |")
    print("|---|---|---|---|")
    for n in args.trials:
        theirs = [optuna_volume(seed, n) for seed in range(1, args.seeds + 1)]
        print(f"| {n} | {statistics.median(ours[('motpe', n)]):.3f} | "
              f"{statistics.median(theirs):.3f} | {statistics.median(ours[('random', n)]):.3f} |")


if __name__ == "__main__":
    main()
