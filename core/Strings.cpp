#include "core/Strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <ctime>
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

std::string todayIso() {
  const std::time_t t = std::time(nullptr);
  std::array<char, 16> buf{};
  std::strftime(buf.data(), buf.size(), "%Y-%m-%d", std::gmtime(&t));
  return buf.data();
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

namespace {

// The length of the UTF-8 sequence starting at `i`, or 0 when it is not one (RFC 3629: no
// overlong forms, no surrogates, nothing past U+10FFFF).
std::size_t utf8Length(std::string_view t, std::size_t i) {
  const auto byte = [&](std::size_t k) { return k < t.size() ? static_cast<unsigned char>(t[k]) : 0U; };
  const unsigned c = byte(i);
  if (c < 0x80) return 1;
  const auto cont = [&](std::size_t k, unsigned lo = 0x80, unsigned hi = 0xBF) {
    return byte(k) >= lo && byte(k) <= hi;
  };
  if (c >= 0xC2 && c <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    const unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    return cont(i + 1, lo, hi) && cont(i + 2) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    const unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    return cont(i + 1, lo, hi) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  }
  return 0;
}

}  // namespace

std::optional<TextDefect> findTextDefect(std::string_view text) {
  int line = 1, column = 1;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t n = utf8Length(text, i);
    if (n == 0) return TextDefect{line, column, fmt::format("byte 0x{:02x} is not UTF-8", c)};
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F) {
      return TextDefect{line, column, fmt::format("control character 0x{:02x}", c)};
    }
    if (c == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
    i += n;
  }
  return std::nullopt;
}

}  // namespace attnsim
