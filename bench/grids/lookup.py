#!/usr/bin/python3
"""The command of a replay study (replay.py): prints a recorded figure of the point it is given.

  lookup.py --grid=FILE --seed=S --trial=N NAME=VALUE ...

Prints `value: V`, V one of the recorded runs of the point the NAME=VALUE arguments name (a
parameter left out is null, as tune drops an argument whose value is null). Which run is a
function of the seed and the trial number, so a re-run of a point may see another of its
measurements, as a real re-run would. A point whose every run failed fails (exit 1), as the job
did; a point the grid does not hold is bad input (exit 2).
"""
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grids  # noqa: E402


def parse_point(args, axes):
    """{name: choice} from NAME=VALUE texts as tune renders them into the command."""
    by_name = dict(axes)
    point = {n: None for n, _ in axes}
    for arg in args:
        name, sep, text = arg.partition("=")
        if not sep or name not in by_name:
            raise grids.InputError(f"argument '{arg}': expected NAME=VALUE with NAME one of "
                                   f"{', '.join(by_name)}")
        matches = [c for c in by_name[name] if c is not None and str(c) == text]
        if not matches:
            raise grids.InputError(f"argument '{arg}': not one of {json.dumps(by_name[name])}")
        point[name] = matches[0]
    return point


def replayed(runs, job, seed, trial):
    """The run a trial of seed `seed` sees: the same for the same (job, seed, trial)."""
    return runs[random.Random(f"{job}:{seed}:{trial}").randrange(len(runs))]


def main():
    opts, rest = {}, []
    for arg in sys.argv[1:]:
        name, sep, value = arg.partition("=")
        if name in ("--grid", "--seed", "--trial") and sep:
            opts[name[2:]] = value
        else:
            rest.append(arg)
    try:
        missing = [k for k in ("grid", "seed", "trial") if k not in opts]
        if missing:
            raise grids.InputError(f"missing --{missing[0]}=... (usage: lookup.py --grid=FILE "
                                   f"--seed=S --trial=N NAME=VALUE ...)")
        grid = grids.Grid(opts["grid"])
        point = parse_point(rest, grid.axes)
        runs = grid.runs.get(grids.key(point, grid.axes))
        if runs is None:
            raise grids.InputError(f"{opts['grid']}: no point {grids.key(point, grid.axes)}")
    except grids.InputError as e:
        grids.fail(str(e))
    if not runs:
        grids.fail(f"every recorded run of {grids.key(point, grid.axes)} failed", 1)
    print(f"value: {replayed(runs, grid.job, opts['seed'], int(opts['trial']))!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
