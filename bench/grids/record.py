#!/usr/bin/python3
"""Records a job's full grid through tune itself, in interleaved rounds, as a grid file.

  /usr/bin/python3 bench/grids/record.py JOB [--rounds 3] [--out bench/grids/JOB/grid.json]
  /usr/bin/python3 bench/grids/record.py JOB --merge GRID.json GRID.json ... [--out FILE]

JOB is a folder of bench/grids with a study.yaml (trainer, hpcc, ddp, elk, lammps, numpy,
torchconv, ddpmlp). The
grid is the product of the study's parameter domains. Each round is one study, `grid-JOB-pP-rR`,
whose `enqueue:` entries are every point of the grid: the command as run (the study's first
entry) first, as `rules: all` needs it, then the others shuffled with seed R, so every point runs
once per round and the rounds interleave. tune launches each point exactly as it launches a
trial, probes on, and computes the rule baselines (labels on the grid's own points). The values,
the rule baselines, the baseline's `probe_verdict` and every point's verdict (flagged or not, the
ranks' own threads' and their helpers' wait shares) are read from the study's database (Optuna's
schema, sqlite3); the round's `verdict_quality` (the verdicts against the job's own figure) from
`tune report --format json` on the round's study. Run it on a quiet machine: tune's load check
re-runs a point measured under load (`--no-load-check` turns it off, for a quick try on a busy
machine). The work folder (--work, default tune-out/grids/JOB) keeps the database: an
interrupted recording resumes.

--merge records nothing: it joins grid files of the job recorded on the same machine (the same
axes, direction and host), each point's runs one after the other, into one grid of all their
rounds (a job whose runs vary by more than 5% needs more than 3 for its best to hold still); the
newest file's rule baselines and study stand, `sessions` lists each file's date, commit,
rounds and recording time, and the points' verdicts and the rounds' `verdict_quality` follow their
runs (null for the rounds of a file recorded before they were).

Writes the grid file (see bench/grids/grids.py): the machine (`tune probe`, lscpu, lstopo),
the date, tune's commit, every point's runs, median and verdicts, the rule baselines, the
baseline's verdicts, each round's verdict quality and the direction. Exit status: 0 done, 1 a
run of tune failed, 2 bad input.
"""
import argparse
import datetime
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grids  # noqa: E402

# The order in which tune enqueues the rule baselines (tuner/study/rules.cpp rule_names).
RULE_ORDER = ["torchrun", "lightning", "lightning_workers", "horovodrun", "openmpi", "cores_per_rank"]
# Seconds one point takes here on a quiet machine (launch, run, probes, tune's own work), for
# the estimate printed before recording; a job not listed is taken at 8 s.
SECONDS_PER_RUN = {"trainer": 3.5, "hpcc": 5.0, "ddp": 8.0, "lammps": 1.5, "elk": 3.0,
                   "numpy": 5.0, "torchconv": 7.0, "ddpmlp": 7.0}


def round_study(spec, job_dir, name, entries, work, load_check):
    """The study file of one round: the job's study with every point enqueued, paths made
    absolute (the round's file lives in the work folder), failures never stopping it."""
    s = dict(spec)
    s["name"] = name
    s["enqueue"] = entries
    s["output"] = os.path.join(work, name)
    s["storage"] = os.path.join(work, "record.db")
    s["max_failures"] = 0
    if not load_check:
        s["load"] = "off"

    def absolute(v):
        if isinstance(v, str):
            return v.replace("{study_dir}", job_dir)
        if isinstance(v, list):
            return [absolute(x) for x in v]
        if isinstance(v, dict):
            return {k: absolute(x) for k, x in v.items()}
        return v

    for k in ("command", "env", "launch", "workdir"):
        if k in s:
            s[k] = absolute(s[k])
    files = []
    for f in s.get("files", []) or []:
        f = dict(f)
        for mode in ("copy", "link", "template", "src"):
            if mode in f and not os.path.isabs(f[mode]):
                f[mode] = os.path.join(job_dir, f[mode])
        files.append(f)
    if files:
        s["files"] = files
    return s


