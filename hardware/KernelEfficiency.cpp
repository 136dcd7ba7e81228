#include "hardware/KernelEfficiency.hpp"

#include <algorithm>

namespace attnsim {

const char* provenanceName(Provenance p) {
  switch (p) {
    case Provenance::Measured:
      return "measured";
    case Provenance::Published:
      return "published";
    case Provenance::Default:
      return "default";
  }
  return "default";
}

const char* provenanceLabel(Provenance p) {
  switch (p) {
    case Provenance::Measured:
      return "measured fit";
    case Provenance::Published:
      return "published figure";
    case Provenance::Default:
      return "catalog default";
  }
  return "catalog default";
}

const char* bandBasisName(BandBasis b) {
  switch (b) {
    case BandBasis::HeldOut:
      return "heldout";
    case BandBasis::Fit:
      return "fit";
    case BandBasis::Documented:
      return "documented";
    case BandBasis::ThinFit:
      return "thin_fit";
  }
  return "documented";
}

std::optional<Provenance> parseProvenance(std::string_view name) {
  for (const auto p : {Provenance::Measured, Provenance::Published, Provenance::Default}) {
    if (name == provenanceName(p)) return p;
  }
  return std::nullopt;
}

bool isThinFit(int points) { return points > 0 && points < kMinPointsPerParameter * kFitParameters; }

namespace {

// A measured fit's band from its residuals: held out when there are enough, else in-sample scaled.
UncertaintyBand residualBand(const KernelEfficiency& e) {
  if (e.heldout && e.heldout->points >= kMinHeldOutPoints) return {e.heldout->p90_abs_rel_error, BandBasis::HeldOut};
  if (e.fit_points > 0 && e.fit_points <= kFitParameters) return {kPublishedBand, BandBasis::ThinFit};
  const double out_of_sample =
      e.fit_points > 0 ? static_cast<double>(e.fit_points) / (e.fit_points - kFitParameters) : 1.0;
  if (e.fit_mape > 0) return {kFitMapeToP90 * e.fit_mape * out_of_sample, BandBasis::Fit};
  if (e.heldout) return {e.heldout->p90_abs_rel_error, BandBasis::HeldOut};
  return {kPublishedBand, BandBasis::Documented};
}

}  // namespace

UncertaintyBand bandOf(const KernelEfficiency& e, double default_band) {
  switch (e.provenance) {
    case Provenance::Measured: {
      const UncertaintyBand b = residualBand(e);
      // Another device's fit: its residuals there, at least the documented transfer band.
      if (!e.transferred_from.empty()) return {std::max(b.band, kTransferredBand), BandBasis::Documented};
      if (isThinFit(e.fit_points) && b.band < kPublishedBand) return {kPublishedBand, BandBasis::ThinFit};
      if (isThinFit(e.fit_points)) return {b.band, BandBasis::ThinFit};
      return b;
    }
    case Provenance::Published:
      return {kPublishedBand, BandBasis::Documented};
    case Provenance::Default:
      break;
  }
  return {default_band, BandBasis::Documented};
}

}  // namespace attnsim
