#include "tuner/cli/cli.h"
#include "tuner/base/text.h"

#include <CLI/CLI.hpp>

#include <fmt/format.h>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <stdexcept>
#include <string_view>

#include "tuner/base/install_layout.h"
#include "tuner/cli/subcommands.h"
#include "tuner/launch/launcher.h"
#include "tuner/probing/probe_hooks.h"
#include "tuner/run/runner.h"
#include "tuner/run/summary.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

// Whether a local file is something other than an SQLite database (which is empty when new, else
// starts with this header): a wrong argument, not a database that failed.
bool is_not_sqlite(const std::string& path) {
  constexpr std::string_view k_magic{"SQLite format 3\0", 16};
  std::ifstream in(path, std::ios::binary);
  std::string head(k_magic.size(), '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  return in.gcount() > 0 && std::string_view(head.data(), in.gcount()) != k_magic;
}

// Whether the arguments of a failed open_existing_study() name no usable study. Asked after the
// failure, so that a good study costs nothing more and the original message stands.
bool names_no_study(const std::string& target, const std::string& storage_url,
                    const std::string& study_name) {
  std::string url = storage_url;
  std::string name = study_name;
  if (target.ends_with(".yaml") || target.ends_with(".yml")) {
    auto spec = load_study_spec(target);
    if (!spec) return true;
    url = storage_url_for(*spec, storage_url);
    if (name.empty()) name = spec->name;
  } else if (url.empty()) {
    url = target;
  }
  if (storage_url_problem(url)) return true;
  const auto path = sqlite_file_of(url);
  std::error_code ec;
  if (!path || !fs::is_regular_file(*path, ec) || is_not_sqlite(*path)) return true;
  auto storage = open_storage(url);
  if (!storage) return false;
  auto studies = (*storage)->get_all_studies();
  if (!studies) return false;
  if (name.empty()) return studies->size() != 1;
  return std::none_of(studies->begin(), studies->end(),
                      [&](const StudyInfo& s) { return s.name == name; });
}

int run_study(const std::string& study_file, const RunOptions& options) {
  auto spec = unwrap_input(load_study_spec(study_file));
  if (auto why = storage_url_problem(options.storage_override))
    throw BadInput(fmt::format("--storage '{}': {}", options.storage_override, *why));
  const std::string name = spec.name;
  auto runner = unwrap(StudyRunner::open(std::move(spec), options));
  const auto probes = attach_probes(*runner);
  if (!options.quiet)
    for (const auto& note : probes.notes) std::cout << "probes: " << note << '\n';
  if (probes.warning)
    std::cerr << "tune: warning: " << *probes.warning << "; trials run without probes\n";
  install_interrupt_handlers();
  std::cout << fmt::format("study '{}': running {} trial(s); storage {}\n", name, options.trials,
                           storage_url_for(runner->spec(), options.storage_override));
  auto totals = unwrap(runner->run(std::cout));
  std::cout << '\n';
  print_summary(std::cout, name, runner->cache(), live_objective_names(runner->spec()),
                SummaryDigits::live);
  if (totals.interrupted) {
    std::cerr << "tune: interrupted; every finished trial is stored. Run the same command to "
                 "continue the study.\n";
    return k_exit_interrupted;
  }
  return 0;
}

}  // namespace

OpenedStudy open_study_or_throw(const std::string& target, const std::string& storage_url,
                                const std::string& study_name) {
  auto opened = open_existing_study(target, storage_url, study_name);
  if (opened) return std::move(*opened);
  if (names_no_study(target, storage_url, study_name)) throw BadInput(opened.error());
  throw std::runtime_error(opened.error());
}

OpenedStudy open_study_or_throw(const StudyArgs& args) {
  return open_study_or_throw(args.target, args.storage, args.study);
}

void add_study_args(CLI::App* sub, StudyArgs& args) {
  sub->add_option("study", args.target, "Study file, ready study name, or database file")
      ->required()
      ->transform(resolve_study_file);
  sub->add_option("--storage", args.storage, "Database URL/path (overrides the study file's)");
  sub->add_option("--study", args.study, "Study name inside the database");
}

int run_cli(int argc, char** argv) {
  CLI::App app{
      "tune: finds the process/thread/communication settings that make distributed "
      "training fast"};
  app.name("tune");
  app.set_version_flag("--version", "tune 0.1.0");
  // One line like every other error (CLI11's own adds a second one).
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return fmt::format("tune: error: {} (see tune --help)\n", e.what());
  });
  RunOptions options;
  std::string study_file;
  std::string timeout_text;
  app.add_option("study", study_file,
                 "Study file (YAML) to run or continue, or the name of a ready study "
                 "(PREFIX/share/tune/studies/NAME.yaml)")
      ->transform(resolve_study_file);
  app.add_option("--trials,-n", options.trials, "New trials to run (default 10)")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()));
  app.add_option("--timeout", timeout_text,
                 "Bound on the whole study (e.g. 30m); the running "
                 "trial is stopped cleanly");
  app.add_option("--storage", options.storage_override,
                 "Database (sqlite:///file.db or a path); "
                 "overrides the study file's");
  app.add_flag("--quiet,-q", options.quiet, "No line per trial");

  StudyArgs study_args;  // best and trials: only one of them is parsed
  auto* best = app.add_subcommand("best", "Print the best trial of an existing study");
  add_study_args(best, study_args);
  auto* trials = app.add_subcommand("trials", "Print every trial of an existing study");
  add_study_args(trials, study_args);
  std::vector<Subcommand> more = add_report_commands(app);
  for (auto& s : add_probe_commands(app)) more.push_back(std::move(s));
  for (auto& s : add_init_commands(app)) more.push_back(std::move(s));
  app.require_subcommand(0, 1);
  app.footer(
      "Exit status: 0 done; 1 the input was fine but running it failed (the database, the "
      "trials' setup, I/O); 2 bad input: a flag, the study file, or a database, study or trial "
      "that is not there (fix it and run again); 130 interrupted (finished trials are stored).");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version end here too, with status 0; every other parse error is bad input.
    return app.exit(e) == 0 ? 0 : k_exit_bad_input;
  }
  try {
    if (best->parsed()) {
      auto opened = open_study_or_throw(study_args);
      print_summary(std::cout, opened.cache->study().name, *opened.cache);
      return 0;
    }
    if (trials->parsed()) {
      auto opened = open_study_or_throw(study_args);
      print_trials(std::cout, *opened.cache);
      return 0;
    }
    for (const auto& sub : more) {
      if (sub.app->parsed()) return sub.run();
    }
    if (study_file.empty())
      throw BadInput("no study file given (try: tune --trials 10 studies/quickstart.yaml)");
    if (!timeout_text.empty()) {
      auto d = parse_duration(timeout_text);
      if (!d) throw BadInput("--timeout: " + d.error());
      options.study_timeout_s = *d;
    }
    return run_study(study_file, options);
  } catch (const BadInput& e) {
    std::cerr << "tune: error: " << e.what() << '\n';
    return k_exit_bad_input;
  } catch (const std::exception& e) {
    std::cerr << "tune: error: " << e.what() << '\n';
    return k_exit_failed;
  }
}

}  // namespace tune::tuner
