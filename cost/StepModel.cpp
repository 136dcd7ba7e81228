#include "cost/StepModel.hpp"

#include <algorithm>
#include <array>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/topological_sort.hpp>
#include <cmath>
#include <iterator>

#include "catalog/Catalog.hpp"
#include "hardware/HardwareProfile.hpp"
#include "model/ModelSpec.hpp"

namespace attnsim {

namespace {

std::size_t at(StepOp op) { return static_cast<std::size_t>(op); }

int categoryOf(StepOp op) {
  switch (op) {
    case StepOp::Attention:
      return 0;
    case StepOp::QkvProj:
    case StepOp::QbProj:
    case StepOp::MlaExtendProj:
    case StepOp::QAbsorb:
    case StepOp::OAbsorb:
    case StepOp::OProj:
    case StepOp::GateUp:
    case StepOp::Down:
    case StepOp::LmHead:
      return 1;
    case StepOp::Router:
    case StepOp::ExpertsGateUp:
    case StepOp::ExpertsDown:
    case StepOp::SharedGateUp:
    case StepOp::SharedDown:
      return 2;
    default:
      return 3;
  }
}

}  // namespace

const char* graphModeName(GraphMode m) {
  switch (m) {
    case GraphMode::Eager:
      return "eager";
    case GraphMode::Full:
      return "full";
    case GraphMode::Piecewise:
      return "piecewise";
  }
  return "eager";
}

const char* stepOpName(StepOp op) {
  static constexpr auto names = std::to_array<const char*>(
      {"input_norm",   "qkv_proj",       "q_b_proj",   "rope",        "kv_write",        "mla_extend_proj",
       "q_absorb",     "attention",      "o_absorb",   "o_proj",      "post_norm",       "gate_up_proj",
       "act",          "down_proj",      "moe_router", "moe_topk",    "experts_gate_up", "experts_act",
       "experts_down", "shared_gate_up", "shared_act", "shared_down", "moe_combine",     "final_norm",
       "lm_head",      "sampling"});
  static_assert(names.size() == static_cast<std::size_t>(StepOp::Count));
  return names.at(at(op));
}

namespace {

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, StepNode>;
using Vertex = Graph::vertex_descriptor;

Vertex addNode(Graph& g, StepNode node, std::initializer_list<Vertex> preds) {
  const Vertex v = boost::add_vertex(node, g);
  for (const Vertex p : preds) boost::add_edge(p, v, g);
  return v;
}

// From the layer's input norm to its post-attention norm, which it returns. Layer 0's input norm is
// already in the graph as `prev`.
Vertex addAttentionBlock(Graph& g, const ModelSpec& model, int layer, bool decode_like, Vertex prev) {
  const AttentionLayerSpec& spec = model.layerAt(layer);
  const bool mla = spec.isMla();
  const int attention_type = static_cast<int>(&spec - model.attention_layers.data());
  Vertex v = layer == 0 ? prev : addNode(g, {StepOp::InputNorm, -1, layer}, {prev});
  v = addNode(g, {StepOp::QkvProj, -1, layer}, {v});
  if (mla) v = addNode(g, {StepOp::QbProj, -1, layer}, {v});
  v = addNode(g, {StepOp::Rope, -1, layer}, {v});
  v = addNode(g, {StepOp::KvWrite, -1, layer}, {v});
  if (mla) v = addNode(g, {decode_like ? StepOp::QAbsorb : StepOp::MlaExtendProj, -1, layer}, {v});
  v = addNode(g, {StepOp::Attention, attention_type, layer}, {v});
  if (mla && decode_like) v = addNode(g, {StepOp::OAbsorb, -1, layer}, {v});
  v = addNode(g, {StepOp::OProj, -1, layer}, {v});
  return addNode(g, {StepOp::PostNorm, -1, layer}, {v});
}

// Router, top-k and the routed experts, with the shared expert (when there is one) beside them;
// returns the combine.
Vertex addMoeBlock(Graph& g, const MoeSpec& moe, int layer, Vertex post) {
  Vertex r = addNode(g, {StepOp::Router, -1, layer}, {post});
  r = addNode(g, {StepOp::TopK, -1, layer}, {r});
  r = addNode(g, {StepOp::ExpertsGateUp, -1, layer}, {r});
  r = addNode(g, {StepOp::ExpertsAct, -1, layer}, {r});
  r = addNode(g, {StepOp::ExpertsDown, -1, layer}, {r});
  if (moe.shared_experts <= 0) return addNode(g, {StepOp::MoeCombine, -1, layer}, {r});
  // The shared expert does not depend on routing: a parallel branch of the DAG.
  Vertex s = addNode(g, {StepOp::SharedGateUp, -1, layer}, {post});
  s = addNode(g, {StepOp::SharedAct, -1, layer}, {s});
  s = addNode(g, {StepOp::SharedDown, -1, layer}, {s});
  return addNode(g, {StepOp::MoeCombine, -1, layer}, {r, s});
}

Vertex addMlpBlock(Graph& g, int layer, Vertex post) {
  Vertex v = addNode(g, {StepOp::GateUp, -1, layer}, {post});
  v = addNode(g, {StepOp::Act, -1, layer}, {v});
  return addNode(g, {StepOp::Down, -1, layer}, {v});
}

Graph buildStepGraph(const ModelSpec& model, bool decode_like) {
  Graph g;
  Vertex prev = addNode(g, {StepOp::InputNorm, -1, 0}, {});
  for (int layer = 0; layer < model.num_layers; ++layer) {
    const Vertex post = addAttentionBlock(g, model, layer, decode_like, prev);
    const bool moe = model.moe && layer >= model.moe->first_dense_layers;
    prev = moe ? addMoeBlock(g, *model.moe, layer, post) : addMlpBlock(g, layer, post);
  }
  Vertex v = addNode(g, {StepOp::FinalNorm, -1, -1}, {prev});
  v = addNode(g, {StepOp::LmHead, -1, -1}, {v});
  addNode(g, {StepOp::Sampling, -1, -1}, {v});
  return g;
}

}  // namespace

// Boost.Graph builds and orders the DAG; simulateStep walks it millions of times, so it is stored
// flat: nodes in topological order, predecessors as positions in that order (CSR).
StepGraph::StepGraph(const ModelSpec& model, bool decode_like) {
  const Graph g = buildStepGraph(model, decode_like);
  std::vector<Vertex> reversed;
  boost::topological_sort(g, std::back_inserter(reversed));
  std::vector<int> position(boost::num_vertices(g));
  const std::size_t n = reversed.size();
  for (std::size_t i = 0; i < n; ++i) position[reversed[n - 1 - i]] = static_cast<int>(i);
  nodes_.resize(n);
  pred_offset_.assign(n + 1, 0);
  std::vector<std::vector<int>> preds(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Vertex vtx = reversed[n - 1 - i];
    nodes_[i] = g[vtx];
    for (auto [e, end] = boost::in_edges(vtx, g); e != end; ++e) {
      preds[i].push_back(position[boost::source(*e, g)]);
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    pred_offset_[i + 1] = pred_offset_[i] + static_cast<int>(preds[i].size());
    pred_index_.insert(pred_index_.end(), preds[i].begin(), preds[i].end());
  }
  slots_ = kStepOpCount + model.attention_layers.size();
  schedule_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const StepNode& node = nodes_[i];
    ScheduledNode& s = schedule_[i];
    const bool attention = node.op == StepOp::Attention;
    s.slot = static_cast<std::uint16_t>(attention ? kStepOpCount + static_cast<std::size_t>(node.attention_type)
                                                  : at(node.op));
    s.category = static_cast<std::uint8_t>(categoryOf(node.op));
    const bool after_attention = i == 0 || nodes_[i - 1].op == StepOp::Attention;
    s.launch = attention ? NodeLaunch::Attention : after_attention ? NodeLaunch::OpensPiece : NodeLaunch::InPiece;
  }
}

double rooflineUs(const KernelModel& kernel, const DeviceModel& device, double flops, double bytes) {
  const double peak = kernel.tensor_math ? device.tensor_flops_per_us : device.vector_flops_per_us;
  return std::max(flops / (peak * kernel.compute_efficiency),
                  bytes / (device.bytes_per_us * kernel.memory_efficiency)) +
         kernel.fixed_us;
}

double kvWriteBytes(double tokens, double kv_token_elements, double act_bytes, double kv_elem_bytes) {
  return tokens * kv_token_elements * (act_bytes + kv_elem_bytes);
}

LinearKernels resolveLinearKernels(const Catalog& catalog, const HardwareProfile& hw, const ModelSpec& model,
                                   std::string_view engine) {
  LinearKernels k;
  k.gemm = resolveKernel(catalog.kernel("dense-gemm"), hw);
  k.grouped_gemm = resolveKernel(catalog.kernel("grouped-gemm"), hw);
  k.elementwise = resolveKernel(catalog.kernel("elementwise"), hw);
  k.kv_write = resolveKernel(catalog.kernel("kv-cache-write"), hw);
  k.engine = engine;
  k.device = resolveDevice(hw, model.dtype);
  k.device_weights = k.device;
  const bool fp8 = model.weight_dtype == "fp8" || model.weight_dtype == "fp8_block";
  if (fp8 && hw.peak.fp8_tflops) k.device_weights.tensor_flops_per_us = *hw.peak.fp8_tflops * 1e6;
  k.gemm_bf16 = hw.gemmSurface("bf16");
  const bool int4 = model.weight_dtype == "int4";  // no measured surface: the family's roofline, its own figures
  k.gemm_weights = fp8 ? hw.gemmSurface(model.weight_dtype) : int4 ? nullptr : k.gemm_bf16;
  const auto* proxy = catalog.kernel("grouped-gemm").moeRunnerOf(engine, model.weight_dtype, hw.architecture);
  if (model.moe) k.moe = hw.moeFit(proxy ? std::string_view(proxy->measured_as) : engine, model.weight_dtype);
  if (proxy && k.moe && k.moe->engine == proxy->measured_as) k.moe_proxy = proxy;
  // Measured surfaces stand for the family's figures: their source, provenance and the wider band.
  bool first = true;
  for (const GemmSurface* s : {k.gemm_weights, int4 ? nullptr : k.gemm_bf16}) {
    if (!s) continue;
    const UncertaintyBand band = bandOf(*s);
    if (first) {  // the checkpoint's GEMMs name their surface; the band is the wider of the two
      k.gemm.efficiency_source = &s->source;
      k.gemm.provenance = Provenance::Measured;
      k.gemm.band = band.band;
      k.gemm.band_basis = band.basis;
    } else if (band.band > k.gemm.band) {
      k.gemm.band = band.band;
      k.gemm.band_basis = band.basis;
    }
    first = false;
  }
  return k;
}

namespace {

using OpTimes = std::array<double, kStepOpCount>;

struct Roofline {
  const KernelModel& kernel;
  const DeviceModel& device;
  [[nodiscard]] double operator()(double flops, double bytes) const { return rooflineUs(kernel, device, flops, bytes); }
};

// A dense GEMM: over the device's measured surface for its dtype as the engine runs it, else the roofline.
struct DenseGemm {
  const GemmSurface* surface;
  Roofline roofline;
  double act;
  std::string_view engine;  // GemmSurface::kernelUs: SGLang's DeepGEMM on Hopper; none: the surface alone
  [[nodiscard]] double operator()(double m, double n, double kdim, double weight_bytes) const {
    if (surface) return engine.empty() ? surface->surfaceUs(m, n, kdim) : surface->kernelUs(engine, m, n, kdim);
    return roofline(2.0 * m * n * kdim, m * kdim * act + n * kdim * weight_bytes + m * n * act);
  }
};

// What every non-attention op's cost reads: the batch, the element widths per rank and the kernels'
// rooflines. FP8 weights run their GEMMs at the FP8 peak.
struct LinearOps {
  double ranks, act, wb, wb_experts, tokens, routed_distinct, requests, kv_tokens, hidden, hq, hkv;
  Roofline gemm_bf, grouped, elementwise, kv_write;
  DenseGemm dense_low, dense_bf;
  const LinearKernels* kernels;

