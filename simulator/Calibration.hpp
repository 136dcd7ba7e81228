#pragma once
// Fits a kernel family's efficiency parameters (compute and memory efficiency, fixed time, per-key time) on one
// device to measured attention calls: Levenberg-Marquardt on the log of predicted over measured
// time, the normal equations solved with Eigen.
#include <string>
#include <vector>

#include "simulator/AttentionCost.hpp"
#include "simulator/Store.hpp"

namespace attnsim {

class Catalog;

struct FitParams {
  double compute_efficiency = 0.5;
  double memory_efficiency = 0.75;
  double fixed_us = 3.0;
  double key_ns = 0;  // per key a work unit visits
};

struct FitPoint {
  AttentionShape shape;
  Phase phase = Phase::Decode;
  RequestGroup group;
  double measured_us = 0;
  const MeasurementRow* row = nullptr;
};

struct FitResult {
  FitParams params;
  int points = 0;
  int iterations = 0;
  double mape = 0;  // on the points fitted
};

// The model's time for a measured point with the given parameters (contiguous KV, as measured).
double predictPoint(const FitPoint& p, const KernelModel& base, const DeviceModel& device, const FitParams& params);
// The per-key time is fitted only when the points cover at least three context lengths; with fewer
// it cannot be told from the fixed time, and it stays at `start`.
FitResult fitKernel(const std::vector<FitPoint>& points, const KernelModel& base, const DeviceModel& device,
                    FitParams start);
double meanAbsolutePercentageError(const std::vector<FitPoint>& points, const KernelModel& base,
                                   const DeviceModel& device, const FitParams& params);

// A measured attention row as a point of the model.
FitPoint fitPointFrom(const MeasurementRow& row);
// The kernel model used to predict measured (contiguous, unpaged) calls of a family on a device.
KernelModel measuredKernelModel(const Catalog& catalog, const std::string& kernel, const std::string& hardware,
                                Phase phase);
// A measured row's phase and its calibration class (prefill, extend, decode).
Phase phaseOf(const MeasurementRow& row);
std::string phaseClassOf(const MeasurementRow& row);
// The phase that stands for a calibration class.
Phase phaseOfClass(const std::string& phase_class);

// Launch costs from the harness's launch and graph rows: y = intercept + slope · N by least squares.
struct LineFit {
  double intercept = 0, slope = 0;
  int points = 0;
};
LineFit fitLine(const std::vector<std::pair<double, double>>& xy);

struct OverheadFit {
  std::string hardware;
  double kernel_launch_us = 0;      // slope of eager wall time over back-to-back launches
  double graph_replay_base_us = 0;  // intercept of replay wall time over graph nodes
  double graph_node_us = 0;         // slope of replay time over nodes: bounds the per-node cost from above
  int points = 0;
};
// One fit per hardware that has launch and graph_launch rows.
std::vector<OverheadFit> fitOverheads(const std::vector<MeasurementRow>& rows);

// The held-out rule: rows whose context length is in `holdout` are test points.
bool isHeldOut(const MeasurementRow& row, const std::vector<std::int64_t>& holdout_contexts);

}  // namespace attnsim
