// `tune init [OPTIONS] -- COMMAND...`: the subcommand's flags, the one optional question asked
// on a terminal, and writing the file; what goes into the study is tuner/init/init_study.h's.
#include <stdlib.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <fmt/format.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "probes/env_reads.h"
#include "probes/knob_catalog.h"
#include "probes/predict.h"
#include "probes/thread_origin.h"
#include "probes/topology.h"
#include "tuner/base/file_write.h"
#include "tuner/base/install_layout.h"
#include "tuner/base/text.h"
#include "tuner/cli/subcommands.h"
#include "tuner/init/init_kernels.h"
#include "tuner/init/init_plan.h"
#include "tuner/init/init_study.h"
#include "tuner/launch/launcher.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

struct InitArgs {
  InitRequest request;
  std::string output;  // "" = stdout
  bool force = false;
  bool no_input = false;
  bool no_probe = false;
  std::string probe_for = "10s";  // the probe run's bound
};

// The program's --help (tuner/init/help_reader.h): the flags that size its pools, for those the
// command does not type. Not under --no-probe, which runs nothing.
std::optional<ProgramHelp> ask_help(const InitArgs& args, const InitCommand& command) {
  const std::string exe = fs::path(command.program.at(0)).filename().string();
  if (args.no_probe || exe == "tune-trainer" || exe.contains('{')) return std::nullopt;
  ProgramHelp help = read_program_help(command.program);
  if (!help.pool.empty()) {
    std::vector<std::string> flags;
    for (const auto& f : help.pool) flags.push_back(f.option.flag);
    std::cerr << fmt::format("tune init: its --help lists {}\n", fmt::join(flags, ", "));
  }
  return help;
}

// The probe run (tuner/init/init_probe.h): the command as given, its program's relative paths
// made absolute, for at most `seconds`.
std::optional<ProbeFindings> probe(const InitArgs& args, const InitCommand& command, double seconds,
                                   const probes::Topology& topo) {
  // The bundled trainer is known by name (its pools are the catalog's); nothing to look at.
  const std::string exe = fs::path(command.program.at(0)).filename().string();
  if (args.no_probe || exe == "tune-trainer" || exe.contains('{')) return std::nullopt;
  const auto& given = args.request.command;
  std::vector<std::string> argv(given.begin(),
                                given.end() - static_cast<std::ptrdiff_t>(command.program.size()));
  argv.insert(argv.end(), command.program.begin(), command.program.end());
  // A job that ends within a few probe lengths is scored by the figure it prints at its end; a
  // job still starting at the bound (torch on a loaded machine) is given the time to show its
  // progress lines, which decide whether its trials can be measured over a window. Neither
  // matters when the user names the objective.
  const double end_wait = args.request.throughput_regex.empty() ? 3 * seconds : 0;
  std::cerr << fmt::format(
      "tune init: running the command for {}{} to see what it starts and prints{} (--no-probe "
      "skips this)\n",
      args.probe_for,
      end_wait > seconds ? fmt::format(" (up to {:g}s to see whether it ends)", end_wait) : "",
      args.request.line_buffering ? ", its output line-buffered as by stdbuf -oL" : "");
  ProbeOptions options;
  options.seconds = seconds;
  options.end_wait_s = end_wait;
  if (args.request.line_buffering) options.env = args.request.line_buffering->env;
  options.env_reads_library = plugin_library(probes::k_env_reads_library).string();
  options.library_query_library = plugin_library(probes::k_thread_origins_library).string();
  // As the study's launch will: more ranks on this node than cores need --oversubscribe.
  const auto per_node = probes::parse_int(
      command.mpirun.npernode.empty() ? command.mpirun.n : command.mpirun.npernode);
  options.oversubscribe = command.has_mpirun && command.mpirun.host.empty() &&
                          command.mpirun.hostfile.empty() && per_node &&
                          *per_node > topo.core_count();
  ProbeFindings found = probe_program(argv, command.has_mpirun, options);
  if (interrupted()) return found;
  if (!found.ran) {
    std::cerr << fmt::format(
        "tune init: the probe run could not start ({}); the program's text decides instead\n",
        printable(found.not_run));
    return std::nullopt;
  }
  std::vector<std::string> libs;
  for (const auto& lib : found.libraries) libs.push_back(lib.what);
  std::cerr << fmt::format(
      "tune init: probe run {:.1f} s, {}; {} rank(s) mapped: {}\n", found.seconds,
      found.bounded ? "stopped at the bound" : fmt::format("exited {}", found.exit_code),
      found.ranks, libs.empty() ? "nothing tune knows" : fmt::format("{}", fmt::join(libs, ", ")));
  if (found.library_answers) {
    for (const auto& lib : found.library_answers->libraries)
      std::cerr << "tune init: library: " << printable(lib.text) << '\n';
    for (const auto& note : found.library_answers->notes)
      std::cerr << "tune init: note: " << printable(note) << '\n';
  }
  if (!found.cpu_time.empty()) std::cerr << "tune init: " << printable(found.cpu_time) << '\n';
  if (!found.bounded && found.exit_code != 0)
    std::cerr << fmt::format(
        "tune init: warning: the command exited {} in the probe run{}; check the study's "
        "command before running it\n",
        found.exit_code,
        found.last_error_line.empty() ? ""
                                      : " (its last error line: " + found.last_error_line + ")");
  return found;
}

