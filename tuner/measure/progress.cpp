#include "tuner/measure/progress.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <re2/re2.h>

#include <fmt/format.h>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "tuner/base/number_text.h"
#include "tuner/base/text.h"
#include "tuner/measure/objective.h"
#include "tuner/study/patterns.h"

namespace tune::tuner {
namespace {

// Text that is one finite number written in `style`, or why not.
Result<double> progress_number(std::string_view text, NumberStyle style) {
  if (text.empty()) return std::unexpected(std::string("is empty"));
  if (text.size() > 64) return std::unexpected(std::string("is longer than 64 bytes"));
  if (style != NumberStyle::plain) return parse_number_text(text, style);
  // Plain, as the window always read it: strtod, and no value rounded to 0 or to a huge one.
  const std::string s(text);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() + s.size() && std::isfinite(v) && errno != ERANGE) return v;
  auto why = parse_number_text(text, style);
  return std::unexpected(why ? std::string("is out of range") : why.error());
}

}  // namespace

ProgressReader::ProgressReader(const WindowSpec& spec, std::string path)
    : m_spec(spec), m_path(std::move(path)) {
  if (m_spec.source == WindowSpec::Source::log) return;
  m_re = std::make_unique<RE2>(m_spec.regex, regex_options());  // as the study file checked it
  // The number: the first group not named `time`; the whole match when there is none.
  const auto& names = m_re->CapturingGroupNames();  // group index -> name
  for (int g = 1; g <= m_re->NumberOfCapturingGroups(); ++g) {
    const auto it = names.find(g);
    if (it != names.end() && it->second == "time") {
      if (m_time_group == 0) m_time_group = g;
    } else if (m_value_group == 0) {
      m_value_group = g;
    }
  }
}

ProgressReader::~ProgressReader() = default;

std::string ProgressReader::describe() const {
  switch (m_spec.source) {
    case WindowSpec::Source::log:
      return fmt::format("key '{}' of the entries of log {}", printable(m_spec.key, 100), m_path);
    case WindowSpec::Source::file:
      return fmt::format("regex '{}' on file {}", printable(m_spec.regex, 200), m_path);
    case WindowSpec::Source::stream:
      break;
  }
  return fmt::format("regex '{}' on {}", printable(m_spec.regex, 200), m_spec.stream);
}

std::vector<ProgressPoint> ProgressReader::poll(double now_s) {
  std::vector<ProgressPoint> out;
  if (m_spec.source == WindowSpec::Source::log) {
    read_log_entries(now_s, out);
  } else {
    read_lines(now_s, out);
  }
  m_counts.points += out.size();
  return out;
}

void ProgressReader::take_line(std::string_view line, double now_s,
                               std::vector<ProgressPoint>& out) {
  ++m_counts.lines;
  const int groups = std::max(m_value_group, m_time_group);
  std::vector<re2::StringPiece> match(static_cast<std::size_t>(groups) + 1);
  if (!m_re->Match(re2::StringPiece(line.data(), line.size()), 0, line.size(), RE2::UNANCHORED,
                   match.data(), groups + 1))
    return;
  const auto text = [&](int g) {
    const auto& m = match[static_cast<std::size_t>(g)];
    return std::string_view(m.data() ? m.data() : line.data(), m.size());
  };
  ProgressPoint p;
  p.t = now_s;
  if (m_time_group > 0) {
    const auto t = group_number(line, text(m_time_group), "group 'time'");
    if (!t) return;
    p.t = *t;
    m_counts.job_clock = true;
  }
  if (m_spec.settings.measure == WindowMeasure::lines) {
    p.value = static_cast<double>(++m_line_count);
  } else {
    const auto v = group_number(line, text(m_value_group), nullptr);
    if (!v) return;
    p.value = *v;
  }
  out.push_back(p);
}

