#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "backends/KernelFamily.hpp"
#include "cli/Commands.hpp"
#include "core/Error.hpp"
#include "core/Strings.hpp"
#include "simulator/Checker.hpp"

namespace attnsim::cli {

namespace {

using nlohmann::json;

// Hardware tried, in order, when --hardware is not given: the first on which the engine accepts
// the backend for this model.
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
    if (!run.selection.refusal) return CheckTarget{&hw, std::move(run)};
    if (refusal && (refusal->empty() || !hw_id.empty())) *refusal = *run.selection.refusal;
  }
  return std::nullopt;
}

CheckRequest requestFor(const Catalog& c, const EngineRun& run, const AttentionLayerSpec& layer, const ModelSpec& m,
                        Phase phase, std::int64_t tree_topk) {
  const BackendCaps& caps = *run.choice->caps;
  const std::string& kernel_id = std::string(stageOf(phase)) == "prefill" && !caps.prefill_kernel.empty()
                                     ? caps.prefill_kernel
                                 : caps.decode_kernel.empty() ? caps.prefill_kernel
                                                              : caps.decode_kernel;
  CheckRequest rq;
  rq.kernel = &c.kernel(kernel_id);
  rq.layer = &layer;
  rq.phase = phase;
  rq.dtype = m.dtype;
  rq.kv = kernels::parseKvFormat(toDisplay(run.selection.env.at("kv_dtype")), m.dtype);
  rq.page_size = std::get<std::int64_t>(run.selection.env.at("page_size"));
  rq.tree_topk = tree_topk;
  return rq;
}

