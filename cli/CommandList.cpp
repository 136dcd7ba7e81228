#include <fmt/format.h>

#include <iostream>

#include "backends/RuleVariables.hpp"
#include "cli/Commands.hpp"
#include "core/Strings.hpp"
#include "reports/CatalogJson.hpp"

namespace attnsim::cli {

namespace {

std::string fmtCc(const HardwareProfile& h) {
  if (h.compute_capability) return fmt::format("sm {:.1f}", *h.compute_capability);
  return h.gfx_target.empty() ? "-" : h.gfx_target;
}

void printHardware(const Catalog& c) {
  fmt::print("{:<16} {:<40} {:<5} {:<16} {:>8} {:>5} {:>9} {:>9} {:>9} {}\n", "id", "name", "plat", "arch", "cc/gfx",
             "CUs", "bf16 TF", "mem GB", "BW GB/s", "grade");
  for (const auto& h : c.hardwareProfiles()) {
    const double bf16 = h.peak.bf16_tflops.value_or(h.peak.fp16_tflops.value_or(0));
    fmt::print("{:<16} {:<40} {:<5} {:<16} {:>8} {:>5} {:>9.1f} {:>9.0f} {:>9.0f} {}\n", h.id, h.name, h.platform,
               h.architecture, fmtCc(h), h.compute_units, bf16, h.memory_gb, h.memory_bandwidth_gbps, h.confidence);
  }
}

std::string geometry(const AttentionLayerSpec& l) {
  std::string g = l.isMla() ? fmt::format("MLA h{} latent {}+{} v{}", l.num_heads, l.mla->kv_lora_rank,
                                          l.mla->qk_rope_head_dim, l.head_dim_v)
                            : fmt::format("h{}/kv{} d{}", l.num_heads, l.num_kv_heads, l.head_dim);
  if (l.sliding_window > 0) g += fmt::format(" win{}", l.sliding_window);
  if (l.sinks) g += " sinks";
  if (l.sparse_top_k > 0) g += fmt::format(" top{}", l.sparse_top_k);
  if (!l.causal) g += " bidir";
  return g;
}

void printModels(const Catalog& c) {
  fmt::print("{:<16} {:>6} {:>8} {:>8}  {}\n", "id", "layers", "params B", "wts GB", "attention layers (count)");
  for (const auto& m : c.models()) {
    std::vector<std::string> parts;
    for (const auto& [spec, n] : m.layerCounts())
      parts.push_back(fmt::format("{}×{} [{}]", n, spec->name, geometry(*spec)));
    if (m.encoder) {
      parts.push_back(fmt::format("encoder {}×[{}]", m.encoder->num_layers, geometry(m.layer(m.encoder->layer))));
    }
    fmt::print("{:<16} {:>6} {:>8.1f} {:>8.1f}  {}\n", m.id, m.num_layers, m.parameters_b, m.parameterBytes() / 1e9,
               join(parts, "; "));
  }
}

void printKernels(const Catalog& c) {
  fmt::print("{:<22} {:<22} {:<11} {:<20} {:<5} {}\n", "id", "algorithm", "paging", "phases", "split", "name");
  for (const auto& k : c.kernels()) {
    fmt::print("{:<22} {:<22} {:<11} {:<20} {:<5} {}\n", k.id, k.algorithm, pagingName(k.paging), join(k.phases, ","),
               k.split_kv ? "yes" : "no", k.name);
  }
}

void printBackends(const Catalog& c, const std::string& engine_filter) {
  fmt::print("{:<32} {:<4} {:<11} {:<28} {:<20} {}\n", "backend", "kind", "platforms", "cuda graph", "prefill kernel",
             "decode kernel");
  auto orDash = [](const std::string& s) { return s.empty() ? std::string("-") : s; };
  for (const auto& e : c.engines()) {
    if (!engine_filter.empty() && e.policy.engine != engine_filter) continue;
    for (const auto& b : e.backends) {
      const BackendCaps& caps = b.caps;
      fmt::print("{:<32} {:<4} {:<11} {:<28} {:<20} {}\n", b.id(), b.kind, join(caps.platforms, ","), caps.cuda_graph,
                 orDash(caps.prefill_kernel), orDash(caps.decode_kernel));
      for (const auto& v : b.variants) {
        fmt::print("  variant {:<22} {:<28} {:<20} {}   when {}\n", v.name, v.caps.cuda_graph,
                   orDash(v.caps.prefill_kernel), orDash(v.caps.decode_kernel), v.when.text());
      }
    }
  }
}

void printEngines(const Catalog& c) {
  for (const auto& e : c.engines()) {
    const auto& p = e.policy;
    fmt::print("{:<8} {} {} — {} backends; selects {}\n", p.engine, p.display_name, p.version, backendNames(e).size(),
               p.per_stage ? "prefill and decode separately" : "one backend for both phases");
    fmt::print("         --kv-dtype: {}\n", join(p.kv_dtypes, ", "));
    for (const auto& o : p.options) {
      fmt::print("         --option {}=<{}> (default {}): {}\n", o.name, o.type, toDisplay(o.default_value), o.help);
    }
  }
}

void printVariables() {
  for (const auto& [name, doc] : scenarioVariableDocs()) fmt::print("{:<28} {}\n", name, doc);
}

}  // namespace

Runner addListCommand(CLI::App& app, const GlobalOptions& global) {
  auto what = std::make_shared<std::string>();
  auto engine = std::make_shared<std::string>();
  app.add_option("what", *what, "hardware, models, backends, kernels, engines or variables")
      ->required()
      ->check(CLI::IsMember(catalogListKinds()));
  app.add_option("--engine", *engine, "only this engine's backends");
  return [&global, what, engine]() {
    const Catalog& c = global.loadCatalog();
    if (!engine->empty()) (void)c.engine(*engine);
    if (global.json) {
      std::cout << catalogListJson(c, *what, *engine).dump(2) << "\n";
    } else if (*what == "hardware") {
      printHardware(c);
    } else if (*what == "models") {
      printModels(c);
    } else if (*what == "kernels") {
      printKernels(c);
    } else if (*what == "engines") {
      printEngines(c);
    } else if (*what == "variables") {
      printVariables();
    } else {
      printBackends(c, *engine);
    }
    return 0;
  };
}

}  // namespace attnsim::cli
