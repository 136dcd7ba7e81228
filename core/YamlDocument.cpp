// YamlReader::parseDocument: one YAML document of UTF-8 text, with no key written twice.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "core/Strings.hpp"
#include "core/YamlReader.hpp"

namespace attnsim {

namespace {

// YAML forbids a key written twice in one mapping; yaml-cpp keeps both silently, and the reader
// would see only the first. Reports both places. A node reached again through an alias (same
// mark) is not walked twice, and nesting past kMaxDepth is refused rather than recursed into.
using Visited = std::set<std::pair<int, int>>;
void checkMapping(const YAML::Node& node, const std::string& file, int depth, Visited& visited) {
  constexpr int kMaxDepth = 64;
  auto at = [&](const YAML::Node& n) {
    const YAML::Mark m = n.Mark();
    return m.is_null() ? SourceLocation{file, 1, 1} : SourceLocation{file, m.line + 1, m.column + 1};
  };
  if (depth > kMaxDepth) throw CatalogError(at(node), "", fmt::format("nested deeper than {} levels", kMaxDepth));
  if (!node.IsSequence() && !node.IsMap()) return;
  if (!node.Mark().is_null() && !visited.emplace(node.Mark().line, node.Mark().column).second) return;
  if (node.IsSequence()) {
    (void)node.size();
    for (const auto& item : node) checkMapping(item, file, depth + 1, visited);
    return;
  }
  std::map<std::string, YAML::Node> seen;
  for (const auto& entry : node) {
    if (!entry.first.IsScalar())
      throw CatalogError(at(entry.first), "", "a key must be a plain name, not a list or mapping");
    const auto [it, fresh] = seen.emplace(entry.first.Scalar(), entry.first);
    if (!fresh) {
      throw CatalogError(
          at(entry.first), entry.first.Scalar(),
          fmt::format("duplicate key '{}': also written at line {}", entry.first.Scalar(), at(it->second).line));
    }
    checkMapping(entry.second, file, depth + 1, visited);
  }
}

// Parsing is most of a catalog load, and a catalog's files are the same bytes in every load of one
// process: an overlay (--catalog DIR; the bad-input and key-schema tests load hundreds) replaces a few
// files and parses the rest again. So documents are kept once parsed and checked, keyed by their text,
// up to kSharedMaxBytes of text (then the store starts afresh: fuzzing parses endless new texts). A kept
// document is only read afterwards: the reader never changes a node, and checkMapping's walk has
// computed every sequence's size, the one value yaml-cpp fills in lazily.
constexpr std::size_t kSharedMaxBytes = 32U << 20U;

struct SharedDocuments {
  std::mutex mutex;
  std::map<std::string, YAML::Node, std::less<>> roots;
  std::size_t bytes = 0;
};

SharedDocuments& sharedDocuments() {
  static SharedDocuments documents;
  return documents;
}

std::optional<YAML::Node> sharedDocument(std::string_view text) {
  SharedDocuments& shared = sharedDocuments();
  const std::scoped_lock lock(shared.mutex);
  const auto it = shared.roots.find(text);
  if (it == shared.roots.end()) return std::nullopt;
  return it->second;
}

void keepDocument(std::string_view text, const YAML::Node& root) {
  SharedDocuments& shared = sharedDocuments();
  const std::scoped_lock lock(shared.mutex);
  if (shared.bytes + text.size() > kSharedMaxBytes) {
    shared.roots.clear();
    shared.bytes = 0;
  }
  if (shared.roots.emplace(std::string(text), root).second) shared.bytes += text.size();
}

}  // namespace

YamlReader YamlReader::parseDocument(std::string_view text, const std::string& file) {
  if (auto root = sharedDocument(text)) return {*root, std::make_shared<const std::string>(file), ""};
  if (const auto bad = findTextDefect(text)) {  // UTF-16, stray bytes, control characters: names print later
    throw CatalogError({file, bad->line, bad->column}, "", bad->what + ": the file must be UTF-8 text");
  }
  // A '---' line after content starts a second document, which YAML::Load would drop unread.
  // (YAML::LoadAll would say so, but it loops forever on some malformed input: fuzz_sweep_spec, ",`".)
  std::size_t line_start = 0;
  bool content = false;
  for (int line = 1; line_start < text.size(); ++line) {
    const std::size_t end = std::min(text.find('\n', line_start), text.size());
    const std::string_view row = text.substr(line_start, end - line_start);
    const bool marker = row.starts_with("---") && (row.size() == 3 || row[3] == ' ' || row[3] == '\r');
    if (marker && content) {
      throw CatalogError({file, line, 1}, "", "a second YAML document ('---'): a file holds one document");
    }
    content = content || (!marker && row.find_first_not_of(" \t\r") != std::string_view::npos &&
                          row[row.find_first_not_of(" \t\r")] != '#');
    line_start = end + 1;
  }
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::ParserException& e) {
    throw CatalogError({file, e.mark.line + 1, e.mark.column + 1}, "", "YAML syntax error: " + e.msg);
  }
  if (!root.IsMap()) throw CatalogError({file, 1, 1}, "", "the document must be a mapping of keys to values");
  Visited visited;
  checkMapping(root, file, 0, visited);
  keepDocument(text, root);
  return {root, std::make_shared<const std::string>(file), ""};
}

}  // namespace attnsim
