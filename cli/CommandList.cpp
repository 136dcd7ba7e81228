#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/Commands.hpp"
#include "core/Error.hpp"
#include "core/Strings.hpp"

namespace attnsim::cli {

namespace {

using nlohmann::json;

std::string fmtCc(const HardwareProfile& h) {
  if (h.compute_capability) return fmt::format("sm {:.1f}", *h.compute_capability);
  return h.gfx_target.empty() ? "-" : h.gfx_target;
}

int listHardware(const Catalog& c, bool as_json) {
  json out = json::array();
  if (!as_json) {
    fmt::print("{:<16} {:<40} {:<5} {:<16} {:>8} {:>5} {:>9} {:>9} {:>9} {}\n", "id", "name", "plat", "arch", "cc/gfx",
               "CUs", "bf16 TF", "mem GB", "BW GB/s", "grade");
  }
  for (const auto& h : c.hardwareProfiles()) {
    const double bf16 = h.peak.bf16_tflops.value_or(h.peak.fp16_tflops.value_or(0));
    if (as_json) {
      out.push_back({{"id", h.id},
                     {"name", h.name},
                     {"vendor", h.vendor},
                     {"platform", h.platform},
                     {"architecture", h.architecture},
                     {"compute_capability", h.compute_capability ? json(*h.compute_capability) : json()},
                     {"gfx_target", h.gfx_target},
                     {"compute_units", h.compute_units},
                     {"bf16_tflops", bf16},
                     {"memory_gb", h.memory_gb},
                     {"memory_bandwidth_gbps", h.memory_bandwidth_gbps},
                     {"l2_bytes", h.l2_bytes},
                     {"confidence", h.confidence},
                     {"source", h.source}});
    } else {
      fmt::print("{:<16} {:<40} {:<5} {:<16} {:>8} {:>5} {:>9.1f} {:>9.0f} {:>9.0f} {}\n", h.id, h.name, h.platform,
                 h.architecture, fmtCc(h), h.compute_units, bf16, h.memory_gb, h.memory_bandwidth_gbps, h.confidence);
    }
  }
  if (as_json) std::cout << out.dump(2) << "\n";
  return 0;
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

int listModels(const Catalog& c, bool as_json) {
  json out = json::array();
  if (!as_json) {
    fmt::print("{:<16} {:>6} {:>8} {:>8}  {}\n", "id", "layers", "params B", "wts GB", "attention layers (count)");
  }
  for (const auto& m : c.models()) {
    std::vector<std::string> parts;
    json layers = json::array();
    for (const auto& [spec, n] : m.layerCounts()) {
      parts.push_back(fmt::format("{}×{} [{}]", n, spec->name, geometry(*spec)));
      layers.push_back({{"name", spec->name},
                        {"count", n},
                        {"kind", spec->kind},
                        {"num_heads", spec->num_heads},
                        {"num_kv_heads", spec->num_kv_heads},
                        {"head_dim", spec->head_dim},
                        {"head_dim_v", spec->head_dim_v},
                        {"sliding_window", spec->sliding_window},
                        {"sinks", spec->sinks},
                        {"sparse_top_k", spec->sparse_top_k}});
    }
    if (m.encoder)
      parts.push_back(fmt::format("encoder {}×[{}]", m.encoder->num_layers, geometry(m.layer(m.encoder->layer))));
    if (as_json) {
      out.push_back({{"id", m.id},
                     {"name", m.name},
                     {"hf_id", m.hf_id},
                     {"family", m.family},
                     {"num_layers", m.num_layers},
                     {"parameters_b", m.parameters_b},
                     {"weight_dtype", m.weight_dtype},
                     {"parameter_bytes", m.parameterBytes()},
                     {"layers", layers},
                     {"multimodal", m.isMultimodal()},
                     {"source", m.source}});
    } else {
      fmt::print("{:<16} {:>6} {:>8.1f} {:>8.1f}  {}\n", m.id, m.num_layers, m.parameters_b, m.parameterBytes() / 1e9,
                 join(parts, "; "));
    }
  }
  if (as_json) std::cout << out.dump(2) << "\n";
  return 0;
}

int listKernels(const Catalog& c, bool as_json) {
  json out = json::array();
  if (!as_json)
    fmt::print("{:<22} {:<22} {:<11} {:<20} {:<5} {}\n", "id", "algorithm", "paging", "phases", "split", "name");
  for (const auto& k : c.kernels()) {
    if (as_json) {
      out.push_back({{"id", k.id},
                     {"name", k.name},
                     {"algorithm", k.algorithm},
                     {"paging", k.paging},
                     {"phases", k.phases},
                     {"platforms", k.platforms},
                     {"split_kv", k.split_kv},
                     {"gqa_packing", k.gqa_packing},
                     {"kv_dtypes", k.kv_dtypes},
                     {"source", k.source}});
    } else {
      fmt::print("{:<22} {:<22} {:<11} {:<20} {:<5} {}\n", k.id, k.algorithm, k.paging, join(k.phases, ","),
                 k.split_kv ? "yes" : "no", k.name);
    }
  }
  if (as_json) std::cout << out.dump(2) << "\n";
  return 0;
}

int listBackends(const Catalog& c, const std::string& engine_filter, bool as_json) {
  json out = json::array();
  if (!as_json)
    fmt::print("{:<32} {:<4} {:<11} {:<28} {:<20} {}\n", "backend", "kind", "platforms", "cuda graph", "prefill kernel",
               "decode kernel");
  for (const auto& e : c.engines()) {
    if (!engine_filter.empty() && e.policy.engine != engine_filter) continue;
    for (const auto& b : e.backends) {
      const BackendCaps& caps = b.caps;
      if (as_json) {
        json variants = json::array();
        for (const auto& v : b.variants) {
          variants.push_back({{"name", v.name},
                              {"when", v.when.text()},
                              {"cuda_graph", v.caps.cuda_graph},
                              {"prefill_kernel", v.caps.prefill_kernel},
                              {"decode_kernel", v.caps.decode_kernel}});
        }
        out.push_back({{"id", b.id()},
                       {"engine", b.engine},
                       {"name", b.name},
                       {"kind", b.kind},
                       {"platforms", caps.platforms},
                       {"stages", caps.stages},
                       {"cuda_graph", caps.cuda_graph},
                       {"prefill_kernel", caps.prefill_kernel},
                       {"decode_kernel", caps.decode_kernel},
                       {"variants", variants},
                       {"source", b.source}});
      } else {
        fmt::print("{:<32} {:<4} {:<11} {:<28} {:<20} {}\n", b.id(), b.kind, join(caps.platforms, ","), caps.cuda_graph,
                   caps.prefill_kernel.empty() ? "-" : caps.prefill_kernel,
                   caps.decode_kernel.empty() ? "-" : caps.decode_kernel);
        for (const auto& v : b.variants) {
          fmt::print("  variant {:<22} {:<28} {:<20} {}   when {}\n", v.name, v.caps.cuda_graph,
                     v.caps.prefill_kernel.empty() ? "-" : v.caps.prefill_kernel,
                     v.caps.decode_kernel.empty() ? "-" : v.caps.decode_kernel, v.when.text());
        }
      }
    }
  }
  if (as_json) std::cout << out.dump(2) << "\n";
  return 0;
}

int listEngines(const Catalog& c, bool as_json) {
  json out = json::array();
  for (const auto& e : c.engines()) {
    const auto& p = e.policy;
    json options = json::array();
    for (const auto& o : p.options) {
      options.push_back(
          {{"name", o.name}, {"type", o.type}, {"default", toDisplay(o.default_value)}, {"help", o.help}});
    }
    if (as_json) {
      out.push_back({{"id", p.engine},
                     {"name", p.display_name},
                     {"version", p.version},
                     {"backends", backendNames(e).size()},
                     {"kv_dtypes", p.kv_dtypes},
                     {"options", options},
                     {"per_stage", p.per_stage},
                     {"source", p.source}});
    } else {
      fmt::print("{:<8} {} {} — {} backends; selects {}\n", p.engine, p.display_name, p.version, backendNames(e).size(),
                 p.per_stage ? "prefill and decode separately" : "one backend for both phases");
      fmt::print("         --kv-dtype: {}\n", join(p.kv_dtypes, ", "));
      for (const auto& o : p.options) {
        fmt::print("         --option {}=<{}> (default {}): {}\n", o.name, o.type, toDisplay(o.default_value), o.help);
      }
    }
  }
  if (as_json) std::cout << out.dump(2) << "\n";
  return 0;
}

int listVariables(bool as_json) {
  json out = json::array();
  for (const auto& [name, doc] : scenarioVariableDocs()) {
    if (as_json) {
      out.push_back({{"name", name}, {"meaning", doc}});
    } else {
      fmt::print("{:<28} {}\n", name, doc);
    }
  }
  if (as_json) std::cout << out.dump(2) << "\n";
  return 0;
}

}  // namespace

Runner addListCommand(CLI::App& app, const GlobalOptions& global) {
  auto what = std::make_shared<std::string>();
  auto engine = std::make_shared<std::string>();
  app.add_option("what", *what, "hardware, models, backends, kernels, engines or variables")
      ->required()
      ->check(CLI::IsMember({"hardware", "models", "backends", "kernels", "engines", "variables"}));
  app.add_option("--engine", *engine, "only this engine's backends");
  return [&global, what, engine]() {
    const Catalog c = global.loadCatalog();
    if (!engine->empty()) (void)c.engine(*engine);
    if (*what == "hardware") return listHardware(c, global.json);
    if (*what == "models") return listModels(c, global.json);
    if (*what == "kernels") return listKernels(c, global.json);
    if (*what == "engines") return listEngines(c, global.json);
    if (*what == "variables") return listVariables(global.json);
    return listBackends(c, *engine, global.json);
  };
}

}  // namespace attnsim::cli
