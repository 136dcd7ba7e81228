#include "core/YamlReader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "core/KeySchema.hpp"
#include "core/Strings.hpp"

namespace attnsim {

std::string SourceLocation::str() const { return fmt::format("{}:{}:{}", file, line, column); }

LocatedInputError::LocatedInputError(SourceLocation where, std::string key, const std::string& message, Prefix prefix)
    : InputError(prefix == Prefix::no
                     ? message
                     : fmt::format("{}: {}{}", where.str(), key.empty() ? "" : "'" + key + "': ", message)),
      where_(std::move(where)),
      key_(std::move(key)) {}

YamlReader::YamlReader(const YAML::Node& node, std::shared_ptr<const std::string> file, std::string path)
    : node_(node),
      file_(std::move(file)),
      path_(std::move(path)),
      read_keys_(std::make_shared<std::set<std::string, std::less<>>>()) {
  if (!node_.IsMap()) {
    throw CatalogError(locate(node_), path_, "expected a mapping of keys to values");
  }
}

SourceLocation YamlReader::locate(const YAML::Node& node) const {
  const YAML::Mark m = node.Mark();
  if (m.is_null()) return {*file_, 1, 1};
  return {*file_, m.line + 1, m.column + 1};
}

SourceLocation YamlReader::locateValue(std::string_view key) const {
  const auto node = lookup(key);
  return locate(node ? *node : node_);
}

SourceLocation YamlReader::locateKey(std::string_view key) const {
  for (const auto& entry : node_) {
    if (entry.first.Scalar() == key) return locate(entry.first);
  }
  return location();
}

std::vector<SourceLocation> YamlReader::locateItems(std::string_view key) const {
  std::vector<SourceLocation> out;
  const auto node = lookup(key);
  if (!node || !node->IsSequence()) return out;
  for (const auto& item : *node) out.push_back(locate(item));
  return out;
}

std::string YamlReader::keyPath(std::string_view key) const {
  if (path_.empty()) return std::string(key);
  if (key.empty()) return path_;
  return path_ + "." + std::string(key);
}

void YamlReader::fail(std::string_view key, const std::string& message) const {
  const auto node = lookup(key);
  throw CatalogError(locate(node ? *node : node_), keyPath(key), message);
}

void YamlReader::failAt(const YAML::Node& node, std::string_view key, const std::string& message) const {
  throw CatalogError(locate(node), keyPath(key), message);
}

std::optional<YAML::Node> YamlReader::lookup(std::string_view key) const {
  const YAML::Node& self = node_;
  for (const auto& entry : self) {
    if (entry.first.Scalar() == key) return entry.second;
  }
  return std::nullopt;
}

std::optional<YAML::Node> YamlReader::raw(std::string_view key) const {
  read_keys_->emplace(key);
  KeyAudit::record(*file_, keyPath(key));
  return lookup(key);
}

bool YamlReader::has(std::string_view key) const { return raw(key).has_value(); }

namespace {

std::string describe(const YAML::Node& n) {
  if (n.IsScalar()) return "'" + n.Scalar() + "'";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "nothing";
}

template <class T>
std::optional<T> convertScalar(const YAML::Node& n);

template <>
std::optional<std::string> convertScalar<std::string>(const YAML::Node& n) {
  if (!n.IsScalar()) return std::nullopt;
  return n.Scalar();
}

template <>
std::optional<std::int64_t> convertScalar<std::int64_t>(const YAML::Node& n) {
  if (!n.IsScalar()) return std::nullopt;
  const std::string& s = n.Scalar();
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

template <>
std::optional<double> convertScalar<double>(const YAML::Node& n) {
  if (!n.IsScalar()) return std::nullopt;
  const std::string& s = n.Scalar();
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

template <>
std::optional<bool> convertScalar<bool>(const YAML::Node& n) {
  if (!n.IsScalar()) return std::nullopt;
  const std::string& s = n.Scalar();
  if (s == "true") return true;
  if (s == "false") return false;
  return std::nullopt;
}

template <class T>
const char* typeName();
template <>
const char* typeName<std::string>() {
  return "a string";
}
template <>
const char* typeName<std::int64_t>() {
  return "an integer";
}
template <>
const char* typeName<double>() {
  return "a number";
}
template <>
const char* typeName<bool>() {
  return "true or false";
}

template <class T>
T convertOrFail(const YamlReader& r, const YAML::Node& n, std::string_view key) {
  auto v = convertScalar<T>(n);
  if (!v) r.failAt(n, key, fmt::format("expected {}, got {}", typeName<T>(), describe(n)));
  return *v;
}

template <class T>
std::vector<T> convertList(const YamlReader& r, const YAML::Node& n, std::string_view key) {
  if (!n.IsSequence()) r.failAt(n, key, fmt::format("expected a list of {}, got {}", typeName<T>(), describe(n)));
  std::vector<T> out;
  for (const auto& item : n) out.push_back(convertOrFail<T>(r, item, key));
  return out;
}

}  // namespace

template <class T>
std::optional<T> YamlReader::find(std::string_view key) const {
  const auto n = raw(key);
  if (!n || n->IsNull()) return std::nullopt;
  if constexpr (std::is_same_v<T, std::vector<std::string>> || std::is_same_v<T, std::vector<std::int64_t>>) {
    return convertList<typename T::value_type>(*this, *n, key);
  } else {
    return convertOrFail<T>(*this, *n, key);
  }
}

template <class T>
T YamlReader::get(std::string_view key) const {
  auto v = find<T>(key);
  if (!v) failMissing(key);
  return std::move(*v);
}

void YamlReader::failMissing(std::string_view key) const {
  // A missing key is often a misspelt one: point at the misspelling rather than at the mapping.
  for (const auto& entry : node_) {
    const std::string& present = entry.first.Scalar();
    if (read_keys_->count(present) == 0 && closestMatch(present, {std::string(key)}) == key) {
      throw CatalogError(
          locate(entry.first), keyPath(present),
          fmt::format("unknown key '{}' (did you mean '{}'?){}", present, key, keySchemaReference(*file_)));
    }
  }
  fail(key, fmt::format("required key '{}' is missing{}", key, keySchemaReference(*file_)));
}

template std::optional<std::string> YamlReader::find<std::string>(std::string_view) const;
template std::optional<std::int64_t> YamlReader::find<std::int64_t>(std::string_view) const;
template std::optional<double> YamlReader::find<double>(std::string_view) const;
template std::optional<bool> YamlReader::find<bool>(std::string_view) const;
template std::optional<std::vector<std::string>> YamlReader::find<std::vector<std::string>>(std::string_view) const;
template std::optional<std::vector<std::int64_t>> YamlReader::find<std::vector<std::int64_t>>(std::string_view) const;
template std::string YamlReader::get<std::string>(std::string_view) const;
template std::int64_t YamlReader::get<std::int64_t>(std::string_view) const;
template double YamlReader::get<double>(std::string_view) const;
template bool YamlReader::get<bool>(std::string_view) const;
template std::vector<std::string> YamlReader::get<std::vector<std::string>>(std::string_view) const;
template std::vector<std::int64_t> YamlReader::get<std::vector<std::int64_t>>(std::string_view) const;

std::optional<double> YamlReader::findNumber(std::string_view key, double min, double max) const {
  const auto v = find<double>(key);
  if (v && (*v < min || *v > max)) fail(key, fmt::format("value {} is out of range [{}, {}]", *v, min, max));
  return v;
}

double YamlReader::getNumber(std::string_view key, double min, double max) const {
  const auto v = findNumber(key, min, max);
  if (!v) failMissing(key);
  return *v;
}

std::optional<std::int64_t> YamlReader::findInt(std::string_view key, std::int64_t min, std::int64_t max) const {
  const auto v = find<std::int64_t>(key);
  if (v && (*v < min || *v > max)) fail(key, fmt::format("value {} is out of range [{}, {}]", *v, min, max));
  return v;
}

std::int64_t YamlReader::getInt(std::string_view key, std::int64_t min, std::int64_t max) const {
  const auto v = findInt(key, min, max);
  if (!v) failMissing(key);
  return *v;
}

std::optional<std::string> YamlReader::findOneOf(std::string_view key, const std::vector<std::string>& allowed) const {
  auto v = find<std::string>(key);
  if (v && std::find(allowed.begin(), allowed.end(), *v) == allowed.end()) {
    fail(key, fmt::format("'{}' is not one of: {}{}", *v, join(allowed, ", "), didYouMean(*v, allowed)));
  }
  return v;
}

std::string YamlReader::getOneOf(std::string_view key, const std::vector<std::string>& allowed) const {
  auto v = findOneOf(key, allowed);
  if (!v) failMissing(key);
  return *v;
}

std::vector<std::string> YamlReader::getListOf(std::string_view key, const std::vector<std::string>& allowed) const {
  const auto n = raw(key);
  if (!n) failMissing(key);
  auto items = convertList<std::string>(*this, *n, key);
  std::size_t i = 0;
  for (const auto& item : items) {
    if (std::find(allowed.begin(), allowed.end(), item) == allowed.end()) {
      failAt((*n)[i], key,
             fmt::format("'{}' is not one of: {}{}", item, join(allowed, ", "), didYouMean(item, allowed)));
    }
    ++i;
  }
  return items;
}

std::optional<Expr> YamlReader::findExpr(std::string_view key, const Expr::VariableCheck& check) const {
  const auto n = raw(key);
  if (!n || n->IsNull()) return std::nullopt;
  const auto text = convertOrFail<std::string>(*this, *n, key);
  try {
    return Expr::parse(text, check);
  } catch (const ExprSyntaxError& e) {
    SourceLocation where = locate(*n);
    // Point at the offending character when the expression sits on one plain line.
    if (n->Style() != YAML::EmitterStyle::Block) where.column += static_cast<int>(e.offset());
    throw CatalogError(where, keyPath(key), fmt::format("in expression \"{}\": {}", text, e.what()));
  }
}

Expr YamlReader::getExpr(std::string_view key, const Expr::VariableCheck& check) const {
  auto e = findExpr(key, check);
  if (!e) failMissing(key);
  return *e;
}

Value YamlReader::scalarValue(const YAML::Node& node) {
  if (node.IsNull()) return Value{};
  if (auto b = convertScalar<bool>(node)) return Value{*b};
  if (auto i = convertScalar<std::int64_t>(node)) return Value{*i};
  if (auto d = convertScalar<double>(node)) return Value{*d};
  return Value{node.Scalar()};
}

std::optional<Value> YamlReader::findScalarValue(std::string_view key) const {
  const auto n = raw(key);
  if (!n) return std::nullopt;
  if (!n->IsNull() && !n->IsScalar()) failAt(*n, key, "expected a single value, got " + describe(*n));
  return scalarValue(*n);
}

YamlReader YamlReader::map(std::string_view key) const {
  auto r = findMap(key);
  if (!r) failMissing(key);
  return *r;
}

std::optional<YamlReader> YamlReader::findMap(std::string_view key) const {
  const auto n = raw(key);
  if (!n || n->IsNull()) return std::nullopt;
  if (!n->IsMap()) failAt(*n, key, "expected a mapping, got " + describe(*n));
  return YamlReader(*n, file_, keyPath(key));
}

std::vector<YamlReader> YamlReader::list(std::string_view key) const {
  const auto n = raw(key);
  if (!n || n->IsNull()) return {};
  if (!n->IsSequence()) failAt(*n, key, "expected a list, got " + describe(*n));
  std::vector<YamlReader> out;
  std::size_t i = 0;
  for (const auto& item : *n) {
    const std::string item_path = keyPath(key) + "[" + std::to_string(i++) + "]";
    if (!item.IsMap()) throw CatalogError(locate(item), item_path, "expected a mapping, got " + describe(item));
    out.emplace_back(item, file_, item_path);
  }
  return out;
}

std::vector<std::string> YamlReader::keysOf() const {
  std::vector<std::string> keys;
  for (const auto& entry : node_) keys.push_back(entry.first.Scalar());
  return keys;
}

void YamlReader::finish() const {
  for (const auto& entry : node_) {
    const std::string& key = entry.first.Scalar();
    if (read_keys_->count(key) > 0) continue;
    // The schema of the file kind lists every key valid here (also those this file's other values
    // make unread, like gfx_target on CUDA); the reference generated from it names them all.
    std::vector<std::string> known(read_keys_->begin(), read_keys_->end());
    if (const FileSchema* schema = schemaForFile(*file_)) {
      // A key of this place that the mapping's other values leave unread (mla_extend's
      // absorbed_below_prefix_tokens beside mha_when: always) would be silently ignored.
      const KeySpec* spec = schema->find(keyPath(key));
      if (spec != nullptr && spec->path.substr(spec->path.find_last_of('.') + 1) != "*") {
        throw CatalogError(locate(entry.first), keyPath(key),
                           fmt::format("key '{}' has no effect with the values beside it ({}{}){}", key, spec->meaning,
                                       spec->required_when.empty() ? std::string()
                                                                   : fmt::format("; read when {}", spec->required_when),
                                       keySchemaReference(*file_)));
      }
      for (auto& k : schema->keysUnder(path_)) {
        if (std::find(known.begin(), known.end(), k) == known.end()) known.push_back(std::move(k));
      }
    }
    throw CatalogError(locate(entry.first), keyPath(key),
                       fmt::format("unknown key '{}'{}{}", key, didYouMean(key, known), keySchemaReference(*file_)));
  }
}

}  // namespace attnsim
