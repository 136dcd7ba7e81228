#include "core/Value.hpp"

#include <fmt/format.h>

namespace attnsim {

std::optional<double> asNumber(const Value& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  return std::nullopt;
}

bool truthy(const Value& v) {
  if (isNull(v)) return false;
  if (const auto* b = std::get_if<bool>(&v)) return *b;
  if (const auto n = asNumber(v)) return *n != 0.0;
  return !std::get<std::string>(v).empty();
}

bool valuesEqual(const Value& a, const Value& b) {
  const auto na = asNumber(a);
  const auto nb = asNumber(b);
  if (na && nb) return *na == *nb;
  return a == b;
}

std::string toLiteral(const Value& v) {
  if (isNull(v)) return "null";
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return fmt::format("{}", *d);
  return "'" + std::get<std::string>(v) + "'";
}

std::string toDisplay(const Value& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  return toLiteral(v);
}

}  // namespace attnsim
