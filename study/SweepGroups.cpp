#include "study/SweepGroups.hpp"

#include <fmt/format.h>

#include "catalog/Catalog.hpp"
#include "core/Error.hpp"
#include "core/Strings.hpp"
#include "simulator/Capacity.hpp"
#include "simulator/EngineRun.hpp"

namespace attnsim {

std::string workloadClass(const Workload& w, const std::optional<std::string>& spec_algorithm) {
  if (w.phase != Phase::Verify) return std::string(phaseName(w.phase));
  const RequestGroup& g = w.groups.front();
  return fmt::format("verify draft={} topk={} {}", g.q_len, g.tree_topk, spec_algorithm.value_or(""));
}

namespace {

std::string optionalValue(const Env& env, const char* key) {
  const auto it = env.find(key);
  return it == env.end() ? "" : toDisplay(it->second);
}

void recordSelection(const EngineRun& own, SweepGroup& g) {
  const Selection& sel = own.selection;
  g.refusal = sel.refusal;
  g.notes = join(sel.notes, "; ");
  if (sel.prefill) g.prefill_backend = sel.prefill->name;
  if (sel.decode) g.decode_backend = sel.decode->name;
  if (own.choice) {
    g.backend = own.choice->name;
    g.variant = own.choice->variant;
  }
  if (!sel.refusal) {
    g.kv_dtype = optionalValue(sel.env, "kv_dtype");
    const auto page = sel.env.find("page_size");
    if (page != sel.env.end() && std::holds_alternative<std::int64_t>(page->second)) {
      g.page_size = std::get<std::int64_t>(page->second);
    }
  }
}

}  // namespace

namespace {

// A value the engine's own flag parsing rejects (e.g. a KV dtype it spells differently): the
// engine refuses the whole group with that message, every candidate included.
SweepGroup refusedGroup(SweepGroup g, const std::string& message, const std::vector<std::string>& backends) {
  g.refusal = message;
  for (const auto& name : backends) {
    g.candidates.push_back({g.scenario.engine, name, "", message, std::nullopt, false});
  }
  return g;
}

}  // namespace

SweepGroup evaluateGroup(const Catalog& c, const Scenario& s, std::shared_ptr<const ModelSpec> model,
                         const std::vector<std::string>& backends) {
  SweepGroup g;
  g.scenario = s;
  g.model = std::move(model);
  try {
    runCandidates(c, g, backends);
  } catch (const UsageError& e) {
    g.candidates.clear();
    g.default_slot = -1;
    return refusedGroup(std::move(g), e.what(), backends);
  }
  return g;
}

void runCandidates(const Catalog& c, SweepGroup& g, const std::vector<std::string>& backends) {
  const Scenario& s = g.scenario;
  const HardwareProfile& hw = c.hardware(s.hardware);
  const Engine& e = c.engine(s.engine);
  ServingOptions options = servingOptions(s);
  options.backend.reset();
  const Phase phase = s.workload.phase;
  const EngineRun own = runEngine(c, hw, *g.model, e, options, std::nullopt, phase);
  recordSelection(own, g);
  for (const auto& name : backends) {
    const EngineRun run = runEngine(c, hw, *g.model, e, options, name, phase);
    SweepCandidate cand{e.policy.engine, name, "", run.selection.refusal, std::nullopt, false};
    if (!run.selection.refusal) {
      cand.variant = run.choice->variant;
      const PredictionInput input = predictionInputFor(c, hw, *g.model, e, run, s.cuda_graphs);
      if (e.policy.serving) cand.memory = memorySplitFor(e, input, s.cuda_graphs);
      cand.predictor.emplace(c, input);
      cand.engine_default = own.choice && name == own.choice->name;
      if (cand.engine_default) g.default_slot = static_cast<int>(g.candidates.size());
    }
    g.candidates.push_back(std::move(cand));
  }
  if (!g.refusal && e.policy.serving) {
    try {
      g.memory = capacityOf(c, s).split;
    } catch (const EngineRefusal&) {
      g.memory.reset();  // the engine deploys it only with a backend forced per stage: not assessed
    }
  }
}

}  // namespace attnsim
