// Predictor::predictSteps: predict()'s numbers for many predictors of one workload, with the work
// they share done once (the hot path of sweeps).
#include <stdexcept>

#include "cost/Collective.hpp"
#include "cost/Predictor.hpp"
#include "hardware/HardwareProfile.hpp"
#include "model/ModelSpec.hpp"

namespace attnsim {

namespace {

// The non-attention kernels and TP all-reduces of one (padded) workload, and what they depend on
// besides it. Linear kernels are resolved from the catalog, hardware and model alone.
struct SharedLinear {
  const ModelSpec* model = nullptr;
  const HardwareProfile* hardware = nullptr;
  std::string_view engine;  // its measured all-reduce
  int tp = 1;
  double kv_bytes = 0, act_bytes = 0;
  std::int64_t padded_batch = 0;  // 0: the workload as given
  MlaExtendRows mla_rows;         // an MLA extend's projections differ by the backend's form
  // The backend's query quantization before attention (LinearKernels::*_query_quant), if any.
  const KernelFamily::QueryQuant* prefill_query_quant = nullptr;
  const KernelFamily::QueryQuant* decode_query_quant = nullptr;
  StepCosts costs;  // only its non-attention entries are read
  double comm_us = 0;
};

void copyPrediction(const Prediction& p, StepPrediction& o) {
  o.attention_us = p.attention_us;
  o.bound = p.attention.front().cost.bound;
  o.eager_us = p.eager.step_us;
  o.graph_us = p.graph.step_us;
  o.graph_mode = p.graph_decision.mode;
  o.eager_band = p.uncertainty.eager_band;
  o.graph_band = p.uncertainty.graph_band;
  o.eager_tie_band = p.uncertainty.eager_tie_band;
  o.graph_tie_band = p.uncertainty.graph_tie_band;
  o.provenance = p.uncertainty.provenance;
}

}  // namespace

struct Predictor::StepsScratch {
  std::vector<LayerAttention> attention;
  std::vector<SharedLinear> linear;
  std::size_t linear_used = 0;
  std::vector<StepCosts> costs;  // two per predictor: eager, graph
  std::vector<double> eager_comm, graph_comm;
  std::vector<char> done;
  std::vector<StepLane> lanes;
  std::vector<std::size_t> lane_costs;  // index into costs of each lane
  std::vector<double> times;
  Workload padded;

  void begin(std::size_t n) {
    linear_used = 0;
    if (costs.size() < 2 * n) costs.resize(2 * n);
    eager_comm.assign(n, 0.0);
    graph_comm.assign(n, 0.0);
    done.assign(n, 0);
  }

  // The linear costs for `p` at `padded_batch` (0: unpadded), computed by the first predictor that needs them.
  const SharedLinear& linearFor(const Predictor& p, const Workload& workload, std::int64_t padded_batch) {
    const ModelSpec& model = *p.input_.model;
    const double kv_bytes = kvElementBytes(p.input_.kv_dtype, *p.input_.model_dtype);
    const double act_bytes = bytesOf(*p.input_.model_dtype);
    if (padded_batch <= workload.requests()) padded_batch = 0;  // paddedTo leaves the workload as it is
    const MlaExtendRows rows = p.mlaExtendRows(workload);
    for (std::size_t i = 0; i < linear_used; ++i) {
      const SharedLinear& e = linear[i];
      if (e.model == &model && e.hardware == p.input_.hardware && e.engine == p.input_.engine && e.tp == p.input_.tp &&
          e.kv_bytes == kv_bytes && e.act_bytes == act_bytes && e.padded_batch == padded_batch &&
          e.mla_rows.up_projected == rows.up_projected && e.mla_rows.absorbed_tokens == rows.absorbed_tokens &&
          e.prefill_query_quant == p.linear_.prefill_query_quant &&
          e.decode_query_quant == p.linear_.decode_query_quant) {
        return e;
      }
    }
    if (linear_used == linear.size()) linear.emplace_back();
    SharedLinear& e = linear[linear_used++];
    e.model = &model;
    e.hardware = p.input_.hardware;
    e.engine = p.input_.engine;
    e.tp = p.input_.tp;
    e.kv_bytes = kv_bytes;
    e.act_bytes = act_bytes;
    e.padded_batch = padded_batch;
    e.mla_rows = rows;
    e.prefill_query_quant = p.linear_.prefill_query_quant;
    e.decode_query_quant = p.linear_.decode_query_quant;
    e.costs.op_us.fill(0);
    const Workload* w = &workload;
    if (padded_batch > 0) workload.padInto(padded_batch, padded), w = &padded;
    costLinearOps(model, p.linear_, *w, p.input_.tp, kv_bytes, e.costs, rows);
    e.comm_us = tpCommunicationUs(model, p.input_.hardware->interconnect_link, w->tokens(), p.input_.tp, act_bytes,
                                  p.input_.engine);
    return e;
  }

