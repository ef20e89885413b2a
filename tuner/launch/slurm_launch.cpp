// The srun launch kind (tuner/launch/launch_kind.h) and its support: launch.slurm rendered, the
// srun prefix, the probes' placement in mpirun's terms, step names, cancelling leftover steps.
#include "tuner/launch/slurm_launch.h"

#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <boost/process.hpp>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <thread>

#include "tuner/base/text.h"
#include "tuner/base/trial_attrs.h"

namespace tune::tuner {
namespace {

namespace bp = boost::process;

// How long a cancelled step may take to end: Slurm's default KillWait (30 s, SIGTERM to SIGKILL)
// plus a margin.
constexpr std::chrono::seconds k_step_end_wait{40};

// srun's --cpu-bind type in mpirun's --bind-to words ("verbose," and the like dropped). A
// binding the probes cannot model (map_cpu:, mask_cpu:, rank) counts as none.
std::string bind_word(const std::optional<std::string>& cpu_bind) {
  if (!cpu_bind) return "none";
  std::string type = *cpu_bind;
  if (const auto comma = type.rfind(','); comma != std::string::npos) type = type.substr(comma + 1);
  if (type == "cores") return "core";
  if (type == "threads") return "hwthread";
  if (type == "sockets") return "socket";
  if (type == "ldoms") return "numa";
  return "none";
}

struct Captured {
  int exit_code = -1;
  std::string out;
};

// Runs a Slurm client; stdout captured, stderr dropped. The clients bound their own waits on
// slurmctld (MessageTimeout), so reading to the end cannot hang for long.
Result<Captured> capture(const std::string& program, const std::vector<std::string>& args) {
  const auto path = bp::search_path(program);
  if (path.empty()) return std::unexpected(fmt::format("{} is not in PATH", program));
  try {
    bp::ipstream out;
    bp::child child(path, bp::args = args, bp::std_in<bp::null, bp::std_out> out,
                    bp::std_err > bp::null);
    Captured c;
    for (std::string line; std::getline(out, line);) c.out += line + '\n';
    child.wait();
    c.exit_code = child.exit_code();
    return c;
  } catch (const std::exception& e) {
    return std::unexpected(fmt::format("{}: {}", program, e.what()));
  }
}

}  // namespace

std::vector<std::string> srun_prefix(const RenderedSrun& srun) {
  std::vector<std::string> argv = {srun.program, "--job-name=" + srun.step_name};
  for (const auto& option : k_srun_value_options) {
    if (const auto& value = srun.*option.rendered)
      argv.push_back(fmt::format("{}={}", option.flag, *value));
  }
  // One rank failing ends the step, as one failing rank ends an mpirun.
  argv.push_back("--kill-on-bad-exit=1");
  argv.insert(argv.end(), srun.extra.begin(), srun.extra.end());
  return argv;
}

probes::MpirunOptions srun_probe_options(const RenderedSrun& srun) {
  probes::MpirunOptions o;
  o.n = srun.ntasks.value_or("");
  o.npernode = srun.ntasks_per_node.value_or("");
  if (o.npernode.empty() && srun.nodes && srun.ntasks) {
    // --srun.nodes N --srun.ntasks T: Slurm spreads T over N srun.nodes, at most ceil(T / N) on
    // one.
    const int n = std::atoi(srun.nodes->c_str());
    const int t = std::atoi(srun.ntasks->c_str());
    if (n > 0 && t > 0) o.npernode = std::to_string((t + n - 1) / n);
  }
  if (o.n.empty() && !o.npernode.empty()) {
    const int n = srun.nodes ? std::atoi(srun.nodes->c_str()) : 1;
    if (n > 0) o.n = std::to_string(n * std::atoi(o.npernode.c_str()));
  }
  o.bind_to = bind_word(srun.cpu_bind);
  if (srun.cpus_per_task && (o.bind_to == "core" || o.bind_to == "hwthread"))
    o.map_by = "core:PE=" + *srun.cpus_per_task;
  return o;
}

std::string slurm_step_name(const std::string& study, int trial_number) {
  std::string name = fmt::format("tune-{}-{}", study, trial_number);
  for (char& c : name) {
    const bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                       c == '.' || c == '_' || c == '-';
    if (!plain) c = '_';
  }
  return name;
}

Result<int> cancel_slurm_steps(const std::string& step_name) {
  std::vector<std::string> query = {"--noheader", "--name=" + step_name, "--format=%i"};
  const char* job = std::getenv("SLURM_JOB_ID");
  if (job && *job) {
    query.insert(query.end(), {"--steps", fmt::format("--jobs={}", job)});
  } else {
    query.push_back(fmt::format("--user={}", getuid()));
  }
  // Until squeue no longer lists it: the next trial must not start beside a step still ending.
  int cancelled = 0;
  const auto deadline = std::chrono::steady_clock::now() + k_step_end_wait;
  while (true) {
    auto listed = capture("squeue", query);
    if (!listed) return std::unexpected(listed.error());
    if (listed->exit_code != 0)
      return std::unexpected(fmt::format("squeue exited with {}", listed->exit_code));
    std::vector<std::string> ids;
    std::istringstream lines(listed->out);
    for (std::string id; lines >> id;) ids.push_back(id);
    if (ids.empty()) return cancelled;
    if (std::chrono::steady_clock::now() > deadline)
      return std::unexpected(fmt::format("Slurm still lists {} {} s after scancel",
                                         fmt::join(ids, " "), k_step_end_wait.count()));
    if (cancelled == 0) {
      // SIGKILL first: the trial's srun already had its SIGTERM and grace period, and a plain
      // scancel would wait Slurm's KillWait (30 s by default) on tasks that ignore SIGTERM.
      // Then the cancel itself, which ends a step whose tasks are gone. Their exit status is
      // not the verdict (the step may end between the two and the second then finds none);
      // whether Slurm still lists the step when the wait is over is.
      for (const std::vector<std::string>& how :
           {std::vector<std::string>{"--signal=KILL"}, std::vector<std::string>{}}) {
        std::vector<std::string> args = {"--quiet"};
        args.insert(args.end(), how.begin(), how.end());
        args.insert(args.end(), ids.begin(), ids.end());
        if (auto r = capture("scancel", args); !r) return std::unexpected(r.error());
      }
      cancelled = static_cast<int>(ids.size());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

nlohmann::json end_slurm_step(const std::string& step_name, const LaunchResult& result) {
  nlohmann::json attr = {{"name", step_name}, {"cancelled", 0}};
  if (result.stopped == StopReason::none && result.signal == 0) return attr;
  auto cancelled = cancel_slurm_steps(step_name);
  if (cancelled) {
    attr["cancelled"] = *cancelled;
  } else {
    attr["cancel_error"] = cancelled.error();
    std::cerr << "tune: warning: Slurm step " << step_name << ": " << cancelled.error() << '\n';
  }
  return attr;
}

namespace {

class SrunLaunch final : public LaunchKind {
 public:
  explicit SrunLaunch(RenderedSrun settings) : m_settings(std::move(settings)) {}

  std::string_view name() const override { return "srun"; }
  std::optional<std::string> program() const override { return m_settings.program; }
  // srun hands its whole environment to the tasks (--export=ALL): no names in the argv.
  std::vector<std::string> prefix(const std::map<std::string, std::string>&) const override {
    return srun_prefix(m_settings);
  }
  probes::LaunchPlan probe_plan(const std::vector<std::string>& command,
                                const std::map<std::string, std::string>& env) const override {
    return probes::launch_plan_from_mpirun(srun_probe_options(m_settings), command, env);
  }
  JobShape job_shape(const std::vector<std::string>&) const override {
    const auto count = [](const std::optional<std::string>& text) {
      return text ? positive_int(*text) : std::nullopt;
    };
    return job_shape_of(count(m_settings.nodes), count(m_settings.ntasks),
                        count(m_settings.ntasks_per_node));
  }
  std::optional<std::string> cpus_per_task() const override { return m_settings.cpus_per_task; }
  bool places_tasks() const override { return true; }
  bool ranks_in_tree() const override { return false; }
  nlohmann::json end_trial(const LaunchResult& result) const override {
    return {{k_attr_slurm_step, end_slurm_step(m_settings.step_name, result)}};
  }

 private:
  RenderedSrun m_settings;
};

}  // namespace

LaunchKindPtr srun_launch(RenderedSrun settings) {
  return std::make_shared<SrunLaunch>(std::move(settings));
}

// launch.slurm expanded for one trial; its step is named after the study and trial number.
Result<LaunchKindPtr> render_srun_launch(const StudySpec& spec, const TemplateValues& values) {
  const SlurmLaunchSpec& l = *spec.launch.slurm;
  RenderedSrun r;
  auto expand = [&](const char* key,
                    const std::string& text) -> Result<std::optional<std::string>> {
    if (text.empty()) return std::nullopt;
    auto e = expand_template(text, values);
    if (!e)
      return std::unexpected(fmt::format("{}: launch.slurm.{}: {}", spec.file, key, e.error()));
    return *e;
  };
  auto program = expand("program", l.program);
  if (!program) return std::unexpected(program.error());
  if (*program) r.program = **program;
  for (const auto& option : k_srun_value_options) {
    auto value = expand(option.key, l.*option.spec);
    if (!value) return std::unexpected(value.error());
    r.*option.rendered = *value;
  }
  for (const auto& text : l.extra) {
    auto e = expand_template(text, values);
    if (!e) return std::unexpected(fmt::format("{}: launch.slurm.extra: {}", spec.file, e.error()));
    if (*e) r.extra.push_back(**e);
  }
  const auto number = values.find("trial_number");
  const auto* n = number == values.end() ? nullptr : std::get_if<std::int64_t>(&number->second);
  r.step_name = slurm_step_name(spec.name, n ? static_cast<int>(*n) : 0);
  return srun_launch(std::move(r));
}

}  // namespace tune::tuner
