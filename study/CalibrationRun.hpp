#pragma once
// `attnsim calibrate` as a study: fit every kernel family's efficiencies and each device's launch
// and graph costs on the measurements of a store, record the fits in it, and write them as the
// catalog's hardware/calibrations YAML.
#include <map>
#include <string>
#include <vector>

#include "study/Validation.hpp"

namespace attnsim {

class Catalog;

struct CalibrationOptions {
  std::string hardware;      // empty: every hardware measured
  std::string holdout_note;  // the held-out contexts as the user gave them, quoted in each fit's source
  ValidationOptions validation;
};

// The fit's error on the family's held-out points of its phase class (the validation split:
// ValidationOptions' contexts, paged points of families also measured contiguously, mixed batches).
struct HeldOutStats {
  double mape = 0;
  double p90_abs_rel_error = 0;  // nearest-rank 90th percentile of |predicted / measured - 1|
  int points = 0;                // 0: nothing held out, no figures
};

// One family's fit, as stored.
struct FamilyCalibration {
  FamilyFit fit;
  CalibrationRow row;
  double train_mape_default = 0;  // the family's own figures on the same training points
  HeldOutStats heldout;
  std::string proxy;  // the family's measured_proxy: written before the entry's source
};

// Held-out statistics of the (hardware, kernel, phase class) points among `points`.
HeldOutStats heldOutStats(const std::vector<ScoredPoint>& points, const std::string& hardware,
                          const std::string& kernel, const std::string& phase_class);

// Every attention row of `rows` predicted with the family's own figures and with the fits of
// `families`, as CSV (one line per row: its shape, whether the fit saw it, measured and predicted
// µs): where a fit misses, by shape.
std::string residualsCsv(const Catalog& catalog, const std::vector<MeasurementRow>& rows,
                         const std::vector<FamilyCalibration>& families, const ValidationOptions& options);

// The attention rows to fit: every hardware's, or one profile's (which must be in the catalog).
std::vector<MeasurementRow> calibrationRows(const Store& store, const Catalog& catalog, const std::string& hardware);

// Fits each (hardware, kernel family, phase class) of `rows` and stores the fits.
std::vector<FamilyCalibration> calibrateFamilies(Store& store, const Catalog& catalog,
                                                 const std::vector<MeasurementRow>& rows,
                                                 const CalibrationOptions& options);

// Fits the launch and graph costs of the store's devices (options.hardware only, when set) and
// stores them. Where the synthetic decoder's steps were measured, the eager launch cost is their
// host time per step-DAG node, and the bare launch is kept beside it.
std::vector<OverheadFit> calibrateOverheads(Store& store, const Catalog& catalog, const CalibrationOptions& options);

// hardware -> the text of its hardware/calibrations/<hardware>.yaml; a device without family fits
// gets no file.
std::map<std::string, std::string> calibrationYaml(const std::vector<FamilyCalibration>& families,
                                                   const std::vector<OverheadFit>& overheads);

}  // namespace attnsim
