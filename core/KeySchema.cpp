#include "core/KeySchema.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "core/Error.hpp"
#include "core/YamlReader.hpp"

namespace attnsim {

namespace {

thread_local KeyAudit* g_key_audit = nullptr;
thread_local bool g_loading_key_schemas = false;

std::vector<std::string_view> splitKeyPath(std::string_view path) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (start <= path.size()) {
    const auto dot = path.find('.', start);
    const auto end = dot == std::string_view::npos ? path.size() : dot;
    parts.push_back(path.substr(start, end - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts;
}

// `variants[3]` -> `variants[]`.
std::string withoutListIndex(std::string_view segment) {
  const auto open = segment.find('[');
  if (open == std::string_view::npos || segment.back() != ']') return std::string(segment);
  return std::string(segment.substr(0, open)) + "[]";
}

FileSchema parseFileSchema(const YamlReader& r, const std::string& stem) {
  FileSchema s;
  s.kind = r.get<std::string>("kind");
  if (s.kind != stem) r.fail("kind", fmt::format("kind '{}' must match the file name '{}'", s.kind, stem));
  s.title = r.get<std::string>("title");
  s.files = r.get<std::vector<std::string>>("files", {});
  s.intro = r.get<std::string>("intro");
  std::set<std::string> seen;
  for (const auto& k : r.list("keys")) {
    KeySpec spec;
    spec.path = k.get<std::string>("key");
    spec.type = k.get<std::string>("type");
    spec.required = k.get<bool>("required", false);
    spec.required_when = k.get<std::string>("required_when", "");
    if (spec.required && !spec.required_when.empty()) k.fail("required_when", "a key is required or required when");
    spec.default_value = k.get<std::string>("default", "");
    spec.allowed = k.get<std::string>("allowed", "");
    spec.meaning = k.get<std::string>("meaning");
    if (!seen.insert(spec.path).second) k.fail("key", "key '" + spec.path + "' is listed twice");
    k.finish();
    s.keys.push_back(std::move(spec));
  }
  r.finish();
  return s;
}

}  // namespace

bool keyPathMatches(std::string_view pattern, std::string_view concrete) {
  const auto p = splitKeyPath(pattern);
  const auto c = splitKeyPath(concrete);
  if (p.size() != c.size()) return false;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] == "*") continue;
    if (p[i] != withoutListIndex(c[i])) return false;
  }
  return true;
}

const KeySpec* FileSchema::find(std::string_view concrete_path) const {
  // A key spelled out wins over a data wildcard at the same place.
  const KeySpec* wildcard = nullptr;
  for (const auto& k : keys) {
    if (!keyPathMatches(k.path, concrete_path)) continue;
    if (k.path.find('*') == std::string::npos) return &k;
    if (wildcard == nullptr) wildcard = &k;
  }
  return wildcard;
}

std::vector<std::string> FileSchema::keysUnder(std::string_view concrete_parent) const {
  std::vector<std::string> out;
  const std::size_t depth = concrete_parent.empty() ? 0 : splitKeyPath(concrete_parent).size();
  for (const auto& k : keys) {
    const auto parts = splitKeyPath(k.path);
    if (parts.size() != depth + 1 || parts.back() == "*") continue;
    std::string parent;
    for (std::size_t i = 0; i < depth; ++i) parent.append(i == 0 ? "" : ".").append(parts[i]);
    if (depth == 0 || keyPathMatches(parent, concrete_parent)) {
      const auto last = parts.back();
      out.emplace_back(last.substr(0, last.find('[')));
    }
  }
  return out;
}

const std::vector<FileSchema>& keySchemas() {
  static const std::vector<FileSchema> schemas = [] {
    g_loading_key_schemas = true;
    std::vector<FileSchema> out;
    for (const auto& f : embeddedSchemaFiles()) {
      const std::string path(f.path);
      const auto r = YamlReader::parseDocument(f.content, path);
      out.push_back(parseFileSchema(r, std::filesystem::path(path).stem().string()));
    }
    g_loading_key_schemas = false;
    return out;
  }();
  return schemas;
}

const FileSchema& keySchema(std::string_view kind) {
  for (const auto& s : keySchemas()) {
    if (s.kind == kind) return s;
  }
  throw std::logic_error(fmt::format("no key schema '{}' in core/schema/", kind));
}

const FileSchema* schemaForFile(std::string_view file) {
  if (g_loading_key_schemas) return nullptr;
  const std::string generic = std::filesystem::path(file).generic_string();
  const std::string name = std::filesystem::path(file).filename().string();
  if (name == "engine.yaml") return nullptr;
  const FileSchema* best = nullptr;
  std::size_t best_length = 0;
  for (const auto& s : keySchemas()) {
    for (const auto& folder : s.files) {
      const auto at = generic.rfind(folder);
      if (at == std::string::npos || (at != 0 && generic[at - 1] != '/')) continue;
      // The file lies in that folder itself or (for `backends/`) one engine folder below it.
      if (folder.size() > best_length) {
        best = &s;
        best_length = folder.size();
      }
    }
  }
  return best;
}

std::string keySchemaReference(std::string_view file) {
  const FileSchema* schema = schemaForFile(file);
  return schema == nullptr ? std::string()
                           : fmt::format("; the keys of a {}: docs/KEYS.md#{}", schema->title, schema->kind);
}

KeyAudit::KeyAudit() : previous_(g_key_audit) { g_key_audit = this; }
KeyAudit::~KeyAudit() { g_key_audit = previous_; }

void KeyAudit::record(const std::string& file, std::string path) {
  if (g_key_audit != nullptr) g_key_audit->lookups_.emplace_back(file, std::move(path));
}

}  // namespace attnsim
