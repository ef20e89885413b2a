#!/usr/bin/env python3
"""How good the probes' verdicts are on a study (the quickstart by default): the figures of
issue 14's acceptance, re-runnable.

  nice -n 10 bench/probes/verdict_quality.py --tune build/bin/tune --trials 50 --out /tmp/vq

Runs, each in its own folder under --out (a run whose database already holds its trials is
reused, so an interrupted measurement continues):
  run1       the study as it is (probes on, constrain off), --trials trials;
  run2       the same settings again, in the same order: run1's trials enqueued into a fresh
             study (the prediction learns from scratch again);
  constrain  the study with probes {enabled: true, constrain: true}, until --trials trials have
             run (a trial the probes rule out costs nothing, so both studies get the same
             number of real runs; at most 10 x --trials asked);
  then `tune confirm --repeats R` on run1 and on constrain;
  headtohead the two confirmed bests re-run alternately, --head-to-head times each, in one fresh
             study (probes off): on a shared machine the two confirms ran at different times
             under different loads, so only runs interleaved like these compare fairly.

Prints:
  (a) verdict stability: of the settings run more than once (run1 vs run2, and confirm re-runs),
      the share whose observed verdicts all agree;
  (b) precision and recall of the prediction's "oversubscribed" against the observed verdict,
      per run and pooled (tune report's prediction_quality);
  (c) the best trial after confirm with constrain: true against constrain: false (ratio of
      their confirmed medians, minimize), and the same two settings head to head.
Trials are real training runs: on a shared machine the timings in (c) move with the load.
"""
import argparse
import copy
import json
import os
import sqlite3
import statistics
import subprocess
import sys

import yaml


def run(argv, cwd, log):
    with open(os.path.join(cwd, log), "a") as out:
        subprocess.run(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, check=True)


def database(folder, name):
    return os.path.join(folder, "tune-out", name, "study.db")


def trial_count(db):
    if not os.path.exists(db):
        return 0
    with sqlite3.connect(db) as c:
        return c.execute("select count(*) from trials").fetchone()[0]


def runs_done(db):
    """Trials that ran (have an observed verdict); skipped ones have none."""
    if not os.path.exists(db):
        return 0
    with sqlite3.connect(db) as c:
        return c.execute("select count(*) from trial_system_attributes "
                         "where key = 'probe_verdict'").fetchone()[0]


def run_until(tune, folder, spec, runs):
    path = run_study(tune, folder, spec, 0)
    db = database(folder, spec["name"])
    while runs_done(db) < runs and trial_count(db) < 10 * runs:
        run([tune, "--trials", str(runs - runs_done(db)), "study.yaml"], folder, "run.log")
    return path


def run_study(tune, folder, spec, trials):
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "study.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(spec, f, sort_keys=False)
    done = trial_count(database(folder, spec["name"]))
    if done < trials:
        run([tune, "--trials", str(trials - done), "study.yaml"], folder, "run.log")
    return path


