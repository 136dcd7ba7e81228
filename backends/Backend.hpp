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

// How an engine runs an MLA model's extend batch (a prefill, with or without a cached prefix, and a
// mixed batch): in MHA form (the prefill kernel over per-head K/V, every cached latent token of the
// batch's rows up-projected through kv_b_proj) or absorbed (`absorbed_kernel` over the latent cache,
// the queries and outputs multiplied by the absorbed weights), chosen per batch from the sum of its
// rows' cached prefix tokens.
struct MlaExtend {
  enum class MhaWhen { Always, NoPrefix, OutsidePrefixBand };
  MhaWhen mha_when = MhaWhen::Always;
  // OutsidePrefixBand: absorbed while 0 < prefix tokens < this (SGLang's chunked-prefix threshold).
  std::int64_t absorbed_below_prefix_tokens = 0;
  std::string absorbed_kernel;  // kernel family id of the absorbed form ("": never absorbed)
  SourceLocation absorbed_kernel_at;
  // A mixed batch's single-token rows join the extend (SGLang: one forward method per batch) or run
  // in the backend's decode call (vLLM: MLACommonImpl splits the batch).
  bool decode_rows_join_extend = true;
  // A batch that replays the engine's piecewise prefill graph runs absorbed whatever its prefix
  // (SGLang's handlers return MLA under is_in_tc_piecewise_cuda_graph).
  bool absorbed_in_prefill_graph = false;
  std::string source;

  [[nodiscard]] bool absorbed(double prefix_tokens) const;
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
  std::optional<MlaExtend> mla_extend;  // MLA backends whose extend form the engine picks per batch
  std::string server_flag;
  std::map<std::string, std::string, std::less<>> documented;
  // Where each declared limit (dtypes, kv_cache_dtypes, head_sizes, block_sizes, stages,
  // attention_types) is written, for the reasons that cite it and the catalog's check that some rule
  // reads it; a variant's own declaration replaces the base's.
  std::map<std::string, SourceLocation, std::less<>> declared_at;

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
