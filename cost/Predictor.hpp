#pragma once
// Predicts one scenario: every layer type's attention call and the whole forward step, eager and
// with the engine's CUDA graphs. Resolution (kernels, shapes, graph topology) happens once in the
// constructor; predict() is cheap and allocation-free once warm.
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backends/Backend.hpp"
#include "backends/EnginePolicy.hpp"
#include "cost/AttentionCost.hpp"
#include "cost/StepModel.hpp"
#include "cost/Workload.hpp"

namespace attnsim {

class Catalog;
struct ModelSpec;
struct HardwareProfile;
struct KernelFamily;

struct PredictionInput {
  const HardwareProfile* hardware = nullptr;
  const ModelSpec* model = nullptr;
  const KernelFamily* prefill_kernel = nullptr;  // runs prefill and extend
  const KernelFamily* decode_kernel = nullptr;   // runs decode and verify
  // An MLA backend whose engine picks its extend form per batch (BackendCaps::mla_extend), and the
  // family of its absorbed form.
  const MlaExtend* mla_extend = nullptr;
  const KernelFamily* absorbed_extend_kernel = nullptr;
  std::string cuda_graph_level = "always";  // the backend's support: always, uniform_batch, ...
  const CudaGraphPolicy* graphs = nullptr;  // the engine's capture rules; null: every batch captured
  Env engine_env;                           // variables for the engine's graph rules
  std::string engine;                       // vllm, sglang, rtp-llm: picks its measured all-reduce
  KvCacheDtype kv_dtype = KvCacheDtype::Auto;
  std::optional<DType> model_dtype;  // unset: the model's
  std::int64_t page_size = 16;
  int tp = 1;
  // Attention replicas (SGLang DP attention, ServingPolicy::attention_dp): the batch's requests are
  // spread evenly over them unless it names its busiest replica's share (Workload::replica);
  // attention and its projections run at tp / attention_dp ranks on one replica's share, the MLP/MoE
  // over every replica's tokens at tp, joined by a gather and a scatter.
  int attention_dp = 1;
};

struct LayerAttention {
  const AttentionLayerSpec* layer = nullptr;
  int layers = 0;  // how many layers of the model have this type
  const KernelFamily* kernel = nullptr;
  AttentionShape shape;
  AttentionCost cost;
};

// The step's attention nodes: each layer type's call time and the kernels it launches (the attention
// kernel, its split merge, a second call for a mixed batch run by phase).
void setAttentionCosts(StepCosts& costs, const std::vector<LayerAttention>& layers);

struct GraphDecision {
  GraphMode mode = GraphMode::Eager;
  std::string why;
  std::int64_t padded_batch = 0;  // requests (decode) or tokens (prefill) after padding
  std::size_t capture_sizes = 0;
  double capture_ms = 0;  // one-time capture of every size
  double capture_mib = 0;
};

// How sure a prediction is (docs/COST_MODEL.md "Uncertainty"): relative bands, a time t within
// [t·(1 − band), t·(1 + band)]. Plain values: predict() stays allocation-free.
struct PredictionUncertainty {
  Provenance provenance = Provenance::Default;  // the attention kernel's efficiencies
  BandBasis basis = BandBasis::Documented;
  double attention_band = kDefaultBand;  // of the attention call
  double non_attention_band = 0;         // of the rest of the step (GEMMs, elementwise, host and launch costs)
  double eager_band = 0;                 // of the step times: both parts' bands weighted by their time
  double graph_band = 0;
  // The attention part's error alone, relative to the step: what separates two backends of one
  // scenario, whose other kernels and host work are the same computation (their error is shared).
  double eager_tie_band = 0;
  double graph_tie_band = 0;
};

struct Prediction {
  std::vector<LayerAttention> attention;
  double attention_us = 0;  // one layer's attention call (mean over the model's layers)
  StepTimeline eager;
  StepTimeline graph;  // the step under the engine's CUDA graphs (eager when none applies)
  GraphDecision graph_decision;
  std::string mixed_note;  // a mixed batch: how the backend runs it, and its source ("" otherwise)
  double tp_comm_us = 0;   // TP all-reduces (cost/Collective), included in eager and graph step times
  PredictionUncertainty uncertainty;
};

// The numbers a sweep stores of one prediction (study/Sweep): predict()'s, without the per-layer
// details and the explanations.
struct StepPrediction {
  double attention_us = 0;
  Bound bound = Bound::Memory;  // the first attention layer type's
  double eager_us = 0, graph_us = 0;
  GraphMode graph_mode = GraphMode::Eager;
  // predict()'s uncertainty.{eager,graph}_band, {eager,graph}_tie_band and provenance.
  double eager_band = 0, graph_band = 0, eager_tie_band = 0, graph_tie_band = 0;
  Provenance provenance = Provenance::Default;
};

// A step's relative bands (docs/COST_MODEL.md "Uncertainty") from its kernel time per category
// (attention, gemm, moe, elementwise: StepTimeline::by_category), its step time and each category's band.
struct StepBand {
  double band = 0, tie_band = 0, non_attention_band = 0;
};
StepBand stepBand(const std::array<double, 4>& by_category, double step_us, const std::array<double, 4>& bands);

class Predictor {
 public:
  Predictor(const Catalog& catalog, PredictionInput input);
  [[nodiscard]] Prediction predict(const Workload& workload) const;
  // Only the attention call of every layer type (the hot path of rank and sweeps).
  void predictAttention(const Workload& workload, std::vector<LayerAttention>& out) const;
  [[nodiscard]] const PredictionInput& input() const { return input_; }
  // An MLA extend the engine runs absorbed (BackendCaps::mla_extend): from the batch's prefix tokens,
  // and whether it replays the engine's piecewise prefill graph.
  [[nodiscard]] bool extendAbsorbed(const Workload& workload) const;
  // Which of an MLA extend's tokens take the MHA form's up-projection and which the absorptions: those
  // of the attention calls predictAttention runs.
  [[nodiscard]] MlaExtendRows mlaExtendRows(const Workload& workload) const;

