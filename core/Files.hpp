#pragma once
// Writing results to disk so that a failure never leaves a half-written file behind.
#include <filesystem>
#include <string>

namespace attnsim {

// Writes `text` beside `path` and renames it into place; UsageError naming `path` when it cannot.
void writeFileAtomically(const std::filesystem::path& path, const std::string& text);

}  // namespace attnsim
