// The knobs a program hides behind its own flags: `tune init` runs its `--help` and keeps the
// options that size a pool (workers, threads, processes, jobs, prefetching). parse_help_options()
// and pool_flags() are pure; read_program_help() runs a process and blocks up to its timeout.
// Thread-safe apart from the launcher's process-wide interrupt flag.
// Design: docs/design-notes.md#tunerinithelp_readerh
#pragma once

#include <string>
#include <vector>

namespace tune::tuner {

// One option as the help lists it.
struct HelpOption {
  std::vector<std::string> spellings;  // as listed: "-j", "--jobs"
  std::string flag;                    // the one to write: the first long spelling, else the first
  std::string metavar;                 // "WORKERS", "INTEGER", "NUM"; "" = takes no value
  bool equals = false;                 // listed as --flag=VALUE (getopt's long options)
  std::string help;                    // its help text on one line, printable, at most 400 bytes
  std::string default_text;            // the default the help shows ("8", "1"); "" = none shown
};

// A pool-sizing option: what it speaks of.
struct PoolFlag {
  HelpOption option;
  std::string topic;  // workers | threads | processes | jobs | prefetch
  bool by_name = false;  // the flag's own name says so (else its help text)
};

// The options of a help text, in order (at most 500).
std::vector<HelpOption> parse_help_options(const std::string& text);

// Those of `options` that size a pool (above), in order.
std::vector<PoolFlag> pool_flags(const std::vector<HelpOption>& options);

// What running the help gave.
struct ProgramHelp {
  std::vector<std::string> argv;  // what was run ("" argv: nothing could be asked)
  bool ran = false;
  std::string why_not;               // why there is no help to read ("" when there is)
  std::vector<HelpOption> options;   // from stdout, else stderr
  std::vector<PoolFlag> pool;        // pool_flags(options)
};

// The argv that asks `program` (one rank's argv) for its help; empty when there is none to ask
// (python3 -c CODE, an interpreter with no script).
std::vector<std::string> help_argv(const std::vector<std::string>& program);

// Runs help_argv(program) for at most `timeout_s` seconds (its stdout and stderr capped at 64
// KiB each) and reads the options it printed; not run (`why_not` says why) when the program
// would likely run instead.
ProgramHelp read_program_help(const std::vector<std::string>& program, double timeout_s = 8);

}  // namespace tune::tuner
