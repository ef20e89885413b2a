#include "tuner/init/help_reader.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tuner/base/temp_dir.h"
#include "tuner/base/text.h"
#include "tuner/launch/launcher.h"
#include "tuner/launch/program_identity.h"

namespace tune::tuner {
namespace {

constexpr std::size_t k_max_options = 500;
constexpr std::size_t k_help_bytes = 400;
constexpr std::size_t k_default_bytes = 64;
constexpr std::size_t k_output_bytes = 64u << 10;

bool alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(' ');
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(' ') - b + 1);
}

// Tabs to blanks (to the next multiple of 8), carriage returns dropped.
std::string expand_tabs(const std::string& line) {
  std::string out;
  for (char c : line) {
    if (c == '\r') continue;
    if (c == '\t') {
      do out += ' ';
      while (out.size() % 8 != 0);
    } else {
      out += c;
    }
  }
  return out;
}

std::size_t indent_of(const std::string& line) {
  const auto i = line.find_first_not_of(' ');
  return i == std::string::npos ? line.size() : i;
}

// Whether `line` at `at` starts an option: "-x" or "--word".
bool option_start(const std::string& line, std::size_t at) {
  if (at + 1 >= line.size() || line[at] != '-') return false;
  if (alnum(line[at + 1])) return true;
  return line[at + 1] == '-' && at + 2 < line.size() && alnum(line[at + 2]);
}

// Where an option line's spelling ends: at the first run of two blanks outside brackets.
std::size_t spec_end(const std::string& line, std::size_t from) {
  int depth = 0;
  for (std::size_t j = from; j < line.size(); ++j) {
    const char c = line[j];
    if (c == '{' || c == '[' || c == '(' || c == '<') ++depth;
    if ((c == '}' || c == ']' || c == ')' || c == '>') && depth > 0) --depth;
    if (depth == 0 && c == ' ' && j + 1 < line.size() && line[j + 1] == ' ') return j;
  }
  return line.size();
}

// The comma-separated pieces of a spelling ("-w WORKERS, --workers WORKERS"), outside brackets.
std::vector<std::string> pieces(const std::string& spec) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : spec) {
    if (c == '{' || c == '[' || c == '(' || c == '<') ++depth;
    if ((c == '}' || c == ']' || c == ')' || c == '>') && depth > 0) --depth;
    if (c == ',' && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
      continue;
    }
    cur += c;
  }
  out.push_back(trim(cur));
  return out;
}

// One piece as a spelling and its value: false when it is not an option's.
bool read_piece(const std::string& piece, HelpOption& opt) {
  if (!option_start(piece, 0)) return false;
  std::size_t end = 1;
  while (end < piece.size() && (alnum(piece[end]) || piece[end] == '-' || piece[end] == '_')) ++end;
  const std::string name = piece.substr(0, end);
  std::string rest = piece.substr(end);
  std::string metavar;
  bool equals = false;
  if (rest.starts_with("[=") && rest.ends_with("]")) {
    metavar = rest.substr(2, rest.size() - 3);
    equals = true;
  } else if (rest.starts_with("=")) {
    metavar = rest.substr(1);
    equals = true;
  } else if (rest.starts_with(" ")) {
    metavar = trim(rest);
  } else if (!rest.empty()) {
    return false;  // "-0...-9", "--foo/--no-foo": not one option with a value
  }
  opt.spellings.push_back(name);
  if (!metavar.empty()) {
    opt.metavar = metavar;
    opt.equals = opt.equals || equals;
  }
  return true;
}

