#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "backends/KernelFamily.hpp"
#include "cli/Commands.hpp"
#include "core/Error.hpp"
#include "core/Strings.hpp"
#include "simulator/Predictor.hpp"
#include "simulator/Selector.hpp"

namespace attnsim::cli {

namespace {

using nlohmann::json;

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
    if (!db.empty()) c.applyCalibrations(Store(db).latestCalibrations());
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
    for (const auto& kv : engine_options) {
      const auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) throw UsageError("--option " + kv + ": expected name=value");
      o.engine_options[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    return o;
  }
};

PredictionInput inputFor(const HardwareProfile& hw, const ModelSpec& m, const Engine& e, const EngineRun& run,
                         const Catalog& c, bool graphs_on) {
  PredictionInput in;
  in.hardware = &hw;
  in.model = &m;
  const BackendCaps& caps = *run.choice->caps;
  in.prefill_kernel = caps.prefill_kernel.empty() ? nullptr : &c.kernel(caps.prefill_kernel);
  in.decode_kernel = caps.decode_kernel.empty() ? nullptr : &c.kernel(caps.decode_kernel);
  in.cuda_graph_level = caps.cuda_graph;
  in.graphs = e.policy.cuda_graph ? &*e.policy.cuda_graph : nullptr;
  in.engine_env = run.selection.env;
  if (!graphs_on) in.engine_env["cuda_graph_disabled"] = true;
  in.kv_dtype = toDisplay(run.selection.env.at("kv_dtype"));
  in.page_size = std::get<std::int64_t>(run.selection.env.at("page_size"));
  in.tp = static_cast<int>(std::get<std::int64_t>(run.selection.env.at("tp")));
  return in;
}

double stepOf(const Prediction& p, bool graphs_on) { return graphs_on ? p.graph.step_us : p.eager.step_us; }

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

// The parameters each attention call used, and where they came from (calibration, figure, default).
json parametersJson(const Prediction& p, const HardwareProfile& hw, Phase phase) {
  json params = json::array();
  const bool decode = phase == Phase::Decode || phase == Phase::Verify;
  for (const auto& a : p.attention) {
    const KernelModel k = resolveKernel(*a.kernel, hw, decode);
    params.push_back({{"kernel", a.kernel->id},
                      {"compute_efficiency", k.compute_efficiency},
                      {"memory_efficiency", k.memory_efficiency},
                      {"fixed_us", k.fixed_us},
                      {"source", *k.efficiency_source}});
  }
  params.push_back({{"hardware", hw.id}, {"launch_overheads_source", hw.overheads.source}, {"source", hw.source}});
  return params;
}

json predictionJson(const Prediction& p, const HardwareProfile& hw, bool graphs_on, Phase phase) {
  const LayerAttention& first = p.attention.front();
  double flops = 0, bytes = 0;
  for (const auto& a : p.attention) {
    flops += a.cost.flops * a.layers;
    bytes += a.cost.bytes * a.layers;
  }
  const int layers = std::max(1, p.eager.nodes > 0 ? static_cast<int>(p.attention.size()) : 1);
  (void)layers;
  int total_layers = 0;
  for (const auto& a : p.attention) total_layers += a.layers;
  json layer_types = json::array();
  for (const auto& a : p.attention) layer_types.push_back(attentionJson(a));
  return {{"attention_us", p.attention_us},
          {"step_us_eager", p.eager.step_us},
          {"step_us_graph", graphs_on ? json(p.graph.step_us) : json()},
          {"bound", boundName(first.cost.bound)},
          {"flops", flops / total_layers},
          {"bytes", bytes / total_layers},
          {"attention_layers", layer_types},
          {"eager", timelineJson(p.eager)},
          {"graph", graphs_on ? timelineJson(p.graph) : json()},
          {"graph_mode", graphs_on ? graphModeName(p.graph_decision.mode) : "off"},
          {"graph_note", p.graph_decision.why},
          {"padded_batch", p.graph_decision.padded_batch},
          {"capture_sizes", p.graph_decision.capture_sizes},
          {"capture_ms", p.graph_decision.capture_ms},
          {"capture_mib", p.graph_decision.capture_mib},
          {"parameters", parametersJson(p, hw, phase)}};
}

std::string describe(const Workload& w) {
  std::vector<std::string> parts;
  for (const auto& g : w.groups) parts.push_back(fmt::format("{} × (q_len {}, context {})", g.count, g.q_len, g.context));
  return fmt::format("{} {}", w.isUniform() ? phaseName(w.phase) : "mixed", join(parts, " + "));
}

void printPrediction(const std::string& what, const Prediction& p, const Workload& w, bool graphs_on) {
  fmt::print("{}\n{}\n\n", what, describe(w));
  for (const auto& a : p.attention) {
    const AttentionCost& c = a.cost;
    fmt::print("attention [{} ×{} layers, kernel {}]: {:.2f} µs, {}-bound\n", a.layer->name, a.layers, a.kernel->id,
               c.time_us, boundName(c.bound));
    fmt::print(
        "  {:.3g} FLOP ({:.3g} tiled), {:.3g} bytes; {:.1f} TFLOP/s, {:.0f} GB/s achieved; {} KV split(s), "
        "{:.0f} work units, {:.0f}% of the machine busy\n",
        c.flops, c.flops_tiled, c.bytes, c.achievedTflops(), c.achievedGBps(), c.splits, c.ctas, 100 * c.utilization);
  }
  fmt::print("\nstep ({} kernels): eager {:.1f} µs (GPU busy {:.1f}, CPU issue {:.1f}, {} launches)\n", p.eager.nodes,
             p.eager.step_us, p.eager.gpu_busy_us, p.eager.cpu_us, p.eager.launches);
  if (graphs_on) {
    fmt::print("                   graph {:.1f} µs ({}; {})\n", p.graph.step_us, graphModeName(p.graph_decision.mode),
               p.graph_decision.why);
    if (p.graph_decision.capture_sizes > 0) {
      fmt::print("CUDA graphs: {} sizes, batch padded to {}, one-time capture {:.1f} s and {:.0f} MiB\n",
                 p.graph_decision.capture_sizes, p.graph_decision.padded_batch, p.graph_decision.capture_ms / 1e3,
                 p.graph_decision.capture_mib);
    }
  }
  fmt::print("kernel time by kind: attention {:.1f} µs, GEMM {:.1f}, MoE {:.1f}, elementwise {:.1f}\n",
             p.eager.by_category[0], p.eager.by_category[1], p.eager.by_category[2], p.eager.by_category[3]);
}

}  // namespace

