// `tune report`, `tune confirm` and `tune export`: thin CLI11 wiring over report.h, confirm.h
// and export.h. STUDY is resolved as for `tune best` (open_existing_study); commands that need
// the study file (confirm, export) find it through the database's "tune:study_file" attr when
// given a database.
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "tuner/base/file_write.h"
#include "tuner/base/install_layout.h"
#include "tuner/base/text.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/cli/confirm.h"
#include "tuner/cli/subcommands.h"
#include "tuner/export/export.h"
#include "tuner/export/export_choice.h"
#include "tuner/export/worker_array.h"
#include "tuner/judge/summary.h"
#include "tuner/measure/objective.h"
#include "tuner/report/report.h"
#include "tuner/report/report_cells.h"
#include "tuner/run/runner.h"
#include "tuner/storage/storage_url.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

// The study file of an opened study: the one given, else the one the database remembers. The
// error says why there is none to use (bad input); a database that cannot be read throws.
Result<StudySpec> spec_of(const OpenedStudy& opened) {
  if (opened.spec) return *opened.spec;
  auto attrs =
      unwrap(to_result(opened.storage->get_study_user_attrs(opened.cache->study().study_id)));
  const auto file = attrs.value(k_attr_study_file, std::string());
  if (file.empty())
    return std::unexpected(
        fmt::format("study '{}' in {} names no study file; pass the study file (*.yaml) instead",
                    opened.cache->study().name, redact_storage_url(opened.url)));
  auto spec = load_study_spec(file);
  if (!spec)
    return std::unexpected(spec.error() +
                           " (the study file this database was created from; "
                           "pass the study file explicitly if it moved)");
  return spec;
}

// A file -o must never be, and what it is: "the study's database".
struct KeptFile {
  std::string path, what;
};

// The files of a study that -o must not replace: its SQLite database with the files SQLite keeps
// beside it (none for a PostgreSQL URL), and its study files (the one given, the one the database
// names; "" for none).
std::vector<KeptFile> study_files(const std::string& storage_url,
                                  const std::vector<std::string>& study_file_paths) {
  std::vector<KeptFile> kept;
  if (const auto db = sqlite_file_of(storage_url)) {
    kept.push_back({*db, "the study's database"});
    for (const char* companion : {"-wal", "-shm", "-journal"})
      kept.push_back({*db + companion, fmt::format("the study's database's {} file", companion)});
  }
  for (const auto& file : study_file_paths)
    if (!file.empty()) kept.push_back({file, "the study file"});
  return kept;
}

// The study files of an opened study: the one it was opened through, and the one its database
// names (tune:study_file), which may be another path to the same or an older copy.
std::vector<std::string> study_file_paths(const OpenedStudy& opened) {
  std::vector<std::string> files;
  if (opened.spec) files.push_back(opened.spec->file);
  auto attrs = opened.storage->get_study_user_attrs(opened.cache->study().study_id);
  if (attrs && attrs->is_object()) {
    const auto named = attrs->find(k_attr_study_file);
    if (named != attrs->end() && named->is_string()) files.push_back(named->get<std::string>());
  }
  return files;
}

// Whether `a` and `b` name one file: the same device and inode when both exist (whatever the
// spelling: ./x/../study.db, a symbolic link, a hard link); else the same name in the same
// folder, the folder compared by identity (a database's -wal file, absent between runs).
bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  const fs::path pa(a), pb(b);
  if (pa.filename().empty() || pa.filename() != pb.filename()) return false;
  const auto folder = [](const fs::path& p) {
    return p.has_parent_path() ? p.parent_path() : fs::path(".");
  };
  return ::stat(folder(pa).c_str(), &sa) == 0 && ::stat(folder(pb).c_str(), &sb) == 0 &&
         sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// -o `path` as the command may write it, before anything is written (bad input otherwise): not
