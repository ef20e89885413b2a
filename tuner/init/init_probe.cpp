#include "tuner/init/init_probe.h"

#include <fmt/format.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <sstream>
#include <tuple>

#include "probes/cpu_profile.h"
#include "tuner/base/number_text.h"
#include "tuner/base/temp_dir.h"
#include "tuner/base/text.h"
#include "tuner/launch/launcher.h"
#include "tuner/launch/process_tree.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

bool any_of_words(const std::string& text, std::initializer_list<const char*> words) {
  return std::any_of(words.begin(), words.end(), [&](const char* w) { return text.contains(w); });
}

// 0 work rate, 1 data rate, 2 time; -1 not a result (a size, a count, a residual).
int result_kind(const std::string& name, const std::string& unit) {
  const std::string n = ascii_lower(name), u = ascii_lower(unit), both = n + " " + u;
  if (any_of_words(both, {"byte", "gb/s", "mb/s", "kb/s", "gbs", "mbs", "bandwidth"})) return 1;
  if (any_of_words(both, {"flop", "/s", "/sec", "per_s", "per sec", "throughput", "gups"}))
    return 0;
  static const std::set<std::string> k_time_units = {"s",  "sec",  "secs", "second", "seconds",
                                                     "ms", "msec", "us",   "usec",   "min"};
  if (any_of_words(n, {"time", "elapsed", "latency", "duration", "seconds", "runtime"}) ||
      k_time_units.contains(u))
    return 2;
  return -1;
}

// The RE2 group that reads a number written in `style`, whole: 12,345.6 grouped is not 12.
const char* number_group(NumberStyle style) {
  switch (style) {
    case NumberStyle::grouped:
      return "([-+]?(?:[0-9]{1,3}(?:,[0-9]{3})+(?:\\.[0-9]+)?|[0-9]*\\.?[0-9]+)"
             "(?:[eE][-+]?[0-9]+)?)";
    case NumberStyle::decimal_comma:
      return "([-+]?[0-9]+(?:,[0-9]+)?)";
    case NumberStyle::plain:
      break;
  }
  return "([-+]?[0-9]*\\.?[0-9]+(?:[eE][-+]?[0-9]+)?)";
}

constexpr NumberStyle k_styles[] = {NumberStyle::plain, NumberStyle::grouped,
                                    NumberStyle::decimal_comma};

bool reads_as(std::string_view token, NumberStyle style) {
  return parse_number_text(token, style).has_value();
}

}  // namespace

std::pair<NumberStyle, std::string> comma_style_of(const std::string& text) {
  std::string_view grouped, decimal, point;
  for (std::size_t i = 0; i < text.size();) {
    const bool starts = std::isdigit(static_cast<unsigned char>(text[i])) &&
                        (i == 0 || !std::isdigit(static_cast<unsigned char>(text[i - 1])));
    const auto token = starts ? number_token_at(text, i) : std::string_view();
    if (token.empty()) {
      ++i;
      continue;
    }
    const bool g = reads_as(token, NumberStyle::grouped);
    const bool d = reads_as(token, NumberStyle::decimal_comma);
    if (token.contains(',') && g && !d && grouped.empty()) grouped = token;
    if (token.contains(',') && d && !g && decimal.empty()) decimal = token;
    if (token.contains('.') && !token.contains(',') && point.empty()) point = token;
    i += token.size();
  }
  if (!grouped.empty())
    return {NumberStyle::grouped, fmt::format("the output groups thousands (\"{}\")", grouped)};
  if (!decimal.empty())
    return {NumberStyle::decimal_comma,
            fmt::format("the output writes a decimal comma (\"{}\")", decimal)};
  if (!point.empty())
    return {NumberStyle::grouped,
            fmt::format("the output's decimal point is '.' (\"{}\"), so a ',' groups thousands",
                        point)};
  return {NumberStyle::decimal_comma,
          "the output has no '.' decimal point, so a ',' is taken for the decimal point"};
}

