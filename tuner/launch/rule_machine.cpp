#include "tuner/launch/rule_machine.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "tuner/base/temp_dir.h"
#include "tuner/launch/machine_load.h"
#include "tuner/launch/rendered_launch.h"

namespace tune::tuner {

RuleMachine rule_machine(const StudySpec& spec, const probes::Topology* topo) {
  RuleMachine m;
  if (topo != nullptr) {
    m.pus = std::max(1, topo->pu_count());
    m.cores = std::max(1, topo->core_count());
    m.packages = std::max(1, static_cast<int>(topo->packages.size()));
    m.numa_nodes = std::max(1, static_cast<int>(topo->numa_nodes.size()));
  } else {
    m.pus = m.cores = std::max(1, static_cast<int>(allowed_cpus().size()));
  }
  m.omp_env_set = std::getenv("OMP_NUM_THREADS") != nullptr;  // trials inherit tune's environment
  if (spec.enqueue.empty()) return m;
  // The trial folder is only a placeholder's value here: nothing is created, so a TMPDIR that
  // names no folder is no error (temp_directory_path() threw, after the study was created).
  const auto tmp = temp_dir_or_empty();
  const auto values =
      trial_template_values(spec, spec.enqueue.front(),
                            (std::filesystem::path(tmp.empty() ? "/tmp" : tmp) / "rule").string(),
                            0, bundled_trainer_path());
  if (auto launch = render_launch(spec, values, ::geteuid() == 0)) {
    const auto plan = launch->probe_plan(launch->environment());
    m.ranks = std::max(1, plan.n);
    m.ranks_per_node = std::max(1, plan.ranks_per_node);
  }
  return m;
}

}  // namespace tune::tuner
