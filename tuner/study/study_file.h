// The study file: what to tune, how to launch one trial and how to score it. load_study_spec()
// reads the YAML and checks it whole into a plain StudySpec; errors read
// "FILE:LINE: key 'a.b': what is wrong".
// Design: docs/design-notes.md#tunerstudystudy_fileh
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/distribution.h"
#include "search/trial.h"
#include "tuner/base/number_text.h"
#include "tuner/base/result.h"
#include "tuner/study/launch_spec.h"
#include "tuner/study/study_knobs.h"
#include "tuner/study/templates.h"  // TemplateValues, expand_template: part of this interface
#include "tuner/study/window_settings.h"

namespace tune::tuner {

// A metric read from a file the trial wrote, once it has ended: `file` (a template, relative to
// the trial's working directory) with exactly one of `regex` (first group of the last match in
// the file's last k_regex_scan_bytes), `json` (a key path a.b[0].c) or `csv` (a column by its
// header name, in the row `csv_row` picks).
struct FileMetric {
  std::string file;              // template
  std::string regex;             // RE2
  std::string json;              // key path: names joined by '.', [N] for an array element
  std::string csv;               // header name of the column
  std::string csv_row = "last";  // last | first | max | min (over the data rows)
  // How a regex match or a CSV cell writes its number (`number:`): 12,345.6 needs grouped,
  // 1,75 decimal_comma. Default plain.
  NumberStyle number = NumberStyle::plain;
};

// The objective `window:`: a rate measured from the job's progress while it runs, the trial
// stopped as soon as the rate is known well enough (tuner/measure/rate_window.h says how it is
// estimated; tuner/measure/window_follower.h when it stops). The progress comes from one source: a
// regex over stdout or stderr (`stream`), over a file the job appends to (`file`), or the
// entries of a Chainer log (`log`: `key` the counter, `time_key` the job's own clock).
struct WindowSpec {
  enum class Source { stream, file, log };
  Source source = Source::stream;
  std::string stream = "stdout";  // stdout | stderr (Source::stream)
  std::string path;               // template: the file (Source::file) or the log (Source::log)
  // RE2 (stream and file): the first group that is not named `time` is the number (the whole
  // match without one); a group named `time` is the job's own clock in seconds.
  std::string regex;
  // How those groups write their numbers (`number:`, stream and file): 12,345 needs grouped,
  // 1,75 decimal_comma. Default plain. A group that holds only part of a number is refused.
  NumberStyle number = NumberStyle::plain;
  std::string key = "iteration";          // log: the counter (or rate) of each entry
  std::string time_key = "elapsed_time";  // log: the job's clock; "" = when tune read the entry
  WindowSettings settings;                // measure, scale, warm-up, target, confidence, min
  double max_s = 60;       // the window (after the warm-up) is stopped after this long anyway
  double startup_s = 300;  // no progress point this long after launch: the trial fails
  bool prune = true;       // stop a trial whose interval is clear below the best's (PRUNED)
  std::string unit;        // what the value is in ("samples/s"); "" = "steps/s" etc.
};

struct ObjectiveSpec {
  // Chainer LogReport JSON (array of entries) at `log`, a regex over the trial's stdout, or the
  // trial's wall time (launch to exit, as tune measured it) for a program that logs nothing.
  bool use_regex = false;
  bool wall_time = false;  // objective: {wall_time: true}; minimize only; `log` for constraints
  std::string log = "{trial_dir}/log";  // template
  std::string key = "elapsed_time";     // key of the chosen entry
  std::string entry = "last";           // last | first | min | max (over all entries)
  std::string regex;                    // first capture group (or whole match) of the last match
  std::string stream = "stdout";        // stdout | stderr, for regex
  NumberStyle number = NumberStyle::plain;  // how the regex's match writes it (`number:`)
  // Intermediate values while the trial runs: key and step key of each log entry. Empty
  // intermediate_key = the objective key.
  std::string intermediate_key;
  std::string step_key = "iteration";
  std::optional<FileMetric> file;    // objective: {file: PATH, regex|json|csv: ...}
  std::optional<WindowSpec> window;  // objective: {window: {...}}; maximize, one objective
};

struct ConstraintSpec {
  std::string key;  // logged metric, read from the same entry as the objective (unless `file`)
  std::optional<double> min;  // feasible when value >= min
  std::optional<double> max;  // feasible when value <= max
  int line = 0;
  std::optional<FileMetric> file;  // {file: PATH, regex|json|csv: ..., min|max} instead of key
};

struct ProbeSpec {
  bool enabled = true;      // predict before and monitor during each trial
  bool constrain = false;   // predicted-oversubscribed trials are constrained out, not run
  double interval_s = 0.2;  // /proc sampling interval
  // Preload libtune_threads.so into the trial so that each thread's pool is known by the library
  // that started it (probes/thread_origin.h); `probes: {thread_origins: false}` turns it off.
  bool thread_origins = true;
  // The study's top-level `knobs:` section (tuner/study/study_knobs.h): which parameter sizes which
  // pool of the program. Kept here because the prediction is its one reader. Default: none.
  std::vector<StudyKnob> knobs;
  // The top-level `program:` section (tuner/study/study_knobs.h): what the program starts with
  // nothing set. nullopt: not given (the program is predicted from its knobs and environment).
  std::optional<StudyProgram> program;
};

// The `load:` section: how much CPU time work outside the study may use while a trial runs
// before the trial counts as measured under load (tuner/run/load_check.h): marked, not ranked,
// and re-run once the machine is quiet. A trial is under load when the other work used more
// than max_external_cpus AND more than max_external_share of the CPUs its ranks may use.
struct LoadSpec {
  bool check = true;                 // `load: off` / `check: false`: recorded, never judged
  double max_external_cpus = 0.25;   // CPUs' worth of other work a trial accepts
  double max_external_share = 0.10;  // ... and as a share of the CPUs its ranks may use
  // The most one `tune` run waits, in all, for the machine to be quiet before re-running a trial
  // measured under load; once spent, it goes on and such trials stay marked. 0: never waits.
  double wait_s = 600;
};

// One entry of `files:`: an input put into each trial's working directory before it runs.
struct StagedFile {
  enum class Mode { copy, link, render };
  Mode mode = Mode::copy;
  std::string src;   // absolute path of the user's file
  std::string dest;  // relative path inside the working directory
  std::string text;  // render: the template's text, read when the study loads
  int line = 0;      // of the entry in the study file
};

// "copy", "link" or "template": the word the study file and the stored trial use.
const char* staged_mode_name(StagedFile::Mode mode);

struct StudySpec {
  std::string file;  // path as given
  std::string dir;   // absolute directory of the file ({study_dir})
  std::string name;
  search::Direction direction = search::Direction::minimize;  // directions[0]
  ObjectiveSpec objective;                                    // objectives[0]
  // One direction and one objective per objective, in the file's order: `direction:` and an
  // objective mapping give one of each; `directions: [...]` with an objective list several (a
  // multi-objective study).
  std::vector<search::Direction> directions = {search::Direction::minimize};
  std::vector<ObjectiveSpec> objectives = std::vector<ObjectiveSpec>(1);
  std::vector<ConstraintSpec> constraints;
  LaunchSpec launch;
  std::vector<std::string> command;  // argv templates
  // Where the command runs: a template; a relative result is taken from the study file's folder
  // and created when missing. `workdir: trial` (the default) is the trial's own folder, so
  // trials never overwrite each other's outputs; `workdir: study` is the study file's folder.
  std::string workdir = "{trial_dir}";
  std::vector<StagedFile> files;  // staged into the working directory, in order
  std::vector<std::pair<std::string, std::string>> env;  // env templates, file order
  std::optional<double> timeout_s;                       // per trial; none = no limit
  search::SearchSpace space;                             // file order
  nlohmann::json sampler = nlohmann::json::object();     // passed to search::make_sampler
  nlohmann::json pruner = nlohmann::json::object();      // passed to search::make_pruner
  int incumbent_repeats = 0;  // re-runs of each new best before it is believed (run/follow_ups.h)
  // max_failures: the study stops (exit 1) after this many trials in a row failed without
  // reaching their time limit (a misspelt program, a missing input: every trial would fail
  // alike); 0 = never. Default 3.
  int max_failures = 3;
  std::vector<std::map<std::string, search::ParamValue>> enqueue;  // run first, in order
  // `rules:` the rule baselines enqueued after `enqueue:` when the study starts
  // (tuner/study/rules.h): names from rule_names(); `rules: all` is every one. Default none.
  std::vector<std::string> rules;
  // `first_guess:` whether the runner enqueues the first guess (tuner/judge/first_guess.h) once
  // the baseline has run with a probe verdict. Default true; `first_guess: false` turns it off.
  bool first_guess = true;
  std::string output;   // study output folder; default tune-out/{study}
  std::string storage;  // database URL/path; default {output}/study.db
  // Parameters of `type: kernel` (the kernel a library runs, set through OPENBLAS_CORETYPE, or
  // oneDNN's ONEDNN_MAX_CPU_ISA: probes::kernel_libraries): in
  // `space` as a categorical whose null leaves the variable as the environment has it (neither
  // set nor unset: the job's own kernel). Without `choices:` the core types are found when the
  // study is created, each checked numerically (tuner/run/kernel_params.h), and `space` holds
  // [null] until then.
  struct KernelParam {
    std::string name;
    std::string library = "openblas";  // or "onednn"
    std::string file;  // `file:` the library to check; "" = libopenblas.so.0 (libdnnl.so.2)
    std::vector<std::string> candidates;  // `choices:` the kernels to check; empty: the CPU's best
    bool resolved = false;                // its choices are in `space`
  };
  std::vector<KernelParam> kernel_params;
  // Whether `name` is a kernel parameter.
  bool is_kernel_param(const std::string& name) const;
  ProbeSpec probes;
  LoadSpec load;
  // The line of each key a later check may name (tuner/study/study_changes.h): the top-level
  // keys, "params.NAME", "objective.KEY" and "objective[I].KEY". Absent: the file does not
  // write it.
  std::map<std::string, int> key_lines;
};

// "FILE:LINE: key 'KEY': WHAT", LINE that of `key` or of the nearest key above it the file
// writes ("objective.key", then "objective"), else 0: a study-file error found after loading.
std::string spec_error(const StudySpec& spec, const std::string& key, const std::string& what);

// What the reports call the objective: the log key, "wall_time", a window's unit (else "rate"),
// or "" for a regex (no name).
std::string objective_label(const ObjectiveSpec& objective);

Result<StudySpec> load_study_spec(const std::string& path);
// Each objective's name in messages and reports: its log key, "objective N" for a regex one.
std::vector<std::string> objective_names(const StudySpec& spec);
// Same, from YAML text (tests); `path` is used in messages and for {study_dir}.
Result<StudySpec> parse_study_spec(const std::string& yaml_text, const std::string& path);

// Why `name` cannot be a study's name (it is one folder of the output: tune-out/NAME), if it
// cannot: "is empty", "holds a '/'", ...
std::optional<std::string> study_name_problem(const std::string& name);

}  // namespace tune::tuner
