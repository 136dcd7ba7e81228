#pragma once
// The cost of one attention call (one layer, one forward) of one kernel family on one device:
// exact FLOP and byte counts, then a roofline over the kernel's work units (tiles × heads ×
// KV splits) spread in waves over the device's SMs/CUs. No allocation: the simulator evaluates
// millions of these per minute.
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "backends/KernelFamily.hpp"
#include "core/Formats.hpp"
#include "cost/Workload.hpp"

namespace attnsim {

struct AttentionLayerSpec;
struct AttentionSurface;
struct CorrectedGrid;
struct HardwareProfile;
struct SurfaceSlice;
struct KernelFamily;

// The geometry the kernel computes on, per tensor-parallel rank.
struct AttentionShape {
  int num_heads = 0;        // query heads
  int num_kv_heads = 0;     // KV heads (MLA absorbed: one latent head shared by all query heads)
  int d_qk = 0;             // query/key width per head (MLA absorbed: kv_lora_rank + rope = 576)
  int d_v = 0;              // value width (MLA absorbed: kv_lora_rank = 512)
  int kv_token_width = 0;   // KV elements stored per token per KV head (MHA: d_qk + d_v; MLA: 576)
  std::int64_t window = 0;  // left window in tokens, 0 = full
  std::int64_t top_k = 0;   // sparse attention: keys per query, 0 = dense
  bool causal = true;
  bool sinks = false;
  double act_bytes = 2;      // Q and O element bytes
  double kv_elem_bytes = 2;  // KV element bytes including block scales
  bool kv_quantized = false;

  [[nodiscard]] int groupSize() const { return num_heads / num_kv_heads; }
};

// A kernel family's parameters on one device, resolved once.
struct KernelModel {
  const KernelFamily* family = nullptr;
  int tile_q = 128;
  int tile_kv = 64;
  // Tile shapes by head dim (max_head_dim 0 ends the list); a rule's key tile also scales the
  // per-key time, which is fitted at tile_kv: a kernel stepping by fewer keys pays more per key.
  std::array<HeadDimTiles, 4> tiles_by_head_dim{};
  // A decode call's rules for one query head per KV head (KernelFamily::group1_decode on this device's
  // architecture; max_head_dim 0 ends the list): that kernel's time from the grouped kernel's.
  std::array<Group1DecodeRule, 6> group1_rules{};
  bool split_kv = false;
  bool gqa_packing = false;
  bool query_blocks_span_requests = false;  // KernelFamily::query_blocks_span_requests
  bool paged_native = true;                 // reads whole pages through a page table
  bool paged_emulated = false;              // per-token index table (page table expanded to page size 1)
  bool unfused = false;                     // materializes the score matrix
  double working_bytes = 0;  // unfused: bytes per score / K-V copy element when upcast (0: the activations')
  bool tensor_math = true;
  int ctas_per_sm = 1;
  int max_splits = 32;
  // Paged calls split over the page pool (FlexAttention under PagedAttention): the pool's tokens,
  // 0 for a serving pool far larger than any one sequence (then a paged call never splits).
  bool split_spans_pool = false;
  bool row_tiles_reread_keys = false;     // KernelFamily::row_tiles_reread_keys
  bool splits_mixed_decode_rows = false;  // KernelFamily::splits_mixed_decode_rows
  double kv_pool_tokens = 0;
  double slot_bandwidth_share = 1;  // the family's (KernelFamily::slot_bandwidth_share)
  bool rolling_waves = false;       // KernelFamily::rolling_waves
  double paged_key_us = 0;          // KernelFamily::paged_key_ns, in µs
  double unit_us = 0;               // KernelFamily::unit_us: every work unit's own fixed time
  double prefill_unit_us = 0;       // KernelFamily::prefill_unit_us: a prefill tile's own fixed time
  double merge_launch_us = -1;      // KernelFamily::merge_launch_us (< 0: fixed_us again)
  SplitPolicy split_policy;         // how the kernel picks its split count (search: the fastest)
  double compute_efficiency = 0.5;
  double memory_efficiency = 0.75;
  double fixed_us = 3.0;
  double key_us = 0;                   // per key a work unit visits
  double quantized_kv_overhead = 0.1;  // extra math to dequantize FP8/FP4 KV (attnsim default)
  double quantized_kv_key_factor = 1;  // KernelFamily::quantized_kv_key_factor
  const std::string* efficiency_source = nullptr;
  // Where the efficiencies come from and the relative band of this kernel's predicted time.
  Provenance provenance = Provenance::Default;
  BandBasis band_basis = BandBasis::Documented;
  double band = kDefaultBand;
  // The device's measured correction of this kernel's roofline (a calibration's surfaces), and its
  // slice nearest the problem predicted, applied to that shape (Predictor resolves it once per shape).
  const AttentionSurface* surface = nullptr;
  const CorrectedGrid* corrected = nullptr;
  // An extend launch's single-token rows: the decode kernel for the shape with its grid (same family and
  // geometry only), whose corrected and modelled times weigh those rows' share of the correction.
  const KernelModel* decode_rows = nullptr;
};

struct DeviceModel {
  double tensor_flops_per_us = 0;  // dense peak for the activation dtype
  double vector_flops_per_us = 0;  // FP32 vector peak
  double bytes_per_us = 0;         // memory bandwidth
  double l2_bytes = 0;
  double l2_bytes_per_us = 0;  // HardwareProfile::l2_bandwidth_gbps (0: unknown)
  int compute_units = 0;
};

// Which roof sets a call's time (compute_us or memory_us, when it takes at least half the time), or
// neither: latency (a serial per-key loop, a launch, an idle machine).
enum class Bound { Compute, Memory, Latency };
const char* boundName(Bound b);

struct AttentionCost {
  double flops = 0;        // exact: 2·Hq·Σ attended keys·(d_qk + d_v)
  double flops_tiled = 0;  // what the tiles compute (padding, causal diagonal tiles whole)
  double bytes = 0;        // DRAM traffic: Q, O, KV (page granular, re-reads), page tables, scales, split partials
  double bytes_min = 0;    // Q + O + each needed KV byte once
  double ctas = 0;
  double slots = 0;  // work units the machine holds at once: SMs × the kernel's CTAs per SM (0: unfused)
  int splits = 1;
  int launches = 1;  // kernels launched: the attention kernel, its split merge, a second call
  // Launches whose gap before them the step's timeline adds: a merge with its own merge_launch_us
  // counts its gap in that time (so the split search, which sees only the call, also sees the gap).
  int gapped_launches = 1;
  double compute_us = 0;  // whole-machine roofline terms
  double memory_us = 0;
  double kernel_us = 0;  // waves × per-unit work
  double fixed_us = 0;
  double time_us = 0;
  double utilization = 0;          // busy fraction of the SM slots over kernel_us
  double measured_correction = 1;  // time_us includes this factor from the kernel's surface slice
  Bound bound = Bound::Memory;