def run_round(tune, path, db_path, name, n_entries):
    """Runs the round's study until no enqueued trial waits (a rule baseline that is no grid
    point, or a re-run of a point measured under load, adds one)."""
    for _ in range(6):
        trials = grids.read_study(db_path, name)
        todo = n_entries if trials is None else sum(t["state"] == "WAITING" for t in trials)
        if todo == 0:
            return
        with open(os.path.splitext(path)[0] + ".log", "a") as log:
            rc = subprocess.run([tune, "--trials", str(todo), "--quiet", path],
                                stdout=log).returncode
        if rc == 2:
            grids.fail(f"{path}: tune refused the round's study (its message is above)")
        if rc != 0:
            grids.fail(f"tune exited {rc} on {path}", 1)
    grids.fail(f"{name}: trials still waiting after 6 runs of tune", 1)


def round_runs(trials, axes):
    """{point key: the round's value of it (None: failed)}, the rule baselines as this round's
    study stored them, and {point key: the trial that gave the value}."""
    values, rules, trial_by_key = {}, [], {}
    for t in trials:
        if "confirm_of" in t["system"] or t["state"] not in ("COMPLETE", "FAIL"):
            continue  # a re-run stands in its original's value; a waiting trial never ran
        k = grids.key(t["params"], axes)
        if k in values:
            continue
        values[k] = t["value"] if t["state"] == "COMPLETE" else None
        trial_by_key[k] = t
        if t["user"].get("measured_under_load") and "search_value" not in t["user"]:
            print(f"  note: trial {t['number']} {k} stays measured under load", file=sys.stderr)
    for t in trials:
        if "rules" in t["system"] and "confirm_of" not in t["system"]:
            rules.append({"rules": t["system"]["rules"],
                          "rule_texts": t["system"].get("rule_texts"),
                          "params": {n: t["params"].get(n) for n, _ in axes},
                          "rule_only": bool(t["system"].get("rule_only"))})
    # In tune's order (tuner/study/rules.cpp rule_names), as a study without the grid's entries
    # enqueues them: in a round they label grid points wherever the shuffle put them.
    rules.sort(key=lambda r: min((RULE_ORDER.index(n) if n in RULE_ORDER else len(RULE_ORDER))
                                 for n in r["rules"] or [""]))
    return values, rules, trial_by_key


def wait_shares(verdict):
    """(main, helper): the ranks' own threads' and their helpers' share of their runnable time
    spent waiting for a CPU, as tuner/judge/verdict_cost.cpp read_wait_shares reads them from a
    stored probe_verdict: the sustained figure over every rank, else (a verdict stored before it)
    the largest of the cpusets' own; None where run-queue delays were not measured."""
    sustained = verdict.get("sustained") if isinstance(verdict, dict) else None
    if not isinstance(sustained, dict):
        return None, None
    main = number(sustained.get("main_wait_share"))
    helper = number(sustained.get("helper_wait_share"))
    if main is None:
        shares = [number(load.get("main_wait_share")) for load in sustained.get("loads") or []
                  if isinstance(load, dict)]
        main = max((x for x in shares if x is not None), default=None)
    return main, helper


