#!/usr/bin/env python3
"""Whether tune's time per trial grows with the study's length (issue 27, benchmark (a)).

Runs `tune --trials N` on a trivial study (sh -c 'echo v: {x}', regex objective, SQLite, probes
on as they are by default) once per sampler, and prints, per block of trials, the time per trial:
from one trial's start to the next one's (datetime_start), which holds the job (a few ms) and all
that tune adds around it. The job's own time does not change with the study, so a per-trial pass
over the whole history shows as a number that grows from block to block; the last line compares
the last block with the first. Then, with --optuna-trials, python3-optuna 3.1 runs the same
objective (the same command through subprocess, the same regex, TPE, SQLite) in the same run, for
the ratio; it is given --optuna-limit seconds, and if it has not finished by then its time for
all its trials is extrapolated from the blocks it ran (said so in the output).

  bench/tuner/per_trial_growth.py build/bin/tune [--trials 50000] [--block 1000]
      [--samplers tpe,default] [--optuna-trials 10000] [--optuna-limit 3600] [--no-probes]
"""
import argparse
import datetime
import os
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time


def parse_time(text):
    return datetime.datetime.fromisoformat(text)


def load_average():
    with open('/proc/loadavg') as f:
        return f.read().split()[0]


def block_rates(starts, block):
    """ms per trial per block, from each block's first start to the next block's first start."""
    out = []
    for lo in range(0, len(starts) - 1, block):
        hi = min(lo + block, len(starts) - 1)
        if hi <= lo:
            break
        out.append((lo, hi - 1, 1000 * (starts[hi] - starts[lo]) / (hi - lo)))
    return out


