#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attnsim {

std::size_t editDistance(std::string_view a, std::string_view b);
// The candidate closest to `word`, or "" when none is close enough to be a plausible typo.
std::string closestMatch(std::string_view word, const std::vector<std::string>& candidates);
// What the user probably meant: the candidates that start with `word` when there are any (someone
// typed the start of an id, e.g. h100 for h100-sxm and h100-pcie), else the closest plausible typo.
std::vector<std::string> suggestions(std::string_view word, const std::vector<std::string>& candidates);
// " (did you mean 'x'?)", " (did you mean 'x' or 'y'?)" or "".
std::string didYouMean(std::string_view word, const std::vector<std::string>& candidates);
// Today's date (UTC) as YYYY-MM-DD.
std::string todayIso();
std::string join(const std::vector<std::string>& items, std::string_view separator);
// `text` with & < > " escaped for HTML or XML, and ' written as `apostrophe` (&#39; or &apos;).
std::string escapeMarkup(std::string_view text, std::string_view apostrophe);

// The first place where `text` is not clean UTF-8 text: a byte that starts no valid UTF-8
// sequence (including overlong forms and surrogates), or a control character other than tab, line
// feed and carriage return. Line and column are 1-based (the column counts characters).
struct TextDefect {
  int line = 1, column = 1;
  std::string what;  // "byte 0xe9 is not UTF-8", "control character 0x07"
};
std::optional<TextDefect> findTextDefect(std::string_view text);

}  // namespace attnsim
