#include "tuner/measure/rate_window.h"

#include <algorithm>
#include <cmath>

#include "tuner/base/stats.h"

namespace tune::tuner {
namespace {

// The interval of `e.value` from the standard error of the batches' rate (before `scale`):
// Student's t at `confidence` with batches - 1 degrees of freedom.
void set_interval(WindowEstimate& e, double se, std::size_t batches, double confidence,
                  double scale) {
  const double half = student_t_quantile(0.5 + confidence / 2, static_cast<double>(batches) - 1) *
                      se * std::abs(scale);
  e.low = e.value - half;
  e.high = e.value + half;
}

}  // namespace

std::optional<double> WindowEstimate::relative_half_width() const {
  if (!low || !high || value == 0) return std::nullopt;
  return (*high - *low) / 2 / std::abs(value);
}

bool RateWindow::add(double t, double v) {
  if (!std::isfinite(t) || !std::isfinite(v) || full()) return false;
  const bool rate = m_settings.measure == WindowMeasure::rate;
  if (!m_points.empty()) {
    Point& last = m_points.back();
    if (t < last.t) return false;
    if (!rate && v < last.v) return false;
    if (!rate && t == last.t) {  // lines read in one go: the last of them stands for all
      last.v = v;
      return true;
    }
  }
  m_points.push_back({t, v});
  if (!m_origin) {
    const Point& first = m_points.front();
    const double steps = rate ? static_cast<double>(m_points.size() - 1) : v - first.v;
    if (t - first.t >= m_settings.warmup_s && steps >= m_settings.warmup_steps)
      m_origin = m_points.size() - 1;
  }
  return true;
}

WindowEstimate RateWindow::estimate(bool from_first) const {
  if (m_points.empty()) return {};
  if (from_first) return estimate_from(0);
  if (!m_origin) {
    WindowEstimate e;
    e.first_t = m_points.front().t;
    return e;
  }
  return estimate_from(*m_origin);
}

WindowEstimate RateWindow::estimate_from(std::size_t first) const {
  WindowEstimate e;
  const bool rate = m_settings.measure == WindowMeasure::rate;
  e.warmed_up = m_origin.has_value();
  e.first_t = m_points.front().t;
  e.origin_t = m_points[first].t;
  e.warmup_steps = rate ? static_cast<double>(first) : m_points[first].v - m_points.front().v;
  const std::size_t n = m_points.size() - first;
  e.points = static_cast<int>(n);
  const Point& p0 = m_points[first];
  const Point& pn = m_points.back();
  e.span_s = pn.t - p0.t;
  if (n < 2) return e;
  const double confidence = std::clamp(m_settings.confidence, 0.5, 0.9999);
  if (rate) {
    const std::size_t batches = std::min<std::size_t>(k_window_batches, n);
    std::vector<double> means;
    for (std::size_t b = 0; b < batches; ++b) {
      const std::size_t lo = first + b * n / batches, hi = first + (b + 1) * n / batches;
      double sum = 0;
      for (std::size_t i = lo; i < hi; ++i) sum += m_points[i].v;
      means.push_back(sum / static_cast<double>(hi - lo));
    }
    double mean = 0;
    for (double m : means) mean += m;
    mean /= static_cast<double>(batches);
    e.value = mean * m_settings.scale;
    e.batches = static_cast<int>(batches);
    if (batches < 2) return e;
    double ss = 0;
    for (double m : means) ss += (m - mean) * (m - mean);
    const double se =
        std::sqrt(ss / static_cast<double>(batches - 1) / static_cast<double>(batches));
    set_interval(e, se, batches, confidence, m_settings.scale);
    return e;
  }
  if (e.span_s <= 0) {
    e.points = 1;  // every point at one moment: no rate yet
    return e;
  }
  const double r = (pn.v - p0.v) / e.span_s;
  e.value = r * m_settings.scale;
  // Batch boundaries: the first point at or after each of B equal stretches of time.
  const std::size_t want = std::min<std::size_t>(k_window_batches, n - 1);
  std::vector<std::size_t> cut = {first};
  for (std::size_t b = 1; b < want; ++b) {
    const double tau = p0.t + e.span_s * static_cast<double>(b) / static_cast<double>(want);
    std::size_t i = cut.back() + 1;
    while (i < m_points.size() - 1 && m_points[i].t < tau) ++i;
    if (i < m_points.size() - 1 && i > cut.back()) cut.push_back(i);
  }
  cut.push_back(m_points.size() - 1);
  const std::size_t batches = cut.size() - 1;
  e.batches = static_cast<int>(batches);
  if (batches < 2) return e;
  double ss = 0;
  for (std::size_t b = 0; b < batches; ++b) {
    const double d = m_points[cut[b + 1]].t - m_points[cut[b]].t;
    const double c = m_points[cut[b + 1]].v - m_points[cut[b]].v;
    ss += (c - r * d) * (c - r * d);
  }
  const double mean_d = e.span_s / static_cast<double>(batches);
  const double se =
      std::sqrt(ss / static_cast<double>(batches - 1) / static_cast<double>(batches)) / mean_d;
  set_interval(e, se, batches, confidence, m_settings.scale);
  return e;
}

bool RateWindow::judgeable(const WindowEstimate& e) const {
  return e.warmed_up && e.has_value() && e.batches >= k_min_stop_batches &&
         e.span_s >= m_settings.min_s && e.low && e.high;
}

bool RateWindow::target_met(const WindowEstimate& e) const {
  if (!judgeable(e)) return false;
  const auto rel = e.relative_half_width();
  return rel && *rel <= m_settings.target;
}

}  // namespace tune::tuner