  // One workload on several predictors (a sweep point's valid backends): out[i] holds the numbers of
  // predictors[i]->predict(workload), bit for bit. The non-attention kernels are costed once for the
  // predictors that share a model, hardware, TP size, KV dtype and graph padding, and the step
  // timelines of predictors of one model on one hardware are walked together (simulateStepTimes).
  // Allocation-free once its per-thread buffers have grown.
  static void predictSteps(std::span<const Predictor* const> predictors, const Workload& workload,
                           std::span<StepPrediction> out);

 private:
  enum class GraphWhy { NoPlatformGraphs, EngineOff, NoSizes, AboveLargest, Prefill, Full, Unsupported };
  struct GraphChoice {
    GraphMode mode = GraphMode::Eager;
    GraphWhy why = GraphWhy::NoPlatformGraphs;
    std::int64_t size = 0;          // requests (decode) or tokens (prefill)
    std::int64_t padded_batch = 0;  // the captured size it replays
  };
  struct StepsScratch;  // predictSteps' per-thread buffers (cost/PredictorSteps.cpp)
  [[nodiscard]] GraphChoice chooseGraph(const Workload& workload) const;
  [[nodiscard]] GraphDecision decideGraph(const Workload& workload) const;
  // A mixed batch run as a prefill/extend call and then a decode call over the single-token rows.
  [[nodiscard]] AttentionCost mixedByPhase(std::size_t layer, const Workload& workload) const;
  [[nodiscard]] std::string mixedNote(const Workload& workload) const;
  // One form for a mixed batch's every row (SGLang), rather than its decode rows in a decode call.
  [[nodiscard]] bool wholeBatchOneForm() const;
  [[nodiscard]] const StepGraph& stepGraph(Phase phase) const;
  [[nodiscard]] double hostPlanUs(Phase phase) const;
  [[nodiscard]] int attentionTp() const;  // ranks one attention replica runs on: tp / attention_dp
  [[nodiscard]] Workload replicaShare(const Workload& w) const;  // one replica's requests (rounded up)
  // The tokens the MLP runs on with attention replicas (dp_gather's padding).
  [[nodiscard]] Workload gathered(const Workload& replica, const Workload& batch) const;
  void costOps(const Workload& replica, const Workload& batch, StepCosts& costs) const;  // all but attention
  [[nodiscard]] double commUs(const Workload& replica, const Workload& batch) const;     // the step's collectives

  PredictionInput input_;
  std::vector<std::pair<const AttentionLayerSpec*, int>> layer_types_;
  DeviceModel device_;
  KernelModel prefill_model_, extend_model_, decode_model_, absorbed_extend_model_;
  [[nodiscard]] const KernelModel& attentionModel(Phase phase) const;
  [[nodiscard]] std::array<double, 4> kernelBands(Phase phase) const;  // attention, gemm, moe, elementwise
  std::vector<AttentionShape> prefill_shapes_, decode_shapes_, absorbed_shapes_;
  // Per layer type, the prefill and decode kernels with their surface's slice applied to the layer's
  // shape (empty: the kernel has no surface on this device; grids_ owns what they point to).
  using LayerModels = std::vector<std::shared_ptr<const KernelModel>>;  // heap: stable when the Predictor moves
  LayerModels prefill_layer_models_, decode_layer_models_, extend_layer_models_, absorbed_layer_models_;
  std::vector<std::shared_ptr<const CorrectedGrid>> grids_;
  void attachCorrectedGrids();
  [[nodiscard]] const KernelModel& layerModel(const KernelModel& kernel, std::size_t layer) const;
  LinearKernels linear_;
  StepGraph prefill_graph_, decode_graph_;
  LaunchCosts launch_;
  std::vector<std::int64_t> capture_sizes_;
  std::vector<std::int64_t> prefill_capture_sizes_;
  double capture_ms_per_size_ = 0;
  bool mixed_by_phase_ = false;  // a mixed batch's decode rows run in a decode call of their own
  double prefill_host_plan_us_ = 0, decode_host_plan_us_ = 0;  // the kernels' per-forward CPU work
};

}  // namespace attnsim
