"""What record.py, replay.py and lookup.py share: a job's study file, its grid, a point's key,
a grid file and what "within 5% of the best" means.

A grid file (bench/grids/JOB/grid.json, written by record.py) holds, besides the machine and
where it came from: `axes` ([[name, [choices]]], the study's parameters), `direction`,
`baseline` (the command as run: the study's first `enqueue:` entry), `rules` (the rule
baselines tune enqueued: [{"rules", "rule_texts", "params"}]), `points` ([{"params", "runs",
"median", "verdicts"}], a failed run null) and `baseline_verdicts` (the baseline's
`probe_verdict` in each round, null where the probes stored none).

Since 2026-12-07 (VERDICTS_SINCE) a grid also scores the verdicts per round: a point's
`verdicts`, one per round beside its `runs` (null where the point did not run), each {"trial"
(its number in the round's study), "flagged" (the observed verdict, `observed_oversubscribed`;
null without one), "main_wait_share", "helper_wait_share" (the ranks' own threads' and their
helpers' share of their runnable time spent waiting for a CPU, the verdict's `sustained` record;
null where not measured), and, in grids recorded since 2026-12-07's second session,
"cpu_libraries" (the ranks' mean share of their CPU samples per library, 1% or more),
"duty_cycles" and "nonvoluntary_per_s" (null where the verdict holds none), in grids recorded
since tune counted them "voluntary_per_s" (the tree's voluntary switches per second), and, in grids
recorded since the queue cost was judged, "costly" (the verdict's `queue_cost.costly`,
probes/queue_cost.h)}, plus {"slowed",
"against", "ratio"} once tune report's per-trial JSON
carries the verdict's cost (judge/verdict_cost.h; slowed null: not scored); and
`verdict_quality`, one per round: `tune report --format json`'s object for the round's study
({"trials" (scored), "unscored", "true_positive", "false_positive", "false_negative",
"true_negative", "precision", "recall", "noise_known", "contradictions"}), null where tune could
not report it. A grid recorded before has neither key.
"""
import itertools
import json
import math
import os
import sqlite3
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCHEMA_VERSION = 1
WITHIN = 0.05  # a pick counts once its grid median is within 5% of the grid's best median
VERDICTS_SINCE = "2026-12-07"  # grids recorded since hold `verdicts` per point, `verdict_quality`
CONFUSION = ("true_positive", "false_positive", "false_negative", "true_negative")
# probes/queue_cost.h's constants, for the grids recorded before tune judged the queue's cost:
# the runtimes whose idle threads spin, the share of the ranks' CPU time in them that costs, and
# the involuntary switches per PU-second beyond time slicing.
SPIN_RUNTIMES = ("libgomp", "libomp", "libiomp5", "libtbb")
SPIN_SHARE = 0.05
SWITCHES_PER_PU_S = 1000


def costly(verdict, pus):
    """Whether a point's verdict (a grid file's `points[].verdicts[r]`) says its queue cost the
    job: its recorded "costly" where tune judged it, else the same rule as probes/queue_cost.h on
    its recorded CPU time per library and switches (flagged, and spin-waiting runtimes held 5% or
    more of the ranks' CPU time, or 1000 or more involuntary switches per PU-second); None where
    the verdict holds neither the judgment nor the figures."""
    if isinstance(verdict.get("costly"), bool):
        return verdict["costly"]
    flagged = verdict.get("flagged")
    libraries = verdict.get("cpu_libraries")
    switches = verdict.get("nonvoluntary_per_s")
    if not isinstance(flagged, bool) or (libraries is None and switches is None):
        return None
    spin = sum(v for k, v in (libraries or {}).items()
               if k in SPIN_RUNTIMES and isinstance(v, (int, float)))
    per_pu = switches / pus if isinstance(switches, (int, float)) and pus else 0
    return flagged and (spin >= SPIN_SHARE or per_pu >= SWITCHES_PER_PU_S)


class InputError(Exception):
    """Bad input (a file, a key, a flag): one line, exit 2."""


def fail(message, status=2):
    print(f"{os.path.basename(sys.argv[0])}: error: {message}", file=sys.stderr)
    sys.exit(status)


def load_yaml(path):
    import yaml
    try:
        with open(path) as f:
            return yaml.safe_load(f)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror}")
    except yaml.YAMLError as e:
        raise InputError(f"{path}: not YAML: {str(e).splitlines()[0]}")


