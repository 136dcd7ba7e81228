#include "core/Strings.hpp"

#include <algorithm>
#include <numeric>

namespace attnsim {

std::size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const std::size_t substitution = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitution});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string closestMatch(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = 0;
  for (const auto& c : candidates) {
    const std::size_t d = editDistance(word, c);
    if (best.empty() || d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  // A plausible typo changes at most a third of the word (and at least allows one edit).
  const std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  return best_distance <= limit ? best : std::string{};
}

std::vector<std::string> suggestions(std::string_view word, const std::vector<std::string>& candidates) {
  std::vector<std::string> out;
  if (!word.empty()) {
    for (const auto& c : candidates) {
      if (c.size() > word.size() && c.compare(0, word.size(), word) == 0) out.push_back(c);
    }
  }
  // A prefix that fits most of the list ('h') says nothing; fall back to the closest typo.
  constexpr std::size_t kMaxPrefixMatches = 6;
  if (out.size() > kMaxPrefixMatches) out.clear();
  if (out.empty()) {
    std::string match = closestMatch(word, candidates);
    if (!match.empty()) out.push_back(std::move(match));
  }
  return out;
}

std::string didYouMean(std::string_view word, const std::vector<std::string>& candidates) {
  const std::vector<std::string> matches = suggestions(word, candidates);
  if (matches.empty()) return {};
  std::vector<std::string> quoted;
  quoted.reserve(matches.size());
  for (const auto& m : matches) quoted.push_back("'" + m + "'");
  const std::string last = quoted.back();
  quoted.pop_back();
  return " (did you mean " + (quoted.empty() ? last : join(quoted, ", ") + " or " + last) + "?)";
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += separator;
    out += items[i];
  }
  return out;
}

std::string escapeMarkup(std::string_view text, std::string_view apostrophe) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += apostrophe;
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace attnsim
