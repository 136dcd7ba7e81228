#include <fmt/format.h>

#include <iostream>

#include "cli/Commands.hpp"
#include "core/Error.hpp"
#include "core/Progress.hpp"
#include "reports/Json.hpp"
#include "simulator/CheckRun.hpp"

namespace attnsim::cli {

namespace {

void printLayerCheck(const ScenarioCheck& check, const LayerCheck& l) {
  const CheckOutcome& out = l.outcome;
  const CheckRequest& rq = l.request;
  fmt::print("{} · {} [{} layers] · {} on {} · kernel {}\n", check.backend, check.model->id, rq.layer->name,
             phaseName(check.phase), check.hardware->id, rq.kernel->id);
  fmt::print("  pipeline  {}\n", out.pipeline);
  fmt::print("  shape     batch {}, q_len {}, context {}, heads {}/{} KV, d {}/{}{}\n", out.batch, out.q_len,
             out.context, out.heads, out.kv_heads, out.d_qk, out.d_v,
             out.scaled_down ? " (" + out.scaled_note + ")" : "");
  fmt::print("  error     max abs {:.3e}, max rel {:.3e} (tolerance {:.1e} for {} inputs, {} KV): {}\n\n",
             out.max_abs_err, out.max_rel_err, out.tolerance, dtypeName(rq.dtype), kernels::kvFormatName(rq.kv),
             out.passed ? "PASS" : "FAIL");
}

void printCatalogCheck(const CatalogCheck& check) {
  fmt::print("{:<34} {:<15} {:<8} {:<18} {:<9} {:>10} {:>9}  {}\n", "backend", "model", "phase", "kernel", "kv",
             "max rel", "tol", "result");
  for (const auto& r : check.rows) {
    const CheckOutcome& o = r.check.outcome;
    const CheckRequest& rq = r.check.request;
    fmt::print("{:<34} {:<15} {:<8} {:<18} {:<9} {:>10.2e} {:>9.1e}  {}\n", r.backend,
               r.model + (r.whole_model ? "" : "/" + r.layer_name), phaseName(r.phase), rq.kernel->id,
               kernels::kvFormatName(rq.kv), o.max_rel_err, o.tolerance, o.passed ? "pass" : "FAIL");
  }
  fmt::print("\n{} valid (backend, model, phase, layer) checks, {} distinct kernel runs, {} failed, {:.1f} s\n",
             check.rows.size(), check.distinct_runs, check.failed, check.seconds);
}

}  // namespace

Runner addCheckCommand(CLI::App& app, const GlobalOptions& global) {
  auto flags = std::make_shared<ScenarioFlags>();
  auto all = std::make_shared<bool>(false);
  auto budget = std::make_shared<double>(4e8);
  app.add_option("--backend", flags->backend, "engine:NAME");
  app.add_option("--model", flags->models, "model id (its real head geometry is used)");
  app.add_option("--hardware", flags->hardware,
                 "where the engine must accept the backend (default: the first that does)");
  app.add_option("--phase", flags->phase, "prefill, extend, decode or verify");
  app.add_option("--kv-dtype", flags->kv_dtype, "KV-cache dtype as the engine spells it");
  app.add_option("--page-size", flags->page_size, "KV page size");
  app.add_option("--spec-topk", flags->spec_topk, "verify: draft tree branching (1 = chain)");
  app.add_option("--option", flags->engine_options, "engine flag name=value (repeatable)");
  app.add_flag("--all", *all, "every valid (backend, model) pair of the catalog, prefill and decode");
  app.add_option("--flop-budget", *budget, "golden FLOPs per check; lengths shrink to fit")
      ->check(CLI::Range(1e5, 1e12));
  return [&global, flags, all, budget]() {
    const Catalog& c = global.loadCatalog();
    if (*all) {
      Progress progress("check", "(backend, model) pairs");
      const CatalogCheck check =
          checkCatalog(c, std::min(*budget, 3e7),
                       [&progress](std::size_t done, std::size_t total) { progress.update(done, total); });
      if (global.json) {
        std::cout << catalogCheckJson(check, c).dump(2) << "\n";
      } else {
        printCatalogCheck(check);
      }
      return check.failed > 0 ? 1 : 0;
    }
    if (flags->backend.empty() || flags->models.empty()) {
      throw UsageError("check needs --backend engine:NAME and --model M (or --all)");
    }
    const ScenarioCheck check = checkScenario(c, flags->scenario(flags->hardware, flags->models, ""), *budget);
    if (global.json) {
      std::cout << checkJson(check).dump(2) << "\n";
    } else {
      for (const auto& l : check.layers) printLayerCheck(check, l);
    }
    return check.passed ? 0 : 1;
  };
}

}  // namespace attnsim::cli
