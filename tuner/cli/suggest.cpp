#include "tuner/cli/suggest.h"

#include <algorithm>

#include "tuner/base/text.h"

namespace tune::tuner {
namespace {

}  // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // d[i][j]: the distance between a's first i and b's first j characters; three rows suffice.
  const std::size_t n = b.size();
  std::vector<std::size_t> before(n + 1), previous(n + 1), current(n + 1);
  for (std::size_t j = 0; j <= n; ++j) previous[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= n; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        current[j] = std::min(current[j], before[j - 2] + 1);
    }
    std::swap(before, previous);
    std::swap(previous, current);
  }
  return previous[n];
}

std::optional<std::string> nearest_name(std::string_view word,
                                        const std::vector<std::string>& names) {
  const std::string w = ascii_lower(word);
  if (w.empty()) return std::nullopt;
  std::optional<std::string> best;
  std::size_t best_distance = 0;
  for (const auto& name : names) {
    const std::string n = ascii_lower(name);
    std::size_t d = edit_distance(w, n);
    const std::size_t limit = std::max(w.size(), n.size()) <= 4 ? 1 : 2;
    if (d > limit && w.size() >= 3 && n.starts_with(w)) d = limit;  // "conf" for confirm
    if (d > limit) continue;
    if (!best || d < best_distance) {
      best = name;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace tune::tuner
