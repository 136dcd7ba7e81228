#pragma once
// Fitting a kernel family's measured surface (hardware/AttentionSurface.hpp): after the roofline's
// four parameters are fitted, each measured slice (one attention shape over a grid of batch sizes and
// lengths) keeps the log of measured over modelled time at each node. Which rows make a slice, which
// slices are measured densely enough to be one, and the corrected prediction of a measured point.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "hardware/AttentionSurface.hpp"
#include "study/Calibration.hpp"

namespace attnsim {

// The shape a measured row belongs to, when it is a row a surface is made of: a decode of one token
// per request, or a prefill of a whole prompt (no prefix).
struct SliceKey {
  std::string engine;
  int heads = 0, kv_heads = 0, head_dim = 0;
  KvWidth kv = KvWidth::Bits16;
  bool fp8_query = false;
  std::int64_t window = 0;
  [[nodiscard]] auto tied() const { return std::tie(engine, heads, kv_heads, head_dim, kv, fp8_query, window); }
  bool operator<(const SliceKey& o) const { return tied() < o.tied(); }
  bool operator==(const SliceKey& o) const { return tied() == o.tied(); }
};
std::optional<SliceKey> sliceKeyOf(const MeasurementRow& row);

// A slice becomes part of a surface with at least this many training rows over at least
// kMinSliceAxisValues batch sizes and as many lengths: a grid, not scattered points.
inline constexpr int kMinSlicePoints = 40;
inline constexpr int kMinSliceAxisValues = 3;

// The slices measured as grids, per (hardware, kernel family, phase class), from the rows outside
// `held_out_contexts`.
class DenseSlices {
 public:
  DenseSlices(const std::vector<MeasurementRow>& rows, const std::vector<std::int64_t>& held_out_contexts);
  // The row's family has a surface and the row lies on one of its slices.
  [[nodiscard]] bool onSlice(const MeasurementRow& row) const;
  // The row's family has slices of the row's head size but the row's shape is not one of them: a
  // shape the surface reaches only through its nearest slice, kept out of every fit.
  [[nodiscard]] bool otherShape(const MeasurementRow& row) const;

 private:
  using Family = std::tuple<std::string, std::string, std::string>;  // hardware, kernel, phase class
  std::set<std::pair<Family, SliceKey>> dense_;
  std::set<std::pair<Family, int>> head_dims_;  // the head sizes each family's slices measured
};

// The points a family's four roofline parameters are fitted on: where some of its training points lie
// off its measured slices (other head sizes, other measurement sets), those, since the surface
// corrects the slices whatever the parameters; else all of them.
std::vector<FitPoint> parameterPoints(const std::vector<FitPoint>& points, const DenseSlices& dense);

// The surface of a fitted family from its training points: each dense slice's grid of mean
// ln(measured attention / modelled attention), the KV-cache write the row also timed taken out.
AttentionSurface fitAttentionSurface(const std::vector<FitPoint>& points, const KernelModel& base,
                                     const DeviceModel& device, const FitParams& params);

// A measured point's model time with the surface's nearest slice applied to the attention call. The
// slice applied to a shape (its grid's nodes predicted as the point is) is kept in `cache`.
using CorrectedGridCache =
    std::map<std::tuple<const SurfaceSlice*, int, int, int, int, double, std::int64_t, std::int64_t, bool, double>,
             CorrectedGrid>;
double predictCorrected(const FitPoint& p, const KernelModel& base, const DeviceModel& device, const FitParams& params,
                        const AttentionSurface* surface, CorrectedGridCache& cache);

}  // namespace attnsim
