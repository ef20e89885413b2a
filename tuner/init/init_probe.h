// `tune init`'s probe run: the user's command started once, briefly, as a trial would be, in a
// mirror of the current folder, to see what the program really does. find_result_lines() is pure;
// probe_program() runs a process tree and blocks up to its bound. Not thread-safe (one probe at a
// time: the launcher's interrupt flag is process-wide).
// Design: docs/design-notes.md#tunerinitinit_probeh
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "probes/env_reads.h"
#include "probes/library_report.h"
#include "probes/program_probe.h"
#include "tuner/base/number_text.h"
#include "tuner/measure/rate_window.h"

namespace tune::tuner {

// A number the program printed or wrote with a name: `samples/s: 1234.5`, `HPL_Tflops=0.0075`.
struct ResultLine {
  std::string source;  // "stdout", "stderr" or the file's name in the working folder
  std::string name;    // as printed: "samples/s", "HPL_Tflops"
  std::string unit;    // what follows the number on its line ("GFLOP/s", "sec"); may be ""
  double value = 0;    // the last one seen
  int count = 0;       // lines with this name (a progress line repeats; a result appears once)
  bool maximize = true;
  int rank = 0;       // lower is a better objective: work rates, then data rates, then times
  std::string regex;  // RE2 pattern whose first group is the number
  // How it writes the number: the one style that reads every one seen whole ("12,345.6"
  // grouped, "1,75" decimal_comma); number_why says what showed it ("" for plain).
  NumberStyle number = NumberStyle::plain;
  std::string number_why;
  int last_line = 0;    // where the last one is in the text (0 = its first line)
  int lines_after = 0;  // lines of the text after the last one: a figure printed at the end has few
};

// Lines of `text` that give a named number whose name or unit says it is a rate (FLOP/s,
// samples/s, images/s, bandwidth, "events per second": maximize) or a time (time, elapsed,
// latency, sec: minimize), or a number whose unit is a rate ("108.2 timesteps/s", "3.8 GFLOPS",
// named by the unit), best candidate first (work rates, then data rates, then times; within
// one kind, in the order they first appear). Other named numbers (sizes, counts, residuals) are
// not offered. A number is read whole, its separators included: `12,345.6` is 12345.6 (its
// regex reads grouped thousands), `1,75` 1.75; a figure no one style reads whole is not offered.
std::vector<ResultLine> find_result_lines(const std::string& text, const std::string& source);

// How the program writes a ',' between digits, from every number of its text: a number only one
// style reads ("12,345.6" or "1,234,567" grouped, "1,75" decimal_comma) says so; else numbers
// with a '.' decimal point ("0.25") make a ',' a group separator; else ',' is a decimal comma.
// Also why, for the study's comment. For a number that reads either way ("1,234").
std::pair<NumberStyle, std::string> comma_style_of(const std::string& text);

// A line the probe run's job printed, with the moment tune read it (seconds since launch).
struct TimedLine {
  double t = 0;
  std::string source;  // "stdout" | "stderr"
  std::string text;    // at most k_timed_line_bytes
};
inline constexpr std::size_t k_timed_line_bytes = 512;

// Progress lines: lines of one shape (the same text with other numbers) that kept coming while
// the probe ran, offered as a window objective (StudySpec's WindowSpec).
struct ProgressLines {
  std::string source;  // "stdout" | "stderr"
  WindowMeasure measure = WindowMeasure::counter;
  std::string regex;      // RE2: its first group is the number (none for `lines`)
  std::string name;       // the word before the number ("step"); "" for lines
  std::string example;    // one of the lines, printable
  int count = 0;          // lines of this shape
  double first_s = 0;     // when the first was read, after launch
  double interval_s = 0;  // the median time between the reads that brought new ones
  double span_s = 0;      // from the first to the last
  // Units per second over the run after its first line (counter, lines), or the mean of the
  // rates printed (rate); the spread of that rate between stretches of the run (the standard
  // deviation of 5 stretches' rates over their mean), when there were enough lines to tell.
  double rate = 0;
  std::optional<double> spread;
  // A counter's last value, and the count it runs to when each line says ("step 40/500").
  double last_value = 0;
  std::optional<double> total;
  // Why the lines cannot measure a trial, "" when they can: they stopped coming while their
  // stream went on (the format changed mid-run, a phase ended), so a regex built from them
  // would stop matching.
  std::string stopped;
  // How the regex's group writes its number: the one style that reads it whole on every line
  // ("12,345" grouped, "1,75" decimal_comma); number_why says what showed it ("" for plain).
  NumberStyle number = NumberStyle::plain;
  std::string number_why;
};

// The progress lines among `lines` (in the order read), best candidate first: a counter named
// like a step (step, iter, iteration, batch, samples, ...), then any counter, then a printed rate,
// then lines that repeat their shape, and last those whose lines stopped coming while their
// stream went on (`stopped`). A shape needs at least 4 lines read at 3 or more distinct moments;
// lines are of one shape whatever their blanks (a column that widens, "step    9" -> "step   10",
// an aligned table), and the regex built for a candidate matches any blanks there; it is
// checked to give exactly its numbers on every line of the shape and to match no other line of
// its stream.
std::vector<ProgressLines> find_progress_lines(const std::vector<TimedLine>& lines);

// How the program's output is made to come line by line into a pipe, as `stdbuf -oL` does:
// C stdio writes into a pipe in 4-KiB blocks, so progress lines would arrive in bursts and
// their rate be misread (27 steps/s read against the 108 a program printed). coreutils'
// libstdbuf is preloaded with _STDBUF_O=L (its constructor makes stdout line-buffered before
// main), and PYTHONUNBUFFERED=1 does the same for Python's own buffer. Chosen over a
// pseudo-terminal, which would merge stdout and stderr, make the program believe a person
// watches (colours, progress bars redrawn with \r, prompts) and stop at a hang-up; libstdbuf
// leaves alone what it cannot reach (a static binary, a program that sets its own buffering).
struct LineBuffering {
  std::string library;                     // libstdbuf.so's path
  std::map<std::string, std::string> env;  // LD_PRELOAD, _STDBUF_O, PYTHONUNBUFFERED
};

// The line buffering this machine offers: libstdbuf.so beside the `stdbuf` on `path_var` (a
// PATH value), else in coreutils' usual folders; nullopt when there is none. `ld_preload` (the
// environment's LD_PRELOAD) is kept after it.
std::optional<LineBuffering> line_buffering(const std::string& path_var,
                                            const std::string& ld_preload);

struct ProbeOptions {
  double seconds = 10;  // the bound: the tree is stopped after it (--probe-for)
  // A command still running at the bound is watched on, up to this long in all, to see whether
  // it ends soon (a job that does is scored by the figure it prints at its end, each trial
  // running it whole) and, for one that runs on, to see its progress lines (a framework still
  // starting on a loaded machine shows none yet). Stopped at the bound all the same when its
  // progress lines say how far it goes ("step 40/500") and that is past this wait. 0 = not at
  // all. Default 0 (the CLI: 3 x --probe-for).
  double end_wait_s = 0;
  // Variables set for the command, replacing its own: line_buffering()'s, so that the lines the
  // program writes with C stdio into the probe's pipe come as they are printed.
  std::map<std::string, std::string> env;
  std::string source_dir;  // the folder the user runs from; "" = the current folder
  // Files up to this size are copied into the mirror, bigger ones linked.
  std::uintmax_t copy_limit_bytes = 64u << 20;
  // Add mpirun's --oversubscribe, as the study's launch will (more ranks than cores). Default
  // false.
  bool oversubscribe = false;
  // libtune_getenv.so (probes/env_reads.h), preloaded before whatever `env` or the environment
  // preloads, to record the variables the processes read; "" = none.
  std::string env_reads_library;
  // libtune_threads.so, preloaded too so that each process's BLAS and OpenMP libraries say what
  // they run (probes/library_report.h); "" = not asked.
  std::string library_query_library;
  // Sample the ranks' CPU time per library while it runs (probes/cpu_profile.h). Default true;
  // where perf events are refused, ProbeFindings::cpu_time says why.
  bool cpu_profile = true;
};

struct ProbeInput {
  std::string name;  // relative to the source folder
  std::uintmax_t bytes = 0;
  bool folder = false;
};

struct ProbeFindings {
  bool ran = false;
  std::string not_run;          // why the command could not be probed ("" when it ran)
  double seconds = 0;           // how long it ran
  double bound_s = 0;           // ProbeOptions::seconds
  bool bounded = false;         // stopped at the bound or after the end wait (still running then)
  bool line_buffered = false;   // ran with LineBuffering's variables
  int exit_code = -1;           // when it exited by itself
  std::string last_error_line;  // the last line it wrote to stderr (printable), for a failure
  int ranks = 0;                // rank processes seen
  std::vector<probes::LibraryFinding> libraries;
  int threads_per_rank = 0;  // the most threads one rank had at once
  int runtime_threads = 0;   // of them, the most that were the runtimes' own (event loops, ...)
  std::map<std::string, int> thread_names;  // thread name -> most threads of it in one rank
  // Processes the ranks started (a DataLoader's workers, a multiprocessing pool): the most seen
  // at once below one rank, and their names (comm) with the most of each at once.
  int child_processes = 0;
  std::map<std::string, int> child_names;
  // The variables the command's processes read through getenv (ProbeOptions::env_reads_library),
  // with the libraries that read each; nullopt when nothing was recorded (no library).
  std::optional<probes::EnvReads> env_reads;
  // What the ranks' BLAS and OpenMP libraries said they run (ProbeOptions::library_query_library);
  // nullopt when none reported.
  std::optional<probes::LibrariesSummary> library_answers;
  // "CPU time per library: rank 0: 71% libopenblas, ..." over the probe run (per-CPU perf
  // events, probes/cpu_profile.h), or why not sampled; "" when ProbeOptions::cpu_profile is off.
  std::string cpu_time;
  // The same per library (every library, not only the line's top ones): its mean share of the
  // ranks' samples, 0..1. Empty when not sampled.
  std::map<std::string, double> library_time;
  std::vector<ProbeInput> inputs;       // read from the working folder, not written
  std::vector<std::string> outputs;     // created or written there
  std::vector<ResultLine> results;      // from stdout, stderr and the outputs, best first
  std::vector<ProgressLines> progress;  // from stdout and stderr as they came, best first
};

// Runs `argv` (the command as init was given it, relative paths already absolute; starting with
// mpirun when `has_mpirun`, whose options a trial's launch adds are added) as described above. A
// command that cannot start is `not_run` with the reason; it is not an error here (the caller
// decides).
ProbeFindings probe_program(const std::vector<std::string>& argv, bool has_mpirun,
                            const ProbeOptions& options);

}  // namespace tune::tuner
