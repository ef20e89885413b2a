#include "tuner/cli/cli.h"
#include "tuner/base/text.h"

#include <CLI/CLI.hpp>

#include <fmt/format.h>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>
#include <stdexcept>

#include "tuner/base/install_layout.h"
#include "tuner/base/text.h"
#include "tuner/cli/subcommands.h"
#include "tuner/judge/ranking.h"
#include "tuner/judge/summary.h"
#include "tuner/launch/launcher.h"
#include "tuner/probing/probe_hooks.h"
#include "tuner/run/runner.h"
#include "tuner/storage/storage_url.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

// Whether the arguments of a failed open_existing_study() name no usable study: a study file
// that does not load, a malformed storage URL, a database file that is not there, or a database
// that opens but holds no such study. A database that is there but cannot be opened or read (a
// server down, a corrupt file) is no mistake of the arguments. Asked after the failure, so that
// a good study costs nothing more and the original message stands.
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
  if (const auto path = sqlite_file_of(url)) {
    std::error_code ec;
    if (!fs::exists(*path, ec)) return true;
    if (fs::is_directory(*path, ec)) return true;  // a folder given for the database file
  }
  auto storage = open_storage(url, OpenMode::read_only);
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
    throw BadInput(
        fmt::format("--storage '{}': {}", redact_storage_url(options.storage_override), *why));
  const std::string name = spec.name;
  auto opened = StudyRunner::open(std::move(spec), options);
  if (!opened && opened.error().study_file_changed) throw BadInput(opened.error().message);
  if (!opened) throw std::runtime_error(opened.error().message);
  auto runner = std::move(*opened);
  const auto probes = attach_probes(*runner);
  if (!options.quiet)
    for (const auto& note : probes.notes) std::cout << "probes: " << note << '\n';
  if (probes.warning)
    std::cerr << "tune: warning: " << *probes.warning << "; trials run without probes\n";
  install_interrupt_handlers();
  std::cout << terminal_text(fmt::format(
                   "study '{}': running {} trial(s); storage {}", name, options.trials,
                   redact_storage_url(storage_url_for(runner->spec(), options.storage_override))))
            << '\n';
  auto totals = unwrap(runner->run(std::cout));
  std::cout << '\n';
  print_summary(std::cout, name, runner->cache(), live_objective_names(runner->spec()),
                SummaryDigits::live);
  if (totals.interrupted) {
    std::cerr << "tune: interrupted; every finished trial is stored. Run the same command to "
                 "continue the study.\n";
    return k_exit_interrupted;
  }
  if (!totals.gave_up.empty()) {
    std::cerr << "tune: error: " << totals.gave_up << '\n';
    return k_exit_failed;
  }
  return 0;
}

// Whether a word where the study file goes may be one: an existing file, a ready study's name,
// or a path (a '/' or a .yaml suffix: "cannot read the study file" says more about a missing
// one than "unknown command" would).
bool may_be_study_file(const std::string& word) {
  std::error_code ec;
  return word.find('/') != std::string::npos || word.ends_with(".yaml") || word.ends_with(".yml") ||
         fs::exists(word, ec) || resolve_study_file(word) != word;
}

// The words of argv that CLI11 reads as the root app's positionals, up to `--` and ending at the
// first command name: argv less the root's options and their values.
std::vector<std::string> root_words(const CLI::App& app, int argc, char** argv) {
  const auto commands = command_names(app);
  std::vector<std::string> words;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.size() > 1 && arg[0] == '-') {
      const auto* opt = arg.find('=') == std::string::npos ? app.get_option_no_throw(arg) : nullptr;
      if (!opt || opt->get_items_expected_max() == 0 || i + 1 == argc) continue;
      // Its value: whatever follows when one is required, else what does not look like an
      // option or a command (as CLI11 reads an optional value).
      const std::string next = argv[i + 1];
      if (opt->get_items_expected_min() > 0 ||
          (!next.starts_with('-') && std::ranges::find(commands, next) == commands.end()))
        ++i;
      continue;
    }
    words.push_back(arg);
    if (std::ranges::find(commands, arg) != commands.end()) break;
  }
  return words;
}