// The default a help text shows: "(default: 8)", "[default: 8]", "default=8", "the default is
// 1", "defaults to 4"; "" when none.
std::string default_in(const std::string& help) {
  const std::string lower = ascii_lower(help);
  for (std::size_t at = lower.find("default"); at != std::string::npos;
       at = lower.find("default", at + 1)) {
    if (at > 0 && alnum(lower[at - 1])) continue;
    std::size_t p = at + 7;
    for (const char* lead : {"s to ", " is ", ": ", ":", "=", " "}) {
      if (lower.compare(p, std::string(lead).size(), lead) == 0) {
        p += std::string(lead).size();
        break;
      }
    }
    p = lower.find_first_not_of(' ', p);
    if (p == std::string::npos) continue;
    std::size_t e = p;
    while (e < help.size() && help[e] != ' ' && help[e] != ')' && help[e] != ']' &&
           help[e] != ';' && help[e] != ',')
      ++e;
    std::string value = help.substr(p, e - p);
    while (!value.empty() && (value.back() == '.' || value.back() == ':')) value.pop_back();
    if (!value.empty()) return printable(value, k_default_bytes);
  }
  // sysbench's "number of threads to use [1]": a bracketed number at the end.
  if (const auto open = help.rfind('['); help.ends_with("]") && open != std::string::npos) {
    const std::string inner = help.substr(open + 1, help.size() - open - 2);
    if (!inner.empty() &&
        std::all_of(inner.begin(), inner.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return inner;
  }
  return "";
}

// Lower-case runs of letters: "--num-workers" -> num, workers.
std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text) {
    if (std::isalpha(static_cast<unsigned char>(c))) {
      cur += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!cur.empty()) {
      out.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// The pool a word speaks of ("workers", "nthreads", "procs"), "" for none.
std::string topic_of(std::string word) {
  static const std::vector<std::pair<const char*, const char*>> k_words = {
      {"worker", "workers"},  {"workers", "workers"},   {"thread", "threads"},
      {"threads", "threads"}, {"process", "processes"}, {"processes", "processes"},
      {"proc", "processes"},  {"procs", "processes"},   {"job", "jobs"},
      {"jobs", "jobs"},       {"prefetch", "prefetch"}, {"prefetching", "prefetch"}};
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& [w, topic] : k_words) {
      if (word == w) return topic;
    }
    // "nthreads", "numworkers", "nprocs", "njobs".
    if (word.starts_with("num")) {
      word = word.substr(3);
    } else if (word.starts_with("n")) {
      word = word.substr(1);
    } else {
      break;
    }
  }
  return "";
}

std::string topic_of_words(const std::vector<std::string>& ws) {
  // A property of a pool's threads or workers, not their count: sysbench's
  // "--thread-stack-size=SIZE", "--worker-timeout", "--thread-priority".
  for (const auto& w : ws) {
    for (const char* property : {"stack", "timeout", "priority", "affinity", "policy"}) {
      if (w == property) return "";
    }
  }
  for (const auto& w : ws) {
    if (auto t = topic_of(w); !t.empty()) return t;
  }
  return "";
}

// A value that names no count: a file, a choice of words.
bool names_no_count(const std::string& metavar) {
  const std::string m = ascii_lower(metavar);
  if (m.starts_with("{") && std::any_of(m.begin(), m.end(), [](char c) {
        return std::isalpha(static_cast<unsigned char>(c));
      }))
    return true;
  for (const char* w : {"file", "path", "dir", "url", "name", "str", "text"}) {
    if (m.contains(w)) return true;
  }
  return false;
}

// A default that a count may have: none shown, a number, or None (argparse's "not given").
bool count_default(const std::string& text) {
  if (text.empty() || text == "None") return true;
  const std::size_t digits = text.starts_with("-") ? 1 : 0;
  return text.size() > digits && std::all_of(text.begin() + static_cast<long>(digits), text.end(),
                                             [](char c) { return c >= '0' && c <= '9'; });
}

// Whether the file at `path` holds `needle` in its first `limit` bytes (read a MiB at a time).
bool file_holds(const std::string& path, const std::string& needle, std::size_t limit) {
  std::ifstream in(path, std::ios::binary);
  std::string carry;
  std::vector<char> buf(1u << 20);
  for (std::size_t read = 0; in && read < limit;) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto n = static_cast<std::size_t>(in.gcount());
    if (n == 0) break;
    read += n;
    std::string chunk = carry + std::string(buf.data(), n);
    if (chunk.contains(needle)) return true;
    carry = chunk.substr(chunk.size() - std::min(chunk.size(), needle.size()));
  }
  return false;
}

// Why asking `argv` for its help would run the program instead, "" when it likely answers: a
// Python script that imports no argument parser, or a program file that holds no "help" (hpcc
// ignores its arguments and runs the benchmark).
std::string runs_instead(const std::vector<std::string>& argv) {
  const bool python = std::filesystem::path(argv[0]).filename().string().starts_with("python");
  if (python) {
    const std::string& script = argv[argv.size() - 2];
    if (argv[argv.size() - 3] == "-m") return "";  // a module: no file to read here
    std::ifstream in(script, std::ios::binary);
    std::string text(1u << 20, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    for (const auto& w : words(text)) {
      for (const char* parser : {"argparse", "click", "typer", "optparse", "getopt", "docopt",
                                 "fire", "absl", "hydra", "jsonargparse", "tyro"}) {
        if (w == parser) return "";
      }
    }
    return "the script imports no argument parser (argparse, click, ...): it would run instead";
  }
  const std::string path = find_in_path(argv[0], trial_environment(LaunchRequest{}));
  if (path.empty()) return "the program is not found on PATH";
  if (!file_holds(path, "help", 256u << 20))
    return "the program's file names no help option: it would run instead";
  return "";
}

}  // namespace

