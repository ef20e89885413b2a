// The mpirun launch kind (tuner/launch/launch_kind.h): launch.mpirun of the study file, as the
// argv prefix, the probes' plan, a batch job's shape and what an export must say of its flags.
// Immutable once made, as every launch kind component.
// Design: docs/design-notes.md#tunerlaunchmpirun_launchcpp
#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <optional>
#include <sstream>

#include "probes/mpirun_flags.h"
#include "tuner/base/text.h"
#include "tuner/launch/launch_kind.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

// `hosts: [a, b]` as --host: mpirun gives each name one slot, so with npernode N each gets :N
// (an entry that says a:2 keeps its own count).
std::string host_option(const std::vector<std::string>& hosts,
                        const std::optional<std::string>& npernode) {
  std::string out;
  for (const auto& h : hosts) {
    if (!out.empty()) out += ',';
    out += h;
    if (npernode && h.find(':') == std::string::npos) out += ':' + *npernode;
  }
  return out;
}

class MpirunLaunch final : public LaunchKind {
 public:
  explicit MpirunLaunch(RenderedMpirun settings) : m_settings(std::move(settings)) {}

  std::string_view name() const override { return "mpirun"; }
  std::optional<std::string> program() const override { return m_settings.program; }

  std::vector<std::string> prefix(
      const std::map<std::string, std::string>& env_set) const override {
    const RenderedMpirun& m = m_settings;
    std::vector<std::string> argv = {m.program};
    if (m.allow_run_as_root) argv.push_back("--allow-run-as-root");
    for (const auto& option : k_mpirun_value_options) {
      if (const auto& value = m.*option.rendered) argv.insert(argv.end(), {option.flag, *value});
    }
    if (m.oversubscribe) argv.push_back("--oversubscribe");
    for (const auto& [key, value] : m.mca) argv.insert(argv.end(), {"--mca", key, value});
    // Export the trial's variables to ranks on other hosts too.
    for (const auto& [name, value] : env_set) argv.insert(argv.end(), {"-x", name});
    argv.insert(argv.end(), m.extra.begin(), m.extra.end());
    return argv;
  }

  probes::LaunchPlan probe_plan(const std::vector<std::string>& command,
                                const std::map<std::string, std::string>& env) const override {
    const RenderedMpirun& m = m_settings;
    probes::MpirunOptions options;
    options.n = m.n.value_or("");
    options.npernode = m.npernode.value_or("");
    options.bind_to = m.bind_to.value_or("");
    options.map_by = m.map_by.value_or("");
    options.host = m.host.value_or("");
    options.hostfile = m.hostfile.value_or("");
    // `extra` is a piece of mpirun's command line as the user wrote it: read in place, as mpirun
    // reads it (its --bind-to overrides the one above; the program starts where the options
    // end, normally at the command's first element).
    std::vector<std::string> tail = m.extra;
    tail.insert(tail.end(), command.begin(), command.end());
    const std::size_t first = probes::read_mpirun_options(tail, options);
    std::vector<std::string> program(tail.begin() + static_cast<std::ptrdiff_t>(first), tail.end());
    return probes::launch_plan_from_mpirun(options, std::move(program), env);
  }

  JobShape job_shape(const std::vector<std::string>& command) const override {
    const RenderedMpirun& m = m_settings;
    if (m.hostfile || m.host) {
      const auto plan = probe_plan(command, {});
      if (!plan.layout.empty()) {  // the hosts could be read: they size the job
        JobShape shape;
        shape.nodes = plan.nodes;
        shape.tasks_per_node = plan.ranks_per_node;
        shape.total_tasks = plan.n;
        return shape;
      }
    }
    const auto count = [](const std::optional<std::string>& text) {
      return text ? positive_int(*text) : std::nullopt;
    };
    return job_shape_of(std::nullopt, count(m.n), count(m.npernode));
  }

  bool forwards_env_to_hosts() const override { return true; }

  std::vector<std::string> remote_shell(
      const std::map<std::string, std::string>& env) const override {
    return open_mpi_remote_shell(mca(), env);
  }