def axes_of(spec, path):
    """[(name, [choices])] of a study's parameters: categorical lists or small int ranges."""
    params = spec.get("params")
    if not isinstance(params, dict) or not params:
        raise InputError(f"{path}: key 'params': a grid needs parameters")
    axes = []
    for name, dom in params.items():
        if isinstance(dom, list):
            choices = dom
        elif isinstance(dom, dict) and dom.get("type") == "categorical":
            choices = dom.get("choices")
        elif isinstance(dom, dict) and dom.get("type") == "int" and not dom.get("log"):
            step = dom.get("step", 1)
            choices = list(range(dom["low"], dom["high"] + 1, step))
        else:
            raise InputError(f"{path}: key 'params.{name}': a grid axis must be categorical or "
                             f"an int range without log, not {json.dumps(dom)}")
        if not isinstance(choices, list) or not choices:
            raise InputError(f"{path}: key 'params.{name}': no choices")
        axes.append((name, list(choices)))
    return axes


def baseline_of(spec, path, axes):
    """The command as run: the study's first `enqueue:` entry, a parameter left out null."""
    entries = spec.get("enqueue")
    if not isinstance(entries, list) or not entries or not isinstance(entries[0], dict):
        raise InputError(f"{path}: key 'enqueue': the first entry must be the command as run")
    point = {n: entries[0].get(n) for n, _ in axes}
    for n, cs in axes:
        if point[n] not in cs:
            raise InputError(f"{path}: key 'enqueue[0].{n}': {json.dumps(point[n])} is not one "
                             f"of the choices {json.dumps(cs)}")
    return point


def grid_points(axes):
    """Every point of the grid, in the order of the axes' product."""
    names = [n for n, _ in axes]
    return [dict(zip(names, vs)) for vs in itertools.product(*(cs for _, cs in axes))]


def key(params, axes):
    """A point's key: its parameters as sorted JSON, a parameter left out null."""
    return json.dumps({n: params.get(n) for n, _ in axes}, sort_keys=True)


def study_path(job):
    return os.path.join(HERE, job, "study.yaml")


def jobs():
    """The jobs with a study file under bench/grids/, sorted."""
    return sorted(d for d in os.listdir(HERE) if os.path.isfile(study_path(d)))


