#pragma once
// How well a kernel uses a device: the roofline's efficiencies and fixed costs. Kernel families
// carry defaults per architecture; a device's calibration (hardware/calibrations/) overrides them.
// Each set of figures says where it came from and how far a prediction made with it may be off
// (docs/COST_MODEL.md "Uncertainty").
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace attnsim {

struct AttentionSurface;

// Where a kernel's efficiency figures come from.
enum class Provenance : std::uint8_t {
  Measured,   // fitted to this device's measurements (a calibration)
  Published,  // a figure from a published table or paper, marked `provenance: published` in the catalog
  Default,    // attnsim's own default, not checked against any measurement
};
// What a prediction's relative band rests on.
enum class BandBasis : std::uint8_t {
  HeldOut,     // p90 absolute relative error on points kept out of the fit
  Fit,         // a fit without held-out figures: its in-sample MAPE scaled to a p90 (kFitMapeToP90)
  Documented,  // the documented band of the provenance (no residuals to derive one from)
  ThinFit,     // a fit from fewer than kMinPointsPerParameter points per parameter: at least kPublishedBand
};

// "measured", "published", "default" (JSON and the store) and the words the text output uses.
const char* provenanceName(Provenance p);
const char* provenanceLabel(Provenance p);
const char* bandBasisName(BandBasis b);
// The inverse of provenanceName; nullopt for any other text.
std::optional<Provenance> parseProvenance(std::string_view name);

// The documented bands (docs/COST_MODEL.md "Uncertainty" justifies each figure).
inline constexpr double kDefaultBand = 0.50;              // attention kernel on attnsim defaults
inline constexpr double kPublishedBand = 0.40;            // attention kernel on a published figure
inline constexpr double kNonAttentionDefaultBand = 0.25;  // uncalibrated GEMM, elementwise and host/launch parts
inline constexpr double kTransferredBand = 0.25;          // a fit measured on another device of the same architecture
inline constexpr double kFitMapeToP90 = 2.06;             // p90 / mean of a half-normal |error|
// A calibration fits four parameters (compute and memory efficiency, fixed µs, per-key ns). Its
// in-sample error understates the error on new points by about n / (n - p) (generalized
// cross-validation's estimate of the leave-one-out error), and below three points per parameter the
// fit says little: its band is at least the published one (kPublishedBand).
inline constexpr int kFitParameters = 4;
inline constexpr int kMinPointsPerParameter = 3;
// Held-out residuals on fewer points than this are too few for a p90; the fit's own band then applies.
inline constexpr int kMinHeldOutPoints = 4;

// Held-out residuals of a fit (a calibration's `heldout:` entry).
struct HeldOutResiduals {
  double mape = 0;
  double p90_abs_rel_error = 0;
  int points = 0;
};

// Efficiency parameters of the roofline: achieved fraction of the device's peak FLOP/s and memory
// bandwidth, and the fixed time of one launch on the GPU (prologue, epilogue, tail).
struct KernelEfficiency {
  double compute_efficiency = 0.5;
  double memory_efficiency = 0.75;
  double fixed_us = 3.0;
  double key_ns = 0;        // per key a work unit visits: loop and softmax work that does not scale with head width
  double host_plan_us = 0;  // CPU work per forward before the first launch (plan(), scheduler metadata)
  std::string source;
  Provenance provenance = Provenance::Default;
  double fit_mape = 0;                      // measured: in-sample MAPE of the fit (0: not known)
  int fit_points = 0;                       // measured: the points fitted (0: not known)
  std::optional<HeldOutResiduals> heldout;  // measured: residuals on held-out points
  // measured: what the fitted roofline still misses, per measured shape (a calibration's `surfaces:`)
  std::shared_ptr<const AttentionSurface> surface;
  std::string transferred_from;  // measured on this other device of the architecture (empty: its own)
};

// A relative band: a prediction t is expected within [t / (1 + band), t · (1 + band)] (bandLow,
// bandHigh), an interval symmetric in ratio, so a band above 100% (a family whose held-out p90 error
// exceeds 100%) still has a positive lower end.
struct UncertaintyBand {
  double band = kDefaultBand;
  BandBasis basis = BandBasis::Documented;
};
// The band of predictions made with `e`: held-out p90 when the fit has one on at least
// kMinHeldOutPoints points, else the fit's MAPE scaled to a p90 and to out-of-sample (n / (n - p)),
// else the provenance's documented band (`default_band` for Default). A thin fit (isThinFit) gets at
// least kPublishedBand, whatever its residuals.
UncertaintyBand bandOf(const KernelEfficiency& e, double default_band = kDefaultBand);
// A fit from fewer than kMinPointsPerParameter x kFitParameters points.
bool isThinFit(int points);

constexpr double bandLow(double us, double band) { return us / (1 + band); }
constexpr double bandHigh(double us, double band) { return us * (1 + band); }

// Two predicted times are tied within uncertainty when their bands overlap: the faster one's
// upper end reaches the slower one's lower end.
constexpr bool withinBands(double fast_us, double fast_band, double slow_us, double slow_band) {
  return bandHigh(fast_us, fast_band) >= bandLow(slow_us, slow_band);
}

}  // namespace attnsim
