// Rendering one trial's launch (tuner/launch/rendered_launch.h); the kinds are components
// (tuner/launch/launch_kind.h).
#include "tuner/launch/rendered_launch.h"

#include <fmt/format.h>
#include <algorithm>
#include <filesystem>
#include <thread>

#include "tuner/base/install_layout.h"

namespace tune::tuner {

namespace fs = std::filesystem;

std::string bundled_trainer_path() {
  const auto beside = sibling_program("tune-trainer");
  return beside.empty() ? "tune-trainer" : beside.string();
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

// Whether `text` names a kernel parameter whose value is null.
bool names_null_kernel(const StudySpec& spec, const std::string& text,
                       const TemplateValues& values) {
  for (const auto& k : spec.kernel_params) {
    const auto it = values.find(k.name);
    if (it != values.end() && std::holds_alternative<std::monostate>(it->second) &&
        text.contains("{" + k.name + "}"))
      return true;
  }
  return false;
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
    } else if (!names_null_kernel(spec, text, values)) {
      out.env_unset.push_back(name);  // null: leave the library at its own default
    }  // a kernel parameter's null: the variable as the environment has it (study_file.h)
  }
  // The one place that picks the kind; everything after asks the component.
  Result<LaunchKindPtr> kind = direct_launch();
  if (spec.launch.slurm)
    kind = render_srun_launch(spec, values);
  else if (spec.launch.mpirun)
    kind = render_mpirun_launch(spec, values, allow_run_as_root);
  if (!kind) return std::unexpected(kind.error());
  out.kind = std::move(*kind);
  return out;
}

std::vector<std::string> RenderedLaunch::argv() const {
  std::vector<std::string> argv = kind->prefix(env_set);
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
  return kind->probe_plan(command, env);
}

JobShape RenderedLaunch::job_shape() const { return kind->job_shape(command); }

std::map<std::string, std::string> RenderedLaunch::environment() const {
  return trial_environment(env_set, env_unset);
}

Result<LaunchRequest> expand_launch(const StudySpec& spec, const TemplateValues& values,
                                    bool allow_run_as_root) {
  auto rendered = render_launch(spec, values, allow_run_as_root);
  if (!rendered) return std::unexpected(rendered.error());
  return rendered->request();
}

}  // namespace tune::tuner
