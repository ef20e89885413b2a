#include "tuner/probing/node_watchers.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "tuner/base/text.h"

extern char** environ;

namespace tune::tuner {
namespace {

using Clock = std::chrono::steady_clock;

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

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// A --mca KEY's value on the launch's command line (the last one given wins, as in mpirun).
std::optional<std::string> mca_value(const RenderedLaunch& launch, const std::string& key) {
  std::optional<std::string> value;
  for (const auto& [k, v] : launch.kind->mca())
    if (k == key) value = v;
  return value;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
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

std::vector<std::string> remote_shell(const RenderedLaunch& launch,
                                      const std::map<std::string, std::string>& env) {
  auto from_env = [&](const char* key) -> std::optional<std::string> {
    const auto it = env.find(std::string("OMPI_MCA_") + key);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  auto agent = mca_value(launch, "plm_rsh_agent");
  if (!agent) agent = from_env("plm_rsh_agent");
  auto args = mca_value(launch, "plm_rsh_args");
  if (!args) args = from_env("plm_rsh_args");
  // "ssh : rsh" lists alternatives; the first is the one found on any normal system.
  std::vector<std::string> shell = split_words(agent ? agent->substr(0, agent->find(':')) : "");
  if (shell.empty()) shell = {"ssh"};
  for (auto& word : split_words(args.value_or(""))) shell.push_back(std::move(word));
  return shell;
}

NodeWatchers::~NodeWatchers() {
  for (Node& n : m_nodes) {
    close_fd(n.in);
    close_fd(n.out);
    if (n.pid > 0) {
      ::kill(n.pid, SIGKILL);
      ::waitpid(n.pid, nullptr, 0);
    }
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
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, out[1], 2);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    const int rc = posix_spawnp(&node.pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(in[0]);
    ::close(out[1]);
    node.in = in[1];
    node.out = out[0];
    if (rc != 0) {
      node.pid = -1;
      node.error = shell.front() + ": " + std::strerror(rc);
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
  std::vector<probes::NodeObservation> out;
  for (Node& n : m_nodes) {
    if (n.out >= 0) {  // still talking past the deadline
      close_fd(n.out);
      if (n.error.empty())
        n.error = fmt::format("no report within {} s of the trial's end", wait_s);
      ::kill(n.pid, SIGKILL);
    }
    int status = 0;
    if (n.pid > 0) ::waitpid(n.pid, &status, 0);
    n.pid = -1;
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