  [[nodiscard]] double kvWrite(double new_tokens, double loop_elements, double bytes) const {
    return kvWriteUs(kernels->kv_write, kernels->device, kernels->engine, new_tokens, loop_elements, bytes);
  }
  // A projection against weights of `weight_bytes` per element (below 2: the checkpoint's FP8).
  [[nodiscard]] double linear(double m, double n, double kdim, double weight_bytes) const {
    return weight_bytes < 2.0 ? dense_low(m, n, kdim, weight_bytes) : dense_bf(m, n, kdim, weight_bytes);
  }
};

LinearOps linearOps(const ModelSpec& model, const LinearKernels& k, const Workload& w, int tp) {
  const double ranks = std::max(1, tp);
  double kv_tokens = 0;
  for (const auto& g : w.groups) kv_tokens += static_cast<double>(g.count * g.context);
  const AttentionLayerSpec& attn = model.primaryLayer();
  return {
      .ranks = ranks,
      .act = bytesOf(model.dtype),
      .wb = weightBytesPerElement(model.weight_dtype, false),
      .wb_experts = weightBytesPerElement(model.weight_dtype, true),
      .tokens = static_cast<double>(w.tokens()),
      // Padded slots hold one dummy token (the runners' zero-filled input buffers): however
      // many, they route like a single token.
      .routed_distinct = static_cast<double>(w.tokens() - w.padding * w.groups.back().q_len) + (w.padding > 0 ? 1 : 0),
      .requests = static_cast<double>(w.requests()),
      .kv_tokens = kv_tokens,
      .hidden = static_cast<double>(model.hidden_size),
      .hq = std::max(1.0, attn.num_heads / ranks),
      .hkv = attn.isMla() ? 1.0 : std::max(1.0, attn.num_kv_heads / ranks),
      .gemm_bf = {k.gemm, k.device},
      .grouped = {k.grouped_gemm, k.device_weights},
      .elementwise = {k.elementwise, k.device},
      .kv_write = {k.kv_write, k.device},
      .dense_low = {k.gemm_weights, {k.gemm, k.device_weights}, bytesOf(model.dtype), k.engine},
      .dense_bf = {k.gemm_bf16, {k.gemm, k.device}, bytesOf(model.dtype), k.engine},
      .kernels = &k};
}

void costMlaProjections(const LinearOps& c, const MlaGeometry& m, double kv_elem_bytes, const MlaExtendRows& rows,
                        StepCosts& costs) {
  auto& op = costs.op_us;
  const double latent = m.kv_lora_rank + m.qk_rope_head_dim;
  const double q_in = m.q_lora_rank > 0 ? m.q_lora_rank : 0;
  const double tokens = c.tokens, hq = c.hq, act = c.act;
  op[at(StepOp::QkvProj)] = c.linear(tokens, q_in + latent, c.hidden, c.wb);
  op[at(StepOp::QbProj)] =
      c.linear(tokens, hq * (m.qk_nope_head_dim + m.qk_rope_head_dim), q_in > 0 ? q_in : c.hidden, c.wb);
  op[at(StepOp::Rope)] = c.elementwise(0, 2 * tokens * (hq + 1) * m.qk_rope_head_dim * act);
  op[at(StepOp::KvWrite)] = c.kvWrite(tokens, latent, kvWriteBytes(tokens, latent, act, kv_elem_bytes));
  // Absorbed decode: queries into the latent space, and the latent output back to value heads.
  const auto q_absorb = [&](double n) {
    return c.gemm_bf(
        2 * n * hq * m.qk_nope_head_dim * m.kv_lora_rank,
        hq * m.qk_nope_head_dim * m.kv_lora_rank * 2.0 + n * hq * (m.qk_nope_head_dim + m.kv_lora_rank) * act);
  };
  const auto o_absorb = [&](double n) {
    return c.gemm_bf(2 * n * hq * m.kv_lora_rank * m.v_head_dim,
                     hq * m.kv_lora_rank * m.v_head_dim * 2.0 + n * hq * (m.kv_lora_rank + m.v_head_dim) * act);
  };
  op[at(StepOp::QAbsorb)] = q_absorb(tokens);
  op[at(StepOp::OAbsorb)] = o_absorb(tokens);
  // An extend's projections: the MHA form's rows up-project every cached latent to per-head K (nope)
  // and V; the absorbed form's rows take the two absorptions.
  const double up = rows.up_projected < 0 ? c.kv_tokens : rows.up_projected;
  const double absorbed = rows.absorbed_tokens;
  op[at(StepOp::MlaExtendProj)] =
      (up > 0 ? c.linear(up, hq * (m.qk_nope_head_dim + m.v_head_dim), m.kv_lora_rank, c.wb) : 0.0) +
      (absorbed > 0 ? q_absorb(absorbed) + o_absorb(absorbed) : 0.0);
  costs.op_launches[at(StepOp::MlaExtendProj)] = std::max(1, (up > 0 ? 1 : 0) + (absorbed > 0 ? 2 : 0));
  op[at(StepOp::OProj)] = c.linear(tokens, c.hidden, hq * m.v_head_dim, c.wb);
}

void costMhaProjections(const LinearOps& c, const AttentionLayerSpec& attn, double kv_elem_bytes, OpTimes& op) {
  const double tokens = c.tokens, hq = c.hq, hkv = c.hkv, act = c.act;
  op[at(StepOp::QkvProj)] = c.linear(tokens, (hq + 2 * hkv) * attn.head_dim, c.hidden, c.wb);
  op[at(StepOp::Rope)] = c.elementwise(0, 2 * tokens * (hq + hkv) * attn.head_dim * act);
  op[at(StepOp::KvWrite)] =
      c.kvWrite(tokens, hkv * std::max(attn.head_dim, attn.head_dim_v),
                kvWriteBytes(tokens, hkv * (attn.head_dim + attn.head_dim_v), act, kv_elem_bytes));
  op[at(StepOp::OProj)] = c.linear(tokens, c.hidden, hq * attn.head_dim_v, c.wb);
}

void costMoe(const LinearOps& c, const MoeSpec& moe, OpTimes& op) {
  const double tokens = c.tokens, hidden = c.hidden, act = c.act;
  const double experts = moe.num_experts;
  const double e_inter = moe.expert_intermediate_size / c.ranks;
  op[at(StepOp::Router)] = c.dense_bf(tokens, experts, hidden, 2.0);
  RoutedExpertTimes t =
      routedExpertsDefault(*c.kernels, {tokens, c.routed_distinct, hidden, e_inter, experts,
                                        static_cast<double>(moe.experts_per_token), act, c.wb_experts});
  if (const MoeFit* fit = c.kernels->moe) {
    // The measured call (top-k through combine) shared over its ops in the roofline's proportions.
    // Padded slots route like one token (routed_distinct): the fit sees the distinct tokens' assignments.
    const double distinct = c.routed_distinct;
    const double touched = experts * (1.0 - std::pow(1.0 - moe.experts_per_token / experts, distinct));
    const double scale =
        fit->us({distinct, hidden, e_inter, experts, distinct * moe.experts_per_token, touched}) / t.sum();
    t = {t.topk * scale, t.gate_up * scale, t.act * scale, t.down * scale, t.combine * scale};
  }
  op[at(StepOp::TopK)] = t.topk;
  op[at(StepOp::ExpertsGateUp)] = t.gate_up;
  op[at(StepOp::ExpertsAct)] = t.act;
  op[at(StepOp::ExpertsDown)] = t.down;
  op[at(StepOp::MoeCombine)] = t.combine;
  const double shared_inter = e_inter * moe.shared_experts;
  op[at(StepOp::SharedGateUp)] = c.linear(tokens, 2 * shared_inter, hidden, c.wb);
  op[at(StepOp::SharedAct)] = c.elementwise(0, 3 * tokens * shared_inter * act);
  op[at(StepOp::SharedDown)] = c.linear(tokens, hidden, shared_inter, c.wb);
}

}  // namespace

void costLinearOps(const ModelSpec& model, const LinearKernels& k, const Workload& w, int tp, double kv_elem_bytes,
                   StepCosts& costs, const MlaExtendRows& mla_rows) {
  const LinearOps c = linearOps(model, k, w, tp);
  auto& op = costs.op_us;
  costs.op_launches.fill(1);
  const double tokens = c.tokens, requests = c.requests, hidden = c.hidden, act = c.act, ranks = c.ranks;
  op[at(StepOp::InputNorm)] = c.elementwise(0, 3 * tokens * hidden * act);
  op[at(StepOp::PostNorm)] = op[at(StepOp::InputNorm)];
  op[at(StepOp::FinalNorm)] = c.elementwise(0, 2 * requests * hidden * act);
  const AttentionLayerSpec& attn = model.primaryLayer();
  if (attn.isMla()) {
    costMlaProjections(c, *attn.mla, kv_elem_bytes, mla_rows, costs);
  } else {
    costMhaProjections(c, attn, kv_elem_bytes, op);
    const KernelFamily::QueryQuant* quant = decodeLike(w.phase) ? k.decode_query_quant : k.prefill_query_quant;
    if (quant != nullptr) {
      // The query's FP8 quantization runs between the KV write and attention: its kernels join that node.
      op[at(StepOp::KvWrite)] += queryQuantUs(*quant, k.elementwise, k.device, tokens * c.hq * attn.head_dim);
      costs.op_launches[at(StepOp::KvWrite)] += quant->launches;
    }
  }
  const double inter = model.intermediate_size / ranks;
  op[at(StepOp::GateUp)] = c.linear(tokens, 2 * inter, hidden, c.wb);
  op[at(StepOp::Act)] = c.elementwise(0, 3 * tokens * inter * act);
  op[at(StepOp::Down)] = c.linear(tokens, hidden, inter, c.wb);
  if (model.moe) costMoe(c, *model.moe, op);
  op[at(StepOp::LmHead)] = c.linear(requests, model.vocab_size / ranks, hidden, 2.0);
  op[at(StepOp::Sampling)] = c.elementwise(0, 2 * requests * (model.vocab_size / ranks) * 4.0);
}

}  // namespace attnsim
