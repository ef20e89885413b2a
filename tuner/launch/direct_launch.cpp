// The direct launch kind (tuner/launch/launch_kind.h): no launch section, the command runs as the
// study wrote it. Its probes' plan reads the command: an mpirun line the user wrote is read as
// mpirun reads it (probes::launch_plan_from_argv), anything else is one rank. A batch script
// asks for one task.
#include "tuner/launch/launch_kind.h"

namespace tune::tuner {
namespace {

class DirectLaunch final : public LaunchKind {
 public:
  std::string_view name() const override { return "direct"; }
  std::optional<std::string> program() const override { return std::nullopt; }
  std::vector<std::string> prefix(const std::map<std::string, std::string>&) const override {
    return {};
  }
  probes::LaunchPlan probe_plan(const std::vector<std::string>& command,
                                const std::map<std::string, std::string>& env) const override {
    return probes::launch_plan_from_argv(command, env);
  }
  JobShape job_shape(const std::vector<std::string>&) const override {
    JobShape shape;
    shape.tasks_per_node = 1;
    return shape;
  }
};

}  // namespace

LaunchKindPtr direct_launch() {
  static const LaunchKindPtr k_direct = std::make_shared<DirectLaunch>();
  return k_direct;
}

}  // namespace tune::tuner
