// The `tune` command line (CLI11). run_cli() is the whole program; main.cpp only calls it.
// Every error ends in one line "tune: error: ..." on stderr and a non-zero exit status.
#pragma once

namespace tune::tuner {

int run_cli(int argc, char** argv);

}  // namespace tune::tuner
