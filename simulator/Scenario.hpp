#pragma once
// One scenario, typed: hardware × model × engine (or a forced backend or kernel) × workload ×
// serving options. Built once from command-line flags, a sweep spec or Python keywords, then
// shared by select, predict, rank and check: text is converted at that edge, never later.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "cost/Workload.hpp"
#include "selection/EngineVariables.hpp"

namespace attnsim {

class Catalog;
struct ModelSpec;

// A model outside the catalog, by its attention geometry (unset sizes take documented defaults).
struct ModelGeometry {
  int num_heads = 0;
  std::optional<int> num_kv_heads;  // default: num_heads (MHA)
  int head_dim = 0;
  std::optional<int> head_dim_v;  // default: head_dim
  std::optional<int> num_layers, hidden_size, intermediate_size, vocab_size;
  std::optional<int> sliding_window;  // 0 or unset: full attention
};

struct SpecDecoding {
  std::optional<std::string> algorithm;  // eagle, eagle3, mtp, ngram, standalone
  std::optional<std::int64_t> topk;      // draft tree branching; 1 = chain
  std::optional<std::int64_t> draft_tokens;
  std::optional<std::string> attention_mode;  // SGLang: which backend verifies drafts (prefill or decode)
  // serve-sim: draft forwards per step (SGLang speculative_num_steps, vLLM num_speculative_tokens) and
  // the mean tokens a verify emits per request, the bonus token included (simulator/ServeSpec.hpp).
  std::optional<std::int64_t> num_steps;
  std::optional<double> accept_length;
};

struct Scenario {
  std::string hardware;                   // hardware profile id
  std::string model;                      // catalog model id; empty when `geometry` describes the model
  std::optional<ModelGeometry> geometry;  // a model outside the catalog
  std::string engine;                     // engine id; empty: every engine (rank) or none (a kernel)
  std::optional<std::string> backend;     // forced for both phases, the engine's NAME
  std::optional<std::string> prefill_backend;
  std::optional<std::string> decode_backend;
  std::string kernel;  // a kernel family outside any engine (what-if); excludes engine and backend
  Workload workload = Workload::uniform(Phase::Decode, 1, 1, 4096);
  std::optional<std::string> kv_dtype;  // as the engine spells it
  std::optional<std::int64_t> page_size;
  std::int64_t tp = 1;
  // The checkpoint's weight dtype in place of the model's (bf16, fp8, fp8_block, mxfp4, nvfp4 ...):
  // its GEMMs' surface and peak, and the weights' memory.
  std::optional<std::string> weight_dtype;
  SpecDecoding spec;
  bool has_prefix = false;  // prefill over a cached prefix (prefix cache, chunked context)
  std::optional<double> cuda_version;
  bool cuda_graphs = true;
  std::map<std::string, std::string> engine_options;  // the engine's own flags, name -> value
  // Contexts beyond the model's max_position_embeddings are refused unless this is set
  // (--allow-context-beyond-max-position: RoPE scaling or a deliberate what-if).
  bool allow_context_beyond_max_position = false;
};

// "1x2048@2048,31x1@4096": groups of COUNT requests with Q_LEN new tokens over CONTEXT. All
// single-token groups make a decode batch; anything else runs as a mixed batch (extend path).
Workload parseMix(const std::string& text);
// Comma-separated items, spaces dropped.
std::vector<std::string> splitList(const std::string& text);
// "name=value" items into a map (UsageError on a malformed item).
std::map<std::string, std::string> parseEngineOptions(const std::vector<std::string>& items);
// A backend written engine:NAME names the scenario's engine: sets it when unset, refuses another
// (UsageError naming `flag`), and leaves NAME.
void qualifyBackend(std::optional<std::string>& backend, std::string& engine, const char* flag);
void qualifyBackends(Scenario& s);

// The catalog model, or one built from the geometry, once the scenario is checked against it
// (checkScenario): select, predict, rank and check all take their model from here.
std::shared_ptr<const ModelSpec> resolveModel(const Catalog& catalog, const Scenario& s);
// UsageError unless the scenario is one the engines would run: --tp splits every attention layer's
// heads as vLLM and SGLang shard them, and no request's context passes max_position_embeddings
// (unless allowed).
void checkScenario(const ModelSpec& model, const Scenario& s);
// What the engine's selection sees: the scenario's serving options, with those its workload
// implies (extend runs over a prefix; verify checks q_len draft tokens).
ServingOptions servingOptions(const Scenario& s);
// "decode 32 × (q_len 1, context 4096)" or "mixed ...".
std::string describe(const Workload& w);

}  // namespace attnsim
