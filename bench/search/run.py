#!/usr/bin/python3
"""Search benchmarks, tune vs python3-optuna, side by side in one run.

  bench/search/run.py [--build DIR] [--quick] [--jobs N] [--skip-efficiency] [--skip-overhead]

1. Checks that objectives.h and objectives.py agree on 200 points per objective.
2. Sample efficiency: 8 objectives x 20 seeds (5 with --quick) x 100 trials for our random,
   our TPE (independent, multivariate), our GP and Optuna's RandomSampler and TPESampler
   (default, multivariate). Regret = best-so-far - best known value (a long search in
   search_bench plus every value any run found). Prints median [IQR] at 10, 20, 50, 100 trials,
   per budget whether our TPE's median <= Optuna TPE's, and the ratio of our GP's median regret
   to Optuna TPE's at 20, 50 and 100 trials (the GP's target: <= 0.5x on at least 6 of 8
   objectives at 50 trials, never above 1.0x at 50 or 100).
3. Overhead: median CPU ms per suggestion (thread CPU time here, process time in Python, so a
   loaded machine does not inflate it) of all 8 parameters with 100 / 1000 / 5000 COMPLETE
   trials in the history, ours vs Optuna's in-memory TPE, as a ratio, and our GP's.
Build first: cmake --build <build> --target search_bench.
"""
import argparse
import collections
import os
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PY = "/usr/bin/python3"
BUDGETS = (10, 20, 50, 100)
METHODS = ("ours_random", "ours_tpe", "ours_tpe_mv", "ours_gp", "optuna_random", "optuna_tpe",
           "optuna_tpe_mv")


def run(argv):
    out = subprocess.run(argv, check=True, capture_output=True, text=True)
    return [line.split(",") for line in out.stdout.splitlines() if line.strip()]


def quantiles(values):
    v = sorted(values)
    q = statistics.quantiles(v, n=4, method="inclusive") if len(v) > 1 else [v[0]] * 3
    return q[1], q[0], q[2]


def check(bench):
    ours = run([bench, "check", "200"])
    theirs = run([PY, os.path.join(HERE, "optuna_bench.py"), "check", "200"])
    if len(ours) != len(theirs):
        sys.exit("objectives.h and objectives.py define different objectives")
    for (n1, v1), (n2, v2) in zip(ours, theirs):
        a, b = float(v1), float(v2)
        if n1 != n2 or abs(a - b) > 1e-9 * max(1.0, abs(b)):
            sys.exit(f"objective mismatch: {n1}={a} (C++) vs {n2}={b} (Python)")
    print(f"objectives agree: {len(ours)} points, C++ vs Python")


