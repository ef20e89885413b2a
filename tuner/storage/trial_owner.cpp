#include "tuner/storage/trial_owner.h"

#include <unistd.h>

#include "tuner/base/proc_stat.h"

namespace tune::tuner {
namespace {

class LiveHost final : public HostEnv {
 public:
  std::string host_name() const override {
    char buf[256] = {};
    gethostname(buf, sizeof buf - 1);
    return buf;
  }
  pid_t self_pid() const override { return getpid(); }
  // Field 22 of /proc/PID/stat: pid plus this names a process for good.
  std::optional<std::uint64_t> process_start_time(pid_t pid) const override {
    const auto st = read_proc_stat(pid);
    if (!st) return std::nullopt;
    return st->starttime;
  }
};

}  // namespace

const HostEnv& live_host() {
  static const LiveHost host;
  return host;
}

nlohmann::json owner_identity(const HostEnv& host) {
  const pid_t pid = host.self_pid();
  return {{"host", host.host_name()},
          {"pid", pid},
          {"start", host.process_start_time(pid).value_or(0)}};
}

bool owner_is_dead(const nlohmann::json& owner, const HostEnv& host,
                   const std::optional<TrialLiveness>& life, double grace_period_s) {
  const bool tune_trial = owner.is_object();
  if (tune_trial && owner.value("host", "") == host.host_name()) {
    const auto start = host.process_start_time(owner.value("pid", 0));
    return !start || *start != owner.value("start", std::uint64_t{0});
  }
  if (!life) return false;
  if (life->since_heartbeat_s) return *life->since_heartbeat_s > grace_period_s;
  return tune_trial && life->since_start_s && *life->since_start_s > grace_period_s;
}

}  // namespace tune::tuner
