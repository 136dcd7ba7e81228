#pragma once
// Placeholder formats of engine messages ({name:format}): engines whose errors print Python values
// (vLLM's AttentionSelectorConfig repr) spell them as Python does. docs/RULES.md lists them.
#include <string>
#include <string_view>
#include <vector>

#include "core/Value.hpp"

namespace attnsim {

// py: Python's str() (True, False, None); torch: a model dtype as str(torch.dtype) (torch.bfloat16);
// upper: upper case (an enum member's name).
extern const std::vector<std::string> kMessageFormats;

// The value as `format` spells it; an empty format is the plain display.
[[nodiscard]] std::string formatValue(const Value& v, std::string_view format);

}  // namespace attnsim
