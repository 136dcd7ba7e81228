#include "reports/CatalogJson.hpp"

#include <fmt/format.h>

#include "backends/RuleVariables.hpp"
#include "catalog/Catalog.hpp"
#include "core/Error.hpp"
#include "core/Strings.hpp"

namespace attnsim {

using nlohmann::json;

namespace {

json hardwareJson(const HardwareProfile& h) {
  return {{"id", h.id},
          {"name", h.name},
          {"vendor", h.vendor},
          {"platform", h.platform},
          {"architecture", h.architecture},
          {"compute_capability", h.compute_capability ? json(*h.compute_capability) : json()},
          {"gfx_target", h.gfx_target},
          {"compute_units", h.compute_units},
          {"bf16_tflops", h.peak.bf16_tflops.value_or(h.peak.fp16_tflops.value_or(0))},
          {"memory_gb", h.memory_gb},
          {"memory_bandwidth_gbps", h.memory_bandwidth_gbps},
          {"l2_bytes", h.l2_bytes},
          {"confidence", h.confidence},
          {"source", h.source}};
}

json modelJson(const ModelSpec& m) {
  json layers = json::array();
  for (const auto& [spec, n] : m.layerCounts()) {
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
  return {{"id", m.id},
          {"name", m.name},
          {"hf_id", m.hf_id},
          {"family", m.family},
          {"num_layers", m.num_layers},
          {"parameters_b", m.parameters_b},
          {"weight_dtype", m.weight_dtype},
          {"parameter_bytes", m.parameterBytes()},
          {"layers", layers},
          {"multimodal", m.isMultimodal()},
          {"source", m.source}};
}

json kernelJson(const KernelFamily& k) {
  return {{"id", k.id},
          {"name", k.name},
          {"algorithm", k.algorithm},
          {"paging", pagingName(k.paging)},
          {"phases", k.phases},
          {"platforms", k.platforms},
          {"split_kv", k.split_kv},
          {"gqa_packing", k.gqa_packing},
          {"kv_dtypes", k.kv_dtypes},
          {"source", k.source}};
}

json backendJson(const Backend& b) {
  json variants = json::array();
  for (const auto& v : b.variants) {
    variants.push_back({{"name", v.name},
                        {"when", v.when.text()},
                        {"cuda_graph", v.caps.cuda_graph},
                        {"prefill_kernel", v.caps.prefill_kernel},
                        {"decode_kernel", v.caps.decode_kernel}});
  }
  const BackendCaps& caps = b.caps;
  return {{"id", b.id()},
          {"engine", b.engine},
          {"name", b.name},
          {"kind", b.kind},
          {"platforms", caps.platforms},
          {"stages", caps.stages},
          {"cuda_graph", caps.cuda_graph},
          {"prefill_kernel", caps.prefill_kernel},
          {"decode_kernel", caps.decode_kernel},
          {"variants", variants},
          {"source", b.source}};
}

json engineJson(const Engine& e) {
  const auto& p = e.policy;
  json options = json::array();
  for (const auto& o : p.options) {
    options.push_back({{"name", o.name}, {"type", o.type}, {"default", toDisplay(o.default_value)}, {"help", o.help}});
  }
  return {{"id", p.engine},           {"name", p.display_name},
          {"version", p.version},     {"backends", backendNames(e).size()},
          {"kv_dtypes", p.kv_dtypes}, {"options", options},
          {"per_stage", p.per_stage}, {"source", p.source}};
}

}  // namespace

const std::vector<std::string>& catalogListKinds() {
  static const std::vector<std::string> kinds{"hardware", "models", "backends", "kernels", "engines", "variables"};
  return kinds;
}

json catalogListJson(const Catalog& c, const std::string& what, const std::string& engine) {
  if (!engine.empty()) (void)c.engine(engine);
  json out = json::array();
  if (what == "hardware") {
    for (const auto& h : c.hardwareProfiles()) out.push_back(hardwareJson(h));
  } else if (what == "models") {
    for (const auto& m : c.models()) out.push_back(modelJson(m));
  } else if (what == "kernels") {
    for (const auto& k : c.kernels()) out.push_back(kernelJson(k));
  } else if (what == "engines") {
    for (const auto& e : c.engines()) out.push_back(engineJson(e));
  } else if (what == "variables") {
    for (const auto& [name, doc] : scenarioVariableDocs()) out.push_back({{"name", name}, {"meaning", doc}});
  } else if (what == "backends") {
    for (const auto& e : c.engines()) {
      if (!engine.empty() && e.policy.engine != engine) continue;
      for (const auto& b : e.backends) out.push_back(backendJson(b));
    }
  } else {
    throw UsageError(fmt::format("list {}: expected one of {}{}", what, join(catalogListKinds(), ", "),
                                 didYouMean(what, catalogListKinds())));
  }
  return out;
}

}  // namespace attnsim
