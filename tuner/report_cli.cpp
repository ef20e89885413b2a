#include <CLI/CLI.hpp>

#include "tuner/commands.h"

namespace tune::tuner {

std::vector<Subcommand> add_report_commands(CLI::App& /*app*/) { return {}; }

}  // namespace tune::tuner
