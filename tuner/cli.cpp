#include "tuner/cli.h"

#include <CLI/CLI.hpp>

#include <fmt/format.h>
#include <filesystem>
#include <iostream>

#include "tuner/commands.h"
#include "tuner/launcher.h"
#include "tuner/probe_hooks.h"
#include "tuner/runner.h"
#include "tuner/summary.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

struct CliError {
  std::string message;
};

template <typename T>
T unwrap(Result<T> r) {
  if (!r) throw CliError{r.error()};
  return std::move(*r);
}

int run_study(const std::string& study_file, const RunOptions& options) {
  auto spec = unwrap(load_study_spec(study_file));
  const std::string name = spec.name;
  const ProbeSpec probe_spec = spec.probes;
  auto runner = unwrap(StudyRunner::open(std::move(spec), options));
  if (probe_spec.enabled) {
    auto hooks = make_probe_hooks(probe_spec);
    if (!hooks) {
      std::cerr << "tune: warning: " << hooks.error() << "; trials run without probes\n";
    } else {
      runner->set_hooks(std::move(*hooks));
    }
  }
  install_interrupt_handlers();
  std::cout << fmt::format("study '{}': running {} trial(s); storage {}\n", name, options.trials,
                           storage_url_for(runner->spec(), options.storage_override));
  auto totals = unwrap(runner->run(std::cout));
  std::cout << '\n';
  print_summary(std::cout, name, runner->cache());
  if (totals.interrupted) {
    std::cerr << "tune: interrupted; every finished trial is stored. Run the same command to "
                 "continue the study.\n";
    return 130;
  }
  return 0;
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App app{
      "tune: finds the process/thread/communication settings that make distributed "
      "training fast"};
  app.name("tune");
  app.set_version_flag("--version", "tune 0.1.0");
  RunOptions options;
  std::string study_file;
  std::string timeout_text;
  app.add_option("study", study_file, "Study file (YAML) to run or continue");
  app.add_option("--trials,-n", options.trials, "New trials to run (default 10)")
      ->check(CLI::PositiveNumber);
  app.add_option("--timeout", timeout_text,
                 "Bound on the whole study (e.g. 30m); the running "
                 "trial is stopped cleanly");
  app.add_option("--storage", options.storage_override,
                 "Database (sqlite:///file.db or a path); "
                 "overrides the study file's");
  app.add_flag("--quiet,-q", options.quiet, "No line per trial");

  std::string db_url, study_name, target;
  auto add_study_args = [&](CLI::App* sub) {
    sub->add_option("study", target, "Study file, or database file")->required();
    sub->add_option("--storage", db_url, "Database URL/path (overrides the study file's)");
    sub->add_option("--study", study_name, "Study name inside the database");
  };
  auto* best = app.add_subcommand("best", "Print the best trial of an existing study");
  add_study_args(best);
  auto* trials = app.add_subcommand("trials", "Print every trial of an existing study");
  add_study_args(trials);
  std::vector<Subcommand> more = add_report_commands(app);
  for (auto& s : add_probe_commands(app)) more.push_back(std::move(s));
  app.require_subcommand(0, 1);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (best->parsed()) {
      auto opened = unwrap(open_existing_study(target, db_url, study_name));
      print_summary(std::cout, opened.cache->study().name, *opened.cache);
      return 0;
    }
    if (trials->parsed()) {
      auto opened = unwrap(open_existing_study(target, db_url, study_name));
      print_trials(std::cout, *opened.cache);
      return 0;
    }
    for (const auto& sub : more) {
      if (sub.app->parsed()) return sub.run();
    }
    if (study_file.empty()) {
      std::cerr
          << "tune: error: no study file given (try: tune --trials 10 studies/quickstart.yaml)\n";
      return 2;
    }
    if (!timeout_text.empty()) {
      auto d = parse_duration(timeout_text);
      if (!d) throw CliError{"--timeout: " + d.error()};
      options.study_timeout_s = *d;
    }
    return run_study(study_file, options);
  } catch (const CliError& e) {
    std::cerr << "tune: error: " << e.message << '\n';
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "tune: error: " << e.what() << '\n';
    return 1;
  }
}

}  // namespace tune::tuner
