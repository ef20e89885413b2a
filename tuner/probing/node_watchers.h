// The watchers on the other nodes of a multi-host trial: one `tune probe --watch TAG` per
// remote node, started over mpirun's remote shell under a tune-keeper, each printing its node's
// verdict when its stdin closes. Owned by one thread (the probe hooks'); not thread-safe.
// Design: docs/design-notes.md#tunerprobingnode_watchersh
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "probes/nodes.h"
#include "tuner/launch/rendered_launch.h"

namespace tune::tuner {

// Whether `host` (as a hostfile or --host names it) is the machine this process runs on.
bool is_this_host(const std::string& host);

class NodeWatchers {
 public:
  NodeWatchers() = default;
  ~NodeWatchers();  // stops what is still running, every process of each tree
  NodeWatchers(const NodeWatchers&) = delete;
  NodeWatchers& operator=(const NodeWatchers&) = delete;

  // Starts `shell... HOST TUNE probe --watch TAG --interval S` for each host. A host whose
  // watcher cannot start is reported by collect() with the reason.
  void start(const std::vector<std::string>& shell, const std::vector<probes::NodeRanks>& hosts,
             const std::string& tune_binary, const std::string& tag, double interval_s);
  // Closes every watcher's stdin, reads what each printed (at most `wait_s` in all), stops and
  // reaps them; when it returns, no process any remote shell started is left on this machine.
  std::vector<probes::NodeObservation> collect(double wait_s = 5.0);
  bool empty() const { return m_nodes.empty(); }

 private:
  struct Node {
    probes::NodeRanks host;
    pid_t pid = -1;    // the keeper (else the remote shell), leader of its own process group
    int control = -1;  // our end of the keeper's lifeline; -1 without a keeper
    int in = -1;       // its stdin (we write nothing; closing it ends the watcher)
    int out = -1;      // its stdout and stderr
    std::string output;
    std::string error;
  };
  // Stops the trees of `nodes` (SIGTERM, a bounded wait, SIGKILL) and reaps them.
  static void stop(const std::vector<Node*>& nodes);
  std::vector<Node> m_nodes;
};

}  // namespace tune::tuner
