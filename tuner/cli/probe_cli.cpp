#include <poll.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <stdexcept>

#include "probes/blas_kernels.h"
#include "probes/node_watch.h"
#include "probes/nodes.h"
#include "probes/onednn_isa.h"
#include "probes/system_source.h"
#include "probes/topology.h"
#include "tuner/base/text.h"
#include "tuner/cli/subcommands.h"
#include "tuner/launch/kernel_checks.h"

namespace tune::tuner {
namespace {

// `tune probe --watch TAG`: this node's watcher for a trial that spans hosts (started by `tune`
// over ssh, see tuner/probing/node_watchers.h). Looks for the trial's ranks every interval, samples
// them once found, and when stdin closes prints {"hostname", "machine", "verdict"} (or "error")
// as one JSON line.
int watch_node(const std::string& tag, double interval_s) {
  auto source = probes::make_live_source();
  probes::MonitorOptions options;
  options.interval_s = interval_s;
  probes::NodeWatch watch(*source, tag, options);
  const int timeout_ms = static_cast<int>(std::lround(std::max(0.01, interval_s) * 1000));
  for (;;) {
    watch.look();
    pollfd in{STDIN_FILENO, POLLIN, 0};
    const int ready = ::poll(&in, 1, timeout_ms);
    if (ready < 0 && errno != EINTR) break;
    if (ready > 0) {
      char buf[256];
      if (::read(STDIN_FILENO, buf, sizeof buf) <= 0) break;  // closed: the trial has ended
    }
  }
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  nlohmann::json report = {{"hostname", std::string(name)}};
  if (auto machine = probes::this_machine_id(); !machine.empty()) report["machine"] = machine;
  nlohmann::json result = watch.finish();
  if (result.contains("error")) {
    report["error"] = result["error"];
  } else {
    report["verdict"] = std::move(result);
  }
  std::cout << report.dump() << std::endl;
  return 0;
}

// OpenBLAS as a job here would map it (libopenblas.so.0, this environment's OPENBLAS_CORETYPE),
// and every core type this CPU runs, checked (tuner/launch/kernel_checks.h).
KernelOffer this_machines_kernels() {
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  return check_openblas_kernels("libopenblas.so.0", probes::read_cpu_flags(),
                                forced != nullptr ? forced : "");
}

// The kernels checked besides the one the library runs, those refused, and init's part.
std::string checks_text(const KernelOffer& offer, bool older) {
  const probes::KernelLibrary& library = *probes::kernel_library(offer.kind);
  std::string out;
  for (const auto& core : offer.offered)
    if (core != offer.as_run.core) out += "  checked: " + offer.comment(core) + "\n";
  for (const auto& r : offer.refused) out += "  refused: " + printable(r) + "\n";
  if (older)
    out += fmt::format("  `tune init` adds {} {} {} knob to a study of a job that maps it\n",
                       library.kind == "onednn" ? "a" : "an", library.product,
                       library.kind == "onednn" ? "instruction-set" : "core-type");
  return out;
}

// oneDNN as PyTorch here would map it (libdnnl.so.2, this environment's ONEDNN_MAX_CPU_ISA),
// checked the same way; not run (no library) when it is not installed.
KernelOffer this_machines_onednn() {
  const char* forced = std::getenv("ONEDNN_MAX_CPU_ISA");
  return check_kernels("onednn", "libdnnl.so.2", probes::read_cpu_flags(),
                       forced != nullptr ? forced : "");
}

// "  oneDNN (libdnnl.so.2): runs its AVX512_CORE_BF16 kernels; SGEMM 115 GFLOPS on one thread"
// and its checks; "" when it did not run.
std::string onednn_text(const KernelOffer& offer) {
  if (!offer.as_run.ran) return "";
  const char* forced = std::getenv("ONEDNN_MAX_CPU_ISA");
  const auto runnable = probes::runnable_onednn_isas(probes::read_cpu_flags(), 99);
  const std::string best = runnable.empty() ? "" : runnable.front();
  const bool older = probes::onednn_isa_below(offer.as_run.core, best);
  std::string out = fmt::format(
      "  oneDNN ({}): runs its {} kernels{}{}; SGEMM {:.1f} GFLOPS on one thread\n", offer.library,
      printable(offer.as_run.core),
      older ? fmt::format(", older than this CPU's {}", best) : std::string(),
      forced != nullptr ? fmt::format(", forced by ONEDNN_MAX_CPU_ISA={}", printable(forced))
                        : std::string(),
      offer.as_run.sgemm_gflops);
  return out + checks_text(offer, older);
}

std::string kernels_text(const KernelOffer& offer) {
  const probes::IsaLevel cpu = probes::cpu_isa(probes::read_cpu_flags());
  std::string out = fmt::format("Kernels\n  CPU instruction set: {}\n", probes::isa_name(cpu));
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  const std::string by =
      forced != nullptr ? fmt::format(", forced by OPENBLAS_CORETYPE={}", printable(forced)) : "";
  if (!offer.as_run.ran) {
    return out + fmt::format("  OpenBLAS ({}): not checked ({})\n", offer.library,
                             printable(offer.as_run.failure));
  }
  const probes::IsaLevel level = probes::core_level(offer.as_run.core);
  const bool older = level != probes::IsaLevel::unknown && level < cpu;
  out += fmt::format(
      "  OpenBLAS ({}): runs its {} kernels ({}){}{}; DGEMM {:.1f} GFLOPS on one thread\n",
      offer.library, printable(offer.as_run.core), probes::isa_name(level),
      older ? fmt::format(", older than this CPU's {}", probes::isa_name(cpu)) : std::string(), by,
      offer.as_run.dgemm_gflops);
  return out + checks_text(offer, older);
}

nlohmann::json kernels_json(const KernelOffer& offer) {
  nlohmann::json checked = nlohmann::json::array();
  for (const auto& c : offer.checked) {
    nlohmann::json one = {{"core", c.requested}, {"ran", c.ran}, {"sgemm_gflops", c.sgemm_gflops}};
    if (c.has_double) one["dgemm_gflops"] = c.dgemm_gflops;
    checked.push_back(std::move(one));
  }
  return {{"cpu", probes::isa_name(probes::cpu_isa(probes::read_cpu_flags()))},
          {"library", offer.library},
          {"core", offer.as_run.ran ? nlohmann::json(offer.as_run.core) : nlohmann::json()},
          {"failure", offer.as_run.ran ? nlohmann::json() : nlohmann::json(offer.as_run.failure)},
          {offer.kind == "onednn" ? "sgemm_gflops" : "dgemm_gflops",
           offer.kind == "onednn" ? offer.as_run.sgemm_gflops : offer.as_run.dgemm_gflops},
          {"offered", offer.offered},
          {"refused", offer.refused},
          {"checked", checked}};
}

}  // namespace

std::vector<Subcommand> add_probe_commands(CLI::App& app) {
  auto* probe = app.add_subcommand(
      "probe",
      "Print this machine's topology (packages, NUMA nodes, cores, caches, GPUs), its CPU's "
      "instruction set and the OpenBLAS (and oneDNN) kernels it runs, each checked");
  set_help_footer(probe,
                  {{"tune probe", "the topology as text (read through hwloc)"},
                   {"tune probe --format json", "the same as JSON"}},
                  "--watch is for tune itself: it starts `tune probe --watch TAG` on every other "
                  "node\nof a trial that spans hosts.");
  auto format = std::make_shared<std::string>("text");
  auto tag = std::make_shared<std::string>();
  auto interval = std::make_shared<double>(0.2);
  probe->add_option("--format", *format, "text or json")->check(CLI::IsMember({"text", "json"}));
  probe
      ->add_option("--watch", *tag,
                   "Sample this node's part of the trial tagged TAG (TUNE_PROBE_TAG) until stdin "
                   "closes, then print its verdict as JSON; tune starts this on every other node "
                   "of a trial that spans hosts")
      ->type_name("TAG");
  probe->add_option("--interval", *interval, "Sampling interval of --watch, seconds (0.2)")
      ->check(CLI::Range(0.01, 60.0));
  return {{probe, [format, tag, interval]() {
             if (!tag->empty()) return watch_node(*tag, *interval);
             auto topo = probes::read_topology();
             if (!topo) throw std::runtime_error("probe: " + topo.error());
             const KernelOffer offer = this_machines_kernels();
             const KernelOffer onednn = this_machines_onednn();
             if (*format == "json") {
               nlohmann::json out = probes::topology_to_json(*topo);
               out["kernels"] = kernels_json(offer);
               out["onednn"] = onednn.as_run.ran ? kernels_json(onednn) : nlohmann::json();
               std::cout << out.dump(2) << '\n';
             } else {
               std::cout << probes::format_topology_text(*topo) << kernels_text(offer)
                         << onednn_text(onednn);
             }
             return 0;
           }}};
}

}  // namespace tune::tuner
