#pragma once
// The flags predict and rank share (a scenario plus its workload), and the helpers both use to run
// an engine's selection and turn its choice into a prediction input.
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli/Commands.hpp"
#include "core/Error.hpp"
#include "cost/Predictor.hpp"
#include "study/Calibration.hpp"

namespace attnsim::cli {

// Flags of predict and rank: a scenario plus the workload.
struct PredictFlags {
  std::string hardware, model, engines, backend, kernel, phase = "decode", mix;
  std::int64_t batch = 1, q_len = 1, context = 4096;
  std::optional<std::int64_t> page_size, spec_topk, tp;
  std::optional<std::string> kv_dtype;
  std::string cuda_graph = "on";
  std::string db;  // a study whose calibrations take over the catalog's
  std::vector<std::string> engine_options;
  // Geometry of a model outside the catalog.
  std::optional<int> num_heads, num_kv_heads, head_dim, head_dim_v, num_layers, hidden_size, intermediate_size,
      vocab_size, sliding_window;

  void addTo(CLI::App& cmd, bool rank) {
    cmd.add_option("--hardware", hardware, "hardware profile id")->required();
    cmd.add_option("--model", model, "model id (or give --num-heads etc. for a model outside the catalog)");
    if (rank) {
      cmd.add_option("--engine", engines, "engine id(s), comma list (default: all engines)");
    } else {
      cmd.add_option("--backend", backend, "engine:NAME (validated as the engine would)");
      cmd.add_option("--engine", engines, "predict the engine's own auto-selected backend");
      cmd.add_option("--kernel", kernel, "a kernel family directly, outside any engine (what-if)");
    }
    cmd.add_option("--phase", phase, "prefill, extend, decode or verify");
    cmd.add_option("--batch", batch, "requests in the batch")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 24));
    cmd.add_option("--q-len", q_len, "new tokens per request (extend, verify)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 24));
    cmd.add_option("--context", context, "tokens each request attends to, new ones included")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 26));
    cmd.add_option("--mix", mix,
                   "a mixed batch COUNTxQ_LEN@CONTEXT,... (e.g. 1x2048@2048,31x1@4096: a prefill chunk and 31 "
                   "decodes); replaces --phase/--batch/--q-len/--context");
    cmd.add_option("--page-size", page_size, "KV page size (default: the engine's)");
    cmd.add_option("--kv-dtype", kv_dtype, "KV-cache dtype as the engine spells it");
    cmd.add_option("--spec-topk", spec_topk, "verify: draft tree branching (1 = chain)");
    cmd.add_option("--tp", tp, "tensor-parallel size");
    cmd.add_option("--cuda-graph", cuda_graph, "on or off")->check(CLI::IsMember({"on", "off"}));
    cmd.add_option("--option", engine_options, "engine flag name=value (repeatable)");
    cmd.add_option("--db", db, "use this study's calibrations (attnsim calibrate --db) instead of the catalog's");
    cmd.add_option("--num-heads", num_heads, "custom model: query heads");
    cmd.add_option("--num-kv-heads", num_kv_heads, "custom model: KV heads");
    cmd.add_option("--head-dim", head_dim, "custom model: head dimension");
    cmd.add_option("--head-dim-v", head_dim_v, "custom model: value head dimension");
    cmd.add_option("--num-layers", num_layers, "custom model: layers");
    cmd.add_option("--hidden-size", hidden_size, "custom model: hidden size");
    cmd.add_option("--intermediate-size", intermediate_size, "custom model: MLP size");
    cmd.add_option("--vocab-size", vocab_size, "custom model: vocabulary");
    cmd.add_option("--sliding-window", sliding_window, "custom model: sliding window (0 = full)");
  }

  [[nodiscard]] Workload workload() const {
    if (mix.empty()) return Workload::uniform(parsePhase(phase), batch, q_len, context, spec_topk.value_or(1));
    return parseMix(mix);
  }

  // "1x2048@2048,31x1@4096": all single-token groups make a decode batch; anything else runs as a
  // mixed (varlen) batch through the prefill path.
  static Workload parseMix(const std::string& text) {
    Workload w;
    w.phase = Phase::Decode;
    for (const auto& item : splitList(text)) {
      RequestGroup g;
      char x = 0, at = 0;
      std::istringstream in(item);
      if (!(in >> g.count >> x >> g.q_len >> at >> g.context) || x != 'x' || at != '@' || !in.eof() || g.count < 1 ||
          g.q_len < 1 || g.context < g.q_len) {
        throw UsageError("--mix " + item + ": expected COUNTxQ_LEN@CONTEXT with 1 <= Q_LEN <= CONTEXT, e.g. 31x1@4096");
      }
      if (g.q_len > 1) w.phase = Phase::Extend;
      w.groups.push_back(g);
    }
    if (w.groups.empty()) throw UsageError("--mix needs at least one COUNTxQ_LEN@CONTEXT group");
    return w;
  }

  // The catalog model, or one built from the geometry flags.
  [[nodiscard]] ModelSpec resolveModel(const Catalog& c) const {
    if (!model.empty()) {
      if (num_heads) throw UsageError("give either --model or the geometry flags (--num-heads ...), not both");
      return c.model(model);
    }
    if (!num_heads || !head_dim) throw UsageError("give --model, or --num-heads and --head-dim for a custom model");
    ModelSpec m;
    m.id = "custom";
    m.name = "custom geometry";
    m.family = "custom";
    m.dtype = "bf16";
    m.weight_dtype = "bf16";
    m.num_layers = num_layers.value_or(32);
    m.hidden_size = hidden_size.value_or(*num_heads * *head_dim);
    m.intermediate_size = intermediate_size.value_or(4 * m.hidden_size);
    m.vocab_size = vocab_size.value_or(128000);
    AttentionLayerSpec l;
    l.name = "custom";
    l.num_heads = *num_heads;
    l.num_kv_heads = num_kv_heads.value_or(*num_heads);
    if (l.num_heads % l.num_kv_heads != 0) throw UsageError("--num-heads must be a multiple of --num-kv-heads");
    l.head_dim = *head_dim;
    l.head_dim_v = head_dim_v.value_or(*head_dim);
    l.sliding_window = sliding_window.value_or(0);
    m.attention_layers.push_back(l);
    m.layer_pattern = {"custom"};
    m.max_context = 1 << 30;
    m.source = "command-line geometry";
    return m;
  }

  [[nodiscard]] Catalog catalog(const GlobalOptions& global) const {
    Catalog c = global.loadCatalog();
    if (!db.empty()) applyStudyCalibrations(c, Store(db));
    return c;
  }

  [[nodiscard]] ServingOptions serving() const {
    ServingOptions o;
    o.kv_dtype = kv_dtype;
    o.page_size = page_size;
    o.spec_topk = spec_topk;
    if (parsePhase(phase) == Phase::Verify) o.spec_draft_tokens = q_len;
    o.tp = tp.value_or(1);
    o.has_prefix = parsePhase(phase) == Phase::Extend || (!mix.empty() && parseMix(mix).phase == Phase::Extend);
    parseEngineOptions(engine_options, o);
    return o;
  }
};

// The prediction input for the backend an engine run chose (its kernels, graph support, the
// engine's capture rules and the variables after its rules).
PredictionInput inputFor(const HardwareProfile& hw, const ModelSpec& m, const Engine& e, const EngineRun& run,
                         const Catalog& c, bool graphs_on);
double stepOf(const Prediction& p, bool graphs_on);
// "decode 32 × (q_len 1, context 4096)" or "mixed ...".
std::string describe(const Workload& w);

}  // namespace attnsim::cli
