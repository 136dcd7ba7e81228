#pragma once
// Text answers are built into a string (printed by the CLI, returned by the Python module): fmt's
// format appended to it.
#include <fmt/format.h>

#include <iterator>
#include <string>

namespace attnsim {

template <class... Args>
void appendf(std::string& out, fmt::format_string<Args...> format, Args&&... args) {
  fmt::format_to(std::back_inserter(out), format, std::forward<Args>(args)...);
}

}  // namespace attnsim
