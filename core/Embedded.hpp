#pragma once
// A file compiled into the binary by cmake/EmbedCatalog.cmake: its path relative to the source
// tree and its bytes.
#include <string_view>
#include <vector>

namespace attnsim {

struct EmbeddedFile {
  std::string_view path;
  std::string_view content;
};

}  // namespace attnsim
