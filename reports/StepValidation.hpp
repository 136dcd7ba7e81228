#pragma once
// The forward-step model against the harness's synthetic decoder step (`step` rows): eager and
// CUDA-graph step time per batch, and the kernels per step the profiler counted against the DAG's.
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

struct StepValidation {
  std::vector<StepComparison> rows;
  // Eager host time per node of the step DAG, fitted per hardware on the host-bound steps of
  // batches 1, 4, 16 and 64; `calibrate` exports it as the device's kernel_launch_us.
  std::map<std::string, double> host_us_per_node;
  double eager_refit_mape = 0;  // eager on the other batches with that host cost
  std::string markdown;         // empty when there are no step rows
};

// The catalog model `harness-decoder` is the synthetic decoder; rows whose note describes another
// geometry are refused (InputError), so the comparison never silently uses the wrong model.
StepValidation stepValidation(const Catalog& catalog, const std::vector<MeasurementRow>& step_rows);

}  // namespace attnsim
