#include "tuner/init/objective_proposal.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "tuner/base/text.h"
#include "tuner/measure/objective.h"
#include "tuner/study/patterns.h"

namespace tune::tuner {
namespace {

// Line buffering preloads libstdbuf through LD_PRELOAD, which the allocator's parameter sets
// too: a null allocator would drop the whole variable and the buffering with it, so the
// allocator is left out of such a study (said in its notes).
void drop_allocator_for_line_buffering(InitPlan& plan) {
  const auto it = std::find_if(plan.params.begin(), plan.params.end(),
                               [](const InitParam& p) { return p.knob == "allocator"; });
  if (it == plan.params.end()) return;
  const std::string placeholder = "{" + it->name + "}";
  std::erase_if(plan.env, [&](const auto& e) { return e.second == placeholder; });
  plan.notes.push_back(fmt::format(
      "{}: not tuned, LD_PRELOAD carries libstdbuf for the line buffering below; to try an "
      "allocator, put its library before libstdbuf in LD_PRELOAD",
      it->name));
  plan.params.erase(it);
}

std::string size_text(std::uintmax_t bytes) {
  if (bytes < 10 * 1024) return fmt::format("{} bytes", bytes);
  if (bytes < 10 * 1024 * 1024) return fmt::format("{} KiB", bytes / 1024);
  return fmt::format("{} MiB", bytes / (1024 * 1024));
}

// An input the probe saw read, as a `files:` source relative to the study file's folder.
std::string file_source(const InitRequest& request, const std::string& name) {
  if (request.source_dir.empty() || request.source_dir == request.study_dir) return name;
  const std::filesystem::path src = std::filesystem::path(request.source_dir) / name;
  if (request.study_dir.empty()) return src.string();
  const auto rel = src.lexically_relative(request.study_dir);
  return rel.empty() ? src.string() : rel.string();
}

// "2s", "0.5s", "20s": seconds to a tenth.
std::string seconds_text(double s) { return fmt::format("{:g}s", std::round(s * 10) / 10); }

// A figure the program printed at its end: among the last this many lines of its stream.
constexpr int k_end_lines = 40;

// The objective's result line: the best one printed at the end of a stream or written to a file
// (a figure of the whole run), else the best of all; nullptr when there is none.
const ResultLine* end_figure(const ProbeFindings& probe) {
  for (const auto& r : probe.results) {
    const bool stream = r.source == "stdout" || r.source == "stderr";
    if (!stream || r.lines_after < k_end_lines) return &r;
  }
  return probe.results.empty() ? nullptr : &probe.results.front();
}

// The best progress lines that can measure a trial (they kept coming to the end), or nullptr.
const ProgressLines* usable_progress(const ProbeFindings& probe) {
  for (const auto& p : probe.progress) {
    if (p.stopped.empty()) return &p;
  }
  return nullptr;
}

// Progress lines passed over because they stopped coming, for the study's notes.
void stopped_progress_notes(const ProbeFindings& probe, std::vector<std::string>& notes) {
  for (const auto& p : probe.progress) {
    if (p.stopped.empty()) continue;
    notes.push_back(fmt::format(
        "Not a window over the lines like \"{}\" on {}: {}; a regex over them would stop "
        "matching.",
        p.example, p.source, p.stopped));
  }
}

// The window objective over progress lines `p` of a job that runs on, and why.
void propose_window(const InitRequest& request, const ProbeFindings& probe, const ProgressLines& p,
                    const ResultLine* result, InitPlan& plan) {
  const double every = std::max(p.interval_s, 0.05);
  InitWindow w;
  w.stream = p.source;
  w.regex = p.regex;
  w.number = p.number;
  w.measure = window_measure_name(p.measure);
  w.warmup = seconds_text(std::max(2.0, 3 * every));
  w.min = seconds_text(std::max(3.0, 8 * every));
  // 10 s: a DDP job on the 2-core machine varies by 15% between 2-s stretches, so a 2% target
  // is seldom met there and max decides a trial's length (issue 26: 20 trials in 5 minutes).
  w.max = seconds_text(std::max(10.0, 20 * every));
  w.startup = seconds_text(std::max(60.0, std::ceil(4 * p.first_s)));
  plan.window = w;
  plan.maximize = true;
  const std::string what =
      p.measure == WindowMeasure::counter
          ? fmt::format("{} counts up ({:.4g} a second here)",
                        p.name.empty() ? "the number the regex reads"
                                       : fmt::format("the number after '{}'", p.name),
                        p.rate)
      : p.measure == WindowMeasure::rate
          ? fmt::format("the number after '{}' is a rate (mean {:.4g})", p.name, p.rate)
          : fmt::format("tune counts the lines ({:.3g} a second here)", p.rate);
  plan.objective_notes.push_back(fmt::format(
      "Found in the probe run: {} progress lines like \"{}\" on {}, one every {:.2g} s, the "
      "first {:.1f} s after launch; {}. The regex matches each of them, whatever the width of "
      "their numbers and blanks.",
      p.count, p.example, p.source, every, p.first_s, what));
  if (p.number != NumberStyle::plain) {
    plan.objective_notes.push_back(fmt::format(
        "number: {} reads the progress number whole, {} ({}); with the wrong style a trial fails "
        "rather than measure part of a number.",
        number_style_name(p.number),
        p.number == NumberStyle::grouped ? "its thousands grouped by ','" : "',' its decimal point",
        p.number_why));
  }
  plan.objective_notes.push_back(fmt::format(
      "A trial is scored by that rate over a window after a warm-up, and stopped as soon as the "
      "rate is known to +-{} (95% confidence), or after {} of window: seconds a trial, however "
      "long the job would run. A trial whose interval falls clear below the best's is stopped "
      "early as PRUNED (window.prune: false keeps them).",
      w.target, w.max));
  plan.objective_notes.push_back(fmt::format(
      "Not the wall time: the probe run was still running at its bound ({:.0f} s), so a trial "
      "would run the whole job{}.",
      probe.seconds,
      result ? fmt::format("; nor '{}', which the job prints once", result->name) : ""));
  stopped_progress_notes(probe, plan.objective_notes);
  std::vector<std::string> others;
  for (const auto& o : probe.progress) {
    if (&o == &p || !o.stopped.empty() || others.size() >= 4) continue;
    others.push_back(fmt::format("\"{}\" ({})", o.example, o.source));
  }
  if (!others.empty())
    plan.objective_notes.push_back(
        fmt::format("Other progress lines: {}.", fmt::join(others, ", ")));
  // Noise: a rate that varies between stretches of one run varies between runs at least as much.
  constexpr double k_noisy_spread = 0.05;
  if (p.spread && *p.spread > k_noisy_spread) {
    plan.incumbent_repeats = 2;
    plan.repeats_note = fmt::format(
        "The rate varied by {:.0f}% (standard deviation over mean) between stretches of the probe "
        "run: single measurements are noisy on this machine, so each new best is re-measured "
        "twice before it is believed.",
        *p.spread * 100);
  }
  // The window times lines as they come: they must come as the program prints them.
  if (const auto& lb = request.line_buffering) {
    drop_allocator_for_line_buffering(plan);
    for (const auto& [name, value] : lb->env) {
      std::erase_if(plan.env, [&](const auto& e) { return e.first == name; });
      plan.env.emplace_back(name, escape_braces(value));
    }
    plan.env_notes.push_back(fmt::format(
        "LD_PRELOAD, _STDBUF_O and PYTHONUNBUFFERED: the program's stdout line-buffered into the "
        "trial's pipe, as `stdbuf -oL` does (coreutils' {}; Python's own buffer off), so that the "
        "window times each progress line when it is printed, not in 4-KiB bursts (C stdio "
        "into a pipe). The probe run ran so too. A line buffering rather than a pseudo-terminal, "
        "which would merge stdout and stderr and make the program act as if a person watched. "
        "It cannot reach a static binary or a program that sets its own buffering: such a "
        "program must flush its lines itself.",
        lb->library));
  } else {
    plan.objective_notes.push_back(
        "No libstdbuf (coreutils' stdbuf) here: a program that writes its progress lines with "
        "C stdio into a pipe sends them in 4-KiB bursts and the window misreads their rate; "
        "such a program must flush each line (fflush, or python3 -u).");
  }
}

// The figure `best` the program printed or wrote, as the objective, and why.
void propose_figure(const ProbeFindings& probe, const ResultLine& best, InitPlan& plan) {
  plan.regex = best.regex;
  plan.objective_number = best.number;
  plan.maximize = best.maximize;
  const bool stream = best.source == "stdout" || best.source == "stderr";
  plan.objective_file = stream ? "" : best.source;
  if (stream) plan.objective_stream = best.source;
  const std::string figure =
      fmt::format("{} gave {} {}{} ({}: {})", best.source, best.name, best.value,
                  best.unit.empty() || best.unit == best.name ? "" : " " + best.unit,
                  best.rank == 2 ? "a time" : "a rate", best.maximize ? "maximized" : "minimized");
  if (probe.bounded) {
    plan.objective_notes.push_back(fmt::format("Found in the probe run: {}.", figure));
  } else {
    plan.objective_notes.push_back(fmt::format(
        "The job ended by itself {:.1f} s after launch in the probe run{}, so each trial runs it "
        "whole and is scored by the figure it {} at its end, the program's own measure of the "
        "run: {}. The regex's last match in {} is the value.",
        probe.seconds,
        probe.seconds > probe.bound_s && probe.bound_s > 0
            ? fmt::format(" (watched past the {:.0f}-s probe to see it end)", probe.bound_s)
            : "",
        stream ? "prints" : "writes", figure, stream ? "the tail of " + best.source : best.source));
    if (const ProgressLines* p = usable_progress(probe)) {
      plan.objective_notes.push_back(fmt::format(
          "Not a window over its progress lines (\"{}\", {}): a job that ends this soon is "
          "measured whole, by its own figure rather than tune's reading of its lines.",
          p->example, p->source));
    }
  }
  if (best.number != NumberStyle::plain) {
    plan.objective_notes.push_back(fmt::format(
        "number: {} reads the figure whole, {} ({}); with the wrong style a trial fails "
        "rather than store part of a number.",
        number_style_name(best.number),
        best.number == NumberStyle::grouped ? "its thousands grouped by ','"
                                            : "',' its decimal point",
        best.number_why));
  }
  std::vector<std::string> others;
  for (const auto& r : probe.results) {
    if (&r == &best || others.size() >= 8) continue;
    others.push_back(fmt::format("{} ({})", r.name, r.source));
  }
  if (!others.empty())
    plan.objective_notes.push_back(fmt::format("Other candidates: {}.", fmt::join(others, ", ")));
}

}  // namespace

void probe_files_and_objective(const InitRequest& request, const ProbeFindings& probe,
                               InitPlan& plan) {
  constexpr std::uintmax_t k_link_above = 64u << 20;  // the probe's copy limit
  for (const auto& in : probe.inputs) {
    InitFile f;
    f.mode = in.folder || in.bytes > k_link_above ? "link" : "copy";
    f.src = file_source(request, in.name);
    f.comment = in.folder ? fmt::format("the ranks read {}/ in the probe run", in.name)
                          : fmt::format("the ranks read {} ({}) in the probe run", in.name,
                                        size_text(in.bytes));
    plan.files.push_back(std::move(f));
  }
  if (!request.throughput_regex.empty()) return;
  const ResultLine* best = end_figure(probe);
  // A job that ended by itself (within the probe's end wait) runs whole in each trial and is
  // scored by its own figure; progress lines make a window objective only for a job that runs
  // on past the probe.
  if (probe.bounded) {
    if (const ProgressLines* p = usable_progress(probe)) {
      propose_window(request, probe, *p, best, plan);
      return;
    }
  }
  if (best != nullptr) {
    propose_figure(probe, *best, plan);
    return;
  }
  stopped_progress_notes(probe, plan.objective_notes);
  if (!probe.bounded && !probe.progress.empty())
    plan.objective_notes.push_back(fmt::format(
        "The job ended by itself {:.1f} s after launch in the probe run and printed no figure "
        "at its end (NAME: number with a rate or time, a number with a rate unit): each trial "
        "runs it whole and is scored by its wall time, not a window over its progress lines "
        "(\"{}\"), which is for jobs that run on.",
        probe.seconds, probe.progress.front().example));
  plan.notes.push_back(fmt::format(
      "a result line as the objective: the probe run printed or wrote none (NAME: number, "
      "NAME=number with a rate or time unit); the objective is the wall time{}",
      probe.bounded
          ? fmt::format(". The run was stopped at the probe's bound ({:.0f} s) with no "
                        "progress line seen either, so each trial runs the whole job: tune init "
                        "--probe-for LONGER lets it finish; a job that prints a progress line "
                        "(a step counter) is measured over a window at seconds a trial, "
                        "objective: {{window: {{regex: 'step ([0-9]+)'}}}} (docs/study-file.md)",
                        probe.seconds)
          : ""));
}

}  // namespace tune::tuner