// What CLI11 would get wrong, checked before it parses: a first word that is neither a command
// nor a study file is a mistyped command (CLI11 would take it for a study file), and a command
// after the study file is the wrong order (CLI11 would ask the command for a STUDY of its own).
void check_root_words(const CLI::App& app, const std::vector<std::string>& words) {
  if (words.empty()) return;
  const auto commands = command_names(app);
  const auto is_command = [&](const std::string& w) {
    return std::ranges::find(commands, w) != commands.end();
  };
  const auto& first = words.front();
  if (is_command(first)) return;
  if (!may_be_study_file(first)) throw BadInput(unknown_command_message(app, first, true));
  for (const auto& word : words) {
    if (is_command(word))
      throw BadInput(fmt::format("'{}' after the study file: the command comes first (tune {} {})",
                                 word, word, escape_controls(first)));
  }
}

// A password typed on tune's command line can be read by every user of the machine (ps,
// /proc/PID/cmdline) for as long as tune runs. Said once; each such word is overwritten with its
// shown form right after parsing (the parser holds its own copies), which leaves only the moment
// of startup open. The safe ways never put it there: ~/.pgpass or PGPASSWORD.
void hide_passwords_on_command_line(int argc, char** argv) {
  bool said = false;
  for (int i = 1; i < argc; ++i) {
    std::string shown;
    if (!word_holds_password(argv[i], &shown)) continue;
    const std::size_t size = std::strlen(argv[i]);
    std::memset(argv[i], 0, size);
    std::memcpy(argv[i], shown.data(), std::min(size, shown.size()));
    if (said) continue;
    said = true;
    std::cerr << "tune: warning: a password on the command line can be read by other users of "
                 "this machine (ps); put it in ~/.pgpass or the PGPASSWORD variable instead\n";
  }
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
  sub->add_option("STUDY", args.target, "Study file, ready study name, or database file")
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
  use_tune_formatter(app);
  app.set_version_flag("-V,--version", "tune " TUNE_VERSION, "Print tune's version and exit");
  // One line like every other error (CLI11's own adds a second one).
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return fmt::format("tune: error: {} (see tune --help)\n", e.what());
  });
  RunOptions options;
  std::string study_file;
  std::string time_limit_text;
  app.add_option("STUDY", study_file,
                 "Study file (YAML) to run or continue, or the name of a ready study "
                 "(PREFIX/share/tune/studies/NAME.yaml)")
      ->transform(resolve_study_file);
  // The options of a study run; a command after them would ignore them (refused below).
  const std::vector<CLI::Option*> run_flags = {
      app.add_option("--trials,-n", options.trials, "New trials to run (default 10)")
          ->check(CLI::Range(1, std::numeric_limits<int>::max())),
      app.add_option("--time-limit", time_limit_text,
                     "Wall-clock limit on the whole run (e.g. 30m): no trial starts after it "
                     "and the running one is stopped cleanly. Each trial's own limit is the "
                     "study file's timeout:")
          ->type_name("DURATION"),
      app.add_option("--storage", options.storage_override,
                     "Database (sqlite:///file.db or a path); overrides the study file's"),
      app.add_flag("--quiet,-q", options.quiet, "No line per trial"),
  };
  add_renamed_flag(&app, "--timeout",
                   "is now --time-limit (it bounds the whole run; each trial's own limit is the "
                   "study file's timeout:)");

  StudyArgs study_args;  // best and trials: only one of them is parsed
  auto* best = app.add_subcommand("best", "Print the best trial of an existing study");
  add_study_args(best, study_args);
  set_help_footer(
      best,
      {{"tune best studies/quickstart.yaml", "the best trial and its parameters"},
       {"tune best tune-out/quickstart/study.db --study quickstart",
        "the same, from the database"}},
      "A study with two objectives has no single best trial: its Pareto front is printed.");
  auto* trials = app.add_subcommand("trials", "Print every trial of an existing study");
  add_study_args(trials, study_args);
  set_help_footer(trials, {{"tune trials studies/quickstart.yaml",
                            "one line per trial: number, state, value, wall time, parameters"}});
  std::vector<Subcommand> more = add_report_commands(app);
  for (auto& s : add_probe_commands(app)) more.push_back(std::move(s));
  for (auto& s : add_init_commands(app)) more.push_back(std::move(s));
  for (auto& s : add_guess_commands(app)) more.push_back(std::move(s));
  auto* help = app.add_subcommand("help", "List the commands, or print one command's help");
  std::string help_topic;
  help->add_option("COMMAND", help_topic,
                   "The command whose help to print (the same as tune COMMAND --help)");
  set_help_footer(help, {{"tune help", "the commands, one line each"},
                         {"tune help report", "report's options and examples"}});
  app.require_subcommand(0, 1);
  set_usage(&app, {"tune [OPTIONS] STUDY.yaml      run or continue a study",
                   "tune COMMAND [OPTIONS] ...     tune help lists the commands"});
  set_help_footer(
      &app,
      {{"tune --trials 30 studies/quickstart.yaml",
        "run 30 new trials of the study (run it again for 30 more)"},
       {"tune --trials 200 --time-limit 30m my.yaml",
        "stop after 200 trials or 30 minutes, whichever comes first"},
       {"tune help", "the commands: best, trials, report, confirm, export, probe, init, guess, rules"}},
      "Exit status: 0 done; 1 the input was fine but running it failed (a database that cannot\n"
      "be read: server down, corrupt file; the trials' setup; I/O); 2 bad input: a flag, a\n"
      "storage URL, the study file, or a database file, study or trial that is not there (fix\n"
      "it and run again); 130 interrupted (finished trials are stored). The same for every\n"
      "command.");

  try {
    check_root_words(app, root_words(app, argc, argv));
    try {
      app.parse(argc, argv);
      hide_passwords_on_command_line(argc, argv);
    } catch (const CLI::ParseError& e) {
      // --help and --version end here too, with status 0; every other parse error is bad input.
      return app.exit(e) == 0 ? 0 : k_exit_bad_input;
    }
    refuse_renamed_flags(app);
    if (!app.get_subcommands().empty()) {
      const auto& command = app.get_subcommands().front()->get_name();
      for (const auto* flag : run_flags) {
        if (flag->count() > 0)
          throw BadInput(
              fmt::format("{} before `{}` is an option of a study run (tune [OPTIONS] STUDY.yaml); "
                          "tune help {} lists the options of {}",
                          flag->get_name(), command, command, command));
      }
    }
    if (help->parsed()) {
      if (help_topic.empty()) {
        std::cout << command_list(app);
        return 0;
      }
      const auto names = command_names(app);
      if (std::ranges::find(names, help_topic) == names.end())
        throw BadInput(unknown_command_message(app, help_topic, false));
      std::cout << app.get_subcommand(help_topic)->help(app.get_name());
      return 0;
    }
    if (best->parsed()) {
      auto opened = open_study_or_throw(study_args);
      print_summary(std::cout, opened.cache->study().name, *opened.cache);
      // No best trial is no answer: a script that reads it must not go on as if it had one.
      const bool none = opened.cache->is_multi_objective() ? front_trials(*opened.cache).empty()
                                                           : best_trial(*opened.cache) == nullptr;
      if (none) {
        std::cerr << "tune: error: the study has no completed trial, so no best one\n";
        return k_exit_failed;
      }
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
      throw BadInput(
          "no study file given (try: tune --trials 10 studies/quickstart.yaml; tune help lists "
          "the commands)");
    if (!time_limit_text.empty()) {
      auto d = parse_duration(time_limit_text);
      if (!d) throw BadInput("--time-limit: " + d.error());
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
