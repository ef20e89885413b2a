#include "tuner/launch_plan.h"

#include <fmt/format.h>
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

Result<LaunchRequest> expand_launch(const StudySpec& spec, const TemplateValues& values,
                                    bool allow_run_as_root) {
  auto expand = [&](const std::string& text) { return expand_template(text, values); };
  LaunchRequest req;
  std::vector<std::string> program;
  for (const auto& arg : spec.command) {
    auto e = expand(arg);
    if (!e) return std::unexpected(fmt::format("{}: command: {}", spec.file, e.error()));
    if (*e) program.push_back(**e);
  }
  for (const auto& [name, text] : spec.env) {
    auto e = expand(text);
    if (!e) return std::unexpected(fmt::format("{}: env.{}: {}", spec.file, name, e.error()));
    if (*e) {
      req.env_set[name] = **e;
    } else {
      req.env_unset.push_back(name);  // null: leave the library at its own default
    }
  }
  if (spec.launch.mpirun) {
    const auto& l = spec.launch;
    auto m = expand(l.mpirun_program);
    req.argv.push_back(m && *m ? **m : "mpirun");
    if (allow_run_as_root) req.argv.push_back("--allow-run-as-root");
    auto option = [&](const char* flag, const std::string& text) -> Result<void> {
      if (text.empty()) return {};
      auto e = expand(text);
      if (!e) return std::unexpected(fmt::format("{}: launch.mpirun: {}", spec.file, e.error()));
      if (*e) {
        req.argv.push_back(flag);
        req.argv.push_back(**e);
      }
      return {};
    };
    for (auto r : {option("-n", l.np), option("--npernode", l.npernode),
                   option("--bind-to", l.bind_to), option("--map-by", l.map_by),
                   option("--hostfile", l.hostfile), option("--host", l.host)}) {
      if (!r) return std::unexpected(r.error());
    }
    if (l.oversubscribe) req.argv.push_back("--oversubscribe");
    for (const auto& [key, text] : l.mca) {
      auto e = expand(text);
      if (!e)
        return std::unexpected(
            fmt::format("{}: launch.mpirun.mca.{}: {}", spec.file, key, e.error()));
      if (*e) req.argv.insert(req.argv.end(), {"--mca", key, **e});
    }
    // Export the trial's variables to ranks on other hosts too.
    for (const auto& [name, value] : req.env_set) req.argv.insert(req.argv.end(), {"-x", name});
    for (const auto& text : l.extra) {
      auto e = expand(text);
      if (!e)
        return std::unexpected(fmt::format("{}: launch.mpirun.extra: {}", spec.file, e.error()));
      if (*e) req.argv.push_back(**e);
    }
  }
  req.argv.insert(req.argv.end(), program.begin(), program.end());
  return req;
}

}  // namespace tune::tuner
