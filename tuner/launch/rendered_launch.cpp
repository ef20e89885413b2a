#include "tuner/launch/rendered_launch.h"

#include <fmt/format.h>
#include <algorithm>
#include <filesystem>
#include <thread>

namespace tune::tuner {

namespace fs = std::filesystem;

std::string bundled_trainer_path() {
  std::error_code ec;
  const auto self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto candidate = self.parent_path() / "tune-trainer";
    if (fs::exists(candidate, ec)) return candidate.string();
  }
  return "tune-trainer";
}

TemplateValues trial_template_values(const StudySpec& spec,
                                     const std::map<std::string, search::ParamValue>& params,
                                     const std::string& trial_dir, int trial_number,
                                     const std::string& trainer) {
  TemplateValues values(params.begin(), params.end());
  values["trial_dir"] = trial_dir;
  values["trial_number"] = static_cast<std::int64_t>(trial_number);
  values["study"] = spec.name;
  values["study_dir"] = spec.dir;
  values["output_dir"] = fs::absolute(spec.output).string();
  values["tune_trainer"] = trainer;
  values["nproc"] = static_cast<std::int64_t>(std::thread::hardware_concurrency());
  return values;
}

namespace {

// `hosts: [a, b]` as --host: mpirun gives each name one slot, so with npernode N each gets :N
// (an entry that says a:2 keeps its own count).
std::string host_option(const std::vector<std::string>& hosts,
                        const std::optional<std::string>& npernode) {
  std::string out;
  for (const auto& h : hosts) {
    if (!out.empty()) out += ',';
    out += h;
    if (npernode && h.find(':') == std::string::npos) out += ':' + *npernode;
  }
  return out;
}

// launch.slurm expanded for one trial; its step is named after the study and trial number.
Result<RenderedSrun> render_srun(const StudySpec& spec, const TemplateValues& values) {
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
  return r;
}

}  // namespace

Result<RenderedLaunch> render_launch(const StudySpec& spec, const TemplateValues& values,
                                     bool allow_run_as_root) {
  auto expand = [&](const std::string& text) { return expand_template(text, values); };
  RenderedLaunch out;
  auto command = expand_list(spec.command, values, spec.file + ": command");
  if (!command) return std::unexpected(command.error());
  out.command = std::move(*command);
  for (const auto& [name, text] : spec.env) {
    auto e = expand(text);
    if (!e) return std::unexpected(fmt::format("{}: env.{}: {}", spec.file, name, e.error()));
    if (*e) {
      out.env_set[name] = **e;
    } else {
      out.env_unset.push_back(name);  // null: leave the library at its own default
    }
  }
  if (spec.launch.slurm) {
    auto srun = render_srun(spec, values);
    if (!srun) return std::unexpected(srun.error());
    out.srun = std::move(*srun);
    return out;
  }
  if (!spec.launch.mpirun) return out;
  const auto& l = spec.launch;
  RenderedMpirun m;
  auto program = expand(l.mpirun_program);
  if (program && *program) m.program = **program;
  m.allow_run_as_root = allow_run_as_root;
  for (const auto& option : k_mpirun_value_options) {
    const std::string& text = l.*option.spec;
    if (text.empty()) continue;
    auto e = expand(text);
    if (!e) return std::unexpected(fmt::format("{}: launch.mpirun: {}", spec.file, e.error()));
    m.*option.rendered = *e;
  }
  if (!l.hosts.empty()) {
    auto hosts = expand_list(l.hosts, values, spec.file + ": launch.mpirun.hosts");
    if (!hosts) return std::unexpected(hosts.error());
    m.host = host_option(*hosts, m.npernode);
  }
  // mpirun reads the hostfile from the trial's folder, the probes and exports from here: one
  // absolute path for all of them, relative to where tune runs (as output: and storage: are).
  if (m.hostfile && !m.hostfile->empty()) m.hostfile = fs::absolute(*m.hostfile).string();
  m.oversubscribe = l.oversubscribe;
  for (const auto& [key, text] : l.mca) {
    auto e = expand(text);
    if (!e)
      return std::unexpected(
          fmt::format("{}: launch.mpirun.mca.{}: {}", spec.file, key, e.error()));
    if (*e) m.mca.emplace_back(key, **e);
  }
  auto extra = expand_list(l.extra, values, spec.file + ": launch.mpirun.extra");
  if (!extra) return std::unexpected(extra.error());
  m.extra = std::move(*extra);
  out.mpirun = std::move(m);
  return out;
}

std::vector<std::string> RenderedLaunch::argv() const {
  std::vector<std::string> argv;
  if (srun) argv = srun_prefix(*srun);
  if (mpirun) {
    const auto& m = *mpirun;
    argv.push_back(m.program);
    if (m.allow_run_as_root) argv.push_back("--allow-run-as-root");
    for (const auto& option : k_mpirun_value_options) {
      if (const auto& value = m.*option.rendered) argv.insert(argv.end(), {option.flag, *value});
    }
    if (m.oversubscribe) argv.push_back("--oversubscribe");
    for (const auto& [key, value] : m.mca) argv.insert(argv.end(), {"--mca", key, value});
    // Export the trial's variables to ranks on other hosts too.
    for (const auto& [name, value] : env_set) argv.insert(argv.end(), {"-x", name});
    argv.insert(argv.end(), m.extra.begin(), m.extra.end());
  }
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

LaunchRequest RenderedLaunch::request() const {
  LaunchRequest req;
  req.argv = argv();
  req.env_set = env_set;
  req.env_unset = env_unset;
  return req;
}

probes::LaunchPlan RenderedLaunch::probe_plan(const std::map<std::string, std::string>& env) const {
  if (srun) return probes::launch_plan_from_mpirun(srun_probe_options(*srun), command, env);
  if (!mpirun) return probes::launch_plan_from_argv(command, env);
  const auto& m = *mpirun;
  probes::MpirunOptions options;
  options.n = m.n.value_or("");
  options.npernode = m.npernode.value_or("");
  options.bind_to = m.bind_to.value_or("");
  options.map_by = m.map_by.value_or("");
  options.host = m.host.value_or("");
  options.hostfile = m.hostfile.value_or("");
  // `extra` is a piece of mpirun's command line as the user wrote it: read in place, as mpirun
  // reads it (its --bind-to overrides the one above; the program starts where the options end,
  // normally at the command's first element).
  std::vector<std::string> tail = m.extra;
  tail.insert(tail.end(), command.begin(), command.end());
  const std::size_t first = probes::read_mpirun_options(tail, options);
  std::vector<std::string> program(tail.begin() + static_cast<std::ptrdiff_t>(first), tail.end());
  return probes::launch_plan_from_mpirun(options, std::move(program), env);
}

Result<LaunchRequest> expand_launch(const StudySpec& spec, const TemplateValues& values,
                                    bool allow_run_as_root) {
  auto rendered = render_launch(spec, values, allow_run_as_root);
  if (!rendered) return std::unexpected(rendered.error());
  return rendered->request();
}

}  // namespace tune::tuner
