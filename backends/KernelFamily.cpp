#include "backends/KernelFamily.hpp"

#include <algorithm>

#include "hardware/HardwareProfile.hpp"

namespace attnsim {

const std::vector<std::string> kKernelAlgorithms{
    "tiled_online_softmax",  // FlashAttention-style prefill/extend
    "paged_decode",          // one query row per request, KV read through a page table
    "mla_absorbed",          // MLA with the up-projections absorbed: 576-wide keys, 512-wide values
    "mla_sparse",            // MLA over a top-k selected index set
    "unfused",               // QK^T, softmax, PV as separate kernels (reference/fallback paths)
    "gemm",                  // step model: dense linear layers
    "grouped_gemm",          // step model: MoE experts
    "elementwise",           // step model: norms, RoPE, activations, KV write, sampling
};

namespace {
const std::vector<std::string> kPhases{"prefill", "decode"};
const std::vector<std::string> kPaging{"native", "emulated", "contiguous"};
const std::vector<std::string> kKvFormats{"fp32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2", "fp4_e2m1", "int8"};
const std::vector<std::string> kArchitectures{"ampere", "ada",   "hopper",  "blackwell", "cdna2",
                                              "cdna3",  "cdna4", "davinci", "xe-hpc",    "sapphire-rapids"};

}  // namespace

int architectureIndex(std::string_view architecture) {
  const auto at = std::find(kArchitectures.begin(), kArchitectures.end(), architecture);
  return at == kArchitectures.end() ? -1 : static_cast<int>(at - kArchitectures.begin());
}

namespace {

SplitPolicy parseSplitPolicy(const YamlReader& r, std::string& engine) {
  SplitPolicy p;
  const std::string kind = r.getOneOf(
      "kind", {"search", "fixed", "segments", "sglang", "occupancy", "partition", "per_sm", "graph", "multi_block"});
  p.rule = kind == "fixed"         ? SplitRule::Fixed
           : kind == "segments"    ? SplitRule::Segments
           : kind == "sglang"      ? SplitRule::Sglang
           : kind == "occupancy"   ? SplitRule::Occupancy
           : kind == "partition"   ? SplitRule::Partition
           : kind == "per_sm"      ? SplitRule::PerSm
           : kind == "graph"       ? SplitRule::Graph
           : kind == "multi_block" ? SplitRule::MultiBlock
                                   : SplitRule::Search;
  if (p.rule == SplitRule::MultiBlock) {
    p.tokens = static_cast<int>(r.getInt("tokens", 1, 1 << 20));
  } else if (p.rule == SplitRule::Partition) {
    p.tokens = static_cast<int>(r.getInt("tokens", 1, 1 << 20));
    if (r.has("wide_tokens")) {
      p.wide_tokens = static_cast<int>(r.getInt("wide_tokens", 1, 1 << 20));
      p.wide_max_context = static_cast<int>(r.getInt("wide_max_context", 1, 1 << 30));
      p.wide_max_head_dim = static_cast<int>(r.getInt("wide_max_head_dim", 1, 4096));
    }
  } else if (p.rule != SplitRule::Search && p.rule != SplitRule::Occupancy)
    p.splits = static_cast<int>(r.getInt("splits", 1, 1024));
  if (p.rule == SplitRule::Segments) p.grid_2d = static_cast<int>(r.getInt("grid_2d", 1, 1 << 20));
  if (p.rule == SplitRule::Graph) {
    p.max_tokens = static_cast<int>(r.getInt("max_tokens", 1, 1 << 20));
    engine = r.findOneOf("engine", {"vllm", "sglang", "rtp-llm"}).value_or("");
  }
  r.finish();
  return p;
}

KernelEfficiency parseEfficiency(const YamlReader& r) {
  KernelEfficiency e;
  e.compute_efficiency = r.getNumber("compute_efficiency", 0.01, 1.0);
  e.memory_efficiency = r.getNumber("memory_efficiency", 0.01, 1.0);
  e.fixed_us = r.getNumber("fixed_us", 0, 10000);
  e.key_ns = r.findNumber("key_ns", 0, 1000).value_or(0);
  e.host_plan_us = r.findNumber("host_plan_us", 0, 1e6).value_or(0);
  e.source = r.get<std::string>("source");
  // Figures from a published table are marked so; anything else is attnsim's default.
  if (r.has("provenance")) {
    e.provenance = *parseProvenance(r.getOneOf("provenance", {"published", "default"}));
  }
  r.finish();
  return e;
}

// A `{value, source}` figure of the performance map, when the family gives it; returns whether it did.
bool readSourcedFigure(const YamlReader& r, const std::string& key, double lo, double hi, double& value,
                       std::string& source) {
  auto figure = r.findMap(key);
  if (!figure) return false;
  value = figure->getNumber("value", lo, hi);
  source = figure->get<std::string>("source");
  figure->finish();
  return true;
}

// `performance.token_cta`: a kernel of one CTA per token (vLLM's KV-cache write).
KernelFamily::TokenCtas parseTokenCtas(const YamlReader& t) {
  KernelFamily::TokenCtas out;
  out.latency_us = t.getNumber("latency_us", 0, 1000);
  out.max_threads = static_cast<int>(t.getInt("max_threads", 32, 4096));
  out.sm_threads = static_cast<int>(t.getInt("sm_threads", 32, 8192));
  out.sm_ctas = static_cast<int>(t.getInt("sm_ctas", 1, 256));
  out.engines = t.getListOf("engines", {"vllm", "sglang", "rtp-llm"});
  out.source = t.get<std::string>("source");
  t.finish();
  return out;
}

// The engines, dtypes and architectures an entry of weight_padding or moe_runner covers.
KernelFamily::MoeScope parseMoeScope(const YamlReader& p) {
  return {p.getListOf("engines", {"vllm", "sglang", "rtp-llm"}),
          p.getListOf("dtypes", {"bf16", "fp8", "fp8_block", "nvfp4", "mxfp4"}),
          p.getListOf("architectures", kArchitectures)};
}

// `performance.weight_padding`: [{engines, dtypes, architectures, multiple, source}].
std::vector<KernelFamily::WeightPadding> parseWeightPadding(const YamlReader& r) {
  std::vector<KernelFamily::WeightPadding> out;
  for (const auto& p : r.list("weight_padding")) {
    KernelFamily::WeightPadding w;
    w.scope = parseMoeScope(p);
    w.multiple = static_cast<int>(p.getInt("multiple", 1, 4096));
    w.source = p.get<std::string>("source");
    p.finish();
    out.push_back(std::move(w));
  }
  return out;
}

// `performance.moe_runner`: [{engines, dtypes, architectures, measured_as, source}].
std::vector<KernelFamily::MoeRunnerProxy> parseMoeRunner(const YamlReader& r) {
  std::vector<KernelFamily::MoeRunnerProxy> out;
  for (const auto& p : r.list("moe_runner")) {
    KernelFamily::MoeRunnerProxy m;
    m.scope = parseMoeScope(p);
    m.measured_as = p.getOneOf("measured_as", {"vllm", "sglang", "rtp-llm"});
    m.source = p.get<std::string>("source");
    p.finish();
    out.push_back(std::move(m));
  }
  return out;
}

// `performance.token_tiles`: [{engines, dtypes, architectures, tiles, source}].
std::vector<KernelFamily::TokenTiles> parseTokenTiles(const YamlReader& r) {
  std::vector<KernelFamily::TokenTiles> out;
  for (const auto& p : r.list("token_tiles")) {
    KernelFamily::TokenTiles t;
    t.scope = parseMoeScope(p);
    for (double v : p.getNumbers("tiles", 1, 4096)) t.tiles.push_back(static_cast<int>(v));
    if (t.tiles.empty() || !std::is_sorted(t.tiles.begin(), t.tiles.end())) {
      p.fail("tiles", "a non-empty ascending list of tile sizes (tokens)");
    }
    t.source = p.get<std::string>("source");
    p.finish();
    out.push_back(std::move(t));
  }
  return out;
}

// `performance.query_quant`: the query's FP8 quantization an engine runs before this kernel.
KernelFamily::QueryQuant parseQueryQuant(const YamlReader& q) {
  KernelFamily::QueryQuant out;
  out.launches = static_cast<int>(q.getInt("launches", 1, 16));
  out.bytes_per_element = q.getNumber("bytes_per_element", 0, 64);
  out.engines = q.getListOf("engines", {"vllm", "sglang", "rtp-llm"});
  out.measured_as = q.get<std::vector<std::string>>("measured_as", {});
  out.source = q.get<std::string>("source");
  q.finish();
  return out;
}

// `performance.group1_decode`: the kernel a decode of one query head per KV head runs.
KernelFamily::Group1Decode parseGroup1Decode(const YamlReader& g) {
  KernelFamily::Group1Decode out;
  if (g.has("architecture")) out.architecture = architectureIndex(g.getOneOf("architecture", kArchitectures));
  out.source = g.get<std::string>("source");
  for (const auto& rule : g.list("rules")) {
    Group1DecodeRule r;
    r.max_head_dim = static_cast<int>(rule.getInt("max_head_dim", 1, 4096));
    if (rule.has("kv")) r.kv_bits = rule.getOneOf("kv", {"bf16", "fp8"}) == "fp8" ? 8 : 16;
    r.factor = rule.getNumber("factor", 0.1, 10);
    r.fixed_us = rule.findNumber("fixed_us", 0, 1000).value_or(0);
    rule.finish();
    if (!out.rules.empty() && r.max_head_dim < out.rules.back().max_head_dim)
      g.fail("rules", "max_head_dim must ascend: the first rule that covers a call applies");
    out.rules.push_back(r);
  }
  if (out.rules.empty() || out.rules.size() > 6) g.fail("rules", "1 to 6 rules");
  g.finish();
  return out;
}

void parsePerformance(const YamlReader& r, KernelFamily& k) {
  k.math = r.getOneOf("math", {"tensor", "vector"});
  if (r.has("working_precision")) k.working_precision = r.getOneOf("working_precision", {"native", "fp32"});
  k.ctas_per_sm = static_cast<int>(r.getInt("ctas_per_sm", 1, 64));
  k.max_splits = static_cast<int>(r.getInt("max_splits", 1, 1024));
  k.split_spans_pool = r.get<bool>("split_spans_pool", false);
  k.row_tiles_reread_keys = r.get<bool>("row_tiles_reread_keys", false);
  k.splits_mixed_decode_rows = r.get<bool>("splits_mixed_decode_rows", false);
  // Families with no measurement or published table keep attnsim's Little's-law estimate: a CTA
  // keeping two K/V tiles in flight (2 × 128 keys × 256 B = 64 KiB at d 128) over ~600 ns of DRAM
  // latency streams ~100 GB/s, about 4× its even share of an H100 (3350 / 132 ≈ 25 GB/s).
  k.slot_bandwidth_share = 4;
  k.slot_bandwidth_share_source =
      "attnsim default: Little's law, two K/V tiles in flight per CTA over ~600 ns of DRAM latency";
  readSourcedFigure(r, "slot_bandwidth_share", 1, 64, k.slot_bandwidth_share, k.slot_bandwidth_share_source);
  readSourcedFigure(r, "quantized_kv_key_factor", 1, 16, k.quantized_kv_key_factor, k.quantized_kv_key_factor_source);
  if (auto decode = r.findMap("decode_occupancy")) {
    k.decode_ctas_per_sm = static_cast<int>(decode->getInt("ctas_per_sm", 1, 64));
    k.decode_slot_bandwidth_share = decode->getNumber("slot_bandwidth_share", 1, 64);
    k.decode_occupancy_source = decode->get<std::string>("source");
    decode->finish();
  }
  if (auto schedule = r.findMap("wave_schedule")) {
    k.rolling_waves = schedule->getOneOf("kind", {"lockstep", "rolling"}) == "rolling";
    k.wave_schedule_source = schedule->get<std::string>("source");
    schedule->finish();
  }
  if (readSourcedFigure(r, "paged_key_ns", 0, 1000, k.paged_key_ns, k.paged_key_ns_source) &&
      k.paging != Paging::Emulated) {
    r.fail("paged_key_ns", "only a family with paging: emulated looks keys up");
  }
  readSourcedFigure(r, "unit_us", 0, 1000, k.unit_us, k.unit_us_source);
  readSourcedFigure(r, "prefill_unit_us", 0, 1000, k.prefill_unit_us, k.prefill_unit_us_source);
  readSourcedFigure(r, "merge_launch_us", 0, 1000, k.merge_launch_us, k.merge_launch_us_source);
  if (auto surface_batch = r.findMap("surface_batch")) {
    k.surface_batch_programs = surface_batch->getOneOf("unit", {"requests", "programs"}) == "programs";
    k.surface_batch_source = surface_batch->get<std::string>("source");
    surface_batch->finish();
  }
  if (auto t = r.findMap("token_cta")) k.token_cta = parseTokenCtas(*t);
  if (r.has("weight_padding")) k.weight_padding = parseWeightPadding(r);
  if (r.has("moe_runner")) k.moe_runner = parseMoeRunner(r);
  if (r.has("token_tiles")) k.token_tiles = parseTokenTiles(r);
  if (auto q = r.findMap("query_quant")) k.query_quant = parseQueryQuant(*q);
  if (auto g = r.findMap("group1_decode")) k.group1_decode = parseGroup1Decode(*g);
  if (auto rule = r.findMap("split_rule")) k.split_policy = parseSplitPolicy(*rule, k.graph_split_engine);
  // A split over the page pool is the per-SM count cut by the share of the pool one sequence fills.
  if (k.split_spans_pool && k.split_policy.rule != SplitRule::PerSm)
    r.fail("split_spans_pool", "needs split_rule {kind: per_sm}: the pool is split by the per-SM count");
  k.efficiency = parseEfficiency(r.map("default"));
  if (auto by_arch = r.findMap("by_architecture")) {
    for (const auto& arch : by_arch->keysOf()) {
      if (std::find(kArchitectures.begin(), kArchitectures.end(), arch) == kArchitectures.end()) {
        by_arch->fail(arch, "'" + arch + "' is not an architecture family");
      }
      k.efficiency_by_architecture[arch] = parseEfficiency(by_arch->map(arch));
    }
  }
  r.finish();
}

}  // namespace

const KernelEfficiency& KernelFamily::efficiencyFor(std::string_view architecture) const {
  const auto it = efficiency_by_architecture.find(architecture);
  return it == efficiency_by_architecture.end() ? efficiency : it->second;
}

const std::string& KernelFamily::mixedBatchFor(std::string_view engine) const {
  const auto it = mixed_batch_by_engine.find(engine);
  return it == mixed_batch_by_engine.end() ? mixed_batch : it->second;
}

namespace {

void parseMixedBatch(const YamlReader& r, KernelFamily& k) {
  const std::vector<std::string> modes{"one_launch", "by_phase"};
  k.mixed_batch = r.getOneOf("default", modes);
  if (auto engines = r.findMap("by_engine")) {
    for (const auto& engine : engines->keysOf()) k.mixed_batch_by_engine[engine] = engines->getOneOf(engine, modes);
    engines->finish();
  }
  k.mixed_batch_source = r.get<std::string>("source");
  r.finish();
}

}  // namespace

KernelFamily parseKernelFamily(const YamlReader& r) {
  KernelFamily k;
  k.id = r.get<std::string>("id");
  k.name = r.get<std::string>("name");
  k.description = r.get<std::string>("description");
  k.source = r.get<std::string>("source");
  k.platforms = r.getListOf("platforms", platformNames());
  k.phases = r.getListOf("phases", kPhases);
  k.algorithm = r.getOneOf("algorithm", kKernelAlgorithms);
  k.paging = parsePaging(r.getOneOf("paging", kPaging));
  k.tile_q = static_cast<int>(r.findInt("tile_q", 1, 1024).value_or(0));
  k.tile_kv = static_cast<int>(r.findInt("tile_kv", 1, 4096).value_or(0));
  int previous = 0;
  for (const auto& rule : r.list("tiles_by_head_dim")) {
    HeadDimTiles t;
    t.max_head_dim = static_cast<int>(rule.getInt("max_head_dim", previous + 1, 4096));
    t.tile_q = static_cast<int>(rule.getInt("tile_q", 1, 1024));
    t.tile_kv = static_cast<int>(rule.getInt("tile_kv", 1, 4096));
    t.ctas_per_sm = static_cast<int>(rule.findInt("ctas_per_sm", 1, 64).value_or(0));
    if (rule.has("architecture")) {
      t.architecture = architectureIndex(rule.getOneOf("architecture", kArchitectures));
    }
    if (rule.has("phase")) {
      t.phase = rule.getOneOf("phase", {"prefill", "decode"}) == "prefill" ? TilePhase::Prefill : TilePhase::Decode;
    }
    rule.finish();
    previous = t.max_head_dim;  // rules ascend, so the first that covers a head dim is the tightest
    k.tiles_by_head_dim.push_back(t);
  }
  if (k.tiles_by_head_dim.size() > 4) r.fail("tiles_by_head_dim", "at most 4 rules");
  k.split_kv = r.get<bool>("split_kv");
  k.gqa_packing = r.get<bool>("gqa_packing");
  k.prefill_gqa_packing = r.get<bool>("prefill_gqa_packing", false);
  k.query_blocks_span_requests = r.get<bool>("query_blocks_span_requests", false);
  if (auto mixed = r.findMap("mixed_batch")) parseMixedBatch(*mixed, k);
  k.kv_dtypes = r.getListOf("kv_dtypes", kKvFormats);
  k.kv_dtypes_at = r.locateValue("kv_dtypes");
  parsePerformance(r.map("performance"), k);
  k.measured_as = r.get<std::vector<std::string>>("measured_as", {});
  k.measured_proxy = r.get<std::string>("measured_proxy", "");
  r.finish();
  return k;
}

namespace {
bool kernelFamilyNames(const std::vector<std::string>& list, std::string_view v) {
  return std::find(list.begin(), list.end(), v) != list.end();
}
}  // namespace

bool KernelFamily::MoeScope::covers(std::string_view engine, std::string_view dtype,
                                    std::string_view architecture) const {
  return kernelFamilyNames(engines, engine) && kernelFamilyNames(dtypes, dtype) &&
         kernelFamilyNames(architectures, architecture);
}

int KernelFamily::weightPaddingOf(std::string_view engine, std::string_view dtype,
                                  std::string_view architecture) const {
  for (const auto& w : weight_padding) {
    if (w.scope.covers(engine, dtype, architecture)) return w.multiple;
  }
  return 1;
}

const KernelFamily::MoeRunnerProxy* KernelFamily::moeRunnerOf(std::string_view engine, std::string_view dtype,
                                                              std::string_view architecture) const {
  for (const auto& m : moe_runner) {
    if (m.scope.covers(engine, dtype, architecture)) return &m;
  }
  return nullptr;
}

std::vector<int> KernelFamily::tokenTilesOf(std::string_view engine, std::string_view dtype,
                                            std::string_view architecture) const {
  for (const auto& t : token_tiles) {
    if (t.scope.covers(engine, dtype, architecture)) return t.tiles;
  }
  return {};
}

}  // namespace attnsim
