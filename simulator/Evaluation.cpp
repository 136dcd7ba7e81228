#include "simulator/Evaluation.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "backends/KernelFamily.hpp"
#include "catalog/Catalog.hpp"
#include "core/Error.hpp"
#include "core/Strings.hpp"
#include "simulator/Capacity.hpp"

namespace attnsim {

ScenarioSelection selectBackends(const Catalog& c, const Scenario& s) {
  ScenarioSelection out;
  out.hardware = &c.hardware(s.hardware);
  out.model = resolveModel(c, s);
  out.engine = &c.engine(s.engine);
  out.selection =
      Selector(c).select({out.hardware, out.model.get(), &out.engine->policy, servingOptions(s), std::nullopt});
  return out;
}

namespace {

std::vector<KernelParameters> parametersOf(const Prediction& p, const HardwareProfile& hw, Phase phase) {
  std::vector<KernelParameters> params;
  for (const auto& a : p.attention) {
    const KernelModel k = resolveKernel(*a.kernel, hw, phase);
    params.push_back({a.kernel->id, k.compute_efficiency, k.memory_efficiency, k.fixed_us, *k.efficiency_source,
                      k.provenance, k.band_basis, k.band});
  }
  return params;
}

// The engine's backend for the scenario's phase, as the engine resolves it.
void predictEngineBackend(const Catalog& c, const Scenario& s, ScenarioPrediction& out) {
  const Engine& e = c.engine(s.engine);
  ServingOptions options = servingOptions(s);
  options.backend.reset();
  const EngineRun run = runEngine(c, *out.hardware, *out.model, e, options, s.backend, s.workload.phase);
  // A name the engine replaces is not predicted under that name (rank does not rank it either).
  if (run.verdict() != Verdict::Runs) throw EngineRefusal(run.whyNot());
  out.input = predictionInputFor(c, *out.hardware, *out.model, e, run, s.cuda_graphs);
  out.kv_dtype = toDisplay(run.selection.env.at("kv_dtype"));
  out.backend =
      PredictedBackend{e.policy.engine,     run.choice->name,     run.choice->variant, run.choice->caps->cuda_graph,
                       run.selection.notes, s.backend.has_value()};
  out.label = fmt::format("{} · {} · {}:{}{} ({} {})", out.hardware->id, out.model->id, e.policy.engine,
                          run.choice->name, run.choice->variant.empty() ? "" : " [" + run.choice->variant + "]",
                          stageOf(s.workload.phase), s.backend ? "backend as given" : "backend the engine picks");
}

void predictKernel(const Catalog& c, const Scenario& s, ScenarioPrediction& out) {
  out.kv_dtype = s.kv_dtype.value_or("auto");
  out.input = kernelPredictionInput(*out.hardware, *out.model, c.kernel(s.kernel), parseKvCacheDtype(out.kv_dtype),
                                    s.page_size.value_or(16), static_cast<int>(s.tp));
  out.label = fmt::format("{} · {} · kernel {} (no engine: every batch captured, full graphs)", out.hardware->id,
                          out.model->id, s.kernel);
}

}  // namespace

ScenarioPrediction predictScenario(const Catalog& c, const Scenario& s) {
  if (s.backend && s.engine.empty()) throw UsageError("--backend needs engine:NAME, e.g. vllm:FLASH_ATTN");
  if (s.kernel.empty() == s.engine.empty()) {
    throw UsageError("give exactly one of --backend engine:NAME, --engine E or --kernel NAME");
  }
  ScenarioPrediction out;
  out.hardware = &c.hardware(s.hardware);
  out.model = resolveModel(c, s);
  out.workload = s.workload;
  out.cuda_graphs = s.cuda_graphs;
  if (s.kernel.empty()) {
    predictEngineBackend(c, s, out);
  } else {
    predictKernel(c, s, out);
  }
  out.prediction = Predictor(c, out.input).predict(s.workload);
  out.parameters = parametersOf(out.prediction, *out.hardware, s.workload.phase);
  out.memory = memoryFit(c, out);
  return out;
}

namespace {

void rankEngine(const Catalog& c, const Scenario& s, const Engine& e, Ranking& out) {
  ServingOptions options = servingOptions(s);
  options.backend.reset();
  const Phase phase = s.workload.phase;
  const EngineRun own = runEngine(c, *out.hardware, *out.model, e, options, std::nullopt, phase);
  const std::string auto_choice = own.choice ? own.choice->name : "";
  for (const auto& name : backendNames(e)) {
    const EngineRun run = runEngine(c, *out.hardware, *out.model, e, options, name, phase);
    if (run.verdict() == Verdict::Refused) {
      out.invalid[e.policy.engine + ":" + name] = run.whyNot();
      continue;
    }
    if (run.verdict() == Verdict::RunsOther) {  // ranked under the name the engine runs
      out.resolved[e.policy.engine + ":" + name] = {e.policy.engine + ":" + run.choice->name, run.whyNot()};
      continue;
    }
    const PredictionInput input = predictionInputFor(c, *out.hardware, *out.model, e, run, s.cuda_graphs);
    const Prediction p = Predictor(c, input).predict(s.workload);
    const PredictionUncertainty& u = p.uncertainty;
    RankedBackend& r = out.ranked.emplace_back();
    r = {e.policy.engine,
         name,
         run.choice->variant,
         s.cuda_graphs ? p.graph.step_us : p.eager.step_us,
         p.attention_us,
         boundName(p.attention.front().cost.bound),
         0,
         name == auto_choice};
    r.provenance = u.provenance;
    r.band = s.cuda_graphs ? u.graph_band : u.eager_band;
    r.tie_band = s.cuda_graphs ? u.graph_tie_band : u.eager_tie_band;
    r.attention_band = u.attention_band;
    if (e.policy.serving) r.memory = checkFit(memorySplitFor(e, input, s.cuda_graphs), s.workload);
  }
}

void addRegrets(Ranking& out, const std::vector<std::string>& engines) {
  for (const auto& id : engines) {
    const auto chosen = std::find_if(out.ranked.begin(), out.ranked.end(),
                                     [&](const RankedBackend& r) { return r.engine == id && r.engine_default; });
    if (chosen == out.ranked.end()) continue;
    const auto best =
        std::find_if(out.ranked.begin(), out.ranked.end(), [&](const RankedBackend& r) { return r.engine == id; });
    out.defaults.push_back({id, chosen->backend, best->backend, chosen->step_us, chosen->step_us / best->step_us - 1,
                            chosen->step_us - best->step_us,
                            withinBands(best->step_us, best->tie_band, chosen->step_us, chosen->tie_band)});
  }
}

void groupTies(std::vector<RankedBackend>& ranked) {
  std::size_t leader = 0;
  int group = 0;
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    const RankedBackend& lead = ranked[leader];
    if (i == 0 || !withinBands(lead.step_us, lead.tie_band, ranked[i].step_us, ranked[i].tie_band)) {
      leader = i;
      ++group;
    }
    ranked[i].tie_group = group;
  }
  for (auto& r : ranked) {
    r.tied = std::count_if(ranked.begin(), ranked.end(),
                           [&](const RankedBackend& o) { return o.tie_group == r.tie_group; }) > 1;
  }
}

}  // namespace