namespace {

// A unit that says a number is a rate: 0 a work rate ("timesteps/s", "GFLOPS", "ns/day"), 1 a
// data rate ("MB/s"), -1 none (a time, "hours/ns", a count).
int unit_rate_kind(const std::string& unit) {
  const std::string u = ascii_lower(unit);
  if (u.empty()) return -1;
  const bool per_time = u.ends_with("/s") || u.ends_with("/sec") || u.ends_with("/second") ||
                        u.ends_with("/day") || u.ends_with("/min") || u.ends_with("/h");
  if (per_time && (u.contains("byte") || u == "b/s" || u == "kb/s" || u == "mb/s" || u == "gb/s" ||
                   u == "kib/s" || u == "mib/s" || u == "gib/s"))
    return 1;
  if (per_time || u.ends_with("flops") || u == "ips" || u == "fps" || u == "iops" || u == "gups")
    return 0;
  return -1;
}

bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '/' || c == '.' ||
         c == '-';
}

std::string re2_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '/' && c != ' ')
      out += '\\';
    out += c;
  }
  return out;
}

// A name as RE2 text: its blanks match any run of blanks ("events per second").
std::string name_regex(const std::string& name) {
  std::string out;
  for (char c : re2_escape(name)) out += c == ' ' ? std::string("\\s+") : std::string(1, c);
  return out;
}

// The word after a number ending at `after` ("GFLOP/s" in "3.8 GFLOP/s, ..."): "" when what
// follows is no word, or names the next number ("epoch: 1 samples/s: 1200").
std::string unit_at(const std::string& line, std::size_t after) {
  const auto u = line.find_first_not_of(" \t", after);
  if (u == std::string::npos) return "";
  const auto u_end = line.find_first_of(" \t,;():=", u);
  std::string unit = line.substr(u, u_end == std::string::npos ? std::string::npos : u_end - u);
  if (!std::isalpha(static_cast<unsigned char>(unit[0])) && unit[0] != '/') return "";
  if (u_end != std::string::npos && (line[u_end] == ':' || line[u_end] == '=')) return "";
  return unit;
}

std::string tail_of_file(const fs::path& path, std::uintmax_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::uintmax_t>(std::max<std::streamoff>(in.tellg(), 0));
  in.seekg(static_cast<std::streamoff>(size > max_bytes ? size - max_bytes : 0));
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::optional<std::string> environ_value(pid_t pid, const char* name) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  const std::string key = std::string(name) + "=";
  for (std::string entry; std::getline(in, entry, '\0');) {
    if (entry.starts_with(key)) return entry.substr(key.size());
  }
  return std::nullopt;
}

pid_t parent_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("PPid:")) return static_cast<pid_t>(std::atoi(line.c_str() + 5));
  }
  return 0;
}

bool is_rank(pid_t pid) {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
    if (environ_value(pid, var)) return true;
  }
  return false;
}

// What the samples have gathered so far.
struct Gathered {
  std::set<std::string> libraries;
  struct Rank {
    bool mpi = false;  // has an MPI rank (else the command itself, seen before any had one)
    int threads = 0, runtime = 0;
    std::map<std::string, int> names;
  };
  std::map<pid_t, Rank> ranks;  // the most seen at once, per process
  // Processes below the ranks: the most at once per rank, and per name.
  int children_per_rank = 0;
  std::map<std::string, int> child_names;
  std::map<std::string, bool> files;  // name relative to the folder -> written
  std::map<pid_t, int> looks;         // samples taken of each process
  // Where the ranks' CPU time went (ProbeOptions::cpu_profile): samples per rank and library,
  // and each rank's number as its environment gives it.
  std::unique_ptr<probes::CpuProfile> profile;
  std::map<pid_t, std::map<std::string, long>> cpu_samples;
  std::map<pid_t, int> rank_numbers;
};

void drain_profile(Gathered& g) {
  if (!g.profile) return;
  for (const auto& [owner, libs] : g.profile->drain())
    for (const auto& [lib, n] : libs) g.cpu_samples[owner][lib] += n;
}

// `path` (an open file's real path) as a name relative to `work` (the mirror) or `source` (the
// user's folder, reached through a link); "" when it is under neither.
std::string relative_name(const std::string& path, const fs::path& work, const fs::path& source) {
  for (const fs::path& root : {work, source}) {
    const std::string prefix = root.string() + "/";
    if (!root.empty() && path.starts_with(prefix)) return path.substr(prefix.size());
  }
  return "";
}

