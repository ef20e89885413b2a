#include "tuner/launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <algorithm>
#include <atomic>
#include <boost/process.hpp>
#include <boost/process/extend.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace tune::tuner {
namespace {

namespace bp = boost::process;
using Clock = std::chrono::steady_clock;

std::atomic<bool> g_interrupted{false};
int g_wake_pipe[2] = {-1, -1};

extern "C" void on_interrupt(int) {
  g_interrupted.store(true);
  if (g_wake_pipe[1] >= 0) {
    const char c = 1;
    [[maybe_unused]] auto n = write(g_wake_pipe[1], &c, 1);
  }
}

// Runs in the child between fork and exec: die with tune, and lead a new process group.
struct ChildSetup : bp::extend::handler {
  template <typename Exec>
  void on_exec_setup(Exec&) const {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    setpgid(0, 0);
  }
};

void signal_tree(pid_t pid, const std::vector<pid_t>& tree, int sig) {
  kill(-pid, sig);  // the process group the child leads
  for (pid_t p : tree) kill(p, sig);
}

// Alive and not a zombie (a killed orphan waiting for init to reap it counts as gone).
bool is_alive(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return false;
  const auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z' &&
         stat[close + 2] != 'X';
}

void drain_wake_pipe() {
  char buf[64];
  while (g_wake_pipe[0] >= 0 && read(g_wake_pipe[0], buf, sizeof buf) > 0) {
  }
}

}  // namespace

void install_interrupt_handlers() {
  if (g_wake_pipe[0] < 0 && pipe2(g_wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    g_wake_pipe[0] = g_wake_pipe[1] = -1;
  }
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool interrupted() { return g_interrupted.load(); }

void clear_interrupted() {
  g_interrupted.store(false);
  drain_wake_pipe();
}

bool running_as_root() { return geteuid() == 0; }

std::vector<pid_t> descendants(pid_t root) {
  std::map<pid_t, std::vector<pid_t>> children;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const auto name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;
    // Fields after the command name, which is in parentheses and may contain spaces.
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    children[ppid].push_back(static_cast<pid_t>(std::stol(name)));
  }
  std::vector<pid_t> out;
  std::vector<pid_t> todo{root};
  while (!todo.empty()) {
    const pid_t p = todo.back();
    todo.pop_back();
    for (pid_t c : children[p]) {
      out.push_back(c);
      todo.push_back(c);
    }
  }
  return out;
}

LaunchResult run_process(const LaunchRequest& request, const Watcher& watcher) {
  LaunchResult result;
  if (request.argv.empty()) {
    result.error = "empty command";
    return result;
  }
  boost::filesystem::path exe = request.argv[0];
  if (request.argv[0].find('/') == std::string::npos) {
    exe = bp::search_path(request.argv[0]);
    if (exe.empty()) {
      result.error = fmt::format("'{}' was not found in PATH", request.argv[0]);
      return result;
    }
  }
  bp::environment env = boost::this_process::environment();
  for (const auto& name : request.env_unset) env.erase(name);
  for (const auto& [k, v] : request.env_set) env[k] = v;
  const std::vector<std::string> args(request.argv.begin() + 1, request.argv.end());
  const std::string out_path = request.stdout_path.empty() ? "/dev/null" : request.stdout_path;
  const std::string err_path = request.stderr_path.empty() ? "/dev/null" : request.stderr_path;
  const std::string workdir = request.workdir.empty() ? "." : request.workdir;

  const auto start = Clock::now();
  bp::child child;
  try {
    child = bp::child(bp::exe = exe, bp::args = args, bp::env = env,
                      bp::std_in<bp::null, bp::std_out> out_path, bp::std_err > err_path,
                      bp::start_dir = workdir, ChildSetup{});
  } catch (const std::exception& e) {
    result.error = fmt::format("cannot run '{}': {}", request.argv[0], e.what());
    return result;
  }
  result.started = true;
  const pid_t pid = child.id();
  result.pid = pid;
  setpgid(pid, pid);  // also from the parent, so the group exists before we might signal it

  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  std::optional<Clock::time_point> kill_at;
  std::vector<pid_t> tree;
  auto stop = [&](StopReason why, std::string detail) {
    if (result.stopped != StopReason::none) return;
    result.stopped = why;
    result.stop_detail = std::move(detail);
    tree = descendants(pid);
    signal_tree(pid, tree, SIGTERM);
    kill_at = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(request.kill_grace_s));
  };

  if (watcher) {
    if (auto why = watcher(pid); !why.empty()) stop(StopReason::watcher, why);
  }
  auto next_tick = start + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(request.tick_s));
  const std::optional<Clock::time_point> deadline =
      request.timeout_s
          ? std::optional(start + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(*request.timeout_s)))
          : std::nullopt;
  while (true) {
    if (interrupted()) stop(StopReason::interrupted, "interrupted");
    const auto now = Clock::now();
    if (deadline && now >= *deadline) {
      stop(StopReason::timeout, fmt::format("timed out after {:.1f}s", *request.timeout_s));
    }
    if (kill_at && now >= *kill_at) {
      // Grace is over: take everything, including ranks that were reparented meanwhile.
      auto more = descendants(pid);
      tree.insert(tree.end(), more.begin(), more.end());
      signal_tree(pid, tree, SIGKILL);
      kill_at.reset();
    }
    if (watcher && now >= next_tick && result.stopped == StopReason::none) {
      if (auto why = watcher(pid); !why.empty()) stop(StopReason::watcher, why);
      next_tick = now + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(request.tick_s));
    }
    auto wake = next_tick;
    if (deadline) wake = std::min(wake, *deadline);
    if (kill_at) wake = std::min(wake, *kill_at);
    const auto wait_ms = std::max<long long>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(wake - Clock::now()).count() + 1);
    pollfd fds[2] = {{pidfd, POLLIN, 0}, {g_wake_pipe[0], POLLIN, 0}};
    const int nfds = g_wake_pipe[0] >= 0 ? 2 : 1;
    if (pidfd >= 0) {
      const int r = poll(fds, nfds, static_cast<int>(std::min<long long>(wait_ms, 1000)));
      if (r > 0 && (fds[0].revents & POLLIN)) break;
      if (nfds == 2 && (fds[1].revents & POLLIN)) drain_wake_pipe();
    } else {
      // No pidfd (old kernel): check often.
      if (!child.running()) break;
      poll(fds + 1, nfds - 1, 10);
    }
  }
  if (pidfd >= 0) close(pidfd);
  std::error_code ec;
  child.wait(ec);
  result.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  const int status = child.native_exit_code();
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  // Ranks that outlived mpirun (it was killed) must not outlive the trial: kill what is left
  // and wait (bounded) until it is really gone, so the next trial starts on an idle machine.
  if (result.stopped != StopReason::none) {
    kill(-pid, SIGKILL);
    for (pid_t p : tree) kill(p, SIGKILL);
    const auto give_up = Clock::now() + std::chrono::seconds(5);
    while (Clock::now() < give_up &&
           std::any_of(tree.begin(), tree.end(), [](pid_t p) { return is_alive(p); })) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  return result;
}

}  // namespace tune::tuner
