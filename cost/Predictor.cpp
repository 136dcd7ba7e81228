#include "cost/Predictor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "backends/KernelFamily.hpp"
#include "catalog/Catalog.hpp"
#include "core/Error.hpp"
#include "core/Value.hpp"
#include "cost/Collective.hpp"
#include "hardware/HardwareProfile.hpp"
#include "model/ModelSpec.hpp"

namespace attnsim {

namespace {

// The attention kernel's provenance and band, and the eager step's bands (the graph step's too,
// until a graph timeline replaces them).
PredictionUncertainty eagerUncertainty(const KernelModel& attention, const std::array<double, 4>& bands,
                                       const StepTimeline& eager) {
  PredictionUncertainty u;
  u.provenance = attention.provenance;
  u.basis = attention.band_basis;
  u.attention_band = attention.band;
  const StepBand b = stepBand(eager.by_category, eager.step_us, bands);
  u.eager_band = u.graph_band = b.band;
  u.eager_tie_band = u.graph_tie_band = b.tie_band;
  u.non_attention_band = b.non_attention_band;
  return u;
}

}  // namespace

// A step's band: each kind of kernel time with its kernel's band, and the rest of the step (host
// issue, launch gaps, collectives) with the non-attention default, added as absolute errors (errors
// taken to move together: the conservative sum) and divided by the step time.
StepBand stepBand(const std::array<double, 4>& by_category, double step_us, const std::array<double, 4>& bands) {
  double kernels = 0, spread = 0;
  for (std::size_t i = 0; i < by_category.size(); ++i) {
    kernels += by_category[i];
    spread += by_category[i] * bands[i];
  }
  const double rest = std::max(0.0, step_us - kernels);
  const double total = kernels + rest;
  const double attention = by_category[0] * bands[0];
  const double other = total - by_category[0];
  StepBand b;
  b.non_attention_band =
      other > 0 ? (spread - attention + rest * kNonAttentionDefaultBand) / other : kNonAttentionDefaultBand;
  b.band = total > 0 ? (spread + rest * kNonAttentionDefaultBand) / total : bands[0];
  b.tie_band = total > 0 ? attention / total : bands[0];
  return b;
}

const KernelModel& Predictor::attentionModel(Phase phase) const {
  if (phase == Phase::Decode || phase == Phase::Verify) return decode_model_;
  return phase == Phase::Extend ? extend_model_ : prefill_model_;
}

std::array<double, 4> Predictor::kernelBands(Phase phase) const {
  return {attentionModel(phase).band, linear_.gemm.band, linear_.grouped_gemm.band, linear_.elementwise.band};
}

namespace {

// A graph split count is the engine wrapper's (vLLM's FLASH_ATTN); another engine's calls of the same
// kernel run the kernel's own heuristic (SGLang's FlashAttentionBackend passes num_splits 0).
void keepOwnSplitHeuristics(const PredictionInput& in, KernelModel& prefill, KernelModel& decode, KernelModel& extend) {
  const auto keep = [&in](const KernelFamily& family, KernelModel& m) {
    if (!family.graph_split_engine.empty() && family.graph_split_engine != in.engine) m.split_policy.max_tokens = 0;
  };
  keep(*in.prefill_kernel, prefill);
  keep(*in.decode_kernel, decode);
  keep(*in.prefill_kernel, extend);
}

// An engine that quantizes the query to FP8 itself before the attention kernel, with an FP8 E4M3 cache
// (KernelFamily::query_quant): the step's linear ops cost it beside the KV write.
void attachQueryQuantization(const PredictionInput& in, LinearKernels& linear) {
  if (in.kv_dtype != KvCacheDtype::FP8_E4M3) return;
  if (in.prefill_kernel->quantizesQueryIn(in.engine)) linear.prefill_query_quant = &in.prefill_kernel->query_quant;
  if (in.decode_kernel->quantizesQueryIn(in.engine)) linear.decode_query_quant = &in.decode_kernel->query_quant;
}

}  // namespace

Predictor::Predictor(const Catalog& catalog, PredictionInput input)
    : input_(std::move(input)), prefill_graph_(*input_.model, false), decode_graph_(*input_.model, true) {
  const HardwareProfile& hw = *input_.hardware;
  const ModelSpec& model = *input_.model;
  if (!input_.model_dtype) input_.model_dtype = model.dtype;
  if (!input_.prefill_kernel) input_.prefill_kernel = input_.decode_kernel;
  if (!input_.decode_kernel) input_.decode_kernel = input_.prefill_kernel;
  if (input_.attention_dp < 1 || input_.tp % input_.attention_dp != 0) {
    throw std::logic_error("PredictionInput: attention_dp must divide tp");  // the engine's rules refuse it first
  }
  // A tensor-parallel step all-reduces over the GPUs' link: without one its communication would cost
  // nothing, silently (issue 30), so the prediction is refused, naming the key to add.
  if (input_.tp > 1 && !hw.interconnect_link) {
    throw UsageError(fmt::format(
        "--tp {}: hardware '{}' has no interconnect_link, so its tensor-parallel all-reduces cannot be costed; add "
        "interconnect_link {{kind, bandwidth_gbps, latency_us, max_gpus, source}} to its profile (docs/ADDING.md) or "
        "use --tp 1",
        input_.tp, hw.id));
  }
  // Callers pass the kernels the selection chose; a prediction without either is our bug, not bad input.
  if (!input_.prefill_kernel) throw std::logic_error("PredictionInput needs a prefill or a decode kernel");
  device_ = resolveDevice(hw, *input_.model_dtype);
  prefill_model_ = resolveKernel(*input_.prefill_kernel, hw);
  decode_model_ = resolveKernel(*input_.decode_kernel, hw, Phase::Decode);
  extend_model_ = resolveKernel(*input_.prefill_kernel, hw, Phase::Extend);
  keepOwnSplitHeuristics(input_, prefill_model_, decode_model_, extend_model_);
  layer_types_ = model.layerCounts();
  for (const auto& [layer, count] : layer_types_) {
    prefill_shapes_.push_back(resolveShape(*layer, *input_.prefill_kernel, Phase::Prefill, input_.kv_dtype,
                                           *input_.model_dtype, attentionTp()));
    decode_shapes_.push_back(resolveShape(*layer, *input_.decode_kernel, Phase::Decode, input_.kv_dtype,
                                          *input_.model_dtype, attentionTp()));
    if (input_.absorbed_extend_kernel) {
      absorbed_shapes_.push_back(resolveShape(*layer, *input_.absorbed_extend_kernel, Phase::Extend, input_.kv_dtype,
                                              *input_.model_dtype, attentionTp(), true));
    }
  }
  if (input_.absorbed_extend_kernel)
    absorbed_extend_model_ = resolveKernel(*input_.absorbed_extend_kernel, hw, Phase::Extend);
  attachCorrectedGrids();
  linear_ = resolveLinearKernels(catalog, hw, model, input_.engine);
  attachQueryQuantization(input_, linear_);
  launch_ = {.kernel_launch_us = hw.overheads.kernel_launch_us,
             .graph_replay_base_us = hw.overheads.graph_replay_base_us,
             .graph_replay_per_node_us = hw.overheads.graph_replay_per_node_us,
             .eager_gap_us = hw.overheads.eager_gap_us};
  capture_ms_per_size_ = hw.overheads.graph_capture_ms_per_size;
  // Different prefill and decode kernels (MLA backends) cannot share a launch; one kernel family
  // runs a mixed batch as the engine drives it (kernels/*.yaml mixed_batch).
  const auto engine = input_.engine_env.find("engine");
  const std::string engine_name = engine == input_.engine_env.end() ? "" : toDisplay(engine->second);
  mixed_by_phase_ =
      input_.prefill_kernel != input_.decode_kernel || input_.prefill_kernel->mixedBatchFor(engine_name) == "by_phase";
  // Not calibrated yet: the catalog's figure for the architecture.
  prefill_host_plan_us_ = input_.prefill_kernel->efficiencyFor(hw.architecture).host_plan_us;
  decode_host_plan_us_ = input_.decode_kernel->efficiencyFor(hw.architecture).host_plan_us;
  if (input_.graphs) {
    capture_sizes_ = input_.graphs->captureSizes(input_.engine_env);
    prefill_capture_sizes_ = input_.graphs->prefillCaptureSizes(input_.engine_env);
  }
}

void Predictor::predictAttention(const Workload& workload, std::vector<LayerAttention>& out) const {
  const bool decode = decodeLike(workload.phase);
  const bool absorbed = extendAbsorbed(workload);
  const KernelModel& kernel = decode                            ? decode_model_
                              : absorbed                        ? absorbed_extend_model_
                              : workload.phase == Phase::Extend ? extend_model_
                                                                : prefill_model_;
  const auto& shapes = decode ? decode_shapes_ : absorbed ? absorbed_shapes_ : prefill_shapes_;
  const KernelFamily* family = decode     ? input_.decode_kernel
                               : absorbed ? input_.absorbed_extend_kernel
                                          : input_.prefill_kernel;
  out.resize(layer_types_.size());
  for (std::size_t i = 0; i < layer_types_.size(); ++i) {
    out[i].layer = layer_types_[i].first;
    out[i].layers = layer_types_[i].second;
    out[i].kernel = family;
    out[i].shape = shapes[i];
    // MLA under a non-absorbing prefill kernel keeps naive per-head K/V for prefill and the latent cache
    // for decode: the engines run such decode rows in their own call (vLLM MLACommonImpl), unless the
    // engine runs the whole batch in one form (SGLang's forward method is chosen once per batch).
    const bool other_geometry = prefill_shapes_[i].num_kv_heads != decode_shapes_[i].num_kv_heads ||
                                prefill_shapes_[i].d_qk != decode_shapes_[i].d_qk;
    const bool mixed = workload.phase == Phase::Extend && !workload.isUniform() && !wholeBatchOneForm() &&
                       (mixed_by_phase_ || other_geometry);
    // One launch over a mixed batch: its single-token rows run as in this kernel's decode-only call.
    const KernelModel* single_rows =
        workload.phase == Phase::Extend && family == input_.decode_kernel ? &decode_model_ : nullptr;
    out[i].cost = mixed ? mixedByPhase(i, workload)
                        : attnsim::predictAttention(shapes[i], layerModel(kernel, i), device_, workload.phase,
                                                    workload.groups, input_.page_size, single_rows);
  }
}

Predictor::GraphChoice Predictor::chooseGraph(const Workload& workload) const {
  GraphChoice c;
  const bool decode = decodeLike(workload.phase);
  c.size = decode ? workload.requests() : workload.tokens();
  c.padded_batch = c.size;
  if (!input_.hardware->overheads.graphs) return c;
  if (input_.graphs) {
    const auto& g = *input_.graphs;
    if (g.enabled_when && !g.enabled_when->test(input_.engine_env)) {
      c.why = GraphWhy::EngineOff;
      return c;
    }
    const auto& sizes = decode ? capture_sizes_ : prefill_capture_sizes_;
    c.why = sizes.empty() ? GraphWhy::NoSizes : GraphWhy::AboveLargest;
    const auto it = std::lower_bound(sizes.begin(), sizes.end(), c.size);
    if (it == sizes.end()) return c;
    c.padded_batch = *it;
  }
  const std::string& level = input_.cuda_graph_level;
  const bool uniform = workload.isUniform();
  const bool single_token = decode && uniform && workload.groups.front().q_len == 1;
  if (!decode) {
    c.mode = GraphMode::Piecewise;
    c.why = GraphWhy::Prefill;
  } else if (level == "always" || (level == "uniform_batch" && uniform) ||
             (level == "uniform_single_token_decode" && single_token)) {
    c.mode = GraphMode::Full;
    c.why = GraphWhy::Full;
  } else {
    c.mode = GraphMode::Piecewise;
    c.why = GraphWhy::Unsupported;
  }
  return c;
}

GraphDecision Predictor::decideGraph(const Workload& workload) const {
  const GraphChoice c = chooseGraph(workload);
  const bool decode = decodeLike(workload.phase);
  GraphDecision d;
  d.mode = c.mode;
  d.padded_batch = c.padded_batch;
  if (input_.graphs && c.why != GraphWhy::NoPlatformGraphs && c.why != GraphWhy::EngineOff) {
    const std::size_t all = capture_sizes_.size() + prefill_capture_sizes_.size();
    d.capture_sizes = all;
    d.capture_ms = static_cast<double>(all) * capture_ms_per_size_;
    d.capture_mib = static_cast<double>(all) * input_.graphs->capture_memory_mib_per_size;
  }
  const std::string& level = input_.cuda_graph_level;
  switch (c.why) {
    case GraphWhy::NoPlatformGraphs:
      d.why = fmt::format("the {} platform has no graph capture", input_.hardware->platform);
      break;
    case GraphWhy::EngineOff:
      d.why = "the engine runs without CUDA graphs in this configuration";
      break;
    case GraphWhy::NoSizes:
      d.why = decode ? "the engine captures no decode graphs here" : "the engine captures no prefill graphs";
      break;
    case GraphWhy::AboveLargest:
      d.why = fmt::format("{} {} is above the largest captured size {}", decode ? "batch" : "token count", c.size,
                          (decode ? capture_sizes_ : prefill_capture_sizes_).back());
      break;
    case GraphWhy::Prefill:
      d.why = "prefill and mixed batches replay piecewise graphs; attention runs eagerly between them";
      break;
    case GraphWhy::Full:
      d.why = fmt::format("full graph (backend support: {})", level);
      break;
    case GraphWhy::Unsupported:
      d.why = fmt::format("backend support '{}' does not cover this batch: attention runs eagerly between graph pieces",
                          level);
      break;
  }
  return d;
}

const StepGraph& Predictor::stepGraph(Phase phase) const { return decodeLike(phase) ? decode_graph_ : prefill_graph_; }

double Predictor::hostPlanUs(Phase phase) const {
  return decodeLike(phase) ? decode_host_plan_us_ : prefill_host_plan_us_;
}

int Predictor::attentionTp() const { return input_.tp / input_.attention_dp; }

Workload Predictor::replicaShare(const Workload& w) const {
  Workload share = w;
  share.replica.clear();
  if (!w.replica.empty()) {
    share.groups = w.replica;
  } else {
    for (auto& g : share.groups) g.count = (g.count + input_.attention_dp - 1) / input_.attention_dp;
  }
  share.padding = (w.padding + input_.attention_dp - 1) / input_.attention_dp;
  return share;
}

// What the MLP/MoE runs on with attention replicas: a decode gathers every replica padded to the
// largest (dp_attention.py DpPaddingMode MAX_LEN, the CUDA-graph default), a prefill or extend the
// replicas' tokens end to end (SUM_LEN, chosen for extend batches over several ranks).
Workload Predictor::gathered(const Workload& replica, const Workload& batch) const {
  if (!decodeLike(replica.phase)) return batch;
  Workload all = replica;
  for (auto& g : all.groups) g.count *= input_.attention_dp;
  all.padding *= input_.attention_dp;
  return all;
}

// The kernels before attention and its output projection run on one replica's share at tp / dp
// ranks; the MLP/MoE, the logits and sampling on the gathered tokens at tp.
void Predictor::costOps(const Workload& replica, const Workload& batch, StepCosts& costs) const {
  const ModelSpec& model = *input_.model;
  const double kv_bytes = kvElementBytes(input_.kv_dtype, *input_.model_dtype);
  const MlaExtendRows rows = mlaExtendRows(replica);
  if (input_.attention_dp == 1) {
    costLinearOps(model, linear_, replica, input_.tp, kv_bytes, costs, rows);
    return;
  }
  costLinearOps(model, linear_, replica, attentionTp(), kv_bytes, costs, rows);
  const auto attention_side = costs.op_us;
  costLinearOps(model, linear_, gathered(replica, batch), input_.tp, kv_bytes, costs, rows);
  for (const StepOp op : {StepOp::InputNorm, StepOp::QkvProj, StepOp::QbProj, StepOp::Rope, StepOp::KvWrite,
                          StepOp::MlaExtendProj, StepOp::QAbsorb, StepOp::OAbsorb, StepOp::OProj}) {
    const auto i = static_cast<std::size_t>(op);
    costs.op_us[i] = attention_side[i];
  }
}

double Predictor::commUs(const Workload& replica, const Workload& batch) const {
  const ModelSpec& model = *input_.model;
  const double act_bytes = bytesOf(*input_.model_dtype);
  const auto& link = input_.hardware->interconnect_link;
  if (input_.attention_dp == 1)
    return tpCommunicationUs(model, link, replica.tokens(), input_.tp, act_bytes, input_.engine);
  const bool max_len = decodeLike(replica.phase);
  return dpAttentionCommunicationUs(model, link, replica.tokens(), gathered(replica, batch).tokens(), max_len,
                                    input_.tp, input_.attention_dp, act_bytes, input_.engine);
}

void setAttentionCosts(StepCosts& costs, const std::vector<LayerAttention>& layers) {
  costs.attention_us.assign(layers.size(), 0);
  costs.attention_launches.assign(layers.size(), 1);
  costs.attention_gapped_launches.assign(layers.size(), 1);
  for (std::size_t i = 0; i < layers.size(); ++i) {
    costs.attention_us[i] = layers[i].cost.time_us;
    costs.attention_launches[i] = layers[i].cost.launches;
    costs.attention_gapped_launches[i] = layers[i].cost.gapped_launches;
  }
}

Prediction Predictor::predict(const Workload& batch) const {
  // With attention replicas every step is costed on one replica's share of the batch (docs/CAPACITY.md).
  Workload share;
  const Workload& workload = input_.attention_dp > 1 ? (share = replicaShare(batch)) : batch;
  Prediction p;
  predictAttention(workload, p.attention);
  if (workload.phase == Phase::Extend && !workload.isUniform()) p.mixed_note = mixedNote(workload);
  const ModelSpec& model = *input_.model;
  double total = 0;
  for (const auto& a : p.attention) total += a.cost.time_us * a.layers;
  p.attention_us = total / model.num_layers;

  const bool decode = decodeLike(workload.phase);
  const StepGraph& graph = stepGraph(workload.phase);
  StepCosts costs;
  costs.host_plan_us = hostPlanUs(workload.phase);
  costOps(workload, batch, costs);
  setAttentionCosts(costs, p.attention);
  p.eager = simulateStep(graph, costs, GraphMode::Eager, launch_);
  p.tp_comm_us = commUs(workload, batch);
  p.eager.step_us += p.tp_comm_us;
  p.eager.gpu_busy_us += p.tp_comm_us;

  const KernelModel& attention = attentionModel(workload.phase);
  const std::array<double, 4> bands = kernelBands(workload.phase);
  p.uncertainty = eagerUncertainty(attention, bands, p.eager);

  p.graph_decision = decideGraph(workload);
  if (p.graph_decision.mode == GraphMode::Eager) {
    p.graph = p.eager;
    return p;
  }
  // A graph replays the captured size: the batch is padded up to it. The padded slots run every
  // linear kernel, but the engines give them no context (Workload::paddedTo), so attention keeps
  // the real batch's cost.
  const Workload padded = decode ? workload.paddedTo(p.graph_decision.padded_batch) : workload;
  if (decode) costOps(padded, batch, costs);
  p.graph = simulateStep(graph, costs, p.graph_decision.mode, launch_);
  const double graph_comm = commUs(padded, batch);
  p.graph.step_us += graph_comm;
  p.graph.gpu_busy_us += graph_comm;
  const StepBand graph_band = stepBand(p.graph.by_category, p.graph.step_us, bands);
  p.uncertainty.graph_band = graph_band.band;
  p.uncertainty.graph_tie_band = graph_band.tie_band;
  return p;
}

}  // namespace attnsim
