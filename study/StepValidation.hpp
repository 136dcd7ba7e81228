#pragma once
// The forward-step model against the harness's synthetic decoder step (`step` rows): eager and
// CUDA-graph step time per batch, the kernels per step the profiler counted against the DAG's, and
// the eager host time per DAG node fitted on the host-bound steps. reports/StepValidation renders it.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "study/Store.hpp"

namespace attnsim {

class Catalog;

struct StepComparison {
  std::string hardware;
  std::int64_t batch = 0;
  std::int64_t context = 0;  // tokens in the KV cache before the step
  int measured_kernels = 0;  // profiler count per eager step (0: not recorded)
  int model_nodes = 0;
  double eager_measured_us = 0, eager_predicted_us = 0;
  double graph_measured_us = 0, graph_predicted_us = 0;
};

// The catalog model the steps are compared with.
struct StepDecoder {
  std::string model;
  int layers = 0, hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, mlp = 0;
};

struct StepValidation {
  bool measured = false;  // any step rows at all; without them there is nothing to report
  StepDecoder decoder;
  std::vector<StepComparison> rows;
  double eager_mape = 0, graph_mape = 0;  // over `rows`
  // Eager host time per node of the step DAG, fitted per hardware on the host-bound steps of
  // batches 1, 4, 16 and 64; `calibrate` exports it as the device's kernel_launch_us.
  std::map<std::string, double> host_us_per_node;
  std::size_t refit_points = 0;  // the other batches, scored with that host cost
  double eager_refit_mape = 0;   // eager on those points
};

// The catalog model `harness-decoder` is the synthetic decoder; rows whose note describes another
// geometry are refused (InputError), so the comparison never silently uses the wrong model.
StepValidation stepValidation(const Catalog& catalog, const std::vector<MeasurementRow>& step_rows);

}  // namespace attnsim
