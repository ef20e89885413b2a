#include "tuner/init/init_study.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <set>

#include "probes/predict.h"
#include "tuner/base/text.h"
#include "tuner/init/init_header.h"
#include "tuner/init/init_kernels.h"
#include "tuner/init/knob_choice.h"
#include "tuner/init/knob_order.h"
#include "tuner/init/objective_proposal.h"
#include "tuner/study/patterns.h"

namespace tune::tuner {
namespace {

// A study name from the script's file name: its letters, digits, '.', '_' and '-' (anything else
// becomes '_'), at most 64 of them; "study" when nothing is left. The name is a folder of the
// output and a key in a shared database: a script called anything must still give a valid one.
std::string study_name_from(const std::string& stem) {
  const std::string out = plain_name(stem, 64);
  if (out.empty() || out.find_first_not_of('.') == std::string::npos) return "study";
  return out;
}

Result<int> total_ranks(const InitRequest& request, const InitCommand& command) {
  int from_command = 0;
  if (command.has_mpirun && !command.mpirun.n.empty()) {
    auto n = probes::parse_int(command.mpirun.n);
    if (!n || *n < 1)
      return std::unexpected(fmt::format("mpirun -n '{}': not a rank count", command.mpirun.n));
    from_command = *n;
  }
  if (request.ranks > 0 && from_command > 0 && request.ranks != from_command)
    return std::unexpected(
        fmt::format("--ranks {} and the command's mpirun -n {} differ: give the ranks once",
                    request.ranks, from_command));
  return request.ranks > 0 ? request.ranks : std::max(from_command, 1);
}

}  // namespace

Result<InitPlan> plan_init_study(const InitRequest& request, const InitCommand& command,
                                 const ProgramInfo& program, const probes::Topology& topo,
                                 const probes::KnobCatalog& catalog) {
  auto ranks = total_ranks(request, command);
  if (!ranks) return std::unexpected(ranks.error());
  if (!request.throughput_regex.empty()) {
    if (auto why = regex_error(request.throughput_regex))
      return std::unexpected(fmt::format("--throughput-regex: {} (RE2 syntax)", *why));
  }
  auto flags = named_flags(request, catalog);
  if (!flags) return std::unexpected(flags.error());
  const bool spans_hosts = !command.mpirun.host.empty() || !command.mpirun.hostfile.empty();
  int per_node = *ranks;
  if (auto n = probes::parse_int(command.mpirun.npernode); n && *n > 0) {
    per_node = *n;
  } else if (spans_hosts) {
    per_node = 1;  // unknown: the hostfile is read at launch; ranges stay wide
  }
  std::vector<std::string> frameworks = program.frameworks;
  for (const auto& f : request.frameworks) {
    if (!contains(frameworks, f)) frameworks.push_back(f);
  }
  for (const auto& [flag, knob] : *flags) {
    for (const auto& p : knob->programs) {
      if (p != "any" && !contains(frameworks, p)) frameworks.push_back(p);
    }
  }
  const bool launch_mpirun = command.has_mpirun || *ranks > 1;
  if (launch_mpirun) frameworks.emplace_back("openmpi");
  frameworks.emplace_back("any");

  const ProbeFindings* probe = program.probe && program.probe->ran ? &*program.probe : nullptr;
  std::optional<std::set<std::string>> found_pools;
  if (probe) {
    found_pools.emplace();
    for (const auto& lib : probe->libraries)
      found_pools->insert(lib.pools.begin(), lib.pools.end());
  }
  probes::KnobContext ctx = probes::knob_context(topo, per_node);
  ctx.file_exists = request.file_exists;
  InitPlan plan;
  for (const auto& a : command.program) plan.command.push_back(escape_braces(a));
  plan.mpirun = launch_mpirun;
  plan.launch = command.mpirun;
  plan.launch.n = std::to_string(*ranks);
  if (launch_mpirun && per_node == *ranks) {
    // Ranks per node: a knob of the catalog (ranks_per_node), written as an option rather than
    // a parameter, since it changes what the job computes, not only how fast.
    std::vector<std::string> counts;
    for (int n = 1; n <= topo.core_count() && counts.size() < 6; n *= 2)
      counts.push_back(std::to_string(n));
    const auto* knob = catalog.find("ranks_per_node");
    plan.ranks_note = fmt::format(
        "Ranks per node is a knob too, not tuned here: {}. To tune it anyway: n: \"{{ranks}}\" "
        "and under params: ranks: [{}] (1 to the {} cores, doubling), and compare rates per "
        "sample.",
        knob != nullptr ? knob->note : std::string("the global batch changes with it"),
        fmt::join(counts, ", "), topo.core_count());
  }
  for (auto& [name, value] : plan.launch.env) value = escape_braces(value);
  for (auto& [name, value] : plan.launch.mca) value = escape_braces(value);
  for (auto& e : plan.launch.extra) e = escape_braces(e);
  if (launch_mpirun && per_node > topo.core_count()) plan.launch.oversubscribe = true;
  plan.env = plan.launch.env;
  plan.launch.env.clear();
  plan.regex = request.throughput_regex;
  plan.timeout = request.trial_timeout;
  plan.name = request.name.empty() ? study_name_from(program.stem) : request.name;
  const KnobChoiceInput choice{catalog, ctx, frameworks, found_pools,
                               probe && probe->env_reads ? &*probe->env_reads : nullptr};
  if (auto ok = choose_knobs(plan, choice, *flags, command, program); !ok)
    return std::unexpected(ok.error());
  plan.header = init_header(request, program, topo, *ranks, per_node, frameworks);
  if (probe) {
    probe_header(*probe, plan.header);
    env_reads_header(*probe, catalog, plan.header);
    plan.program = program_section(program, *probe, catalog, request.program_key);
    probe_files_and_objective(request, *probe, plan);
    if (probe->library_answers)
      for (const auto& offer : program.kernels)
        plan_kernel_param(plan, *probe->library_answers, offer);
    order_by_library_time(plan, probe->library_time, catalog);
  }
  return plan;
}

Result<std::string> render_init_study(const InitRequest& request, const InitCommand& command,
                                      const ProgramInfo& program, const probes::Topology& topo,
                                      const probes::KnobCatalog& catalog) {
  auto plan = plan_init_study(request, command, program, topo, catalog);
  if (!plan) return std::unexpected(plan.error());
  return write_init_yaml(*plan);
}

}  // namespace tune::tuner
