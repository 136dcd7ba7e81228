// The key schemas (core/schema/*.yaml) against the loaders: every key a loader reads is listed,
// every listed key is read by its loader, and the loaders' unknown-key errors read the schema.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "catalog/Catalog.hpp"
#include "core/Error.hpp"
#include "core/KeySchema.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

// Every key the loaders ask for while loading the shipped catalog and the test overlays (one that
// stops with a catalog error still records the keys read before it), by schema kind.
std::map<std::string, std::set<std::string>> keysTheLoadersRead() {
  static const auto read = [] {
    std::map<std::string, std::set<std::string>> out;
    KeyAudit audit;
    (void)Catalog::loadDefault();
    const auto root = std::filesystem::path(ATTNSIM_SOURCE_DIR) / "tests/data/overlays";
    for (const auto& dir : std::filesystem::directory_iterator(root)) {
      if (!dir.is_directory()) continue;
      // tests/data/overlays/adding keeps its catalog files apart from the CSVs docs/ADDING.md imports.
      const bool nested = std::filesystem::is_directory(dir.path() / "catalog");
      // An overlay made to fail (a misplaced file) stops before or while loading: its reads until then count.
      try {
        auto source = CatalogSource::embedded();
        source.overlayDirectory(nested ? dir.path() / "catalog" : dir.path());
        (void)Catalog::load(source);
      } catch (const InputError&) {
      }
    }
    for (const auto& [file, path] : audit.lookups()) {
      if (const auto* schema = schemaForFile(file)) out[schema->kind].insert(path);
    }
    return out;
  }();
  return read;
}

TEST(KeySchema, EveryKeyALoaderReadsIsListedInItsSchema) {
  std::string missing;
  for (const auto& [kind, paths] : keysTheLoadersRead()) {
    for (const auto& path : paths) {
      if (keySchema(kind).find(path) == nullptr) missing.append(kind).append(": ").append(path).append("\n");
    }
  }
  EXPECT_EQ(missing, "") << "keys the loaders read that core/schema/<kind>.yaml does not list";
}

TEST(KeySchema, EveryKeyASchemaListsIsReadByItsLoader) {
  const auto read = keysTheLoadersRead();
  std::string unread;
  for (const auto& schema : keySchemas()) {
    if (schema.files.empty()) continue;  // the measurement CSV: its importer reads the columns
    const auto paths = read.find(schema.kind);
    ASSERT_NE(paths, read.end()) << schema.kind;
    for (const auto& key : schema.keys) {
      const bool seen = std::any_of(paths->second.begin(), paths->second.end(),
                                    [&](const std::string& p) { return keyPathMatches(key.path, p); });
      if (!seen) unread.append(schema.kind).append(": ").append(key.path).append("\n");
    }
  }
  EXPECT_EQ(unread, "") << "keys core/schema/<kind>.yaml lists that no loader reads";
}

}  // namespace
}  // namespace attnsim::test

