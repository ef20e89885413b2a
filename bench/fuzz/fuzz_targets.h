// What each fuzz target does with one input, shared by the libFuzzer entry points in
// bench/fuzz/*_fuzz.cpp and the regression test that replays saved crashes
// (tests/reliability/fuzz_regressions_test.cpp), so a saved input goes through exactly the
// calls that crashed.
//
// Each function feeds the bytes to tune's public API the way `tune` does at run time and
// returns normally for every input: a bad input must come back as an error string, so anything
// else (a sanitizer report, an escaping exception, a stack overflow, a hang) is a finding.
// The functions that need files write them into a Scratch directory owned by the caller;
// single-threaded (one Scratch per thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "search/pruner.h"
#include "search/sampler.h"
#include "search/sampler_factory.h"
#include "tuner/measure/objective.h"
#include "tuner/study/study_file.h"

namespace tune::fuzz {

// A private temporary directory, removed with its files on destruction.
class Scratch {
 public:
  Scratch() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/tune-fuzz-XXXXXX";
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
    m_dir = pattern;
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(m_dir, ec);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  // Writes `bytes` to `name` in the directory (replacing it) and returns its path.
  std::string write(const std::string& name, std::string_view bytes) const {
    const std::string path = m_dir + "/" + name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + path);
    return path;
  }

 private:
  std::string m_dir;
};

// The study parser: the whole file is the input. On success, also what `tune` does next with
// the spec (templates, then the sampler and pruner built from the file's JSON).
inline void run_study_spec(std::string_view input) {
  auto spec = tuner::parse_study_spec(std::string(input), "fuzz.yaml");
  if (!spec) return;
  for (const auto& arg : spec->command) (void)tuner::template_names(arg);
  for (const auto& [name, value] : spec->env) (void)tuner::template_names(value);
  (void)search::make_sampler(spec->sampler, spec->space);
  if (!spec->pruner.empty()) (void)search::make_pruner(spec->pruner);
}

// The Chainer-log reader: byte 0 picks how the objective is read (entry, key, a constraint),
// the rest is the log file a trial left behind.
inline void run_chainer_log(std::string_view input, const Scratch& scratch) {
  if (input.empty()) return;
  const auto mode = static_cast<unsigned char>(input[0]);
  const std::string log = scratch.write("log", input.substr(1));

  static constexpr const char* k_entries[] = {"last", "first", "min", "max"};
  static constexpr const char* k_keys[] = {"elapsed_time", "main/loss", "iteration", ""};
  tuner::ObjectiveSpec objective;
  objective.entry = k_entries[mode & 3];
  objective.key = k_keys[(mode >> 2) & 3];
  objective.intermediate_key = (mode & 16) ? "main/loss" : "";
  std::vector<tuner::ConstraintSpec> constraints;
  if (mode & 32) {
    tuner::ConstraintSpec c;
    c.key = "validation/main/accuracy";
    c.min = 0.5;
    constraints.push_back(c);
  }
  if (mode & 64) {
    tuner::ConstraintSpec c;
    c.key = objective.key;
    c.max = 1e300;
    constraints.push_back(c);
  }

  (void)tuner::read_objective(objective, constraints, log, "", "");
  if (auto entries = tuner::read_log(log)) (void)tuner::intermediate_points(objective, *entries);
}

// The regex objective over a trial's output. Byte 0: bit 0 reads stderr instead of stdout;
// bit 1 takes the pattern from the input (its first line, accepted only if the study parser
// accepts it, as at run time) instead of one of the realistic patterns below (bits 2-4). The
// rest is what the trial printed.
inline void run_objective_regex(std::string_view input, const Scratch& scratch) {
  if (input.empty()) return;
  const auto mode = static_cast<unsigned char>(input[0]);
  input.remove_prefix(1);

  static constexpr const char* k_patterns[] = {R"(time: ([0-9.]+))",
                                               R"(elapsed[=: ]+([-+0-9.eE]+))",
                                               R"(([0-9]+\.[0-9]+) samples/s)",
                                               R"(loss ([^ ]+))",
                                               R"(throughput=(\S+))",
                                               R"(^result (.*)$)",
                                               R"((\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?)",
                                               R"(value:\s*(.+?)\s*;)"};
  tuner::ObjectiveSpec objective;
  objective.use_regex = true;
  objective.stream = (mode & 1) ? "stderr" : "stdout";
  if (mode & 2) {
    const auto eol = input.find('\n');
    if (eol == std::string_view::npos) return;
    // The pattern as a JSON string is valid YAML (a double-quoted scalar); dump() replaces
    // invalid UTF-8 so that the study parser, not the quoting, judges the pattern.
    const std::string quoted = nlohmann::json(std::string(input.substr(0, eol)))
                                   .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    auto spec = tuner::parse_study_spec(
        "name: f\ncommand: [x]\nobjective:\n  regex: " + quoted + "\n", "fuzz.yaml");
    if (!spec) return;
    objective = spec->objective;
    objective.stream = (mode & 1) ? "stderr" : "stdout";
    input.remove_prefix(eol + 1);
  } else {
    objective.regex = k_patterns[(mode >> 2) & 7];
  }
  const std::string out = scratch.write("stdout", (mode & 1) ? "" : input);
  const std::string err = scratch.write("stderr", (mode & 1) ? input : "");
  (void)tuner::read_objective(objective, {}, "", out, err);
}

}  // namespace tune::fuzz
