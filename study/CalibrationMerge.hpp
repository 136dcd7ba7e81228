#pragma once
// `calibrate --export` into a folder that overlays the catalog: a file replaces the catalog's file of
// the same name whole, so the new fits are merged with the fits the catalog already holds for that
// device instead of dropping them.
#include <string>
#include <vector>

namespace attnsim {

struct CalibrationMerge {
  std::string text;                   // the merged hardware/calibrations/<hardware>.yaml
  std::vector<std::string> added;     // families the catalog had no fit for
  std::vector<std::string> replaced;  // families refitted ("fa2 (decode, prefill)")
  std::vector<std::string> kept;      // the catalog's families this fit did not touch
};

// `fresh`: calibrationYaml's text for one device; `existing`: the catalog's file for it ("" when none),
// read from `existing_display`. A fresh (family, phase) entry replaces the catalog's; every other entry
// is kept with its own source, written into the entry. The fresh overheads replace the catalog's, which
// are kept when the fit has none.
CalibrationMerge mergeCalibrationYaml(const std::string& fresh, const std::string& existing,
                                      const std::string& existing_display);

}  // namespace attnsim
