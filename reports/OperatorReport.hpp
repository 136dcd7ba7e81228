#pragma once
// The validation report's section on the step's operators beside attention: held-out errors of the
// GEMM surfaces and all-reduce fits a store's rows give (study/OperatorCalibration), and how the
// catalog's own fits (a device's, or transferred from its architecture's calibrated device) predict
// those rows: the check of transfer to a GPU the fits never saw, when its rows are imported.
#include <string>
#include <vector>

#include "study/OperatorCalibration.hpp"

namespace attnsim {

class Catalog;

// "" when the rows hold no gemm or allreduce measurement.
std::string operatorValidationMarkdown(const Catalog& catalog, const std::vector<MeasurementRow>& rows);

}  // namespace attnsim
