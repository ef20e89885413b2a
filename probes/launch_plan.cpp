// Reading a launch: mpirun's options from an argv (their spellings: probes/mpirun_flags.h), and
// the LaunchPlan they make, hosts and the ranks on each included (declarations in
// probes/predict.h and probes/nodes.h).
#include <algorithm>
#include <optional>
#include <thread>

#include "probes/mpirun_flags.h"
#include "probes/nodes.h"
#include "probes/predict.h"

namespace tune::probes {

std::size_t read_mpirun_options(const std::vector<std::string>& args, MpirunOptions& options) {
  // Options with values (probes/mpirun_flags.h) take them along; anything else is a switch.
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.empty() || a[0] != '-') break;
    std::string key = a, value;
    bool inline_value = false;
    if (a.starts_with("--") && a.find('=') != std::string::npos) {
      key = a.substr(0, a.find('='));
      value = a.substr(a.find('=') + 1);
      inline_value = true;
    }
    const MpirunFlag* flag = find_mpirun_flag(key);
    if (flag != nullptr && flag->setting == MpirunSetting::hwthread_cpus)
      options.use_hwthread_cpus = true;
    if (flag == nullptr || flag->values == 0) continue;
    if (flag->values == 2) {
      i += 2;
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= args.size()) break;  // a value-less last option: taken as the program
      value = args[++i];
    }
    switch (flag->setting) {
      case MpirunSetting::n:
        options.n = value;
        break;
      case MpirunSetting::npernode:
        options.npernode = value;
        break;
      case MpirunSetting::bind_to:
        options.bind_to = value;
        break;
      case MpirunSetting::map_by:
        options.map_by = value;
        break;
      case MpirunSetting::host:
        options.host = value;
        break;
      case MpirunSetting::hostfile:
        options.hostfile = value;
        break;
      case MpirunSetting::env:
        if (const auto eq = value.find('='); eq != std::string::npos)
          options.env[value.substr(0, eq)] = value.substr(eq + 1);
        break;
      default:
        break;
    }
  }
  return std::min(i, args.size());
}

LaunchPlan launch_plan_from_mpirun(const MpirunOptions& options,
                                   std::vector<std::string> program_argv,
                                   std::map<std::string, std::string> env) {
  LaunchPlan plan;
  plan.uses_mpirun = true;
  plan.bind_to = options.bind_to;
  plan.map_by = options.map_by;
  plan.hwthread_slots = options.use_hwthread_cpus;
  plan.program_argv = std::move(program_argv);
  plan.env = std::move(env);
  for (const auto& [k, v] : options.env) plan.env[k] = v;
  std::vector<HostSlots> hosts = parse_host_list(options.host);
  if (!options.hostfile.empty()) {
    auto file = read_hostfile(options.hostfile);
    if (!file) {
      plan.notes.push_back(file.error());
    } else if (hosts.empty()) {
      hosts = std::move(*file);
    }
  }
  const int n = parse_int(options.n).value_or(0);
  int npernode = parse_int(options.npernode).value_or(0);
  if (npernode <= 0) npernode = ppr_per_node(options.map_by);
  if (!hosts.empty()) {
    // Hostfile lines without slots= get the node's cores from Open MPI; this node's logical
    // CPUs stand in for them (the prediction re-reads them from the topology it predicts on).
    const int default_slots = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    plan.hosts = hosts;
    plan.layout = map_ranks_to_nodes(hosts, n, npernode, options.map_by, default_slots);
    int total = 0;
    plan.nodes = 0;
    plan.ranks_per_node = 1;
    for (const NodeRanks& node : plan.layout) {
      if (node.ranks.empty()) continue;
      total += static_cast<int>(node.ranks.size());
      plan.nodes += 1;
      plan.ranks_per_node = std::max(plan.ranks_per_node, static_cast<int>(node.ranks.size()));
    }
    plan.nodes = std::max(1, plan.nodes);
    plan.n = std::max(1, total);
    return plan;
  }
  const int total = n > 0 ? n : std::max(1, npernode);
  if (npernode > 0) {
    plan.ranks_per_node = npernode;
    plan.nodes = std::max(1, (total + npernode - 1) / npernode);
  } else {
    plan.ranks_per_node = total;
  }
  plan.n = total;
  return plan;
}

LaunchPlan launch_plan_from_argv(const std::vector<std::string>& argv,
                                 const std::map<std::string, std::string>& env) {
  LaunchPlan one_rank;
  one_rank.env = env;
  if (argv.empty()) return one_rank;
  const std::string base = argv[0].substr(argv[0].rfind('/') + 1);
  if (base != "mpirun" && base != "mpiexec" && base != "orterun" && base != "prterun") {
    one_rank.program_argv = argv;
    return one_rank;
  }
  const std::vector<std::string> args(argv.begin() + 1, argv.end());
  MpirunOptions options;
  const std::size_t program = read_mpirun_options(args, options);
  return launch_plan_from_mpirun(
      options, {args.begin() + static_cast<std::ptrdiff_t>(program), args.end()}, env);
}

}  // namespace tune::probes
