// The launcher framework's shared support (tuner/launch/launch_kind.h): the counting rule every
// kind's job shape uses.
#include "tuner/launch/launch_kind.h"

namespace tune::tuner {
namespace {

int ceil_div(int a, int b) { return (a + b - 1) / b; }

}  // namespace

JobShape job_shape_of(std::optional<int> nodes, std::optional<int> tasks,
                      std::optional<int> tasks_per_node) {
  JobShape shape;
  shape.nodes = nodes ? *nodes : (tasks && tasks_per_node ? ceil_div(*tasks, *tasks_per_node) : 1);
  if (tasks_per_node) {
    shape.tasks_per_node = *tasks_per_node;
  } else if (tasks) {
    shape.tasks_per_node = ceil_div(*tasks, shape.nodes);
  }
  shape.total_tasks = tasks.value_or(tasks_per_node.value_or(1) * shape.nodes);
  return shape;
}

}  // namespace tune::tuner
