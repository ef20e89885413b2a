#include "probes/predict.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <set>
#include <sstream>
#include <type_traits>

#include "probes/json_fields.h"
#include "probes/knob_catalog.h"

namespace tune::probes {
namespace {

// OMP_NUM_THREADS may be a nesting list "4,2": the outer level is the first entry.
std::optional<int> env_int(const std::map<std::string, std::string>& env, const std::string& key) {
  auto it = env.find(key);
  if (it == env.end()) return std::nullopt;
  std::string v = it->second.substr(0, it->second.find(','));
  auto n = parse_int(v);
  if (!n || *n <= 0) return std::nullopt;  // libraries ignore 0, negatives and junk
  return n;
}

struct FlagValue {
  bool present = false;
  std::optional<int> value;
};

FlagValue find_flag(const std::vector<std::string>& argv, const std::string& flag) {
  FlagValue out;
  if (flag.empty()) return out;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == flag) {
      out.present = true;
      if (i + 1 < argv.size()) out.value = parse_int(argv[i + 1]);
    } else if (argv[i].starts_with(flag + "=")) {
      out.present = true;
      out.value = parse_int(argv[i].substr(flag.size() + 1));
    }
  }
  return out;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// "socket:PE=2" -> ("socket", 2); "ppr:2:socket" is reduced to its object.
std::pair<std::string, int> split_policy(const std::string& text) {
  std::string s = lower(text);
  int pe = 1;
  if (s.starts_with("ppr:")) {
    const auto last = s.rfind(':');
    s = s.substr(last + 1);
  }
  const auto colon = s.find(':');
  if (colon != std::string::npos) {
    const std::string mods = s.substr(colon + 1);
    const auto at = mods.find("pe=");
    if (at != std::string::npos) {
      auto v = parse_int(mods.substr(at + 3, mods.find_first_of(":,", at) - at - 3));
      if (v && *v > 0) pe = *v;
    }
    s = s.substr(0, colon);
  }
  if (s == "package") s = "socket";
  if (s == "slot") s = "core";  // one node: slots are filled in core order
  return {s, pe};
}

std::vector<int> pus_of_cores(const Topology& topo, const std::vector<int>& cores) {
  std::vector<int> out;
  for (int c : cores)
    for (int pu : topo.cores[static_cast<std::size_t>(c)].pus) out.push_back(pu);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string plural(int n, const std::string& word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// The pools a rank of `model` starts: the model's own, then (in catalog order) each pool whose
// controlling variable the environment sets, where that knob applies to the program; less the
// pools another listed pool includes (the same threads, predicted once).
std::vector<PoolModel> effective_pools(const ProgramModel& model,
                                       const std::map<std::string, std::string>& env) {
  const KnobCatalog& catalog = knob_catalog();
  std::vector<PoolModel> pools = model.pools;
  auto listed = [&](const std::string& name) {
    return std::any_of(pools.begin(), pools.end(),
                       [&](const PoolModel& p) { return p.pool == name; });
  };
  for (const KnobPool& pool : catalog.pools()) {
    if (listed(pool.name)) continue;
    for (const std::string& var : pool.env) {
      const Knob* k = catalog.find_variable(var);
      if (env.contains(var) && k && k->controls == pool.name && k->applies_to(model.program)) {
        PoolModel added;
        added.pool = pool.name;
        pools.push_back(std::move(added));
        break;
      }
    }
  }
  std::set<std::string> included;
  for (const PoolModel& p : pools)
    if (const KnobPool* kp = catalog.pool(p.pool))
      included.insert(kp->includes.begin(), kp->includes.end());
  std::erase_if(pools, [&](const PoolModel& p) { return included.contains(p.pool); });
  return pools;
}

// One pool's size and where it came from: the program's flag, the study's parameter, the
// environment (the pool's variables that apply to the program, first set wins), the program's
// default, the library's default. Busy is filled in by the caller.
ThreadGroup size_pool(const PoolModel& pm, const KnobPool& kp, const LaunchPlan& plan,
                      const std::string& program, const KnobContext& ctx) {
  const KnobCatalog& catalog = knob_catalog();
  const int least = kp.counts_caller ? 1 : 0;  // a pool that includes the caller has 1 at least
  const int visible = ctx.cpuset_pus;
  if (!pm.flag.empty()) {
    const FlagValue f = find_flag(plan.program_argv, pm.flag);
    if (pm.flag_is_switch && f.present) return ThreadGroup{pm.pool, 1, 0, "flag", pm.flag};
    if (!pm.flag_is_switch && f.value && *f.value >= least)
      return ThreadGroup{pm.pool, *f.value, 0, "flag", pm.flag + " " + std::to_string(*f.value)};
  }
  if (pm.value && *pm.value >= least)
    return ThreadGroup{pm.pool, *pm.value, 0, "study", pm.value_detail};
  std::string ignored;
  for (const std::string& key : kp.env) {
    const Knob* k = catalog.find_variable(key);
    if (!plan.env.contains(key)) continue;
    if (k == nullptr || !k->applies_to(program)) {
      ignored = key + "=" + plan.env.at(key) + " not read by this program (" + (k ? k->name : key) +
                " applies to " + (k ? k->programs.front() : "none") + ")";
      continue;
    }
    if (auto v = env_int(plan.env, key)) {
      int n = *v;
      std::string detail = key + "=" + plan.env.at(key);
      if (kp.env_capped && n > visible) {
        detail += " (capped at " + std::to_string(visible) + " PUs)";
        n = visible;
      }
      return ThreadGroup{pm.pool, n, 0, "env", detail};
    }
  }
  if (pm.program_default)
    return ThreadGroup{pm.pool, *pm.program_default, 0, "program default",
                       "unset -> program default " + std::to_string(*pm.program_default)};
  const int n = catalog.pool_default(kp, ctx);
  std::string detail = kp.default_expr == "cpuset_pus"
                           ? "one per PU of the " + std::to_string(visible) + "-PU cpuset"
                           : std::to_string(n) + ": " + kp.default_text;
  return ThreadGroup{pm.pool, n, 0, "library default",
                     (ignored.empty() ? "unset" : ignored) + " -> " + detail};
}

// Whether `kp` is the pool `name` or one that includes it (torch's intra-op pool is the OpenMP
// team).
bool is_or_includes(const KnobPool& kp, const std::string& name) {
  return kp.name == name ||
         std::find(kp.includes.begin(), kp.includes.end(), name) != kp.includes.end();
}

// The busy model of `kp` in a rank with environment `env`: the catalog's, unless a knob that
// affects the pool (OMP_WAIT_POLICY, GOMP_SPINCOUNT, KMP_BLOCKTIME) is set to a value its `busy`
// rules name; the last such knob in the catalog wins (a runtime's own variable over
// OMP_WAIT_POLICY). A knob counts where it applies to the program, and for a program whose
// OpenMP runtime is unknown ("any"): the runtime it maps reads its own variable. `why` says
// which variable decided, "" when none did.
PoolBusy pool_busy(const KnobPool& kp, const std::map<std::string, std::string>& env,
                   const std::string& program, std::string& why) {
  PoolBusy busy = kp.busy;
  why.clear();
  for (const Knob& k : knob_catalog().knobs()) {
    if (k.busy.empty() || k.set_by != "env" || !is_or_includes(kp, k.affects)) continue;
    const auto it = env.find(k.variable);
    if (it == env.end() || (program != "any" && !k.applies_to(program))) continue;
    if (const auto b = knob_busy(k, it->second)) {
      busy = *b;
      why = k.variable + "=" + it->second +
            (busy == PoolBusy::spin    ? ": idle threads spin"
             : busy == PoolBusy::turns ? ": idle threads sleep"
                                       : "");
    }
  }
  return busy;
}

// Appends the groups of the program's pools, counting busy threads as the catalog's busy model
// says (or the wait policy the environment sets, pool_busy): all/spin pools every thread they
// add, idle none, and of the `turns` pools (they take turns on the main thread) only the
// largest, the first of equals.
void add_pool_groups(std::vector<ThreadGroup>& groups, const LaunchPlan& plan,
                     const ProgramModel& model, const KnobContext& ctx) {
  const KnobCatalog& catalog = knob_catalog();
  std::vector<std::pair<ThreadGroup, PoolBusy>> sized;
  for (const PoolModel& pm : effective_pools(model, plan.env)) {
    const KnobPool* kp = catalog.pool(pm.pool);
    if (kp == nullptr) continue;  // the study's parse checked every pool name
    ThreadGroup g = size_pool(pm, *kp, plan, model.program, ctx);
    if (kp->counts_caller) g.threads -= 1;  // the caller is the main thread, counted once
    std::string why;
    const PoolBusy busy = pool_busy(*kp, plan.env, model.program, why);
    if (!why.empty()) g.detail += "; " + why;
    sized.emplace_back(std::move(g), busy);
  }
  ThreadGroup* turn = nullptr;
  for (auto& [g, busy] : sized) {
    if (busy == PoolBusy::all || busy == PoolBusy::spin) g.busy = g.threads;
    if (busy == PoolBusy::turns && (turn == nullptr || g.threads > turn->threads)) turn = &g;
  }
  // A team that outnumbers its cpuset's PUs (OMP_NUM_THREADS=2 on a core) takes turns on them:
  // libgomp then spins only briefly at a barrier (its throttled spin count), so the team adds at
  // most the PUs beside the main thread (measured: 2 OpenMP or torch intra-op threads per rank
  // bound to one core each run as fast as 1; unbound on 2 PUs, 8x slower).
  if (turn != nullptr)
    turn->busy = ctx.cpuset_pus > 0 && turn->threads + 1 > ctx.cpuset_pus
                     ? std::min(turn->threads, ctx.cpuset_pus - 1)
                     : turn->threads;
  for (auto& [g, busy] : sized) {
    const KnobPool* kp = catalog.pool(g.name);
    if (g.threads > 0 || (kp->counts_caller && g.source != "library default"))
      groups.push_back(std::move(g));
  }
}

// OMP_PROC_BIND and OMP_PLACES (libgomp's reading): a bound team runs on places made of the
// rank's cpuset (threads: one PU each; cores: a core's PUs; sockets: a package's), counted from
// the first: libgomp binds the main thread to the first place before main, close (and true)
// puts thread i on place i, spread spaces the threads over the places, primary keeps them on
// the main thread's. OMP_PROC_BIND unset with OMP_PLACES set binds (true); OMP_PLACES unset with
// binding on is one place per PU. Returns the PUs the team's places cover, or nullopt when the
// team floats over the cpuset (or its places are not modelled: `note` says so). `team` counts
// the main thread.
std::optional<std::vector<int>> team_places(const Topology& topo, const std::vector<int>& cpuset,
                                            const std::map<std::string, std::string>& env, int team,
                                            std::string& note) {
  auto value = [&](const char* name) {
    const auto it = env.find(name);
    return it == env.end() ? std::string() : lower(it->second);
  };
  const std::string bind_list = value("OMP_PROC_BIND");
  const std::string bind = bind_list.substr(0, bind_list.find(','));
  std::string places = value("OMP_PLACES");
  const bool bound = bind.empty() ? !places.empty()
                                  : bind == "true" || bind == "close" || bind == "spread" ||
                                        bind == "master" || bind == "primary";
  if (!bound || team < 1) return std::nullopt;
  if (places.empty()) places = "threads";
  places = places.substr(0, places.find('('));  // "cores(4)": the count is not modelled
  std::vector<std::vector<int>> list;
  std::map<int, std::size_t> index;  // core or package -> its place
  for (int pu : cpuset) {
    const int core = topo.core_of_pu(pu);
    int key = pu;
    if (places == "cores") {
      key = core;
    } else if (places == "sockets") {
      key = core < 0 ? -1 : topo.cores[static_cast<std::size_t>(core)].package;
    } else if (places != "threads") {
      note = "OMP_PLACES=" + places + " is not modelled: the team is predicted unbound";
      return std::nullopt;
    }
    if (!index.contains(key)) {
      index[key] = list.size();
      list.emplace_back();
    }
    list[index[key]].push_back(pu);
  }
  const int count = static_cast<int>(list.size());
  if (count == 0) return std::nullopt;
  std::set<int> used;
  if (bind == "master" || bind == "primary") {
    used.insert(0);
  } else if (bind == "spread" && team < count) {
    for (int i = 0; i < team; ++i) used.insert(i * count / team);
  } else {
    for (int i = 0; i < std::min(team, count); ++i) used.insert(i);
  }
  std::vector<int> pus;
  for (int i : used)
    pus.insert(pus.end(), list[static_cast<std::size_t>(i)].begin(),
               list[static_cast<std::size_t>(i)].end());
  std::sort(pus.begin(), pus.end());
  note = "OMP_PROC_BIND=" + (bind.empty() ? std::string("true (OMP_PLACES set)") : bind) +
         ", OMP_PLACES=" + places + ": the OpenMP team's " + plural(team, "thread") + " on " +
         plural(static_cast<int>(used.size()), "place") + " of " + std::to_string(count) +
         " (PUs " + format_cpu_list(pus) + ")" +
         (team > count ? ", more threads than places: they share them" : "");
  return pus;
}

}  // namespace

std::optional<int> parse_int(std::string_view s) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

const ProgramModel& trainer_program_model() {
  static const ProgramModel model = [] {
    const KnobCatalog& catalog = knob_catalog();
    const KnobContext any_machine;
    ProgramModel m;
    m.program = "tune-trainer";
    for (const Knob* k : catalog.for_program("tune-trainer")) {
      if (k->set_by != "flag" || k->variable.empty() || catalog.pool(k->controls) == nullptr)
        continue;
      PoolModel p;
      p.pool = k->controls;
      p.flag = k->variable;
      p.flag_is_switch = k->type == "bool";
      const auto low = evaluate_knob_expression(k->low, any_machine);
      const auto def = catalog.default_number(*k, any_machine);
      if (k->type == "int" && low && def && *def >= *low)
        p.program_default = static_cast<int>(*def);
      m.pools.push_back(std::move(p));
    }
    return m;
  }();
  return model;
}

Prediction predict(const Topology& topo, const LaunchPlan& plan, const ProgramModel& model) {
  Prediction out;
  const int ncores = std::max(1, topo.core_count());
  const int np = std::max(1, plan.ranks_per_node);
  out.pus = topo.pu_count();
  out.program = model.program;
  out.notes = plan.notes;

  // 1. Effective policies.
  auto [bind, bind_pe] = split_policy(plan.bind_to);
  auto [map, pe] = split_policy(plan.map_by);
  (void)bind_pe;
  const bool overload_allowed = lower(plan.bind_to).find("overload-allowed") != std::string::npos;
  if (!plan.uses_mpirun) {
    bind = "none";
    map = "core";
    if (np > 1) out.notes.push_back("no mpirun: ranks are not bound by a launcher");
  } else {
    if (bind.empty()) {
      // Slots are cores, or every PU with --use-hwthread-cpus (then bound to one hwthread).
      const int slots = plan.hwthread_slots ? std::max(1, topo.pu_count()) : ncores;
      if (np * pe > slots)
        bind = "none";
      else if (plan.hwthread_slots && pe == 1)
        bind = "hwthread";
      else
        bind = np <= 2 ? "core" : "socket";
      if (pe > 1 && bind != "none") bind = "core";  // PE=n binds each rank to its n cores
    }
    // Hardware-thread slots are filled in order, siblings first (predicted as map by hwthread).
    if (map.empty()) map = plan.hwthread_slots ? "hwthread" : np <= 2 ? "core" : "socket";
  }
  out.bind_to = bind;
  out.map_by = map + (pe > 1 ? ":PE=" + std::to_string(pe) : "");
  if (plan.uses_mpirun && bind == "core" && np * pe > ncores && !overload_allowed)
    out.notes.push_back("mpirun refuses --bind-to core with " + plural(np, "rank") + " on " +
                        plural(ncores, "core") + " unless :overload-allowed; predicted as wrapped");
  if (bind == "hwthread" && np > topo.pu_count() && !overload_allowed)
    out.notes.push_back("mpirun refuses --bind-to hwthread with more ranks than PUs");

  // 2. Placement: each rank's first core (or PU for hwthread mapping), then its cpuset.
  std::vector<std::vector<int>> numa_cores(std::max<std::size_t>(1, topo.numa_nodes.size()));
  for (int c = 0; c < topo.core_count(); ++c)
    numa_cores[static_cast<std::size_t>(topo.cores[static_cast<std::size_t>(c)].numa) %
               numa_cores.size()]
        .push_back(c);
  std::vector<std::vector<int>> package_cores;
  for (const Package& p : topo.packages) package_cores.push_back(p.cores);
  if (package_cores.empty()) package_cores.push_back({});
  auto pick = [](const std::vector<std::vector<int>>& groups, int r, int width) {
    const int n = static_cast<int>(groups.size());
    const auto& g = groups[static_cast<std::size_t>(r % n)];
    std::vector<int> cores;
    if (g.empty()) return cores;
    const int slot = (r / n) * width;
    for (int k = 0; k < width; ++k)
      cores.push_back(g[static_cast<std::size_t>((slot + k) % static_cast<int>(g.size()))]);
    return cores;
  };
  std::vector<std::vector<int>> ranks_cores(static_cast<std::size_t>(np));
  std::vector<int> rank_pu(static_cast<std::size_t>(np), -1);
  for (int r = 0; r < np; ++r) {
    std::vector<int> cores;
    if (map == "socket")
      cores = pick(package_cores, r, pe);
    else if (map == "numa")
      cores = pick(numa_cores, r, pe);
    else if (map == "hwthread" && topo.pu_count() > 0) {
      const Pu& pu = topo.pus[static_cast<std::size_t>(r % topo.pu_count())];
      rank_pu[static_cast<std::size_t>(r)] = pu.os_index;
      cores = {pu.core};
    } else {
      for (int k = 0; k < pe; ++k) cores.push_back((r * pe + k) % ncores);
    }
    ranks_cores[static_cast<std::size_t>(r)] = cores;
  }

  const std::vector<int> all = topo.all_pus();
  for (int r = 0; r < np; ++r) {
    const auto& cores = ranks_cores[static_cast<std::size_t>(r)];
    RankPrediction rp;
    rp.rank = static_cast<std::size_t>(r) < plan.node_ranks.size()
                  ? plan.node_ranks[static_cast<std::size_t>(r)]
                  : r;
    if (bind == "core")
      rp.cpuset = pus_of_cores(topo, cores);
    else if (bind == "hwthread") {
      if (rank_pu[static_cast<std::size_t>(r)] >= 0)
        rp.cpuset = {rank_pu[static_cast<std::size_t>(r)]};
      else if (!cores.empty())
        rp.cpuset = {topo.cores[static_cast<std::size_t>(cores[0])].pus.front()};
    } else if (bind == "socket" && !cores.empty()) {
      rp.cpuset = pus_of_cores(
          topo, topo.packages[static_cast<std::size_t>(
                                  topo.cores[static_cast<std::size_t>(cores[0])].package)]
                    .cores);
    } else if (bind == "numa" && !cores.empty()) {
      rp.cpuset = topo.numa_nodes[static_cast<std::size_t>(
                                      topo.cores[static_cast<std::size_t>(cores[0])].numa)]
                      .pus;
    } else {
      if (bind != "none")
        out.notes.push_back("binding '" + bind + "' is not modelled; predicted as none");
      rp.cpuset = all;
    }
    if (rp.cpuset.empty()) rp.cpuset = all;
    const int visible = static_cast<int>(rp.cpuset.size());

    // 3. Threads of each kind: the main thread, then the program's pools (knob catalog).
    rp.groups.push_back(ThreadGroup{"main", 1, 1, "fixed", "the rank's own thread"});

    KnobContext ctx = knob_context(topo, np);
    ctx.cpuset_pus = visible;
    add_pool_groups(rp.groups, plan, model, ctx);
    // A bound OpenMP team confines the rank to its places (OMP_PROC_BIND, OMP_PLACES).
    for (const ThreadGroup& g : rp.groups) {
      const KnobPool* kp = knob_catalog().pool(g.name);
      if (kp == nullptr || !is_or_includes(*kp, "openmp")) continue;
      std::string note;
      const int team = g.threads + (kp->counts_caller ? 1 : 0);
      if (auto pus = team_places(topo, rp.cpuset, plan.env, team, note); pus && !pus->empty())
        rp.cpuset = *pus;
      if (!note.empty() && std::find(out.notes.begin(), out.notes.end(), note) == out.notes.end())
        out.notes.push_back(note);
      break;
    }
    if (model.runtime_threads > 0)
      rp.groups.push_back(ThreadGroup{k_runtime_group, model.runtime_threads, 0, "program",
                                      "program.runtime_threads: the runtimes' own, no knob's"});

    for (ThreadGroup& g : rp.groups) {
      g.load = g.busy;
      rp.threads_alive += g.threads;
      rp.busy_threads += g.busy;
    }
    out.ranks.push_back(std::move(rp));
  }
  summarize_prediction(topo, out);
  out.rules_oversubscribed = out.oversubscribed;
  return out;
}

std::string prediction_causes(const Prediction& p, int rank) {
  const RankPrediction* r = nullptr;
  for (const RankPrediction& x : p.ranks)
    if (x.rank == rank) r = &x;
  if (r == nullptr) return {};
  std::string defaults, set;
  for (const ThreadGroup& g : r->groups) {
    // Half a thread busy or more; the runtimes' own threads are no cause a knob can change.
    if (g.load < 0.5 || g.name == "main" || g.name == k_runtime_group) continue;
    const KnobPool* kp = knob_catalog().pool(g.name);
    const bool pool = kp != nullptr && kp->counts_caller;  // its size counts the main thread
    std::string& out =
        (g.source == "library default" || g.source == "program default") ? defaults : set;
    if (!out.empty()) out += ", ";
    if (&out == &defaults)
      out +=
          g.name + " threads unset -> defaulted to " + std::to_string(g.threads + (pool ? 1 : 0));
    else
      out += g.name + " " + g.detail;
  }
  if (!defaults.empty() && !set.empty()) return defaults + ", " + set;
  return defaults.empty() ? set : defaults;
}

std::string strip_verdict_word(const std::string& line) {
  for (const char* word : {"oversubscribed: ", "ok: "}) {
    if (line.starts_with(word)) return line.substr(std::string_view(word).size());
  }
  return line;
}

double prediction_constraint(const Prediction& p) {
  double worst = 0;
  if (p.remembered) return *p.remembered ? 0.5 : -0.5;  // observed, not estimated
  if (!p.basis.empty()) {  // learned: the chance of being over the limit, against one half
    double chance = 0;
    for (const CpusetLoad& c : p.cpusets) chance = std::max(chance, c.over_probability);
    return chance - 0.5;
  }
  for (const CpusetLoad& c : p.cpusets)
    if (!c.pus.empty()) worst = std::max(worst, c.load / static_cast<double>(c.pus.size()));
  return worst - p.oversubscribed_ratio;
}

nlohmann::json Prediction::to_json() const {
  using nlohmann::json;
  json j;
  j["schema_version"] = k_prediction_schema_version;
  j["bind_to"] = bind_to;
  j["map_by"] = map_by;
  j["notes"] = notes;
  j["oversubscribed"] = oversubscribed;
  j["busy_threads"] = busy_threads;
  j["load"] = std::round(load * 100) / 100;
  j["oversubscribed_ratio"] = oversubscribed_ratio;
  j["basis"] = basis;
  if (remembered) j["remembered"] = *remembered;
  j["risk"] = std::round(risk * 1000) / 1000;
  j["at_risk"] = at_risk;
  j["risk_runs"] = risk_runs;
  j["pus"] = pus;
  j["idle_cores"] = idle_cores;
  j["idle_core_count"] = idle_core_count;
  j["constraint"] = prediction_constraint(*this);
  j["summary"] = summary;
  j["ranks"] = json::array();
  for (const RankPrediction& r : ranks) {
    json jr = {{"rank", r.rank},
               {"cpuset", format_cpu_list(r.cpuset)},
               {"threads_alive", r.threads_alive},
               {"busy_threads", r.busy_threads},
               {"load", std::round(r.load * 100) / 100}};
    jr["groups"] = json::array();
    for (const ThreadGroup& g : r.groups)
      jr["groups"].push_back({{"name", g.name},
                              {"threads", g.threads},
                              {"busy", g.busy},
                              {"load", std::round(g.load * 1000) / 1000},
                              {"source", g.source},
                              {"detail", g.detail}});
    j["ranks"].push_back(std::move(jr));
  }
  j["cpusets"] = json::array();
  for (const CpusetLoad& c : cpusets)
    j["cpusets"].push_back({{"pus", format_cpu_list(c.pus)},
                            {"pu_count", c.pus.size()},
                            {"cores", c.cores},
                            {"ranks", c.ranks},
                            {"busy_threads", c.busy_threads},
                            {"load", std::round(c.load * 100) / 100},
                            {"runtime_load", std::round(c.runtime_load * 100) / 100},
                            {"over_probability", std::round(c.over_probability * 1000) / 1000},
                            {"oversubscribed", c.oversubscribed}});
  return j;
}

std::expected<Prediction, JsonReadError> prediction_from_json(const nlohmann::json& j) {
  const auto bad = [](std::string key, std::string why) {
    return std::unexpected(JsonReadError{std::move(key), std::move(why)});
  };
  if (!j.is_object()) return bad("", "is not a JSON object");
  if (const auto v = j.find("schema_version"); v != j.end() && *v != k_prediction_schema_version) {
    std::string shown = v->dump();
    if (shown.size() > 40) shown = shown.substr(0, 40) + "...";
    for (char& c : shown)
      if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    return bad(".schema_version",
               "is " + shown + ", this tune reads " + std::to_string(k_prediction_schema_version));
  }
  Prediction p;
  FieldReader top(j, "");
  top.get("bind_to", p.bind_to);
  top.get("map_by", p.map_by);
  top.get("notes", p.notes);
  top.get("oversubscribed", p.oversubscribed);
  top.get("busy_threads", p.busy_threads);
  top.get("load", p.load);
  top.get("oversubscribed_ratio", p.oversubscribed_ratio);
  top.get("basis", p.basis);
  if (const auto r = j.find("remembered"); r != j.end() && r->is_boolean())
    p.remembered = r->get<bool>();
  top.get("risk", p.risk);
  top.get("at_risk", p.at_risk);
  top.get("risk_runs", p.risk_runs);
  top.get("pus", p.pus);
  top.get("idle_cores", p.idle_cores);
  top.get("idle_core_count", p.idle_core_count);
  top.get("summary", p.summary);
  if (top.error()) return std::unexpected(*top.error());
  auto error = each_object(j, "", "ranks", [&](const nlohmann::json& rank, const std::string& at) {
    const auto groups = rank.find("groups");
    if (groups == rank.end() || !groups->is_array())
      return ReadResult(JsonReadError{at + ".groups", "is not a list"});
    RankPrediction rp;
    FieldReader fields(rank, at);
    fields.get("rank", rp.rank);
    fields.cpus("cpuset", rp.cpuset);
    fields.get("threads_alive", rp.threads_alive);
    fields.get("busy_threads", rp.busy_threads);
    fields.get("load", rp.load);
    if (fields.error()) return fields.error();
    auto e =
        each_object(rank, at, "groups", [&](const nlohmann::json& group, const std::string& key) {
          if (!group.contains("name") || !group["name"].is_string())
            return ReadResult(JsonReadError{key + ".name", "is not a string"});
          const auto busy = group.find("busy");
          if (busy == group.end() || !busy->is_number_integer() || busy->get<std::int64_t>() < 0 ||
              busy->get<std::int64_t>() > 1 << 20)
            return ReadResult(JsonReadError{key + ".busy", "is not a whole number of threads"});
          ThreadGroup tg;
          tg.name = group["name"].get<std::string>();
          tg.busy = busy->get<int>();
          FieldReader gf(group, key);
          gf.get("threads", tg.threads);
          gf.get("load", tg.load);
          gf.get("source", tg.source);
          gf.get("detail", tg.detail);
          rp.groups.push_back(std::move(tg));
          return ReadResult(gf.error());
        });
    p.ranks.push_back(std::move(rp));
    return e;
  });
  if (!error)
    error = each_object(j, "", "cpusets", [&](const nlohmann::json& set, const std::string& at) {
      CpusetLoad cl;
      FieldReader fields(set, at);
      fields.cpus("pus", cl.pus);
      fields.get("ranks", cl.ranks);
      fields.get("busy_threads", cl.busy_threads);
      fields.get("cores", cl.cores);
      fields.get("load", cl.load);
      fields.get("runtime_load", cl.runtime_load);
      fields.get("over_probability", cl.over_probability);
      fields.get("oversubscribed", cl.oversubscribed);
      p.cpusets.push_back(std::move(cl));
      return ReadResult(fields.error());
    });
  if (error) return std::unexpected(*error);
  return p;
}

}  // namespace tune::probes