// One look at the tree below `root`. The ranks are the processes with an MPI rank in their
// environment (a wrapper script that starts mpirun included), else `root` itself; processes
// below a rank (workers it forks) add their libraries and files, not their threads.
void sample(pid_t root, bool has_mpirun, const fs::path& work, const fs::path& source,
            Gathered& g) {
  std::vector<pid_t> tree = descendants(root);
  tree.insert(tree.begin(), root);
  std::set<pid_t> ranks;
  for (pid_t p : tree) {
    if (is_rank(p)) ranks.insert(p);
  }
  const bool mpi = !ranks.empty();
  if (!mpi && has_mpirun) return;  // mpirun has not started the ranks yet
  if (!mpi) ranks.insert(root);
  int rank_count = 0, child_count = 0;
  std::map<std::string, int> child_names;
  std::set<pid_t> alive;
  for (pid_t p : tree) {
    const bool rank = ranks.contains(p) && !(mpi && ranks.contains(parent_of(p)));
    const bool below_rank = !rank && (ranks.contains(p) || !mpi);
    if (!rank && !below_rank) continue;  // mpirun, orted
    if (rank) {
      ++rank_count;
    } else {
      ++child_count;
      std::ifstream comm("/proc/" + std::to_string(p) + "/comm");
      std::string name;
      std::getline(comm, name);
      if (!name.empty()) ++child_names[printable(name, 32)];
    }
    // Libraries are loaded early and stay: maps (thousands of lines for torch) is read on a
    // process's first look and every fifth after; threads and open files every look.
    const bool with_libraries = g.looks[p]++ % 5 == 0;
    auto view = probes::read_process_view(p, "/proc", with_libraries);
    if (!view) continue;
    if (g.profile) {
      // A worker's time counts for the rank above it.
      pid_t owner = p;
      if (mpi)
        for (pid_t up = parent_of(owner); up > 1 && ranks.contains(up); up = parent_of(owner))
          owner = up;
      if (rank && mpi)
        if (const auto n = environ_value(p, "OMPI_COMM_WORLD_RANK"); n && !n->empty())
          g.rank_numbers[p] = std::atoi(n->c_str());
      for (const auto& t : view->threads) {
        g.profile->add_thread(p, t.tid, owner);
        alive.insert(t.tid);
      }
    }
    g.libraries.insert(view->libraries.begin(), view->libraries.end());
    for (const auto& f : view->files) {
      const std::string name = relative_name(f.path, work, source);
      if (!name.empty()) g.files[name] = g.files[name] || f.write;
    }
    if (!rank) continue;
    Gathered::Rank& r = g.ranks[p];
    r.mpi = mpi;
    int runtime = 0;
    std::map<std::string, int> names;
    for (const auto& t : view->threads) {
      ++names[t.comm];
      if (t.tid != p &&
          (probes::is_event_wait_syscall(t.syscall) || probes::is_runtime_thread_name(t.comm)))
        ++runtime;
    }
    r.threads = std::max(r.threads, static_cast<int>(view->threads.size()));
    r.runtime = std::max(r.runtime, runtime);
    for (const auto& [name, n] : names) r.names[name] = std::max(r.names[name], n);
  }
  if (g.profile) {
    drain_profile(g);
    g.profile->retain(alive);
  }
  if (rank_count > 0 && child_count > 0) {
    g.children_per_rank =
        std::max(g.children_per_rank, (child_count + rank_count - 1) / rank_count);
    for (const auto& [name, n] : child_names)
      g.child_names[name] = std::max(g.child_names[name], (n + rank_count - 1) / rank_count);
  }
}

// The mirror of `source` in `work`: small regular files copied, the rest linked. Returns the
// names it holds and their sizes.
std::map<std::string, ProbeInput> mirror(const fs::path& source, const fs::path& work,
                                         std::uintmax_t copy_limit) {
  std::map<std::string, ProbeInput> out;
  std::uintmax_t copied = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(source, ec)) {
    const std::string name = entry.path().filename().string();
    if (name == "tune-out") continue;  // tune's own output: nothing a program reads
    ProbeInput in{name, 0, entry.is_directory(ec)};
    const bool regular = entry.is_regular_file(ec);
    if (regular) in.bytes = entry.file_size(ec);
    std::error_code op;
    if (regular && in.bytes <= copy_limit && copied + in.bytes <= 4 * copy_limit) {
      fs::copy_file(entry.path(), work / name, op);
      copied += in.bytes;
    } else {
      fs::create_symlink(fs::absolute(entry.path()), work / name, op);
    }
    if (!op) out.emplace(name, in);
  }
  return out;
}