def number(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def where_time_went(verdict):
    """(cpu_libraries, duty, switches): the ranks' mean share of their CPU samples per library
    (those of 1% or more, from each rank's `cpu_libraries`), the thread groups' duty cycles
    ({group: {"threads", "cpu", "runnable"}}) and the involuntary switches per second, from a
    stored probe_verdict; None for what it does not hold. What a verdict that weighs where the
    queue's time went (spin in libgomp or libtbb, or work) is fitted on."""
    if not isinstance(verdict, dict):
        return None, None, None
    totals, ranks = {}, 0
    for r in verdict.get("ranks") or []:
        shares = r.get("cpu_libraries") if isinstance(r, dict) else None
        if not isinstance(shares, list) or not shares:
            continue
        ranks += 1
        for s in shares:
            if isinstance(s, dict) and isinstance(s.get("library"), str) and number(s.get("share")):
                totals[s["library"]] = totals.get(s["library"], 0.0) + s["share"]
    libraries = ({k: round(v / ranks, 3) for k, v in sorted(totals.items()) if v / ranks >= 0.01}
                 if ranks else None)
    duty = verdict.get("duty_cycles") if isinstance(verdict.get("duty_cycles"), dict) else None
    return libraries, duty, number(verdict.get("nonvoluntary_per_s"))


def verdict_summary(trial, reported):
    """A point's verdict in one round (a grid file's `points[].verdicts[r]`, grids.py): the trial,
    flagged (the observed verdict; None without one), the wait shares, where the ranks' CPU time
    went (where_time_went), whether tune judged that the queue cost (costly, where the verdict
    holds queue_cost) and, when the report's trial carries the verdict's cost
    (`verdict_cost`, judge/verdict_cost.h), slowed (None: no comparable trial or not judged, as
    tune report scores it), the comparable trial it was judged against and its ratio."""
    verdict = trial["system"].get("probe_verdict")
    flagged = verdict.get("observed_oversubscribed") if isinstance(verdict, dict) else None
    main, helper = wait_shares(verdict)
    libraries, duty, switches = where_time_went(verdict)
    out = {"trial": trial["number"],
           "flagged": flagged if isinstance(flagged, bool) else None,
           "main_wait_share": main, "helper_wait_share": helper,
           "cpu_libraries": libraries, "duty_cycles": duty, "nonvoluntary_per_s": switches}
    if isinstance(verdict, dict) and number(verdict.get("voluntary_per_s")) is not None:
        out["voluntary_per_s"] = verdict["voluntary_per_s"]  # barrier sleeps: the next sign
    cost = verdict.get("queue_cost") if isinstance(verdict, dict) else None
    if isinstance(cost, dict) and isinstance(cost.get("costly"), bool):
        out["costly"] = cost["costly"]  # tune's own judgment (probes/queue_cost.h)
    if reported and "verdict_cost" in reported:
        cost = reported["verdict_cost"]
        scored = (isinstance(cost, dict) and isinstance(cost.get("against"), int)
                  and cost["against"] >= 0)
        out["slowed"] = bool(cost.get("slowed")) if scored else None
        out["against"] = cost["against"] if scored else None
        out["ratio"] = cost.get("ratio") if scored else None
    return out


def round_report(tune, db_path, name):
    """tune's JSON report of the round's study: (its verdict_quality, {trial number: the report's
    trial}); (None, {}) with a note when tune could not report it (the round's runs stand)."""
    argv = [tune, "report", "--format", "json", "--no-importance", "--study", name, db_path]
    report, why = None, ""
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        if r.returncode == 0:
            report = json.loads(r.stdout)
        else:
            why = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
    except (OSError, subprocess.SubprocessError, json.JSONDecodeError) as e:
        why = str(e)
    if not isinstance(report, dict):
        print(f"  note: {name}: no verdict quality, `{' '.join(argv)}` failed: {why}",
              file=sys.stderr)
        return None, {}
    trials = {t["number"]: t for t in report.get("trials") or []
              if isinstance(t, dict) and isinstance(t.get("number"), int)}
    return report.get("verdict_quality"), trials


def command_text(argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as e:
        return f"({argv[0]} not run: {e})"


def machine(tune):
    probe = command_text([tune, "probe", "--format", "json"])
    try:
        probe = json.loads(probe)
    except json.JSONDecodeError:
        pass
    lstopo = shutil.which("lstopo-no-graphics") or "lstopo-no-graphics"
    return {"tune_probe": probe, "lscpu": command_text(["lscpu"]),
            "hwloc": command_text([lstopo, "--no-io", "--of", "console"]),
            "nproc": os.cpu_count(), "host": os.uname().nodename,
            "kernel": os.uname().release}


def tune_commit():
    try:
        head = subprocess.run(["git", "-C", grids.ROOT, "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", grids.ROOT, "status", "--porcelain", "--",
                                "tuner", "search", "probes", "trainer", "bench/grids"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return head + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return os.environ.get("TUNE_COMMIT", "unknown (git could not read the repository)")


def merge(job, paths, out):
    """Joins grid files of one job and machine into one grid (see --merge)."""
    grids_in = []
    for p in paths:
        try:
            with open(p) as f:
                grids_in.append(json.load(f))
        except (OSError, json.JSONDecodeError) as e:
            grids.fail(f"{p}: {e}")
    first = grids_in[0]
    for p, g in zip(paths, grids_in):
        for field in ("job", "axes", "direction"):
            if g.get(field) != first.get(field):
                grids.fail(f"{p}: its {field} differs from {paths[0]}'s: not the same grid")
        if g.get("machine", {}).get("host") != first.get("machine", {}).get("host"):
            grids.fail(f"{p}: recorded on another machine than {paths[0]}")
        if g.get("partial"):
            grids.fail(f"{p}: a partial grid (record.py --points)")
    if first.get("job") != job:
        grids.fail(f"{paths[0]}: a grid of job {first.get('job')!r}, not {job!r}")
    newest = max(grids_in, key=lambda g: g.get("date", ""))
    axes = [(n, cs) for n, cs in first["axes"]]
    runs, point_verdicts, qualities = {}, {}, []
    by_date = sorted(grids_in, key=lambda g: g.get("date", ""))
    for g in by_date:
        for pt in g["points"]:
            k = grids.key(pt["params"], axes)
            runs.setdefault(k, (pt["params"], []))[1].extend(pt["runs"])
            # A file recorded before the points' verdicts were: null for each of its runs.
            vs = pt.get("verdicts") or []
            point_verdicts.setdefault(k, []).extend(vs + [None] * (len(pt["runs"]) - len(vs)))
        qs = g.get("verdict_quality") or []
        qualities.extend(qs + [None] * (g.get("rounds", 0) - len(qs)))
    with_verdicts = any("verdict_quality" in g for g in grids_in)
    record = dict(newest)
    record["rounds"] = sum(g.get("rounds", 0) for g in grids_in)
    record["sessions"] = [{k: g.get(k) for k in ("date", "tune_commit", "rounds", "recording_s")}
                          for g in by_date]
    record["recording_s"] = round(sum(g.get("recording_s", 0) for g in grids_in), 1)
    record["baseline_verdicts"] = [v for g in by_date for v in g.get("baseline_verdicts", [])]
    record["points"] = [{"params": params, "runs": rs,
                         "median": (statistics.median(v) if (v := [x for x in rs if x is not None])
                                    else None)}
                        for params, rs in runs.values()]
    record.pop("verdict_quality", None)
    if with_verdicts:
        record["verdict_quality"] = qualities
        for pt in record["points"]:
            pt["verdicts"] = point_verdicts[grids.key(pt["params"], axes)]
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    os.replace(tmp, out)
    print(f"wrote {out}: {len(record['points'])} points, {record['rounds']} rounds from "
          f"{len(paths)} recordings", flush=True)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("job", help="a folder of bench/grids with a study.yaml")
    ap.add_argument("--rounds", type=int, default=3, help="runs of every point (default 3)")
    ap.add_argument("--points", type=int, help="only the baseline and the next N-1 points of "
                    "the grid (a quick check of the recorder, not a grid to replay)")
    ap.add_argument("--out", help="grid file to write (default bench/grids/JOB/grid.json)")
    ap.add_argument("--work", help="folder for the round studies and their database "
                    "(default tune-out/grids/JOB)")
    ap.add_argument("--tune", default=os.path.join(grids.ROOT, "build", "bin", "tune"))
    ap.add_argument("--no-load-check", action="store_true",
                    help="`load: off`: keep points measured under other work (busy machines)")
    ap.add_argument("--merge", nargs="+", metavar="GRID", help="join these grid files of the job "
                    "(one machine) into one, recording nothing")
    a = ap.parse_args()
    if a.merge:
        out = os.path.abspath(a.out or os.path.join(grids.HERE, a.job, "grid.json"))
        return merge(a.job, a.merge, out)
    if a.rounds < 1:
        grids.fail("--rounds: at least 1")
    if a.points is not None and a.points < 1:
        grids.fail("--points: at least 1")
    path = grids.study_path(a.job)
    if not os.path.isfile(path):
        grids.fail(f"{path}: no such study file (jobs: {', '.join(grids.jobs())})")
    if not os.access(a.tune, os.X_OK):
        grids.fail(f"{a.tune}: no tune binary there (build it: scripts/build.sh)")
    try:
        spec = grids.load_yaml(path)
        axes = grids.axes_of(spec, path)
        baseline = grids.baseline_of(spec, path, axes)
    except grids.InputError as e:
        grids.fail(str(e))
    job_dir = os.path.dirname(path)
    points = [baseline] + [p for p in grids.grid_points(axes) if p != baseline]
    if a.points:
        points = points[:a.points]
    out = os.path.abspath(a.out or os.path.join(job_dir, "grid.json"))
    work = os.path.abspath(a.work or os.path.join(grids.ROOT, "tune-out", "grids", a.job))
    os.makedirs(work, exist_ok=True)
    db_path = os.path.join(work, "record.db")
    per_run = SECONDS_PER_RUN.get(a.job, 8.0)
    estimate = len(points) * a.rounds * per_run
    print(f"record {a.job}: {len(points)} points x {a.rounds} rounds = {len(points) * a.rounds} "
          f"runs, about {estimate / 60:.1f} min on a quiet machine ({per_run:g} s a run); "
          f"axes: " + ", ".join(f"{n} {json.dumps(cs)}" for n, cs in axes), flush=True)
    print(f"  work folder {work}, grid file {out}", flush=True)
    start = time.monotonic()
    runs = {grids.key(p, axes): [] for p in points}
    point_verdicts = {k: [] for k in runs}
    rules, verdicts, qualities = None, [], []
    for r in range(a.rounds):
        rest = points[1:]
        random.Random(r).shuffle(rest)
        entries = [points[0]] + rest
        name = f"grid-{a.job}-p{len(points)}-r{r}"
        study_file = os.path.join(work, f"{name}.yaml")
        import yaml
        with open(study_file, "w") as f:
            f.write(f"# generated by bench/grids/record.py from {os.path.relpath(path, grids.ROOT)}"
                    f": round {r} of {a.rounds}\n")
            yaml.safe_dump(round_study(spec, job_dir, name, entries, work, not a.no_load_check),
                           f, sort_keys=False, default_flow_style=None, width=100)
        run_round(a.tune, study_file, db_path, name, len(entries))
        values, round_rules, trial_by_key = round_runs(grids.read_study(db_path, name), axes)
        quality, reported = round_report(a.tune, db_path, name)
        for k in runs:
            runs[k].append(values.get(k))
            t = trial_by_key.get(k)
            point_verdicts[k].append(verdict_summary(t, reported.get(t["number"])) if t else None)
        if rules is None:
            rules = round_rules
        base = trial_by_key.get(grids.key(baseline, axes))
        verdicts.append(base["system"].get("probe_verdict") if base else None)
        qualities.append(quality)
        spent = time.monotonic() - start
        print(f"round {r + 1} of {a.rounds} done: {spent:.0f} s so far, about "
              f"{spent / (r + 1) * (a.rounds - r - 1):.0f} s to go (tune's output: "
              f"{os.path.join(work, name)}.log)", flush=True)
    record = {
        "schema_version": grids.SCHEMA_VERSION,
        "job": a.job,
        "study_file": os.path.relpath(path, grids.ROOT),
        "study": spec,
        "direction": spec.get("direction", "minimize"),
        "axes": [[n, cs] for n, cs in axes],
        "baseline": baseline,
        "rounds": a.rounds,
        "partial": a.points is not None,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "tune_commit": tune_commit(),
        "recording_s": round(time.monotonic() - start, 1),
        "load_check": not a.no_load_check,
        "machine": machine(a.tune),
        "rules": rules or [],
        "baseline_verdicts": verdicts,
        "verdict_quality": qualities,
        "points": [{"params": p, "runs": runs[grids.key(p, axes)],
                    "median": (statistics.median(v) if (v := [x for x in runs[grids.key(p, axes)]
                                                              if x is not None]) else None),
                    "verdicts": point_verdicts[grids.key(p, axes)]}
                   for p in points],
    }
    os.makedirs(os.path.dirname(out), exist_ok=True)
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    os.replace(tmp, out)
    failed = sum(v is None for vs in runs.values() for v in vs)
    print(f"wrote {out}: {len(points)} points, {a.rounds} rounds, {failed} failed runs, "
          f"{record['recording_s']:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