std::vector<HelpOption> parse_help_options(const std::string& text) {
  std::vector<std::string> lines;
  {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(expand_tabs(line));
  }
  std::vector<HelpOption> out;
  for (std::size_t i = 0; i < lines.size() && out.size() < k_max_options; ++i) {
    const std::string& line = lines[i];
    const std::size_t indent = indent_of(line);
    if (indent > 40 || !option_start(line, indent)) continue;
    const std::size_t end = spec_end(line, indent);
    HelpOption opt;
    bool ok = true;
    for (const auto& piece : pieces(line.substr(indent, end - indent)))
      ok = ok && read_piece(piece, opt);
    if (!ok || opt.spellings.empty()) continue;
    const std::size_t help_col = line.find_first_not_of(' ', end);
    std::string help = help_col == std::string::npos ? "" : line.substr(help_col);
    // The help wrapped onto the lines below, more indented than the option.
    for (std::size_t k = i + 1; k < lines.size(); ++k) {
      const std::string& next = lines[k];
      const std::size_t ind = indent_of(next);
      if (ind >= next.size() || ind <= indent) break;
      if (option_start(next, ind) && (help_col == std::string::npos || ind < help_col)) break;
      help += (help.empty() ? "" : " ") + trim(next.substr(ind));
      i = k;
      if (help.size() > 4 * k_help_bytes) break;
    }
    opt.default_text = default_in(help);
    opt.help = printable(help, k_help_bytes);
    opt.flag = opt.spellings.front();
    for (const auto& s : opt.spellings) {
      if (s.starts_with("--")) {
        opt.flag = s;
        break;
      }
    }
    opt.metavar = printable(opt.metavar, 64);
    out.push_back(std::move(opt));
  }
  return out;
}

std::vector<PoolFlag> pool_flags(const std::vector<HelpOption>& options) {
  std::vector<PoolFlag> out;
  for (const auto& opt : options) {
    if (opt.metavar.empty()) continue;  // a switch sizes nothing
    std::string topic;
    for (const auto& s : opt.spellings) {
      if (topic.empty() && s.starts_with("--")) topic = topic_of_words(words(s));
    }
    const bool by_name = !topic.empty();
    if (topic.empty() && !names_no_count(opt.metavar) && count_default(opt.default_text))
      topic = topic_of_words(words(opt.help));
    if (topic.empty()) continue;
    out.push_back({opt, topic, by_name});
  }
  return out;
}

std::vector<std::string> help_argv(const std::vector<std::string>& program) {
  if (program.empty()) return {};
  const std::string exe = std::filesystem::path(program[0]).filename().string();
  if (!exe.starts_with("python")) return {program[0], "--help"};
  for (std::size_t i = 1; i < program.size(); ++i) {
    const std::string& a = program[i];
    if (a == "-c" || a == "-") return {};
    if (a == "-m") {
      if (i + 1 >= program.size()) return {};
      std::vector<std::string> argv(program.begin(), program.begin() + static_cast<long>(i) + 2);
      argv.emplace_back("--help");
      return argv;
    }
    if (a == "-X" || a == "-W") {
      ++i;  // an interpreter option with a value
      continue;
    }
    if (a.starts_with("-")) continue;
    std::vector<std::string> argv(program.begin(), program.begin() + static_cast<long>(i) + 1);
    argv.emplace_back("--help");
    return argv;
  }
  return {};
}

ProgramHelp read_program_help(const std::vector<std::string>& program, double timeout_s) {
  ProgramHelp out;
  out.argv = help_argv(program);
  if (out.argv.empty()) {
    out.why_not = "the command runs no program or script whose help can be asked";
    return out;
  }
  if (auto why = runs_instead(out.argv); !why.empty()) {
    out.why_not = why;
    return out;
  }
  // In an empty folder of its own: a program that does not know --help and runs instead
  // writes nothing where the user works, and is stopped at the timeout.
  std::error_code ec;
  const auto made = make_temp_dir("tune-init-help-");
  if (!made) {
    out.why_not = "cannot make a folder to ask the program's help in: " + made.error();
    return out;
  }
  const std::string pattern = *made;
  LaunchRequest request;
  request.argv = out.argv;
  request.workdir = pattern;
  request.timeout_s = timeout_s;
  request.kill_grace_s = 0.5;
  request.tick_s = 0.05;
  request.output_cap_bytes = 4 * k_output_bytes;
  const CapturedRun run = run_captured(request, k_output_bytes);
  std::filesystem::remove_all(pattern, ec);
  if (!run.result.started) {
    out.why_not = printable(run.result.error, 200);
    return out;
  }
  out.ran = true;
  out.options = parse_help_options(run.out);
  if (out.options.empty()) out.options = parse_help_options(run.err);
  if (out.options.empty()) {
    out.why_not = run.result.stopped == StopReason::timeout
                      ? fmt::format("it printed no option list within {:g} s", timeout_s)
                      : "it printed no option list";
  }
  out.pool = pool_flags(out.options);
  return out;
}

}  // namespace tune::tuner