json outcomeJson(const CheckOutcome& o, const CheckRequest& rq) {
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

int checkAll(const Catalog& c, bool as_json, double budget) {
  const auto start = std::chrono::steady_clock::now();
  // Many backends share a kernel family: a check depends only on the family, the layer geometry,
  // the phase, the KV format and the page size, so each distinct one runs once.
  std::map<std::string, CheckOutcome> done;
  json rows = json::array();
  int failed = 0, checked = 0;
  if (!as_json) {
    fmt::print("{:<34} {:<15} {:<8} {:<18} {:<9} {:>10} {:>9}  {}\n", "backend", "model", "phase", "kernel", "kv",
               "max rel", "tol", "result");
  }
  for (const auto& e : c.engines()) {
    for (const auto& name : backendNames(e)) {
      for (const auto& m : c.models()) {
        for (const Phase phase : {Phase::Prefill, Phase::Decode}) {
          const auto target = findTarget(c, m, e, {}, name, phase, "", nullptr);
          if (!target) continue;
          for (const auto& [layer, count] : m.layerCounts()) {
            CheckRequest rq = requestFor(c, target->run, *layer, m, phase, 1);
            rq.flop_budget = budget;
            const std::string key = fmt::format(
                "{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", rq.kernel->id, layer->kind, layer->num_heads,
                layer->num_kv_heads, layer->head_dim, layer->head_dim_v, layer->sliding_window, layer->sinks,
                layer->sparse_top_k, phaseName(phase), kernels::kvFormatName(rq.kv), rq.page_size, rq.dtype);
            auto it = done.find(key);
            if (it == done.end()) it = done.emplace(key, runCheck(rq)).first;
            const CheckOutcome& o = it->second;
            ++checked;
            failed += o.passed ? 0 : 1;
            const std::string id = e.policy.engine + ":" + name;
            if (as_json) {
              json row = outcomeJson(o, rq);
              row["backend"] = id;
              row["model"] = m.id;
              row["phase"] = phaseName(phase);
              row["hardware"] = target->hw->id;
              rows.push_back(row);
            } else {
              fmt::print("{:<34} {:<15} {:<8} {:<18} {:<9} {:>10.2e} {:>9.1e}  {}\n", id,
                         m.id + (count < m.num_layers ? "/" + layer->name : ""), phaseName(phase), rq.kernel->id,
                         kernels::kvFormatName(rq.kv), o.max_rel_err, o.tolerance, o.passed ? "pass" : "FAIL");
            }
          }
        }
      }
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (as_json) {
    std::cout << json{{"checks", rows},     {"checked", checked},
                      {"failed", failed},   {"distinct_runs", done.size()},
                      {"seconds", seconds}, {"catalog_hash", c.contentHash()}}
                     .dump(2)
              << "\n";
  } else {
    fmt::print("\n{} valid (backend, model, phase, layer) checks, {} distinct kernel runs, {} failed, {:.1f} s\n",
               checked, done.size(), failed, seconds);
  }
  return failed > 0 ? 1 : 0;
}

}  // namespace

Runner addCheckCommand(CLI::App& app, const GlobalOptions& global) {
  struct Flags {
    std::string backend, model, hardware, phase = "decode";
    std::optional<std::string> kv_dtype;
    std::optional<std::int64_t> page_size, spec_topk;
    std::vector<std::string> engine_options;
    bool all = false;
    double budget = 4e8;
  };
  auto f = std::make_shared<Flags>();
  app.add_option("--backend", f->backend, "engine:NAME");
  app.add_option("--model", f->model, "model id (its real head geometry is used)");
  app.add_option("--hardware", f->hardware, "where the engine must accept the backend (default: the first that does)");
  app.add_option("--phase", f->phase, "prefill, extend, decode or verify");
  app.add_option("--kv-dtype", f->kv_dtype, "KV-cache dtype as the engine spells it");
  app.add_option("--page-size", f->page_size, "KV page size");
  app.add_option("--spec-topk", f->spec_topk, "verify: draft tree branching (1 = chain)");
  app.add_option("--option", f->engine_options, "engine flag name=value (repeatable)");
  app.add_flag("--all", f->all, "every valid (backend, model) pair of the catalog, prefill and decode");
  app.add_option("--flop-budget", f->budget, "golden FLOPs per check; lengths shrink to fit")
      ->check(CLI::Range(1e5, 1e12));
  return [&global, f]() {
    const Catalog c = global.loadCatalog();
    if (f->all) return checkAll(c, global.json, std::min(f->budget, 3e7));
    if (f->backend.empty() || f->model.empty())
      throw UsageError("check needs --backend engine:NAME and --model M (or --all)");
    const auto colon = f->backend.find(':');
    if (colon == std::string::npos) throw UsageError("--backend needs engine:NAME, e.g. vllm:FLASH_ATTN");
    const Engine& e = c.engine(f->backend.substr(0, colon));
    const std::string name = f->backend.substr(colon + 1);
    const ModelSpec& m = c.model(f->model);
    const Phase phase = parsePhase(f->phase);
    ServingOptions o;
    o.kv_dtype = f->kv_dtype;
    o.page_size = f->page_size;
    o.spec_topk = f->spec_topk;
    o.has_prefix = phase == Phase::Extend;
    if (phase == Phase::Verify) o.spec_draft_tokens = f->spec_topk.value_or(1) > 1 ? 7 : 4;
    parseEngineOptions(f->engine_options, o);
    std::string refusal;
    const auto target = findTarget(c, m, e, o, name, phase, f->hardware, &refusal);
    if (!target) throw EngineRefusal(refusal);
    json results = json::array();
    bool passed = true;
    for (const auto& [layer, count] : m.layerCounts()) {
      CheckRequest rq = requestFor(c, target->run, *layer, m, phase, f->spec_topk.value_or(1));
      rq.flop_budget = f->budget;
      const CheckOutcome out = runCheck(rq);
      passed = passed && out.passed;
      if (global.json) {
        results.push_back(outcomeJson(out, rq));
      } else {
        fmt::print("{} · {} [{} layers] · {} on {} · kernel {}\n", f->backend, m.id, layer->name, phaseName(phase),
                   target->hw->id, rq.kernel->id);
        fmt::print("  pipeline  {}\n", out.pipeline);
        fmt::print("  shape     batch {}, q_len {}, context {}, heads {}/{} KV, d {}/{}{}\n", out.batch, out.q_len,
                   out.context, out.heads, out.kv_heads, out.d_qk, out.d_v,
                   out.scaled_down ? " (" + out.scaled_note + ")" : "");
        fmt::print("  error     max abs {:.3e}, max rel {:.3e} (tolerance {:.1e} for {} inputs, {} KV): {}\n\n",
                   out.max_abs_err, out.max_rel_err, out.tolerance, rq.dtype, kernels::kvFormatName(rq.kv),
                   out.passed ? "PASS" : "FAIL");
      }
    }
    if (global.json) {
      json first = results.front();
      first["passed"] = passed;
      first["layers"] = results;
      first["backend"] = f->backend;
      first["model"] = m.id;
      first["hardware"] = target->hw->id;
      first["phase"] = phaseName(phase);
      std::cout << first.dump(2) << "\n";
    }
    return passed ? 0 : 1;
  };
}

}  // namespace attnsim::cli
