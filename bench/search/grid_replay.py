#!/usr/bin/python3
"""A trial command that replays a measured grid (see trainer_grid.py).

  grid_replay.py --table=FILE --study=NAME --trial=N [--param=value ...]

Prints `time: T`, T one of the three recorded times of the point the parameters name (a
parameter left out is null, as tune drops an argument whose value is null). Which repeat is a
function of the study name (it carries the seed) and the trial number, so a re-run of the same
point may see a different measurement, as a real re-run would.
"""
import json
import random
import sys


# The grid's parameters (trainer_grid.GRID's names).
NAMES = ("iterator_workers", "omp_threads", "blas_threads", "bind_to", "allreduce", "grad_dtype")


def key(params):
    """The point's key: its parameters as sorted JSON, null for an absent one."""
    return json.dumps({n: params.get(n) for n in NAMES}, sort_keys=True)


def replayed(table, point, study, trial):
    times = table[point]
    return times[random.Random(f"{study}:{trial}").randrange(len(times))]


def parse_value(text):
    try:
        return int(text)
    except ValueError:
        return text


def main():
    opts, params = {}, {}
    for arg in sys.argv[1:]:
        name, _, value = arg.removeprefix("--").partition("=")
        (opts if name in ("table", "study", "trial") else params)[name.replace("-", "_")] = value
    with open(opts["table"]) as f:
        table = json.load(f)
    point = key({n: parse_value(v) for n, v in params.items()})
    print(f"time: {replayed(table, point, opts['study'], int(opts['trial']))!r}")


if __name__ == "__main__":
    main()
