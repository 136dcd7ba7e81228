#pragma once
// The set of catalog YAML files: the embedded default, optionally overlaid by a directory whose
// files replace embedded ones of the same relative path and add new ones.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/Embedded.hpp"

namespace attnsim {

// Generated at build time by cmake/EmbedCatalog.cmake.
const std::vector<EmbeddedFile>& embeddedCatalogFiles();

struct CatalogFile {
  std::string path;     // relative, e.g. "hardware/profiles/h100-sxm.yaml"
  std::string display;  // what error messages call it
  std::string content;
};

class CatalogSource {
 public:
  static CatalogSource embedded();
  // Exactly these files (e.g. the catalog a study stored with its sweep).
  static CatalogSource fromFiles(std::vector<CatalogFile> files);
  // Replaces or adds the *.yaml files found under `dir` (same layout as the embedded catalog).
  void overlayDirectory(const std::filesystem::path& dir);
  // Replaces the file of the same relative path, or adds it.
  void overlayFile(CatalogFile file);
  // Files whose relative path starts with `prefix`, sorted by path.
  [[nodiscard]] std::vector<const CatalogFile*> filesUnder(std::string_view prefix) const;
  [[nodiscard]] const std::vector<CatalogFile>& files() const { return files_; }
  // A stable hash of every path and byte, recorded as provenance with results.
  [[nodiscard]] std::string contentHash() const;

 private:
  std::vector<CatalogFile> files_;
};

}  // namespace attnsim
