// Wires the probes into the study loop: before each launch, predict the trial's busy threads
// per cpuset from the machine's topology and the trial's structured launch (RenderedLaunch's
// probe_plan: the settings launch.mpirun rendered, or the user's own command line); while it
// runs, sample its process tree from /proc; when it ends, store the verdict. The prediction and
// verdict go to the trial's system attrs "probe_prediction" and "probe_verdict"; with
// `probes: {constrain: true}` a predicted-oversubscribed trial is recorded as infeasible
// instead of being run. A trial that spans hosts is predicted per node (probes/nodes.h); its
// ranks carry a tag (tag_launch), every other node gets a watcher started over mpirun's ssh
// before launch (tuner/probing/node_watchers.h), and the stored verdict merges every node's, naming
// the node and rank at fault. One hooks object serves one runner (one thread).
#pragma once

#include <expected>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "probes/system_source.h"
#include "tuner/run/runner.h"

namespace tune::tuner {

// On the live machine (its topology read once, as hwloc's discovery is slow).
std::expected<TrialHooks, std::string> make_probe_hooks(const ProbeSpec& spec);

// Probes on `runner` when its study asks (`probes: {enabled: true}`), as `tune` and `tune confirm`
// run them: the torch pools the study leaves without `default:` measured once with its
// interpreter (measure_missing_pool_defaults), then the hooks set. `notes` says what was
// measured; `warning`, why the trials run without probes (a topology that cannot be read).
struct AttachedProbes {
  std::vector<std::string> notes;
  std::optional<std::string> warning;
};
AttachedProbes attach_probes(StudyRunner& runner);
// Through `source`, which the hooks own: tests pass an invented machine (probes::FakeSource).
std::expected<TrialHooks, std::string> make_probe_hooks(
    const ProbeSpec& spec, std::unique_ptr<probes::SystemSource> source);

}  // namespace tune::tuner
