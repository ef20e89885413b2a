#!/usr/bin/python3
"""The Python half of the search benchmarks: python3-optuna's samplers on objectives.py.

  optuna_bench.py check N
  optuna_bench.py efficiency SEEDS TRIALS [OBJECTIVE...]
  optuna_bench.py overhead SIZES REPS
Output is CSV in the same shape as search_bench's.
"""
import os
import statistics
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import objectives as objs  # noqa: E402

BUDGETS = (10, 20, 50, 100)


def _optuna():
    import optuna
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.filterwarnings("ignore")
    return optuna


def suggest(trial, space):
    p = {}
    for name, d in space:
        if d[0] == "cat":
            p[name] = float(d[1].index(trial.suggest_categorical(name, d[1])))
        elif d[0] == "int":
            p[name] = float(trial.suggest_int(name, d[1], d[2], step=d[4], log=d[3]))
        else:
            p[name] = float(trial.suggest_float(name, d[1], d[2], log=d[3]))
    return p


def make_sampler(optuna, method, seed):
    if method == "optuna_random":
        return optuna.samplers.RandomSampler(seed=seed)
    return optuna.samplers.TPESampler(seed=seed, multivariate=(method == "optuna_tpe_mv"))


def efficiency(seeds, trials, names):
    optuna = _optuna()
    for name, space, f in objs.OBJECTIVES:
        if names and name not in names:
            continue
        for method in ("optuna_random", "optuna_tpe", "optuna_tpe_mv"):
            for seed in range(seeds):
                study = optuna.create_study(sampler=make_sampler(optuna, method, seed))
                best = None
                line = [name, method, str(seed)]
                for i in range(trials):
                    trial = study.ask()
                    v = f(suggest(trial, space))
                    study.tell(trial, v)
                    best = v if best is None or v < best else best
                    if i + 1 in BUDGETS:
                        line.append(repr(best))
                print(",".join(line), flush=True)


def overhead(sizes, reps):
    optuna = _optuna()
    import random
    name, space, f = objs.OBJECTIVES[0]
    dists = {}
    for pname, d in space:
        if d[0] == "cat":
            dists[pname] = optuna.distributions.CategoricalDistribution(d[1])
        elif d[0] == "int":
            dists[pname] = optuna.distributions.IntDistribution(d[1], d[2], log=d[3], step=d[4])
        else:
            dists[pname] = optuna.distributions.FloatDistribution(d[1], d[2], log=d[3])
    for method in ("optuna_tpe", "optuna_tpe_mv"):
        for n in sizes:
            rng = random.Random(1)
            study = optuna.create_study(sampler=make_sampler(optuna, method, 7))
            history = []
            for _ in range(n):
                params, internal = {}, {}
                for pname, d in space:
                    dist = dists[pname]
                    u = rng.random()
                    internal[pname] = objs.point_value(d, u)
                    params[pname] = dist.to_external_repr(internal[pname])
                history.append(optuna.trial.create_trial(params=params, distributions=dists,
                                                         value=f(internal)))
            study.add_trials(history)
            ms = []
            for _ in range(reps):
                # CPU time, as search_bench measures: the machine may be shared and loaded.
                start = time.process_time()
                trial = study.ask()
                p = suggest(trial, space)
                ms.append((time.process_time() - start) * 1000.0)
                study.tell(trial, f(p))
            print(f"{method},{n},{statistics.median(ms):.6f}", flush=True)


def main(argv):
    if len(argv) >= 2 and argv[1] == "check":
        for name, v in objs.check_points(int(argv[2])):
            print(f"{name},{v!r}")
    elif len(argv) >= 4 and argv[1] == "efficiency":
        efficiency(int(argv[2]), int(argv[3]), set(argv[4:]))
    elif len(argv) == 4 and argv[1] == "overhead":
        overhead([int(x) for x in argv[2].split(",")], int(argv[3]))
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
