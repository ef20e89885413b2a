// The trial and study attributes tune stores: every key once, with who writes it and its JSON
// shape. Readers (report, summary, confirm, python3-optuna users) and writers name them only
// through these constants. Optuna's own keys keep Optuna's spelling ("fixed_params",
// "constraints"), so Optuna reads the same study. Constants and one reader; thread-safe.
#pragma once

#include <optional>

#include "search/trial.h"

namespace tune::tuner {

// --- system attrs ------------------------------------------------------------------------
// runner, confirm (Optuna's enqueue_trial): {param: external value} the next ask() must use.
// Samplers read it too (search::k_fixed_params_attr).
inline constexpr const char* k_attr_fixed_params = search::k_fixed_params_attr;
// runner: the process running the trial, {"host": str, "pid": int, "start": int (ticks)}.
inline constexpr const char* k_attr_owner = "tune:owner";
// storage (create_trial, pop_waiting_trial): a random token (32 hex digits) written with the
// trial by the call that created or popped it, so that the call, run again after the
// connection was lost at its COMMIT (which may have gone through), finds the trial it made
// instead of making or popping another (a second number, a trial nobody runs).
inline constexpr const char* k_attr_claim_token = "tune:claim";
// runner: the machine the trial ran on (launching node), as hwloc saw it when the runner started:
// {"host": str, "packages": int, "numa_nodes": int, "cores": int, "pus": int}. `tune export`
// names it in the script's header and checks the node the script runs on against it. Absent in
// studies from before it was recorded, or when hwloc could not read the machine.
inline constexpr const char* k_attr_machine = "tune:machine";
// runner (trial_outcome): one printable line, why the trial is FAIL or PRUNED.
inline constexpr const char* k_attr_fail_reason = "fail_reason";
// runner (trial_outcome, recovery): true on a trial that tune itself cut short (an interrupt, the
// study's --time-limit, the tune running it died), whatever the trial did. Absent otherwise.
inline constexpr const char* k_attr_cut_short = "tune:cut_short";
// runner (run/baselines.h): on a re-run of a baseline or rule trial that did not complete, the
// number of the trial it runs again (int). It carries that trial's fixed_params and rules, and
// stands for it once it completes (judge/ranking.h find_baseline).
inline constexpr const char* k_attr_retry_of = "tune:retry_of";
// How the fail_reason of a trial stopped at its time limit begins ("timed out after 120.0s").
inline constexpr const char* k_timed_out_reason = "timed out after";
// runner (Optuna's): [float], one per constraint, <= 0 feasible.
inline constexpr const char* k_attr_constraints = "constraints";
// runner: the file the trial's result waited in (str, absolute) while the database could not
// take it; stored by the next tune on the study (run/pending_result.h). Absent otherwise.
inline constexpr const char* k_attr_result_kept = "result_kept_in";
// runner (launcher): "keeper" | "subreaper" | "process group", how its processes were contained.
inline constexpr const char* k_attr_containment = "containment";
// runner (keeper): {"stdout"|"stderr": bytes cut from the middle of that stream}.
inline constexpr const char* k_attr_output_cut = "output_cut";
// runner (launch.slurm): {"name": the step's --job-name, "cancelled": steps scancel ended after
// the trial was stopped, "cancel_error": why they could not be (only when so)}.
inline constexpr const char* k_attr_slurm_step = "slurm_step";
// probe hooks: probes::Prediction JSON (schema_version inside), before launch.
inline constexpr const char* k_attr_probe_prediction = "probe_prediction";
// probe hooks: probes::Verdict JSON, after the run.
inline constexpr const char* k_attr_probe_verdict = "probe_verdict";
// probe hooks: what the ranks' BLAS and OpenMP libraries said they run
// (probes::LibrariesSummary JSON, probes/library_report.h), after the run.
inline constexpr const char* k_attr_probe_libraries = "probe_libraries";
// An enqueued rule baseline (tuner/study/rules.h): the rules its setting stands for
// (["torchrun"]), and what each sets, one text per rule.
inline constexpr const char* k_attr_rules = "rules";
inline constexpr const char* k_attr_rule_texts = "rule_texts";
// Set on a rule baseline that is none of the study's `enqueue:` entries (never the baseline).
inline constexpr const char* k_attr_rule_only = "rule_only";
// The first guess (tuner/judge/first_guess.h), enqueued by the runner after the baseline ran:
// `first_guess` true on its trial, with the value it is predicted to reach in the objective's
// units (float, or null when the baseline has none) and why, one line each ([str]).
inline constexpr const char* k_attr_first_guess = "first_guess";
inline constexpr const char* k_attr_guess_predicted = "guess_predicted";
inline constexpr const char* k_attr_guess_reasoning = "guess_reasoning";
// Its key listing the trial's other nodes that are this very machine (namespaces, containers:
// the same kernel boot id), whose ranks run outside the trial's process tree here.
inline constexpr const char* k_verdict_shares_machine_with = "shares_machine_with";
// probe hooks: what the trial's monitor measured per thread group, with the threads the
// prediction gave each (probes::duty_record JSON: {"schema_version", "groups": {name:
// {"predicted_threads", "threads", "runnable", "cpu", "load"}}}); later predictions learn from it.
inline constexpr const char* k_attr_probe_duty = "probe_duty_cycles";
// re-runs (`tune confirm`, incumbent_repeats; tuner/judge/reruns.h): the number of the trial a
// re-run re-measures (int); samplers read it too. Stored as "confirm_of", the key studies have
// always carried, so older studies and python3-optuna scripts read the same.
inline constexpr const char* k_attr_rerun_of = search::k_repeat_of_attr;
// re-runs: 0-based round of a re-run (int); stored as "confirm_round" for the same reason.
inline constexpr const char* k_attr_rerun_round = "confirm_round";
// runner (tuner/run/load_check.h): why tune enqueued a re-run itself, when not for
// incumbent_repeats: "load" (its original was measured under load; re-run once quiet).
inline constexpr const char* k_attr_rerun_cause = "rerun_cause";

// --- user attrs (what a person looks at) ---------------------------------------------------
// runner: the argv launched ([str]), the variables set ({name: value}, a secret's value
// (PGPASSWORD) masked: base/secret_env.h is_secret_env_var) and unset ([name]).
// re-runs: a completed re-run's measured value (float); the re-run itself is stored PRUNED
// without a value, so that nothing ranks a lucky repeat.
inline constexpr const char* k_attr_rerun_value = "rerun_value";
// re-runs: on a re-measured trial, the value of its own (search) run (float); its stored value is
// then the median of its re-runs.
inline constexpr const char* k_attr_search_value = "search_value";
inline constexpr const char* k_attr_launched_argv = "command";
inline constexpr const char* k_attr_env = "env";
inline constexpr const char* k_attr_env_unset = "env_unset";
// runner: the programs the trial ran, as a shell with its environment finds them
// (launch/program_identity.h): [{"role": "launcher"|"program", "name", "path", "real_path",
// "version" (interpreters only)}].
inline constexpr const char* k_attr_programs = "programs";
// runner: the trial's output folder (str, absolute).
inline constexpr const char* k_attr_trial_dir = "trial_dir";
// runner: the folder the command ran in (str, absolute; the trial's folder unless `workdir:`).
inline constexpr const char* k_attr_workdir = "workdir";
// runner: what `files:` staged there, in order: [{"dest", "src", "mode": copy|link|template}].
inline constexpr const char* k_attr_files = "files";
// runner: seconds from spawn to the job's exit (float; never the database's time); exit code (int,
// null when a signal ended it); the signal (int, only when one did).
inline constexpr const char* k_attr_wall_time = "wall_time";
// runner: seconds from the job's exit to the end of what it left behind (the keeper's SIGTERM,
// grace and SIGKILL; float, only when something was left): never part of wall_time or a value.
inline constexpr const char* k_attr_cleanup_time = "cleanup_time";
inline constexpr const char* k_attr_exit_code = "exit_code";
inline constexpr const char* k_attr_signal = "signal";
// runner (objective `window:`, tuner/measure/window_follower.h): the window's statistics, stored on
// every trial that ran (also one that failed: how far it got).
// {"status": str (below), "note": str (a sentence; only where something is worth saying),
//  "value": float (the rate, x scale), "low", "high": float (its interval; absent with fewer
//  than 2 batches), "confidence": float, "half_width": float (relative: (high - low) / 2 /
//  value), "target": float, "points": int (progress points in the window), "batches": int,
//  "window_s": float (its length, on the estimate's clock), "warmup_s": float, "warmup_steps":
//  float (what the warm-up took), "first_progress_s": float (launch to the first progress
//  point, tune's clock), "measure": "counter"|"lines"|"rate", "clock": "job"|"tune", "scale",
//  "unit", "source": str, "lines": {"read", "points", "refused", "long", "skipped_bytes"},
//  "best": {"trial", "low", "high"} (what a pruned trial was judged against)}
// status: "target" (the interval reached the target: stopped, COMPLETE), "max" (the window's
// max passed: stopped, COMPLETE), "pruned" (its interval clear below the best's: stopped,
// PRUNED with the value as its last intermediate value), "ended" / "ended_in_warmup" (the job
// exited 0 first: scored on what was seen, COMPLETE), "no_progress" (no progress point by the
// window's startup limit: FAIL), "partial_number" (a progress line's group held only part of
// a number, `12` of `12,345`: FAIL, quoting it), "stalled" (no point after the warm-up: FAIL),
// "warmup_unfinished" (the warm-up did not end within warmup + max: FAIL), "too_few_points"
// (the job exited 0 with fewer than two points: FAIL), "unfinished" (the trial ended otherwise:
// a crash, a signal, its timeout: FAIL as such).
inline constexpr const char* k_attr_window = "window";

// runner (tuner/run/load_check.h), every trial that ran under a keeper: the CPU time used outside
// the study while it ran, in CPUs' worth (float, e.g. 0.93: the machine's busy time less the
// trial's process tree, the keeper and tune, over the trial); and, with the probes, the mean CPU
// one of its ranks got (float, 1.0 = a whole CPU).
inline constexpr const char* k_attr_external_cpu = "external_cpu";
inline constexpr const char* k_attr_rank_cpu_share = "rank_cpu_share";
// runner: only on a trial measured under load (its external_cpu above the study's `load:`
// limit): {"external_cpus": float, "uncertainty": float (the reading's resolution), "limit":
// float}. Such a trial is not ranked (judge/ranking.h) until a re-run measured without load
// stands for it; it is kept and listed.
inline constexpr const char* k_attr_measured_under_load = "measured_under_load";

// --- study user attrs ----------------------------------------------------------------------
// runner: the study file's absolute path, so confirm/export find it from the database alone.
inline constexpr const char* k_attr_study_file = "tune:study_file";
// runner: the core types each `type: kernel` parameter offers, checked when the study was
// created (tuner/run/kernel_params.h): {"PARAM": ["SkylakeX", ...]}, so that every worker and
// every later run has the same space.
inline constexpr const char* k_attr_study_kernel_choices = "tune:kernel_choices";
// runner: what each objective measures (study_changes.h objectives_identity), so that a study
// file whose objective changed is caught before its values mix with the stored ones.
inline constexpr const char* k_attr_study_objectives = "tune:objectives";
// runner: the first guess was worked out (once per study, whoever ran the baseline):
// {"from_trial": int (the baseline), "change": bool, "trial": int|null (the guess's trial,
// null when none was enqueued), "reasoning": [str] and "predicted": float|null (when it changes
// the setting), as on the trial, "note": str (why none was enqueued, when so)}.
inline constexpr const char* k_attr_study_first_guess = "tune:first_guess";

// --- not stored ----------------------------------------------------------------------------
// probe hooks -> runner: a constraint value (> 0 = predicted oversubscribed: do not run).
inline constexpr const char* k_hook_constraint = "constraint";

// The number of the trial `t` re-measures (k_attr_rerun_of), when it is a re-run.
inline std::optional<int> rerun_of(const search::FrozenTrial& t) {
  const auto it = t.system_attrs.find(k_attr_rerun_of);
  if (it == t.system_attrs.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int>();
}

}  // namespace tune::tuner
