#include "tuner/launch/launcher.h"

#include "tuner/base/install_layout.h"
#include "tuner/base/temp_dir.h"
#include "tuner/base/text.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <algorithm>
#include <atomic>
#include <boost/process.hpp>
#include <boost/process/extend.hpp>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "tuner/base/trial_attrs.h"
#include "tuner/launch/keeper.h"
#include "tuner/launch/oom_record.h"
#include "tuner/launch/process_tree.h"
#include "tuner/storage/storage_url.h"

namespace tune::tuner {
namespace {

namespace bp = boost::process;
using Clock = std::chrono::steady_clock;

std::atomic<bool> g_interrupted{false};
std::atomic<int> g_interrupt_signal{0};
int g_wake_pipe[2] = {-1, -1};

extern "C" void on_interrupt(int sig) {
  g_interrupt_signal.store(sig);
  g_interrupted.store(true);
  if (g_wake_pipe[1] >= 0) {
    const char c = 1;
    [[maybe_unused]] auto n = write(g_wake_pipe[1], &c, 1);
  }
}

// Runs in the child between fork and exec: lead a new process group, and either hand the keeper
// its end of the control socket (CLOEXEC cleared in the child only) or, with no keeper, die
// with tune.
struct ChildSetup : bp::extend::handler {
  int keeper_fd = -1;
  template <typename Exec>
  void on_exec_setup(Exec&) const {
    if (keeper_fd >= 0) {
      fcntl(keeper_fd, F_SETFD, 0);
    } else {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
    }
    signal(SIGPIPE, SIG_DFL);  // tune ignores it; the trial must not inherit that
    setpgid(0, 0);
  }
};

void signal_tree(pid_t pid, const std::vector<pid_t>& tree, int sig) {
  kill(-pid, sig);  // the process group the child leads
  for (pid_t p : tree) kill(p, sig);
}

// This process's direct children (strays of a dead keeper are re-parented to us: subreaper).
// Every thread's list: a child belongs to the thread that forked it, or that adopted it.
std::set<pid_t> own_children() {
  std::set<pid_t> out;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream in(task.path() / "children");
    for (pid_t p; in >> p;) out.insert(p);
  }
  return out;
}

// Kills and reaps the children that appeared since `before` (none unless a keeper died or there
// is no keeper), so that nothing of a finished trial goes on running.
void sweep_strays(const std::set<pid_t>& before) {
  for (int round = 0; round < 100; ++round) {
    std::vector<pid_t> strays;
    for (pid_t p : own_children()) {
      if (!before.contains(p)) strays.push_back(p);
    }
    if (strays.empty()) return;
    for (pid_t p : strays) {
      for (pid_t d : descendants(p)) kill(d, SIGKILL);
      kill(p, SIGKILL);
    }
    for (pid_t p : strays) waitpid(p, nullptr, 0);
  }
}

void send_command(int fd, char c) {
  if (fd >= 0) [[maybe_unused]]
    auto n = send(fd, &c, 1, MSG_NOSIGNAL);
}

// Reads "pid N" / "cut STREAM N" / "write-error STREAM ERRNO" lines from the keeper until "pid"
// is seen with `until_pid` (bounded wait) or, with until_pid false, everything left (the keeper
// has exited, so this ends at EOF).
void read_keeper_lines(int fd, bool until_pid, const LaunchRequest& request, LaunchResult& result,
                       std::string& pending) {
  // The lines already read first: "pid N" may have come in one read with the lines after it
  // (a trial on a full disk reports its write error at once).
  const auto take_lines = [&] {
    for (auto nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n')) {
      std::istringstream line(pending.substr(0, nl));
      pending.erase(0, nl + 1);
      std::string word;
      line >> word;
      if (word == "pid") {
        line >> result.pid;
        if (until_pid) return true;
      } else if (word == "exited") {
        Clock::rep ns = 0;
        if (line >> ns) result.program_exited = Clock::time_point(Clock::duration(ns));
      } else if (word == "cpu") {
        std::string rest;
        std::getline(line, rest);
        result.cpu = parse_keeper_cpu_line(rest);
      } else if (word == "cut") {
        std::string stream;
        std::uint64_t bytes = 0;
        if (line >> stream >> bytes) result.output_cut[stream] = bytes;
      } else if (word == "write-error") {
        std::string stream;
        int error = 0;
        if (line >> stream >> error) {
          const auto& path = stream == "stderr" ? request.stderr_path : request.stdout_path;
          result.write_errors.push_back(
              fmt::format("writing {}: {}", path.empty() ? stream : path, std::strerror(error)));
        }
      }
    }
    return false;
  };
  const auto give_up = Clock::now() + std::chrono::seconds(10);
  char buf[256];
  while (!take_lines()) {
    pollfd p{fd, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(give_up - Clock::now());
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) return;
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) return;
    pending.append(buf, static_cast<std::size_t>(n));
  }
}