  [[nodiscard]] double achievedTflops() const { return time_us > 0 ? flops / time_us / 1e6 : 0; }
  [[nodiscard]] double achievedGBps() const { return time_us > 0 ? bytes / time_us / 1e3 : 0; }
};

// The slice of `kernel.surface` nearest `shape`, applied to it: its grid's nodes predicted with
// `kernel` (uncorrected) on `device`. Null when the kernel has no surface or none of the shape's head size.
std::shared_ptr<const CorrectedGrid> correctedGridFor(const AttentionShape& shape, const KernelModel& kernel,
                                                      const DeviceModel& device, Phase phase, std::int64_t page_size,
                                                      std::string_view engine);

// A surface's slice as it applies to `shape`: itself, or, for a family whose slices are matched at the
// call's program count (KernelFamily::surface_batch_programs), the slice with its batch axis moved to
// the shape's batch of as many programs (nodes below one request dropped).
struct SurfaceSlice;
SurfaceSlice surfaceSliceFor(const SurfaceSlice& nearest, const AttentionShape& shape, const KernelModel& kernel,
                             Phase phase);

// A decode of one query head per KV head on a kernel with group-1 rules (KernelModel::group1_rules):
// the rule that covers its head size and KV width, else null.
const Group1DecodeRule* group1RuleFor(const AttentionShape& shape, const KernelModel& kernel, Phase phase);
// A group-1 decode corrected through a slice of the grouped kernel (its GQA group above 1): the slice's
// nodes are predicted for the grouped kernel at the call's KV heads and the slice's group (the shape
// returned), whose time at the same programs does not depend on the group it packs, and the corrected
// grid is then turned into the group-1 kernel's times by the rule (toGroup1Times).
AttentionShape groupedShapeFor(const AttentionShape& shape, const SurfaceSlice& slice);
void toGroup1Times(CorrectedGrid& grid, const Group1DecodeRule& rule);

// What a surface is looked up by for a resolved shape: heads, sizes, KV width, FP8 query, window.
struct SurfaceShape;
SurfaceShape surfaceShapeOf(const AttentionShape& shape, std::string_view engine);

// Σ over one request's query tokens of the keys each attends (causal, window, top-k, tree).
double attendedKeys(const RequestGroup& g, const AttentionShape& s);
// Distinct KV tokens one request reads.
std::int64_t uniqueKvTokens(const RequestGroup& g, const AttentionShape& s);

// `single_token_rows`: for a one-launch mixed call, the efficiencies the same kernel reaches on a
// decode-only call; its single-token rows run as they do there (nullptr: the call's own).
AttentionCost predictAttention(const AttentionShape& shape, const KernelModel& kernel, const DeviceModel& device,
                               Phase phase, std::span<const RequestGroup> groups, std::int64_t page_size,
                               const KernelModel* single_token_rows = nullptr);

// Two attention calls one after another (a mixed batch whose decode rows run in their own call): their
// times, FLOPs and bytes add; the bound is the longer call's.
AttentionCost sequentialCalls(const AttentionCost& first, const AttentionCost& second);

// Resolution from the catalog (done once per scenario, outside the hot path). An MLA layer takes the
// latent geometry in decode, under a latent-cache family, or when `absorbed` says the engine runs
// this call absorbed (an MLA extend under BackendCaps::mla_extend); else per-head K/V.
AttentionShape resolveShape(const AttentionLayerSpec& layer, const KernelFamily& kernel, Phase phase,
                            KvCacheDtype kv_dtype, DType dtype, int tp, bool absorbed = false);
// The family's parameters on a device: the device's calibration for the phase class when it has
// one, else the family's figure for the architecture, else its default.
KernelModel resolveKernel(const KernelFamily& kernel, const HardwareProfile& hw, Phase phase = Phase::Prefill);
// The calibration class of a phase: prefill, extend, or decode (decode and verify).
const char* calibrationClass(Phase phase);
DeviceModel resolveDevice(const HardwareProfile& hw, DType dtype);

}  // namespace attnsim
