#include "hardware/KernelEfficiency.hpp"

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
  }
  return "documented";
}

std::optional<Provenance> parseProvenance(std::string_view name) {
  for (const auto p : {Provenance::Measured, Provenance::Published, Provenance::Default}) {
    if (name == provenanceName(p)) return p;
  }
  return std::nullopt;
}

UncertaintyBand bandOf(const KernelEfficiency& e, double default_band) {
  switch (e.provenance) {
    case Provenance::Measured:
      if (e.heldout) return {e.heldout->p90_abs_rel_error, BandBasis::HeldOut};
      if (e.fit_mape > 0) return {kFitMapeToP90 * e.fit_mape, BandBasis::Fit};
      return {kPublishedBand, BandBasis::Documented};
    case Provenance::Published:
      return {kPublishedBand, BandBasis::Documented};
    case Provenance::Default:
      break;
  }
  return {default_band, BandBasis::Documented};
}

}  // namespace attnsim