// On a terminal, and only there, init offers to score a throughput line instead of wall time.
void ask_throughput(InitArgs& args) {
  if (args.no_input || !args.request.throughput_regex.empty() || !isatty(STDIN_FILENO) ||
      !isatty(STDERR_FILENO))
    return;
  std::cerr << "Does the program print its throughput? A regex whose first group is the number\n"
               "(e.g. samples/s: ([0-9.]+)), or Enter to score the run's wall time: "
            << std::flush;
  std::string line;
  if (std::getline(std::cin, line)) args.request.throughput_regex = line;
}

std::string this_host() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

int run_init(InitArgs& args) {
  if (!args.output.empty() && args.output != "-" && !args.force) {
    std::error_code ec;
    if (fs::exists(args.output, ec))
      throw BadInput(fmt::format("{} exists; pass --force to overwrite it", args.output));
  }
  if (auto d = parse_duration(args.request.trial_timeout); !d)
    throw BadInput("--trial-timeout: " + d.error());
  if (!args.request.name.empty()) {
    if (auto why = study_name_problem(args.request.name))
      throw BadInput("--name " + *why + ": the name is one folder of the output (tune-out/NAME)");
  }
  const auto probe_s = parse_duration(args.probe_for);
  if (!probe_s || *probe_s <= 0)
    throw BadInput("--probe-for '" + args.probe_for +
                   "': " + (probe_s ? std::string("must be more than 0") : probe_s.error()));
  auto command = unwrap_input(split_init_command(args.request.command));
  command.program = absolute_paths(command.program);
  if (auto ok = check_program_exists(command.program); !ok) throw BadInput(ok.error());
  // Ctrl-C stops the probe run's tree (and removes its folder) instead of leaving both.
  auto topo = probes::read_topology();
  if (!topo) throw std::runtime_error("init: reading the topology: " + topo.error());
  install_interrupt_handlers();
  // The probe run reads progress lines as they come, and a window's trials must too.
  const char* path_var = std::getenv("PATH");
  const char* preload = std::getenv("LD_PRELOAD");
  args.request.line_buffering = line_buffering(path_var ? path_var : "", preload ? preload : "");
  const auto found = probe(args, command, *probe_s, *topo);
  if (interrupted()) {
    std::cerr << "tune init: interrupted; nothing written\n";
    return k_exit_interrupted;
  }
  // The question is for a program whose output showed no result line.
  if (!found || found->results.empty()) ask_throughput(args);
  ProgramInfo program = inspect_program(command.program, found ? &*found : nullptr);
  if (found && found->library_answers) {
    program.kernels = check_probed_kernels(*found->library_answers);
    for (const auto& offer : program.kernels)
      for (const auto& line : kernel_offer_lines(offer))
        std::cerr << "tune init: " << printable(line) << '\n';
  }
  program.help = ask_help(args, command);
  measure_pool_defaults(command.program, program);
  args.request.generated_by = "on " + this_host();
  const bool to_stdout = args.output.empty() || args.output == "-";
  std::error_code ec;
  args.request.source_dir = fs::current_path(ec).string();
  args.request.study_dir =
      to_stdout ? args.request.source_dir
                : fs::absolute(args.output, ec).parent_path().lexically_normal().string();
  InitPlan plan =
      unwrap_input(plan_init_study(args.request, command, program, *topo, probes::knob_catalog()));
  std::string text = write_init_yaml(plan);
  // What init writes must load as any study does; a failure here is init's own bug. The
  // `program:` section is read by the study parser of builds that have the prediction's side
  // of it; this one writes it as comments when its parser refuses the key.
  const std::string where = to_stdout ? "<init>" : args.output;
  auto check = parse_study_spec(text, where);
  if (!check && check.error().contains("key 'program")) {
    // A parser that knows the key and refuses what init wrote in it is init's bug, but the
    // rest of the study is still good: keep it, and say so.
    if (!check.error().contains("unknown key"))
      std::cerr << "tune init: warning: the program: section was refused (" << check.error()
                << "); it is written as comments\n";
    plan.program.commented = true;
    text = write_init_yaml(plan);
    check = parse_study_spec(text, where);
  }
  if (!check) throw std::runtime_error("init wrote a study that does not load: " + check.error());
  if (const auto rules = init_rules_section(*check, *topo); !rules.empty()) {
    text += "\n" + rules;
    check = parse_study_spec(text, where);
    if (!check) throw std::runtime_error("init wrote rules that do not load: " + check.error());
  }
  if (to_stdout) {
    std::cout << text;
    return 0;
  }
  // Whole or not at all, as report and export write: an old study file is never left cut short.
  if (auto written = write_file_atomically(args.output, text, {.replace = args.force}); !written)
    throw std::runtime_error(fmt::format("-o {}: {}", args.output, written.error()));
  std::cerr << fmt::format("tune init: wrote {}; run it with: tune --trials 30 {}\n", args.output,
                           args.output);
  return 0;
}

}  // namespace

