#include "reports/Json.hpp"

#include <algorithm>

#include "backends/KernelFamily.hpp"
#include "catalog/Catalog.hpp"
#include "cost/OperatorSources.hpp"

namespace attnsim {

using nlohmann::json;

namespace {

json choiceJson(const std::optional<BackendChoice>& c) {
  if (!c) return nullptr;
  return {{"backend", c->name},
          {"variant", c->variant.empty() ? json() : json(c->variant)},
          {"chosen_by", c->how},
          {"cuda_graph", c->caps->cuda_graph},
          {"prefill_kernel", c->caps->prefill_kernel.empty() ? json() : json(c->caps->prefill_kernel)},
          {"decode_kernel", c->caps->decode_kernel.empty() ? json() : json(c->caps->decode_kernel)}};
}

json reasonsJson(const ReasonList& list) {
  json out = json::object();
  for (const auto& [name, reasons] : list) out[name] = reasons;
  return out;
}

}  // namespace

json envValueJson(const Env& env, const char* name) {
  const auto it = env.find(name);
  if (it == env.end() || isNull(it->second)) return nullptr;
  const Value& v = it->second;
  if (const auto* b = std::get_if<bool>(&v)) return *b;
  if (const auto* i = std::get_if<std::int64_t>(&v)) return *i;
  if (const auto* d = std::get_if<double>(&v)) return *d;
  return std::get<std::string>(v);
}

namespace {

json findingJson(const Finding& f) {
  json j = {{"rule", f.rule}, {"source", f.source}};
  if (!f.reason.empty()) j["reason"] = f.reason;
  return j;
}

}  // namespace

json explanationJson(const Selection& sel) {
  json chosen = json::object();
  for (const auto& [stage, choice] : {std::pair{"prefill", &sel.prefill}, std::pair{"decode", &sel.decode}}) {
    if (*choice) chosen[stage] = {{"backend", (*choice)->name}, {"decided_by", findingJson((*choice)->decided_by)}};
  }
  json rejected = json::object();
  for (const auto& [name, why] : sel.rejected_why) {
    json list = json::array();
    for (const auto& f : why) list.push_back(findingJson(f));
    rejected[name] = list;
  }
  return {
      {"chosen", chosen}, {"refused_by", sel.refusal ? findingJson(sel.refused_by) : json()}, {"rejected", rejected}};
}

json selectionJson(const ScenarioSelection& s, const Catalog& c) {
  const Selection& sel = s.selection;
  const auto common = sel.commonBackend();
  return {{"engine", sel.engine},
          {"hardware", s.hardware->id},
          {"model", s.model->id},
          {"backend", common ? json(*common) : json()},
          {"prefill_backend", sel.prefill ? json(sel.prefill->name) : json()},
          {"decode_backend", sel.decode ? json(sel.decode->name) : json()},
          {"prefill", choiceJson(sel.prefill)},
          {"decode", choiceJson(sel.decode)},
          {"kv_dtype", envValueJson(sel.env, "kv_dtype")},
          {"page_size", envValueJson(sel.env, "page_size")},
          {"notes", sel.notes},
          {"considered", reasonsJson(sel.considered)},
          {"rejected", reasonsJson(sel.rejected)},
          {"error", sel.refusal ? json(*sel.refusal) : json()},
          {"engine_version", s.engine->policy.version},
          {"catalog_hash", c.contentHash()},
          {"attnsim_version", ATTNSIM_VERSION}};
}

namespace {

json attentionJson(const LayerAttention& a) {
  const AttentionCost& c = a.cost;
  return {{"layer_type", a.layer->name},
          {"layers", a.layers},
          {"kernel", a.kernel->id},
          {"attention_us", c.time_us},
          {"bound", boundName(c.bound)},
          {"flops", c.flops},
          {"flops_tiled", c.flops_tiled},
          {"bytes", c.bytes},
          {"bytes_min", c.bytes_min},
          {"achieved_tflops", c.achievedTflops()},
          {"achieved_gbps", c.achievedGBps()},
          {"splits", c.splits},
          {"ctas", c.ctas},
          {"utilization", c.utilization},
          {"compute_us", c.compute_us},
          {"memory_us", c.memory_us},
          {"fixed_us", c.fixed_us}};
}

json timelineJson(const StepTimeline& t) {
  return {{"step_us", t.step_us},
          {"gpu_busy_us", t.gpu_busy_us},
          {"cpu_us", t.cpu_us},
          {"launches", t.launches},
          {"nodes", t.nodes},
          {"attention_us", t.by_category[0]},
          {"gemm_us", t.by_category[1]},
          {"moe_us", t.by_category[2]},
          {"elementwise_us", t.by_category[3]}};
}

json parametersJson(const ScenarioPrediction& sp) {
  json params = json::array();
  for (const auto& k : sp.parameters) {
    params.push_back({{"kernel", k.kernel},
                      {"compute_efficiency", k.compute_efficiency},
                      {"memory_efficiency", k.memory_efficiency},
                      {"fixed_us", k.fixed_us},
                      {"provenance", provenanceName(k.provenance)},
                      {"band", k.band},
                      {"band_basis", bandBasisName(k.band_basis)},
                      {"source", k.source}});
  }
  const HardwareProfile& hw = *sp.hardware;
  params.push_back({{"hardware", hw.id}, {"launch_overheads_source", hw.overheads.source}, {"source", hw.source}});
  return params;
}

// The prediction's provenance and bands, with the intervals they give.
json uncertaintyJson(const ScenarioPrediction& sp) {
  const Prediction& p = sp.prediction;
  const PredictionUncertainty& u = p.uncertainty;
  const double step = sp.stepUs();
  const double band = sp.cuda_graphs ? u.graph_band : u.eager_band;
  return {{"provenance", provenanceName(u.provenance)},
          {"band_basis", bandBasisName(u.basis)},
          {"attention_band", u.attention_band},
          {"non_attention_band", u.non_attention_band},
          {"step_band_eager", u.eager_band},
          {"step_band_graph", sp.cuda_graphs ? json(u.graph_band) : json()},
          {"tie_band", sp.cuda_graphs ? u.graph_tie_band : u.eager_tie_band},
          {"step_us", step},
          {"step_us_low", bandLow(step, band)},
          {"step_us_high", bandHigh(step, band)},
          {"attention_us_low", bandLow(p.attention_us, u.attention_band)},
          {"attention_us_high", bandHigh(p.attention_us, u.attention_band)}};
}

json scenarioJson(const ScenarioPrediction& sp) {
  json groups = json::array();
  for (const auto& g : sp.workload.groups) {
    groups.push_back({{"count", g.count}, {"q_len", g.q_len}, {"context", g.context}, {"tree_topk", g.tree_topk}});
  }
  return {{"hardware", sp.hardware->id},       {"model", sp.model->id}, {"phase", phaseName(sp.workload.phase)},
          {"mixed", !sp.workload.isUniform()}, {"requests", groups},    {"page_size", sp.input.page_size},
          {"kv_dtype", sp.kv_dtype},           {"tp", sp.input.tp}};
}

json backendJson(const std::optional<PredictedBackend>& b) {
  if (!b) return nullptr;
  return {{"engine", b->engine},
          {"backend", b->backend},
          {"variant", b->variant},
          {"cuda_graph_support", b->cuda_graph_support},
          {"notes", b->notes}};
}

}  // namespace

json memoryJson(const std::optional<FitCheck>& fit) {
  if (!fit) {
    return {{"fits", nullptr},
            {"need_mib", nullptr},
            {"have_mib", nullptr},
            {"reason", nullptr},
            {"message", "not modelled: a kernel outside any engine has no memory split"}};
  }
  return {{"fits", fit->fits},
          {"need_mib", fit->need_mib},
          {"have_mib", fit->have_mib},
          {"reason", fit->reason.empty() ? json() : json(fit->reason)},
          {"message", fit->message}};
}

std::string memoryLine(const std::optional<FitCheck>& fit) {
  return "memory: " + (fit ? fit->message : std::string("not modelled (a kernel outside any engine)"));
}

json predictionJson(const ScenarioPrediction& sp, const Catalog& c) {
  const Prediction& p = sp.prediction;
  const bool graphs = sp.cuda_graphs;
  double flops = 0, bytes = 0;
  int total_layers = 0;
  json layer_types = json::array();
  for (const auto& a : p.attention) {
    flops += a.cost.flops * a.layers;
    bytes += a.cost.bytes * a.layers;
    total_layers += a.layers;
    layer_types.push_back(attentionJson(a));
  }
  json out = {{"memory", memoryJson(sp.memory)},
              {"attention_us", p.attention_us},
              {"step_us_eager", p.eager.step_us},
              {"step_us_graph", graphs ? json(p.graph.step_us) : json()},
              {"bound", boundName(p.attention.front().cost.bound)},
              {"flops", flops / total_layers},
              {"bytes", bytes / total_layers},
              {"attention_layers", layer_types},
              {"eager", timelineJson(p.eager)},
              {"graph", graphs ? timelineJson(p.graph) : json()},
              {"graph_mode", graphs ? graphModeName(p.graph_decision.mode) : "off"},
              {"graph_note", p.graph_decision.why},
              {"padded_batch", p.graph_decision.padded_batch},
              {"capture_sizes", p.graph_decision.capture_sizes},
              {"capture_ms", p.graph_decision.capture_ms},
              {"capture_mib", p.graph_decision.capture_mib},
              {"uncertainty", uncertaintyJson(sp)},
              {"parameters", parametersJson(sp)},
              {"selection", backendJson(sp.backend)},
              {"scenario", scenarioJson(sp)},
              {"catalog_hash", c.contentHash()}};
  if (!p.mixed_note.empty()) out["mixed_note"] = p.mixed_note;
  if (p.tp_comm_us > 0) out["tp_comm_us"] = p.tp_comm_us;
  if (sp.input.attention_dp > 1) out["attention_dp"] = sp.input.attention_dp;
  json operators = json::array();
  for (const auto& o : stepOperatorSources(c, *sp.hardware, *sp.model, sp.input.engine, sp.input.tp)) {
    operators.push_back({{"operator", o.what},
                         {"provenance", provenanceName(o.provenance)},
                         {"source", o.source},
                         {"band", o.band.band},
                         {"band_basis", bandBasisName(o.band.basis)}});
  }
  out["operators"] = operators;
  return out;
}

json rankingJson(const Ranking& r, const Catalog& c) {
  json ranked = json::array();
  for (const auto& row : r.ranked) {
    ranked.push_back({{"engine", row.engine},
                      {"backend", row.backend},
                      {"variant", row.variant},
                      {"step_us", row.step_us},
                      {"attention_us", row.attention_us},
                      {"margin_to_next", row.margin_to_next},
                      {"bound", row.bound},
                      {"engine_default", row.engine_default},
                      {"provenance", provenanceName(row.provenance)},
                      {"band", row.band},
                      {"tie_band", row.tie_band},
                      {"attention_band", row.attention_band},
                      {"step_us_low", bandLow(row.step_us, row.band)},
                      {"step_us_high", bandHigh(row.step_us, row.band)},
                      {"tie_group", row.tie_group},
                      {"tied", row.tied},
                      {"memory", memoryJson(row.memory)}});
  }
  json groups = json::array();
  for (const auto& row : r.ranked) {
    if (groups.size() < static_cast<std::size_t>(row.tie_group)) groups.push_back(json::array());
    groups.back().push_back(row.engine + ":" + row.backend);
  }
  json defaults = json::object();
  for (const auto& d : r.defaults) {
    defaults[d.engine] = {{"backend", d.backend}, {"step_us", d.step_us},     {"best_backend", d.best_backend},
                          {"regret", d.regret},   {"regret_us", d.regret_us}, {"within_band", d.within_band}};
  }
  json invalid = json::object();
  for (const auto& [name, reason] : r.invalid) invalid[name] = reason;
  json resolved = json::object();
  for (const auto& [name, runs] : r.resolved) resolved[name] = {{"runs", runs.first}, {"why", runs.second}};
  const bool modelled = std::any_of(r.ranked.begin(), r.ranked.end(), [](const auto& b) { return b.memory; });
  return {{"memory", memoryJson(modelled ? std::optional<FitCheck>(r.memory()) : std::nullopt)},
          {"ranked", ranked},
          {"tie_groups", groups},
          {"engine_defaults", defaults},
          {"invalid", invalid},
          {"resolved", resolved},
          {"best_step_us", r.ranked.front().step_us},
          {"catalog_hash", c.contentHash()}};
}

namespace {

json outcomeJson(const LayerCheck& check) {
  const CheckOutcome& o = check.outcome;
  const CheckRequest& rq = check.request;
  return {{"passed", o.passed},
          {"max_abs_err", o.max_abs_err},
          {"max_rel_err", o.max_rel_err},
          {"tolerance", o.tolerance},
          {"kernel", rq.kernel->id},
          {"layer_type", rq.layer->name},
          {"pipeline", o.pipeline},
          {"kv_format", kernels::kvFormatName(rq.kv)},
          {"shape",
           {{"batch", o.batch},
            {"q_len", o.q_len},
            {"context", o.context},
            {"heads", o.heads},
            {"kv_heads", o.kv_heads},
            {"d_qk", o.d_qk},
            {"d_v", o.d_v},
            {"splits", o.splits},
            {"window", o.window},
            {"top_k", o.top_k},
            {"page_size", rq.page_size}}},
          {"scaled_down", o.scaled_down},
          {"scaled_note", o.scaled_note}};
}

}  // namespace

json checkJson(const ScenarioCheck& check) {
  json layers = json::array();
  for (const auto& l : check.layers) layers.push_back(outcomeJson(l));
  json out = layers.front();
  out["passed"] = check.passed;
  out["layers"] = layers;
  out["backend"] = check.backend;
  out["model"] = check.model->id;
  out["hardware"] = check.hardware->id;
  out["phase"] = phaseName(check.phase);
  return out;
}

json catalogCheckJson(const CatalogCheck& check, const Catalog& c) {
  json rows = json::array();
  for (const auto& r : check.rows) {
    json row = outcomeJson(r.check);
    row["backend"] = r.backend;
    row["model"] = r.model;
    row["phase"] = phaseName(r.phase);
    row["hardware"] = r.hardware;
    rows.push_back(row);
  }
  return {{"checks", rows},           {"checked", check.rows.size()},
          {"failed", check.failed},   {"distinct_runs", check.distinct_runs},
          {"seconds", check.seconds}, {"catalog_hash", c.contentHash()}};
}

}  // namespace attnsim
