#include "tuner/run/staging.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

// Writes `text` to `path`, reporting what the system said (ENOSPC, EACCES, ...) when it fails.
Result<void> write_text(const fs::path& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return std::unexpected(fmt::format("cannot write {}: {}", path.string(), std::strerror(errno)));
  }
  const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const int write_errno = errno;
  const bool closed = std::fclose(f) == 0;
  if (!wrote || !closed) {
    return std::unexpected(fmt::format("cannot write {}: {}", path.string(),
                                       std::strerror(wrote ? errno : write_errno)));
  }
  return {};
}

// A file descriptor closed when it goes out of scope.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

std::string system_error(const std::string& what, const fs::path& path, int err) {
  return fmt::format("cannot {} {}: {}", what, path.string(), std::strerror(err));
}

// Copies [offset, offset + length) of `in` to the same offset of `out`: copy_file_range (which
// may share the blocks where the file system can), else read and write.
Result<void> copy_range(int in, int out, off_t offset, off_t length, const fs::path& src,
                        const fs::path& dest) {
  off_t in_at = offset;
  off_t out_at = offset;
  bool kernel = true;
  std::vector<char> buffer;
  while (length > 0) {
    const auto chunk = static_cast<std::size_t>(std::min<off_t>(length, off_t{1} << 30));
    ssize_t n = -1;
    if (kernel) {
      n = ::copy_file_range(in, &in_at, out, &out_at, chunk, 0);
      if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP)) {
        kernel = false;  // not between these file systems: by hand from here
        continue;
      }
    } else {
      buffer.resize(std::min<std::size_t>(chunk, std::size_t{1} << 20));
      n = ::pread(in, buffer.data(), buffer.size(), in_at);
      if (n > 0) {
        for (ssize_t done = 0; done < n;) {
          const ssize_t w = ::pwrite(out, buffer.data() + done, static_cast<std::size_t>(n - done),
                                     out_at + done);
          if (w < 0) {
            if (errno == EINTR) continue;
            return std::unexpected(system_error("write", dest, errno));
          }
          done += w;
        }
        in_at += n;
        out_at += n;
      }
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::unexpected(system_error(kernel ? "copy to" : "read", kernel ? dest : src, errno));
    }
    if (n == 0) break;  // the source shrank meanwhile: what it had is copied
    length -= n;
  }
  return {};
}

