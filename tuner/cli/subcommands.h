// Subcommands that live outside cli.cpp (report, export, confirm, probe, init): each module adds
// its subcommands to the CLI11 app and returns what to run when one of them was chosen. A handler
// returns the exit status; errors are thrown, BadInput for what the user must fix (exit 2) and
// std::runtime_error for a command that could not be carried out (exit 1), and printed by
// run_cli's one top-level catch as "tune: error: ...".
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tuner/base/result.h"
#include "tuner/run/runner.h"

namespace CLI {
class App;
}

namespace tune::tuner {

// The exit statuses of `tune`, documented in docs/report-confirm-export.md ("Exit status") and
// `tune --help`.
inline constexpr int k_exit_failed = 1;         // the input was fine; running it failed
inline constexpr int k_exit_bad_input = 2;      // a flag, the study file or a name in them
inline constexpr int k_exit_interrupted = 130;  // SIGINT/SIGTERM; finished trials are stored

// A mistake in what the user gave: a flag, the study file, a database or study or trial that
// is not there. Exit status 2.
struct BadInput : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The value, or the error thrown as a failure to carry out the command (exit 1).
template <typename T>
T unwrap(Result<T> r) {
  if (!r) throw std::runtime_error(r.error());
  return std::move(*r);
}

// The value, or the error thrown as bad input (exit 2).
template <typename T>
T unwrap_input(Result<T> r) {
  if (!r) throw BadInput(r.error());
  return std::move(*r);
}

// The arguments that name an existing study, the same for every command that reads one
// (best, trials, report, confirm, export): STUDY (a study file or a database), --storage, --study.
struct StudyArgs {
  std::string target, storage, study;
};
void add_study_args(CLI::App* sub, StudyArgs& args);

// open_existing_study() for a command: a failure is BadInput when the arguments name no usable
// study (the study file is wrong, no such database, no such study in it) and std::runtime_error
// when the database is there but could not be read.
OpenedStudy open_study_or_throw(const std::string& target, const std::string& storage_url,
                                const std::string& study_name);
OpenedStudy open_study_or_throw(const StudyArgs& args);

// tuner/cli/help.cpp: what every command's help and flags share.
//
// The formatter set_usage() needs, on the root app before any subcommand is added (each takes
// its parent's).
void use_tune_formatter(CLI::App& app);
// `app`'s "Usage:" lines, where CLI11's own would mislead (the root's two forms, tune init's `--`).
void set_usage(CLI::App* app, const std::vector<std::string>& lines);
// One entry of a command's "Examples:": a command line and what it does.
struct Example {
  std::string command, what;
};
// Ends `app`'s --help with `notes` (when given) and an "Examples:" block; every command has one.
void set_help_footer(CLI::App* app, const std::vector<Example>& examples,
                     const std::string& notes = "");
// The root app's subcommand names, in the order they were added.
std::vector<std::string> command_names(const CLI::App& app);
// `tune help`: the usage, then each command with its one-line description.
std::string command_list(const CLI::App& app);
// The error for `word` given where a command goes: the nearest command when one is near enough
// (suggest.h), else a pointer to `tune help`; `could_be_study` when the word might have been a
// study file, as the root's first word might.
std::string unknown_command_message(const CLI::App& app, const std::string& word,
                                    bool could_be_study);

// A flag that earlier versions took and that now has another name (tune --timeout, export
// --trials): still parsed but hidden from the help, so that refuse_renamed_flags() (after
// parsing) can refuse it as bad input with "--OLD_NAME message", the message naming its
// successor; CLI11's own "not expected" would not.
void add_renamed_flag(CLI::App* app, const std::string& old_name, const std::string& message);
void refuse_renamed_flags(const CLI::App& app);

struct Subcommand {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

// tuner/cli/report_cli.cpp: `tune report`, `tune export`, `tune confirm`.
std::vector<Subcommand> add_report_commands(CLI::App& app);
// tuner/cli/probe_cli.cpp: `tune probe`.
std::vector<Subcommand> add_probe_commands(CLI::App& app);
// tuner/cli/init_cli.cpp: `tune init`.
std::vector<Subcommand> add_init_commands(CLI::App& app);
// tuner/cli/guess_cli.cpp: `tune guess`.
std::vector<Subcommand> add_guess_commands(CLI::App& app);

}  // namespace tune::tuner