  // Whether the command line lets more ranks start than there are slots (--oversubscribe).
  bool oversubscribes() const {
    if (m_settings.oversubscribe) return true;
    for (const auto& word : m_settings.extra) {
      const probes::MpirunFlag* flag = probes::find_mpirun_flag(word);
      if (flag && flag->setting == probes::MpirunSetting::oversubscribe) return true;
    }
    return false;
  }

  std::vector<std::string> kept_flag_notes() const override {
    std::vector<std::string> notes;
    if (oversubscribes())
      notes.push_back(
          "--oversubscribe: lets more ranks start than the node has slots, as the study needed "
          "on its development machine; in an allocation it hides a job shape that does not fit");
    for (const auto& [key, value] : mca()) {
      if (key == "pml" && value.contains("cm"))
        notes.push_back("--mca pml " + one_line(value) +
                        ": turns off the cm PML (PSM/OFI), a workaround on the study's machine; "
                        "on a cluster that PML may be the fast interconnect");
      else if (key.starts_with("btl_tcp_if") || key.starts_with("oob_tcp_if"))
        notes.push_back("--mca " + one_line(key) + " " + one_line(value) +
                        ": names the study machine's network interfaces, which a cluster's nodes "
                        "may not have");
      else if (key.starts_with("plm_rsh"))
        notes.push_back("--mca " + one_line(key) +
                        ": how the study's mpirun reached other hosts; inside an allocation "
                        "mpirun starts its daemons through the scheduler");
      else if (key == "btl")
        notes.push_back("--mca btl " + one_line(value) +
                        ": the transports the study's machine used; a cluster's fabric may need "
                        "others");
    }
    return notes;
  }

  // Inside an allocation Open MPI's mpirun reads Slurm's nodes and slots and starts its daemons
  // through Slurm, so the trial's binding stays word for word what was measured.
  BatchLaunchNote batch_launch_note(const JobShape& shape,
                                    std::optional<int> cpus_per_task) const override {
    const RenderedMpirun& m = m_settings;
    std::string binding;
    if (m.bind_to) binding += " --bind-to " + one_line(*m.bind_to);
    if (m.map_by) binding += " --map-by " + one_line(*m.map_by);
    BatchLaunchNote note;
    note.why =
        "Started with the study's mpirun, not srun: inside the allocation Open MPI's mpirun "
        "reads Slurm's nodes and slots and starts its daemons through Slurm, and the trial's "
        "binding" +
        (binding.empty() ? std::string(" (mpirun's default)") : " (" + binding.substr(1) + ")") +
        " stays word for word what was measured. srun needs --mpi=pmix with Debian's Open MPI "
        "(plain srun fails) and a translation of the binding; the matching line would be:";
    note.equivalent = one_line(srun_equivalent(shape, cpus_per_task));
    return note;
  }

  std::string script_setup() const override {
    return "\n# Open MPI refuses to start as root unless told twice.\n"
           "if [ \"$(id -u)\" -eq 0 ]; then\n"
           "  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1\nfi\n";
  }

 private:
  // The MCA parameters the launch's command line sets, in order (launch.mpirun.mca, then any
  // --mca KEY VALUE in its extra); the last of one key wins, as in mpirun.
  std::vector<std::pair<std::string, std::string>> mca() const {
    std::vector<std::pair<std::string, std::string>> out = m_settings.mca;
    const auto& extra = m_settings.extra;
    for (std::size_t i = 0; i + 2 < extra.size(); ++i) {
      const probes::MpirunFlag* flag = probes::find_mpirun_flag(extra[i]);
      if (flag && flag->setting == probes::MpirunSetting::mca)
        out.emplace_back(extra[i + 1], extra[i + 2]);
    }
    return out;
  }

