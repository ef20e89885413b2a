#include "tuner/launch/keeper.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "tuner/launch/machine_load.h"
#include "tuner/launch/process_tree.h"

namespace tune::tuner {
namespace {

using Clock = std::chrono::steady_clock;

// 0 once every byte is written, else the errno of the write that failed (ENOSPC, EDQUOT, EIO..).
int write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return 0;
}

void send_line(int fd, const std::string& line) {
  // MSG_NOSIGNAL: a tune that is gone must not take the keeper down with SIGPIPE.
  [[maybe_unused]] auto n = send(fd, line.data(), line.size(), MSG_NOSIGNAL);
}

// One captured stream: the head is written as it comes, the tail is kept in memory and written
// at the end after a marker line, so the file holds at most `cap` bytes plus the marker.
class Capture {
 public:
  Capture(const char* name, int sink, std::size_t cap, int control)
      : m_name(name),
        m_sink(sink),
        m_control(control),
        m_head_left(cap / 2),
        m_tail_cap(cap - cap / 2) {}

  void feed(const char* data, std::size_t size) {
    const std::size_t head = std::min(size, m_head_left);
    write(data, head);
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
      const std::string marker = "\n[tune-keeper: " + std::to_string(m_cut) + " bytes of " +
                                 m_name + " cut here; the first and last " +
                                 std::to_string(m_tail_cap) + " bytes are kept]\n";
      write(marker.data(), marker.size());
    }
    write(m_tail.data(), m_tail.size());
    m_tail.clear();
    return m_cut;
  }

  const char* name() const { return m_name; }

 private:
  // Writes into the trial's file. The first failure is told to tune at once ("write-error
  // stdout 28"), which fails the trial with it; the bytes after it are read and dropped (the
  // trial must not block on a full pipe), since the file would have a hole where they failed.
  void write(const char* data, std::size_t size) {
    if (m_error != 0 || size == 0) return;
    m_error = write_all(m_sink, data, size);
    if (m_error != 0)
      send_line(m_control,
                std::string("write-error ") + m_name + " " + std::to_string(m_error) + "\n");
  }

  const char* m_name;
  int m_sink;
  int m_control;
  int m_error = 0;  // errno of the first write that failed
  std::size_t m_head_left;
  std::size_t m_tail_cap;
  std::string m_tail;
  std::size_t m_cut = 0;
};

struct KeeperArgs {
  int control = -1;
  double grace_s = 3.0;
  std::size_t cap = 0;  // 0: the trial writes its files directly, uncapped
  // argv[0] the program gets, when it differs from the path exec'd (command[0]): the name as
  // the user wrote it, as a shell passes it (see run_process in launcher.h).
  std::string argv0;
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
    if (flag == "--argv0") {
      a.argv0 = value;
      continue;
    }
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

// The keeper's state from the trial's start to its own exit: the trial's pid and status, the
// capture pipes still open, and how far stopping the tree has gone. One per keeper process.
class Keeper {
 public:
  explicit Keeper(const KeeperArgs& args)
      : m_args(args),
        m_control(args.control),
        m_grace(std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(args.grace_s))) {}