// one of `kept` (the study's own files, never replaced, --force or not), not a folder, and, unless
// `force`, no existing file. A character device or FIFO (/dev/null, a named pipe) is written
// into, as it has no contents to lose.
void check_output(const std::string& path, bool force, const std::vector<KeptFile>& kept) {
  if (path.empty() || path == "-") return;
  const auto shown = escape_controls(path);
  for (const auto& file : kept)
    if (same_file(path, file.path))
      throw BadInput(fmt::format("-o {} is {}; write to another file (--force never replaces it)",
                                 shown, file.what));
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode))
      throw BadInput(fmt::format("-o {} is a folder; give the file to write", shown));
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return;
    if (!S_ISREG(st.st_mode))
      throw BadInput(fmt::format("-o {} exists and is not a regular file", shown));
  } else if (::lstat(path.c_str(), &st) != 0) {
    return;  // nothing there (a dangling symbolic link is something: it would be replaced)
  }
  if (!force) throw BadInput(fmt::format("-o {} exists; pass --force to overwrite it", shown));
}

// Writes what a command made to -o `path` (checked by check_output), or stdout. A file is
// written whole or not at all (file_write.h): a failure leaves the old file as it was.
void write_output(const std::string& path, const std::string& text, bool executable, bool force) {
  if (path.empty() || path == "-") {
    // A terminal acts on control bytes (ESC ]0;... retitles it, ESC [2J clears it), and a stored
    // value may hold them. A report is shown through terminal_text there. A script writes such
    // values $'\xNN' (bash_quote); one that still held a control byte would have to keep it, so
    // it goes to a file or a pipe instead. Pipes get the bytes.
    if (isatty(STDOUT_FILENO) && terminal_text(text) != text) {
      if (executable)
        throw std::runtime_error(
            "the script holds control bytes from a stored value, which a terminal would act "
            "on: write it to a file (-o FILE) or a pipe");
      std::cout << terminal_text(text) << std::flush;
      return;
    }
    std::cout << text << std::flush;
    return;
  }
  struct stat st {};
  const bool stream =
      ::stat(path.c_str(), &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode));
  FileWriteOptions options;
  options.executable = executable;
  options.replace = force;
  const auto written =
      stream ? write_into_existing(path, text) : write_file_atomically(path, text, options);
  if (!written)
    throw std::runtime_error(fmt::format("-o {}: {}", escape_controls(path), written.error()));
}

// --format (one of `names`), -o and --force, for the commands that write a document (report,
// export).
void add_format_and_output(CLI::App* sub, std::string& format, std::string& output, bool& force,
                           const std::string& format_help, const std::vector<std::string>& names) {
  sub->add_option("--format,-f", format, format_help)->check(CLI::IsMember(names));
  sub->add_option("-o,--output", output,
                  "Write to FILE instead of stdout: a new file, or an existing one with --force");
  sub->add_flag("--force", force,
                "Let -o overwrite an existing FILE (never the study's database or study file)");
}

// A whole-number option's check: `low` or more.
CLI::Range at_least(int low) { return CLI::Range(low, std::numeric_limits<int>::max()); }

// A subcommand over an existing study: `Args` holds the parsed arguments (its `study` member the
// STUDY/--storage/--study ones); `add_options` adds the command's own; `run` runs it. `help` is
// the one line `tune help` shows, `notes` and `examples` end its --help.
template <typename Args>
Subcommand study_command(CLI::App& app, const std::string& name, const std::string& help,
                         void (*add_options)(CLI::App*, Args&), int (*run)(const Args&),
                         const std::vector<Example>& examples, const std::string& notes) {
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand(name, help);
  add_study_args(sub, args->study);
  add_options(sub, *args);
  set_help_footer(sub, examples, notes);
  return {sub, [args, run]() { return run(*args); }};
}

// The objectives' names in the report: log keys (a regex objective has none: "objective N").
void name_objectives(const StudySpec& spec, ReportData& data) {
  data.objective = objective_label(spec.objective);
  if (spec.objectives.size() < 2) return;
  data.objectives = objective_names(spec);
  data.direction = objectives_text(data);  // "minimize elapsed_time, maximize accuracy"
  data.objective.clear();
}

