#pragma once
// Predicted versus measured attention times: fit on the training points, score the held-out ones
// per kernel family and phase, the ranking agreement of implementations per shape, and each
// device's fit predicting the other devices. Only the figures: reports/ValidationReport renders them.
#include <cstdint>
#include <string>
#include <vector>

#include "hardware/AttentionSurface.hpp"
#include "study/Calibration.hpp"
#include "study/RankingAgreement.hpp"

namespace attnsim {

class Catalog;

struct ValidationOptions {
  std::vector<std::int64_t> holdout_contexts{1024, 8192};
};

struct FamilyFit {
  std::string hardware, kernel;
  std::string phase;  // prefill or decode
  FitResult fit;
  AttentionSurface surface;  // what the fit still misses on the family's measured slices (none: empty)
  FitParams defaults;
  int train = 0, test = 0;
};

// A held-out point, predicted with the family's own figures (before) and with its fit (after).
struct ScoredPoint {
  std::string hardware, kernel, impl, phase;
  std::string phase_class;  // the calibration class the point is predicted with (prefill, extend, decode)
  std::string shape;    // phase, batch, lengths, heads, head size, KV dtype (when not bf16) and paging, as one label
  std::string problem;  // the same without the KV layout: implementations ranked against each other share it
  double measured_us = 0, before_us = 0, after_us = 0;
  const MeasurementRow* row = nullptr;  // the measurement scored (lives as long as the rows passed in)
  bool held_out = true;                 // false: a point the fit was made on
  bool other_shape = false;             // held out as a shape none of the family's measured slices has
};

// Held-out error of one (hardware, kernel family, implementation, phase).
struct HeldOutError {
  std::string hardware, kernel, impl, phase;
  std::size_t points = 0;
  double mape_before = 0, mape_after = 0, worst_after = 0;
  // After the fit, apart: the held-out lengths of shapes the family's surface measured, and the
  // shapes it did not (reached through the nearest measured one); 0 points where there are none.
  std::size_t measured_shape_points = 0, other_shape_points = 0;
  double measured_shape_mape = 0, other_shape_mape = 0;
};

// One device's fit predicting every measurement of another device.
struct CrossDeviceRow {
  std::string fitted_on, predicts, kernel, phase;
  std::size_t points = 0;
  double mape = 0, own_fit_mape = 0;
};

struct Validation {
  std::vector<std::int64_t> holdout_contexts;
  std::vector<FamilyFit> fits;
  std::vector<ScoredPoint> held_out;  // in the order of the measurement rows
  std::vector<HeldOutError> errors;
  std::vector<ScoredPoint> worst;  // up to ten, the largest error after the fit first
  RankingAgreement ranking;
  double worst_test_mape = 0;  // the largest MAPE after the fit over `errors`
  std::size_t devices = 0;     // hardware with a fit; cross-device rows need two
  std::vector<CrossDeviceRow> cross_device;
};

// Fits every (hardware, kernel family, phase class) with attention measurements on its training points.
std::vector<FamilyFit> fitAll(const Catalog& catalog, const std::vector<MeasurementRow>& rows,
                              const ValidationOptions& options);
// Every attention row scored, the points the fits were made on included (held_out false).
std::vector<ScoredPoint> scoreAllPoints(const Catalog& catalog, const std::vector<MeasurementRow>& rows,
                                        const ValidationOptions& options, const std::vector<FamilyFit>& fits);
Validation runValidation(const Catalog& catalog, const std::vector<MeasurementRow>& rows,
                         const ValidationOptions& options);

}  // namespace attnsim
