#include "tuner/measure/window_follower.h"

#include <fmt/format.h>
#include <cmath>

#include "tuner/base/number_format.h"
#include "tuner/base/text.h"

namespace tune::tuner {
namespace {

using search::TrialState;

// "812 +- 9.3 (1.1%, 95%)" or "812 (no interval yet)".
std::string interval_text(const WindowEstimate& e, double confidence) {
  const auto rel = e.relative_half_width();
  if (!e.low || !e.high || !rel) return fmt::format("{} (no interval yet)", format_short(e.value));
  return fmt::format("{} +- {} ({:.1f}%, {:.0f}% confidence)", format_short(e.value),
                     format_short((*e.high - *e.low) / 2), *rel * 100, confidence * 100);
}

}  // namespace

WindowFollower::WindowFollower(const WindowSpec& spec, std::string path,
                               std::optional<WindowBest> best, std::uintmax_t stream_head_bytes)
    : m_spec(spec),
      m_reader(spec, std::move(path)),
      m_window(spec.settings),
      m_best(spec.prune ? best : std::nullopt),
      m_stream_head_bytes(stream_head_bytes) {}

void WindowFollower::read(double now_s) {
  for (const auto& p : m_reader.poll(now_s)) {
    const bool was_warm = m_window.warmed_up();
    if (!m_window.add(p.t, p.value)) {
      ++m_out_of_order;
      continue;
    }
    if (!m_first_read) m_first_read = now_s;
    if (!was_warm && m_window.warmed_up()) m_origin_read = now_s;
    m_last_read = now_s;
  }
}

std::string WindowFollower::no_progress_hint() const {
  const auto& c = m_reader.counts();
  std::string hint = fmt::format("{} matched none of {} line(s)", m_reader.describe(), c.lines);
  if (c.refused > 0) {
    hint += fmt::format(" with a finite number ({} matched with none", c.refused);
    hint += m_reader.last_refused().empty()
                ? ")"
                : fmt::format("; the last: {})", m_reader.last_refused());
  }
  if (c.long_lines > 0) hint += fmt::format("; {} line(s) over 64 KiB were skipped", c.long_lines);
  return hint + cap_hint();
}

std::string WindowFollower::cap_hint() const {
  if (m_spec.source != WindowSpec::Source::stream || m_stream_head_bytes == 0 ||
      m_reader.counts().bytes < m_stream_head_bytes)
    return "";
  const auto head = m_stream_head_bytes;
  const std::string size =
      head >= (1u << 20) ? fmt::format("{} MiB", head >> 20) : fmt::format("{} KiB", head >> 10);
  return fmt::format(
      "; {} reached the {} a trial's file gets while it runs (tune-keeper keeps the rest for "
      "the end), so no progress line after that was seen: print less, or follow a file of the "
      "job's (window.file)",
      m_spec.stream, size);
}

std::string WindowFollower::decide(TrialState state, const char* status, std::string reason,
                                   const WindowEstimate& e) {
  m_final = e;
  m_status = status;
  WindowDecision d;
  d.state = state;
  if (state != TrialState::fail && e.has_value()) {
    d.value = e.value;
    m_value = e.value;
  }
  if (state != TrialState::complete) d.reason = reason;
  m_decision = d;
  m_stop = reason;
  return reason;
}

std::string WindowFollower::partial_number_reason() const {
  const auto n = m_reader.counts().partial;
  return fmt::format("{} ({} progress line(s) refused so, of {} read)", m_reader.partial_number(),
                     n, m_reader.counts().lines);
}

std::string WindowFollower::tick(double now_s) {
  if (m_decision) return m_stop;
  read(now_s);
  const auto& st = m_spec.settings;
  // A group that holds only part of the job's number: its value would be made up, and every
  // line so written would be refused, so the regex cannot measure this job.
  if (!m_reader.partial_number().empty()) {
    return decide(TrialState::fail, "partial_number", partial_number_reason(), m_window.estimate());
  }
  if (!m_window.any()) {
    if (now_s < m_spec.startup_s) return "";
    return decide(TrialState::fail, "no_progress",
                  fmt::format("no progress in the first {} s (window.startup): {}",
                              format_short(m_spec.startup_s), no_progress_hint()),
                  m_window.estimate());
  }
  if (!m_window.warmed_up()) {
    if (now_s - *m_first_read < st.warmup_s + m_spec.max_s) return "";
    const auto all = m_window.estimate(/*from_first=*/true);
    return decide(TrialState::fail, "warmup_unfinished",
                  fmt::format("the warm-up ({} s and {} steps after the first progress point) "
                              "did not end in {} s: {} point(s), progress {} in {} s",
                              format_short(st.warmup_s), format_short(st.warmup_steps),
                              format_short(st.warmup_s + m_spec.max_s), all.points,
                              format_short(all.warmup_steps), format_short(all.span_s)) +
                      cap_hint(),
                  m_window.estimate());
  }
  const auto e = m_window.estimate();
  if (m_window.target_met(e)) {
    return decide(TrialState::complete, "target",
                  fmt::format("window measured: {} over {} s", interval_text(e, st.confidence),
                              format_short(e.span_s)),
                  e);
  }
  if (m_best && m_window.judgeable(e) && *e.high < m_best->low) {
    return decide(TrialState::pruned, "pruned",
                  fmt::format("pruned: its window's rate {} is clear below the best's (trial {}: "
                              "{} to {})",
                              interval_text(e, st.confidence), m_best->trial,
                              format_short(m_best->low), format_short(m_best->high)),
                  e);
  }
  if (now_s - *m_origin_read >= m_spec.max_s || m_window.full()) {
    if (!e.has_value()) {
      return decide(TrialState::fail, "stalled",
                    fmt::format("no progress in the {} s after the warm-up (window.max): the last "
                                "progress point came {} s after launch",
                                format_short(now_s - *m_origin_read), format_short(m_last_read)) +
                        cap_hint(),
                    e);
    }
    return decide(TrialState::complete, "max",
                  fmt::format("window max reached: {} over {} s", interval_text(e, st.confidence),
                              format_short(e.span_s)),
                  e);
  }
  return "";
}

void WindowFollower::finish(double now_s) {
  if (m_decision) return;
  read(now_s);
  m_final = m_window.estimate();
}

Result<double> WindowFollower::ended_value() {
  if (m_decision) {
    if (m_value) return *m_value;
    return std::unexpected(m_decision->reason);
  }
  const auto& st = m_spec.settings;
  auto e = m_window.estimate();
  if (!m_reader.partial_number().empty()) {
    m_final = e;
    m_status = "partial_number";
    return std::unexpected(partial_number_reason());
  }
  if (e.warmed_up && e.has_value()) {
    m_final = e;
    m_value = e.value;
    m_status = "ended";
    const auto rel = e.relative_half_width();
    if (!m_window.target_met(e)) {
      m_note = fmt::format(
          "the job ended before its window was measured to the target ({:.1f}%): scored on the "
          "{} s it ran after the warm-up ({} point(s){})",
          st.target * 100, format_short(e.span_s), e.points,
          rel ? fmt::format(", interval {:.1f}%", *rel * 100) : std::string(", no interval"));
    }
    return e.value;
  }
  e = m_window.estimate(/*from_first=*/true);
  if (e.has_value()) {
    m_final = e;
    m_from_first = true;
    m_value = e.value;
    m_status = "ended_in_warmup";
    m_note = fmt::format(
        "the job ended during its warm-up: scored on all it showed, warm-up included ({} s, {} "
        "point(s))",
        format_short(e.span_s), e.points);
    return e.value;
  }
  m_final = e;
  m_status = "too_few_points";
  return std::unexpected(fmt::format(
      "the job ended after {} progress point(s) ({}); a rate needs two", m_window.any() ? 1 : 0,
      m_window.any() ? m_reader.describe() : no_progress_hint()));
}

nlohmann::json WindowFollower::attrs() const {
  const auto& st = m_spec.settings;
  const WindowEstimate e = m_final ? *m_final : m_window.estimate();
  const auto& c = m_reader.counts();
  nlohmann::json j = {{"status", m_status},
                      {"points", e.points},
                      {"batches", e.batches},
                      {"window_s", e.span_s},
                      {"confidence", st.confidence},
                      {"target", st.target},
                      {"measure", window_measure_name(st.measure)},
                      {"clock", c.job_clock ? "job" : "tune"},
                      {"scale", st.scale},
                      {"source", printable(m_reader.describe(), 300)},
                      {"lines",
                       {{"read", c.lines},
                        {"points", c.points},
                        {"refused", c.refused + m_out_of_order},
                        {"long", c.long_lines},
                        {"skipped_bytes", c.skipped_bytes}}}};
  if (!m_note.empty()) j["note"] = m_note;
  if (!m_spec.unit.empty()) j["unit"] = m_spec.unit;
  if (e.has_value()) j["value"] = e.value;
  if (e.low && e.high) {
    j["low"] = *e.low;
    j["high"] = *e.high;
    if (auto rel = e.relative_half_width()) j["half_width"] = *rel;
  }
  if (m_window.any()) {
    j["warmup_s"] = m_from_first ? 0.0 : e.origin_t - e.first_t;
    j["warmup_steps"] = m_from_first ? 0.0 : e.warmup_steps;
    if (m_first_read) j["first_progress_s"] = *m_first_read;
  }
  if (m_status == "pruned" && m_best)
    j["best"] = {{"trial", m_best->trial}, {"low", m_best->low}, {"high", m_best->high}};
  return j;
}

}  // namespace tune::tuner
