#pragma once
// What a kernel family's fitted roofline (KernelEfficiency) still misses on a device, measured: for
// each attention shape measured over a whole grid of batch sizes and lengths (a slice: heads, KV
// heads, head size, KV and query dtype, window, the engine that made the call), the log of measured
// over modelled time at each node of its (log2 batch, log2 length) grid. A call is corrected by the
// slice nearest its shape, interpolated bilinearly in log2 batch and log2 length and clamped at the
// grid's edges. Length is the context of a decode and the prompt of a prefill. A calibration's
// `surfaces:` section (hardware/calibrations/<id>.yaml) holds them; docs/COST_MODEL.md explains.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/YamlReader.hpp"

namespace attnsim {

// The KV-cache storage a slice was measured with: 16-bit, 8-bit (FP8, INT8) or 4-bit and below.
enum class KvWidth : std::uint8_t { Bits16, Bits8, Bits4 };
KvWidth kvWidthOf(double kv_elem_bytes);
const char* kvWidthName(KvWidth w);  // bf16, fp8, fp4

// Which attention problem a correction is looked up for.
struct SurfaceShape {
  std::string_view engine;  // empty: any engine's slices
  int heads = 0, kv_heads = 0, head_dim = 0;
  KvWidth kv = KvWidth::Bits16;
  bool fp8_query = false;
  std::int64_t window = 0;
  // A family whose slices are matched at the call's program count (KernelFamily::surface_batch_programs):
  // what is left to differ is each program's work, set by its GQA group, so the nearest slice is the
  // nearest in log2 group first (KV heads weigh a tenth).
  bool by_group = false;
};

struct SurfaceSlice {
  std::string engine;
  int heads = 0, kv_heads = 0, head_dim = 0;
  KvWidth kv = KvWidth::Bits16;
  bool fp8_query = false;
  std::int64_t window = 0;
  std::vector<double> log2_batch, log2_length;  // ascending
  std::vector<double> log_ratio;                // [batch][length], ln(measured / modelled)
  int points = 0;                               // nodes measured; the others filled from the nearest
};

struct AttentionSurface {
  std::vector<SurfaceSlice> slices;

  // The slice measured closest to `shape`: of its head size (null when the surface measured none),
  // the same KV width, query dtype and windowed-or-not where any slice has them, the engine's own
  // where it has one, then the nearest in log2 heads and KV heads (in log2 GQA group, then KV heads, when
  // `shape.by_group`).
  [[nodiscard]] const SurfaceSlice* nearest(const SurfaceShape& shape) const;
};

// A slice applied to one attention shape on one device: the corrected time at each node of the
// slice's grid (the model's time for that shape there, times the slice's measured ratio), made
// non-decreasing in batch and in length, since more work never takes less time (except where the model
// itself falls, a split rule changing its count: the corrected time falls as far and no further). Inside the grid a
// call's time is interpolated between nodes (log time, bilinear in log2 batch and log2 length); beyond
// it, the nearest edge's time scaled by the model from that edge on.
struct CorrectedGrid {
  std::vector<double> log2_batch, log2_length;
  std::vector<double> log_time;   // [batch][length], ln µs
  std::vector<double> log_model;  // [batch][length], ln of the model's µs at the node
};
// `node_model_us`: the model's time at each node, [batch][length].
CorrectedGrid correctedGrid(const SurfaceSlice& slice, const std::vector<double>& node_model_us);

// Where a call lies on a corrected grid: the point it is clamped to and the log time interpolated there.
struct GridLookup {
  bool inside = true;
  double batch = 0, length = 0;  // clamped onto the grid
  double log_time = 0;
};
GridLookup lookUp(const CorrectedGrid& grid, double batch, double length);
// The grid's corrected over modelled time at a batch and length (clamped onto the grid): the factor a
// call of another kind (an extend, a mixed batch's rows) of about that size takes from the measurements.
double correctionFactorAt(const CorrectedGrid& grid, double batch, double length);

// One kernel family and phase class's `surfaces:` entry, `slices:`: a list. The entry's `kernels:`
// twin holds the held-out residuals of the corrected predictions.
AttentionSurface parseAttentionSurface(const YamlReader& phase_entry);
// The entry's YAML, one flow map per slice (the inverse of parseAttentionSurface).
std::string attentionSurfaceYaml(const AttentionSurface& s, std::string_view indent);

}  // namespace attnsim