def report(tune, folder):
    out = subprocess.run([tune, "report", "-f", "json", "study.yaml"], cwd=folder,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def observed(folder, name):
    """{trial number: observed_oversubscribed} from the stored verdicts."""
    with sqlite3.connect(database(folder, name)) as c:
        rows = c.execute(
            "select t.number, a.value_json from trial_system_attributes a "
            "join trials t on t.trial_id = a.trial_id where a.key = 'probe_verdict'").fetchall()
    return {n: json.loads(v).get("observed_oversubscribed") for n, v in rows}


def settings_key(params):
    return json.dumps(params, sort_keys=True)


def stability(runs):
    """runs: [(report, observed)]. Settings seen twice or more: share with one verdict."""
    verdicts = {}
    for rep, obs in runs:
        for t in rep["trials"]:
            if t["number"] in obs and obs[t["number"]] is not None:
                verdicts.setdefault(settings_key(t["params"]), []).append(obs[t["number"]])
    repeated = {k: v for k, v in verdicts.items() if len(v) >= 2}
    same = sum(1 for v in repeated.values() if len(set(v)) == 1)
    pairs = agree = 0
    for v in repeated.values():
        for i in range(len(v)):
            for j in range(i + 1, len(v)):
                pairs += 1
                agree += v[i] == v[j]
    return same, len(repeated), agree, pairs


def pct(x):
    return "n/a" if x is None else f"{100 * x:.0f}%"


def quality_line(label, q):
    return (f"  {label:<10} {q['trials']:3} trials  TP {q['true_positive']:2} FP "
            f"{q['false_positive']:2} FN {q['false_negative']:2} TN {q['true_negative']:2}  "
            f"precision {pct(q['precision'])}  recall {pct(q['recall'])}")


def best_confirmed(rep):
    best = rep.get("best") or {}
    return best.get("median") if best.get("median") is not None else best.get("value"), best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tune", default="build/bin/tune")
    ap.add_argument("--study", default="studies/quickstart.yaml")
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=3, help="tune confirm --repeats")
    ap.add_argument("--out", default="tune-out/verdict_quality")
    ap.add_argument("--no-constrain", action="store_true", help="skip (c)")
    ap.add_argument("--head-to-head", type=int, default=5, help="interleaved runs of each best")
    a = ap.parse_args()
    tune = os.path.abspath(a.tune)
    with open(a.study) as f:
        spec = yaml.safe_load(f)
    name = spec["name"]
    spec.pop("output", None)
    spec.pop("storage", None)
    spec["probes"] = {"enabled": True}

    run1 = os.path.join(a.out, "run1")
    run_study(tune, run1, spec, a.trials)
    rep1 = report(tune, run1)
    again = copy.deepcopy(spec)
    first = [t for t in rep1["trials"] if t.get("rerun_of") is None][: a.trials]
    again["enqueue"] = [t["params"] for t in first]
    run2 = os.path.join(a.out, "run2")
    run_study(tune, run2, again, len(first))

    runs = {"run1": run1, "run2": run2}
    if not a.no_constrain:
        constrained = copy.deepcopy(spec)
        constrained["probes"] = {"enabled": True, "constrain": True}
        runs["constrain"] = os.path.join(a.out, "constrain")
        run_until(tune, runs["constrain"], constrained, a.trials)
        for key in ("run1", "constrain"):
            marker = os.path.join(runs[key], "confirmed")
            if not os.path.exists(marker):
                run([tune, "confirm", "--repeats", str(a.repeats), "study.yaml"], runs[key],
                    "confirm.log")
                open(marker, "w").close()

    reports = {k: report(tune, f) for k, f in runs.items()}
    duel = None
    if not a.no_constrain:
        bests = [reports[k]["best"]["params"] for k in ("run1", "constrain")]
        h2h = copy.deepcopy(spec)
        h2h["name"] = name + "-h2h"
        h2h["probes"] = {"enabled": False}
        h2h["enqueue"] = bests * a.head_to_head
        folder = os.path.join(a.out, "headtohead")
        run_study(tune, folder, h2h, 2 * a.head_to_head)
        values = [[], []]
        for t in report(tune, folder)["trials"]:
            if t["value"] is not None:
                values[t["number"] % 2].append(t["value"])
        duel = [statistics.median(v) if v else None for v in values] + [values]
    obs = {k: observed(f, name) for k, f in runs.items()}
    same, settings, agree, pairs = stability([(reports[k], obs[k]) for k in runs])
    print(f"study {a.study}, {a.trials} trials per run, output {a.out}")
    print(f"(a) verdict stability: {same} of {settings} settings run more than once got one "
          f"observed verdict ({pct(same / settings if settings else None)}); "
          f"{agree} of {pairs} pairs of runs agree ({pct(agree / pairs if pairs else None)})")
    print("(b) prediction vs observed verdict (oversubscribed):")
    pooled = {k: 0 for k in ("trials", "true_positive", "false_positive", "false_negative",
                             "true_negative")}
    for k in runs:
        q = reports[k]["prediction_quality"]
        print(quality_line(k, q))
        for f in pooled:
            pooled[f] += q[f]
    tp, fp, fn = pooled["true_positive"], pooled["false_positive"], pooled["false_negative"]
    pooled["precision"] = tp / (tp + fp) if tp + fp else None
    pooled["recall"] = tp / (tp + fn) if tp + fn else None
    print(quality_line("pooled", pooled))
    if not a.no_constrain:
        free, fb = best_confirmed(reports["run1"])
        held, hb = best_confirmed(reports["constrain"])
        print(f"(c) best after confirm: constrain false #{fb.get('number')} {free:.4g}, "
              f"constrain true #{hb.get('number')} {held:.4g}: constrained/unconstrained = "
              f"{held / free:.3f} ({100 * (held / free - 1):+.1f}%)")
        if duel and duel[0] and duel[1]:
            print(f"    head to head, {a.head_to_head} interleaved runs each: unconstrained best "
                  f"median {duel[0]:.4g}, constrained best median {duel[1]:.4g}: "
                  f"{duel[1] / duel[0]:.3f} ({100 * (duel[1] / duel[0] - 1):+.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