void drain_wake_pipe() {
  char buf[64];
  while (g_wake_pipe[0] >= 0 && read(g_wake_pipe[0], buf, sizeof buf) > 0) {
  }
}

bool fs_exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// argv[0] as a path: as written when it holds a '/', else looked up in PATH (empty: not found).
boost::filesystem::path find_executable(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  return bp::search_path(name);
}

// What is started: the keeper with the command after its own options, holding `keeper_fd`, the
// other end of our `control` socket; or, with no keeper, the command itself.
struct Spawn {
  boost::filesystem::path program;
  std::vector<std::string> args;
  int control = -1;    // ours; closed when the Spawn goes
  int keeper_fd = -1;  // the keeper's; closed once the keeper has started (or failed to)
  std::string containment;

  Spawn() = default;
  Spawn(const Spawn&) = delete;
  Spawn& operator=(const Spawn&) = delete;
  ~Spawn() {
    if (control >= 0) close(control);
    close_keeper_end();
  }
  void close_keeper_end() {
    if (keeper_fd >= 0) close(keeper_fd);
    keeper_fd = -1;
  }
};

void plan_spawn(const LaunchRequest& request, const boost::filesystem::path& exe, bool subreaper,
                Spawn& spawn) {
  std::string keeper = keeper_path();
  int sv[2] = {-1, -1};
  if (!keeper.empty() && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    keeper.clear();
  }
  spawn.control = sv[0];
  spawn.keeper_fd = sv[1];
  spawn.program = exe;
  if (!keeper.empty()) {
    spawn.program = keeper;
    spawn.args = {"--control", std::to_string(sv[1]),
                  "--grace",   fmt::format("{}", request.kill_grace_s),
                  "--cap",     std::to_string(request.output_cap_bytes)};
    // The program gets argv[0] as the user wrote it, as from a shell: Open MPI takes an
    // absolute argv[0] ("/usr/bin/mpirun") for --prefix /usr and puts /usr/bin first on the
    // ranks' PATH, so `mpirun python3` would run /usr/bin/python3 instead of the user's.
    if (exe.string() != request.argv[0])
      spawn.args.insert(spawn.args.end(), {"--argv0", request.argv[0]});
    spawn.args.insert(spawn.args.end(), {"--", exe.string()});
    spawn.containment = "keeper";
  } else {
    spawn.containment = subreaper ? "subreaper" : "process group";
  }
  spawn.args.insert(spawn.args.end(), request.argv.begin() + 1, request.argv.end());
}

// Calls the watcher on a thread of its own: right away, then every tick, until it gives a
// verdict (a reason to stop the trial) or finish() is called. The thread that waits for the
// trial reads the verdict without waiting (verdict()) and is woken by wake_fd() when one comes,
// so a watcher that blocks (a storage call waiting on its database) never delays the trial's
// timeout, its stop, or the moment its end is seen. finish() waits for a call under way.
class WatcherThread {
 public:
  WatcherThread(const Watcher& watcher, pid_t pid, double tick_s)
      : m_watcher(watcher), m_pid(pid), m_tick(seconds(tick_s)) {
    if (!m_watcher) return;
    if (pipe2(m_pipe, O_CLOEXEC | O_NONBLOCK) != 0) m_pipe[0] = m_pipe[1] = -1;
    m_thread = std::thread([this] { loop(); });
  }
  ~WatcherThread() {
    finish();
    for (int fd : m_pipe)
      if (fd >= 0) close(fd);
  }
  WatcherThread(const WatcherThread&) = delete;
  WatcherThread& operator=(const WatcherThread&) = delete;

  std::optional<std::string> verdict() {
    std::lock_guard lock(m_mutex);
    return m_verdict;
  }
  int wake_fd() const { return m_pipe[0]; }
  // No more calls; waits for the one under way, if any.
  void finish() {
    {
      std::lock_guard lock(m_mutex);
      m_done = true;
    }
    m_cv.notify_all();
    if (m_thread.joinable()) m_thread.join();
  }

  // What the watcher threw, once finish() has waited for it (the caller's to rethrow).
  std::exception_ptr error() const { return m_error; }

