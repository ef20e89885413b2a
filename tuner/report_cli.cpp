// `tune report`, `tune confirm` and `tune export`: thin CLI11 wiring over report.h, confirm.h
// and export.h. STUDY is resolved as for `tune best` (open_existing_study); commands that need
// the study file (confirm, export) find it through the database's "tune:study_file" attr when
// given a database.
#include <CLI/CLI.hpp>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "tuner/commands.h"
#include "tuner/confirm.h"
#include "tuner/export.h"
#include "tuner/report.h"
#include "tuner/runner.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

// The value, or the error thrown as a failure to carry out the command (exit 1).
template <typename T>
T unwrap(std::expected<T, std::string> r) {
  if (!r) throw std::runtime_error(r.error());
  return std::move(*r);
}

// The value, or the error thrown as bad input (exit 2).
template <typename T>
T unwrap_input(std::expected<T, std::string> r) {
  if (!r) throw BadInput(r.error());
  return std::move(*r);
}

struct StudyArgs {
  std::string target, storage, study;
};

void add_study_args(CLI::App* sub, StudyArgs& args) {
  sub->add_option("study", args.target, "Study file, or database file")->required();
  sub->add_option("--storage", args.storage, "Database URL/path (overrides the study file's)");
  sub->add_option("--study", args.study, "Study name inside the database");
}

// The study file of an opened study: the one given, else the one the database remembers. The
// error says why there is none to use (bad input); a database that cannot be read throws.
std::expected<StudySpec, std::string> spec_of(const OpenedStudy& opened) {
  if (opened.spec) return *opened.spec;
  auto attrs = unwrap(opened.storage->get_study_user_attrs(opened.cache->study().study_id));
  const auto file = attrs.value("tune:study_file", std::string());
  if (file.empty())
    return std::unexpected(
        fmt::format("study '{}' in {} names no study file; pass the study file (*.yaml) instead",
                    opened.cache->study().name, opened.url));
  auto spec = load_study_spec(file);
  if (!spec)
    return std::unexpected(spec.error() +
                           " (the study file this database was created from; "
                           "pass the study file explicitly if it moved)");
  return spec;
}

void write_output(const std::string& path, const std::string& text, bool executable) {
  if (path.empty() || path == "-") {
    std::cout << text << std::flush;
    return;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error(fmt::format("-o {}: cannot write the file", path));
  out << text;
  out.close();
  if (!out) throw std::runtime_error(fmt::format("-o {}: write failed", path));
  if (executable) {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                    fs::perm_options::add, ec);
  }
}

std::string measured_text(const ReportData& data, const ReportTrial& t) {
  const std::string key = data.objective.empty() ? "value" : data.objective;
  if (t.median)
    return fmt::format("{} = {} (median of {} confirm re-runs; its search run: {})", key,
                       format_value(*t.median), t.repeats.size(),
                       t.value ? format_value(*t.value) : "-");
  if (t.value) return fmt::format("{} = {} (one run)", key, format_value(*t.value));
  return fmt::format("no value ({})", search::to_string(t.state));
}

}  // namespace

