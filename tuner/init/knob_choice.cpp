#include "tuner/init/knob_choice.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "probes/predict.h"
#include "tuner/base/text.h"
#include "tuner/init/init_header.h"
#include "tuner/study/templates.h"

namespace tune::tuner {
namespace {

using probes::Knob;
using search::ParamValue;

// Flags a user's script commonly gives each of the catalog's script-flag knobs (besides the
// catalog's own `example`), so that `--threads 2` in the command is recognised without --knob.
std::vector<std::string> usual_flags(const Knob& knob) {
  static const std::map<std::string, std::vector<std::string>> k_usual = {
      {"torch_intra_op_threads",
       {"--threads", "--num-threads", "--nthreads", "--intra-op-threads", "--torch-threads"}},
      {"torch_inter_op_threads",
       {"--interop-threads", "--inter-op-threads", "--num-interop-threads"}},
      {"torch_dataloader_workers",
       {"--workers", "--num-workers", "--dataloader-workers", "--loader-workers"}},
      {"chainer_iterator_workers", {"--loaderjob", "--loader-job", "--workers"}},
  };
  std::vector<std::string> out;
  if (!knob.example.empty()) out.push_back(knob.example);
  if (auto it = k_usual.find(knob.name); it != k_usual.end()) {
    for (const auto& f : it->second) {
      if (!contains(out, f)) out.push_back(f);
    }
  }
  return out;
}

// "12" -> 12, "0.5" -> 0.5, else the text itself: a value as the user's command gave it.
ParamValue typed_value(const std::string& text) {
  if (auto i = probes::parse_int(text)) return std::int64_t{*i};
  try {
    std::size_t pos = 0;
    const double d = std::stod(text, &pos);
    if (pos == text.size() && std::isfinite(d)) return d;
  } catch (...) {
  }
  return text;
}

// 1, 2, 4, ... within [low, high], with both ends and `extra` (the user's value) included.
std::vector<ParamValue> int_ladder(std::int64_t low, std::int64_t high, const ParamValue& extra) {
  std::set<std::int64_t> values = {low, high};
  for (std::int64_t v = std::max<std::int64_t>(low, 1); v < high; v *= 2) values.insert(v);
  if (const auto* e = std::get_if<std::int64_t>(&extra)) values.insert(*e);
  std::vector<ParamValue> out = {std::monostate{}};
  for (auto v : values) out.emplace_back(v);
  return out;
}

// --- Knob families beyond a pool's size (issue 38): thread counts of the physical cores, cores
// kept for communication, how the OpenMP team waits and where it runs, the allocator, SMT. Kept
// apart from the pool rules so that each family's choice reads in one place. ---

// Rungs a pool knob's ladder gets besides the powers of two: on an SMT machine the physical
// cores per rank (one thread per core rather than per hardware thread); for a pool of workers
// beside the main thread (a data loader's), the cores per rank less one, the core the rank's
// own thread keeps for its math and communication (Lightning's "cores / ranks - 1 workers").
void add_family_rungs(InitParam& p, const Knob& knob, const probes::KnobRange& range,
                      const probes::KnobCatalog& catalog, const probes::KnobContext& ctx) {
  const auto* pool = catalog.pool(knob.controls);
  if (pool == nullptr) return;
  std::set<std::int64_t> rungs;
  if (probes::machine_has("smt", ctx)) rungs.insert(ctx.cores_per_rank());
  if (!pool->counts_caller && pool->busy == probes::PoolBusy::all)
    rungs.insert(ctx.cores_per_rank() - 1);
  std::set<std::int64_t> values;
  for (const auto& c : p.choices) {
    if (const auto* i = std::get_if<std::int64_t>(&c)) values.insert(*i);
  }
  bool added = false;
  for (auto r : rungs) {
    if (r >= static_cast<std::int64_t>(range.low) && r <= static_cast<std::int64_t>(range.high))
      added = values.insert(r).second || added;
  }
  if (!added) return;
  p.choices = {std::monostate{}};
  for (auto v : values) p.choices.emplace_back(v);
}

// Builds the plan knob by knob; each add_* rewrites the command, env or launch it touches.
class Planner {
 public:
  Planner(InitPlan& plan, const probes::KnobCatalog& catalog, probes::KnobContext ctx,
          std::vector<std::string> frameworks, std::optional<std::set<std::string>> found_pools)
      : m_plan(plan),
        m_catalog(catalog),
        m_ctx(ctx),
        m_frameworks(std::move(frameworks)),
        m_found_pools(std::move(found_pools)) {}

