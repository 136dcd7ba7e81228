#include "simulator/CheckRun.hpp"

#include <fmt/format.h>

#include <chrono>
#include <map>

#include "catalog/Catalog.hpp"
#include "core/Error.hpp"
#include "core/Strings.hpp"
#include "simulator/EngineRun.hpp"

namespace attnsim {

namespace {

// Hardware tried, in order, when none is given: the first on which the engine accepts the
// backend for this model.
const std::vector<std::string> kCheckHardware{"h100-sxm", "b200",        "a100-sxm-80g",   "l40s",        "mi300x",
                                              "mi355x",   "ascend-910b", "intel-max-1550", "xeon-spr-amx"};

struct CheckTarget {
  const HardwareProfile* hw = nullptr;
  EngineRun run;
};

std::optional<CheckTarget> findTarget(const Catalog& c, const ModelSpec& m, const Engine& e, const ServingOptions& o,
                                      const std::string& backend, Phase phase, const std::string& hw_id,
                                      std::string* refusal) {
  const std::vector<std::string> candidates = hw_id.empty() ? kCheckHardware : std::vector<std::string>{hw_id};
  for (const auto& id : candidates) {
    const HardwareProfile& hw = c.hardware(id);
    EngineRun run = runEngine(c, hw, m, e, o, backend, phase);
    if (run.verdict() == Verdict::Runs) return CheckTarget{&hw, std::move(run)};
    if (refusal && (refusal->empty() || !hw_id.empty())) *refusal = run.whyNot();
  }
  return std::nullopt;
}

CheckRequest requestFor(const Catalog& c, const EngineRun& run, const AttentionLayerSpec& layer, const ModelSpec& m,
                        Phase phase, std::int64_t tree_topk, double flop_budget) {
  CheckRequest rq;
  rq.kernel = &kernelFor(c, run, phase);
  rq.layer = &layer;
  rq.phase = phase;
  rq.dtype = m.dtype;
  rq.kv = kernels::referenceKvFormat(parseKvCacheDtype(toDisplay(run.selection.env.at("kv_dtype"))), m.dtype);
  rq.page_size = std::get<std::int64_t>(run.selection.env.at("page_size"));
  rq.tree_topk = tree_topk;
  rq.flop_budget = flop_budget;
  return rq;
}

// What a check's result depends on: runs with the same key give the same outcome.
std::string runKey(const CheckRequest& rq) {
  const AttentionLayerSpec& l = *rq.layer;
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", rq.kernel->id, l.kind, l.num_heads, l.num_kv_heads,
                     l.head_dim, l.head_dim_v, l.sliding_window, l.sinks, l.sparse_top_k, phaseName(rq.phase),
                     kernels::kvFormatName(rq.kv), rq.page_size, dtypeName(rq.dtype));
}

}  // namespace

ScenarioCheck checkScenario(const Catalog& c, const Scenario& s, double flop_budget) {
  if (!s.backend) throw UsageError("check needs --backend engine:NAME and --model M (or --all)");
  if (s.engine.empty()) throw UsageError("--backend needs engine:NAME, e.g. vllm:FLASH_ATTN");
  ScenarioCheck out;
  const Engine& e = c.engine(s.engine);
  out.backend = s.engine + ":" + *s.backend;
  out.model = resolveModel(c, s);
  out.phase = s.workload.phase;
  ServingOptions o = servingOptions(s);
  o.backend.reset();
  const std::int64_t topk = s.spec.topk.value_or(1);
  if (out.phase == Phase::Verify) o.spec_draft_tokens = s.spec.draft_tokens.value_or(topk > 1 ? 7 : 4);
  std::string refusal;
  const auto target = findTarget(c, *out.model, e, o, *s.backend, out.phase, s.hardware, &refusal);
  if (!target) throw EngineRefusal(refusal);
  out.hardware = target->hw;
  for (const auto& [layer, count] : out.model->layerCounts()) {
    const CheckRequest rq = requestFor(c, target->run, *layer, *out.model, out.phase, topk, flop_budget);
    out.layers.push_back({rq, runCheck(rq)});
    out.passed = out.passed && out.layers.back().outcome.passed;
  }
  return out;
}

namespace {

void checkPair(const Catalog& c, const Engine& e, const std::string& name, const ModelSpec& m, double budget,
               std::map<std::string, CheckOutcome>& done, CatalogCheck& out) {
  for (const Phase phase : {Phase::Prefill, Phase::Decode}) {
    const auto target = findTarget(c, m, e, {}, name, phase, "", nullptr);
    if (!target) continue;
    for (const auto& [layer, count] : m.layerCounts()) {
      const CheckRequest rq = requestFor(c, target->run, *layer, m, phase, 1, budget);
      const std::string key = runKey(rq);
      auto it = done.find(key);
      if (it == done.end()) it = done.emplace(key, runCheck(rq)).first;
      out.failed += it->second.passed ? 0 : 1;
      out.rows.push_back({e.policy.engine + ":" + name,
                          m.id,
                          layer->name,
                          target->hw->id,
                          count >= m.num_layers,
                          phase,
                          {rq, it->second}});
    }
  }
}

}  // namespace

CatalogCheck checkCatalog(const Catalog& c, double flop_budget,
                          const std::function<void(std::size_t, std::size_t)>& progress) {
  const auto start = std::chrono::steady_clock::now();
  std::size_t total = 0, done_pairs = 0;
  for (const auto& e : c.engines()) total += backendNames(e).size() * c.models().size();
  std::map<std::string, CheckOutcome> done;
  CatalogCheck out;
  for (const auto& e : c.engines()) {
    for (const auto& name : backendNames(e)) {
      for (const auto& m : c.models()) {
        checkPair(c, e, name, m, flop_budget, done, out);
        if (progress) progress(++done_pairs, total);
      }
    }
  }
  out.distinct_runs = done.size();
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace attnsim
