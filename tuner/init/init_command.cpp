#include "tuner/init/init_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <unistd.h>

#include "probes/mpirun_flags.h"
#include "probes/predict.h"
#include "tuner/base/text.h"
#include "tuner/launch/pool_defaults.h"
#include "tuner/launch/program_identity.h"

namespace tune::tuner {

namespace {

namespace fs = std::filesystem;

bool is_mpirun(const std::string& arg0) {
  static const std::set<std::string> k_names = {"mpirun",  "mpiexec",        "orterun",
                                                "prterun", "mpirun.openmpi", "mpiexec.openmpi"};
  return k_names.contains(fs::path(arg0).filename().string());
}

// The study-file field an mpirun option fills, or nullptr when it goes to `extra`.
std::string* mpirun_field(InitMpirun& m, probes::MpirunSetting setting) {
  switch (setting) {
    case probes::MpirunSetting::n:
      return &m.n;
    case probes::MpirunSetting::npernode:
      return &m.npernode;
    case probes::MpirunSetting::bind_to:
      return &m.bind_to;
    case probes::MpirunSetting::map_by:
      return &m.map_by;
    case probes::MpirunSetting::host:
      return &m.host;
    case probes::MpirunSetting::hostfile:
      return &m.hostfile;
    default:
      return nullptr;
  }
}

// Sorts mpirun's options args[begin, end) into `m`, by the probes' one table of mpirun's
// spellings (probes/mpirun_flags.h), which also found `end`; options the study file has no key
// for go to `extra` verbatim, a value right after its option.
void read_mpirun(const std::vector<std::string>& args, std::size_t begin, std::size_t end,
                 InitMpirun& m) {
  using probes::MpirunSetting;
  for (std::size_t i = begin; i < end; ++i) {
    const std::string& a = args[i];
    if (a == "--") continue;
    const probes::MpirunFlag* whole = probes::find_mpirun_flag(a);
    const MpirunSetting switch_setting = whole ? whole->setting : MpirunSetting::other;
    if (switch_setting == MpirunSetting::allow_run_as_root) continue;
    if (switch_setting == MpirunSetting::oversubscribe) {
      m.oversubscribe = true;
      continue;
    }
    std::string key = a, value;
    const bool inline_value = a.starts_with("--") && a.contains('=');
    if (inline_value) {
      key = a.substr(0, a.find('='));
      value = a.substr(a.find('=') + 1);
    }
    const probes::MpirunFlag* flag = probes::find_mpirun_flag(key);
    const MpirunSetting setting = flag ? flag->setting : MpirunSetting::other;
    if (setting == MpirunSetting::mca && !inline_value && i + 2 < end) {
      m.mca.emplace_back(args[i + 1], args[i + 2]);
      i += 2;
      continue;
    }
    std::string* field = mpirun_field(m, setting);
    if (field == nullptr && setting != MpirunSetting::env) {
      m.extra.push_back(a);
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= end) break;
      value = args[++i];
    }
    if (field != nullptr) {
      *field = value;
    } else if (const auto eq = value.find('='); eq != std::string::npos) {
      m.env.emplace_back(value.substr(0, eq), value.substr(eq + 1));
    } else {
      m.extra.insert(m.extra.end(), {"-x", value});  // exports tune's own value: keep it
    }
  }
}

bool is_python(const std::string& arg0) {
  return fs::path(arg0).filename().string().starts_with("python");
}

// The script a Python command runs: the first argument that is not an interpreter option.
std::string python_script(const std::vector<std::string>& program) {
  for (std::size_t i = 1; i < program.size(); ++i) {
    const auto& a = program[i];
    if (a == "-m" || a == "-c") return "";  // a module or inline code: no file to read
    if (!a.starts_with("-")) return a;
  }
  return "";
}

std::string head_of_file(const std::string& path, std::size_t bytes) {
  std::ifstream in(path, std::ios::binary);
  std::string text(bytes, '\0');
  in.read(text.data(), static_cast<std::streamsize>(bytes));
  text.resize(static_cast<std::size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  return text;
}

void add_framework(ProgramInfo& info, const std::string& framework, std::string note) {
  if (std::find(info.frameworks.begin(), info.frameworks.end(), framework) != info.frameworks.end())
    return;
  info.frameworks.push_back(framework);
  info.notes.push_back(std::move(note));
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

// The top-level modules an import line names: "import numpy as np, torch" -> numpy, torch;
// "from torch.nn import Linear" -> torch. Anything else names none.
std::vector<std::string> imported_modules(const std::string& raw) {
  std::string line = trim(raw.substr(0, raw.find('#')));
  std::vector<std::string> out;
  auto root = [](const std::string& dotted) {
    const std::string name = trim(dotted);
    return name.substr(0, name.find_first_of(". \t"));
  };
  if (line.starts_with("from ")) {
    if (const auto imp = line.find(" import "); imp != std::string::npos)
      out.push_back(root(line.substr(5, imp - 5)));
    return out;
  }
  if (!line.starts_with("import ")) return out;
  std::istringstream items(line.substr(7));
  for (std::string item; std::getline(items, item, ',');) {
    const std::string name = root(item);
    if (!name.empty()) out.push_back(name);
  }
  return out;
}

}  // namespace

// Frameworks a script imports, by its import lines (one module or several per line), and an
// NCCL backend named in it.
void detect_imports(const std::string& text, ProgramInfo& info) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    for (const auto& module : imported_modules(line)) {
      if (module == "torch" || module == "chainer")
        add_framework(info, module,
                      fmt::format("{}: the script imports it ('{}')", module, trim(line)));
    }
  }
  for (const char* needle : {"backend=\"nccl\"", "backend='nccl'"}) {
    if (text.contains(needle))
      add_framework(info, "nccl", fmt::format("nccl: the script has '{}'", needle));
  }
}