def run_tune(tune, trials, sampler, probes, work):
    d = os.path.join(work, sampler)
    os.makedirs(d)
    db = os.path.join(d, "study.db")
    study = os.path.join(d, "study.yaml")
    sampler_line = "sampler: {type: tpe, seed: 1}\n" if sampler == "tpe" else \
        ("" if sampler == "default" else f"sampler: {{type: {sampler}, seed: 1}}\n")
    with open(study, "w") as f:
        f.write(
            "name: growth\n"
            f"output: {d}/out\n"
            f"storage: {db}\n"
            "command: [sh, -c, 'echo v: {x}']\n"
            "objective: {regex: 'v: ([0-9.]+)'}\ndirection: maximize\n"
            + sampler_line +
            "params:\n  x: {type: float, low: 1, high: 10}\n"
            + ("" if probes else "probes: {enabled: false}\n")
        )
    load0 = load_average()
    t0 = time.monotonic()
    r = subprocess.run([tune, "--quiet", "--trials", str(trials), study],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        sys.exit(f"tune ({sampler}) exited {r.returncode}: {r.stderr.strip()}")
    con = sqlite3.connect(db)
    rows = con.execute("SELECT number, datetime_start FROM trials ORDER BY number").fetchall()
    con.close()
    starts = [parse_time(s).timestamp() for _, s in rows]
    return {"wall": wall, "starts": starts, "load": (load0, load_average())}


# The same objective in Optuna: the command run through subprocess, its output read by the regex.
OPTUNA_SCRIPT = textwrap.dedent("""
    import optuna, re, subprocess, sys, time
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage, trials, limit, progress = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    pattern = re.compile(r'v: ([0-9.]+)')
    def objective(trial):
        x = trial.suggest_float('x', 1, 10)
        out = subprocess.run(['sh', '-c', f'echo v: {x}'], capture_output=True, text=True).stdout
        return float(pattern.search(out).group(1))
    study = optuna.create_study(study_name='growth', storage=storage, direction='maximize',
                                sampler=optuna.samplers.TPESampler(seed=1))
    t0 = time.monotonic()
    with open(progress, 'w') as f:
        for n in range(trials):
            if time.monotonic() - t0 > limit:
                break
            study.optimize(objective, n_trials=1)
            f.write(f'{n + 1} {time.monotonic() - t0:.3f}\\n')
            f.flush()
""")


def run_optuna(trials, limit, block, work):
    d = os.path.join(work, "optuna")
    os.makedirs(d)
    progress = os.path.join(d, "progress")
    storage = f"sqlite:///{d}/study.db"
    load0 = load_average()
    r = subprocess.run(["/usr/bin/python3", "-c", OPTUNA_SCRIPT, storage, str(trials),
                        str(limit), progress], stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"optuna exited {r.returncode}: {r.stderr.strip()[-2000:]}")
    with open(progress) as f:
        done = [(int(n), float(t)) for n, t in (line.split() for line in f)]
    times = [0.0] + [t for _, t in done]  # trial k starts at times[k]
    rates = block_rates(times, block)
    ran = done[-1][0] if done else 0
    elapsed = done[-1][1] if done else 0.0
    extrapolated = None
    if ran < trials and len(rates) >= 2:
        # Its cost per trial grows about linearly with the study (TPE over every trial): fit the
        # blocks it ran and add up the fit over the trials it did not run.
        xs = [(lo + hi) / 2 for lo, hi, _ in rates]
        ys = [ms for _, _, ms in rates]
        n = len(xs)
        mx, my = sum(xs) / n, sum(ys) / n
        sxx = sum((x - mx) ** 2 for x in xs)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
        rest = sum(my + slope * (k - mx) for k in range(ran, trials)) / 1000
        extrapolated = elapsed + rest
    return {"ran": ran, "elapsed": elapsed, "rates": rates, "extrapolated": extrapolated,
            "times": times, "load": (load0, load_average())}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tune")
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--block", type=int, default=500)
    ap.add_argument("--samplers", default="tpe", help="comma-separated: tpe, default, random")
    ap.add_argument("--optuna-trials", type=int, default=0)
    ap.add_argument("--optuna-limit", type=float, default=3600)
    ap.add_argument("--no-probes", action="store_true")
    args = ap.parse_args()
    samplers = args.samplers.split(",")

    with tempfile.TemporaryDirectory() as work:
        results = {s: run_tune(args.tune, args.trials, s, not args.no_probes, work)
                   for s in samplers}
        optuna = run_optuna(args.optuna_trials, args.optuna_limit, args.block, work) \
            if args.optuna_trials else None

    print(f"{args.trials} trials of sh -c 'echo v: {{x}}' (regex objective, SQLite, probes "
          f"{'off' if args.no_probes else 'on'}), one tune process per sampler")
    print(f"{'trials':>13} " + " ".join(f"{s + ' ms/trial':>16}" for s in samplers))
    rates = {s: block_rates(r["starts"], args.block) for s, r in results.items()}
    for i, (lo, hi, _) in enumerate(rates[samplers[0]]):
        print(f"{lo:>6}-{hi:<6} " + " ".join(f"{rates[s][i][2]:>16.2f}" for s in samplers))
    print(f"{'last/first':>13} " + " ".join(
        f"{rates[s][-1][2] / rates[s][0][2]:>15.2f}x" for s in samplers))
    print(f"{'whole study':>13} " + " ".join(f"{results[s]['wall']:>14.0f} s" for s in samplers))
    print(f"{'load average':>13} " + " ".join(
        f"{results[s]['load'][0] + ' -> ' + results[s]['load'][1]:>16}" for s in samplers))
    if optuna:
        r = optuna["rates"]
        print(f"\npython3-optuna 3.1 (TPESampler, SQLite, the same command and regex), "
              f"load average {optuna['load'][0]} -> {optuna['load'][1]}:")
        if r:
            print(f"  ms/trial: {r[0][2]:.1f} at trials {r[0][0]}-{r[0][1]}, "
                  f"{r[-1][2]:.1f} at {r[-1][0]}-{r[-1][1]}")
        if optuna["ran"] >= args.optuna_trials:
            total = optuna["elapsed"]
            print(f"  {optuna['ran']} trials in {total:.0f} s (measured)")
        else:
            total = optuna["extrapolated"]
            print(f"  {optuna['ran']} trials in {optuna['elapsed']:.0f} s, stopped at "
                  f"--optuna-limit; {args.optuna_trials} trials extrapolated to "
                  f"{total:.0f} s (a line fitted to its ms/trial per block)")
        # Like for like: the same number of trials on each side (each side's first k).
        times = optuna["times"]
        for s in samplers:
            starts = results[s]["starts"]
            k = min(len(starts) - 1, len(times) - 1)
            ours = starts[k] - starts[0]
            print(f"  first {k} trials: tune ({s}) {ours:.0f} s, Optuna {times[k]:.0f} s: "
                  f"{times[k] / ours:.1f}x")


if __name__ == "__main__":
    main()
