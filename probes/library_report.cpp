#include "probes/library_report.h"

#include <dirent.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "probes/onednn_isa.h"

namespace tune::probes {

namespace {

std::vector<std::string> split_tabs(std::string_view line) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const auto tab = line.find('\t', start);
    out.emplace_back(line.substr(start, tab == std::string_view::npos ? tab : tab - start));
    if (tab == std::string_view::npos) return out;
    start = tab + 1;
  }
}

std::optional<int> to_int(const std::string& text) {
  int v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

std::string real_path(const std::string& path) {
  std::error_code ec;
  const auto real = std::filesystem::canonical(path, ec);
  return ec ? path : real.string();
}

std::string base_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string field(const LibraryAnswer& a, const std::string& key) {
  const auto it = a.fields.find(key);
  return it == a.fields.end() ? std::string() : it->second;
}

std::string openmp_name(const std::string& path) {
  const std::string base = base_name(path);
  if (base.starts_with("libgomp")) return "GNU OpenMP (" + base + ")";
  if (base.starts_with("libiomp")) return "Intel OpenMP (" + base + ")";
  return "LLVM OpenMP (" + base + ")";
}

// "OpenBLAS 0.3.21" from its config string ("OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ...").
std::string openblas_name(const std::string& config) {
  std::istringstream words(config);
  std::string product, version;
  words >> product >> version;
  if (product == "OpenBLAS" && !version.empty()) return product + " " + version;
  return "OpenBLAS";
}

std::string threading_of(const LibraryAnswer& a) {
  if (a.kind == "openblas") {
    const auto p = to_int(field(a, "parallel"));
    if (!p) return "";
    return *p == 0 ? "sequential" : *p == 2 ? "OpenMP" : "pthreads";
  }
  if (a.kind == "onednn") {  // dnnl_version_t's cpu_runtime (DNNL_RUNTIME_*)
    const auto r = to_int(field(a, "runtime"));
    if (!r) return "";
    return *r == 1   ? "sequential"
           : *r == 2 ? "OpenMP"
           : *r == 4 ? "TBB"
           : *r == 8 ? "threadpool"
                     : "";
  }
  return "";
}

// oneDNN: its name, the instruction set it said at exit, and the CPU's best that it knows.
void onednn_use(const LibraryAnswer& a, const std::set<std::string>& flags,
                const std::map<std::string, std::string>& env, LibraryUse& u) {
  const std::string version = field(a, "version");
  u.name = "oneDNN " + version;
  const int major = to_int(version.substr(0, version.find('.'))).value_or(0);
  const std::string isa = field(a, "isa");
  unsigned code = 0;
  if (isa.starts_with("0x") &&
      std::from_chars(isa.data() + 2, isa.data() + isa.size(), code, 16).ec == std::errc())
    u.core = onednn_isa_of_code(code, major);
  const auto runnable =
      flags.empty() ? std::vector<std::string>{} : runnable_onednn_isas(flags, major);
  if (!runnable.empty()) u.cpu_best = runnable.front();
  u.older_than_cpu = onednn_isa_below(u.core, u.cpu_best);
  for (const char* name : {"ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"})
    if (const auto it = env.find(name); it != env.end() && u.forced_by.empty())
      u.forced_by = std::string(name) + "=" + it->second;
}

LibraryUse use_of(const LibraryAnswer& a, IsaLevel cpu, const std::set<std::string>& flags,
                  const std::map<std::string, std::string>& env) {
  LibraryUse u;
  u.kind = a.kind;
  u.path = real_path(a.path);
  u.core = field(a, "core");
  u.threading = threading_of(a);
  u.threads = to_int(field(a, "threads"));
  if (a.kind == "openblas") {
    u.name = openblas_name(field(a, "config"));
    const IsaLevel level = core_level(u.core);
    u.older_than_cpu = level != IsaLevel::unknown && cpu != IsaLevel::unknown && level < cpu;
    if (const auto it = env.find("OPENBLAS_CORETYPE"); it != env.end())
      u.forced_by = "OPENBLAS_CORETYPE=" + it->second;
  } else if (a.kind == "blis") {
    u.name = "BLIS " + field(a, "version");
    if (const auto it = env.find("BLIS_ARCH_TYPE"); it != env.end())
      u.forced_by = "BLIS_ARCH_TYPE=" + it->second;
  } else if (a.kind == "onednn") {
    onednn_use(a, flags, env, u);
  } else if (a.kind == "mkl") {
    u.name = "MKL " + field(a, "version");
    for (const char* name : {"MKL_ENABLE_INSTRUCTIONS", "MKL_DEBUG_CPU_TYPE", "MKL_CBWR"})
      if (const auto it = env.find(name); it != env.end() && u.forced_by.empty())
        u.forced_by = std::string(name) + "=" + it->second;
  } else {
    u.name = openmp_name(a.path);
  }
  std::string detail = u.threading;
  if (u.threads) {
    if (!detail.empty()) detail += ", ";
    detail += std::to_string(*u.threads) + (*u.threads == 1 ? " thread" : " threads");
  }
  u.text = u.name + (detail.empty() ? "" : " (" + detail + ")");
  if (!u.core.empty()) {
    u.text += a.kind == "mkl" ? ": " + u.core : " runs its " + u.core + " kernels";
    if (a.kind == "openblas" && cpu != IsaLevel::unknown) {
      const IsaLevel level = core_level(u.core);
      if (u.older_than_cpu)
        u.text += " (" + isa_name(level) + ") on a CPU with " + isa_name(cpu);
      else if (level != IsaLevel::unknown)
        u.text += " (" + isa_name(level) + ", as the CPU allows)";
    }
    if (a.kind == "onednn" && !u.cpu_best.empty())
      u.text += u.older_than_cpu ? " on a CPU that runs " + u.cpu_best : " (as the CPU allows)";
  }
  if (!u.forced_by.empty()) u.text += ", forced by " + u.forced_by;
  return u;
}

}  // namespace