const char* stageOf(Phase p) { return p == Phase::Prefill || p == Phase::Extend ? "prefill" : "decode"; }


// Runs the engine's selection with `backend` asked for. Engines that choose per phase first get
// the backend for both phases (as --attention-backend does), then for the predicted phase only.
EngineRun runEngine(const Catalog& c, const HardwareProfile& hw, const ModelSpec& m, const Engine& e,
                    const ServingOptions& options, const std::optional<std::string>& backend, Phase phase) {
  const bool prefill = std::string(stageOf(phase)) == "prefill";
  auto attempt = [&](bool both_phases) {
    ServingOptions o = options;
    if (backend && (both_phases || !e.policy.per_stage)) {
      o.backend = backend;
    } else if (backend) {
      (prefill ? o.prefill_backend : o.decode_backend) = backend;
    }
    EngineRun run{Selector(c).select({&hw, &m, &e.policy, o}), std::nullopt};
    if (!run.selection.refusal) run.choice = prefill ? run.selection.prefill : run.selection.decode;
    return run;
  };
  EngineRun run = attempt(true);
  if (run.selection.refusal && backend && e.policy.per_stage) {
    EngineRun single = attempt(false);
    if (!single.selection.refusal) return single;
  }
  return run;
}

Runner addPredictCommand(CLI::App& app, const GlobalOptions& global) {
  auto flags = std::make_shared<PredictFlags>();
  flags->addTo(app, false);
  return [&global, flags]() {
    const Catalog c = flags->catalog(global);
    const HardwareProfile& hw = c.hardware(flags->hardware);
    const ModelSpec model = flags->resolveModel(c);
    const Workload w = flags->workload();
    const bool graphs_on = flags->cuda_graph == "on";
    const int chosen =
        (flags->backend.empty() ? 0 : 1) + (flags->kernel.empty() ? 0 : 1) + (flags->engines.empty() ? 0 : 1);
    if (chosen != 1) throw UsageError("give exactly one of --backend engine:NAME, --engine E or --kernel NAME");
    PredictionInput in;
    std::string what;
    json selection = nullptr;
    if (!flags->kernel.empty()) {
      in.hardware = &hw;
      in.model = &model;
      in.prefill_kernel = in.decode_kernel = &c.kernel(flags->kernel);
      in.kv_dtype = flags->kv_dtype.value_or("auto");
      in.page_size = flags->page_size.value_or(16);
      in.tp = static_cast<int>(flags->tp.value_or(1));
      what = fmt::format("{} · {} · kernel {} (no engine: every batch captured, full graphs)", hw.id, model.id,
                         flags->kernel);
    } else {
      std::string engine_id = flags->engines;
      std::optional<std::string> backend;
      if (!flags->backend.empty()) {
        const auto colon = flags->backend.find(':');
        if (colon == std::string::npos) throw UsageError("--backend needs engine:NAME, e.g. vllm:FLASH_ATTN");
        engine_id = flags->backend.substr(0, colon);
        backend = flags->backend.substr(colon + 1);
      }
      const Engine& e = c.engine(engine_id);
      const EngineRun run = runEngine(c, hw, model, e, flags->serving(), backend, w.phase);
      if (run.selection.refusal) throw EngineRefusal(*run.selection.refusal);
      in = inputFor(hw, model, e, run, c, graphs_on);
      what = fmt::format("{} · {} · {}:{}{} ({} {})", hw.id, model.id, e.policy.engine, run.choice->name,
                         run.choice->variant.empty() ? "" : " [" + run.choice->variant + "]", stageOf(w.phase),
                         backend ? "backend as given" : "backend the engine picks");
      selection = {{"engine", e.policy.engine},
                   {"backend", run.choice->name},
                   {"variant", run.choice->variant},
                   {"cuda_graph_support", run.choice->caps->cuda_graph},
                   {"notes", run.selection.notes}};
    }
    const Predictor predictor(c, in);
    const Prediction p = predictor.predict(w);
    if (global.json) {
      json out = predictionJson(p, hw, graphs_on, w.phase);
      out["selection"] = selection;
      json groups = json::array();
      for (const auto& g : w.groups) {
        groups.push_back({{"count", g.count}, {"q_len", g.q_len}, {"context", g.context}, {"tree_topk", g.tree_topk}});
      }
      out["scenario"] = {{"hardware", hw.id},       {"model", model.id},  {"phase", phaseName(w.phase)},
                         {"mixed", !w.isUniform()}, {"requests", groups}, {"page_size", in.page_size},
                         {"kv_dtype", in.kv_dtype}, {"tp", in.tp}};
      out["catalog_hash"] = c.contentHash();
      std::cout << out.dump(2) << "\n";
    } else {
      printPrediction(what, p, w, graphs_on);
    }
    return 0;
  };
}

