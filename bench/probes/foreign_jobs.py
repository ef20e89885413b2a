#!/usr/bin/env python3
"""The prediction on programs tune did not write (issue 24 point 5): hpcc from Debian and a
PyTorch DDP script written unlike examples/pytorch_ddp (tests/e2e/foreign_jobs), each a study of
--trials trials with the probes on, then the figures the closing note gives.

  nice -n 10 bench/probes/foreign_jobs.py --tune build/bin/tune --trials 12 --out /tmp/fj

Each study runs in its own copy of tests/e2e/foreign_jobs under --out (a study whose database
already holds its trials is reused). Prints, per study:
  - `tune report`'s precision and recall of the prediction against the observed verdict;
  - per setting: how many trials, predicted and observed oversubscribed, and the program's own
    figure, the ground truth (hpcc: the median StarDGEMM GFLOP/s of its trials and the median of
    every HPL run's GFLOP/s in them; the script: the median samples/s);
  - the best trial, its setting, busy threads per rank as predicted, and its observed verdict.
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tune", default="build/bin/tune")
    ap.add_argument("--trials", type=int, default=12)
    ap.add_argument("--out", default="/tmp/tune-foreign-jobs")
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
        predicted = predictions(folder, name)
        by_setting = {}
        for t in r["trials"]:
            if t.get("value") is None:
                continue
            key = json.dumps(t["params"], sort_keys=True)
            s = by_setting.setdefault(key, {"n": 0, "observed": 0, "predicted": 0, "values": [],
                                            "star": [], "hpl": []})
            s["n"] += 1
            s["observed"] += 1 if t.get("oversubscribed") else 0
            s["predicted"] += 1 if predicted.get(t["number"], {}).get("oversubscribed") else 0
            s["values"].append(t["value"])
            f = own_figures(folder, name, t)
            if f.get("star") is not None:
                s["star"].append(f["star"])
            s["hpl"].extend(f.get("hpl", []))
        for key, s in sorted(by_setting.items(), key=lambda kv: -statistics.median(kv[1]["values"])):
            line = (f"  {key}: {s['n']} trials, observed oversubscribed {s['observed']}, "
                    f"predicted {s['predicted']}, median objective {statistics.median(s['values']):.4g}")
            if s["hpl"]:
                line += f", median HPL {statistics.median(s['hpl']):.3g} GFLOP/s ({len(s['hpl'])} runs)"
            print(line)
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