ProcessLibraries parse_library_report(std::string_view text) {
  ProcessLibraries out;
  out.rank = "-";
  std::size_t start = 0;
  while (start < text.size()) {
    const auto end = text.find('\n', start);
    const std::string_view line =
        text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    start = end == std::string_view::npos ? text.size() : end + 1;
    const auto parts = split_tabs(line);
    if (parts[0] == "process" && parts.size() >= 4) {
      out.pid = static_cast<pid_t>(to_int(parts[1]).value_or(0));
      out.rank = parts[2];
      out.exe = parts[3];
    } else if (parts[0] == "library" && parts.size() >= 3) {
      LibraryAnswer a;
      a.kind = parts[1];
      a.path = parts[2];
      for (std::size_t i = 3; i < parts.size(); ++i) {
        const auto eq = parts[i].find('=');
        if (eq != std::string::npos) a.fields[parts[i].substr(0, eq)] = parts[i].substr(eq + 1);
      }
      out.libraries.push_back(std::move(a));
    } else if (parts[0] == "env" && parts.size() >= 3) {
      out.env[parts[1]] = parts[2];
    }
  }
  return out;
}

std::vector<ProcessLibraries> read_library_reports(const std::string& dir) {
  std::vector<ProcessLibraries> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.front() == '.') continue;  // being written
    std::ifstream in(entry.path(), std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.size() > (1 << 20)) continue;
    out.push_back(parse_library_report(text));
  }
  std::ranges::sort(out, {}, &ProcessLibraries::pid);
  return out;
}