  // Whether the ranks start `pool` (or a pool that is the same threads), as the probe run saw;
  // true when there was no probe run (the catalog's "any program may" stands).
  bool started(const std::string& pool) const {
    if (!m_found_pools) return true;
    for (const auto& found : *m_found_pools) {
      if (found == pool) return true;
      const auto* p = m_catalog.pool(found);
      if (p && contains(p->includes, pool)) return true;
      const auto* q = m_catalog.pool(pool);
      if (q && contains(q->includes, found)) return true;
    }
    return false;
  }
  bool probed() const { return m_found_pools.has_value(); }

  InitPlan& plan() { return m_plan; }

  bool applies(const Knob& knob) const {
    for (const auto& f : m_frameworks) {
      if (contains(knob.programs, f)) return true;
    }
    return false;
  }

  // A pool one of the chosen knobs already sizes (itself, or a pool it includes).
  bool covered(const std::string& pool) const { return m_covered.contains(pool); }

  bool has_framework(const std::string& f) const { return contains(m_frameworks, f); }

  // Whether `pool` is PyTorch's intra-op team or one it includes (the same threads).
  bool torch_team(const std::string& pool) const {
    const auto* intra = m_catalog.pool("torch_intra_op");
    return intra && (pool == intra->name || contains(intra->includes, pool));
  }

  Result<void> add_flag(const Knob& knob, const std::string& flag) {
    // Replace every spelling of the flag in the program's arguments by one placeholder.
    ParamValue given;
    std::vector<std::string> args;
    auto& cmd = m_plan.command;
    for (std::size_t i = 0; i < cmd.size(); ++i) {
      if (i == 0 || flag_name(cmd[i]) != flag) {
        args.push_back(cmd[i]);
        continue;
      }
      if (knob.type == "bool") {
        given = flag;
      } else if (cmd[i].contains('=')) {
        given = typed_value(cmd[i].substr(cmd[i].find('=') + 1));
      } else if (i + 1 < cmd.size()) {
        given = typed_value(cmd[++i]);
      }
    }
    auto param = make_param(knob, unique_name(param_name(flag)), "flag " + flag, given);
    if (!param) return std::unexpected(param.error());
    // `--flag={p}`: one element, so a null value drops the flag whole.
    args.push_back(knob.type == "bool" ? "{" + param->name + "}"
                                       : fmt::format("{}={{{}}}", flag, param->name));
    cmd = std::move(args);
    add(std::move(*param));
    return {};
  }

  // `name`: the parameter's name; "" = the variable's, in lower case.
  Result<void> add_env(const Knob& knob, const std::string& given_text,
                       const std::string& name = {}) {
    const ParamValue given =
        given_text.empty() ? ParamValue{} : ParamValue{typed_value(given_text)};
    auto param = make_param(knob, unique_name(name.empty() ? ascii_lower(knob.variable) : name),
                            "env " + knob.variable, given);
    if (!param) return std::unexpected(param.error());
    std::erase_if(m_plan.env, [&](const auto& e) { return e.first == knob.variable; });
    m_plan.env.emplace_back(knob.variable, "{" + param->name + "}");
    add(std::move(*param));
    return {};
  }

