// Which kernels a BLAS may run on this CPU: OpenBLAS's core types with the instruction sets their
// kernels need, the CPU's own (its cpuinfo flags), and the numeric check a core type must pass
// before tune offers it (tune-kernel-check, probes/kernel_check.c). Pure functions.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace tune::probes {

// Instruction-set levels, as far as a GEMM kernel uses them (BF16 and AMX are not: DGEMM and
// SGEMM run the same AVX-512 code on Cooper Lake and Sapphire Rapids).
enum class IsaLevel { unknown = 0, sse3, ssse3, sse4_2, avx, avx2, avx512 };
std::string isa_name(IsaLevel level);  // "SSE3" ... "AVX-512"

// Whether two kernel names are the same but for case (the libraries read them in any case).
bool same_kernel_name(std::string_view a, std::string_view b);

// The CPU's flags (/proc/cpuinfo's first "flags" line); empty when unreadable.
std::set<std::string> read_cpu_flags();
IsaLevel cpu_isa(const std::set<std::string>& flags);

// One OpenBLAS core type (OPENBLAS_CORETYPE's value, openblas_get_corename's answer).
struct CoreType {
  std::string_view name;
  IsaLevel level;
  std::vector<std::string_view> flags;  // cpuinfo flags its kernels need
};
const std::vector<CoreType>& openblas_core_types();
// The level of a core name (case-insensitive); unknown for names not in the table.
IsaLevel core_level(std::string_view core);
// The core types whose kernels this CPU can run, best level first: the candidates to check.
std::vector<std::string> runnable_core_types(const std::set<std::string>& flags);

// A library whose kernel tune can pick (a `type: kernel` parameter's `library:`): the variable
// that picks it, the file checked when the study names none, and the product's name.
struct KernelLibrary {
  std::string_view kind;          // "openblas", "onednn"
  std::string_view product;       // "OpenBLAS", "oneDNN"
  std::string_view variable;      // "OPENBLAS_CORETYPE", "ONEDNN_MAX_CPU_ISA"
  std::string_view default_file;  // "libopenblas.so.0", "libdnnl.so.2"
  std::string_view kernel_word;   // "core type", "instruction set"
  // The names the CPU profile gives its time (probes/cpu_profile.h library_name): oneDNN
  // generates its kernels at run time, so their samples land in anonymous memory, "[anon]".
  std::vector<std::string_view> profile_names;
};
const std::vector<KernelLibrary>& kernel_libraries();
const KernelLibrary* kernel_library(std::string_view kind);  // nullptr: not one of them
// Whether `name` is a kernel `kind` knows (an OpenBLAS core type, a oneDNN instruction set).
bool kernel_name_known(std::string_view kind, std::string_view name);

// What tune-kernel-check printed for one core type.
struct KernelCheck {
  std::string requested;  // OPENBLAS_CORETYPE given ("" = the library's own choice)
  std::string core;       // what the library then said it runs
  bool ran = false;       // exited 0 with every line (no SIGILL, no crash)
  std::string failure;    // why not, one line
  double dgemm_error = 0, sgemm_error = 0;  // max |C - reference| / bound (<= 1 passes)
  double dgemm_gflops = 0, sgemm_gflops = 0;
  bool has_double = false;  // the DGEMM lines were printed (not by oneDNN's check: no DGEMM)
};
// Parses the checker's output (lines "core NAME", "dgemm_error X", "dgemm_gflops X", ...; the
// DGEMM lines both or neither).
KernelCheck parse_kernel_check(std::string_view output);
// Whether a check says the core type may be offered: it ran, the library runs the core asked
// for (an OpenBLAS that does not know the name falls back to its own choice), and every result
// are within the bound (the bound's definition: docs/probes.md, "Kernel knobs, checked before they are offered").
bool kernel_check_passes(const KernelCheck& check);

}  // namespace tune::probes