class Grid:
    """A grid file, read: medians, the best, and what "within 5%" means for its direction."""

    def __init__(self, path):
        self.path = path
        try:
            with open(path) as f:
                data = json.load(f)
        except OSError as e:
            raise InputError(f"{path}: cannot read: {e.strerror}")
        except json.JSONDecodeError as e:
            raise InputError(f"{path}: line {e.lineno}: not JSON: {e.msg}")
        for k in ("job", "direction", "axes", "baseline", "points"):
            if k not in data:
                raise InputError(f"{path}: key '{k}' is missing (not a grid file of record.py)")
        if data["direction"] not in ("minimize", "maximize"):
            raise InputError(f"{path}: key 'direction': minimize or maximize, not "
                             f"{json.dumps(data['direction'])}")
        self.data = data
        self.job = data["job"]
        self.maximize = data["direction"] == "maximize"
        self.axes = [(n, cs) for n, cs in data["axes"]]
        self.runs = {}
        for i, p in enumerate(data["points"]):
            if "params" not in p or "runs" not in p:
                raise InputError(f"{path}: key 'points[{i}]': needs 'params' and 'runs'")
            self.runs[key(p["params"], self.axes)] = [v for v in p["runs"] if v is not None]
        self.medians = {k: statistics.median(v) for k, v in self.runs.items() if v}
        if not self.medians:
            raise InputError(f"{path}: key 'points': no point has a measured run")
        pick = max if self.maximize else min
        self.best_key = pick(self.medians, key=self.medians.get)
        self.best = self.medians[self.best_key]
        self.baseline = data["baseline"]
        self.rules = data.get("rules", [])
        machine = data.get("machine") if isinstance(data.get("machine"), dict) else {}
        self.pus = machine.get("nproc") if isinstance(machine.get("nproc"), int) else None
        quality = data.get("verdict_quality")
        if quality is not None and not isinstance(quality, list):
            raise InputError(f"{path}: key 'verdict_quality': a list (one per round), not "
                             f"{type(quality).__name__}")
        for i, p in enumerate(data["points"]):
            if not isinstance(p.get("verdicts", []), list):
                raise InputError(f"{path}: key 'points[{i}].verdicts': a list (one per round)")

    def size(self):
        return len(self.runs)

    def distance(self, params):
        """How much worse than the best the point's median is (0.12: 12% worse), None when the
        point was not measured or never ran."""
        m = self.medians.get(key(params, self.axes))
        if m is None:
            return None
        if self.maximize:
            return 1 - m / self.best if self.best else 0.0
        return m / self.best - 1 if self.best else 0.0

    def run_noise(self):
        """A run's noise: the median over the points of their runs' coefficient of variation
        (sample standard deviation / mean; points with 2 or more runs), None without such."""
        cvs = [statistics.stdev(v) / statistics.mean(v)
               for p in self.data["points"]
               if len(v := [x for x in p["runs"] if x is not None]) >= 2 and statistics.mean(v)]
        return statistics.median(cvs) if cvs else None

    def points_within(self):
        """How many points' medians are within 5% of the best's (the best included)."""
        return sum(self.within(p["params"]) for p in self.data["points"])

    def within(self, params):
        d = self.distance(params)
        return d is not None and d <= WITHIN + 1e-12

    def better(self, a, b):
        """Whether observed value a beats b (b None: anything beats it)."""
        return b is None or (a > b if self.maximize else a < b)

    def verdicts_recorded(self):
        """Whether the recording scored the verdicts per round (see the module's docstring)."""
        return "verdict_quality" in self.data

    def verdict_quality(self):
        """The rounds' verdict quality pooled: {"rounds", "rounds_reported", "trials", "unscored",
        the four counts, "precision", "recall"} (precision None when nothing was flagged, recall
        None when nothing was slowed); None for a grid recorded before VERDICTS_SINCE."""
        if not self.verdicts_recorded():
            return None
        rounds = [q for q in self.data["verdict_quality"] if isinstance(q, dict)]
        out = {"rounds": len(self.data["verdict_quality"]), "rounds_reported": len(rounds)}
        for k in ("trials", "unscored") + CONFUSION:
            out[k] = sum(int(q.get(k) or 0) for q in rounds)
        tp, fp, fn = out["true_positive"], out["false_positive"], out["false_negative"]
        out["precision"] = tp / (tp + fp) if tp + fp else None
        out["recall"] = tp / (tp + fn) if tp + fn else None
        return out

    def point_verdicts(self):
        """[(params, round, verdict summary)] over every point and round that has one."""
        return [(p["params"], r, v) for p in self.data["points"]
                for r, v in enumerate(p.get("verdicts") or []) if isinstance(v, dict)]

    def setting_verdicts(self):
        """The verdicts judged per setting instead of per run, over the recorded rounds: a point is
        flagged when most of its rounds' verdicts were; it is slowed when its comparable point
        (the fastest of those its rounds' verdicts were measured against: the same but for
        smaller pools) is better by the medians' log ratio beyond 1.96 standard errors of the
        job's own run noise (the runs' log spread pooled over every point, as tune's noise model
        pools repeated settings). A single run's lead over another single run is no longer the
        label, so a slow round of a setting no longer counts as contention. [{"params",
        "flagged", "slowed", "ratio"}]; empty for a grid without scored verdicts."""
        points = self.data["points"]
        ss, df = 0.0, 0
        for p in points:
            logs = [math.log(x) for x in p["runs"] if isinstance(x, (int, float)) and x > 0]
            if len(logs) > 1:
                m = sum(logs) / len(logs)
                ss += sum((x - m) ** 2 for x in logs)
                df += len(logs) - 1
        if df == 0:
            return []
        sigma = math.sqrt(ss / df)
        where = {}  # (round, trial number) -> point index
        for i, p in enumerate(points):
            for r, v in enumerate(p.get("verdicts") or []):
                if isinstance(v, dict) and isinstance(v.get("trial"), int):
                    where[(r, v["trial"])] = i

        def mean_log(p):
            logs = [math.log(x) for x in p["runs"] if isinstance(x, (int, float)) and x > 0]
            return (sum(logs) / len(logs), len(logs)) if logs else (None, 0)

        out = []
        for i, p in enumerate(points):
            rounds = [(r, v) for r, v in enumerate(p.get("verdicts") or []) if isinstance(v, dict)
                      and isinstance(v.get("flagged"), bool)]
            comparable = {where.get((r, v["against"])) for r, v in rounds
                          if isinstance(v.get("against"), int) and v["against"] >= 0}
            comparable.discard(None)
            comparable.discard(i)
            mine, n_mine = mean_log(p)
            if not rounds or not comparable or mine is None:
                continue
            best = None
            for c in comparable:
                theirs, n_theirs = mean_log(points[c])
                if theirs is None:
                    continue
                lead = (theirs - mine) if self.maximize else (mine - theirs)
                if best is None or lead > best[0]:
                    best = (lead, n_theirs)
            if best is None:
                continue
            lead, n_theirs = best
            se = sigma * math.sqrt(1 / n_mine + 1 / n_theirs)
            said = [c for c in (costly(v, self.pus) for _, v in rounds) if c is not None]
            out.append({"params": p["params"],
                        "flagged": 2 * sum(v["flagged"] for _, v in rounds) > len(rounds),
                        "costly": 2 * sum(said) > len(said) if said else None,
                        "slowed": lead - 1.96 * se > 0, "ratio": math.exp(lead)})
        return out

    def cost_judged_by_tune(self):
        """Whether tune itself judged the queue cost in this recording (its verdicts hold
        "costly"): recorded after probes/queue_cost.h's constants were chosen, so held out; a
        grid whose cost is re-applied from its figures (costly()) was seen when they were."""
        return any(isinstance(v.get("costly"), bool) for _, _, v in self.point_verdicts())

    def run_costs(self):
        """[(costly, slowed)] of the point verdicts scored against the job's figure (slowed not
        None) whose cost is known (costly() not None): the per-run score of the queue cost."""
        out = []
        for _, _, v in self.point_verdicts():
            c = costly(v, self.pus)
            if c is not None and v.get("slowed") is not None:
                out.append((c, bool(v["slowed"])))
        return out

    def labelled_waits(self, gated=False):
        """[(main_wait_share, slowed)] of the point verdicts that have both: what a wait
        threshold is fitted and scored on. Empty where tune's report gave no per-trial cost.
        gated: only the points whose queue cost is known, the share of those without a sign of
        cost (no spin, no preemption: costly() of the point as if flagged) taken as -1, so that
        no threshold flags them: the threshold of the verdict that the queue cost."""
        out = []
        for _, _, v in self.point_verdicts():
            if not isinstance(v.get("main_wait_share"), (int, float)) or v.get("slowed") is None:
                continue
            share = v["main_wait_share"]
            if gated:
                signs = costly({k: x for k, x in v.items() if k != "costly"} | {"flagged": True},
                               self.pus)
                if signs is None:
                    continue
                share = share if signs else -1.0
            out.append((share, bool(v["slowed"])))
        return out