 private:
  void loop() {
    std::unique_lock lock(m_mutex);
    while (!m_done) {
      lock.unlock();
      std::string why;
      try {
        why = m_watcher(m_pid);
      } catch (...) {  // stops the trial; run_process() rethrows it on the caller's thread
        m_error = std::current_exception();
        why = "the watcher failed";
      }
      lock.lock();
      if (!why.empty()) {
        m_verdict = std::move(why);
        if (m_pipe[1] >= 0) [[maybe_unused]]
          auto n = write(m_pipe[1], "v", 1);
        return;
      }
      m_cv.wait_for(lock, m_tick, [this] { return m_done; });
    }
  }

  const Watcher& m_watcher;
  const pid_t m_pid;
  const Clock::duration m_tick;
  int m_pipe[2] = {-1, -1};
  std::mutex m_mutex;
  std::condition_variable m_cv;
  bool m_done = false;                   // guarded by m_mutex
  std::optional<std::string> m_verdict;  // guarded by m_mutex
  std::exception_ptr m_error;            // written by the thread, read after join
  std::thread m_thread;
};

// Waits for a started trial to end, stopping it on timeout, interrupt or the watcher's word:
// SIGTERM first (through the keeper when there is one, else to its group and descendants),
// SIGKILL once the grace is over. One per trial; the calling thread only.
class TrialWait {
 public:
  TrialWait(const LaunchRequest& request, bp::child& child, int control, LaunchResult& result)
      : m_request(request),
        m_child(child),
        m_pid(child.id()),
        m_control(control),
        m_result(result),
        m_pidfd(static_cast<int>(syscall(SYS_pidfd_open, m_pid, 0))) {}
  ~TrialWait() {
    if (m_pidfd >= 0) close(m_pidfd);
  }
  TrialWait(const TrialWait&) = delete;
  TrialWait& operator=(const TrialWait&) = delete;

  // Returns once the child has exited (not yet reaped), with the moment that was seen. The
  // watcher runs on a thread of its own (WatcherThread): the deadline, an interrupt and the
  // SIGKILL after the grace are acted on here whatever the watcher is doing, and a verdict it
  // comes to stops the trial as soon as it is given.
  Clock::time_point run(WatcherThread& watcher, Clock::time_point start) {
    const Clock::time_point deadline =
        m_request.timeout_s ? start + seconds(*m_request.timeout_s) : Clock::time_point::max();
    while (true) {
      if (interrupted()) stop(StopReason::interrupted, "interrupted");
      const auto now = Clock::now();
      if (now >= deadline) {
        stop(StopReason::timeout,
             fmt::format("{} {:.1f}s", k_timed_out_reason, *m_request.timeout_s));
      }
      if (m_kill_at && now >= *m_kill_at) kill_tree();
      if (auto why = watcher.verdict(); why && m_result.stopped == StopReason::none)
        stop(StopReason::watcher, *why);
      auto wake = std::min(now + std::chrono::seconds(1), deadline);
      if (m_kill_at) wake = std::min(wake, *m_kill_at);
      if (auto ended = ended_by(wake, watcher.wake_fd())) return *ended;
    }
  }

  // The descendants signalled without a keeper (for the final SIGKILL).
  const std::vector<pid_t>& tree() const { return m_tree; }

 private:
  void stop(StopReason why, std::string detail) {
    if (m_result.stopped != StopReason::none) return;
    m_result.stopped = why;
    m_result.stop_detail = std::move(detail);
    if (m_control >= 0) {
      send_command(m_control, 't');
    } else {
      m_tree = descendants(m_pid);
      signal_tree(m_pid, m_tree, SIGTERM);
    }
    m_kill_at = Clock::now() + seconds(m_request.kill_grace_s);
  }

  // Grace is over: take everything, including ranks that were reparented meanwhile.
  void kill_tree() {
    if (m_control >= 0) {
      send_command(m_control, 'k');
    } else {
      auto more = descendants(m_pid);
      m_tree.insert(m_tree.end(), more.begin(), more.end());
      signal_tree(m_pid, m_tree, SIGKILL);
    }
    m_kill_at.reset();
  }

