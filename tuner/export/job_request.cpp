#include "tuner/export/job_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "probes/predict.h"
#include "tuner/base/text.h"
#include "tuner/base/trial_attrs.h"

namespace tune::tuner {
namespace {

// The trial's measured wall time and its re-runs': the longest and how many runs, none measured
// = nullopt.
struct MeasuredTime {
  double longest_s = 0;
  int runs = 0;
};

std::optional<MeasuredTime> measured_time(const search::FrozenTrial& trial,
                                          const std::vector<double>& rerun_wall_times) {
  MeasuredTime m;
  const auto add = [&](double s) {
    if (!(s >= 0)) return;  // NaN or negative: not a time
    m.longest_s = std::max(m.longest_s, s);
    ++m.runs;
  };
  if (const auto it = trial.user_attrs.find(k_attr_wall_time);
      it != trial.user_attrs.end() && it->is_number())
    add(it->get<double>());
  for (double s : rerun_wall_times) add(s);
  if (m.runs == 0) return std::nullopt;
  return m;
}

// The busy threads per rank of the trial's stored prediction, and each pool's share; nullopt
// when the trial has none (probes off, or a prediction without ranks). A prediction that is there
// but not as the probes write it is an error naming the attribute.
struct PredictedThreads {
  int threads = 0;
  std::string pools;  // "main 1, openmp 1 (OMP_NUM_THREADS=2)"
};

Result<std::optional<PredictedThreads>> predicted_threads(const search::FrozenTrial& trial) {
  const auto it = trial.system_attrs.find(k_attr_probe_prediction);
  if (it == trial.system_attrs.end() || it->is_null()) return std::nullopt;
  const auto prediction = probes::prediction_from_json(*it);
  if (!prediction)
    return std::unexpected(fmt::format(
        "trial #{}: system attr '{}{}' {}, not as tune's probes store it; pick another trial "
        "with --trial",
        trial.number, k_attr_probe_prediction, prediction.error().key,
        one_line(prediction.error().why)));
  std::optional<PredictedThreads> most;
  for (const probes::RankPrediction& rank : prediction->ranks) {
    PredictedThreads p;
    for (const probes::ThreadGroup& group : rank.groups) {
      // The runtimes' own threads are no pool a CPU is asked for (the prediction's verdict
      // leaves them out too).
      if (group.busy == 0 || group.name == probes::k_runtime_group) continue;
      p.threads += group.busy;
      if (!p.pools.empty()) p.pools += ", ";
      p.pools += one_line(group.name) + " " + std::to_string(group.busy);
      if (group.name != "main" && !group.detail.empty())
        p.pools += " (" + one_line(group.detail) + ")";
    }
    if (!most || p.threads > most->threads) most = std::move(p);
  }
  if (most && most->threads < 1) return std::nullopt;
  return most;
}

// The threads per rank by the last rule: the trial's variables named *THREADS*.
std::optional<ThreadsPerRank> threads_from_variable_names(
    const std::map<std::string, std::string>& env_set) {
  std::optional<ThreadsPerRank> best;
  for (const auto& [name, value] : env_set) {
    const auto n = positive_int(value);
    if (!n || !name.contains("THREADS")) continue;
    if (!best || *n > best->threads) {
      if (!best) best.emplace();
      best->threads = *n;
      best->source = name + "=" + std::to_string(*n);
    }
  }
  return best;
}

// "2x", "1.5x": how many times the PUs the busy threads were.
std::string times(int busy, int pus) {
  return fmt::format("{:.3g}x", static_cast<double>(busy) / std::max(1, pus));
}

}  // namespace

int walltime_from_measured(double longest_s) {
  const double s = std::max({0.0, 2 * longest_s, longest_s + 300});
  return static_cast<int>(std::ceil(s / 60)) * 60;
}

std::string format_walltime(int seconds) {
  seconds = std::max(0, seconds);
  return fmt::format("{:02}:{:02}:{:02}", seconds / 3600, seconds / 60 % 60, seconds % 60);
}

std::optional<TimeLimit> time_limit(const search::FrozenTrial& trial,
                                    std::optional<double> walltime_s,
                                    const std::vector<double>& rerun_wall_times,
                                    const std::string& override_how) {
  if (walltime_s) {
    const int seconds = static_cast<int>(std::ceil(std::max(1.0, *walltime_s)));
    return TimeLimit{seconds, "# Time limit " + format_walltime(seconds) +
                                  ": given to tune export (--walltime).\n"};
  }
  const auto m = measured_time(trial, rerun_wall_times);
  if (!m) return std::nullopt;
  const int seconds = walltime_from_measured(m->longest_s);
  std::string why = fmt::format(
      "# Time limit {}: twice the trial's {} ({:.1f} s{}), at least 5 minutes more, rounded up "
      "to minutes.\n"
      "# The trial may have been a shortened run (fewer steps than a real one): a full run may "
      "need longer;\n"
      "# give it with {} or tune export --walltime.\n",
      format_walltime(seconds), m->runs > 1 ? "longest run" : "run", m->longest_s,
      m->runs > 1 ? fmt::format(", the longest of {} runs", m->runs) : "", override_how);
  return TimeLimit{seconds, std::move(why)};
}

std::optional<TunedMachine> tuned_machine(const search::FrozenTrial& trial) {
  const auto it = trial.system_attrs.find(k_attr_machine);
  if (it == trial.system_attrs.end() || !it->is_object()) return std::nullopt;
  const auto count = [&](const char* key) {
    const auto v = it->find(key);
    return v != it->end() && v->is_number_integer() ? v->get<int>() : 0;
  };
  TunedMachine m;
  const auto host = it->find("host");
  if (host != it->end() && host->is_string()) m.host = host->get<std::string>();
  m.packages = count("packages");
  m.numa_nodes = count("numa_nodes");
  m.cores = count("cores");
  m.pus = count("pus");
  if (m.cores <= 0 || m.pus <= 0) return std::nullopt;
  return m;
}

std::string machine_text(const TunedMachine& m) {
  return fmt::format("{}: {}, {}, {}, {}", m.host.empty() ? "unknown host" : one_line(m.host),
                     plural(m.packages, "package", "packages"),
                     plural(m.numa_nodes, "NUMA node", "NUMA nodes"),
                     plural(m.cores, "core", "cores"), plural(m.pus, "PU", "PUs"));
}

Result<std::optional<ThreadsPerRank>> threads_per_rank(
    const std::map<std::string, std::string>& env_set, const LaunchKind& kind,
    const search::FrozenTrial& trial, const JobShape& shape,
    const std::function<std::string(int cpus_per_rank)>& asked) {
  std::optional<int> omp;
  if (const auto it = env_set.find("OMP_NUM_THREADS"); it != env_set.end())
    omp = positive_int(it->second);
  std::optional<ThreadsPerRank> t;
  if (const auto step_cpus = kind.cpus_per_task()) {
    if (auto n = positive_int(*step_cpus)) {
      t = ThreadsPerRank{ThreadsPerRank::Basis::step, *n, *n, "", omp, ""};
      t->source = "the step's own --cpus-per-task=" + std::to_string(*n);
      return t;  // what Slurm granted the trial's steps: no cap to judge
    }
  }
  auto predicted = predicted_threads(trial);
  if (!predicted) return std::unexpected(predicted.error());
  if (*predicted) {
    t = ThreadsPerRank{
        ThreadsPerRank::Basis::prediction, (*predicted)->threads, 0, (*predicted)->pools, omp, ""};
  } else if ((t = threads_from_variable_names(env_set))) {
    t->basis = ThreadsPerRank::Basis::variable_names;
    t->omp = omp;
  } else {
    return t;
  }
  t->cpus = t->threads;
  const auto m = tuned_machine(trial);
  if (!m) {
    t->fit =
        "# Not checked against the node it was tuned on: the trial did not record its machine.\n";
    return t;
  }
  const int per_node = std::max(1, shape.tasks_per_node.value_or(1));
  const int busy = per_node * t->threads;
  const std::string on = m->pus == m->cores ? plural(m->cores, "core", "cores")
                                            : plural(m->cores, "core", "cores") + " (" +
                                                  plural(m->pus, "PU", "PUs") + ")";
  const std::string ran =
      fmt::format("The winner ran {} x {} on {}", plural(per_node, "rank", "ranks"),
                  plural(t->threads, "thread", "threads"), on);
  if (busy <= m->pus) {
    t->fit = fmt::format("# {}: {} of its {} busy, as {} asks.\n", ran, busy,
                         plural(m->pus, "PU", "PUs"), asked(t->cpus));
    return t;
  }
  t->cpus = std::max(1, m->pus / per_node);
  t->fit = fmt::format("# {} ({} oversubscribed); {} asks for what it had", ran,
                       times(busy, m->pus), asked(t->cpus));
  t->fit += per_node > m->pus ? fmt::format(" (its {} ranks alone outnumber the {}).\n", per_node,
                                            plural(m->pus, "PU", "PUs"))
                              : ".\n";
  return t;
}

std::string cpus_note(const ThreadsPerRank& t, const std::string& what) {
  std::string s;
  switch (t.basis) {
    case ThreadsPerRank::Basis::step:
      s = fmt::format("# {}, {} (launch.slurm).\n", what, t.source);
      break;
    case ThreadsPerRank::Basis::prediction:
      s = comment_lines(
          fmt::format("{}; the trial's busy threads per rank, {}, from the probes' prediction "
                      "for it: {}.",
                      what, t.threads, t.source),
          "#", "#  ");
      break;
    case ThreadsPerRank::Basis::variable_names:
      s = comment_lines(
          fmt::format("{}; the largest thread pool of a rank ({}), read from the trial's "
                      "variables named *THREADS*: the trial has no prediction (probes off).",
                      what, t.source),
          "#", "#  ");
      break;
  }
  return s + t.fit;
}

std::string job_name(const std::string& study, std::size_t limit) {
  return plain_name("tune-" + study, limit);
}

// The counts are the study file's own, where they are plain numbers (positive_int): a count that
// depends on a trial's parameters is known only when that trial runs.
WorkerShape worker_shape(const LaunchSpec& launch) {
  WorkerShape shape;
  if (launch.slurm) {
    const auto& s = *launch.slurm;
    const auto tasks = positive_int(s.ntasks);
    const auto per_node = positive_int(s.ntasks_per_node);
    const JobShape counted = job_shape_of(positive_int(s.nodes), tasks, per_node);
    shape.nodes = counted.nodes;
    if (tasks || per_node) shape.tasks = counted.total_tasks;
    shape.cpus_per_task = positive_int(s.cpus_per_task);
  } else if (launch.mpirun) {
    const auto tasks = positive_int(launch.n);
    const JobShape counted = job_shape_of(std::nullopt, tasks, positive_int(launch.npernode));
    shape.tasks = tasks;
    if (tasks) shape.nodes = counted.nodes;
  }
  return shape;
}

}  // namespace tune::tuner