// The lines a stream's file gains while the probe runs, each with the moment it was read: the
// new bytes only, at most a MiB a read (the older part of a flood is skipped), lines cut at
// k_timed_line_bytes, k_max_timed_lines kept.
class LineTimes {
 public:
  static constexpr std::size_t k_max_timed_lines = 20000;
  LineTimes(std::string path, std::string source)
      : m_path(std::move(path)), m_source(std::move(source)) {}

  void read(double now_s, std::vector<TimedLine>& out) {
    std::ifstream in(m_path, std::ios::binary);
    if (!in) return;
    in.seekg(0, std::ios::end);
    const auto size = static_cast<std::uintmax_t>(std::max<std::streamoff>(in.tellg(), 0));
    if (size <= m_offset) return;
    constexpr std::uintmax_t k_max_read = 1u << 20;
    if (size - m_offset > k_max_read) {
      m_offset = size - k_max_read;
      m_partial.clear();
      m_skip_to_newline = true;
    }
    in.seekg(static_cast<std::streamoff>(m_offset));
    std::string buf(static_cast<std::size_t>(size - m_offset), '\0');
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    buf.resize(static_cast<std::size_t>(in.gcount()));
    m_offset += buf.size();
    for (char c : buf) {
      if (c != '\n') {
        if (!m_skip_to_newline && m_partial.size() < k_timed_line_bytes) m_partial += c;
        continue;
      }
      if (!m_skip_to_newline && out.size() < k_max_timed_lines)
        out.push_back({now_s, m_source, m_partial});
      m_partial.clear();
      m_skip_to_newline = false;
    }
  }

 private:
  std::string m_path, m_source;
  std::uintmax_t m_offset = 0;
  std::string m_partial;
  bool m_skip_to_newline = false;
};

// mpirun's options that the study's launch adds to every trial and the command may lack: as
// root --allow-run-as-root, and --oversubscribe for more ranks than cores.
std::vector<std::string> with_mpirun_options(std::vector<std::string> argv, bool has_mpirun,
                                             bool oversubscribe) {
  if (!has_mpirun) return argv;
  auto add = [&](const char* flag) {
    if (std::find(argv.begin(), argv.end(), flag) == argv.end())
      argv.insert(argv.begin() + 1, flag);
  };
  if (oversubscribe) add("--oversubscribe");
  if (running_as_root()) add("--allow-run-as-root");
  return argv;
}

// Best objective first: work rates, data rates, times; within one kind a metric's own name
// (HPL_Tflops, throughput) before a bare unit (Gflop/s: 3.8 says of what only by its place),
// then the order they appear.
// A rate per second before one per minute, hour or day ("108.2 timesteps/s" before "46748.6
// tau/day" on LAMMPS's one line: the same figure, in the unit users compare).
void sort_results(std::vector<ResultLine>& lines) {
  const auto slow_base = [](const ResultLine& r) {
    const std::string u = ascii_lower(r.unit);
    return u.ends_with("/day") || u.ends_with("/h") || u.ends_with("/min");
  };
  std::stable_sort(lines.begin(), lines.end(), [&](const ResultLine& a, const ResultLine& b) {
    const bool bare_a = a.name.contains('/'), bare_b = b.name.contains('/');
    const bool slow_a = slow_base(a), slow_b = slow_base(b);
    return std::tie(a.rank, bare_a, slow_a) < std::tie(b.rank, bare_b, slow_b);
  });
}

// Whether the best progress lines say the job goes on past `until_s` (seconds after launch):
// a counter that gives its total ("step 40/500") at its rate so far.
bool ends_after(const std::vector<ProgressLines>& progress, double now_s, double until_s) {
  for (const auto& p : progress) {
    if (!p.stopped.empty()) continue;
    if (p.measure != WindowMeasure::counter || !p.total || p.rate <= 0) return false;
    return now_s + (*p.total - p.last_value) / p.rate > until_s;
  }
  return false;
}

}  // namespace