def efficiency(bench, seeds, jobs, optuna_csv):
    fstar = {n: float(v) for n, v in run([bench, "fstar"])}
    names = list(fstar)
    rows = run([bench, "efficiency", str(seeds), "100"])
    if optuna_csv and os.path.exists(optuna_csv):
        # Optuna's runs do not depend on our code: reuse them while iterating on ours.
        with open(optuna_csv) as f:
            theirs = [line.strip().split(",") for line in f if line.strip()]
        print(f"Optuna rows reused from {optuna_csv}")
    else:
        # Optuna is slow: one process per objective, `jobs` at a time.
        theirs = []
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            parts = pool.map(lambda n: run([PY, os.path.join(HERE, "optuna_bench.py"), "efficiency",
                                            str(seeds), "100", n]), names)
            for part in parts:
                theirs += part
        if optuna_csv:
            with open(optuna_csv, "w") as f:
                f.writelines(",".join(r) + "\n" for r in theirs)
    rows += [r for r in theirs if int(r[2]) < seeds]
    best = collections.defaultdict(dict)  # (objective, method) -> seed -> [b10, b20, b50, b100]
    for name, method, seed, *vals in rows:
        best[(name, method)][int(seed)] = [float(v) for v in vals]
        fstar[name] = min(fstar[name], *map(float, vals))
    wins = collections.Counter()
    ratios = {}  # objective -> GP / Optuna TPE median regret at 20, 50, 100
    print(f"\nSample efficiency: regret = best-so-far - best known, median [IQR] over {seeds} seeds")
    for name in names:
        print(f"\n{name} (best known {fstar[name]:.6g})")
        print(f"  {'method':<15}" + "".join(f"{'@' + str(b):>24}" for b in BUDGETS))
        med = {}
        for method in METHODS:
            runs = best[(name, method)]
            cells = []
            for i, _ in enumerate(BUDGETS):
                m, lo, hi = quantiles([r[i] - fstar[name] for r in runs.values()])
                med[(method, i)] = m
                cells.append(f"{m:9.4g} [{lo:.3g}, {hi:.3g}]")
            print(f"  {method:<15}" + "".join(f"{c:>24}" for c in cells))
        verdict = []
        for i, b in enumerate(BUDGETS[1:], start=1):
            ok = med[("ours_tpe", i)] <= med[("optuna_tpe", i)] + 1e-12
            wins[b] += ok
            verdict.append(f"@{b}: {'ok' if ok else 'WORSE'} "
                           f"({med[('ours_tpe', i)]:.4g} vs {med[('optuna_tpe', i)]:.4g})")
        print("  ours_tpe median <= optuna_tpe median: " + ", ".join(verdict))
        ratios[name] = [med[("ours_gp", i)] / med[("optuna_tpe", i)] if med[("optuna_tpe", i)] > 0
                        else (1.0 if med[("ours_gp", i)] <= 0 else float("inf")) for i in (1, 2, 3)]
    print("\nObjectives where our TPE's median regret <= Optuna TPE's: " +
          ", ".join(f"@{b}: {wins[b]}/{len(names)}" for b in BUDGETS[1:]))
    print("\nGP median regret / Optuna TPE median regret (lower is better)")
    print(f"  {'objective':<18}" + "".join(f"{'@' + str(b):>8}" for b in BUDGETS[1:]))
    for name in names:
        print(f"  {name:<18}" + "".join(f"{r:>7.2f}x" for r in ratios[name]))
    half = sum(r[1] <= 0.5 for r in ratios.values())
    above = sum(r[1] > 1.0 for r in ratios.values()) + sum(r[2] > 1.0 for r in ratios.values())
    print(f"  <= 0.5x at 50 trials: {half}/{len(names)}; above 1.0x at 50 or 100: {above}")


def overhead(bench, sizes, reps_ours, reps_optuna):
    ours = {(m, int(n)): float(v) for m, n, v in run([bench, "overhead", sizes, str(reps_ours)])}
    theirs = {(m, int(n)): float(v) for m, n, v in
              run([PY, os.path.join(HERE, "optuna_bench.py"), "overhead", sizes, str(reps_optuna)])}
    print("\nOverhead: median CPU ms per suggestion of 8 parameters (history of N COMPLETE trials)")
    print("  GP (ours, no Optuna counterpart in python3-optuna 3.1): " +
          ", ".join(f"N={n}: {ours[('ours_gp', int(n))]:.2f} ms" for n in sizes.split(",")))
    print(f"  {'N':>6} {'mode':<13} {'tune ms':>10} {'optuna ms':>11} {'ratio':>8}")
    for n in [int(x) for x in sizes.split(",")]:
        for mode, a, b in (("independent", "ours_tpe", "optuna_tpe"),
                           ("multivariate", "ours_tpe_mv", "optuna_tpe_mv")):
            o, t = ours[(a, n)], theirs[(b, n)]
            print(f"  {n:>6} {mode:<13} {o:>10.3f} {t:>11.2f} {t / o:>7.1f}x")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build-search"))
    ap.add_argument("--quick", action="store_true", help="5 seeds, overhead at 100 and 1000 only")
    ap.add_argument("--jobs", type=int, default=2, help="Optuna processes at a time")
    ap.add_argument("--skip-efficiency", action="store_true")
    ap.add_argument("--skip-overhead", action="store_true")
    ap.add_argument("--optuna-csv", help="cache of Optuna's efficiency rows: read if present, else written")
    args = ap.parse_args()
    bench = os.path.join(args.build, "bin", "search_bench")
    if not os.access(bench, os.X_OK):
        sys.exit(f"{bench} not found: cmake --build {args.build} --target search_bench")
    check(bench)
    if not args.skip_efficiency:
        efficiency(bench, 5 if args.quick else 20, args.jobs, args.optuna_csv)
    if not args.skip_overhead:
        if args.quick:
            overhead(bench, "100,1000", 31, 5)
        else:
            overhead(bench, "100,1000,5000", 51, 7)


if __name__ == "__main__":
    main()
