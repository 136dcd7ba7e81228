#pragma once
// The key schema of each catalog file kind (and of the measurement CSV's columns): one table per
// kind in core/schema/<kind>.yaml, compiled into the binary. The loaders' key check reads it (an
// unknown key is matched against the keys the schema lists for that place, and the error points at
// the reference), `attnsim docs --keys` renders it as docs/KEYS.md, and a test holds every key a
// loader reads and every key the schema lists to each other (tests/test_key_schema.cpp).
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/Embedded.hpp"

namespace attnsim {

struct KeySpec {
  // Dotted key path: `*` stands for a key that is data (a layer type, an architecture), `[]` for
  // the items of a list of mappings: `attention_layers.*.num_heads`, `variants[].when`.
  std::string path;
  std::string type;
  bool required = false;
  std::string required_when;  // required only when this holds ("platform is cuda"); empty: as `required`
  std::string default_value;  // empty: none
  std::string allowed;        // empty: any value of the type
  std::string meaning;
};

struct FileSchema {
  std::string kind;                // file name stem: hardware_profile
  std::string title;               // section heading
  std::vector<std::string> files;  // folder prefixes of the files it describes (hardware/profiles/)
  std::string intro;
  std::vector<KeySpec> keys;
  [[nodiscard]] const KeySpec* find(std::string_view concrete_path) const;
  // The keys directly under the mapping at `concrete_parent` ("" for the top level).
  [[nodiscard]] std::vector<std::string> keysUnder(std::string_view concrete_parent) const;
};

// Generated at build time by cmake/EmbedCatalog.cmake (core/schema/*.yaml).
const std::vector<EmbeddedFile>& embeddedSchemaFiles();

const std::vector<FileSchema>& keySchemas();
const FileSchema& keySchema(std::string_view kind);
// The schema of a catalog file by its path (relative, or an overlay's full path); null when none
// describes it (a sweep spec, an engine policy).
const FileSchema* schemaForFile(std::string_view file);
// "; the keys of a <title>: docs/KEYS.md#<kind>" for an unknown-key error in that file; empty when no
// schema describes it.
std::string keySchemaReference(std::string_view file);
// Whether a concrete key path (`attention_layers.local.num_heads`, `variants[2].when`) is an
// instance of a schema path.
bool keyPathMatches(std::string_view pattern, std::string_view concrete);

// While one is alive on this thread, every key a YamlReader is asked for (read or probed for) is
// recorded with the file it was asked of: the loaders' own list of the keys they accept.
class KeyAudit {
 public:
  KeyAudit();
  ~KeyAudit();
  KeyAudit(const KeyAudit&) = delete;
  KeyAudit& operator=(const KeyAudit&) = delete;
  KeyAudit(KeyAudit&&) = delete;
  KeyAudit& operator=(KeyAudit&&) = delete;
  // {file, key path}
  [[nodiscard]] const std::vector<std::pair<std::string, std::string>>& lookups() const { return lookups_; }
  static void record(const std::string& file, std::string path);

 private:
  std::vector<std::pair<std::string, std::string>> lookups_;
  KeyAudit* previous_ = nullptr;
};

}  // namespace attnsim
