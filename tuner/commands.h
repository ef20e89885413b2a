// Subcommands that live outside cli.cpp (report, export, confirm, probe): each module adds its
// subcommands to the CLI11 app and returns what to run when one of them was chosen. A handler
// returns the exit status; errors are thrown as std::runtime_error and printed by run_cli's one
// top-level catch as "tune: error: ...".
#pragma once

#include <functional>
#include <vector>

namespace CLI {
class App;
}

namespace tune::tuner {

struct Subcommand {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

// tuner/report_cli.cpp: `tune report`, `tune export`, `tune confirm`.
std::vector<Subcommand> add_report_commands(CLI::App& app);
// tuner/probe_cli.cpp: `tune probe`.
std::vector<Subcommand> add_probe_commands(CLI::App& app);

}  // namespace tune::tuner
