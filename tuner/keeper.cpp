#include "tuner/keeper.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <boost/process/search_path.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tuner/launcher.h"

namespace tune::tuner {
namespace {

using Clock = std::chrono::steady_clock;

void write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the trial's file is gone or full: drop, the trial goes on
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

void send_line(int fd, const std::string& line) {
  // MSG_NOSIGNAL: a tune that is gone must not take the keeper down with SIGPIPE.
  [[maybe_unused]] auto n = send(fd, line.data(), line.size(), MSG_NOSIGNAL);
}

// One captured stream: the head is written as it comes, the tail is kept in memory and written
// at the end after a marker line, so the file holds at most `cap` bytes plus the marker.
class Capture {
 public:
  Capture(const char* name, int sink, std::size_t cap)
      : m_name(name), m_sink(sink), m_head_left(cap / 2), m_tail_cap(cap - cap / 2) {}

  void feed(const char* data, std::size_t size) {
    const std::size_t head = std::min(size, m_head_left);
    write_all(m_sink, data, head);
    m_head_left -= head;
    m_tail.append(data + head, size - head);
    // Trim only when the buffer is twice the tail, so trimming costs O(1) per byte.
    if (m_tail.size() > 2 * m_tail_cap) {
      m_cut += m_tail.size() - m_tail_cap;
      m_tail.erase(0, m_tail.size() - m_tail_cap);
    }
  }

  // Writes the kept tail; returns the bytes dropped from the middle.
  std::size_t finish() {
    if (m_tail.size() > m_tail_cap) {
      m_cut += m_tail.size() - m_tail_cap;
      m_tail.erase(0, m_tail.size() - m_tail_cap);
    }
    if (m_cut > 0) {
      const auto marker = fmt::format(
          "\n[tune-keeper: {} bytes of {} cut here; the first and last {} bytes are kept]\n", m_cut,
          m_name, m_tail_cap);
      write_all(m_sink, marker.data(), marker.size());
    }
    write_all(m_sink, m_tail.data(), m_tail.size());
    m_tail.clear();
    return m_cut;
  }

  const char* name() const { return m_name; }

 private:
  const char* m_name;
  int m_sink;
  std::size_t m_head_left;
  std::size_t m_tail_cap;
  std::string m_tail;
  std::size_t m_cut = 0;
};

struct KeeperArgs {
  int control = -1;
  double grace_s = 3.0;
  std::size_t cap = 0;  // 0: the trial writes its files directly, uncapped
  std::vector<std::string> command;
};

std::optional<KeeperArgs> parse_args(int argc, char** argv) {
  KeeperArgs a;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--") {
      ++i;
      break;
    }
    if (i + 1 >= argc) return std::nullopt;
    const std::string value = argv[++i];
    char* end = nullptr;
    if (flag == "--control") {
      a.control = static_cast<int>(std::strtol(value.c_str(), &end, 10));
    } else if (flag == "--grace") {
      a.grace_s = std::strtod(value.c_str(), &end);
    } else if (flag == "--cap") {
      a.cap = static_cast<std::size_t>(std::strtoull(value.c_str(), &end, 10));
    } else {
      return std::nullopt;
    }
    if (end == value.c_str() || *end != '\0') return std::nullopt;
  }
  for (; i < argc; ++i) a.command.emplace_back(argv[i]);
  if (a.control < 0 || a.command.empty()) return std::nullopt;
  return a;
}

void signal_descendants(int sig) {
  for (pid_t p : descendants(getpid())) kill(p, sig);
}

// Ends like the trial did: the same exit code, or the same signal (without a core file).
[[noreturn]] void exit_like(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    signal(sig, SIG_DFL);
    sigset_t unblock;
    sigemptyset(&unblock);
    sigaddset(&unblock, sig);
    sigprocmask(SIG_UNBLOCK, &unblock, nullptr);
    kill(getpid(), sig);
  }
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

}  // namespace

std::string keeper_path() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto candidate = self.parent_path() / "tune-keeper";
    if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return boost::process::search_path("tune-keeper").string();
}

