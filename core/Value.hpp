#pragma once
// A dynamically typed scalar: the values of scenario variables and rule expressions.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>

namespace attnsim {

using Value = std::variant<std::monostate, bool, std::int64_t, double, std::string>;

inline bool isNull(const Value& v) { return std::holds_alternative<std::monostate>(v); }
std::optional<double> asNumber(const Value& v);
bool truthy(const Value& v);
bool valuesEqual(const Value& a, const Value& b);
// Renders a value as an expression literal would be written (null, true, 12, 9.0, 'fa3').
std::string toLiteral(const Value& v);
// Renders a value for people (strings without quotes).
std::string toDisplay(const Value& v);

// Variables visible to rule expressions, by name.
using Env = std::map<std::string, Value, std::less<>>;

}  // namespace attnsim
