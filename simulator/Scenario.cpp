#include "simulator/Scenario.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "catalog/Catalog.hpp"
#include "core/Error.hpp"
#include "core/Strings.hpp"

namespace attnsim {

std::vector<std::string> splitList(const std::string& text) {
  std::vector<std::string> out;
  std::string item;
  for (const char c : text + ",") {
    if (c == ',') {
      if (!item.empty()) out.push_back(item);
      item.clear();
    } else if (c != ' ') {
      item += c;
    }
  }
  return out;
}

Workload parseMix(const std::string& text) {
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

std::map<std::string, std::string> parseEngineOptions(const std::vector<std::string>& items) {
  std::map<std::string, std::string> options;
  for (const auto& kv : items) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) throw UsageError("--option " + kv + ": expected name=value");
    options[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return options;
}

void qualifyBackend(std::optional<std::string>& backend, std::string& engine, const char* flag) {
  if (!backend) return;
  const auto colon = backend->find(':');
  if (colon == std::string::npos) return;
  const std::string prefix = backend->substr(0, colon);
  if (engine.empty()) engine = prefix;
  if (prefix != engine) {
    throw UsageError(
        fmt::format("{} {}: names engine '{}' but the scenario's engine is '{}'", flag, *backend, prefix, engine));
  }
  backend = backend->substr(colon + 1);
}

void qualifyBackends(Scenario& s) {
  qualifyBackend(s.backend, s.engine, "--backend");
  qualifyBackend(s.prefill_backend, s.engine, "--prefill-backend");
  qualifyBackend(s.decode_backend, s.engine, "--decode-backend");
}

namespace {

ModelSpec modelFromGeometry(const ModelGeometry& g) {
  ModelSpec m;
  m.id = "custom";
  m.name = "custom geometry";
  m.family = "custom";
  m.dtype = DType::BF16;
  m.weight_dtype = "bf16";
  m.num_layers = g.num_layers.value_or(32);
  m.hidden_size = g.hidden_size.value_or(g.num_heads * g.head_dim);
  m.intermediate_size = g.intermediate_size.value_or(4 * m.hidden_size);
  m.vocab_size = g.vocab_size.value_or(128000);
  AttentionLayerSpec l;
  l.name = "custom";
  l.num_heads = g.num_heads;
  l.num_kv_heads = g.num_kv_heads.value_or(g.num_heads);
  if (l.num_kv_heads < 1 || l.num_heads % l.num_kv_heads != 0) {
    throw UsageError("--num-heads must be a multiple of --num-kv-heads");
  }
  l.head_dim = g.head_dim;
  l.head_dim_v = g.head_dim_v.value_or(g.head_dim);
  l.sliding_window = g.sliding_window.value_or(0);
  m.attention_layers.push_back(l);
  m.layer_pattern = {"custom"};
  m.max_position_embeddings = std::int64_t{1} << 30;
  m.max_position_embeddings_source = "custom geometry: no limit";
  m.source = "command-line geometry";
  return m;
}

}  // namespace

std::shared_ptr<const ModelSpec> resolveModel(const Catalog& catalog, const Scenario& s) {
  std::shared_ptr<const ModelSpec> model;
  if (!s.model.empty()) {
    if (s.geometry) throw UsageError("give either --model or the geometry flags (--num-heads ...), not both");
    model = std::make_shared<const ModelSpec>(catalog.model(s.model));
  } else if (!s.geometry || s.geometry->num_heads < 1 || s.geometry->head_dim < 1) {
    throw UsageError("give --model, or --num-heads and --head-dim for a custom model");
  } else {
    model = std::make_shared<const ModelSpec>(modelFromGeometry(*s.geometry));
  }
  if (s.weight_dtype && *s.weight_dtype != model->weight_dtype) {
    const auto& allowed = weightDtypes();
    if (std::find(allowed.begin(), allowed.end(), *s.weight_dtype) == allowed.end())
      throw UsageError(
          fmt::format("--weight-dtype: no weight dtype '{}' (one of: {})", *s.weight_dtype, fmt::join(allowed, ", ")));
    auto copy = std::make_shared<ModelSpec>(*model);
    copy->weight_dtype = *s.weight_dtype;
    model = std::move(copy);
  }
  checkScenario(*model, s);
  return model;
}

void checkScenario(const ModelSpec& model, const Scenario& s) {
  if (const auto problem = tensorParallelProblem(model, s.tp)) {
    throw UsageError(fmt::format("--tp {}: {}; valid --tp for {}: {}", s.tp, *problem, model.id,
                                 join(validTensorParallelSizes(model), ", ")));
  }
  if (s.allow_context_beyond_max_position) return;
  for (const auto& g : s.workload.groups) {
    if (g.context > model.max_position_embeddings) {
      throw UsageError(fmt::format(
          "--context {}: beyond {}'s max_position_embeddings {} ({}); pass --allow-context-beyond-max-position "
          "to predict it anyway",
          g.context, model.id, model.max_position_embeddings, model.max_position_embeddings_source));
    }
  }
}

ServingOptions servingOptions(const Scenario& s) {
  ServingOptions o;
  o.kv_dtype = s.kv_dtype;
  o.page_size = s.page_size;
  o.spec_algorithm = s.spec.algorithm;
  o.spec_topk = s.spec.topk;
  o.spec_draft_tokens = s.spec.draft_tokens;
  if (!o.spec_draft_tokens && s.workload.phase == Phase::Verify) o.spec_draft_tokens = s.workload.groups.front().q_len;
  o.cuda_version = s.cuda_version;
  o.has_prefix = s.has_prefix || s.workload.phase == Phase::Extend;
  o.tp = s.tp;
  o.backend = s.backend;
  o.prefill_backend = s.prefill_backend;
  o.decode_backend = s.decode_backend;
  o.speculative_attention_mode = s.spec.attention_mode;
  o.engine_options = s.engine_options;
  return o;
}

std::string describe(const Workload& w) {
  std::vector<std::string> parts;
  for (const auto& g : w.groups) {
    parts.push_back(fmt::format("{} × (q_len {}, context {})", g.count, g.q_len, g.context));
  }
  return fmt::format("{} {}", w.isUniform() ? phaseName(w.phase) : "mixed", join(parts, " + "));
}

}  // namespace attnsim
