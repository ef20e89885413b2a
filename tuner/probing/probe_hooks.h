// Wires the probes into the study loop: predict each trial before launch, sample its process
// tree while it runs, store the verdict when it ends (system attrs "probe_prediction" and
// "probe_verdict"). One hooks object serves one runner (one thread).
// Design: docs/design-notes.md#tunerprobingprobe_hooksh
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
