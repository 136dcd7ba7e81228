#include "core/Files.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <array>
#include <fstream>
#include <sstream>

#include "core/Error.hpp"

namespace attnsim {

void writeFileAtomically(const std::filesystem::path& path, const std::string& text) {
  const auto tmp = path.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f || !(f << text) || !f.flush()) throw UsageError("cannot write '" + path.string() + "'");
  }
  std::filesystem::rename(tmp, path);
}

std::string readTextFile(const std::filesystem::path& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(fmt::format("{} {}: cannot read", what, path.string()));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string readGzipFile(const std::filesystem::path& path, std::string_view what) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) throw UsageError(fmt::format("{} {}: cannot read", what, path.string()));
  std::string text;
  std::array<char, 1 << 16> buffer{};
  int n = 0;
  while ((n = gzread(f, buffer.data(), static_cast<unsigned>(buffer.size()))) > 0) {
    text.append(buffer.data(), static_cast<std::size_t>(n));
  }
  int code = Z_OK;
  const std::string error = n < 0 ? gzerror(f, &code) : "";
  gzclose(f);
  if (n < 0) throw UsageError(fmt::format("{} {}: not valid gzip ({})", what, path.string(), error));
  return text;
}

}  // namespace attnsim
