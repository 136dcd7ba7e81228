#pragma once
// What an engine's selection sees: hardware × model × engine × serving options, and the variables that the
// engines' rules see (documented in docs/VARIABLES.md).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backends/RuleVariables.hpp"
#include "core/Value.hpp"

namespace attnsim {

class Catalog;
struct HardwareProfile;
struct ModelSpec;
struct EnginePolicy;

struct ServingOptions {
  std::optional<std::string> kv_dtype;        // as the engine spells it
  std::optional<std::int64_t> page_size;      // KV-cache page (block) size in tokens
  std::optional<std::string> spec_algorithm;  // eagle, eagle3, mtp, ngram, standalone
  std::optional<std::int64_t> spec_topk;
  std::optional<std::int64_t> spec_draft_tokens;
  std::optional<double> cuda_version;
  bool has_prefix = false;  // prefill over a cached prefix / chunked context
  std::int64_t tp = 1;
  std::optional<std::string> backend;  // --backend (both phases)
  std::optional<std::string> prefill_backend;
  std::optional<std::string> decode_backend;
  std::optional<std::string> speculative_attention_mode;  // SGLang: prefill or decode
  std::map<std::string, std::string> engine_options;      // --option name=value
};

struct SelectionInput {
  const HardwareProfile* hardware = nullptr;
  const ModelSpec* model = nullptr;
  const EnginePolicy* engine = nullptr;
  ServingOptions options;
  // An engine that selects per stage chooses only this one ("prefill" or "decode"), for a question
  // about one phase: a decode is not refused for the prefill backend it would pair with. Unset: every
  // stage, as a deployment runs them (select, serve-sim, capacity).
  std::optional<std::string> only_stage;
};

// Builds the variables for the engine's rules. Validates options against the engine (exit 2 on
// a bad value) and applies the engine's defaults to what the user left unset.
Env buildEnv(const SelectionInput& s);
// Recomputes variables derived from others (kv_fp8, kv_fp4, block_size) after rules changed them.
void refreshDerived(Env& env, const EnginePolicy& policy);

// The CUDA version assumed when none is given.
inline constexpr double kDefaultCudaVersion = 12.9;

}  // namespace attnsim
