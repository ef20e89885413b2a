#include "tuner/launch/pool_defaults.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "probes/predict.h"
#include "tuner/base/text.h"
#include "tuner/launch/launcher.h"

namespace tune::tuner {

MeasuredPools measure_torch_pools(const std::string& python, double timeout_s) {
  MeasuredPools pools;
  LaunchRequest request;
  request.argv = {python, "-c",
                  "import torch; print(torch.get_num_threads(), torch.get_num_interop_threads())"};
  request.env_unset = {"OMP_NUM_THREADS", "MKL_NUM_THREADS"};
  request.timeout_s = timeout_s;
  const CapturedRun run = run_captured(request);
  const LaunchResult& result = run.result;
  std::istringstream out(run.out);
  std::string intra, inter;
  out >> intra >> inter;
  const auto n = probes::parse_int(intra);
  if (!result.started || result.exit_code != 0 || !n || *n < 1) return pools;
  pools.defaults["torch_intra_op"] = *n;
  pools.notes.push_back(fmt::format(
      "torch_intra_op: torch.get_num_threads() = {} here with nothing set (measured)", *n));
  if (const auto m = probes::parse_int(inter); m && *m >= 1) {
    pools.defaults["torch_inter_op"] = *m;
    pools.notes.push_back(
        fmt::format("torch_inter_op: torch.get_num_interop_threads() = {} here (measured)", *m));
  }
  return pools;
}

std::vector<std::string> measure_missing_pool_defaults(std::vector<StudyKnob>& knobs,
                                                       std::optional<StudyProgram>& program,
                                                       const std::vector<std::string>& command) {
  const auto unsized = [](const StudyKnob& k) {
    return k.program == "torch" && !k.pool.empty() && !k.program_default;
  };
  // `program:` pools of torch without `pool_defaults:` (a knob's `default:` sizes it otherwise).
  std::vector<std::string> program_unsized;
  if (program) {
    for (const std::string& pool : program->pools) {
      if (pool != "torch_intra_op" && pool != "torch_inter_op") continue;
      const bool sized = std::any_of(program->pool_defaults.begin(), program->pool_defaults.end(),
                                     [&](const auto& d) { return d.first == pool; }) ||
                         std::any_of(knobs.begin(), knobs.end(), [&](const StudyKnob& k) {
                           return k.pool == pool && k.program_default;
                         });
      if (!sized) program_unsized.push_back(pool);
    }
  }
  if (command.empty() || command[0].contains('{') ||
      (std::none_of(knobs.begin(), knobs.end(), unsized) && program_unsized.empty()))
    return {};
  const MeasuredPools measured = measure_torch_pools(command[0]);
  std::vector<std::string> notes;
  for (const std::string& pool : program_unsized) {
    const auto it = measured.defaults.find(pool);
    if (it == measured.defaults.end()) continue;
    program->pool_defaults.emplace_back(pool, it->second);
    notes.push_back(fmt::format("program.pools: {} pool defaults to {} here (measured with {})",
                                pool, it->second, command[0]));
  }
  for (StudyKnob& k : knobs) {
    const auto it = measured.defaults.find(k.pool);
    if (!unsized(k) || it == measured.defaults.end()) continue;
    k.program_default = it->second;
    notes.push_back(fmt::format("knobs.{}: {} pool defaults to {} here (measured with {})", k.param,
                                k.pool, it->second, command[0]));
  }
  return notes;
}

}  // namespace tune::tuner