FitCheck Ranking::memory() const {
  FitCheck out = ranked.empty() || !ranked.front().memory ? FitCheck{} : *ranked.front().memory;
  std::size_t misfits = 0;
  for (const auto& b : ranked) {
    if (!b.memory || b.memory->fits) continue;
    if (misfits++ == 0) out = *b.memory;
  }
  if (misfits > 0) {
    const std::string_view prefix = "does not fit: ";
    std::string why = out.message;
    if (why.rfind(prefix, 0) == 0) why.erase(0, prefix.size());
    out.message = fmt::format("does not fit for {} of {} ranked backend(s); the fastest of them: {}", misfits,
                              ranked.size(), why);
  }
  return out;
}

Ranking rankBackends(const Catalog& c, const Scenario& s, const std::vector<std::string>& engines) {
  Ranking out;
  out.hardware = &c.hardware(s.hardware);
  out.model = resolveModel(c, s);
  out.workload = s.workload;
  out.cuda_graphs = s.cuda_graphs;
  std::vector<std::string> ids = engines;
  if (ids.empty()) {
    for (const auto& e : c.engines()) ids.push_back(e.policy.engine);
  }
  for (const auto& id : ids) rankEngine(c, s, c.engine(id), out);
  std::sort(out.ranked.begin(), out.ranked.end(), [](const RankedBackend& a, const RankedBackend& b) {
    return a.step_us != b.step_us ? a.step_us < b.step_us : a.engine + a.backend < b.engine + b.backend;
  });
  if (out.ranked.empty()) throw EngineRefusal("no backend of the chosen engines can run this scenario");
  for (std::size_t i = 0; i + 1 < out.ranked.size(); ++i) {
    out.ranked[i].margin_to_next = out.ranked[i + 1].step_us / out.ranked[i].step_us - 1;
  }
  groupTies(out.ranked);
  addRegrets(out, ids);
  return out;
}

}  // namespace attnsim