  // Sleeps until `wake` at the most (a second at the most; an interrupt or the watcher's verdict
  // wakes it at once); when the child has exited, the moment that was seen.
  std::optional<Clock::time_point> ended_by(Clock::time_point wake, int watcher_fd) {
    const auto wait_ms = std::max<long long>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(wake - Clock::now()).count() + 1);
    pollfd fds[3] = {{m_pidfd, POLLIN, 0}, {g_wake_pipe[0], POLLIN, 0}, {watcher_fd, POLLIN, 0}};
    // The verdict is read by run(); a wake-up it sent is spent here, so poll() sleeps again.
    const auto spend_wakeups = [&] {
      if (fds[1].revents & POLLIN) drain_wake_pipe();
      char buf[8];
      if (fds[2].revents & POLLIN)
        while (read(watcher_fd, buf, sizeof buf) > 0) {
        }
    };
    if (m_pidfd < 0) {
      // No pidfd (old kernel): check often.
      if (!m_child.running()) return Clock::now();
      if (poll(fds + 1, 2, 10) > 0) spend_wakeups();
      return std::nullopt;
    }
    // A negative fd is skipped by poll().
    const int r = poll(fds, 3, static_cast<int>(std::min<long long>(wait_ms, 1000)));
    if (r > 0 && (fds[0].revents & POLLIN)) return Clock::now();
    if (r > 0) spend_wakeups();
    return std::nullopt;
  }

  const LaunchRequest& m_request;
  bp::child& m_child;
  const pid_t m_pid;  // the child's: the keeper, or the command itself without one
  const int m_control;
  LaunchResult& m_result;
  const int m_pidfd;
  std::optional<Clock::time_point> m_kill_at;
  std::vector<pid_t> m_tree;
};

// Reaps the exited child and records how it ended; its wall time ends when its exit was seen.
void record_exit(bp::child& child, Clock::time_point start, Clock::time_point ended,
                 LaunchResult& result) {
  std::error_code ec;
  child.wait(ec);
  result.wall_s = std::chrono::duration<double>(ended - start).count();
  const int status = child.native_exit_code();
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
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
  sigaction(SIGHUP, &sa, nullptr);  // a closed terminal or ssh session: stop cleanly, not die
  signal(SIGPIPE, SIG_IGN);         // a closed stdout: writes fail, the study's data stays safe
}

bool interrupted() { return g_interrupted.load(); }
int interrupt_signal() { return g_interrupt_signal.load(); }

bool running_as_root() { return geteuid() == 0; }

std::string keeper_path() {
  if (auto beside = sibling_program("tune-keeper"); !beside.empty()) return beside.string();
  return bp::search_path("tune-keeper").string();
}

std::map<std::string, std::string> trial_environment(
    const std::map<std::string, std::string>& env_set, const std::vector<std::string>& env_unset) {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const auto eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    // tune's database credentials are tune's: a job that logs its environment would store them.
    if (is_database_credential_env_var(entry.substr(0, eq))) continue;
    env.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  for (const auto& name : env_unset) env.erase(name);
  for (const auto& [k, v] : env_set) env[k] = v;
  return env;
}