std::optional<LineBuffering> line_buffering(const std::string& path_var,
                                            const std::string& ld_preload) {
  // Where coreutils keeps it beside the `stdbuf` found on PATH (its PKGLIBEXECDIR), then the
  // usual places.
  std::vector<fs::path> candidates;
  std::error_code ec;
  for (std::size_t at = 0; at <= path_var.size();) {
    const std::size_t colon = std::min(path_var.find(':', at), path_var.size());
    const fs::path dir = path_var.substr(at, colon - at);
    at = colon + 1;
    if (dir.empty() || !fs::is_regular_file(dir / "stdbuf", ec)) continue;
    const fs::path prefix = fs::weakly_canonical(dir / "stdbuf", ec).parent_path().parent_path();
    for (const char* sub : {"libexec/coreutils", "lib/coreutils", "lib64/coreutils"})
      candidates.push_back(prefix / sub / "libstdbuf.so");
  }
  for (const char* dir : {"/usr/libexec/coreutils", "/usr/lib/coreutils", "/usr/lib64/coreutils"})
    candidates.push_back(fs::path(dir) / "libstdbuf.so");
  for (const auto& lib : candidates) {
    if (!fs::is_regular_file(lib, ec)) continue;
    LineBuffering out;
    out.library = lib.string();
    // The user's own preloads stay, after it (ld.so reads blanks or colons between them).
    out.env = {{"LD_PRELOAD", ld_preload.empty() ? out.library : out.library + " " + ld_preload},
               {"_STDBUF_O", "L"},
               {"PYTHONUNBUFFERED", "1"}};
    return out;
  }
  return std::nullopt;
}

