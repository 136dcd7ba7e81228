// YamlReader::getNumbers: a list of numbers written either as a YAML list or as one text of numbers.
//
// The calibration files hold grids of tens of thousands of numbers. yaml-cpp builds a node per item
// of a list (and scans each through its regular expressions), so such a grid written as a list made
// most of the catalog's load time; written as one block of text it is one node, whose numbers
// std::from_chars reads.
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <string_view>

#include "core/YamlReader.hpp"

namespace attnsim {

namespace {

constexpr std::string_view kNumberSeparators = " \t\r\n,";

// The number a list item or a token of a text holds; nullopt when it holds something else.
std::optional<double> finiteNumber(std::string_view text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

std::vector<double> YamlReader::getNumbers(std::string_view key, double min, double max) const {
  const auto node = raw(key);
  if (!node) failMissing(key);
  std::vector<double> out;
  auto take = [&](std::optional<double> v, std::string_view written, const YAML::Node& at) {
    if (!v) failAt(at, key, fmt::format("value {} ('{}') is not a number", out.size() + 1, written));
    if (!(*v >= min && *v <= max))
      failAt(at, key, fmt::format("value {} ({}) is outside [{}, {}]", out.size() + 1, *v, min, max));
    out.push_back(*v);
  };
  if (node->IsSequence()) {
    out.reserve(node->size());
    for (const auto& item : *node) {
      const std::string written = item.IsScalar() ? item.Scalar() : std::string("a list or mapping");
      take(item.IsScalar() ? finiteNumber(written) : std::nullopt, written, item);
    }
  } else if (node->IsScalar()) {
    const std::string_view text = node->Scalar();
    for (std::size_t at = text.find_first_not_of(kNumberSeparators); at != std::string_view::npos;) {
      const std::size_t end = std::min(text.find_first_of(kNumberSeparators, at), text.size());
      const std::string_view token = text.substr(at, end - at);
      take(finiteNumber(token), token, *node);
      at = text.find_first_not_of(kNumberSeparators, end);
    }
  } else {
    failAt(*node, key, "expected a list of numbers, or a text of numbers separated by spaces, commas or lines");
  }
  if (out.empty()) failAt(*node, key, "expected at least one number");
  return out;
}

}  // namespace attnsim
