#include "core/Files.hpp"

#include <fstream>

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

}  // namespace attnsim
