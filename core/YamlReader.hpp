#pragma once
// Strict reading of one YAML mapping: every key read is recorded, so finish() can report a key
// nobody asked for (a typo) with the closest valid key; every error names file, line, column and
// key path. Reads go through const nodes: yaml-cpp's non-const operator[] inserts missing keys.
#include <yaml-cpp/yaml.h>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/Error.hpp"
#include "core/Expr.hpp"
#include "core/Value.hpp"

namespace attnsim {

class YamlReader {
 public:
  YamlReader(const YAML::Node& node, std::shared_ptr<const std::string> file, std::string path);
  // Parses a whole document; a syntax error becomes a CatalogError at its line.
  static YamlReader parseDocument(std::string_view text, const std::string& file);

  // Required key: a missing key is an error.
  template <class T>
  T get(std::string_view key) const;
  // Optional key with a default.
  template <class T>
  T get(std::string_view key, T fallback) const {
    auto v = find<T>(key);
    return v ? std::move(*v) : std::move(fallback);
  }
  template <class T>
  std::optional<T> find(std::string_view key) const;

  double getNumber(std::string_view key, double min, double max) const;
  std::optional<double> findNumber(std::string_view key, double min, double max) const;
  // Numbers in [min, max], at least one: a YAML list, or a text of numbers separated by spaces, commas or
  // line breaks (a block scalar: how the calibration files write their grids, several times faster to load).
  std::vector<double> getNumbers(std::string_view key, double min, double max) const;
  std::int64_t getInt(std::string_view key, std::int64_t min, std::int64_t max) const;
  std::optional<std::int64_t> findInt(std::string_view key, std::int64_t min, std::int64_t max) const;
  std::string getOneOf(std::string_view key, const std::vector<std::string>& allowed) const;
  std::optional<std::string> findOneOf(std::string_view key, const std::vector<std::string>& allowed) const;
  std::vector<std::string> getListOf(std::string_view key, const std::vector<std::string>& allowed) const;
  std::optional<Expr> findExpr(std::string_view key, const Expr::VariableCheck& check) const;
  Expr getExpr(std::string_view key, const Expr::VariableCheck& check) const;
  std::optional<Value> findScalarValue(std::string_view key) const;

  [[nodiscard]] bool has(std::string_view key) const;
  YamlReader map(std::string_view key) const;
  std::optional<YamlReader> findMap(std::string_view key) const;
  // A list of mappings; absent means empty.
  std::vector<YamlReader> list(std::string_view key) const;
  // The keys of a mapping whose keys are data (e.g. variable names), each with its reader position.
  std::vector<std::string> keysOf() const;
  // A reader over a mapping found under this one (an item of a list of mixed scalars and mappings).
  [[nodiscard]] YamlReader child(const YAML::Node& node, std::string path) const {
    return {node, file_, std::move(path)};
  }
  // A raw value node (marks the key as read).
  std::optional<YAML::Node> raw(std::string_view key) const;

  // Reports keys that no one read.
  void finish() const;

  [[noreturn]] void fail(std::string_view key, const std::string& message) const;
  // A required key is absent: reports a close misspelling of it if there is one.
  [[noreturn]] void failMissing(std::string_view key) const;
  [[noreturn]] void failAt(const YAML::Node& node, std::string_view key, const std::string& message) const;
  [[nodiscard]] SourceLocation locate(const YAML::Node& node) const;
  [[nodiscard]] SourceLocation location() const { return locate(node_); }
  // Where a name is written that is checked against other files after loading (a kernel family,
  // a backend in a priority list), so that check can point at it. The mapping itself when absent.
  [[nodiscard]] SourceLocation locateValue(std::string_view key) const;
  [[nodiscard]] SourceLocation locateKey(std::string_view key) const;
  // One location per item of the list under `key`; empty when the key is absent or not a list.
  [[nodiscard]] std::vector<SourceLocation> locateItems(std::string_view key) const;
  [[nodiscard]] std::string keyPath(std::string_view key) const;
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] const std::string& file() const { return *file_; }
  [[nodiscard]] const YAML::Node& node() const { return node_; }

  // Reads a scalar node as a Value (int, double, bool, null or string).
  static Value scalarValue(const YAML::Node& node);

 private:
  std::optional<YAML::Node> lookup(std::string_view key) const;

  YAML::Node node_;
  std::shared_ptr<const std::string> file_;
  std::string path_;
  std::shared_ptr<std::set<std::string, std::less<>>> read_keys_;
};

}  // namespace attnsim