std::vector<Subcommand> add_report_commands(CLI::App& app) {
  std::vector<Subcommand> subs;

  // tune report
  {
    struct Args {
      StudyArgs study;
      std::string format = "text", output;
      int top = 10;
      bool no_importance = false;
    };
    auto args = std::make_shared<Args>();
    auto* sub = app.add_subcommand(
        "report",
        "Report an existing study: best trial, speedup over the baseline, top trials, "
        "importance, probe verdicts, failures");
    add_study_args(sub, args->study);
    sub->add_option("--format,-f", args->format, "text (default), json, markdown or html")
        ->check(CLI::IsMember({"text", "json", "markdown", "md", "html"}));
    sub->add_option("-o,--output", args->output, "Write to FILE instead of stdout");
    sub->add_option("--top", args->top, "Rows of the top-trials table (default 10)")
        ->check(CLI::Range(1, std::numeric_limits<int>::max()));
    sub->add_flag("--no-importance", args->no_importance, "Skip the fANOVA importance");
    subs.push_back({sub, [args]() {
                      auto opened = open_study_or_throw(args->study.target, args->study.storage,
                                                        args->study.study);
                      auto spec = spec_of(opened);  // optional here: gives order and key names
                      ReportOptions options;
                      options.top_n = args->top;
                      options.importance = !args->no_importance;
                      auto data = build_report(*opened.cache, opened.cache->study().name,
                                               spec ? spec->space : search::SearchSpace{}, options);
                      data.storage = opened.url;
                      if (spec && !spec->objective.use_regex) data.objective = spec->objective.key;
                      auto reporter = unwrap_input(make_reporter(args->format));
                      std::ostringstream text;
                      reporter->write(text, data);
                      write_output(args->output, text.str(), false);
                      return 0;
                    }});
  }

  // tune confirm
  {
    struct Args {
      StudyArgs study;
      ConfirmOptions options;
    };
    auto args = std::make_shared<Args>();
    auto* sub = app.add_subcommand(
        "confirm",
        "Re-run the baseline and the top trials several times, interleaved, so the report can "
        "use medians");
    add_study_args(sub, args->study);
    sub->add_option("--repeats,-r", args->options.repeats, "Re-runs of each trial (default 5)")
        ->check(CLI::Range(1, std::numeric_limits<int>::max()));
    sub->add_option("--top,-k", args->options.top,
                    "Best trials re-run besides the baseline (default 3)")
        ->check(CLI::Range(0, std::numeric_limits<int>::max()));
    sub->add_flag("--quiet,-q", args->options.quiet, "No line per trial");
    subs.push_back({sub, [args]() {
                      auto opened = open_study_or_throw(args->study.target, args->study.storage,
                                                        args->study.study);
                      auto spec = unwrap_input(spec_of(opened));
                      ConfirmOptions options = args->options;
                      options.storage_override = opened.url;
                      opened = {};  // the runner opens its own connection
                      auto totals = unwrap(run_confirm(std::move(spec), options, std::cout));
                      if (totals.interrupted) {
                        std::cerr << "tune: interrupted; the re-runs not yet started stay "
                                     "queued and run with the study's next `tune` command.\n";
                        return k_exit_interrupted;
                      }
                      return 0;
                    }});
  }

  // tune export
  {
    struct Args {
      StudyArgs study;
      std::string format = "bash", output;
      int trial = -1;
    };
    auto args = std::make_shared<Args>();
    auto* sub = app.add_subcommand(
        "export",
        "Write the winning settings as a bash, Slurm or PBS script, an env file or an "
        "mpirun command line");
    add_study_args(sub, args->study);
    sub->add_option("--format,-f", args->format, "bash (default), slurm, pbs, env or mpirun")
        ->check(CLI::IsMember({"bash", "slurm", "pbs", "env", "mpirun"}));
    sub->add_option("-o,--output", args->output, "Write to FILE instead of stdout");
    sub->add_option("--trial", args->trial, "Export this trial number instead of the best")
        ->check(CLI::Range(0, std::numeric_limits<int>::max()));
    subs.push_back(
        {sub, [args]() {
           const auto format = unwrap_input(parse_export_format(args->format));
           auto opened =
               open_study_or_throw(args->study.target, args->study.storage, args->study.study);
           const auto spec = unwrap_input(spec_of(opened));
           ReportOptions options;
           options.importance = false;
           auto data = build_report(*opened.cache, opened.cache->study().name, spec.space, options);
           if (!spec.objective.use_regex) data.objective = spec.objective.key;
           int number = -1;
           std::string measured;
           if (args->trial >= 0) {
             number = args->trial;
             const auto it = std::find_if(data.trials.begin(), data.trials.end(),
                                          [&](const ReportTrial& t) { return t.number == number; });
             if (it == data.trials.end())
               throw BadInput(fmt::format("--trial {}: no such trial in study '{}' ({} trials)",
                                          number, data.study, data.trials.size()));
             measured = measured_text(data, *it);
           } else {
             if (!data.best)
               throw std::runtime_error(
                   fmt::format("study '{}' has no completed trial to export yet", data.study));
             number = data.best->number;
             measured = measured_text(data, *data.best);
             if (!data.best->median) measured += "; the best single run";
           }
           const auto& trials = opened.cache->trials();
           const auto trial =
               std::find_if(trials.begin(), trials.end(),
                            [&](const search::FrozenTrial& t) { return t.number == number; });
           ExportOptions export_options;
           export_options.measured = measured;
           export_options.storage = opened.url;
           // What fails here is the study file (a template, a variable name) or the trial
           // chosen (a parameter the study file no longer has): bad input.
           const auto text = unwrap_input(render_export(spec, *trial, format, export_options));
           const bool script = format == ExportFormat::bash || format == ExportFormat::slurm ||
                               format == ExportFormat::pbs;
           write_output(args->output, text, script);
           return 0;
         }});
  }
  return subs;
}

}  // namespace tune::tuner
