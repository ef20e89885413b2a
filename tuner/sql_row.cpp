// SqlRow's conversions (rdb_storage.h): a cell as SQLite typed it or as PostgreSQL's text.
#include <fmt/format.h>
#include <cmath>
#include <cstdlib>

#include "tuner/rdb_storage.h"

namespace tune::tuner {

bool SqlRow::is_null(std::size_t col) const {
  return std::holds_alternative<std::monostate>(m_cells.at(col));
}

std::int64_t SqlRow::int64(std::size_t col) const {
  const auto& c = m_cells.at(col);
  if (const auto* i = std::get_if<std::int64_t>(&c)) return *i;
  if (const auto* d = std::get_if<double>(&c)) return static_cast<std::int64_t>(*d);
  if (const auto* s = std::get_if<std::string>(&c)) return std::strtoll(s->c_str(), nullptr, 10);
  return 0;
}

double SqlRow::real(std::size_t col) const {
  const auto& c = m_cells.at(col);
  if (const auto* d = std::get_if<double>(&c)) return *d;
  if (const auto* i = std::get_if<std::int64_t>(&c)) return static_cast<double>(*i);
  if (const auto* s = std::get_if<std::string>(&c)) return std::strtod(s->c_str(), nullptr);
  return std::nan("");
}

std::string SqlRow::text(std::size_t col) const {
  const auto& c = m_cells.at(col);
  if (const auto* s = std::get_if<std::string>(&c)) return *s;
  if (const auto* i = std::get_if<std::int64_t>(&c)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&c)) return fmt::format("{}", *d);
  return {};
}

}  // namespace tune::tuner
