// oneDNN's CPU instruction sets: the values of ONEDNN_MAX_CPU_ISA, what
// dnnl_get_effective_cpu_isa answers (by oneDNN's major version), and which of them this CPU's
// flags run. The kernel knob of a job that maps libdnnl (PyTorch's convolutions). Pure functions.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace tune::probes {

struct OnednnIsa {
  std::string_view name;                // ONEDNN_MAX_CPU_ISA's value: "AVX2", "AVX512_CORE_BF16"
  int rank = 0;                         // higher: more instructions (SSE41 1 ... AVX512_CORE_AMX 9)
  std::vector<std::string_view> flags;  // the cpuinfo flags its kernels need
  std::string_view text;                // "AVX-512 with VNNI and BF16", for people
};

// Every instruction set oneDNN 2.x and 3.x dispatch to on x86-64, best first.
const std::vector<OnednnIsa>& onednn_isas();
// The entry of a name (case-insensitive), or nullptr.
const OnednnIsa* onednn_isa(std::string_view name);
// The name of dnnl_get_effective_cpu_isa's answer under oneDNN `major` ("" when not a known code).
std::string onednn_isa_of_code(unsigned code, int major);
// Whether `isa` is an older instruction set than `best` (both known; false otherwise).
bool onednn_isa_below(std::string_view isa, std::string_view best);
// The instruction sets this CPU runs that oneDNN `major` knows, best first.
std::vector<std::string> runnable_onednn_isas(const std::set<std::string>& flags, int major);

}  // namespace tune::probes