  // Takes the signals, becomes the subreaper and starts the trial; false when that failed or
  // tune is already gone (nothing was started then).
  bool start() {
    fcntl(m_control, F_SETFD, FD_CLOEXEC);  // the trial must not hold tune's lifeline
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    sigset_t handled;
    sigemptyset(&handled);
    for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&handled, sig);
    sigprocmask(SIG_BLOCK, &handled, &m_old_mask);
    m_sigfd = signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK);

    // tune may already be gone (killed between starting us and now): then start nothing.
    pollfd first{m_control, POLLIN, 0};
    if (poll(&first, 1, 0) > 0 && (first.revents & (POLLHUP | POLLERR))) return false;

    int pipes[2][2] = {{-1, -1}, {-1, -1}};
    if (m_args.cap > 0) {
      for (auto& p : pipes) {
        if (pipe2(p, O_CLOEXEC) != 0) return false;
      }
      m_captures.emplace_back("stdout", STDOUT_FILENO, m_args.cap, m_control);
      m_captures.emplace_back("stderr", STDERR_FILENO, m_args.cap, m_control);
    }
    // The machine's busy CPU time from here to the program's exit: what was not the trial's (nor
    // the keeper's, nor tune's) was other work's, which the trial's measure shared the CPUs with.
    m_busy_at_start = read_busy_cpu();
    m_started = Clock::now();
    if (!fork_trial(pipes)) return false;
    for (std::size_t i = 0; i < m_captures.size(); ++i) {
      close(pipes[i][1]);
      fcntl(pipes[i][0], F_SETFL, O_NONBLOCK);
      m_readers.push_back(pipes[i][0]);
    }
    return true;
  }

  // Until no descendant is left and every capture pipe is drained: reaps, stops the tree when
  // told to or when tune is gone, and copies the trial's output.
  void supervise() {
    std::vector<char> buf(64 * 1024);
    while (true) {
      const bool any_child = reap();
      if (m_status && !m_swept) {
        m_swept = true;
        if (any_child) stop_tree();  // what the trial left behind (e.g. `sleep 30 &`)
      }
      const bool drained = std::ranges::all_of(m_readers, [](int fd) { return fd < 0; });
      if (!any_child && drained) return;
      if (m_kill_at && Clock::now() >= *m_kill_at) m_killing = true;
      if (m_killing) signal_descendants(SIGKILL);

      std::vector<pollfd> fds;
      fds.push_back({m_sigfd, POLLIN, 0});
      fds.push_back({m_orphaned ? -1 : m_control, POLLIN, 0});
      for (int fd : m_readers) fds.push_back({fd, POLLIN, 0});
      if (poll(fds.data(), fds.size(), poll_timeout_ms()) < 0 && errno != EINTR) return;

      if (fds[0].revents & POLLIN) on_signals();
      if (!m_orphaned && fds[1].revents) on_control();
      for (std::size_t i = 0; i < m_readers.size(); ++i) {
        if (m_readers[i] >= 0 && fds[2 + i].revents) on_output(i, buf);
      }
    }
  }

  // Writes the kept tails, reports what was cut and ends as the trial ended.
  [[noreturn]] void finish() {
    for (auto& c : m_captures) {
      if (const auto cut = c.finish(); cut > 0) {
        send_line(m_control, std::string("cut ") + c.name() + " " + std::to_string(cut) + "\n");
      }
    }
    close(m_control);
    if (!m_status) _exit(m_orphaned ? 1 : 0);
    exit_like(*m_status);
  }

 private:
  // Forks and execs the trial with its output on the capture pipes (when capped); reports
  // "pid N" once the exec has happened.
  bool fork_trial(const int (&pipes)[2][2]) {
    const char* path = m_args.command.front().c_str();
    std::vector<char*> child_argv;
    for (const auto& s : m_args.command) child_argv.push_back(const_cast<char*>(s.c_str()));
    if (!m_args.argv0.empty()) child_argv.front() = const_cast<char*>(m_args.argv0.c_str());
    child_argv.push_back(nullptr);
    // Closed by a successful exec: "pid N" goes out only once the trial is the program it runs,
    // so a probe never samples the forked keeper copy as if it were the trial.
    int exec_pipe[2];
    if (pipe2(exec_pipe, O_CLOEXEC) != 0) return false;
    m_child = fork();
    if (m_child < 0) {
      std::fprintf(stderr, "tune-keeper: fork: %s\n", std::strerror(errno));
      return false;
    }
    if (m_child == 0) {
      sigprocmask(SIG_SETMASK, &m_old_mask, nullptr);
      if (m_args.cap > 0) {
        dup2(pipes[0][1], STDOUT_FILENO);
        dup2(pipes[1][1], STDERR_FILENO);
      }
      execv(path, child_argv.data());
      const int error = errno;
      std::fprintf(stderr, "tune-keeper: cannot run %s: %s\n", path, std::strerror(error));
      [[maybe_unused]] auto n = write(exec_pipe[1], &error, sizeof error);
      _exit(127);
    }
    close(exec_pipe[1]);
    int exec_error = 0;
    while (read(exec_pipe[0], &exec_error, sizeof exec_error) < 0 && errno == EINTR) {
    }
    close(exec_pipe[0]);
    send_line(m_control, "pid " + std::to_string(m_child) + "\n");
    return true;
  }

  // Reaps every descendant that ended (keeping the trial's status); whether any is left.
  bool reap() {
    while (true) {
      int st = 0;
      const pid_t p = waitpid(-1, &st, WNOHANG);
      if (p <= 0) return p == 0;  // -1 with ECHILD: no descendant is left at all
      if (p == m_child) {
        m_status = st;
        // When the trial's own process ended, on the machine's monotonic clock (tune's
        // steady_clock): its wall time ends here, not after the sweep of what it left behind.
        const auto exited = Clock::now();
        report_cpu(exited);
        send_line(m_control, "exited " + std::to_string(exited.time_since_epoch().count()) + "\n");
      }
    }
  }

  // "cpu ..." (machine_load.h): the machine's busy CPU time since the trial started, the tree's
  // own (what was reaped, and what is still running), the keeper's; before "exited", so tune has
  // it when it learns of the end.
  void report_cpu(Clock::time_point exited) {
    const auto busy = read_busy_cpu();
    if (!busy || !m_busy_at_start) return;
    const auto used = busy_since(*m_busy_at_start, *busy);
    if (!used) return;
    const auto window = std::chrono::duration_cast<std::chrono::nanoseconds>(exited - m_started);
    send_line(m_control, keeper_cpu_line(static_cast<std::uint64_t>(window.count()), *used,
                                         tree_cpu_ns(), self_cpu_ns()) +
                             "\n");
  }

  int poll_timeout_ms() const {
    if (m_killing) return 10;  // until the last SIGKILLed process is reaped
    if (!m_kill_at) return -1;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(*m_kill_at - Clock::now());
    return static_cast<int>(std::max<long long>(1, left.count() + 1));
  }

  void stop_tree() {
    signal_descendants(SIGTERM);
    if (!m_kill_at) m_kill_at = Clock::now() + m_grace;
  }

  void on_signals() {
    signalfd_siginfo info{};
    while (read(m_sigfd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      if (info.ssi_signo != SIGCHLD && !m_orphaned) {
        m_orphaned = true;
        stop_tree();
      }
    }
  }

  void on_control() {
    char cmd[16];
    const ssize_t n = read(m_control, cmd, sizeof cmd);
    if (n <= 0) {
      m_orphaned = true;  // tune is gone: nobody else will stop this tree
      stop_tree();
      return;
    }
    for (ssize_t i = 0; i < n; ++i) {
      if (cmd[i] == 't') stop_tree();
      if (cmd[i] == 'k') m_killing = true;
    }
  }

  void on_output(std::size_t i, std::vector<char>& buf) {
    const ssize_t n = read(m_readers[i], buf.data(), buf.size());
    if (n > 0) {
      m_captures[i].feed(buf.data(), static_cast<std::size_t>(n));
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      close(m_readers[i]);
      m_readers[i] = -1;
    }
  }

  const KeeperArgs& m_args;
  const int m_control;
  const Clock::duration m_grace;
  sigset_t m_old_mask{};
  int m_sigfd = -1;
  pid_t m_child = -1;
  std::vector<Capture> m_captures;
  std::vector<int> m_readers;   // read ends still open (-1 once closed), aligned with m_captures
  std::optional<int> m_status;  // the trial's wait status once it ended
  bool m_orphaned = false;      // tune is gone, or we were told to stop by a signal
  bool m_swept = false;         // leftovers of a finished trial were sent SIGTERM
  bool m_killing = false;       // the grace is over: SIGKILL whatever is still there
  std::optional<Clock::time_point> m_kill_at;
  std::optional<BusyCpu> m_busy_at_start;  // the machine's busy CPU time when the trial started
  Clock::time_point m_started;
};

}  // namespace

int run_keeper(int argc, char** argv) {
  const auto args = parse_args(argc, argv);
  if (!args) {
    std::fprintf(stderr,
                 "usage: tune-keeper --control FD [--grace S] [--cap BYTES] -- PROGRAM ARGS...\n"
                 "(started by tune for each trial; not meant to be run by hand)\n");
    return 2;
  }
  Keeper keeper(*args);
  if (!keeper.start()) return 1;
  keeper.supervise();
  keeper.finish();
}

}  // namespace tune::tuner
