#include "catalog/CatalogSource.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/Error.hpp"
#include "core/Strings.hpp"

namespace attnsim {

CatalogSource CatalogSource::embedded() {
  CatalogSource s;
  for (const auto& f : embeddedCatalogFiles()) {
    s.files_.push_back({std::string(f.path), std::string(f.path), std::string(f.content)});
  }
  return s;
}

CatalogSource CatalogSource::fromFiles(std::vector<CatalogFile> files) {
  CatalogSource s;
  s.files_ = std::move(files);
  return s;
}

namespace {

// The folders the catalog reads (catalog/CMakeLists.txt embeds the same): anything else in an overlay
// would be skipped without a word, so it is an error naming the nearest folder.
const std::vector<std::string> kCatalogFolders{"hardware/profiles", "hardware/calibrations", "hardware/platforms",
                                               "model/configs",     "backends/kernels",      "backends/<engine>"};

void checkOverlayPath(const std::filesystem::path& file, const std::filesystem::path& dir) {
  const std::string relative = std::filesystem::relative(file, dir).generic_string();
  const std::string folder = std::filesystem::path(relative).parent_path().generic_string();
  const bool known = folder.starts_with("backends/") ||
                     std::find(kCatalogFolders.begin(), kCatalogFolders.end(), folder) != kCatalogFolders.end();
  if (!known) {
    throw UsageError(
        fmt::format("--catalog {}: '{}' is in no catalog folder, so nothing would read it; the folders "
                    "are {}{}",
                    dir.string(), relative, join(kCatalogFolders, ", "), didYouMean(folder, kCatalogFolders)));
  }
  if (file.extension() != ".yaml") {
    throw UsageError(
        fmt::format("--catalog {}: '{}' is not a .yaml file, so nothing would read it", dir.string(), relative));
  }
}

}  // namespace

void CatalogSource::overlayDirectory(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw UsageError(fmt::format("--catalog: '{}' is not a directory", dir.string()));
  std::vector<fs::path> found;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    checkOverlayPath(entry.path(), dir);
    found.push_back(entry.path());
  }
  std::sort(found.begin(), found.end());
  for (const auto& p : found) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw UsageError(fmt::format("cannot read catalog file '{}'", p.string()));
    std::ostringstream text;
    text << in.rdbuf();
    overlayFile({fs::relative(p, dir).generic_string(), p.string(), text.str()});
  }
}

void CatalogSource::overlayFile(CatalogFile file) {
  auto same = std::find_if(files_.begin(), files_.end(), [&](const CatalogFile& f) { return f.path == file.path; });
  if (same != files_.end()) {
    *same = std::move(file);
  } else {
    files_.push_back(std::move(file));
  }
}

std::vector<const CatalogFile*> CatalogSource::filesUnder(std::string_view prefix) const {
  std::vector<const CatalogFile*> out;
  for (const auto& f : files_) {
    if (std::string_view(f.path).substr(0, prefix.size()) == prefix) out.push_back(&f);
  }
  std::sort(out.begin(), out.end(), [](const CatalogFile* a, const CatalogFile* b) { return a->path < b->path; });
  return out;
}

std::string CatalogSource::contentHash() const {
  // FNV-1a 64 over sorted (path, content): stable across runs and machines.
  std::vector<const CatalogFile*> sorted;
  for (const auto& f : files_) sorted.push_back(&f);
  std::sort(sorted.begin(), sorted.end(), [](const CatalogFile* a, const CatalogFile* b) { return a->path < b->path; });
  std::uint64_t h = 14695981039346656037ULL;
  auto mix = [&h](std::string_view bytes) {
    for (const char c : bytes) {
      h ^= static_cast<unsigned char>(c);
      h *= 1099511628211ULL;
    }
    h ^= 0xff;
    h *= 1099511628211ULL;
  };
  for (const auto* f : sorted) {
    mix(f->path);
    mix(f->content);
  }
  return fmt::format("{:016x}", h);
}

}  // namespace attnsim
