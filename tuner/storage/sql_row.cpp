// SqlRow's conversions (rdb_storage.h): a cell as SQLite typed it or as PostgreSQL's text; and
// the cells of Optuna's value and datetime columns.
#include <fmt/format.h>
#include <cmath>
#include <cstdlib>
#include <ctime>

#include "tuner/storage/rdb_storage.h"

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

SqlValue finite_or_null(double v) { return std::isfinite(v) ? SqlValue(v) : SqlValue(); }
std::string value_type(double v) {
  if (std::isnan(v)) return "NAN";
  if (std::isinf(v)) return v > 0 ? "INF_POS" : "INF_NEG";
  return "FINITE";
}

double value_from_row(const SqlRow& row, std::size_t value_col, std::size_t type_col) {
  const std::string type = row.text(type_col);
  if (type == "INF_POS") return HUGE_VAL;
  if (type == "INF_NEG") return -HUGE_VAL;
  if (type == "NAN" || row.is_null(value_col)) return std::nan("");
  return row.real(value_col);
}

std::optional<std::chrono::system_clock::time_point> parse_datetime(const std::string& s) {
  std::tm tm{};
  const char* rest = strptime(s.c_str(), "%Y-%m-%d %H:%M:%S", &tm);
  if (rest == nullptr) return std::nullopt;
  const std::time_t secs = timegm(&tm);
  long micros = 0;
  if (*rest == '.') {
    std::string frac = std::string(rest + 1).substr(0, 6);
    frac.resize(6, '0');
    micros = std::strtol(frac.c_str(), nullptr, 10);
  }
  return std::chrono::system_clock::from_time_t(secs) + std::chrono::microseconds(micros);
}

}  // namespace tune::tuner