std::vector<Subcommand> add_init_commands(CLI::App& app) {
  auto args = std::make_shared<InitArgs>();
  auto* init = app.add_subcommand("init", "Write a ready study for your own training command");
  set_usage(init, {"tune init [OPTIONS] -- COMMAND..."});
  set_help_footer(
      init,
      {{"tune init --ranks 2 -o study.yaml -- python3 train.py --epochs 1",
        "a study that runs train.py on 2 MPI ranks per trial"},
       {"tune init -o study.yaml -- mpirun -n 2 --bind-to none python3 train.py",
        "the same from your own mpirun line (the ranks are taken from -n)"},
       {"tune init --throughput-regex 'samples/s: ([0-9.]+)' -o study.yaml -- ./train",
        "maximize the throughput the program prints, not minimize its wall time"},
       {"tune init -o hpcc.yaml -- mpirun -n 2 hpcc",
        "in a folder with hpccinf.txt: staged into every trial, HPL_Tflops read from the "
        "hpccoutf.txt it writes"}},
      "init runs the command briefly (--probe-for, the whole tree stopped after) to see what\n"
      "its ranks map, start, read and print, reads this machine, and writes a commented study;\n"
      "then run tune --trials 30 study.yaml.");
  init->add_option("COMMAND", args->request.command,
                   "The command one trial runs, after `--` (it may start with mpirun)")
      ->required();
  init->add_option("-o,--output", args->output, "Study file to write (default: stdout)");
  init->add_flag("--force", args->force, "Overwrite the output file");
  init->add_option("--ranks", args->request.ranks,
                   "MPI ranks of one trial (default: the command's mpirun -n, else 1)")
      ->check(CLI::Range(1, 1 << 20));
  init->add_option("--name", args->request.name, "Study name (default: the program's name)");
  init->add_option("--throughput-regex", args->request.throughput_regex,
                   "Score the first group of the last match in stdout, maximized (default: the "
                   "result line the probe run found, else the trial's wall time, minimized)");
  init->add_option("--knob", args->request.knob_flags,
                   "FLAG=KNOB: the program's flag that sets a catalog knob, e.g. "
                   "threads=torch_intra_op_threads (repeatable)")
      ->allow_extra_args(false);
  init->add_option("--framework", args->request.frameworks,
                   "A framework the program uses when init cannot tell (torch, chainer, ...)")
      ->check(CLI::IsMember(probes::knob_catalog().programs()))
      ->allow_extra_args(false);
  init->add_option("--trial-timeout", args->request.trial_timeout,
                   "Each trial's time limit, written as the study file's timeout: (default 1h)")
      ->type_name("DURATION");
  init->add_flag("--no-input", args->no_input, "Ask nothing, even on a terminal");
  init->add_option("--probe-for", args->probe_for,
                   "Run the command this long to see what it maps, starts, reads and prints "
                   "(up to 3x as long to see whether it ends, without --throughput-regex: a job "
                   "that does is scored by the figure it prints at its end); the whole tree is "
                   "stopped after (default 10s)")
      ->type_name("DURATION");
  init->add_flag("--no-probe", args->no_probe,
                 "Do not run the command: judge the program by its text (a script's imports)");
  return {{init, [args]() { return run_init(*args); }}};
}

}  // namespace tune::tuner
