#include "trainer/thread_names.h"

#include <dirent.h>
#include <fcntl.h>
#include <omp.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <opencv2/core.hpp>
#include <string>

namespace tune::trainer {
namespace {

std::string read_comm(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::array<char, 64> buf{};
  const ssize_t n = ::read(fd, buf.data(), buf.size() - 1);
  ::close(fd);
  std::string s(buf.data(), n > 0 ? static_cast<std::size_t>(n) : 0);
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

void write_comm(const std::string& path, const char* name) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  const std::string text(name);
  [[maybe_unused]] const ssize_t n = ::write(fd, text.data(), text.size());
  ::close(fd);
}

// Every other thread that still carries the process's name gets `name`.
void rename_other_threads(const char* name) {
  const auto self = static_cast<long>(::syscall(SYS_gettid));
  const std::string own = read_comm("/proc/self/task/" + std::to_string(self) + "/comm");
  DIR* d = ::opendir("/proc/self/task");
  if (d == nullptr) return;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9' || std::stol(e->d_name) == self) continue;
    const std::string path = std::string("/proc/self/task/") + e->d_name + "/comm";
    if (read_comm(path) == own) write_comm(path, name);
  }
  ::closedir(d);
}

// Runs `start` with the calling thread named `name`, so the threads it creates inherit it.
template <class F>
void under_name(const char* name, F start) {
  std::array<char, 16> saved{};
  const bool have = ::pthread_getname_np(::pthread_self(), saved.data(), saved.size()) == 0;
  name_this_thread(name);
  start();
  if (have) name_this_thread(saved.data());
}

}  // namespace

void name_this_thread(const char* name) {
  std::array<char, 16> cut{};
  std::size_t i = 0;
  for (; name[i] != '\0' && i + 1 < cut.size(); ++i) cut[i] = name[i];
  ::pthread_setname_np(::pthread_self(), cut.data());
}

void name_library_pools(bool opencv_used) {
  rename_other_threads("tt-blas");
  under_name("tt-omp", [] {
#pragma omp parallel
    { [[maybe_unused]] volatile int touched = omp_get_thread_num(); }
  });
  const int cv_threads = cv::getNumThreads();
  if (opencv_used && cv_threads > 1) {
    under_name("tt-cv", [cv_threads] {
      const int stripes = 4 * cv_threads;
      cv::parallel_for_(
          cv::Range(0, stripes),
          [](const cv::Range& r) {
            volatile double sink = 0;
            for (int i = r.start; i < r.end; ++i)
              for (int k = 0; k < 20000; ++k) sink = sink + k * 1e-9;
          },
          stripes);
    });
  }
}

}  // namespace tune::trainer