std::optional<double> ProgressReader::group_number(std::string_view line, std::string_view m,
                                                   const char* what) {
  const auto said = [&] {
    return fmt::format("the window's {}{}{} matched", describe(), what ? " " : "",
                       what ? what : "");
  };
  // `12` read out of `samples 12,345` would be a made-up counter: refused, and the window fails
  // the trial with this line (every such line would be refused).
  const auto begin = static_cast<std::size_t>(m.data() - line.data());
  if (auto why = partial_number_reason(line, begin, begin + m.size(), said())) {
    ++m_counts.refused;
    ++m_counts.partial;
    if (m_partial_number.empty()) m_partial_number = std::move(*why);
    return std::nullopt;
  }
  auto v = progress_number(m, m_spec.number);
  if (!v) {
    ++m_counts.refused;
    m_last_refused = fmt::format("{} '{}', which {}", said(), printable(m, 60), v.error());
    return std::nullopt;
  }
  return *v;
}

void ProgressReader::read_lines(double now_s, std::vector<ProgressPoint>& out) {
  const int fd = ::open(m_path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return;  // not written yet
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return;
  }
  const auto size = static_cast<std::uintmax_t>(st.st_size);
  m_counts.bytes = size;
  if (size < m_offset) {  // rewritten from the start: follow the new text
    m_offset = 0;
    m_partial.clear();
    m_in_long = false;
  }
  if (size - m_offset > k_progress_read_bytes) {
    // Too much at once: the older part is skipped, and the line cut by the skip with it.
    m_counts.skipped_bytes += size - m_offset - k_progress_read_bytes;
    m_offset = size - k_progress_read_bytes;
    m_partial.clear();
    m_in_long = true;
  }
  std::string buf(static_cast<std::size_t>(size - m_offset), '\0');
  std::size_t got = 0;
  while (got < buf.size()) {
    const ssize_t n =
        pread(fd, buf.data() + got, buf.size() - got, static_cast<off_t>(m_offset + got));
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  buf.resize(got);
  m_offset += got;
  std::size_t start = 0;
  while (start < buf.size()) {
    const auto nl = buf.find('\n', start);
    const std::size_t end = nl == std::string::npos ? buf.size() : nl;
    const std::string_view piece(buf.data() + start, end - start);
    if (m_in_long) {
      if (nl != std::string::npos) m_in_long = false;  // the skipped line ends here
    } else if (m_partial.size() + piece.size() > k_progress_line_bytes) {
      ++m_counts.long_lines;
      m_partial.clear();
      m_in_long = nl == std::string::npos;
    } else if (nl == std::string::npos) {
      m_partial.append(piece);
    } else if (m_partial.empty()) {
      take_line(piece, now_s, out);
    } else {
      m_partial.append(piece);
      take_line(m_partial, now_s, out);
      m_partial.clear();
    }
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
}

void ProgressReader::read_log_entries(double now_s, std::vector<ProgressPoint>& out) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(m_path, ec);
  if (ec) return;
  const auto mtime = std::filesystem::last_write_time(m_path, ec);
  if (ec || (mtime == m_log_mtime && size == m_counts.bytes)) return;
  m_log_mtime = mtime;
  m_counts.bytes = size;
  if (size > k_progress_log_bytes) return;
  auto entries = read_log(m_path);  // rewritten whole and renamed into place: never partial
  if (!entries) return;
  for (std::size_t i = m_entries_seen; i < entries->size(); ++i) {
    ++m_counts.lines;
    const auto& e = (*entries)[i];
    if (!e.is_object()) {
      ++m_counts.refused;
      continue;
    }
    const auto v = finite_number_at(e, m_spec.key);
    if (!v) {
      ++m_counts.refused;
      continue;
    }
    ProgressPoint p{now_s, *v};
    if (!m_spec.time_key.empty()) {
      const auto t = finite_number_at(e, m_spec.time_key);
      if (!t) {
        ++m_counts.refused;
        continue;
      }
      p.t = *t;
      m_counts.job_clock = true;
    }
    out.push_back(p);
  }
  m_entries_seen = std::max(m_entries_seen, entries->size());
}

}  // namespace tune::tuner
