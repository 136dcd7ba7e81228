#pragma once
// One engine's attention backend: what the engine allows (its rules) and which kernel family runs
// each phase. Capabilities are the code's truth; `documented` keeps a published table's cell where
// the document says something else, so the docs generator reproduces the document and the selector
// follows the code.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/Error.hpp"
#include "core/Expr.hpp"
#include "core/YamlReader.hpp"

namespace attnsim {

// A set of integers as the engines state them: anything, a list, or multiples of N within bounds.
struct IntSet {
  bool any = true;
  std::vector<std::int64_t> values;
  std::int64_t multiple_of = 0;
  std::optional<std::int64_t> min, max;

  [[nodiscard]] bool contains(std::int64_t v) const;
  [[nodiscard]] bool isFixedList() const { return !any && !values.empty(); }
  [[nodiscard]] std::string render() const;  // "Any", "%16", "16, 32, 64"
};
IntSet parseIntSet(const YamlReader& parent, std::string_view key);

// CUDA compute-capability requirement.
struct CapabilityRange {
  bool any = true;
  std::optional<double> min, max;
  std::vector<int> majors;

  [[nodiscard]] bool contains(double cc) const;
  [[nodiscard]] std::string render() const;  // "Any", "≥8.0", "9.x", "7.x-12.x"
};

// A capability that may hold only under a condition (e.g. "⚠️ page_size=1 only").
struct Feature {
  bool supported = false;
  std::optional<Expr> only_when;
  std::string doc;  // the document's cell when it is not a plain ✅/❌

  [[nodiscard]] bool holds(const Env& env) const { return supported && (!only_when || only_when->test(env)); }
  [[nodiscard]] std::string render() const;
};

// A rule of the backend's own: when `fail_when` holds, the backend is invalid for `reason`.
struct Requirement {
  Expr fail_when;
  std::string reason;
  std::string source;  // the engine code the condition is read from; "" = the descriptor's source
};

struct BackendCaps {
  std::vector<std::string> platforms;
  std::vector<std::string> stages{"prefill", "decode"};
  std::vector<std::string> dtypes;
  std::optional<std::vector<std::string>> kv_cache_dtypes;  // absent: not restricted
  IntSet block_sizes;        // kernel block sizes (vLLM: framework block must be divisible by one)
  IntSet native_page_sizes;  // fixed in-kernel page sizes (any = not fixed)
  IntSet head_sizes;
  CapabilityRange compute_capability;
  std::vector<std::string> attention_types{"decoder"};
  std::map<std::string, Feature, std::less<>> features;
  std::vector<Requirement> requirements;
  std::string cuda_graph = "never";  // always, uniform_batch, uniform_single_token_decode, never
  std::string prefill_kernel;        // kernel family ids ("" = this backend does not run the phase)
  std::string decode_kernel;
  SourceLocation prefill_kernel_at;  // where each id is written, for the catalog's cross-check
  SourceLocation decode_kernel_at;
  std::string server_flag;
  std::map<std::string, std::string, std::less<>> documented;

  [[nodiscard]] const Feature* feature(std::string_view name) const;
  [[nodiscard]] bool featureHolds(std::string_view name, const Env& env) const;
};

struct BackendVariant {
  std::string name;
  Expr when;
  BackendCaps caps;
};

struct Backend {
  std::string engine;
  std::string name;        // as the engine spells it
  std::string kind;        // mha or mla
  std::string table_name;  // the row label in the engine's document
  std::string description;
  std::string source;
  BackendCaps caps;
  std::vector<BackendVariant> variants;

  [[nodiscard]] std::string id() const { return engine + ":" + name; }
  // The capabilities in force for a scenario: the first variant whose `when` holds, else the base.
  [[nodiscard]] const BackendCaps& resolve(const Env& env, std::string* variant_name = nullptr) const;
  [[nodiscard]] const BackendVariant* variant(std::string_view variant_name) const;
};

extern const std::vector<std::string> kFeatureNames;
extern const std::vector<std::string> kCudaGraphLevels;

Backend parseBackend(const YamlReader& r, const std::string& engine, const Expr::VariableCheck& check_variable);

}  // namespace attnsim
