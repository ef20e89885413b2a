// The trial keeper (tune-keeper): a subreaper between `tune` and a trial that runs the trial's
// program, reports on a control socket, and stops everything the trial started once it ends or
// `tune` is gone. Single-threaded by design (it forks). Linux only.
// Design: docs/design-notes.md#tunerlaunchkeeperh
#pragma once

#include <string>

namespace tune::tuner {

// The keeper program's main (tuner/launch/keeper_main.cpp is the thin executable).
int run_keeper(int argc, char** argv);

// The tune-keeper executable next to the running program, else in PATH; empty when not found.
std::string keeper_path();

}  // namespace tune::tuner
