#include "tuner/base/file_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

// "cannot <step> the file: <strerror(err)>".
std::unexpected<std::string> failed(std::string_view step, int err) {
  return std::unexpected(fmt::format("cannot {} the file: {}", step, std::strerror(err)));
}

// Writes all of `text` to `fd`; 0, or the errno of the write that failed.
int write_all(int fd, std::string_view text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;  // a regular file or device that takes nothing and says nothing
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

// A name for the temporary file beside `path` that no other writer uses: hidden, from the same
// name (cut so that it stays within NAME_MAX), this process and a counter.
fs::path temporary_beside(const fs::path& path) {
  static std::atomic<unsigned> counter{0};
  const auto name = path.filename().string().substr(0, 200);
  return path.parent_path() /
         fmt::format(".{}.tune-{}-{}.tmp", name, ::getpid(), counter.fetch_add(1));
}

// r -> x for each of owner, group and others: a script runs for whoever may read it.
mode_t with_exec_where_readable(mode_t mode) {
  if (mode & S_IRUSR) mode |= S_IXUSR;
  if (mode & S_IRGRP) mode |= S_IXGRP;
  if (mode & S_IROTH) mode |= S_IXOTH;
  return mode;
}

// rename(2) without replacing an existing `to`: renameat2(RENAME_NOREPLACE), else (a file system
// without it) a hard link and an unlink, else a check and a rename. 0 or the errno.
int rename_no_replace(const fs::path& from, const fs::path& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) return errno;
  if (::link(from.c_str(), to.c_str()) == 0) {
    ::unlink(from.c_str());
    return 0;
  }
  if (errno == EEXIST) return errno;
  struct stat st {};
  if (::lstat(to.c_str(), &st) == 0) return EEXIST;
  return ::rename(from.c_str(), to.c_str()) == 0 ? 0 : errno;
}

// The folder's entries on disk (the rename itself): best effort, as some file systems refuse
// fsync on a folder.
void sync_folder(const fs::path& folder) {
  const int fd = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

Result<void> write_file_atomically(const fs::path& given, std::string_view text,
                                   const FileWriteOptions& options) {
  // A symbolic link is followed, as writing through it would: the file it names is replaced and
  // the link kept. (A dangling one is replaced by the file.)
  fs::path path = given;
  struct stat old {};
  if (::lstat(given.c_str(), &old) == 0 && S_ISLNK(old.st_mode)) {
    std::error_code ec;
    if (auto target = fs::canonical(given, ec); !ec) path = target;
  }
  const bool replacing = ::stat(path.c_str(), &old) == 0 && S_ISREG(old.st_mode);
  fs::path tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 100; ++attempt) {
    tmp = temporary_beside(path);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd >= 0 || errno != EEXIST) break;
  }
  if (fd < 0) return failed("create", errno);
  const auto give_up = [&](std::string_view step, int err) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    return failed(step, err);
  };
  // The mode: the replaced file's permission bits, else the creation default (0666 less the
  // umask, as open gave it); a script also executable where readable.
  struct stat created {};
  if (::fstat(fd, &created) != 0) return give_up("create", errno);
  mode_t mode = (replacing ? old.st_mode : created.st_mode) & 0777;
  if (options.executable) mode = with_exec_where_readable(mode);
  if (mode != (created.st_mode & 07777) && ::fchmod(fd, mode) != 0) return give_up("create", errno);
  if (const int err = write_all(fd, text); err != 0) return give_up("write", err);
  // On disk before it takes the name, so that a crash leaves the old file or the whole new one.
  if (::fsync(fd) != 0) return give_up("write", errno);
  const int closed = ::close(fd);
  fd = -1;
  if (closed != 0) return give_up("write", errno);
  if (options.replace) {
    if (::rename(tmp.c_str(), path.c_str()) != 0)
      return give_up(replacing ? "replace" : "create", errno);
  } else if (const int err = rename_no_replace(tmp, path); err != 0) {
    return give_up("create", err);
  }
  sync_folder(path.parent_path());
  return {};
}

Result<void> write_into_existing(const fs::path& path, std::string_view text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return failed("open", errno);
  const int err = write_all(fd, text);
  const int closed = ::close(fd);
  if (err != 0) return failed("write", err);
  if (closed != 0) return failed("write", errno);
  return {};
}

}  // namespace tune::tuner