LaunchResult run_process(const LaunchRequest& request, const Watcher& watcher) {
  LaunchResult result;
  if (request.argv.empty()) {
    result.error = "empty command";
    return result;
  }
  const boost::filesystem::path exe = find_executable(request.argv[0]);
  if (exe.empty()) {
    result.error = fmt::format("'{}' was not found in PATH", request.argv[0]);
    return result;
  }
  bp::environment env;
  for (const auto& [k, v] : trial_environment(request)) env[k] = v;
  const std::string out_path = request.stdout_path.empty() ? "/dev/null" : request.stdout_path;
  const std::string err_path = request.stderr_path.empty() ? "/dev/null" : request.stderr_path;
  const std::string workdir = request.workdir.empty() ? "." : request.workdir;
  // Boost.Process opens `std_out > path` without O_TRUNC: a file left by an earlier run would keep
  // its tail past what this run writes, and the objective's regex reads that tail.
  // Created (or emptied) here, so that a folder that cannot take them (read-only, out of inodes)
  // fails the trial naming the file and the error, not an exception from the spawn.
  for (const auto& path : {request.stdout_path, request.stderr_path}) {
    std::error_code ec;  // a device or a FIFO (a test's) is left as it is
    if (path.empty() || (fs_exists(path) && !std::filesystem::is_regular_file(path, ec))) continue;
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      result.error = fmt::format("creating {}: {}", path, std::strerror(errno));
      return result;
    }
    close(fd);
  }

  // Strays of a trial are re-parented to us rather than to init, so sweep_strays() finds them.
  static const bool subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
  const auto children_before = own_children();
  Spawn spawn;  // the keeper runs the command; spawn.control is our end of its lifeline
  plan_spawn(request, exe, subreaper, spawn);
  result.containment = spawn.containment;
  const int control = spawn.control;

  const auto oom_kills_before = cgroup_oom_kills();
  const std::uint64_t tune_cpu_before = self_cpu_ns();
  const auto start = Clock::now();
  ChildSetup setup;
  setup.keeper_fd = spawn.keeper_fd;
  bp::child child;
  try {
    // vfork, not fork: fork copies the page tables of the whole tune process, whose study
    // cache grows with the study (430 MB at 26,000 trials), and the child unmaps them again at
    // exec; that was half of tune's time per trial by then and the cost per trial doubled from
    // 31 ms to 74 ms. The child between vfork and exec makes system calls only (ChildSetup and
    // Boost.Process's redirections), which is what vfork allows.
    child = bp::child(bp::exe = spawn.program, bp::args = spawn.args, bp::env = env,
                      bp::std_in<bp::null, bp::std_out> out_path, bp::std_err > err_path,
                      bp::start_dir = workdir, setup, bp::posix::use_vfork);
  } catch (const std::exception& e) {
    result.error = fmt::format("cannot run '{}': {}", request.argv[0], e.what());
    return result;
  }
  spawn.close_keeper_end();
  result.started = true;
  const pid_t pid = child.id();
  result.pid = pid;
  setpgid(pid, pid);  // also from the parent, so the group exists before we might signal it
  std::string pending;
  if (control >= 0) read_keeper_lines(control, /*until_pid=*/true, request, result, pending);

  // The watcher gets result.pid: the command's own pid, below the keeper.
  WatcherThread watching(watcher, result.pid, request.tick_s);
  TrialWait wait(request, child, control, result);
  const auto ended = wait.run(watching, start);
  // tune's own CPU time while the trial ran (its monitor, watcher and this thread) is the
  // study's, not other work's: external_load() takes it off the machine's busy time.
  const std::uint64_t tune_cpu = self_cpu_ns() - tune_cpu_before;
  record_exit(child, start, ended, result);
  // A watcher call under way (a storage write waiting on its database) is waited for here,
  // after the trial's end and wall time are taken: it delays the return, never the trial.
  watching.finish();
  if (control >= 0) read_keeper_lines(control, /*until_pid=*/false, request, result, pending);
  if (result.cpu) result.cpu->tune_s = static_cast<double>(tune_cpu) / 1e9;
  // The keeper's end came after the sweep of what the program left behind (SIGTERM, the grace,
  // SIGKILL): the trial's wall time is the program's own, the rest is counted apart.
  if (result.program_exited && *result.program_exited > start && *result.program_exited < ended) {
    result.wall_s = std::chrono::duration<double>(*result.program_exited - start).count();
    result.cleanup_s = std::chrono::duration<double>(ended - *result.program_exited).count();
  }
  // The keeper ends only when the tree is gone. Without one (or if it was killed), whatever is
  // left must not outlive the trial: kill it and reap it, so the next trial starts on an idle
  // machine.
  if (control < 0) {
    kill(-pid, SIGKILL);
    for (pid_t p : wait.tree()) kill(p, SIGKILL);
  }
  sweep_strays(children_before);
  if (result.signal != 0 || result.exit_code != 0) {
    result.oom_kill = logged_oom_kills(start, Clock::now());
    const auto after = cgroup_oom_kills();
    if (result.oom_kill.empty() && oom_kills_before && after && *after > *oom_kills_before)
      result.oom_kill = fmt::format("the memory cgroup's OOM killer killed {} process(es)",
                                    *after - *oom_kills_before);
  }
  // The watcher threw (its thread stopped the trial): the caller hears of it as if it had run
  // on the caller's thread, once nothing of the trial is left.
  if (auto thrown = watching.error()) std::rethrow_exception(thrown);
  return result;
}

CapturedRun run_captured(LaunchRequest request, std::size_t max_bytes) {
  CapturedRun run;
  std::error_code ec;
  const auto made = make_temp_dir("tune-run-");
  if (!made) {
    run.result.error = made.error();
    return run;
  }
  const std::filesystem::path dir = *made;
  request.stdout_path = (dir / "stdout").string();
  request.stderr_path = (dir / "stderr").string();
  run.result = run_process(request);
  run.out = tail_of_file(request.stdout_path, max_bytes);
  run.err = tail_of_file(request.stderr_path, max_bytes);
  std::filesystem::remove_all(dir, ec);
  return run;
}

}  // namespace tune::tuner
