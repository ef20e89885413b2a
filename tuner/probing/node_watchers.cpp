#include "tuner/probing/node_watchers.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "tuner/base/result.h"
#include "tuner/base/text.h"
#include "tuner/launch/keeper.h"
#include "tuner/launch/process_tree.h"
#include "tuner/launch/program_identity.h"

extern char** environ;

namespace tune::tuner {
namespace {

using Clock = std::chrono::steady_clock;

// SIGTERM to SIGKILL of a watcher's tree: the keeper's --grace, and tune's own without a keeper.
constexpr double k_stop_grace_s = 2.0;
// Past the grace, how long a tree has to be gone before tune SIGKILLs what is left itself.
constexpr double k_stop_margin_s = 2.0;
// The fd the keeper gets its lifeline on (dup2'd there by the spawn, which clears CLOEXEC).
constexpr int k_keeper_control_fd = 3;

std::set<std::string> local_addresses() {
  std::set<std::string> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr) continue;
    char text[INET6_ADDRSTRLEN] = {};
    const int family = a->ifa_addr->sa_family;
    if (family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof text);
    } else if (family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr, text,
                sizeof text);
    } else {
      continue;
    }
    out.insert(text);
  }
  freeifaddrs(list);
  return out;
}

// The addresses `host` resolves to (an address resolves to itself without a lookup).
std::vector<std::string> addresses_of(const std::string& host) {
  std::vector<std::string> out;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0) return out;
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    char text[NI_MAXHOST] = {};
    if (getnameinfo(a->ai_addr, a->ai_addrlen, text, sizeof text, nullptr, 0, NI_NUMERICHOST) == 0)
      out.emplace_back(text);
  }
  freeaddrinfo(res);
  return out;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Whether child `pid` has ended by `deadline` (left unreaped: a zombie leader keeps its process
// group's id from being reused while the group is signalled).
bool ended_by(pid_t pid, Clock::time_point deadline) {
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  for (;;) {
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
      if (errno == EINTR) continue;
      break;  // not our child (any more): nothing to wait for
    }
    if (info.si_pid == pid) break;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      if (pidfd >= 0) ::close(pidfd);
      return false;
    }
    // A pidfd turns readable when the process ends; without one (old kernel), look often.
    pollfd p{pidfd, POLLIN, 0};
    ::poll(&p, pidfd >= 0 ? 1 : 0, pidfd >= 0 ? static_cast<int>(left) : 10);
  }
  if (pidfd >= 0) ::close(pidfd);
  return true;
}

// Starts `argv` (argv[0] a name looked up in PATH, or a path) with stdin `in` and stdout and
// stderr `out`, leading a process group of its own, under a tune-keeper when one is installed:
// `control` then gets our end of its lifeline. The pid, or why it could not start.
Result<pid_t> spawn_contained(const std::vector<std::string>& argv, int in, int out, int& control) {
  std::vector<std::string> command = argv;
  const std::string keeper = keeper_path();
  int sv[2] = {-1, -1};
  if (!keeper.empty()) {
    const char* path = std::getenv("PATH");
    const std::string program =
        find_in_path(argv.front(), path ? std::map<std::string, std::string>{{"PATH", path}}
                                        : std::map<std::string, std::string>{});
    if (program.empty()) return std::unexpected(argv.front() + ": " + std::strerror(ENOENT));
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
      return std::unexpected(std::string("socketpair: ") + std::strerror(errno));
    // dup2 onto itself would leave CLOEXEC set: the keeper would lose its lifeline at exec.
    if (sv[1] == k_keeper_control_fd) {
      const int moved = ::fcntl(sv[1], F_DUPFD_CLOEXEC, k_keeper_control_fd + 1);
      ::close(sv[1]);
      sv[1] = moved;
    }
    command = {keeper, "--control", std::to_string(k_keeper_control_fd), "--grace",
               fmt::format("{}", k_stop_grace_s)};
    if (program != argv.front()) command.insert(command.end(), {"--argv0", argv.front()});
    command.push_back("--");
    command.push_back(program);
    command.insert(command.end(), argv.begin() + 1, argv.end());
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in, 0);
  posix_spawn_file_actions_adddup2(&actions, out, 1);
  posix_spawn_file_actions_adddup2(&actions, out, 2);
  if (sv[1] >= 0) posix_spawn_file_actions_adddup2(&actions, sv[1], k_keeper_control_fd);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // A group of its own: stopped as one (kill(-pid)), and a Ctrl-C at tune's terminal does not
  // end the watcher before it reports. SIGPIPE back to its default, which tune ignores.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  std::vector<char*> args;
  for (auto& a : command) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (sv[1] >= 0) ::close(sv[1]);
  if (rc != 0) {
    if (sv[0] >= 0) ::close(sv[0]);
    return std::unexpected(command.front() + ": " + std::strerror(rc));
  }
  control = sv[0];
  return pid;
}

}  // namespace

bool is_this_host(const std::string& host) {
  if (host == "localhost" || host.starts_with("127.") || host == "::1") return true;
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) == 0) {
    const std::string self = name;
    if (host == self || host == self.substr(0, self.find('.'))) return true;
  }
  const auto mine = local_addresses();
  for (const auto& address : addresses_of(host))
    if (mine.contains(address)) return true;
  return false;
}

NodeWatchers::~NodeWatchers() {
  std::vector<Node*> all;
  for (Node& n : m_nodes) {
    close_fd(n.in);
    close_fd(n.out);
    all.push_back(&n);
  }
  stop(all);
}

