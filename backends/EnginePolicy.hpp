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

// Applied in order before selection. `set` assigns variables (values are expressions); `order`
// assigns `order_sets` the backend of the first branch of that selection list whose condition holds.
struct PolicyRule {
  std::optional<Expr> when;
  std::vector<std::pair<std::string, Expr>> set;
  std::string order;       // a first_match PriorityList's label; empty: none
  std::string order_sets;  // the variable it assigns (attention_backend)
  MessageTemplate note;
  MessageTemplate error;
  std::string source;
};

// One branch of an engine's order: the backend it picks, under a condition, with its source.
struct OrderBranch {
  std::string backend;
  std::optional<Expr> when;  // absent: always
  MessageTemplate note;      // first_match: what the engine says when this branch picks (else the rule's note)
  std::string source;        // the engine code this branch reads
  SourceLocation at;         // where the backend is written, for the cross-check
  std::string inserted_by;   // the overlay file (backends/<engine>/order/) that inserted it; empty: the engine's own
};

// An engine's priority order, evaluated branch by branch. first_valid (vLLM, RTP-LLM): the first branch
// whose condition holds and whose backend is valid for the scenario. first_match (SGLang's default, applied
// by a rule): the first branch whose condition holds; the engine does not skip an invalid backend.
struct PriorityList {
  std::string label;
  std::optional<Expr> when;
  std::string stage;  // "", prefill or decode
  bool first_match = false;
  // Named conditions, evaluated in order before the branches, which may use them (and later ones the earlier).
  std::vector<std::pair<std::string, Expr>> conditions;
  std::vector<OrderBranch> branches;
  std::vector<std::string> order;  // the branches' backends, in order (reports and tables read it)
  std::string source;

  void insertBranch(std::size_t position, OrderBranch branch);
  // The variables the branches see: `env` and the named conditions.
  [[nodiscard]] Env branchEnv(const Env& env) const;
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

// The message under `key`, its placeholders checked against the policy's variables.
MessageTemplate parseMessage(const YamlReader& r, std::string_view key, const Expr::VariableCheck& check,
                             bool required);

// Placeholders that selection messages may use besides scenario variables.
extern const std::vector<std::string> kMessagePlaceholders;

// The check for an engine's rule expressions: the names in `known`, typed as scenarioVariableType
// says, each option as declared (its allowed values), and kv_dtype as one of the engine's spellings.
Expr::VariableCheck ruleVariableCheck(const std::vector<std::string>& known, const std::vector<EngineOption>& options,
                                      const std::vector<std::string>& kv_dtypes);

}  // namespace attnsim