  // A flag the program's --help lists and the command does not type, appended to the command
  // (`--workers={workers}`, or `-j{jobs}` for a short-only one). Left out in the baseline (the
  // program's own default), whose value `program_default` is when the help shows a number.
  Result<void> add_hidden_flag(const Knob& knob, const HelpOption& option,
                               std::optional<int> program_default, const std::string& evidence) {
    const ParamValue shown =
        program_default ? ParamValue{std::int64_t{*program_default}} : ParamValue{};
    auto param =
        make_param(knob, unique_name(param_name(option.flag)), "flag " + option.flag, shown);
    if (!param) return std::unexpected(param.error());
    param->as_given = std::monostate{};
    param->library_default = std::monostate{};
    param->declare = param->declare && m_catalog.find(knob.name) != nullptr;
    if (param->declare) param->program_default = program_default;
    param->comment += "; " + evidence;
    m_plan.command.push_back(option.flag.starts_with("--")
                                 ? fmt::format("{}={{{}}}", option.flag, param->name)
                                 : fmt::format("{}{{{}}}", option.flag, param->name));
    add(std::move(*param));
    return {};
  }

  const probes::KnobContext& context() const { return m_ctx; }

  // An mpirun switch (--use-hwthread-cpus): null or the switch, as one element of the launch's
  // further options (the user's own spelling of it becomes the placeholder).
  Result<void> add_mpirun_switch(const Knob& knob) {
    auto& extra = m_plan.launch.extra;
    const bool given = std::erase(extra, knob.variable) > 0;
    auto param = make_param(knob, unique_name(param_name(knob.variable)), "mpirun " + knob.variable,
                            given ? ParamValue{knob.variable} : ParamValue{});
    if (!param) return std::unexpected(param.error());
    param->choices = {std::monostate{}, knob.variable};
    extra.push_back("{" + param->name + "}");
    add(std::move(*param));
    return {};
  }

  // An mpirun option (bind_to, map_by) or an MCA parameter given in the command.
  Result<void> add_launch(const Knob& knob, std::string& field, const std::string& name,
                          const std::string& where) {
    const ParamValue given = field.empty() ? ParamValue{} : ParamValue{typed_value(field)};
    auto param = make_param(knob, unique_name(name), where, given);
    if (!param) return std::unexpected(param.error());
    field = "{" + param->name + "}";
    add(std::move(*param));
    return {};
  }

 private:
  // "--interop-threads" -> "interop_threads", unique among the plan's parameters.
  std::string param_name(const std::string& flag) const {
    std::string name;
    for (char c : flag.substr(flag.find_first_not_of('-'))) {
      name +=
          std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '_';
    }
    return name;
  }

  // `base`, or base_2, base_3... when a parameter or a built-in has the name already.
  std::string unique_name(const std::string& base) const {
    std::string name = base;
    for (int k = 2; is_builtin_placeholder(name) || m_names.contains(name); ++k)
      name = fmt::format("{}_{}", base, k);
    return name;
  }

  void add(InitParam param) {
    m_names.insert(param.name);
    const auto* knob = m_catalog.find(param.knob);
    if (const auto* pool = knob ? m_catalog.pool(knob->controls) : nullptr) cover(*pool);
    m_plan.params.push_back(std::move(param));
  }

  // A pool and the pools that are the same threads (either side of an `includes`).
  void cover(const probes::KnobPool& pool) {
    m_covered.insert(pool.name);
    m_covered.insert(pool.includes.begin(), pool.includes.end());
    for (const auto& other : m_catalog.pools()) {
      if (contains(other.includes, pool.name)) m_covered.insert(other.name);
    }
  }

  Result<InitParam> make_param(const Knob& knob, const std::string& name, const std::string& where,
                               const ParamValue& given) const;