nlohmann::json library_reports_to_json(const std::vector<ProcessLibraries>& processes) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : processes) {
    nlohmann::json libs = nlohmann::json::array();
    for (const auto& a : p.libraries)
      libs.push_back({{"kind", a.kind}, {"path", a.path}, {"fields", a.fields}});
    out.push_back(
        {{"pid", p.pid}, {"rank", p.rank}, {"exe", p.exe}, {"libraries", libs}, {"env", p.env}});
  }
  return out;
}

std::vector<ProcessLibraries> library_reports_from_json(const nlohmann::json& j) {
  std::vector<ProcessLibraries> out;
  if (!j.is_array()) return out;
  const auto text_map = [](const nlohmann::json& m) {
    std::map<std::string, std::string> fields;
    if (m.is_object())
      for (const auto& [k, v] : m.items())
        if (v.is_string()) fields[k] = v.get<std::string>();
    return fields;
  };
  for (const auto& p : j) {
    if (out.size() >= 4096) break;
    if (!p.is_object() || !p.contains("pid") || !p["pid"].is_number_integer()) continue;
    ProcessLibraries one;
    one.pid = static_cast<pid_t>(p["pid"].get<long long>());
    one.rank = p.contains("rank") && p["rank"].is_string() ? p["rank"].get<std::string>() : "-";
    one.exe = p.contains("exe") && p["exe"].is_string() ? p["exe"].get<std::string>() : "";
    if (p.contains("libraries") && p["libraries"].is_array())
      for (const auto& l : p["libraries"]) {
        if (!l.is_object() || !l.contains("kind") || !l["kind"].is_string() ||
            !l.contains("path") || !l["path"].is_string())
          continue;
        one.libraries.push_back({l["kind"].get<std::string>(), l["path"].get<std::string>(),
                                 text_map(l.contains("fields") ? l["fields"] : nlohmann::json())});
      }
    if (p.contains("env")) one.env = text_map(p["env"]);
    out.push_back(std::move(one));
  }
  return out;
}

const LibraryUse* LibrariesSummary::stale(std::string_view kind) const {
  for (const auto& u : libraries)
    if (u.kind == kind && (u.older_than_cpu || !u.forced_by.empty())) return &u;
  return nullptr;
}

