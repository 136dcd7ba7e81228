#pragma once
// One forward step of the whole model as a DAG of kernels (Boost.Graph), and its time on two
// timelines: the CPU issuing launches (eager) or graph replays, and the GPU stream running them.
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cost/AttentionCost.hpp"
#include "cost/Workload.hpp"

namespace attnsim {

struct ModelSpec;
struct HardwareProfile;
struct GemmSurface;
struct MoeFit;
class Catalog;

enum class GraphMode { Eager, Full, Piecewise };
const char* graphModeName(GraphMode m);

// Kernel kinds of a step; the cost of each is computed once per evaluation and shared by every
// layer that runs it.
enum class StepOp {
  InputNorm,
  QkvProj,
  QbProj,
  Rope,
  KvWrite,
  MlaExtendProj,  // an MLA extend's projections around attention (MlaExtendRows)
  QAbsorb,
  Attention,
  OAbsorb,
  OProj,
  PostNorm,
  GateUp,
  Act,
  Down,
  Router,
  TopK,
  ExpertsGateUp,
  ExpertsAct,
  ExpertsDown,
  SharedGateUp,
  SharedAct,
  SharedDown,
  MoeCombine,
  FinalNorm,
  LmHead,
  Sampling,
  Count
};
inline constexpr std::size_t kStepOpCount = static_cast<std::size_t>(StepOp::Count);

const char* stepOpName(StepOp op);

struct StepNode {
  StepOp op;
  int attention_type = -1;  // index into the model's attention layer types, for Attention nodes
  int layer = -1;
};

// How the CPU reaches a node under piecewise graphs: attention runs eagerly; any other node either
// opens a graph piece (the first after an attention node or the step's start) or replays in one.
enum class NodeLaunch : std::uint8_t { Attention, OpensPiece, InPiece };

// A node as the timeline reads it: its row in a step's cost table (StepOp, or StepOp::Count plus
// the attention layer type), its summed-time category and how it is launched.
struct ScheduledNode {
  std::uint16_t slot = 0;
  std::uint8_t category = 0;
  NodeLaunch launch = NodeLaunch::InPiece;
};

// The topology of one forward step: nodes in topological order and their predecessors (CSR).
class StepGraph {
 public:
  StepGraph(const ModelSpec& model, bool decode_like);
  [[nodiscard]] const std::vector<StepNode>& nodes() const { return nodes_; }
  [[nodiscard]] std::span<const int> predecessors(std::size_t i) const {
    return {pred_index_.data() + pred_offset_[i], pred_index_.data() + pred_offset_[i + 1]};
  }
  [[nodiscard]] const std::vector<ScheduledNode>& schedule() const { return schedule_; }
  [[nodiscard]] std::size_t slots() const { return slots_; }  // rows of the cost table schedule() indexes