  void setCosts(StepCosts& c, const SharedLinear& shared, double host_plan_us) const {
    c.op_us = shared.costs.op_us;
    c.op_launches = shared.costs.op_launches;
    c.host_plan_us = host_plan_us;
    setAttentionCosts(c, attention);
  }

  // Predictor i's attention, and the costs of its eager and (when graphs replay) graph timelines.
  void cost(const Predictor& p, std::size_t i, const Workload& workload, StepPrediction& o) {
    if (p.input_.attention_dp > 1) {  // attention replicas split the batch: predict() alone knows how
      copyPrediction(p.predict(workload), o);
      done[i] = 1;
      return;
    }
    p.predictAttention(workload, attention);
    double total = 0;
    for (const auto& a : attention) total += a.cost.time_us * a.layers;
    o.attention_us = total / p.input_.model->num_layers;
    o.bound = attention.front().cost.bound;
    o.provenance = p.attentionModel(workload.phase).provenance;
    const SharedLinear& eager = linearFor(p, workload, 0);
    setCosts(costs[2 * i], eager, p.hostPlanUs(workload.phase));
    eager_comm[i] = eager.comm_us;
    const GraphChoice choice = p.chooseGraph(workload);
    o.graph_mode = choice.mode;
    if (choice.mode == GraphMode::Eager) return;
    const bool decode = workload.phase == Phase::Decode || workload.phase == Phase::Verify;
    const SharedLinear& graph = decode ? linearFor(p, workload, choice.padded_batch) : eager;
    setCosts(costs[2 * i + 1], graph, p.hostPlanUs(workload.phase));
    graph_comm[i] = graph.comm_us;
  }

  // The timelines of predictors[i] and of every later one of its model and hardware (they share a
  // graph and launch costs), walked together.
  void walk(std::span<const Predictor* const> predictors, std::size_t i, Phase phase, std::span<StepPrediction> out) {
    const Predictor& first = *predictors[i];
    lanes.clear();
    lane_costs.clear();
    for (std::size_t j = i; j < predictors.size(); ++j) {
      const Predictor& p = *predictors[j];
      if (done[j] || p.input_.model != first.input_.model || p.input_.hardware != first.input_.hardware) continue;
      done[j] = 1;
      lanes.push_back({&costs[2 * j], GraphMode::Eager});
      lane_costs.push_back(2 * j);
      if (out[j].graph_mode == GraphMode::Eager) continue;
      lanes.push_back({&costs[2 * j + 1], out[j].graph_mode});
      lane_costs.push_back(2 * j + 1);
    }
    times.resize(lanes.size());
    simulateStepTimes(first.stepGraph(phase), lanes, first.launch_, times);
    const StepGraph& graph = first.stepGraph(phase);
    for (std::size_t l = 0; l < lanes.size(); ++l) {
      const std::size_t j = lane_costs[l] / 2;
      const std::array<double, 4> bands = predictors[j]->kernelBands(phase);
      StepPrediction& o = out[j];
      if (lane_costs[l] % 2 == 0) {
        o.eager_us = times[l] + eager_comm[j];
        const StepBand b = stepBand(kernelTimeByCategory(graph, costs[lane_costs[l]]), o.eager_us, bands);
        o.graph_us = o.eager_us;  // replaced next when graphs replay
        o.eager_band = o.graph_band = b.band;
        o.eager_tie_band = o.graph_tie_band = b.tie_band;
      } else {
        o.graph_us = times[l] + graph_comm[j];
        const StepBand b = stepBand(kernelTimeByCategory(graph, costs[lane_costs[l]]), o.graph_us, bands);
        o.graph_band = b.band;
        o.graph_tie_band = b.tie_band;
      }
    }
  }
};

void Predictor::predictSteps(std::span<const Predictor* const> predictors, const Workload& workload,
                             std::span<StepPrediction> out) {
  if (out.size() != predictors.size()) throw std::logic_error("predictSteps: one output per predictor");
  thread_local StepsScratch s;
  s.begin(predictors.size());
  for (std::size_t i = 0; i < predictors.size(); ++i) s.cost(*predictors[i], i, workload, out[i]);
  for (std::size_t i = 0; i < predictors.size(); ++i) {
    if (!s.done[i]) s.walk(predictors, i, workload.phase, out);
  }
}

}  // namespace attnsim