namespace attnsim::test {
namespace {

// SGLang's fa3 MLA backend with its extend rule rewritten: mha_when always reads no prefix band.
std::string fa3MlaWithExtend(const std::string& extend) {
  std::string text = embeddedFile("backends/sglang/fa3-mla.yaml");
  const std::string rule = "mha_when: prefix_outside_band, absorbed_below_prefix_tokens: 8192";
  const auto at = text.find(rule);
  EXPECT_NE(at, std::string::npos) << "backends/sglang/fa3-mla.yaml no longer writes " << rule;
  if (at != std::string::npos) text.replace(at, rule.size(), extend);
  return text;
}

std::string loadError(const std::string& relative_path, const std::string& content) {
  OverlayDir overlay;
  overlay.write(relative_path, content);
  try {
    (void)overlay.load();
  } catch (const CatalogError& e) {
    return e.what();
  }
  return "loaded";
}

// The schema knows keys this file's other values leave unread: a misspelling of one is named, which
// the keys the loader happened to read could not do, and the error points at the reference.
TEST(KeySchema, AnUnknownKeyIsMatchedAgainstEveryKeyTheSchemaListsThere) {
  const auto error = loadError("backends/sglang/fa3-mla.yaml",
                               fa3MlaWithExtend("mha_when: always, absorbed_below_prefix_token: 8192"));
  EXPECT_NE(error.find("unknown key 'absorbed_below_prefix_token' (did you mean 'absorbed_below_prefix_tokens'?)"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("; the keys of a backend: docs/KEYS.md#backend"), std::string::npos) << error;
}

// A listed key that the values beside it make unread is refused as having no effect, with its meaning.
TEST(KeySchema, AListedKeyTheValuesBesideItLeaveUnreadHasNoEffectAndIsRefused) {
  const auto error = loadError("backends/sglang/fa3-mla.yaml",
                               fa3MlaWithExtend("mha_when: always, absorbed_below_prefix_tokens: 8192"));
  EXPECT_NE(
      error.find("key 'absorbed_below_prefix_tokens' has no effect with the values beside it "
                 "(the absorbed form runs for a prefix shorter than this; read when mha_when is prefix_outside_band)"),
      std::string::npos)
      << error;
}

// The `required` column is the loaders' own: for every key (two levels deep) of one shipped file per kind,
// the file without it stops the load as missing that key exactly when the schema marks it required.
std::string withoutKey(const std::string& text, const std::string& top, const std::string& child) {
  YAML::Node root = YAML::Clone(YAML::Load(text));
  if (child.empty()) {
    root.remove(top);
  } else {
    YAML::Node parent = root[top];
    parent.remove(child);
  }
  return YAML::Dump(root) + "\n";
}

TEST(KeySchema, AKeyMarkedRequiredIsTheOnlyKindWhoseAbsenceStopsTheLoad) {
  std::string wrong;
  for (const std::string file :
       {"hardware/profiles/h100-sxm.yaml", "model/configs/deepseek-v3.yaml", "backends/kernels/flex-decoding.yaml",
        "backends/sglang/fa3-mla.yaml", "hardware/calibrations/h100-sxm.yaml"}) {
    const std::string text = embeddedFile(file);
    const FileSchema* schema = schemaForFile(file);
    ASSERT_NE(schema, nullptr) << file;
    std::vector<std::pair<std::string, std::string>> keys;
    for (const auto& top : YAML::Load(text)) {
      keys.emplace_back(top.first.Scalar(), "");
      if (!top.second.IsMap()) continue;
      for (const auto& child : top.second) keys.emplace_back(top.first.Scalar(), child.first.Scalar());
    }
    for (const auto& [top, child] : keys) {
      const std::string path = child.empty() ? top : top + "." + child;
      const KeySpec* spec = schema->find(path);
      ASSERT_NE(spec, nullptr) << file << ": " << path;
      // A key that is data (an architecture, a family), or required only beside certain values.
      if (spec->path.back() == '*' || !spec->required_when.empty()) continue;
      const std::string key = child.empty() ? top : child;
      const auto error = loadError(file, withoutKey(text, top, child));
      const bool missing = error.find("required key '" + key + "' is missing") != std::string::npos ||
                           error.find("(did you mean '" + key + "'?)") != std::string::npos;
      if (missing != spec->required) {
        wrong += fmt::format("{}: {} is {} in the schema, but without it: {}\n", file, path,
                             spec->required ? "required" : "optional", error.substr(0, 300));
      }
    }
  }
  EXPECT_EQ(wrong, "");
}

// The measurement CSV's columns are the schema's: a missing required one names the reference.
TEST(KeySchema, TheImportersColumnsAreTheSchemas) {
  const auto& csv = keySchema("measurement_csv");
  std::string header;
  for (const auto& k : csv.keys) {
    if (k.required && k.path != "flops") header.append(header.empty() ? "" : ",").append(k.path);
  }
  OverlayDir scratch;
  const auto file = scratch.path() / "rows.csv";
  std::ofstream(file) << header << "\n";
  const auto r = runAttnsim("measurements import " + file.string() + " --db " + (scratch.path() / "s.db").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("missing column 'flops'; the columns: docs/KEYS.md#measurement_csv"), std::string::npos)
      << r.output;
  ASSERT_NE(csv.find("page_size"), nullptr);
  EXPECT_FALSE(csv.find("page_size")->required);
}

}  // namespace
}  // namespace attnsim::test