  // The srun flags that match the trial's mpirun binding.
  std::string srun_equivalent(const JobShape& shape, std::optional<int> cpus_per_task) const {
    const RenderedMpirun& m = m_settings;
    std::string s = fmt::format("srun --mpi=pmix --ntasks={}", shape.total_tasks);
    if (shape.tasks_per_node) s += fmt::format(" --ntasks-per-node={}", *shape.tasks_per_node);
    if (cpus_per_task) s += fmt::format(" --cpus-per-task={}", *cpus_per_task);
    if (m.bind_to) {
      const std::string how = m.bind_to->substr(0, m.bind_to->find(':'));
      const std::map<std::string, std::string> k_bind = {
          {"core", "cores"},     {"hwthread", "threads"}, {"none", "none"},
          {"socket", "sockets"}, {"package", "sockets"},  {"numa", "ldoms"}};
      if (const auto it = k_bind.find(how); it != k_bind.end()) s += " --cpu-bind=" + it->second;
    }
    if (m.map_by) {
      const std::string how = m.map_by->substr(0, m.map_by->find(':'));
      if (how == "node")
        s += " --distribution=cyclic";
      else if (how == "core" || how == "slot" || how == "hwthread")
        s += " --distribution=block";
    }
    return s + " ...";
  }

  RenderedMpirun m_settings;
};

}  // namespace

std::vector<std::string> open_mpi_remote_shell(
    const std::vector<std::pair<std::string, std::string>>& mca,
    const std::map<std::string, std::string>& env) {
  const auto value = [&](const std::string& key) -> std::optional<std::string> {
    std::optional<std::string> found;
    for (const auto& [k, v] : mca)
      if (k == key) found = v;  // the last one given wins, as in mpirun
    if (found) return found;
    const auto it = env.find("OMPI_MCA_" + key);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  const auto words = [](const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string w; in >> w;) out.push_back(w);
    return out;
  };
  const auto agent = value("plm_rsh_agent");
  // "ssh : rsh" lists alternatives; the first is the one found on any normal system.
  std::vector<std::string> shell = words(agent ? agent->substr(0, agent->find(':')) : "");
  if (shell.empty()) shell = {"ssh"};
  for (auto& word : words(value("plm_rsh_args").value_or(""))) shell.push_back(std::move(word));
  return shell;
}

LaunchKindPtr mpirun_launch(RenderedMpirun settings) {
  return std::make_shared<MpirunLaunch>(std::move(settings));
}

Result<LaunchKindPtr> render_mpirun_launch(const StudySpec& spec, const TemplateValues& values,
                                           bool allow_run_as_root) {
  auto expand = [&](const std::string& text) { return expand_template(text, values); };
  const auto& l = spec.launch;
  RenderedMpirun m;
  auto program = expand(l.mpirun_program);
  if (program && *program) m.program = **program;
  m.allow_run_as_root = allow_run_as_root;
  for (const auto& option : k_mpirun_value_options) {
    const std::string& text = l.*option.spec;
    if (text.empty()) continue;
    auto e = expand(text);
    if (!e) return std::unexpected(fmt::format("{}: launch.mpirun: {}", spec.file, e.error()));
    m.*option.rendered = *e;
  }
  if (!l.hosts.empty()) {
    auto hosts = expand_list(l.hosts, values, spec.file + ": launch.mpirun.hosts");
    if (!hosts) return std::unexpected(hosts.error());
    m.host = host_option(*hosts, m.npernode);
  }
  // mpirun reads the hostfile from the trial's folder, the probes and exports from here: one
  // absolute path for all of them, relative to where tune runs (as output: and storage: are).
  if (m.hostfile && !m.hostfile->empty()) m.hostfile = fs::absolute(*m.hostfile).string();
  m.oversubscribe = l.oversubscribe;
  for (const auto& [key, text] : l.mca) {
    auto e = expand(text);
    if (!e)
      return std::unexpected(
          fmt::format("{}: launch.mpirun.mca.{}: {}", spec.file, key, e.error()));
    if (*e) m.mca.emplace_back(key, **e);
  }
  auto extra = expand_list(l.extra, values, spec.file + ": launch.mpirun.extra");
  if (!extra) return std::unexpected(extra.error());
  m.extra = std::move(*extra);
  return mpirun_launch(std::move(m));
}

}  // namespace tune::tuner