struct ReportArgs {
  StudyArgs study;
  std::string format = "text", output;
  bool force = false;
  int top = 10;
  bool no_importance = false;
};

void add_report_options(CLI::App* sub, ReportArgs& args) {
  add_format_and_output(sub, args.format, args.output, args.force,
                        "text (default), json, markdown or html", report_format_names());
  sub->add_option("--top", args.top, "Rows of the top-trials table (default 10)")
      ->check(at_least(1));
  sub->add_flag("--no-importance", args.no_importance, "Skip the fANOVA importance");
}

int run_report(const ReportArgs& args) {
  auto opened = open_study_or_throw(args.study);
  auto spec = spec_of(opened);  // optional here: gives order and key names
  check_output(args.output, args.force, study_files(opened.url, study_file_paths(opened)));
  ReportOptions options;
  options.top_n = args.top;
  options.importance = !args.no_importance;
  auto data = build_report(*opened.cache, opened.cache->study().name,
                           spec ? spec->space : search::SearchSpace{}, options);
  data.storage = redact_storage_url(opened.url);
  if (spec) name_objectives(*spec, data);
  auto reporter = unwrap_input(make_reporter(args.format));
  std::ostringstream text;
  reporter->write(text, data);
  write_output(args.output, text.str(), false, args.force);
  return 0;
}

struct ConfirmArgs {
  StudyArgs study;
  ConfirmOptions options;
};

void add_confirm_options(CLI::App* sub, ConfirmArgs& args) {
  sub->add_option("--repeats,-r", args.options.repeats, "Re-runs of each trial (default 5)")
      ->check(at_least(1));
  sub->add_option("--top,-k", args.options.top,
                  "Best trials re-run besides the baseline (default 3)")
      ->check(at_least(0));
  sub->add_flag("--quiet,-q", args.options.quiet, "No line per trial");
}

int run_confirm_command(const ConfirmArgs& args) {
  auto opened = open_study_or_throw(args.study);
  auto spec = unwrap_input(spec_of(opened));
  ConfirmOptions options = args.options;
  options.storage_override = opened.url;
  opened = {};  // the runner opens its own connection
  auto totals = unwrap(run_confirm(std::move(spec), options, std::cout));
  if (totals.interrupted) {
    std::cerr << "tune: interrupted; the re-runs not yet started stay queued and run with the "
                 "study's next `tune` command.\n";
    return k_exit_interrupted;
  }
  return 0;
}

struct ExportArgs {
  StudyArgs study;
  std::string format = "bash", output;
  bool force = false;
  int trial = -1;
  std::string walltime;                  // --walltime: slurm/pbs time limit; "" = from the trial
  std::optional<int> workers;            // slurm-array only
  std::optional<int> trials_per_worker;  // slurm-array only; default 10 (tune --trials of each)
};

// --format slurm-array: needs the study file (given, or the one a database names), not a trial.
int run_export_workers(const ExportArgs& args) {
  const auto& target = args.study.target;
  WorkerArrayOptions options;
  StudySpec spec;
  std::vector<std::string> study_file_list;
  if (target.ends_with(".yaml") || target.ends_with(".yml")) {
    spec = unwrap_input(load_study_spec(target));
    if (auto why = storage_url_problem(args.study.storage))
      throw BadInput(
          fmt::format("--storage '{}': {}", redact_storage_url(args.study.storage), *why));
    options.storage = storage_url_for(spec, args.study.storage);
    study_file_list = {target, spec.file};
  } else {
    auto opened = open_study_or_throw(args.study);
    spec = unwrap_input(spec_of(opened));
    options.storage = opened.url;
    study_file_list = study_file_paths(opened);
    study_file_list.push_back(spec.file);
  }
  check_output(args.output, args.force, study_files(options.storage, study_file_list));
  options.workers = args.workers.value_or(0);
  options.trials_per_worker = args.trials_per_worker.value_or(10);
  options.tune_program = (executable_dir() / "tune").string();
  options.study_file = fs::absolute(spec.file).lexically_normal().string();
  options.workdir = fs::current_path().string();
  const auto text = unwrap_input(render_worker_array(spec, options));
  if (!is_postgres_url(options.storage))
    std::cerr << "tune: warning: " << redact_storage_url(options.storage)
              << " is an SQLite file, which workers on different nodes cannot share at once; "
                 "use storage: postgresql://...\n";
  write_output(args.output, text, /*executable=*/true, args.force);
  return 0;
}