 private:
  std::vector<StepNode> nodes_;
  std::vector<ScheduledNode> schedule_;
  std::size_t slots_ = 0;
  std::vector<int> pred_offset_;
  std::vector<int> pred_index_;
};

// Duration (µs) and launch count of each kernel kind, per attention layer type for attention.
struct StepCosts {
  std::array<double, static_cast<std::size_t>(StepOp::Count)> op_us{};
  std::array<int, static_cast<std::size_t>(StepOp::Count)> op_launches{};
  std::vector<double> attention_us;  // per attention layer type
  std::vector<int> attention_launches;
  // The launches whose gap the timeline adds (AttentionCost::gapped_launches: a merge whose
  // merge_launch_us stands for its gap is not one).
  std::vector<int> attention_gapped_launches;
  double host_plan_us = 0;  // the attention backend's per-forward CPU work
};

// The platform's launch costs (hardware/platforms, LaunchOverheads) as the timeline uses them.
struct LaunchCosts {
  double kernel_launch_us = 0;          // host, per eager kernel
  double graph_replay_base_us = 0;      // host, per graph (or graph piece) launch
  double graph_replay_per_node_us = 0;  // GPU idle gap before each replayed node
  double eager_gap_us = 0;              // GPU idle gap before each stream-launched kernel
};

struct StepTimeline {
  double step_us = 0;
  double gpu_busy_us = 0;
  double cpu_us = 0;
  int launches = 0;  // CPU-issued launches (kernels or graph replays)
  int nodes = 0;
  std::array<double, 4> by_category{};  // attention, gemm, moe, elementwise: summed kernel time
};

// The step on one GPU stream that runs the graph's nodes in topological order: a node starts when
// the CPU has launched it, the stream is free and its predecessors are done.
StepTimeline simulateStep(const StepGraph& graph, const StepCosts& costs, GraphMode mode, const LaunchCosts& launch);
// The same timeline walked literally, predecessors included. simulateStep gives the same bits without
// reading predecessors whenever no duration, gap or launch cost is negative or NaN: on one stream every
// predecessor of a node ends no later than the node before it, so the stream's free time bounds them.
StepTimeline simulateStepReference(const StepGraph& graph, const StepCosts& costs, GraphMode mode,
                                   const LaunchCosts& launch);

// StepTimeline::by_category of simulateStep(graph, costs, ...), in any mode: the kernel time of each
// category, summed in the same order (bit for bit).
std::array<double, 4> kernelTimeByCategory(const StepGraph& graph, const StepCosts& costs);

// One timeline among several of one graph computed together (simulateStepTimes): its costs and mode.
struct StepLane {
  const StepCosts* costs = nullptr;
  GraphMode mode = GraphMode::Eager;
};
// The step time of every lane (each equal to simulateStep(graph, *lane.costs, lane.mode, launch).step_us).
// The lanes' timelines are independent chains of additions, walked side by side so the CPU overlaps them.
// Allocation-free once its per-thread tables have grown to the largest call.
void simulateStepTimes(const StepGraph& graph, std::span<const StepLane> lanes, const LaunchCosts& launch,
                       std::span<double> step_us);

// Kernel kinds that are not attention, costed by roofline from the model's dimensions.
struct LinearKernels {
  KernelModel gemm;
  KernelModel grouped_gemm;
  KernelModel elementwise;
  KernelModel kv_write;        // the KV-cache write of the new tokens (family kv-cache-write)
  DeviceModel device;          // activation dtype
  DeviceModel device_weights;  // peak for the weights' dtype (FP8 GEMMs)
  // Dense GEMMs over the device's measured surface where it has one (HardwareProfile::gemmSurface):
  // bf16 GEMMs, and those against the checkpoint's low-precision weights. Null: the family's roofline.
  const GemmSurface* gemm_bf16 = nullptr;
  const GemmSurface* gemm_weights = nullptr;
  // The routed experts (top-k, expert GEMMs, activation, combine) of a MoE model over the device's
  // fused-MoE fit for the engine and the checkpoint's dtype (HardwareProfile::moeFit). Null: roofline.
  const MoeFit* moe = nullptr;
  // Set when the engine's experts run the kernel another engine's fit measured (grouped-gemm family's
  // performance.moe_runner) and `moe` is that fit.
  const KernelFamily::MoeRunnerProxy* moe_proxy = nullptr;
  std::string engine;  // the engine the step runs in (its KV-cache write kernel: kvWriteUs)
  // The query's FP8 quantization the engine runs before each layer's attention with an FP8 KV cache
  // (KernelFamily::query_quant of the prefill and of the decode family); null: none. Costed in the KV
  // write's node, which runs just before attention (SGLang later fuses the two into one kernel).
  const KernelFamily::QueryQuant* prefill_query_quant = nullptr;
  const KernelFamily::QueryQuant* decode_query_quant = nullptr;
};
// `engine` picks the MoE fit timed in that engine where the device has one.
LinearKernels resolveLinearKernels(const Catalog& catalog, const HardwareProfile& hw, const ModelSpec& model,
                                   std::string_view engine = {});

// The analytical cost of a MoE layer's routed experts, per op, as the step model has it without a
// measured fit: `distinct` tokens route like independent draws of top-k of `experts`, `inter` is an
// expert's intermediate width per rank; act and weight bytes per element.
struct RoutedExpertTimes {
  double topk = 0, gate_up = 0, act = 0, down = 0, combine = 0;
  [[nodiscard]] double sum() const { return topk + gate_up + act + down + combine; }
};
struct RoutedExpertShape {
  double tokens = 0, distinct = 0, hidden = 0, inter = 0, experts = 0, topk = 0, act_bytes = 2, weight_bytes = 2;
};
RoutedExpertTimes routedExpertsDefault(const LinearKernels& k, const RoutedExpertShape& s);

// A non-attention kernel's time: the larger of its compute and memory roofs at the family's
// efficiencies, plus its fixed time.
double rooflineUs(const KernelModel& kernel, const DeviceModel& device, double flops, double bytes);
// Bytes the KV-cache write of `tokens` new tokens moves: each token's K/V row (kv_token_elements per
// rank) read in the activation dtype and stored at the cache's element width.
double kvWriteBytes(double tokens, double kv_token_elements, double act_bytes, double kv_elem_bytes);
// The KV-cache write's time in `engine` (cost/KvWrite.cpp): its roofline over `bytes` (kvWriteBytes), or,
// where the family's kernel runs one CTA per token in that engine (KernelFamily::token_cta), the CTAs'
// latency over those the SMs hold at once, if longer. `loop_elements`: what one token's CTA walks per
// tensor (K and V in the same pass: KV heads × head dim; an MLA latent row), which sets its threads.
double kvWriteUs(const KernelModel& write, const DeviceModel& device, std::string_view engine, double tokens,
                 double loop_elements, double bytes);
// The query's FP8 quantization an engine runs before the attention kernel (KernelFamily::query_quant) over
// `query_elements` (query tokens × query heads × head dim per rank): `launches` kernels of the elementwise
// family, each paying its fixed time, their bytes together at its bandwidth. 0 when the family has none.
double queryQuantUs(const KernelFamily::QueryQuant& quant, const KernelModel& elementwise, const DeviceModel& device,
                    double query_elements);

// Which tokens of an MLA extend step take which form's projections (BackendCaps::mla_extend): the MHA
// form up-projects every cached latent token of its rows through kv_b_proj (the new tokens and the
// prefix, once per layer), the absorbed form multiplies its rows' queries into the latent space and
// its outputs back. Both land in the step's one `mla_extend_proj` node.
struct MlaExtendRows {
  double up_projected = -1;    // latent tokens through kv_b_proj; < 0: every row's whole context
  double absorbed_tokens = 0;  // query tokens run absorbed
};

// Fills every non-attention entry of `costs` for the workload (tokens, requests, context).
void costLinearOps(const ModelSpec& model, const LinearKernels& k, const Workload& w, int tp, double kv_elem_bytes,
                   StepCosts& costs, const MlaExtendRows& mla_rows = {});

}  // namespace attnsim