// One regular file, as the user means it: its blocks shared (FICLONE) where the file system
// allows it, else its data copied and its holes left holes (SEEK_DATA/SEEK_HOLE), so a sparse
// file stays sparse; its permission bits kept. `dest` does not exist.
Result<void> copy_regular(const fs::path& src, const fs::path& dest) {
  // O_NONBLOCK: a source that became a FIFO since the study loaded must not hang the open.
  Fd in(::open(src.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (in.fd < 0) return std::unexpected(system_error("read", src, errno));
  struct stat st {};
  if (::fstat(in.fd, &st) != 0) return std::unexpected(system_error("read", src, errno));
  if (!S_ISREG(st.st_mode)) {
    return std::unexpected(
        fmt::format("{} is no longer a regular file: staging takes regular files and folders "
                    "only",
                    src.string()));
  }
  ::fcntl(in.fd, F_SETFL, ::fcntl(in.fd, F_GETFL) & ~O_NONBLOCK);
  Fd out(::open(dest.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (out.fd < 0) return std::unexpected(system_error("write", dest, errno));
  if (::ioctl(out.fd, FICLONE, in.fd) != 0) {
    const off_t size = st.st_size;
    for (off_t at = 0; at < size;) {
      off_t data = ::lseek(in.fd, at, SEEK_DATA);
      off_t hole = size;
      if (data < 0 && errno == ENXIO) break;  // only a hole is left
      if (data < 0) {
        data = at;  // no SEEK_DATA here: all of it is data
      } else {
        hole = ::lseek(in.fd, data, SEEK_HOLE);
        if (hole < 0 || hole > size) hole = size;
      }
      if (auto r = copy_range(in.fd, out.fd, data, hole - data, src, dest); !r) return r;
      at = hole;
    }
    if (::ftruncate(out.fd, size) != 0) return std::unexpected(system_error("write", dest, errno));
  }
  if (::fchmod(out.fd, st.st_mode & 07777) != 0)
    return std::unexpected(system_error("set the permissions of", dest, errno));
  const int fd = std::exchange(out.fd, -1);
  if (::close(fd) != 0) return std::unexpected(system_error("write", dest, errno));
  return {};
}

// A folder copied into `dest` (made when missing, merged into when there): regular files as
// copy_regular, folders recursively, symbolic links followed (the copy holds what they lead
// to); anything else, or a link back to a folder above (`ancestors`), refused by name.
Result<void> copy_tree(const fs::path& src, const fs::path& dest,
                       std::vector<std::pair<dev_t, ino_t>>& ancestors) {
  struct stat st {};
  if (::stat(src.c_str(), &st) != 0) {
    if (errno == ELOOP)
      return std::unexpected(fmt::format("{} is a symbolic link loop", src.string()));
    return std::unexpected(system_error("read", src, errno));
  }
  if (S_ISREG(st.st_mode)) {
    struct stat there {};
    if (::lstat(dest.c_str(), &there) == 0) {
      if (S_ISDIR(there.st_mode)) {
        return std::unexpected(fmt::format(
            "cannot write {}: a folder is there (staging replaces files, never folders)",
            dest.string()));
      }
      if (::unlink(dest.c_str()) != 0) return std::unexpected(system_error("replace", dest, errno));
    }
    return copy_regular(src, dest);
  }
  if (!S_ISDIR(st.st_mode)) {
    return std::unexpected(fmt::format(
        "{} is not a regular file or a folder: staging takes regular files and folders only",
        src.string()));
  }
  const std::pair<dev_t, ino_t> self{st.st_dev, st.st_ino};
  if (std::ranges::find(ancestors, self) != ancestors.end()) {
    return std::unexpected(fmt::format(
        "{} is a symbolic link loop (it leads back to a folder above it)", src.string()));
  }
  std::error_code ec;
  fs::create_directory(dest, ec);
  if (!ec && !fs::is_directory(fs::symlink_status(dest, ec)))
    ec = std::make_error_code(std::errc::not_a_directory);
  if (ec) return std::unexpected(fmt::format("cannot create {}: {}", dest.string(), ec.message()));
  ancestors.push_back(self);
  for (fs::directory_iterator it(src, ec), end; !ec && it != end; it.increment(ec)) {
    if (auto r = copy_tree(it->path(), dest / it->path().filename(), ancestors); !r) return r;
  }
  ancestors.pop_back();
  if (ec) return std::unexpected(fmt::format("cannot read {}: {}", src.string(), ec.message()));
  ::chmod(dest.c_str(), st.st_mode & 07777);
  return {};
}

Result<void> stage_one(const StagedFile& file, const fs::path& dest, const TemplateValues& values) {
  std::error_code ec;
  if (dest.has_parent_path()) {
    fs::create_directories(dest.parent_path(), ec);
    if (!ec && !fs::is_directory(dest.parent_path()))
      ec = std::make_error_code(std::errc::not_a_directory);
    if (ec) {
      return std::unexpected(
          fmt::format("cannot create {}: {}", dest.parent_path().string(), ec.message()));
    }
  }
  const auto status = fs::symlink_status(dest, ec);
  if (fs::exists(status)) {
    if (file.mode != StagedFile::Mode::render && fs::equivalent(file.src, dest, ec)) return {};
    // A shared working directory (workdir: study) may hold the user's own folders: a copied
    // folder is merged into its earlier copy, and nothing else ever deletes one.
    const bool merge = file.mode == StagedFile::Mode::copy && fs::is_directory(status) &&
                       fs::is_directory(file.src, ec);
    if (fs::is_directory(status) && !merge) {
      return std::unexpected(
          fmt::format("cannot write {}: a folder is there (staging replaces files, never folders)",
                      dest.string()));
    }
    if (!merge && !fs::remove(dest, ec)) {
      return std::unexpected(fmt::format("cannot replace {}: {}", dest.string(), ec.message()));
    }
  }
  switch (file.mode) {
    case StagedFile::Mode::copy: {
      std::vector<std::pair<dev_t, ino_t>> ancestors;
      if (auto r = copy_tree(file.src, dest, ancestors); !r)
        return std::unexpected(fmt::format("copying {}: {}", file.src, r.error()));
      return {};
    }
    case StagedFile::Mode::link:
      fs::create_symlink(file.src, dest, ec);
      if (ec) {
        return std::unexpected(
            fmt::format("cannot link {} to {}: {}", dest.string(), file.src, ec.message()));
      }
      return {};
    case StagedFile::Mode::render: {
      auto text = expand_text(file.text, values);
      if (!text) return std::unexpected(fmt::format("template {}: {}", file.src, text.error()));
      return write_text(dest, *text);
    }
  }
  return {};
}

}  // namespace

Result<nlohmann::json> stage_files(const std::vector<StagedFile>& files, const std::string& workdir,
                                   const TemplateValues& values) {
  nlohmann::json record = nlohmann::json::array();
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto& file = files[i];
    if (auto ok = stage_one(file, fs::path(workdir) / file.dest, values); !ok)
      return std::unexpected(fmt::format("staging files[{}]: {}", i, ok.error()));
    record.push_back(
        {{"dest", file.dest}, {"src", file.src}, {"mode", staged_mode_name(file.mode)}});
  }
  return record;
}

}  // namespace tune::tuner
