// The order of init's parameters (tuner/init/knob_order.h): the knobs acting on the libraries
// that held the probe run's CPU time first, most time first, each saying how much; the others
// as they were.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "probes/knob_catalog.h"
#include "tuner/init/knob_order.h"

namespace tune::tuner {
namespace {

InitParam param(const std::string& name, const std::string& knob) {
  InitParam p;
  p.name = name;
  p.knob = knob;
  p.comment = name;
  return p;
}

std::vector<std::string> names(const InitPlan& plan) {
  std::vector<std::string> out;
  for (const auto& p : plan.params) out.push_back(p.name);
  return out;
}

TEST(KnobOrder, TheKnobsOfTheLibrariesHoldingTheTimeComeFirst) {
  InitPlan plan;
  plan.params = {param("bind_to", "mpirun_bind_to"), param("omp", "omp_num_threads"),
                 param("blas", "openblas_num_threads"), param("alloc", "allocator")};
  InitParam kernel = param("onednn_max_cpu_isa", "onednn_max_cpu_isa");
  kernel.kernel_file = "/usr/lib/x86_64-linux-gnu/libdnnl.so.2";
  kernel.kernel_library = "onednn";
  plan.params.push_back(kernel);
  // A PyTorch rank: oneDNN's generated code ([anon]) and libdnnl first, torch's own next (its
  // intra-op pool is the OpenMP team, so OMP_NUM_THREADS acts on it), OpenBLAS under 5%.
  const std::map<std::string, double> time = {{"[anon]", 0.45},       {"libdnnl", 0.1},
                                              {"libtorch_cpu", 0.15}, {"libgomp", 0.02},
                                              {"libopenblas", 0.03},  {"python3.11", 0.25}};
  const auto& catalog = probes::knob_catalog();
  EXPECT_DOUBLE_EQ(param_time_share(plan.params[1], time, catalog), 0.27);  // torch + dnnl + gomp
  order_by_library_time(plan, time, catalog);
  EXPECT_EQ(names(plan),
            (std::vector<std::string>{"onednn_max_cpu_isa", "omp", "bind_to", "blas", "alloc"}));
  EXPECT_EQ(plan.params[0].comment,
            "onednn_max_cpu_isa; its libraries held 55% of the ranks' CPU time in the probe run "
            "([anon] 45%, libdnnl 10%)");
  EXPECT_EQ(plan.params[1].comment,
            "omp; its libraries held 27% of the ranks' CPU time in the probe run (libtorch_cpu "
            "15%, libdnnl 10%, libgomp 2%)");
  EXPECT_EQ(plan.params[3].comment, "blas");  // 3%: not moved, nothing said
}

TEST(KnobOrder, NoProfileLeavesTheOrderAsItWas) {
  InitPlan plan;
  plan.params = {param("bind_to", "mpirun_bind_to"), param("blas", "openblas_num_threads")};
  order_by_library_time(plan, {}, probes::knob_catalog());
  EXPECT_EQ(names(plan), (std::vector<std::string>{"bind_to", "blas"}));
  EXPECT_EQ(plan.params[1].comment, "blas");
}

}  // namespace
}  // namespace tune::tuner
