// Predictions that remember: the verdicts that earlier trials of a study with the same layout
// (each rank's cpuset, the threads predicted per group) got. Plain values; not thread-safe
// while add() runs.
// Design: docs/design-notes.md#probesverdict_memoryh
#pragma once

#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "probes/predict.h"

namespace tune::probes {

// "0:0-1[main=1,torch_intra_op=1] 1:0-1[...]" from a stored prediction (Prediction::to_json);
// "" when it is not a single node's.
std::string layout_signature(const nlohmann::json& prediction);

class VerdictMemory {
 public:
  // One earlier trial: its stored prediction and verdict (the monitor's JSON, with
  // observed_oversubscribed). False when either lacks what is needed (nothing is added).
  bool add(const nlohmann::json& prediction, const nlohmann::json& verdict);
  // Earlier trials with this layout: {observed oversubscribed, observed in all}.
  std::pair<int, int> seen(const std::string& signature) const;

 private:
  std::map<std::string, std::pair<int, int>> m_seen;
};

// When earlier trials with `prediction`'s layout were observed and most agree (a tie changes
// nothing), the prediction takes their verdict: `remembered` set, the summary's first word and
// its basis say so, and prediction_constraint follows it.
void apply_verdict_memory(Prediction& prediction, const VerdictMemory& memory);

}  // namespace tune::probes
