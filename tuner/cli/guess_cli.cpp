// `tune guess STUDY.yaml [--storage URL] [--verdict FILE] [--json]`: the first guess
// (tuner/judge/first_guess.h) for a study, from its stored baseline trial's probe verdict or
// from a verdict file (no database needed: bench/ replays recorded grids through it).
// `tune rules STUDY.yaml [--json]`: the rule baselines (tuner/study/rules.h) the study gets on
// this machine, as a new study would enqueue them (bench/ replays grids with today's rules).
#include <CLI/CLI.hpp>

#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "probes/topology.h"
#include "tuner/base/text.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/cli/subcommands.h"
#include "tuner/judge/first_guess.h"
#include "tuner/judge/ranking.h"
#include "tuner/launch/rule_machine.h"
#include "tuner/study/rules.h"
#include "tuner/study/study_file.h"

namespace tune::tuner {
namespace {

struct GuessArgs {
  std::string study_file, storage, verdict_file;
  bool json = false;
};

nlohmann::json read_verdict_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw BadInput(fmt::format("--verdict {}: cannot read the file", path));
  std::stringstream text;
  text << in.rdbuf();
  auto j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    throw BadInput(fmt::format("--verdict {}: not JSON (expected a probe_verdict object)", path));
  if (!j.is_object())
    throw BadInput(fmt::format("--verdict {}: expected a JSON object (a probe_verdict)", path));
  return j;
}

int run_guess(const GuessArgs& args) {
  auto spec = unwrap_input(load_study_spec(args.study_file));
  const auto topo = probes::read_cpu_topology();
  const RuleMachine machine = rule_machine(spec, topo ? &*topo : nullptr);
  GuessBasis basis;
  nlohmann::json libraries;  // the baseline's probe_libraries, from a database
  if (!args.verdict_file.empty()) {
    basis.verdict = read_verdict_file(args.verdict_file);
    basis.params = unwrap_input(baseline_params(spec));
  } else {
    auto opened = open_study_or_throw(args.study_file, args.storage, "");
    const auto* base = find_baseline(*opened.cache);
    if (base == nullptr)
      throw BadInput(fmt::format(
          "study '{}' has no baseline trial (the first `enqueue:` entry of {}); run it first, or "
          "give --verdict FILE",
          opened.cache->study().name, args.study_file));
    auto stored = guess_basis(*base);
    if (!stored)
      throw BadInput(fmt::format(
          "trial {} (the baseline) of study '{}' has no {}: it has not run with the probes; "
          "give --verdict FILE",
          base->number, opened.cache->study().name, k_attr_probe_verdict));
    basis = std::move(*stored);
    libraries = base->system_attrs.value(k_attr_probe_libraries, nlohmann::json());
    if (opened.spec) spec = *opened.spec;  // with the kernel choices the study stored
  }
  const auto& baseline = basis.params;
  auto guess = unwrap_input(first_guess(spec, machine, basis.verdict, baseline, basis.value));
  add_kernel_guess(spec, libraries, basis.verdict, guess);
  if (args.json) {
    std::cout << first_guess_json(guess).dump() << '\n';
    return 0;
  }
  std::cout << "first guess: " << terminal_text(first_guess_line(guess, baseline)) << '\n';
  if (guess.change) {
    std::vector<std::string> all;
    for (const auto& [name, v] : guess.params)
      all.push_back(fmt::format("{}={}", name, search::param_value_to_string(v)));
    std::cout << "  setting: " << terminal_text(fmt::format("{}", fmt::join(all, " "))) << '\n';
    if (guess.predicted) std::cout << fmt::format("  predicted value: {:.4g}\n", *guess.predicted);
  }
  for (const auto& line : guess.reasoning) std::cout << "  " << terminal_text(line) << '\n';
  return 0;
}

struct RulesArgs {
  std::string study_file;
  bool json = false;
};

int run_rules(const RulesArgs& args) {
  auto spec = unwrap_input(load_study_spec(args.study_file));
  if (spec.rules.empty()) spec.rules = rule_names();  // what `rules: all` would enqueue
  const auto topo = probes::read_cpu_topology();
  std::vector<std::string> notes;
  const auto entries = enqueue_with_rules(spec, rule_machine(spec, topo ? &*topo : nullptr), notes);
  nlohmann::json out = {{"entries", nlohmann::json::array()}, {"notes", notes}};
  for (const auto& e : entries) {
    if (e.rules.empty()) continue;
    nlohmann::json params = nlohmann::json::object();
    for (const auto& [name, v] : e.params) params[name] = search::param_value_to_json(v);
    out["entries"].push_back({{"rules", e.rules},
                              {"texts", e.texts},
                              {"params", params},
                              {"command_as_run", e.from_enqueue}});
    if (!args.json)
      for (const auto& t : e.texts) std::cout << terminal_text(t) << '\n';
  }
  if (args.json) {
    std::cout << out.dump() << '\n';
    return 0;
  }
  for (const auto& n : notes) std::cout << "note: " << terminal_text(n) << '\n';
  return 0;
}

}  // namespace

std::vector<Subcommand> add_guess_commands(CLI::App& app) {
  auto* guess = app.add_subcommand(
      "guess", "Print the first guess: a split of the cores that removes measured contention");
  auto args = std::make_shared<GuessArgs>();
  guess->add_option("STUDY", args->study_file, "The study file (*.yaml)")->required();
  guess->add_option("--storage", args->storage,
                    "Database (sqlite:///file.db or a path); overrides the study file's");
  guess
      ->add_option("--verdict", args->verdict_file,
                   "A JSON file holding a probe_verdict (as stored with a trial): the guess "
                   "from it for the study's first `enqueue:` entry, without a database")
      ->type_name("FILE");
  guess->add_flag("--json", args->json,
                  "One JSON object: {\"change\", \"params\", \"predicted\", \"reasoning\"}");
  set_help_footer(
      guess,
      {{"tune guess examples/pytorch_opencv/study.yaml",
        "the guess from the stored baseline's probe verdict"},
       {"tune guess my.yaml --verdict verdict.json --json", "from a recorded verdict, as JSON"}},
      "The model (docs/probes.md, \"The first guess\"): each rank's share of the physical cores\n"
      "split between its compute pool and its loader workers by their measured demand, when the\n"
      "baseline's threads waited for a CPU; `tune` enqueues it after the baselines.");
  auto* rules = app.add_subcommand(
      "rules", "Print the rule baselines a study gets on this machine (torchrun, Lightning, ...)");
  auto rules_args = std::make_shared<RulesArgs>();
  rules->add_option("STUDY", rules_args->study_file, "The study file (*.yaml)")->required();
  rules->add_flag("--json", rules_args->json,
                  "One JSON object: {\"entries\": [{\"rules\", \"texts\", \"params\", "
                  "\"command_as_run\"}], \"notes\"}");
  set_help_footer(rules, {{"tune rules my.yaml", "each rule's setting, or why it changes nothing"}},
                  "Each rule as its tool applies it (docs/study-file.md, \"Rule baselines\"), "
                  "worked out for\nthis machine and the ranks of the study's first `enqueue:` "
                  "entry; `rules: all` when the\nstudy names none.");
  return {{guess, [args]() { return run_guess(*args); }},
          {rules, [rules_args]() { return run_rules(*rules_args); }}};
}

}  // namespace tune::tuner
