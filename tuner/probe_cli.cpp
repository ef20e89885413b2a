#include <CLI/CLI.hpp>

#include "tuner/commands.h"

namespace tune::tuner {

std::vector<Subcommand> add_probe_commands(CLI::App& /*app*/) { return {}; }

}  // namespace tune::tuner