Runner addRankCommand(CLI::App& app, const GlobalOptions& global) {
  auto flags = std::make_shared<PredictFlags>();
  flags->addTo(app, true);
  return [&global, flags]() {
    const Catalog c = flags->catalog(global);
    const HardwareProfile& hw = c.hardware(flags->hardware);
    const ModelSpec model = flags->resolveModel(c);
    const Workload w = flags->workload();
    const bool graphs_on = flags->cuda_graph == "on";
    std::vector<std::string> engines = splitList(flags->engines);
    if (engines.empty()) {
      for (const auto& e : c.engines()) engines.push_back(e.policy.engine);
    }
    struct Row {
      std::string engine, backend, variant;
      double step_us, attention_us;
      std::string bound;
    };
    std::vector<Row> rows;
    json invalid = json::object();
    json defaults = json::object();
    std::map<std::string, std::string> auto_choice;
    for (const auto& id : engines) {
      const Engine& e = c.engine(id);
      const ServingOptions o = flags->serving();
      const EngineRun own = runEngine(c, hw, model, e, o, std::nullopt, w.phase);
      auto_choice[id] = own.choice ? own.choice->name : "";
      for (const auto& name : backendNames(e)) {
        const EngineRun run = runEngine(c, hw, model, e, o, name, w.phase);
        if (run.selection.refusal) {
          invalid[id + ":" + name] = *run.selection.refusal;
          continue;
        }
        const Predictor predictor(c, inputFor(hw, model, e, run, c, graphs_on));
        const Prediction p = predictor.predict(w);
        rows.push_back({id, name, run.choice->variant, stepOf(p, graphs_on), p.attention_us,
                        boundName(p.attention.front().cost.bound)});
      }
    }
    std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
      return a.step_us != b.step_us ? a.step_us < b.step_us : a.engine + a.backend < b.engine + b.backend;
    });
    if (rows.empty()) throw EngineRefusal("no backend of the chosen engines can run this scenario");
    const double best = rows.front().step_us;
    json ranked = json::array();
    if (!global.json) {
      fmt::print("{} · {} · {} · step time with CUDA graphs {}\n\n", hw.id, model.id, describe(w),
                 graphs_on ? "on" : "off");
      fmt::print("{:>4}  {:<34} {:>12} {:>10} {:>12}  {}\n", "rank", "backend", "step µs", "vs next", "attention µs",
                 "bound");
    }
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      const double margin = i + 1 < rows.size() ? rows[i + 1].step_us / r.step_us - 1 : 0;
      const std::string label = r.engine + ":" + r.backend + (r.variant.empty() ? "" : " [" + r.variant + "]");
      const bool is_default = auto_choice[r.engine] == r.backend;
      if (global.json) {
        ranked.push_back({{"engine", r.engine},
                          {"backend", r.backend},
                          {"variant", r.variant},
                          {"step_us", r.step_us},
                          {"attention_us", r.attention_us},
                          {"margin_to_next", margin},
                          {"bound", r.bound},
                          {"engine_default", is_default}});
      } else {
        fmt::print("{:>4}  {:<34} {:>12.1f} {:>9.1f}% {:>12.2f}  {}{}\n", i + 1, label, r.step_us, 100 * margin,
                   r.attention_us, r.bound, is_default ? "  ← engine default" : "");
      }
    }
    for (const auto& id : engines) {
      const auto it = std::find_if(rows.begin(), rows.end(),
                                   [&](const Row& r) { return r.engine == id && r.backend == auto_choice[id]; });
      if (it == rows.end()) continue;
      const auto own_best = std::find_if(rows.begin(), rows.end(), [&](const Row& r) { return r.engine == id; });
      const double regret = it->step_us / own_best->step_us - 1;
      defaults[id] = {{"backend", it->backend},
                      {"step_us", it->step_us},
                      {"best_backend", own_best->backend},
                      {"regret", regret},
                      {"regret_us", it->step_us - own_best->step_us}};
      if (!global.json) {
        fmt::print("\n{}: default {} is {:.1f}% ({:.1f} µs) slower than its fastest valid backend {}", id, it->backend,
                   100 * regret, it->step_us - own_best->step_us, own_best->backend);
      }
    }
    if (global.json) {
      std::cout << json{{"ranked", ranked},
                        {"engine_defaults", defaults},
                        {"invalid", invalid},
                        {"best_step_us", best},
                        {"catalog_hash", c.contentHash()}}
                       .dump(2)
                << "\n";
    } else {
      fmt::print("\n\n{} backends not valid here (attnsim --json rank lists the reasons)\n", invalid.size());
    }
    return 0;
  };
}

}  // namespace attnsim::cli