void add_export_options(CLI::App* sub, ExportArgs& args) {
  add_format_and_output(sub, args.format, args.output, args.force,
                        "bash (default), slurm, pbs, env, mpirun or slurm-array",
                        export_format_names());
  sub->add_option("--trial", args.trial,
                  "Export this completed trial instead of the best (or of the baseline, when "
                  "the best is within the noise of it)")
      ->check(at_least(0));
  sub->add_option("--walltime", args.walltime,
                  "slurm/pbs: the job's time limit (90m, 2h, 3600); default twice the trial's "
                  "measured wall time, at least 5 minutes more");
  sub->add_option("--workers", args.workers, "slurm-array: array tasks, one tune worker each")
      ->check(CLI::Range(1, 10000));
  sub->add_option("--trials-per-worker", args.trials_per_worker,
                  "slurm-array: new trials each worker runs (default 10)")
      ->check(at_least(1));
  add_renamed_flag(sub, "--trials",
                   "is now --trials-per-worker here (the new trials each slurm-array worker "
                   "runs); --trials is tune's own: tune --trials N STUDY.yaml");
}

// The trial to export (export_choice.h); its errors as the CLI's exit statuses.
ExportChoice export_choice(const search::StudyView& study, const std::string& name, int trial) {
  auto choice =
      choose_export_trial(study, name, trial >= 0 ? std::optional<int>(trial) : std::nullopt);
  if (choice) return std::move(*choice);
  if (choice.error().kind == ExportChoiceError::Kind::bad_input)
    throw BadInput(choice.error().message);
  throw std::runtime_error(choice.error().message);
}

// The header's "Measured:" text: the setting's believed value, or each objective's value of a
// trial of a multi-objective study.
std::string export_measured(const StudySpec& spec, const ExportChoice& choice) {
  if (spec.objectives.size() < 2) return measured_text(choice, objective_label(spec.objective));
  const auto names = objective_names(spec);
  std::string out;
  for (std::size_t i = 0; i < choice.trial->values.size(); ++i)
    out += fmt::format("{}{} = {}", out.empty() ? "" : ", ",
                       i < names.size() ? names[i] : fmt::format("#{}", i),
                       format_value(choice.trial->values[i]));
  return (out.empty() ? "-" : out) + " (one run)";
}

