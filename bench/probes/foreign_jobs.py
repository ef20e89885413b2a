#!/usr/bin/env python3
"""The prediction on programs tune did not write (issue 24 point 5): hpcc from Debian and a
PyTorch DDP script written unlike examples/pytorch_ddp (tests/e2e/foreign_jobs), each a study of
--trials trials with the probes on, then the figures the closing note gives.

  nice -n 10 bench/probes/foreign_jobs.py --tune build/bin/tune --trials 12 --out /tmp/fj

Each study runs in its own copy of tests/e2e/foreign_jobs under --out (a study whose database
already holds its trials is reused). Prints, per study:
  - `tune report`'s precision and recall of the prediction against the observed verdict, run by
    run, and by setting: "at risk" against "observed oversubscribed in some run of the same
    threads and cpusets", with the Brier score of the predicted chance (against the yes/no's);
  - per setting: how many trials, predicted and observed oversubscribed, and the program's own
    figure, the ground truth (hpcc: the median StarDGEMM GFLOP/s of its trials and the median of
    every HPL run's GFLOP/s in them; the script: the median samples/s);
  - the best trial, its setting, busy threads per rank as predicted, and its observed verdict.
With --truth-runs R (default 5), hpcc's ground truth by setting is the program's own figure:
each setting the study ran is also run R times by hand (mpirun as the study renders it), and a
run is slowed when its HPL figure is under half the median of every bound run; a setting is
oversubscribed when any of its runs (the study's or these) was slowed. Printed: precision and
recall of "at risk" per trial against that, and of the yes/no prediction per run against each
run's own figure.
Trials are real runs: on a shared machine the figures move with the load.
"""
import argparse
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
JOBS = os.path.join(HERE, "..", "..", "tests", "e2e", "foreign_jobs")
STUDIES = [("hpcc.yaml", "foreign-hpcc"), ("ddp_env.yaml", "foreign-ddp-env")]


