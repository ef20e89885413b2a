// Predictions that remember: what earlier trials of a study that started the same threads on the
// same cpusets were observed to do. The duty cycles (probes/learned_duty.h) generalise from one
// trial to another; some programs defeat them. A PyTorch DDP rank whose intra-op team of 2
// meets at a barrier is runnable a third of the time and still runs 8x slower beside another such
// rank on 2 PUs, because its spinning threads take the CPU the other rank's communication needs.
// Once a trial with the same layout has been observed, its verdict is the better prediction.
//
// The layout (layout_signature) is each rank's cpuset and the threads the prediction gave each
// named group (the main thread and the catalog's pools; not the measured "other" load): what the
// prediction was asked, not what it answered, so a trial is matched by its settings' effect on
// threads and binding whatever else it sets (an allreduce algorithm, a bucket size). Only
// single-node predictions take part. Plain values; not thread-safe while add() runs.
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