  InitPlan& m_plan;
  const probes::KnobCatalog& m_catalog;
  probes::KnobContext m_ctx;
  std::vector<std::string> m_frameworks;
  std::optional<std::set<std::string>> m_found_pools;
  std::set<std::string> m_names;
  std::set<std::string> m_covered;
};

Result<InitParam> Planner::make_param(const Knob& knob, const std::string& name,
                                      const std::string& where, const ParamValue& given) const {
  auto range = m_catalog.resolve(knob, m_ctx);
  if (!range) return std::unexpected(fmt::format("knob {}: {}", knob.name, range.error()));
  InitParam p;
  p.name = name;
  p.knob = knob.name;
  p.where = where;
  p.as_given = given;
  p.comment = fmt::format("{} ({}); unset: {}", knob.name, knob.controls, knob.default_text);
  const bool pool = m_catalog.pool(knob.controls) != nullptr;
  p.sizes_pool = pool;
  p.declare = knob.set_by == "flag" && knob.variable.empty();
  // The user's value is a choice too: the baseline must be in the domain.
  auto add_given = [&] {
    if (!std::holds_alternative<std::monostate>(given) &&
        std::find(p.choices.begin(), p.choices.end(), given) == p.choices.end())
      p.choices.push_back(given);
  };
  if (knob.set_by == "mpirun" && knob.controls == "binding") {
    // Binding to a package or NUMA node of a machine that has one of each binds to every PU:
    // the same as none, a second name for one setting.
    p.choices.emplace_back(std::monostate{});
    for (const auto& c : range->choices) {
      if ((c == "socket" || c == "package") && m_ctx.packages <= 1) continue;
      if (c == "numa" && m_ctx.numa_nodes <= 1) continue;
      p.choices.emplace_back(c);
    }
    add_given();
  } else if (knob.type == "bool" && knob.set_by == "flag") {
    p.choices = {std::monostate{}, knob.variable.empty() ? where.substr(5) : knob.variable};
  } else if (knob.type == "choice" || knob.type == "bool") {
    p.choices.emplace_back(std::monostate{});
    for (const auto& c : range->choices) p.choices.push_back(typed_value(c));
    add_given();
  } else if ((knob.type == "int" || knob.type == "bytes") &&
             (pool || range->high - range->low <= 64)) {
    p.choices = int_ladder(static_cast<std::int64_t>(range->low),
                           static_cast<std::int64_t>(range->high), given);
    add_family_rungs(p, knob, *range, m_catalog, m_ctx);
  } else {
    // A wide numeric range: sampled, with the user's value inside it (the baseline must be).
    p.range_type = knob.type == "float" ? "float" : "int";
    p.low = range->low;
    p.high = range->high;
    p.log = range->log && range->low > 0;
    p.library_default = std::nullopt;
    if (auto d = m_catalog.default_number(knob, m_ctx); d && *d >= p.low && *d <= p.high) {
      p.library_default =
          p.range_type == "float" ? ParamValue{*d} : ParamValue{static_cast<std::int64_t>(*d)};
    }
    if (const auto* i = std::get_if<std::int64_t>(&given)) {
      p.low = std::min(p.low, static_cast<double>(*i));
      p.high = std::max(p.high, static_cast<double>(*i));
    } else if (const auto* d = std::get_if<double>(&given)) {
      p.low = std::min(p.low, *d);
      p.high = std::max(p.high, *d);
    }
  }
  return p;
}

bool in_program(const std::vector<std::string>& program, const std::string& flag) {
  if (flag.size() == 2) {  // a short option: "-j 4" or "-j4"
    for (std::size_t i = 1; i < program.size(); ++i) {
      if (program[i].starts_with(flag)) return true;
    }
    return false;
  }
  for (std::size_t i = 1; i < program.size(); ++i) {
    if (flag_name(program[i]) == flag) return true;
  }
  return false;
}

// Flags of the program: named by --knob, recognised by their usual names (a script's own
// flags), or the program's catalog flags (the bundled trainer's): those that size a pool no
// chosen knob sizes yet, and any the command sets.
Result<void> choose_flags(Planner& planner,
                          const std::vector<std::pair<std::string, const Knob*>>& named,
                          const InitCommand& command, const probes::KnobCatalog& catalog) {
  std::set<std::string> chosen;
  for (const auto& [flag, knob] : named) {
    if (auto ok = planner.add_flag(*knob, flag); !ok) return ok;
    chosen.insert(knob->name);
  }
  for (const auto& knob : catalog.knobs()) {
    if (knob.set_by != "flag" || chosen.contains(knob.name) || !planner.applies(knob)) continue;
    // A knob of any program's own flag (program_workers) is found by its --help.
    if (knob.variable.empty() && knob.programs == std::vector<std::string>{"any"}) continue;
    if (knob.variable.empty()) {
      bool found = false;
      for (const auto& flag : usual_flags(knob)) {
        if (found || !in_program(command.program, flag)) continue;
        if (auto ok = planner.add_flag(knob, flag); !ok) return ok;
        found = true;
      }
      if (!found) {
        planner.plan().notes.push_back(
            fmt::format("{} ({}): no flag of the command sets it; if the program has one, name it: "
                        "tune init --knob FLAG={} ...",
                        knob.name, knob.controls, knob.name));
      }
      continue;
    }
    const bool sizes_new_pool = catalog.pool(knob.controls) && !planner.covered(knob.controls);
    if (in_program(command.program, knob.variable) || sizes_new_pool) {
      if (auto ok = planner.add_flag(knob, knob.variable); !ok) return ok;
    }
  }
  return {};
}

// The knob a flag of the program's --help sets, by what it speaks of and the program's
// framework; nullptr when the catalog has none (prefetching).
const Knob* hidden_flag_knob(const Planner& planner, const PoolFlag& flag,
                             const probes::KnobCatalog& catalog) {
  const std::string name = ascii_lower(flag.option.flag);
  if (flag.topic == "threads") {
    if (!planner.has_framework("torch")) return nullptr;
    return catalog.find(name.contains("inter") ? "torch_inter_op_threads"
                                               : "torch_intra_op_threads");
  }
  if (flag.topic == "prefetch") return nullptr;
  if (flag.topic == "workers" && planner.has_framework("torch"))
    return catalog.find("torch_dataloader_workers");
  if (planner.has_framework("chainer")) return catalog.find("chainer_iterator_workers");
  return catalog.find("program_workers");
}

// A thread pool of the program's own (xz -T): a parameter of 1..PUs per rank that no catalog
// pool stands for, so the study declares nothing for it.
Knob own_threads_knob() {
  Knob k;
  k.name = "program_threads";
  k.set_by = "flag";
  k.controls = "the program's own threads";
  k.type = "int";
  k.low = "1";
  k.high = "pus_per_rank";
  k.default_value = "default";
  k.default_text = "the program's own";
  k.programs = {"any"};
  return k;
}

// Flags the program's --help lists that size a pool and the command does not type: each a
// parameter appended to the command (tuner/init/help_reader.h), with what the help says and the
// processes the probe run saw as its evidence.
Result<void> choose_hidden_flags(Planner& planner, const ProgramInfo& program,
                                 const InitCommand& command, const probes::KnobCatalog& catalog) {
  InitPlan& plan = planner.plan();
  const ProbeFindings* probe = program.probe && program.probe->ran ? &*program.probe : nullptr;
  const bool saw_children = probe && probe->child_processes > 0;
  bool sized_children = false;
  for (const auto& p : plan.params) {
    const Knob* k = catalog.find(p.knob);
    const auto* pool = k ? catalog.pool(k->controls) : nullptr;
    if (pool && pool->unit == "process") sized_children = true;
  }
  if (program.help) {
    for (const PoolFlag& flag : program.help->pool) {
      const HelpOption& o = flag.option;
      const bool typed = std::any_of(o.spellings.begin(), o.spellings.end(),
                                     [&](const auto& s) { return in_program(command.program, s); });
      if (typed) continue;  // the command's own flags are the usual path's (or --knob's)
      const Knob* knob = hidden_flag_knob(planner, flag, catalog);
      const Knob own = own_threads_knob();
      if (knob == nullptr && flag.topic == "threads") knob = &own;
      const std::string said = fmt::format(
          "its --help lists it{} and the command does not give it: \"{}\"",
          flag.by_name ? "" : fmt::format(" (its help speaks of {})", flag.topic), o.help);
      if (knob == nullptr) {
        plan.notes.push_back(fmt::format(
            "{} ({}): {}; the knob catalog has no knob for it: tune init --knob {}=KNOB names one",
            o.flag, flag.topic, said, o.flag));
        continue;
      }
      const auto* pool = catalog.pool(knob->controls);
      if (pool && planner.covered(pool->name)) {
        plan.notes.push_back(fmt::format("{}: {}; another parameter sizes the {} pool already",
                                         o.flag, said, pool->name));
        continue;
      }
      std::optional<int> shown;
      if (auto n = probes::parse_int(o.default_text)) shown = *n;
      if (o.default_text == "0") shown = 0;
      std::string evidence = said;
      if (shown) evidence += fmt::format("; left out, the program takes {} (its --help)", *shown);
      const bool processes = pool && pool->unit == "process";
      if (processes && saw_children) evidence += "; " + children_evidence(*probe);
      if (auto ok = planner.add_hidden_flag(*knob, o, shown, evidence); !ok) return ok;
      // Found after all: no "no flag of the command sets it" note for it.
      std::erase_if(plan.notes,
                    [&](const std::string& n) { return n.starts_with(knob->name + " ("); });
      sized_children = sized_children || processes;
    }
  }
  if (saw_children && !sized_children)
    plan.notes.push_back(fmt::format(
        "worker processes: {}, but no flag of the command{} sizes them, so tune cannot size "
        "them; a flag of the program that does is a parameter with tune init --knob "
        "FLAG=program_workers",
        children_evidence(*probe), program.help && program.help->ran ? " or of its --help" : ""));
  return {};
}

// What the recorder saw read, for a comment: "getenv, libopenblas.so.0, python3.11".
std::string read_evidence(const std::set<std::string>& libs) {
  std::vector<std::string> shown(libs.begin(), libs.end());
  if (shown.size() > 4) {
    shown.resize(4);
    shown.emplace_back("...");
  }
  return fmt::format("read by the command's processes in the probe run (getenv, {})",
                     fmt::join(shown, ", "));
}

// The pool other than `own` whose variables include `variable` and which the ranks started
// (OpenBLAS reads OMP_NUM_THREADS for its own pool), or nullptr.
const probes::KnobPool* reading_pool(const Planner& planner, const probes::KnobCatalog& catalog,
                                     const std::string& variable, const std::string& own) {
  for (const auto& p : catalog.pools()) {
    if (p.name != own && contains(p.env, variable) && p.env.front() != variable &&
        planner.started(p.name))
      return &p;
  }
  return nullptr;
}

// Whether `knob` is one of the env families choose_family_env decides (it changes a pool's
// threads without sizing them, or it is the allocator) rather than the pool rules.
bool family_env_knob(const Knob& knob) {
  return knob.set_by == "env" && (!knob.affects.empty() || knob.controls == "allocator");
}

// The wait policy and placement of the OpenMP team (OMP_WAIT_POLICY, GOMP_SPINCOUNT for libgomp,
// KMP_BLOCKTIME for LLVM/Intel OpenMP, OMP_PROC_BIND, OMP_PLACES): where the probe run saw the
// ranks start the team (the program tag of the runtime they mapped decides the runtime's own
// variable), or where the command sets them. The allocator: wherever one of its libraries is
// installed here.
Result<void> choose_family_env(Planner& planner, const Knob& knob, const std::string& given,
                               const probes::KnobCatalog& catalog) {
  InitPlan& plan = planner.plan();
  const std::string name = knob.controls == "allocator" ? knob.name : "";
  if (!given.empty()) return planner.add_env(knob, given, name);
  if (!planner.applies(knob) || !catalog.available(knob, planner.context())) return {};
  if (!knob.affects.empty()) {
    if (planner.probed() && planner.started(knob.affects)) return planner.add_env(knob, "");
    const std::string note = fmt::format(
        "OMP_WAIT_POLICY, OMP_PROC_BIND and OMP_PLACES (how the {} team waits and where its "
        "threads run): {}",
        knob.affects,
        planner.probed() ? "the ranks started no OpenMP team in the probe run"
                         : "proposed where tune init's probe run sees the ranks start the team");
    if (!contains(plan.notes, note)) plan.notes.push_back(note);
    return {};
  }
  auto range = catalog.resolve(knob, planner.context());
  if (!range || range->choices.empty()) {
    std::vector<std::string> paths;
    for (const auto& c : knob.choices) paths.push_back(c.value);
    plan.notes.push_back(fmt::format("{} ({}): none of its libraries is installed here ({})",
                                     knob.name, knob.note, fmt::join(paths, ", ")));
    return {};
  }
  return planner.add_env(knob, "", name);
}

// Under mpirun on an SMT machine: whether each hardware thread is a slot
// (--use-hwthread-cpus), beside the binding's hwthread choice.
Result<void> choose_smt_launch(Planner& planner, const probes::KnobCatalog& catalog) {
  for (const auto& knob : catalog.knobs()) {
    if (knob.set_by != "mpirun" || knob.controls != "slots" || !planner.applies(knob) ||
        !catalog.available(knob, planner.context()))
      continue;
    if (auto ok = planner.add_mpirun_switch(knob); !ok) return ok;
  }
  return {};
}

// mpirun's binding (always, under mpirun), its mapping and MCA parameters (when the command
// gives them), and environment variables: those the command sets, NCCL's for NCCL programs,
// those sizing a pool no chosen knob sizes, and those the probe run saw the program read
// (`reads`: a variable a library reads is one it obeys). A PyTorch program's CPU math runs on its
// intra-op pool (the OpenMP team): the `any` variables of other pools (BLAS, OpenCV) are left
// alone.
Result<void> choose_launch_env(Planner& planner, const probes::KnobCatalog& catalog,
                               const probes::EnvReads* reads) {
  InitPlan& plan = planner.plan();
  if (plan.mpirun) {
    if (const auto* bind = catalog.find_variable("--bind-to", "openmpi")) {
      if (auto ok = planner.add_launch(*bind, plan.launch.bind_to, "bind_to", "mpirun --bind-to");
          !ok)
        return ok;
    }
    const auto* map = catalog.find_variable("--map-by", "openmpi");
    if (map && !plan.launch.map_by.empty()) {
      if (auto ok = planner.add_launch(*map, plan.launch.map_by, "map_by", "mpirun --map-by"); !ok)
        return ok;
    }
    for (auto& [name, value] : plan.launch.mca) {
      const auto* knob = catalog.find_variable(name, "openmpi");
      if (knob == nullptr || knob->set_by != "mca") continue;
      if (auto ok = planner.add_launch(*knob, value, name, "mpirun --mca " + name); !ok) return ok;
    }
    if (auto ok = choose_smt_launch(planner, catalog); !ok) return ok;
  }
  const bool torch = planner.has_framework("torch");
  for (const auto& knob : catalog.knobs()) {
    // A kernel knob is offered only with checked choices (tuner/init/init_kernels.h).
    if (knob.set_by != "env" || knob.controls == "kernel") continue;
    std::string given;
    for (const auto& [name, value] : plan.env) {
      if (name == knob.variable) given = value;
    }
    const std::set<std::string>* read_by = nullptr;
    if (reads) {
      if (const auto it = reads->find(knob.variable); it != reads->end()) read_by = &it->second;
    }
    const bool read = read_by != nullptr;
    if (family_env_knob(knob)) {
      const auto before = plan.params.size();
      if (auto ok = choose_family_env(planner, knob, given, catalog); !ok) return ok;
      if (read && plan.params.size() > before)
        plan.params.back().comment += "; " + read_evidence(*read_by);
      continue;
    }
    const auto* pool = catalog.pool(knob.controls);
    const bool any_only = knob.programs == std::vector<std::string>{"any"};
    const bool torch_elsewhere = pool && torch && any_only && !planner.torch_team(pool->name);
    bool wanted =
        !given.empty() || (planner.applies(knob) && !pool) ||
        (planner.applies(knob) && pool && !planner.covered(pool->name) && !torch_elsewhere);
    if (!wanted && read && given.empty()) {
      if (pool && planner.covered(pool->name)) {
        plan.notes.push_back(fmt::format("{} ({}): {}, but another parameter sizes the {} pool",
                                         knob.variable, knob.name, read_evidence(*read_by),
                                         pool->name));
        continue;
      }
      if (torch_elsewhere) {
        plan.notes.push_back(
            fmt::format("{} ({}): {}, but a PyTorch program's CPU math runs on its intra-op pool",
                        knob.variable, knob.name, read_evidence(*read_by)));
        continue;
      }
      wanted = true;
    }
    if (!wanted) continue;
    if (given.empty() && pool && any_only && !planner.started(pool->name)) {
      const auto* other =
          read ? reading_pool(planner, catalog, knob.variable, pool->name) : nullptr;
      if (!read || other) {
        if (other)
          plan.notes.push_back(fmt::format(
              "{} ({}): {}; the ranks started no {} pool, and the {} pool that reads it takes "
              "its own variable first ({})",
              knob.variable, knob.name, read_evidence(*read_by), pool->name, other->name,
              fmt::join(other->env, ", ")));
        else if (!planner.covered(pool->name))
          plan.notes.push_back(fmt::format("{} ({}): the ranks started no {} pool in the probe run",
                                           knob.variable, knob.name, pool->name));
        continue;
      }
    }
    if (auto ok = planner.add_env(knob, given); !ok) return ok;
    if (read) plan.params.back().comment += "; " + read_evidence(*read_by);
  }
  return {};
}

}  // namespace

// --knob FLAG=KNOB: the flag of the user's program that sets a catalog knob.
Result<NamedFlags> named_flags(const InitRequest& request, const probes::KnobCatalog& catalog) {
  std::vector<std::pair<std::string, const Knob*>> out;
  for (const auto& spec : request.knob_flags) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      return std::unexpected(fmt::format(
          "--knob '{}': expected FLAG=KNOB, e.g. --knob threads=torch_intra_op_threads", spec));
    std::string flag = spec.substr(0, eq);
    if (!flag.starts_with("-")) flag = "--" + flag;
    const auto* knob = catalog.find(spec.substr(eq + 1));
    if (knob == nullptr || knob->set_by != "flag") {
      std::vector<std::string> names;
      for (const auto& k : catalog.knobs()) {
        if (k.set_by == "flag" && k.variable.empty()) names.push_back(k.name);
      }
      return std::unexpected(fmt::format("--knob '{}': '{}' is no knob a program flag sets ({})",
                                         spec, spec.substr(eq + 1), fmt::join(names, ", ")));
    }
    out.emplace_back(flag, knob);
  }
  return out;
}

Result<void> choose_knobs(InitPlan& plan, const KnobChoiceInput& in, const NamedFlags& flags,
                          const InitCommand& command, const ProgramInfo& program) {
  Planner planner(plan, in.catalog, in.context, in.frameworks, in.found_pools);
  if (auto ok = choose_flags(planner, flags, command, in.catalog); !ok) return ok;
  if (auto ok = choose_hidden_flags(planner, program, command, in.catalog); !ok) return ok;
  if (auto ok = choose_launch_env(planner, in.catalog, in.env_reads); !ok) return ok;
  for (InitParam& p : plan.params) {
    const probes::Knob* knob = in.catalog.find(p.knob);
    if (!p.declare || knob == nullptr) continue;
    if (const auto it = program.pool_defaults.find(knob->controls);
        it != program.pool_defaults.end())
      p.program_default = it->second;
  }
  return {};
}

}  // namespace tune::tuner