void NodeWatchers::stop(const std::vector<Node*>& nodes) {
  // Closing the lifeline is the keeper's cue to stop its tree (SIGTERM, the grace, SIGKILL),
  // setsid'd descendants included, and to end once none is left. SIGTERM to the group reaches
  // the remote shell at once, and without a keeper the group and the descendants still below it.
  std::vector<bool> kept;
  for (Node* n : nodes) {
    kept.push_back(n->control >= 0);
    close_fd(n->control);
    if (n->pid <= 0) continue;
    if (!kept.back())
      for (pid_t d : descendants(n->pid)) ::kill(d, SIGTERM);
    ::kill(-n->pid, SIGTERM);
  }
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(k_stop_grace_s + k_stop_margin_s));
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    Node* n = nodes[i];
    if (n->pid <= 0) continue;
    if (!ended_by(n->pid, deadline))
      for (pid_t d : descendants(n->pid)) ::kill(d, SIGKILL);
    ::kill(-n->pid, SIGKILL);  // what is left in its group; its zombie leader holds the id
    while (::waitpid(n->pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    // A keeper ends only once its tree is gone. Without one, the group's members are init's to
    // reap: wait (bounded) until none is left, so that none runs on after this returns. The id
    // is not reused while the group has a member.
    if (!kept[i]) {
      const auto gone_by = Clock::now() + std::chrono::seconds(1);
      while ((::kill(-n->pid, 0) == 0 || errno != ESRCH) && Clock::now() < gone_by)
        ::poll(nullptr, 0, 5);
    }
    n->pid = -1;
  }
}

void NodeWatchers::start(const std::vector<std::string>& shell,
                         const std::vector<probes::NodeRanks>& hosts,
                         const std::string& tune_binary, const std::string& tag,
                         double interval_s) {
  for (const probes::NodeRanks& host : hosts) {
    Node node;
    node.host = host;
    std::vector<std::string> argv = shell;
    argv.push_back(host.host);
    // ssh hands the remote shell one string: every word quoted.
    for (const std::string& word : {tune_binary, std::string("probe"), std::string("--watch"), tag,
                                    std::string("--interval"), fmt::format("{}", interval_s)})
      argv.push_back(shell_quote(word));
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0) {
      node.error = std::string("pipe: ") + std::strerror(errno);
      m_nodes.push_back(std::move(node));
      continue;
    }
    if (pipe2(out, O_CLOEXEC) != 0) {
      node.error = std::string("pipe: ") + std::strerror(errno);
      ::close(in[0]);
      ::close(in[1]);
      m_nodes.push_back(std::move(node));
      continue;
    }
    const auto pid = spawn_contained(argv, in[0], out[1], node.control);
    ::close(in[0]);
    ::close(out[1]);
    node.in = in[1];
    node.out = out[0];
    if (pid) {
      node.pid = *pid;
    } else {
      node.error = pid.error();
      close_fd(node.in);
      close_fd(node.out);
    }
    m_nodes.push_back(std::move(node));
  }
}

std::vector<probes::NodeObservation> NodeWatchers::collect(double wait_s) {
  for (Node& n : m_nodes) close_fd(n.in);  // the watcher's cue to report
  const auto deadline = Clock::now() + std::chrono::duration<double>(wait_s);
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<Node*> owners;
    for (Node& n : m_nodes) {
      if (n.out < 0) continue;
      fds.push_back(pollfd{n.out, POLLIN, 0});
      owners.push_back(&n);
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (fds.empty() || left <= 0) break;
    if (::poll(fds.data(), fds.size(), static_cast<int>(left)) < 0 && errno != EINTR) break;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      char buf[4096];
      const ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got > 0 && owners[i]->output.size() < (1u << 20)) {
        owners[i]->output.append(buf, static_cast<std::size_t>(got));
      } else if (got <= 0 && !(got < 0 && errno == EINTR)) {
        close_fd(owners[i]->out);
      }
    }
  }
  std::vector<Node*> all;
  for (Node& n : m_nodes) {
    if (n.out >= 0) {  // still talking past the deadline
      close_fd(n.out);
      if (n.error.empty())
        n.error = fmt::format("no report within {} s of the trial's end", wait_s);
    }
    all.push_back(&n);
  }
  // Also those that reported: what their remote shell forked may still run (without a keeper).
  stop(all);
  std::vector<probes::NodeObservation> out;
  for (Node& n : m_nodes) {
    probes::NodeObservation o;
    o.host = n.host.host;
    o.ranks = n.host.ranks;
    // The report is the last line that is a JSON object; anything before it is ssh's chatter.
    const auto start = n.output.rfind("\n{", n.output.size() >= 2 ? n.output.size() - 2 : 0);
    const std::string last = n.output.substr(start == std::string::npos ? 0 : start + 1);
    const auto report = nlohmann::json::parse(last, nullptr, /*allow_exceptions=*/false);
    if (report.is_object()) {
      o.hostname = report.value("hostname", std::string());
      // Only ever compared with this machine's boot id: a longer word is no boot id.
      if (const auto m = report.find("machine");
          m != report.end() && m->is_string() && m->get_ref<const std::string&>().size() <= 64)
        o.machine = m->get<std::string>();
      if (report.contains("verdict")) o.verdict = report["verdict"];
      o.error = report.value("error", std::string());
    }
    if (!o.verdict && o.error.empty()) {
      const std::string why = explaining_lines(n.output, 300);
      o.error = !n.error.empty() ? n.error
                : why.empty()    ? std::string("the watcher printed no report")
                                 : why;
    }
    out.push_back(std::move(o));
  }
  m_nodes.clear();
  return out;
}

}  // namespace tune::tuner
