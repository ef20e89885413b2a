#include "tuner/init/init_header.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

namespace tune::tuner {

using probes::Knob;

// The processes the ranks started, for a comment: "2 child processes per rank (python3 x2)".
std::string children_evidence(const ProbeFindings& probe) {
  std::vector<std::string> names;
  for (const auto& [name, n] : probe.child_names) {
    if (names.size() < 4) names.push_back(fmt::format("{} x{}", name, n));
  }
  return fmt::format("the probe run saw the ranks start {} child process(es) each ({})",
                     probe.child_processes, fmt::join(names, ", "));
}

std::vector<std::string> init_header(const InitRequest& request, const ProgramInfo& program,
                                     const probes::Topology& topo, int ranks, int per_node,
                                     const std::vector<std::string>& frameworks) {
  std::vector<std::string> h;
  h.push_back("Written by `tune init`" +
              (request.generated_by.empty() ? "" : " (" + request.generated_by + ")") + " for:");
  h.push_back("  " + fmt::format("{}", fmt::join(request.command, " ")));
  const int per_rank = std::max(1, topo.pu_count() / std::max(per_node, 1));
  h.push_back(fmt::format(
      "Machine (hwloc): {} PUs, {} cores, {} package(s); {} rank(s), {} per "
      "node: {} PU(s) per rank.",
      topo.pu_count(), topo.core_count(), topo.packages.size(), ranks, per_node, per_rank));
  std::vector<std::string> shown;
  for (const auto& f : frameworks) {
    if (f != "any") shown.push_back(f);
  }
  h.push_back(fmt::format("Program: {}; knobs of: {}", program.display,
                          shown.empty() ? "any program (no framework recognised)"
                                        : fmt::format("{}", fmt::join(shown, ", "))));
  for (const auto& n : program.notes) h.push_back("  " + n);
  return h;
}

// What the probe run saw, for the header: how it ran, each library that told something.
void probe_header(const ProbeFindings& probe, std::vector<std::string>& h) {
  h.push_back(fmt::format(
      "Probe run: the command ran {:.1f} s ({}); {} rank(s) seen.", probe.seconds,
      probe.bounded ? "stopped at the probe's bound" : fmt::format("exited {}", probe.exit_code),
      probe.ranks));
  for (const auto& lib : probe.libraries) {
    std::string line = fmt::format("  ranks map {}: {}", lib.path, lib.what);
    if (!lib.pools.empty()) line += fmt::format(" (pool {})", fmt::join(lib.pools, ", "));
    h.push_back(line);
    if (!lib.note.empty()) h.push_back("    " + lib.note);
  }
  if (probe.libraries.empty())
    h.push_back("  the ranks map no OpenMP runtime, BLAS, framework or MPI library tune knows");
  if (probe.child_processes > 0) h.push_back("  " + children_evidence(probe));
}

// What the getenv recorder saw, for the header: the catalog's variables among the names the
// processes read, and what it cannot see.
void env_reads_header(const ProbeFindings& probe, const probes::KnobCatalog& catalog,
                      std::vector<std::string>& h) {
  if (!probe.env_reads) return;
  std::vector<std::string> knobs;
  for (const auto& [name, libs] : *probe.env_reads) {
    const Knob* k = catalog.find_variable(name);
    if (k && k->set_by == "env")
      knobs.push_back(fmt::format("{} ({})", name, fmt::join(libs, ", ")));
  }
  h.push_back(fmt::format(
      "  the processes read {} environment variable(s) through getenv (recorded by tune's "
      "libtune_getenv.so, names only){}",
      probe.env_reads->size(),
      knobs.empty() ? ", none of them a knob of the catalog"
                    : fmt::format("; knobs among them: {}", fmt::join(knobs, ", "))));
  h.push_back(
      "    not seen that way: Python's os.environ (read from the process's environment at "
      "start, without getenv), a static binary's reads, a library that reads `environ` itself");
}

// The `program:` section from the probe run.
InitProgram program_section(const ProgramInfo& program, const ProbeFindings& probe,
                            const probes::KnobCatalog& catalog, bool live) {
  InitProgram p;
  p.present = true;
  p.commented = !live;
  for (const char* kind : {"torch", "chainer", "tune-trainer"}) {
    if (contains(program.frameworks, kind)) p.kind = kind;
  }
  std::set<std::string> found;
  for (const auto& lib : probe.libraries) found.insert(lib.pools.begin(), lib.pools.end());
  for (const auto& pool : found) {
    // A pool another found pool includes is the same threads (torch's intra-op team is OpenMP).
    const bool included = std::any_of(found.begin(), found.end(), [&](const std::string& o) {
      const auto* other = catalog.pool(o);
      return other && contains(other->includes, pool);
    });
    if (!included) p.pools.push_back(pool);
  }
  for (const auto& [pool, n] : program.pool_defaults) {
    if (contains(p.pools, pool)) p.pool_defaults.emplace_back(pool, n);
  }
  p.runtime_threads = probe.runtime_threads;
  std::vector<std::string> names;
  for (const auto& [name, n] : probe.thread_names) names.push_back(fmt::format("{} x{}", name, n));
  p.evidence.push_back(fmt::format(
      "Seen in the probe run: at most {} thread(s) per rank ({}); {} of them waited in "
      "poll/epoll/select or carry a runtime's name (MPI and PMIx progress threads, libevent, "
      "NCCL/CUDA helpers): the runtimes' own, which no knob sizes.",
      probe.threads_per_rank, fmt::join(names, ", "), probe.runtime_threads));
  std::vector<std::string> told;
  for (const auto& lib : probe.libraries) {
    if (!lib.pools.empty())
      told.push_back(fmt::format("{} from {}", fmt::join(lib.pools, "+"), lib.what));
  }
  p.evidence.push_back(told.empty() ? "pools: the ranks map no library that starts a pool"
                                    : fmt::format("pools: {}", fmt::join(told, "; ")));
  return p;
}

}  // namespace tune::tuner
