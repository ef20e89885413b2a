// The `tune` command line (CLI11). run_cli() is the whole program; main.cpp only calls it.
// Every error ends in one line "tune: error: ..." on stderr and exit status 2 for bad input (a
// flag, the study file, a database, study or trial that is not there) or 1 for a command that
// could not be carried out; 130 after an interrupt (k_exit_* in subcommands.h;
// docs/report-confirm-export.md, "Exit status").
#pragma once

namespace tune::tuner {

int run_cli(int argc, char** argv);

}  // namespace tune::tuner