def decode_param(value, distribution_json):
    d = json.loads(distribution_json)
    if d.get("name") == "CategoricalDistribution":
        return d["attributes"]["choices"][int(value)]
    if d.get("name") in ("IntDistribution", "IntUniformDistribution"):
        return int(value)
    return value


def read_study(db_path, name):
    """The study's trials by number: state, value, params, system and user attrs; None when the
    study is not in the database yet."""
    if not os.path.exists(db_path):
        return None
    db = sqlite3.connect(db_path)
    row = db.execute("SELECT study_id FROM studies WHERE study_name = ?", (name,)).fetchone()
    if row is None:
        return None
    trials = {}
    for tid, number, state in db.execute(
            "SELECT trial_id, number, state FROM trials WHERE study_id = ?", (row[0],)):
        trials[tid] = {"number": number, "state": state, "value": None, "params": {},
                       "system": {}, "user": {}}
    for tid, value in db.execute("SELECT trial_id, value FROM trial_values WHERE objective = 0"):
        if tid in trials:
            trials[tid]["value"] = value
    for tid, name_, value, dist in db.execute(
            "SELECT trial_id, param_name, param_value, distribution_json FROM trial_params"):
        if tid in trials:
            trials[tid]["params"][name_] = decode_param(value, dist)
    for table, field in (("trial_system_attributes", "system"), ("trial_user_attributes", "user")):
        for tid, k, v in db.execute(f"SELECT trial_id, key, value_json FROM {table}"):
            if tid in trials:
                trials[tid][field][k] = json.loads(v)
    db.close()
    return sorted(trials.values(), key=lambda t: t["number"])