std::vector<ResultLine> find_result_lines(const std::string& text, const std::string& source) {
  std::vector<ResultLine> found;
  // Of each found figure (as `found`): its numbers as written, and its regex before and after
  // the number's group, which waits for the style that reads all of them whole.
  struct Seen {
    std::vector<std::string> tokens;
    std::string before, after;
  };
  std::vector<Seen> seen;
  std::istringstream lines(text);
  int line_no = 0;
  // One figure seen: `name` (what the regex names) with the number `token` on line `line_no`.
  auto add = [&](const std::string& name, const std::string& unit, int kind, std::string_view token,
                 const std::string& before, const std::string& after) {
    auto it = std::find_if(found.begin(), found.end(),
                           [&](const ResultLine& r) { return r.name == name; });
    if (it == found.end()) {
      ResultLine r;
      r.source = source;
      r.name = name;
      r.unit = unit;
      r.rank = kind;
      r.maximize = kind < 2;
      found.push_back(std::move(r));
      seen.push_back({{}, before, after});
      it = found.end() - 1;
    }
    seen[static_cast<std::size_t>(it - found.begin())].tokens.emplace_back(token);
    it->last_line = line_no;
    ++it->count;
  };
  const auto one_number = [](std::string_view token) {
    return !token.empty() && std::any_of(std::begin(k_styles), std::end(k_styles),
                                         [&](NumberStyle s) { return reads_as(token, s); });
  };
  for (std::string line; std::getline(lines, line); ++line_no) {
    std::set<std::size_t> used;  // where the numbers read as NAME: number start
    for (std::size_t sep = line.find_first_of(":="); sep != std::string::npos;
         sep = line.find_first_of(":=", sep + 1)) {
      // NAME, optional blanks, ':' or '=', optional blanks, a number, an optional unit.
      std::size_t end = sep;
      while (end > 0 && line[end - 1] == ' ') --end;
      std::size_t begin = end;
      while (begin > 0 && name_char(line[begin - 1])) --begin;
      if (begin == end || !std::isalpha(static_cast<unsigned char>(line[begin]))) continue;
      std::size_t num = line.find_first_not_of(" \t", sep + 1);
      if (num == std::string::npos) continue;
      if (line[num] == '+') ++num;
      // The number as written, separators included: "12,345.6" is one number, not 12.
      const auto token = number_token_at(line, num);
      if (!one_number(token)) continue;  // "1.2.3": no one number
      const std::size_t after = num + token.size();
      if (after < line.size() && name_char(line[after]) && line[after] != '.' && line[after] != '/')
        continue;  // "12abc": not a number
      if (after + 1 < line.size() && line[after] == ':' &&
          std::isdigit(static_cast<unsigned char>(line[after + 1])))
        continue;  // "0:00:09": a clock, not a number
      const std::string unit = unit_at(line, after);
      std::string name = line.substr(begin, end - begin);
      int kind = result_kind(name, unit);
      if (kind < 0) {
        // "events per second: 3948.55": a name of a few words, when its last word alone
        // is none ("second").
        std::size_t words_begin = begin;
        for (int words = 1; words < 4 && words_begin >= 2 && line[words_begin - 1] == ' ' &&
                            std::isalpha(static_cast<unsigned char>(line[words_begin - 2]));
             ++words) {
          std::size_t b = words_begin - 1;
          while (b > 0 && std::isalpha(static_cast<unsigned char>(line[b - 1]))) --b;
          words_begin = b;
        }
        name = line.substr(words_begin, end - words_begin);
        kind = result_kind(name, unit);
      }
      if (kind < 0) continue;
      used.insert(num);
      add(name, unit, kind, token,
          fmt::format("\\b{}{}{}\\s*", name_regex(name), end < sep ? "\\s*" : "", line[sep]), "");
    }
    // "108.2 timesteps/s", "3.8 GFLOPS": a number with a rate for its unit, named by the unit.
    for (std::size_t i = 0; i < line.size(); ++i) {
      const bool starts = std::isdigit(static_cast<unsigned char>(line[i])) &&
                          (i == 0 || !name_char(line[i - 1]) || line[i - 1] == '/');
      if (!starts) continue;
      const auto token = number_token_at(line, i);
      const std::size_t after = i + token.size();
      if (!one_number(token) || used.contains(i)) {
        i = std::max(i, after);
        continue;
      }
      const std::string unit = unit_at(line, after);
      i = after;
      const int kind = unit_rate_kind(unit);
      if (kind < 0 || after >= line.size() || (line[after] != ' ' && line[after] != '\t')) continue;
      add(unit, unit, kind, token, "", fmt::format("\\s*{}(?:[^A-Za-z0-9_/]|$)", re2_escape(unit)));
    }
  }
  // Each figure in the one style that reads every number it was seen with whole; one that no
  // style reads so ("12,345.6" then "1,75") is not offered: its regex would make values up.
  const auto comma = comma_style_of(text);
  std::vector<ResultLine> offered;
  for (std::size_t f = 0; f < found.size(); ++f) {
    auto& r = found[f];
    std::map<NumberStyle, bool> reads;
    for (auto style : k_styles) {
      reads[style] = std::all_of(seen[f].tokens.begin(), seen[f].tokens.end(),
                                 [&](const std::string& t) { return reads_as(t, style); });
    }
    if (reads[NumberStyle::plain]) {
      r.number = NumberStyle::plain;
    } else if (reads[NumberStyle::grouped] && reads[NumberStyle::decimal_comma]) {
      r.number = comma.first;  // "1,234": either, as the rest of the output says
      r.number_why =
          fmt::format("\"{}\" reads either way; {}", seen[f].tokens.back(), comma.second);
    } else if (reads[NumberStyle::grouped] || reads[NumberStyle::decimal_comma]) {
      r.number = reads[NumberStyle::grouped] ? NumberStyle::grouped : NumberStyle::decimal_comma;
      r.number_why = fmt::format("it printed \"{}\"", seen[f].tokens.back());
    } else {
      continue;
    }
    r.value = *parse_number_text(seen[f].tokens.back(), r.number);
    r.regex = seen[f].before + number_group(r.number) + seen[f].after;
    r.lines_after = line_no - 1 - r.last_line;
    offered.push_back(std::move(r));
  }
  found = std::move(offered);
  sort_results(found);
  return found;
}

