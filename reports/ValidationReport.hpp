#pragma once
// Predicted versus measured attention times: fit on the training points, report on held-out
// ones, per kernel family and phase; ranking agreement of implementations per shape; a cross-
// device check; Markdown and an SVG scatter plot.
#include <string>
#include <vector>

#include "study/Calibration.hpp"

namespace attnsim {

class Catalog;

struct ValidationOptions {
  std::vector<std::int64_t> holdout_contexts{1024, 8192};
};

struct FamilyFit {
  std::string hardware, kernel;
  std::string phase;  // prefill or decode
  FitResult fit;
  FitParams defaults;
  int train = 0, test = 0;
};

struct ValidationSummary {
  std::vector<FamilyFit> fits;
  std::string markdown;
  std::string svg;
  double worst_test_mape = 0;
  double top1_agreement = 0;
  double mean_kendall_tau = 0;
};

// Fits every (hardware, kernel family) with attention measurements on its training points.
std::vector<FamilyFit> fitAll(const Catalog& catalog, const std::vector<MeasurementRow>& rows,
                              const ValidationOptions& options);
ValidationSummary validationReport(const Catalog& catalog, const std::vector<MeasurementRow>& rows,
                                   const ValidationOptions& options);

}  // namespace attnsim
