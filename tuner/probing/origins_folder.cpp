#include "tuner/probing/origins_folder.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <system_error>

#include "probes/node_watch.h"
#include "probes/nodes.h"
#include "tuner/storage/trial_owner.h"

namespace tune::tuner {

namespace fs = std::filesystem;

namespace {

// The machine since its boot and this process's PID namespace (a container sharing the
// temporary folder numbers its processes otherwise): where an owner's pid means that process.
// "" when either cannot be read.
std::string pid_space() {
  const std::string boot = probes::this_machine_id();
  std::error_code ec;
  const fs::path ns = fs::read_symlink("/proc/self/ns/pid", ec);  // "pid:[4026531836]"
  if (boot.empty() || ec) return "";
  std::string out = boot + "/" + ns.string();
  for (char& c : out)
    if (c == ' ' || c == '\n' || c == '\t') c = '_';
  return out;
}

}  // namespace

void write_origins_owner(const fs::path& folder) {
  std::ofstream out(folder / probes::k_origins_owner);
  const HostEnv& host = live_host();
  const pid_t self = host.self_pid();
  out << self << ' ' << host.process_start_time(self).value_or(0) << ' ' << pid_space() << '\n';
}

std::optional<OriginsOwner> read_origins_owner(const fs::path& folder) {
  std::ifstream in(folder / probes::k_origins_owner);
  long long pid = 0;
  unsigned long long start = 0;
  std::string machine;
  if (!(in >> pid >> start >> machine) || pid <= 0 || start == 0) return std::nullopt;
  return OriginsOwner{static_cast<pid_t>(pid), start, machine};
}

namespace {

// The same test as a trial's owner (storage/trial_owner.h): the pid names a process that
// started when the owner did.
bool alive(const OriginsOwner& owner) {
  return live_host().process_start_time(owner.pid) == owner.start_ticks;
}

}  // namespace

int remove_orphaned_origins(const fs::path& root) {
  const std::string machine = pid_space();
  if (machine.empty()) return 0;  // another node's or container's folder cannot be told apart
  int removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& folder = it->path();
    if (!folder.filename().string().starts_with(k_origins_prefix)) continue;
    struct stat st {};
    if (::lstat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
      continue;
    const auto owner = read_origins_owner(folder);
    if (!owner || owner->machine != machine || alive(*owner)) continue;
    std::error_code rm;
    fs::remove_all(folder, rm);
    if (!rm) removed += 1;
  }
  return removed;
}

}  // namespace tune::tuner