std::string LibrariesSummary::verdict_clause() const {
  std::vector<std::string> parts;
  for (const auto& u : libraries) {
    const std::string forced = u.forced_by.empty() ? "" : ", forced by " + u.forced_by;
    if (u.kind == "openblas" && u.older_than_cpu)
      parts.push_back("OpenBLAS runs " + u.core + " (" + isa_name(core_level(u.core)) +
                      ") kernels on an " + cpu + " CPU" + forced);
    if (u.kind == "onednn" && u.older_than_cpu)
      parts.push_back("oneDNN runs " + u.core + " kernels on a CPU that runs " + u.cpu_best +
                      forced);
  }
  if (std::ranges::any_of(notes, [](const auto& n) { return n.contains(" OpenMP runtimes, "); }))
    parts.push_back("two OpenMP runtimes in one rank");
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

LibrariesSummary summarize_libraries(const std::vector<ProcessLibraries>& processes, IsaLevel cpu,
                                     const std::set<std::string>& flags) {
  LibrariesSummary out;
  out.cpu = cpu == IsaLevel::unknown ? "" : isa_name(cpu);
  const bool any_rank = std::ranges::any_of(processes, [](const auto& p) { return p.rank != "-"; });
  std::map<std::string, std::size_t> index;  // real path -> libraries[i]
  std::set<std::string> runtime_lists;       // each pair of runtimes said once
  std::set<std::string> rank_names;
  std::map<std::size_t, std::set<std::string>> lib_ranks;  // libraries[i] -> its ranks
  for (const auto& p : processes) {
    if (any_rank && p.rank == "-") continue;
    const std::string rank_name =
        any_rank ? p.rank : std::to_string(p.pid);  // a rank's forks: once
    rank_names.insert(rank_name);
    for (const auto& [name, value] : p.env) out.forcing_env.try_emplace(name, value);
    std::vector<std::string> runtimes;
    for (const auto& a : p.libraries) {
      LibraryUse u = use_of(a, cpu, flags, p.env);
      if (a.kind == "openmp" && std::ranges::find(runtimes, u.path) == runtimes.end())
        runtimes.push_back(u.path);
      const auto [it, fresh] = index.try_emplace(u.path, out.libraries.size());
      if (fresh) out.libraries.push_back(std::move(u));
      lib_ranks[it->second].insert(rank_name);
    }
    if (runtimes.size() > 1) {
      std::vector<std::string> names;
      for (const auto& r : runtimes) names.push_back(base_name(r));
      std::string list;
      for (std::size_t i = 0; i < names.size(); ++i)
        list += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
      const std::string who = p.rank == "-" ? "process " + std::to_string(p.pid) : "rank " + p.rank;
      const std::string note =
          who + " maps " + std::to_string(runtimes.size()) + " OpenMP runtimes, " + list +
          ": each sizes its own pool without knowing of the other, and LLVM's and Intel's abort "
          "when a second one starts (OMP: Error #15)";
      if (runtime_lists.insert(list).second) out.notes.push_back(note);
    }
  }
  out.ranks = static_cast<int>(rank_names.size());
  for (const auto& [i, names] : lib_ranks) out.libraries[i].ranks = static_cast<int>(names.size());
  for (const auto& u : out.libraries)
    if (u.older_than_cpu)
      out.notes.push_back(u.name + " runs " + u.core + " kernels, older than this CPU's " +
                          (u.cpu_best.empty() ? out.cpu : u.cpu_best) +
                          (u.forced_by.empty() ? "" : " (" + u.forced_by + ")"));
  return out;
}

nlohmann::json LibrariesSummary::to_json() const {
  nlohmann::json libs = nlohmann::json::array();
  for (const auto& u : libraries) {
    nlohmann::json j = {{"kind", u.kind},
                        {"name", u.name},
                        {"path", u.path},
                        {"core", u.core},
                        {"threading", u.threading},
                        {"ranks", u.ranks},
                        {"older_than_cpu", u.older_than_cpu},
                        {"cpu_best", u.cpu_best},
                        {"forced_by", u.forced_by},
                        {"text", u.text}};
    if (u.threads) j["threads"] = *u.threads;
    libs.push_back(std::move(j));
  }
  return {{"cpu", cpu},
          {"ranks", ranks},
          {"libraries", libs},
          {"forcing_env", forcing_env},
          {"notes", notes}};
}

std::optional<LibrariesSummary> LibrariesSummary::from_json(const nlohmann::json& j) {
  if (!j.is_object()) return std::nullopt;
  try {
    LibrariesSummary s;
    s.cpu = j.value("cpu", "");
    s.ranks = j.value("ranks", 0);
    for (const auto& l : j.value("libraries", nlohmann::json::array())) {
      LibraryUse u;
      u.kind = l.value("kind", "");
      u.name = l.value("name", "");
      u.path = l.value("path", "");
      u.core = l.value("core", "");
      u.threading = l.value("threading", "");
      if (l.contains("threads") && l["threads"].is_number_integer())
        u.threads = l["threads"].get<int>();
      u.ranks = l.value("ranks", 0);
      u.older_than_cpu = l.value("older_than_cpu", false);
      u.cpu_best = l.value("cpu_best", "");
      u.forced_by = l.value("forced_by", "");
      u.text = l.value("text", "");
      s.libraries.push_back(std::move(u));
    }
    if (j.contains("forcing_env") && j["forcing_env"].is_object())
      for (const auto& [k, v] : j["forcing_env"].items())
        if (v.is_string()) s.forcing_env[k] = v.get<std::string>();
    for (const auto& n : j.value("notes", nlohmann::json::array()))
      if (n.is_string()) s.notes.push_back(n.get<std::string>());
    return s;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

}  // namespace tune::probes