int run_keeper(int argc, char** argv) {
  const auto args = parse_args(argc, argv);
  if (!args) {
    std::fprintf(stderr,
                 "usage: tune-keeper --control FD [--grace S] [--cap BYTES] -- PROGRAM ARGS...\n"
                 "(started by tune for each trial; not meant to be run by hand)\n");
    return 2;
  }
  const int control = args->control;
  fcntl(control, F_SETFD, FD_CLOEXEC);  // the trial must not hold tune's lifeline
  prctl(PR_SET_CHILD_SUBREAPER, 1);

  sigset_t handled, old_mask;
  sigemptyset(&handled);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&handled, sig);
  sigprocmask(SIG_BLOCK, &handled, &old_mask);
  const int sigfd = signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK);

  // tune may already be gone (killed between starting us and now): then start nothing.
  pollfd first{control, POLLIN, 0};
  if (poll(&first, 1, 0) > 0 && (first.revents & (POLLHUP | POLLERR))) return 1;

  std::vector<Capture> captures;
  int pipes[2][2] = {{-1, -1}, {-1, -1}};
  if (args->cap > 0) {
    for (auto& p : pipes) {
      if (pipe2(p, O_CLOEXEC) != 0) return 1;
    }
    captures.emplace_back("stdout", STDOUT_FILENO, args->cap);
    captures.emplace_back("stderr", STDERR_FILENO, args->cap);
  }

  std::vector<char*> child_argv;
  for (const auto& s : args->command) child_argv.push_back(const_cast<char*>(s.c_str()));
  child_argv.push_back(nullptr);
  // Closed by a successful exec: "pid N" goes out only once the trial is the program it runs, so
  // a probe never samples the forked keeper copy as if it were the trial.
  int exec_pipe[2];
  if (pipe2(exec_pipe, O_CLOEXEC) != 0) return 1;
  const pid_t child = fork();
  if (child < 0) {
    std::fprintf(stderr, "tune-keeper: fork: %s\n", std::strerror(errno));
    return 1;
  }
  if (child == 0) {
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    if (args->cap > 0) {
      dup2(pipes[0][1], STDOUT_FILENO);
      dup2(pipes[1][1], STDERR_FILENO);
    }
    execv(child_argv[0], child_argv.data());
    const int error = errno;
    std::fprintf(stderr, "tune-keeper: cannot run %s: %s\n", child_argv[0], std::strerror(error));
    [[maybe_unused]] auto n = write(exec_pipe[1], &error, sizeof error);
    _exit(127);
  }
  close(exec_pipe[1]);
  int exec_error = 0;
  while (read(exec_pipe[0], &exec_error, sizeof exec_error) < 0 && errno == EINTR) {
  }
  close(exec_pipe[0]);
  send_line(control, fmt::format("pid {}\n", child));

  std::vector<int> readers;  // read ends still open, index-aligned with captures
  for (std::size_t i = 0; i < captures.size(); ++i) {
    close(pipes[i][1]);
    fcntl(pipes[i][0], F_SETFL, O_NONBLOCK);
    readers.push_back(pipes[i][0]);
  }

  std::optional<int> status;  // the trial's wait status once it ended
  bool orphaned = false;      // tune is gone, or we were told to stop by a signal
  bool swept = false;         // leftovers of a finished trial were sent SIGTERM
  bool killing = false;       // the grace is over: SIGKILL whatever is still there
  std::optional<Clock::time_point> kill_at;
  const auto grace =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(args->grace_s));
  auto stop_tree = [&] {
    signal_descendants(SIGTERM);
    if (!kill_at) kill_at = Clock::now() + grace;
  };
  std::vector<char> buf(64 * 1024);

  while (true) {
    bool any_child = false;
    while (true) {
      int st = 0;
      const pid_t p = waitpid(-1, &st, WNOHANG);
      if (p > 0) {
        if (p == child) status = st;
        continue;
      }
      any_child = p == 0;  // -1 with ECHILD: no descendant is left at all
      break;
    }
    if (status && !swept) {
      swept = true;
      if (any_child) stop_tree();  // what the trial left behind (e.g. `sleep 30 &`)
    }
    const bool drained = std::ranges::all_of(readers, [](int fd) { return fd < 0; });
    if (!any_child && drained) break;
    if (kill_at && Clock::now() >= *kill_at) killing = true;
    if (killing) signal_descendants(SIGKILL);

    std::vector<pollfd> fds;
    fds.push_back({sigfd, POLLIN, 0});
    fds.push_back({orphaned ? -1 : control, POLLIN, 0});
    for (int fd : readers) fds.push_back({fd, POLLIN, 0});
    int timeout_ms = -1;
    if (killing) {
      timeout_ms = 10;  // until the last SIGKILLed process is reaped
    } else if (kill_at) {
      timeout_ms = static_cast<int>(std::max<long long>(
          1,
          std::chrono::duration_cast<std::chrono::milliseconds>(*kill_at - Clock::now()).count() +
              1));
    }
    if (poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) break;

    if (fds[0].revents & POLLIN) {
      signalfd_siginfo info{};
      while (read(sigfd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
        if (info.ssi_signo != SIGCHLD && !orphaned) {
          orphaned = true;
          stop_tree();
        }
      }
    }
    if (!orphaned && fds[1].revents) {
      char cmd[16];
      const ssize_t n = read(control, cmd, sizeof cmd);
      if (n <= 0) {
        orphaned = true;  // tune is gone: nobody else will stop this tree
        stop_tree();
      } else {
        for (ssize_t i = 0; i < n; ++i) {
          if (cmd[i] == 't') stop_tree();
          if (cmd[i] == 'k') killing = true;
        }
      }
    }
    for (std::size_t i = 0; i < readers.size(); ++i) {
      if (readers[i] < 0 || !fds[2 + i].revents) continue;
      const ssize_t n = read(readers[i], buf.data(), buf.size());
      if (n > 0) {
        captures[i].feed(buf.data(), static_cast<std::size_t>(n));
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        close(readers[i]);
        readers[i] = -1;
      }
    }
  }

  for (auto& c : captures) {
    if (const auto cut = c.finish(); cut > 0) {
      send_line(control, fmt::format("cut {} {}\n", c.name(), cut));
    }
  }
  close(control);
  if (!status) _exit(orphaned ? 1 : 0);
  exit_like(*status);
}

}  // namespace tune::tuner