Result<InitCommand> split_init_command(const std::vector<std::string>& argv) {
  if (argv.empty())
    return std::unexpected("no command given: tune init [OPTIONS] -- COMMAND [ARGS...]");
  InitCommand cmd;
  if (!is_mpirun(argv[0])) {
    cmd.program = argv;
    return cmd;
  }
  cmd.has_mpirun = true;
  cmd.mpirun.program = argv[0];
  const std::vector<std::string> args(argv.begin() + 1, argv.end());
  probes::MpirunOptions options;
  const std::size_t program = read_mpirun_options(args, options);
  if (program >= args.size())
    return std::unexpected(fmt::format("{} is given no program to run", argv[0]));
  read_mpirun(args, 0, program, cmd.mpirun);
  cmd.program.assign(args.begin() + static_cast<std::ptrdiff_t>(program), args.end());
  return cmd;
}

std::vector<std::string> absolute_paths(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& a = args[i];
    const bool is_flag = a.starts_with("-");
    const auto eq = a.find('=');
    const std::string prefix = is_flag && eq != std::string::npos ? a.substr(0, eq + 1) : "";
    const std::string value = is_flag ? (prefix.empty() ? "" : a.substr(eq + 1)) : a;
    std::error_code ec;
    // The program itself (argv[0]) is looked up on PATH unless it names a file here.
    const bool path_like = i > 0 || value.contains('/');
    if (!value.empty() && path_like && fs::path(value).is_relative() && fs::exists(value, ec)) {
      out.push_back(prefix + fs::absolute(value, ec).lexically_normal().string());
    } else {
      out.push_back(a);
    }
  }
  return out;
}

ProgramInfo inspect_program(const std::vector<std::string>& program, const ProbeFindings* probe) {
  ProgramInfo info;
  const std::string exe = fs::path(program.at(0)).filename().string();
  info.display = exe;
  info.stem = exe;
  if (exe == "tune-trainer" || program[0] == "{tune_trainer}") {
    info.display = "tune-trainer";
    info.frameworks = {"tune-trainer"};
    info.notes.emplace_back("tune-trainer: the bundled trainer");
    for (const auto& a : program) {
      if (a == "--allreduce=nccl" || a == "--device=cuda") {
        info.frameworks.emplace_back("nccl");
        info.notes.push_back(fmt::format("nccl: the trainer is given {}", a));
        break;
      }
    }
    return info;
  }
  const std::string script = is_python(exe) ? python_script(program) : "";
  if (!script.empty()) {
    info.display = fs::path(script).filename().string();
    info.stem = fs::path(script).stem().string();
  }
  // The script's text still speaks when the run showed nothing: it failed, or was stopped
  // before its ranks had mapped a library tune knows.
  const bool probe_decides = probe != nullptr && probe->ran && !probe->libraries.empty() &&
                             (probe->bounded || probe->exit_code == 0);
  if (probe != nullptr && probe->ran) {
    // What the ranks mapped says what they are, whatever the text says.
    for (const auto& lib : probe->libraries) {
      if (!lib.program.empty() && lib.program != "openmpi" &&
          std::find(info.frameworks.begin(), info.frameworks.end(), lib.program) ==
              info.frameworks.end())
        info.frameworks.push_back(lib.program);  // the header names the library
    }
    info.probe = *probe;
  }
  if (script.empty()) return info;
  ProgramInfo text;
  detect_imports(head_of_file(script, 1u << 20), text);
  for (std::size_t i = 0; i < text.frameworks.size(); ++i) {
    // Chainer maps no library of its own (Python over NumPy/CuPy): only its import tells it.
    if (!probe_decides || text.frameworks[i] == "chainer")
      add_framework(info, text.frameworks[i], text.notes[i]);
  }
  return info;
}

Result<void> check_program_exists(const std::vector<std::string>& program) {
  if (program.empty()) return std::unexpected("no program given");
  const std::string& exe = program[0];
  std::error_code ec;
  if (exe.contains('{')) return {};  // a placeholder ({tune_trainer}): the study resolves it
  if (exe.contains('/')) {
    if (!fs::is_regular_file(exe, ec))
      return std::unexpected(fmt::format("program '{}' does not exist", exe));
    if (::access(exe.c_str(), X_OK) != 0)
      return std::unexpected(fmt::format("program '{}' is not executable", exe));
  } else if (find_in_path(exe, trial_environment(LaunchRequest{})).empty()) {
    return std::unexpected(fmt::format("program '{}' is not found on PATH", exe));
  }
  if (is_python(exe)) {
    const std::string script = python_script(program);
    if (!script.empty() && !fs::is_regular_file(script, ec))
      return std::unexpected(fmt::format("script '{}' does not exist", script));
  }
  return {};
}

void measure_pool_defaults(const std::vector<std::string>& program, ProgramInfo& info,
                           double timeout_s) {
  const bool torch =
      std::find(info.frameworks.begin(), info.frameworks.end(), "torch") != info.frameworks.end();
  if (program.empty() || !is_python(program[0]) || !torch) return;
  MeasuredPools pools = measure_torch_pools(program[0], timeout_s);
  info.pool_defaults.insert(pools.defaults.begin(), pools.defaults.end());
  info.notes.insert(info.notes.end(), pools.notes.begin(), pools.notes.end());
}

}  // namespace tune::tuner
