#pragma once
// Fits a kernel family's efficiency parameters (compute and memory efficiency, fixed time, per-key time) on one
// device to measured attention calls: Levenberg-Marquardt on the log of predicted over measured
// time, the normal equations solved with Eigen.
#include <string>
#include <vector>

#include "cost/AttentionCost.hpp"
#include "study/Store.hpp"

namespace attnsim {

class Catalog;

// A study's newest calibrations (attnsim calibrate --db) take over the catalog's.
void applyStudyCalibrations(Catalog& catalog, const Store& store);

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
  // A mixed batch (phase `mixed` rows): `group` is the fresh prefill chunk and `decodes` the decode
  // requests sharing its launch; count 0 for every other row.
  RequestGroup decodes{0, 1, 1, 1};
  double measured_us = 0;
  std::int64_t page_size = 0;  // 0: contiguous K and V, as SDPA takes them
  // The query's dtype sets the tensor cores' peak: an FP8 query (with an FP8 cache) runs at the
  // FP8 peak, this multiple of the bf16 one, with nothing to dequantize.
  double math_peak_scale = 1;
  // The timed call also wrote the new tokens' K/V (AIConfigurator's rows): that kernel's time,
  // from the kv-cache-write family, which the step model costs as its own node.
  double kv_write_us = 0;
  // The timed call also quantized the query to FP8 before the kernel (KernelFamily::query_quant: SGLang's
  // trtllm_mha with an FP8 cache): those kernels' time, which the step model costs beside the KV write.
  double q_quant_us = 0;
  // What the timed call ran besides the attention kernel.
  [[nodiscard]] double outsideUs() const { return kv_write_us + q_quant_us; }
  // Timed back to back without an L2 flush: a call whose bytes the L2 holds reads them at the L2's
  // bandwidth (the device's l2_bandwidth), not from DRAM.
  bool l2_warm = false;
  const MeasurementRow* row = nullptr;
};

struct FitResult {
  FitParams params;
  int points = 0;
  int iterations = 0;
  double mape = 0;  // on the points fitted
};

// The model's time for a measured point with the given parameters, over the KV layout it was measured on.
double predictPoint(const FitPoint& p, const KernelModel& base, const DeviceModel& device, const FitParams& params);
// The per-key time is fitted only when the points cover at least three context lengths; with fewer
// it cannot be told from the fixed time, and it stays at `start`.
FitResult fitKernel(const std::vector<FitPoint>& points, const KernelModel& base, const DeviceModel& device,
                    FitParams start);
double meanAbsolutePercentageError(const std::vector<FitPoint>& points, const KernelModel& base,
                                   const DeviceModel& device, const FitParams& params);

// A measured attention row as a point of the model. The row's dtype is its KV cache's (fp8_e4m3:
// one byte a element, dequantized; Q and O stay bf16). An MLA family's (mla_absorbed) rows give the
// latent width as head_dim (576 = kv_lora_rank 512 + rope 64): keys that wide, values the first 512.
FitPoint fitPointFrom(const MeasurementRow& row, const KernelModel* kernel = nullptr);
// The same, with what the row's device adds to the call: the FP8 peak of an FP8 query, the KV-cache
// write a row that includes it (kv_write) timed with the attention, and the query's FP8 quantization of
// an implementation whose timed call runs it (the family's query_quant.measured_as, with an FP8 cache).
FitPoint fitPointFrom(const MeasurementRow& row, const KernelModel& kernel, const Catalog& catalog);
// The kernel model used to predict measured calls of a family on a device (paged as the family
// pages; predictPoint reads a contiguous point's K and V unpaged).
KernelModel measuredKernelModel(const Catalog& catalog, const std::string& kernel, const std::string& hardware,
                                Phase phase);
// A measured row's phase and its calibration class (prefill, extend, decode). A mixed batch (one
// prefill chunk and decodes in one launch) is predicted as the engines' model predicts `--mix`: an
// extend over both groups, with the extend calibration.
Phase phaseOf(const MeasurementRow& row);
std::string phaseClassOf(const MeasurementRow& row);
// The phase that stands for a calibration class.
Phase phaseOfClass(const std::string& phase_class);

// Launch costs from the harness's launch and graph rows: y = intercept + slope · N by least squares.
struct LineFit {
  double intercept = 0, slope = 0;
  int points = 0;
};
// relative: least squares on residuals relative to y (weights 1/y), for series spanning decades.
LineFit fitLine(const std::vector<std::pair<double, double>>& xy, bool relative = false);

struct OverheadFit {
  std::string hardware;
  double kernel_launch_us = 0;      // slope of eager wall time over back-to-back launches
  double bare_launch_us = 0;        // that slope, kept when a step's host time per node replaces it
  double graph_replay_base_us = 0;  // intercept of replay wall time over graph nodes
  double replay_slope_us = 0;       // replay time per node of tiny-kernel graphs: their GPU time plus the gap
  double graph_node_us = 0;         // GPU idle gap between consecutive replayed nodes (graph_node rows); 0: unmeasured
  int points = 0;
};
// One fit per hardware that has launch and graph_launch rows.
std::vector<OverheadFit> fitOverheads(const std::vector<MeasurementRow>& rows);

// The held-out rule: rows whose context length is in `contexts` are test points, and so is every
// mixed batch (predicted from the extend fit). A family measured with contiguous K/V on a device is
// fitted on those rows only and every paged row of it is a test point (how the fit carries over to
// paged KV); a family measured only paged (the engines' own kernels, which take only their paged
// caches) is fitted on its paged rows of the other contexts.
// Where a family has a measured surface (study/AttentionSurfaceFit.hpp), a row of a shape that is not
// one of its slices is a test point too: how the surface carries over to shapes it did not measure.
class DenseSlices;
class HoldoutRule {
 public:
  HoldoutRule(const std::vector<MeasurementRow>& rows, std::vector<std::int64_t> contexts);
  [[nodiscard]] bool heldOut(const MeasurementRow& row) const;
  // A held-out row whose shape is none of its family's measured slices.
  [[nodiscard]] bool otherShape(const MeasurementRow& row) const;
  [[nodiscard]] const DenseSlices& denseSlices() const { return *dense_; }

 private:
  std::vector<std::int64_t> contexts_;
  std::shared_ptr<const DenseSlices> dense_;
  std::vector<std::pair<std::string, std::string>> contiguous_;  // (hardware, kernel) with contiguous rows
};

}  // namespace attnsim
