// Trial ownership: which `tune` process (host, pid, start time) runs a RUNNING trial, and
// whether it is gone, so a dead owner's trial is marked FAIL. Pure functions; thread-safe.
// Design: docs/design-notes.md#tunerstoragetrial_ownerh
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "tuner/storage/storage.h"

namespace tune::tuner {

// The machine and process a runner is on (the runner's seam to the OS).
class HostEnv {
 public:
  virtual ~HostEnv() = default;
  virtual std::string host_name() const = 0;
  virtual pid_t self_pid() const = 0;
  // Start time of a live process (clock ticks since boot), nullopt when there is none.
  virtual std::optional<std::uint64_t> process_start_time(pid_t pid) const = 0;
};

// gethostname() and /proc.
const HostEnv& live_host();

// {"host": ..., "pid": ..., "start": ...}: stored as the trial's owner attribute.
nlohmann::json owner_identity(const HostEnv& host);

// True when the tune process that owns a RUNNING trial is known to be gone. `owner` is the
// trial's owner attribute (null for trials tune did not start, e.g. Optuna's: those are left
// alone unless they have heartbeats, since Optuna writes heartbeats only when asked to);
// `life` the trial's ages from storage (UTC, so time zones do not matter; clocks must agree to
// well within the grace period), nullopt when unknown.
bool owner_is_dead(const nlohmann::json& owner, const HostEnv& host,
                   const std::optional<TrialLiveness>& life, double grace_period_s);

}  // namespace tune::tuner