def report(tune, folder, study):
    out = subprocess.run([tune, "report", "--format", "json", study], cwd=folder, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def predictions(folder, name):
    """trial number -> the stored prediction (system attr probe_prediction)."""
    db = sqlite3.connect(os.path.join(folder, "tune-out", name, "study.db"))
    rows = db.execute("SELECT t.number, a.value_json FROM trial_system_attributes a JOIN trials t "
                      "USING (trial_id) WHERE a.key = 'probe_prediction'").fetchall()
    return {n: json.loads(v) for n, v in rows}


def own_figures(folder, name, trial):
    """The program's own figures for one trial, from the files it wrote."""
    tdir = os.path.join(folder, "tune-out", name, "trials", str(trial["number"]))
    if name == "foreign-hpcc":
        try:
            text = open(os.path.join(tdir, "hpccoutf.txt")).read()
        except OSError:
            return {}
        star = re.findall(r"StarDGEMM_Gflops=([0-9.eE+-]+)", text)
        hpl = [float(m.split()[6]) for m in re.findall(r"^WR\S+\s.*$", text, re.M)]
        return {"star": float(star[-1]) if star else None, "hpl": hpl}
    return {"samples": trial.get("value")}


def hpcc_by_hand(folder, params, repeats):
    """HPL_Tflops of `repeats` runs of one hpcc setting, started as the study starts it."""
    work = os.path.join(folder, "by-hand")
    os.makedirs(work, exist_ok=True)
    shutil.copy(os.path.join(folder, "hpccinf.txt"), work)
    argv = ["mpirun", "-n", str(params["n"]), "--bind-to", params["bind_to"], "--oversubscribe"]
    if os.geteuid() == 0:
        argv.append("--allow-run-as-root")
    env = dict(os.environ)
    env.pop("OPENBLAS_NUM_THREADS", None)
    if params.get("blas_threads") is not None:
        env["OPENBLAS_NUM_THREADS"] = str(params["blas_threads"])
    values = []
    for _ in range(repeats):
        out = os.path.join(work, "hpccoutf.txt")
        if os.path.exists(out):
            os.remove(out)
        subprocess.run(argv + ["hpcc"], cwd=work, env=env, check=True, capture_output=True)
        m = re.search(r"HPL_Tflops=([0-9.eE+-]+)", open(out).read())
        values.append(float(m.group(1)))
    return values


def share(hits, of):
    return f"{100 * hits / of:.0f}% ({hits} of {of})" if of else "n/a"


def hpcc_truth(folder, trials, predicted, repeats):
    """Judges the prediction against hpcc's own HPL figures (see the module's text)."""
    runs = {}  # setting -> HPL_Tflops of the study's runs and the runs by hand
    for t in trials:
        runs.setdefault(json.dumps(t["params"], sort_keys=True), []).append(t["value"])
    for key in runs:
        runs[key] += hpcc_by_hand(folder, json.loads(key), repeats)
    bound = [v for k, vs in runs.items() if json.loads(k)["bind_to"] == "core" for v in vs]
    limit = 0.5 * statistics.median(bound)
    slowed = {k: sum(1 for v in vs if v < limit) for k, vs in runs.items()}
    for k, vs in sorted(runs.items()):
        print(f"  truth {k}: slowed in {slowed[k]} of {len(vs)} runs (HPL under "
              f"{limit * 1000:.1f} GFLOP/s, half the bound runs' median)")
    tp = fp = fn = rtp = rfp = rfn = 0
    for t in trials:
        p = predicted.get(t["number"], {})
        truth = slowed[json.dumps(t["params"], sort_keys=True)] > 0
        tp += 1 if p.get("at_risk") and truth else 0
        fp += 1 if p.get("at_risk") and not truth else 0
        fn += 1 if not p.get("at_risk") and truth else 0
        run_slowed = t["value"] < limit
        rtp += 1 if p.get("oversubscribed") and run_slowed else 0
        rfp += 1 if p.get("oversubscribed") and not run_slowed else 0
        rfn += 1 if not p.get("oversubscribed") and run_slowed else 0
    print(f"  against hpcc's own figure, by setting (at risk vs slowed in some run): precision "
          f"{share(tp, tp + fp)}, recall {share(tp, tp + fn)}; run by run (oversubscribed vs "
          f"this run slowed): precision {share(rtp, rtp + rfp)}, recall {share(rtp, rtp + rfn)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tune", default="build/bin/tune")
    ap.add_argument("--trials", type=int, default=12)
    ap.add_argument("--out", default="/tmp/tune-foreign-jobs")
    ap.add_argument("--truth-runs", type=int, default=5,
                    help="hpcc runs by hand per setting for its ground truth (0: none)")
    args = ap.parse_args()
    tune = os.path.abspath(args.tune)
    for study, name in STUDIES:
        folder = os.path.join(args.out, name)
        if not os.path.isdir(folder):
            shutil.copytree(JOBS, folder)
        r = report(tune, folder, study) if os.path.exists(
            os.path.join(folder, "tune-out", name, "study.db")) else None
        done = 0 if r is None else sum(1 for t in r["trials"] if t.get("value") is not None)
        if done < args.trials:
            subprocess.run([tune, "--trials", str(args.trials - done), "--quiet", study],
                           cwd=folder, check=True)
            r = report(tune, folder, study)
        q = r["prediction_quality"]
        print(f"== {name}: {q['trials']} trials: precision {q['precision']}, recall "
              f"{q['recall']} (tp {q['true_positive']}, fp {q['false_positive']}, fn "
              f"{q['false_negative']}, tn {q['true_negative']})")
        b = q.get("by_setting", {})
        if b.get("trials"):
            print(f"   by setting: precision {b['precision']}, recall {b['recall']} (tp "
                  f"{b['true_positive']}, fp {b['false_positive']}, fn {b['false_negative']} "
                  f"of {b['trials']}); Brier {b['brier']:.3f} (yes/no {b['brier_yes_no']:.3f})")
        predicted = predictions(folder, name)
        by_setting = {}
        for t in r["trials"]:
            if t.get("value") is None:
                continue
            key = json.dumps(t["params"], sort_keys=True)
            s = by_setting.setdefault(key, {"n": 0, "observed": 0, "predicted": 0, "at_risk": 0,
                                            "risk": [], "values": [], "star": [], "hpl": []})
            s["n"] += 1
            s["observed"] += 1 if t.get("oversubscribed") else 0
            p = predicted.get(t["number"], {})
            s["predicted"] += 1 if p.get("oversubscribed") else 0
            s["at_risk"] += 1 if p.get("at_risk") else 0
            if "risk" in p:
                s["risk"].append(p["risk"])
            s["values"].append(t["value"])
            f = own_figures(folder, name, t)
            if f.get("star") is not None:
                s["star"].append(f["star"])
            s["hpl"].extend(f.get("hpl", []))
        for key, s in sorted(by_setting.items(), key=lambda kv: -statistics.median(kv[1]["values"])):
            line = (f"  {key}: {s['n']} trials, observed oversubscribed {s['observed']}, "
                    f"predicted {s['predicted']}, at risk {s['at_risk']}"
                    + (f" (mean risk {statistics.mean(s['risk']):.2f})" if s["risk"] else "")
                    + f", median objective {statistics.median(s['values']):.4g}")
            if s["hpl"]:
                line += f", median HPL {statistics.median(s['hpl']):.3g} GFLOP/s ({len(s['hpl'])} runs)"
            print(line)
        if name == "foreign-hpcc" and args.truth_runs > 0:
            hpcc_truth(folder, [t for t in r["trials"] if t.get("value") is not None],
                       predicted, args.truth_runs)
        best = r["best"]
        print(f"  best: trial #{best.get('number')} {best.get('params')} value {best.get('value')}")
        for t in r["trials"]:
            if t["number"] == best.get("number"):
                p = predicted.get(t["number"], {})
                busy = [rk.get("busy_threads") for rk in p.get("ranks", [])]
                print(f"    predicted busy threads per rank {busy}; observed: {t.get('probe')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