int run_export(const ExportArgs& args) {
  const auto format = unwrap_input(parse_export_format(args.format));
  if (!args.walltime.empty() && format != ExportFormat::slurm && format != ExportFormat::pbs)
    throw BadInput("--walltime goes with --format slurm or pbs, the scripts that ask for time");
  if (format == ExportFormat::slurm_array) return run_export_workers(args);
  if (args.workers || args.trials_per_worker)
    throw BadInput(
        "--workers and --trials-per-worker go with --format slurm-array (--trial N picks a "
        "trial)");
  auto opened = open_study_or_throw(args.study);
  const auto spec = unwrap_input(spec_of(opened));
  auto study_file_list = study_file_paths(opened);
  study_file_list.push_back(spec.file);
  check_output(args.output, args.force, study_files(opened.url, study_file_list));
  const auto& trials = opened.cache->trials();
  const auto choice = export_choice(*opened.cache, opened.cache->study().name, args.trial);
  const search::FrozenTrial* trial = choice.trial;
  const int number = trial->number;
  ExportOptions export_options;
  export_options.measured = export_measured(spec, choice);
  export_options.notes = choice.notes;
  export_options.storage = opened.url;
  export_options.allow_run_as_root = running_as_root();  // as the trials ran
  if (!args.walltime.empty()) {
    const auto seconds = parse_duration(args.walltime);
    if (!seconds || *seconds <= 0)
      throw BadInput(fmt::format("--walltime '{}': give a duration such as 90m, 2h or 3600",
                                 one_line(args.walltime)));
    export_options.walltime_s = *seconds;
  }
  // The trial's re-runs are trials of their own: their wall times count toward the time limit.
  for (const auto& t : trials) {
    const auto of = t.system_attrs.find(k_attr_rerun_of);
    const auto wall = t.user_attrs.find(k_attr_wall_time);
    if (of != t.system_attrs.end() && of->is_number_integer() && of->get<int>() == number &&
        t.user_attrs.contains(k_attr_rerun_value) && wall != t.user_attrs.end() &&
        wall->is_number())
      export_options.rerun_wall_times.push_back(wall->get<double>());
  }
  // What fails here is the study file (a template, a variable name) or the trial chosen (a
  // parameter the study file no longer has): bad input.
  const auto text = unwrap_input(render_export(spec, *trial, format, export_options));
  // First on stderr: when what is written is not shown to beat the baseline, and why.
  if (!choice.warning.empty()) std::cerr << "tune: " << choice.warning << "\n" << std::flush;
  const bool script =
      format == ExportFormat::bash || format == ExportFormat::slurm || format == ExportFormat::pbs;
  write_output(args.output, text, script, args.force);
  return 0;
}

}  // namespace

std::vector<Subcommand> add_report_commands(CLI::App& app) {
  return {
      study_command<ReportArgs>(
          app, "report", "Report a study: best trial, speedup, top trials, importance, failures",
          add_report_options, run_report,
          {{"tune report studies/quickstart.yaml", "the report as text on stdout"},
           {"tune report quickstart -f html -o report.html",
            "one self-contained HTML file with charts"},
           {"tune report quickstart -f html -o report.html --force",
            "the same, replacing the report.html written before"},
           {"tune report tune-out/quickstart/study.db -f json", "JSON, with schema_version"}},
          "The report: the best trial, its speedup over the baseline, the top trials, each\n"
          "parameter's importance (fANOVA), the probes' verdicts and why trials failed.\n"
          "-o writes a new file; --force lets it replace an existing one, whole or not at all\n"
          "(never the study's database or study file)."),
      study_command<ConfirmArgs>(
          app, "confirm", "Re-run the baseline and the best trials so the report uses medians",
          add_confirm_options, run_confirm_command,
          {{"tune confirm studies/quickstart.yaml",
            "5 re-runs each of the baseline and the top 3, interleaved"},
           {"tune confirm studies/quickstart.yaml --repeats 10 --top 1",
            "10 re-runs each of the baseline and the best trial"}},
          "A winner picked on one noisy run is a common trap: the re-runs are stored as trials of\n"
          "the study, and tune report and tune best then rank by their medians."),
      study_command<ExportArgs>(
          app, "export", "Write the winning settings as a script, env file or mpirun line",
          add_export_options, run_export,
          {{"tune export studies/quickstart.yaml -f slurm -o job.sh",
            "a Slurm batch script that runs the best trial's settings"},
           {"tune export studies/quickstart.yaml -f mpirun --trial 7",
            "trial 7's mpirun command line"},
           {"tune export study.yaml -f slurm-array --workers 8 --trials-per-worker 25 -o w.sbatch",
            "a Slurm job array of 8 tune workers on the study, 25 new trials each"}},
          "--format bash, slurm, pbs, env or mpirun writes the best trial (or --trial N); when "
          "the best is\n"
          "within the noise of the baseline it writes the baseline and says so. slurm-array "
          "writes a Slurm\n"
          "job array of tune workers that share the study (PostgreSQL storage).\n"
          "-o writes a new file; --force lets it replace an existing one, whole or not at all\n"
          "(never the study's database or study file)."),
  };
}

}  // namespace tune::tuner
