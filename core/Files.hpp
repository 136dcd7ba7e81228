#pragma once
// Reading input files whole, and writing results so that a failure never leaves a half-written file behind.
#include <filesystem>
#include <string>
#include <string_view>

namespace attnsim {

// Writes `text` beside `path` and renames it into place; UsageError naming `path` when it cannot.
void writeFileAtomically(const std::filesystem::path& path, const std::string& text);

// The whole file as bytes; UsageError "<what> <path>: cannot read" when it cannot be opened.
std::string readTextFile(const std::filesystem::path& path, std::string_view what);
// The decompressed content of a gzip file; UsageError naming `what` and `path` when it cannot be
// opened or is not valid gzip (a truncated file included).
std::string readGzipFile(const std::filesystem::path& path, std::string_view what);

}  // namespace attnsim
