#include "core/Files.hpp"

#include <fmt/format.h>

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

}  // namespace attnsim
