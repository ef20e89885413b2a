#include "tuner/launch/kernel_checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <cstring>

#include "tuner/base/install_layout.h"
#include "tuner/launch/launcher.h"

namespace tune::tuner {

namespace {

constexpr double k_check_timeout_s = 60;

probes::KernelCheck run_check(const std::string& checker, const std::string& library,
                              const std::string& core) {
  LaunchRequest request;
  request.argv = {checker, library};
  if (core.empty())
    request.env_unset = {"OPENBLAS_CORETYPE"};
  else
    request.env_set["OPENBLAS_CORETYPE"] = core;
  // One thread, whatever the job's environment says; and no OpenBLAS messages on stdout.
  request.env_set["OPENBLAS_NUM_THREADS"] = "1";
  request.env_unset.push_back("OPENBLAS_VERBOSE");
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
  return check;
}

}  // namespace

const probes::KernelCheck* KernelOffer::check_of(const std::string& core) const {
  for (const auto& c : checked)
    if (c.requested == core) return &c;
  return nullptr;
}

std::string KernelOffer::comment(const std::string& core) const {
  const probes::KernelCheck* c = check_of(core);
  if (c == nullptr || !as_run.ran || as_run.dgemm_gflops <= 0 || as_run.sgemm_gflops <= 0)
    return "";
  return fmt::format("{}: DGEMM {:.1f}x, SGEMM {:.1f}x, same result", core,
                     c->dgemm_gflops / as_run.dgemm_gflops, c->sgemm_gflops / as_run.sgemm_gflops);
}

KernelOffer check_openblas_kernels(const std::string& library, const std::set<std::string>& flags,
                                   const std::string& forced, std::size_t max_offered,
                                   std::string checker, const std::vector<std::string>& only) {
  KernelOffer offer;
  offer.library = library;
  if (checker.empty()) checker = sibling_program("tune-kernel-check").string();
  if (checker.empty()) checker = "tune-kernel-check";
  offer.as_run = run_check(checker, library, forced);
  const auto candidates = probes::runnable_core_types(flags);
  const probes::IsaLevel best =
      candidates.empty() ? probes::IsaLevel::unknown : probes::core_level(candidates.front());
  std::vector<const probes::KernelCheck*> passed;
  for (const auto& core : candidates) {
    const probes::IsaLevel level = probes::core_level(core);
    if (!only.empty()) {
      if (std::ranges::find(only, core) == only.end()) continue;
    } else if (static_cast<int>(level) + 1 < static_cast<int>(best)) {
      continue;  // the CPU's two best levels: AVX-512 and AVX2 kernels on an AVX-512 CPU
    }
    offer.checked.push_back(run_check(checker, library, core));
  }
  for (const auto& core : only)
    if (std::ranges::find(candidates, core) == candidates.end())
      offer.refused.push_back(fmt::format("{}: needs {}, which this CPU lacks", core,
                                          probes::isa_name(probes::core_level(core))));
  for (const auto& c : offer.checked) {
    if (probes::kernel_check_passes(c)) {
      passed.push_back(&c);
    } else if (!c.ran) {
      offer.refused.push_back(fmt::format("{}: {}", c.requested, c.failure));
    } else if (c.core != c.requested && !c.core.empty()) {
      offer.refused.push_back(
          fmt::format("{}: this OpenBLAS does not know it (it ran {})", c.requested, c.core));
    } else {
      offer.refused.push_back(
          fmt::format("{}: wrong results (DGEMM error {:.3g}, SGEMM {:.3g} times the bound)",
                      c.requested, c.dgemm_error, c.sgemm_error));
    }
  }
  // In the table's order (best level first), not by speed: workers that check at the same time
  // offer the same list whatever their timings' noise.
  for (const auto* c : passed)
    if (offer.offered.size() < max_offered) offer.offered.push_back(c->requested);
  return offer;
}

}  // namespace tune::tuner