ProbeFindings probe_program(const std::vector<std::string>& argv, bool has_mpirun,
                            const ProbeOptions& options) {
  ProbeFindings out;
  std::error_code ec;
  const fs::path source = fs::weakly_canonical(
      options.source_dir.empty() ? fs::current_path(ec) : fs::path(options.source_dir), ec);
  const auto made = make_temp_dir("tune-init-probe-");
  if (!made) {
    out.not_run = "the probe run has no folder: " + made.error();
    return out;
  }
  const fs::path dir = *made;
  fs::create_directories(dir / "work", ec);
  // The real path: open files are read back from /proc as real paths.
  const fs::path work = fs::weakly_canonical(dir / "work", ec);
  const auto before = mirror(source, work, options.copy_limit_bytes);
  auto watch = probes::DirectoryWatch::open(work.string());

  LaunchRequest request;
  request.argv = with_mpirun_options(argv, has_mpirun, options.oversubscribe);
  request.workdir = work.string();
  request.stdout_path = (dir / "stdout").string();
  request.stderr_path = (dir / "stderr").string();
  request.output_cap_bytes = 2u << 20;
  request.tick_s = 0.05;
  request.env_set = options.env;
  request.kill_grace_s = 1.0;
  const fs::path reads_dir = dir / "env-reads";
  const fs::path libraries_dir = dir / "libraries";
  // tune's own preloads, before the line buffering's libstdbuf and the user's own preloads,
  // which stay after them.
  std::string ours;
  if (!options.env_reads_library.empty() && fs::create_directories(reads_dir, ec)) {
    ours = options.env_reads_library;
    request.env_set[probes::k_env_reads_env] = reads_dir.string();
  }
  if (!options.library_query_library.empty() && fs::create_directories(libraries_dir, ec)) {
    ours += (ours.empty() ? "" : " ") + options.library_query_library;
    request.env_set[probes::k_library_reports_env] = libraries_dir.string();
  }
  if (!ours.empty()) {
    std::string preload = ours;
    if (const auto it = options.env.find("LD_PRELOAD"); it != options.env.end()) {
      if (!it->second.empty()) preload += " " + it->second;
    } else if (const char* inherited = std::getenv("LD_PRELOAD"); inherited && *inherited) {
      preload += std::string(" ") + inherited;
    }
    request.env_set["LD_PRELOAD"] = preload;
  }
  Gathered g;
  if (options.cpu_profile) g.profile = std::make_unique<probes::CpuProfile>();
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  // The job's lines as they come: progress lines are told by their arrival.
  std::vector<TimedLine> timed;
  LineTimes out_lines(request.stdout_path, "stdout"), err_lines(request.stderr_path, "stderr");
  // Whether the progress lines say the job ends past the wait, and whether that can still
  // change (lines without a total say nothing more later: no need to read them again).
  bool ends_later = false, any_progress = false, settled = false;
  double checked_at = -1;
  const LaunchResult result = run_process(request, [&](pid_t pid) -> std::string {
    const double now = elapsed();
    out_lines.read(now, timed);
    err_lines.read(now, timed);
    sample(pid, has_mpirun, work, source, g);
    if (watch) watch->drain();
    if (now < options.seconds) return "";
    if (now < options.end_wait_s) {
      // The lines so far: twice a second until progress lines show, then every 2 s.
      if (!settled && (checked_at < 0 || now - checked_at >= (any_progress ? 2 : 0.5))) {
        checked_at = now;
        const auto progress = find_progress_lines(timed);
        any_progress = !progress.empty();
        ends_later = ends_after(progress, now, options.end_wait_s);
        settled = any_progress && !progress.front().total;
      }
      if (!ends_later) return "";
    }
    return "the probe's bound";
  });
  out_lines.read(elapsed(), timed);
  err_lines.read(elapsed(), timed);
  if (watch) watch->drain();
  if (!result.started) {
    out.not_run = result.error;
    fs::remove_all(dir, ec);
    return out;
  }
  out.ran = true;
  out.seconds = result.wall_s;
  out.bound_s = options.seconds;
  out.bounded = result.stopped == StopReason::watcher;
  out.line_buffered = options.env.contains("_STDBUF_O");
  out.exit_code = result.exit_code;
  // A wrapper script is the one "rank" only until it starts processes with an MPI rank.
  const bool any_mpi =
      std::any_of(g.ranks.begin(), g.ranks.end(), [](const auto& r) { return r.second.mpi; });
  for (const auto& [pid, r] : g.ranks) {
    if (any_mpi && !r.mpi) continue;
    ++out.ranks;
    out.threads_per_rank = std::max(out.threads_per_rank, r.threads);
    out.runtime_threads = std::max(out.runtime_threads, r.runtime);
    for (const auto& [name, n] : r.names)
      out.thread_names[name] = std::max(out.thread_names[name], n);
  }
  out.child_processes = g.children_per_rank;
  out.child_names = g.child_names;
  if (g.profile) {
    drain_profile(g);
    probes::CpuTimeRead time;
    time.present = true;
    time.note = g.profile->note();
    int unnumbered = 0;
    int sampled_ranks = 0;
    for (const auto& [pid, counts] : g.cpu_samples) {
      if (any_mpi && !g.ranks.contains(pid)) continue;
      long total = 0;
      for (const auto& [library, n] : counts) total += n;
      if (total > 0) {
        ++sampled_ranks;
        for (const auto& [library, n] : counts)
          out.library_time[library] += static_cast<double>(n) / static_cast<double>(total);
      }
      probes::CpuTimeRead::Rank r;
      const auto n = g.rank_numbers.find(pid);
      r.rank = n != g.rank_numbers.end() ? n->second : unnumbered++;
      r.shares = probes::top_shares(counts, 4);
      for (const auto& sh : r.shares) r.samples += sh.samples;
      time.ranks.push_back(std::move(r));
    }
    std::ranges::sort(time.ranks, {}, &probes::CpuTimeRead::Rank::rank);
    out.cpu_time = time.line();
    for (auto& [library, share] : out.library_time) share /= sampled_ranks;
    g.profile.reset();
  }
  if (request.env_set.contains(probes::k_env_reads_env))
    out.env_reads = probes::read_env_reads(reads_dir.string());
  if (request.env_set.contains(probes::k_library_reports_env)) {
    const auto flags = probes::read_cpu_flags();
    auto answers = probes::summarize_libraries(probes::read_library_reports(libraries_dir.string()),
                                               probes::cpu_isa(flags), flags);
    if (!answers.empty()) out.library_answers = std::move(answers);
  }
  std::vector<std::string> real;
  for (const auto& lib : g.libraries) real.push_back(fs::weakly_canonical(lib, ec).string());
  out.libraries = probes::classify_libraries(real);

  // Files: what inotify saw in the mirror says whether it was written (a file opened
  // read-write and only read, a database, is an input); for what it could not see (a file
  // reached through a linked folder), the open mode the samples read.
  std::map<std::string, bool> touched = g.files;  // name -> written
  if (watch) {
    for (const auto& [name, e] : watch->entries()) {
      if (e.opened || e.written || e.created)
        touched[name] = e.written || (e.created && !before.contains(name));
    }
  }
  // Files the command names (made absolute: the script itself) reach trials by their path.
  std::set<std::string> named;
  for (const auto& a : argv) {
    const std::string value = a.starts_with("-") && a.contains('=') ? a.substr(a.find('=') + 1) : a;
    if (value.starts_with("/")) named.insert(fs::weakly_canonical(value, ec).string());
  }
  for (const auto& [name, written] : touched) {
    const std::string top = name.substr(0, name.find('/'));
    if (named.contains((source / name).string())) continue;
    if (written) {
      out.outputs.push_back(name);
    } else if (const auto it = before.find(top); it != before.end()) {
      if (std::none_of(out.inputs.begin(), out.inputs.end(),
                       [&](const ProbeInput& i) { return i.name == top; }))
        out.inputs.push_back(it->second);
    }
  }
  {
    // The last line that says "error" (mpirun's own banner follows a rank's traceback), else
    // the last one with words.
    std::istringstream err(tail_of_file(request.stderr_path, 8192));
    std::string last_words, last_error;
    for (std::string line; std::getline(err, line);) {
      if (std::none_of(line.begin(), line.end(),
                       [](char c) { return std::isalpha(static_cast<unsigned char>(c)); }))
        continue;
      last_words = line;
      if (ascii_lower(line).contains("error")) last_error = line;
    }
    const std::string& pick = last_error.empty() ? last_words : last_error;
    out.last_error_line = printable(pick.substr(0, 200));
  }
  // Result lines: the run's stdout and stderr, then the files it wrote.
  for (const auto& [stream, path] :
       {std::pair{"stdout", request.stdout_path}, std::pair{"stderr", request.stderr_path}}) {
    auto lines = find_result_lines(tail_of_file(path, 1u << 20), stream);
    out.results.insert(out.results.end(), lines.begin(), lines.end());
  }
  for (const auto& name : out.outputs) {
    const fs::path p = work / name;
    if (!fs::is_regular_file(p, ec)) continue;
    auto lines = find_result_lines(tail_of_file(p, 1u << 20), name);
    out.results.insert(out.results.end(), lines.begin(), lines.end());
  }
  sort_results(out.results);
  out.progress = find_progress_lines(timed);
  fs::remove_all(dir, ec);
  return out;
}

}  // namespace tune::tuner
