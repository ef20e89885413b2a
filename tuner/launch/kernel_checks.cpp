#include "tuner/launch/kernel_checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <cstring>

#include "probes/onednn_isa.h"
#include "tuner/base/install_layout.h"
#include "tuner/launch/launcher.h"

namespace tune::tuner {

namespace {

constexpr double k_check_timeout_s = 60;

probes::KernelCheck run_check(const std::string& checker, const probes::KernelLibrary& kind,
                              const std::string& library, const std::string& core) {
  LaunchRequest request;
  request.argv = {checker, library};
  if (kind.kind == "onednn") request.argv.insert(request.argv.begin() + 1, "--onednn");
  const std::string variable(kind.variable);
  if (core.empty())
    request.env_unset = {variable};
  else
    request.env_set[variable] = core;
  // One thread, whatever the job's environment says; no library messages on stdout; and the
  // older spelling of oneDNN's variable never overrides the one set here.
  request.env_set["OPENBLAS_NUM_THREADS"] = "1";
  request.env_set["OMP_NUM_THREADS"] = "1";
  for (const char* name :
       {"OPENBLAS_VERBOSE", "ONEDNN_VERBOSE", "DNNL_VERBOSE", "DNNL_MAX_CPU_ISA"})
    request.env_unset.push_back(name);
  request.timeout_s = k_check_timeout_s;
  const CapturedRun run = run_captured(request);
  probes::KernelCheck check = probes::parse_kernel_check(run.out);
  check.requested = core;
  const LaunchResult& r = run.result;
  if (!r.started)
    check.ran = false, check.failure = "could not start " + checker + ": " + r.error;
  else if (r.signal != 0)
    check.ran = false,
    check.failure = fmt::format(
        "killed by {}{}", sigabbrev_np(r.signal) ? "SIG" : "signal ",
        sigabbrev_np(r.signal) ? sigabbrev_np(r.signal) : std::to_string(r.signal).c_str());
  else if (r.stopped == StopReason::timeout)
    check.ran = false, check.failure = fmt::format("did not finish in {:g} s", k_check_timeout_s);
  else if (r.exit_code != 0)
    check.ran = false, check.failure = fmt::format("exit code {}", r.exit_code);
  // OpenBLAS's check must have run both precisions.
  if (check.ran && kind.kind == "openblas" && !check.has_double)
    check.ran = false, check.failure = "the check printed no DGEMM result";
  return check;
}

// The candidates to check, best first, and those of `only` this CPU cannot run (with why).
std::pair<std::vector<std::string>, std::vector<std::string>> candidates_of(
    const std::string& kind, const std::set<std::string>& flags,
    const std::vector<std::string>& only) {
  std::vector<std::string> out, lacking;
  if (kind == "onednn") {
    const auto runnable = probes::runnable_onednn_isas(flags, 99);
    if (!only.empty()) {
      for (const auto& isa : runnable)
        if (std::ranges::any_of(only, [&](const auto& o) {
              return probes::onednn_isa(o) == probes::onednn_isa(isa);
            }))
          out.push_back(isa);
      for (const auto& o : only)
        if (const auto* isa = probes::onednn_isa(o);
            isa != nullptr && std::ranges::find(runnable, std::string(isa->name)) == runnable.end())
          lacking.push_back(fmt::format("{}: needs {}, which this CPU lacks", o, isa->text));
      return {out, lacking};
    }
    // Its best, plain AVX-512 and the best AVX2 one: the newest is not always the fastest (a
    // CPU that lowers its clock under 512-bit instructions, or splits them).
    const auto add_first = [&](auto&& pick) {
      for (const auto& isa : runnable)
        if (pick(*probes::onednn_isa(isa))) {
          if (std::ranges::find(out, isa) == out.end()) out.push_back(isa);
          return;
        }
    };
    add_first([](const probes::OnednnIsa&) { return true; });
    add_first([](const probes::OnednnIsa& i) { return i.rank == 5; });
    add_first([](const probes::OnednnIsa& i) { return i.rank == 3 || i.rank == 4; });
    return {out, lacking};
  }
  const auto runnable = probes::runnable_core_types(flags);
  const probes::IsaLevel best =
      runnable.empty() ? probes::IsaLevel::unknown : probes::core_level(runnable.front());
  for (const auto& core : runnable) {
    const probes::IsaLevel level = probes::core_level(core);
    if (!only.empty()) {
      if (std::ranges::find(only, core) == only.end()) continue;
    } else if (static_cast<int>(level) + 1 < static_cast<int>(best)) {
      continue;  // the CPU's two best levels: AVX-512 and AVX2 kernels on an AVX-512 CPU
    }
    out.push_back(core);
  }
  for (const auto& core : only)
    if (std::ranges::find(runnable, core) == runnable.end())
      lacking.push_back(fmt::format("{}: needs {}, which this CPU lacks", core,
                                    probes::isa_name(probes::core_level(core))));
  return {out, lacking};
}

}  // namespace

const probes::KernelCheck* KernelOffer::check_of(const std::string& core) const {
  for (const auto& c : checked)
    if (c.requested == core) return &c;
  return nullptr;
}

std::string KernelOffer::comment(const std::string& core) const {
  const probes::KernelCheck* c = check_of(core);
  if (c == nullptr || !as_run.ran || as_run.sgemm_gflops <= 0) return "";
  if (!c->has_double)
    return fmt::format("{}: SGEMM {:.1f}x, same result", core,
                       c->sgemm_gflops / as_run.sgemm_gflops);
  if (as_run.dgemm_gflops <= 0) return "";
  return fmt::format("{}: DGEMM {:.1f}x, SGEMM {:.1f}x, same result", core,
                     c->dgemm_gflops / as_run.dgemm_gflops, c->sgemm_gflops / as_run.sgemm_gflops);
}

KernelOffer check_kernels(const std::string& kind, const std::string& library,
                          const std::set<std::string>& flags, const std::string& forced,
                          std::size_t max_offered, std::string checker,
                          const std::vector<std::string>& only) {
  const probes::KernelLibrary* family = probes::kernel_library(kind);
  if (family == nullptr) family = probes::kernel_library("openblas");
  KernelOffer offer;
  offer.kind = std::string(family->kind);
  offer.library = library;
  if (checker.empty()) checker = sibling_program("tune-kernel-check").string();
  if (checker.empty()) checker = "tune-kernel-check";
  offer.as_run = run_check(checker, *family, library, forced);
  auto [candidates, lacking] = candidates_of(offer.kind, flags, only);
  for (const auto& core : candidates)
    offer.checked.push_back(run_check(checker, *family, library, core));
  offer.refused = std::move(lacking);
  std::vector<const probes::KernelCheck*> passed;
  for (const auto& c : offer.checked) {
    if (probes::kernel_check_passes(c)) {
      passed.push_back(&c);
    } else if (!c.ran) {
      offer.refused.push_back(fmt::format("{}: {}", c.requested, c.failure));
    } else if (c.core != c.requested && !c.core.empty()) {
      offer.refused.push_back(fmt::format("{}: this {} does not know it (it ran {})", c.requested,
                                          family->product, c.core));
    } else if (c.has_double) {
      offer.refused.push_back(
          fmt::format("{}: wrong results (DGEMM error {:.3g}, SGEMM {:.3g} times the bound)",
                      c.requested, c.dgemm_error, c.sgemm_error));
    } else {
      offer.refused.push_back(fmt::format("{}: wrong results (SGEMM error {:.3g} times the bound)",
                                          c.requested, c.sgemm_error));
    }
  }
  // In the table's order (best level first), not by speed: workers that check at the same time
  // offer the same list whatever their timings' noise.
  for (const auto* c : passed)
    if (offer.offered.size() < max_offered) offer.offered.push_back(c->requested);
  return offer;
}

}  // namespace tune::tuner
