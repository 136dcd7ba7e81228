#pragma once
// One engine's selection policy, as data: its options, the order and phrasing of its validation
// checks, the rules it applies to the configuration before choosing (model overrides, page-size
// snapping, hard errors), its priority lists, its error messages and its published tables.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backends/ServingPolicy.hpp"
#include "core/Error.hpp"
#include "core/Expr.hpp"
#include "core/YamlReader.hpp"

namespace attnsim {

// A message with {variable} placeholders, checked at load time.
struct MessageTemplate {
  std::string text;
  [[nodiscard]] std::string render(const Env& env) const;
};

// An engine-specific selection input (e.g. RTP-LLM's enable_xqa), set with --option name=value.
struct EngineOption {
  std::string name;
  std::string type;  // bool, int, string
  Value default_value;
  std::vector<std::string> allowed;  // for strings; empty = any
  std::string help;
};

// One validation check, in the order the engine appends reasons.
struct ValidationCheck {
  std::string check;                // see kValidationChecks
  std::string feature;              // for feature / feature_match
  std::optional<Expr> needed_when;  // feature: the scenario needs the feature
  std::string scenario_flag;        // feature_match: the scenario variable that must equal the feature
  MessageTemplate reason;           // missing support
  MessageTemplate reason_unwanted;  // feature_match: backend has the feature, scenario does not use it
  std::string source;               // the engine code that applies the check (attnsim's reading when none)
};

// Applied in order before selection. `set` assigns variables (values are expressions).
struct PolicyRule {
  std::optional<Expr> when;
  std::vector<std::pair<std::string, Expr>> set;
  MessageTemplate note;
  MessageTemplate error;
  std::string source;
};

struct PriorityList {
  std::string label;
  std::optional<Expr> when;
  std::string stage;  // "", prefill or decode
  std::vector<std::string> order;
  std::vector<SourceLocation> order_at;  // where each entry of `order` is written, for the cross-check
  std::string source;
};

struct DocsColumn {
  std::string header;
  std::string field;
};

struct DocsTable {
  std::string title;
  std::vector<std::string> rows;        // backend names, NAME@VARIANT for a variant row; kind-qualified with NAME/mla
  std::vector<SourceLocation> rows_at;  // where each row is written, for the cross-check
  std::vector<DocsColumn> columns;
};

struct PriorityDocsTable {
  std::string title;
  std::string list;  // a PriorityList label
};

// Which batch sizes the engine captures CUDA graphs for, generated as the engine does.
struct CaptureRange {
  std::vector<std::int64_t> values;  // explicit sizes
  std::int64_t from = 0;             // or a range from `from` in steps of `step`,
  std::int64_t below = 0;            //   stopping below `below`,
  bool through_max = false;          //   or through the maximum capture size
  std::int64_t step = 1;
};

struct CudaGraphPolicy {
  std::optional<Expr> enabled_when;  // absent: graphs on unless the scenario turns them off
  Expr max_batch;                    // the largest captured batch, an expression of the scenario
  std::vector<CaptureRange> sizes;
  bool append_max = false;                  // SGLang adds the maximum when the ranges miss it
  std::optional<Expr> prefill_max_tokens;   // piecewise prefill graphs: the largest token count
  std::vector<CaptureRange> prefill_sizes;  // token counts captured for prefill (empty: none)
  double capture_memory_mib_per_size = 0;
  std::string source;

  // Sorted, unique sizes up to the maximum.
  [[nodiscard]] std::vector<std::int64_t> captureSizes(const Env& env) const;
  [[nodiscard]] std::vector<std::int64_t> prefillCaptureSizes(const Env& env) const;
};

struct EnginePolicy {
  std::string engine;
  std::string display_name;
  std::string version;
  std::string source;
  bool per_stage = false;  // chooses the prefill and the decode backend separately
  // What `--backend NAME` (one name for both stages) asks of a per-stage engine: NAME in both
  // stages (SGLang's --attention-backend), or NAME first in each stage's order, a stage it cannot
  // serve keeping the engine's own order (RTP-LLM, which has no backend flag of its own).
  bool explicit_backend_stages_it_runs = false;
  bool block_size_filters_selection = true;
  std::optional<Expr> validate_explicit_when;  // when false, an explicit backend is accepted as is
  std::vector<std::string> kv_dtypes;          // accepted --kv-dtype spellings
  std::vector<EngineOption> options;
  Env defaults;
  std::vector<ValidationCheck> validation;
  std::vector<PolicyRule> rules;
  std::vector<PriorityList> selection;
  std::map<std::string, MessageTemplate, std::less<>> messages;
  std::optional<CudaGraphPolicy> cuda_graph;
  std::optional<ServingPolicy> serving;  // memory split and scheduler (capacity, serve-sim)
  std::vector<DocsTable> docs_tables;
  std::vector<PriorityDocsTable> priority_tables;

  [[nodiscard]] const EngineOption* option(std::string_view name) const;
  // Whether the validation list has a `check` entry (head_size, dtype, kv_cache_dtype, ...).
  [[nodiscard]] bool reads(std::string_view check) const;
  [[nodiscard]] const PriorityList* list(std::string_view label) const;
  [[nodiscard]] const MessageTemplate& message(std::string_view key) const;
};

extern const std::vector<std::string> kValidationChecks;
extern const std::vector<std::string> kFeatureNames;
extern const std::vector<std::string> kMessageKeys;
extern const std::vector<std::string> kDocsFields;

// Parses the policy. Its own options extend the variables that its expressions may use.
EnginePolicy parseEnginePolicy(const YamlReader& r, const std::vector<std::string>& core_variables);

// Placeholders that selection messages may use besides scenario variables.
extern const std::vector<std::string> kMessagePlaceholders;

// The check for an engine's rule expressions: the names in `known`, typed as scenarioVariableType
// says, each option as declared (its allowed values), and kv_dtype as one of the engine's spellings.
Expr::VariableCheck ruleVariableCheck(const std::vector<std::string>& known, const std::vector<EngineOption>& options,
                                      const std::vector<std::string>& kv_dtypes);

}  // namespace attnsim
