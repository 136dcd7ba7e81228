#pragma once
// One forward step of the whole model as a DAG of kernels (Boost.Graph), and its time on two
// timelines: the CPU issuing launches (eager) or graph replays, and the GPU stream running them.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "cost/AttentionCost.hpp"
#include "cost/Workload.hpp"

namespace attnsim {

struct ModelSpec;
struct HardwareProfile;
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
  KvUpProj,
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
const char* stepOpName(StepOp op);

struct StepNode {
  StepOp op;
  int attention_type = -1;  // index into the model's attention layer types, for Attention nodes
  int layer = -1;
};

// The topology of one forward step: nodes in topological order and their predecessors (CSR).
class StepGraph {
 public:
  StepGraph(const ModelSpec& model, bool decode_like);
  [[nodiscard]] const std::vector<StepNode>& nodes() const { return nodes_; }
  [[nodiscard]] std::span<const int> predecessors(std::size_t i) const {
    return {pred_index_.data() + pred_offset_[i], pred_index_.data() + pred_offset_[i + 1]};
  }

 private:
  std::vector<StepNode> nodes_;
  std::vector<int> pred_offset_;
  std::vector<int> pred_index_;
};

// Duration (µs) and launch count of each kernel kind, per attention layer type for attention.
struct StepCosts {
  std::array<double, static_cast<std::size_t>(StepOp::Count)> op_us{};
  std::array<int, static_cast<std::size_t>(StepOp::Count)> op_launches{};
  std::vector<double> attention_us;  // per attention layer type
  std::vector<int> attention_launches;
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

StepTimeline simulateStep(const StepGraph& graph, const StepCosts& costs, GraphMode mode, const LaunchCosts& launch);

// Kernel kinds that are not attention, costed by roofline from the model's dimensions.
struct LinearKernels {
  KernelModel gemm;
  KernelModel grouped_gemm;
  KernelModel elementwise;
  DeviceModel device;          // activation dtype
  DeviceModel device_weights;  // peak for the weights' dtype (FP8 GEMMs)
};
LinearKernels resolveLinearKernels(const Catalog& catalog, const HardwareProfile& hw, const ModelSpec& model);

// Fills every non-attention entry of `costs` for the workload (tokens, requests, context).
void costLinearOps(const ModelSpec& model, const LinearKernels& k, const Workload& w, int tp, double kv_elem_bytes,
                   StepCosts& costs);

}  // namespace attnsim
