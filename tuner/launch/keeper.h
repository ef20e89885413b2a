// The trial keeper: a small process between `tune` and a trial that makes sure nothing the trial
// started outlives it.
//
// `tune-keeper --control FD [--grace S] [--cap BYTES] -- PROGRAM ARGS...` becomes a child
// subreaper (PR_SET_CHILD_SUBREAPER), so every process the trial starts stays below it, also
// double-forked and setsid() ones that would otherwise be adopted by init. It runs PROGRAM, and
// ends only when no descendant is left: when PROGRAM exits, whatever it left behind gets SIGTERM,
// then SIGKILL after the grace period. It exits with PROGRAM's own status (the same code, or the
// same signal), so the launcher sees the trial as if it had run it directly.
//
// FD is one end of a socketpair whose other end only `tune` holds. On it the keeper reports
// "pid N" (PROGRAM's pid) once started, "exited NS" when PROGRAM itself ended (steady_clock
// nanoseconds: tune's wall time of the trial ends there, not after the sweep of what it left
// behind), just before it "cpu ..." (tuner/launch/machine_load.h: the machine's busy CPU time
// from the trial's start to that exit, the tree's own and the keeper's, so tune can tell the
// CPU time other work used meanwhile) and "cut STREAM N" for output it dropped; `tune` sends 't'
// (SIGTERM the tree) and 'k' (SIGKILL the tree). End of file means `tune` is gone, however it
// ended (SIGKILL included): the keeper then stops the whole tree itself. So a trial never runs on
// unsupervised, and a leftover rank never skews the next trial's timing.
//
// With --cap, PROGRAM's stdout and stderr go through pipes: the first BYTES/2 and the last
// BYTES/2 of each reach the keeper's own stdout/stderr (the trial's files), with one marker line
// where the middle was cut, so a trial cannot fill the disk or `tune`'s memory.
//
// Single-threaded by design (it forks). Linux only.
#pragma once

#include <string>

namespace tune::tuner {

// The keeper program's main (tuner/launch/keeper_main.cpp is the thin executable).
int run_keeper(int argc, char** argv);

// The tune-keeper executable next to the running program, else in PATH; empty when not found.
std::string keeper_path();

}  // namespace tune::tuner
