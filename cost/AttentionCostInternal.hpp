#pragma once
// Shared by the attention cost's translation units, not offered outside the cost stage:
// AttentionTraffic.cpp counts FLOPs and bytes, UnfusedAttention.cpp costs library-kernel paths,
// AttentionCost.cpp spreads fused kernels' work units over the machine. The small helpers are
// inline because the split search calls them in its hot loop.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "cost/AttentionCost.hpp"

namespace attnsim::attention_cost {

inline constexpr std::int64_t kNoCap = std::numeric_limits<std::int64_t>::max() / 4;
inline constexpr double kBytesPerIndex = 4;  // int32 page-table entries
inline constexpr double kPartialBytes = 4;   // split-KV partial outputs and LSE in fp32

inline std::int64_t capOf(const AttentionShape& s) {
  std::int64_t cap = kNoCap;
  if (s.window > 0) cap = std::min(cap, s.window);
  if (s.top_k > 0) cap = std::min(cap, s.top_k);
  return cap;
}

// DRAM bytes a unit reads per key it visits: the KV row, divided over the query heads of its group
// when they each read it (no GQA packing: `reread` reads per stored byte, less what L2 keeps), and the
// key's page-table entry.
inline double kvBytesPerKey(const AttentionShape& s, const KernelModel& k, double reread, double index_bytes_per_key) {
  return s.kv_token_width * s.kv_elem_bytes * (k.gqa_packing ? 1.0 : reread / s.groupSize()) + index_bytes_per_key;
}

inline std::int64_t ceilDiv(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
inline std::int64_t roundUp(std::int64_t a, std::int64_t m) { return ceilDiv(a, m) * m; }

struct Traffic {
  double kv_read = 0;    // page-granular KV bytes, before GQA re-reads
  double kv_unique = 0;  // token-granular KV bytes
  double page_tables = 0;
  double q_bytes = 0;
  double o_bytes = 0;
  double tokens = 0;
  double flops = 0;
};

struct Rates {
  double flop_per_slot = 0;  // FLOP per µs one slot achieves
  double byte_per_slot = 0;  // even share of the achieved bandwidth, bytes per µs
  double slots = 1;
  double key_us = 0;  // per key a unit visits
  // How many times byte_per_slot one unit may draw while fewer units than slots run (the kernel
  // family's slot_bandwidth_share; the call as a whole never exceeds the device's bandwidth).
  double slot_share = 1;
  bool rolling = false;  // KernelModel::rolling_waves
  double unit_us = 0;    // KernelModel::unit_us
};

// One kind of equal work units: time on one slot (its math or bytes, overlapped, then its serial
// per-key and Q/O work), time to stream its DRAM bytes at the whole device's bandwidth, and how many.
struct UnitKind {
  double work_us = 0;
  double serial_us = 0;  // the part of work_us that does not overlap the bytes
  double stream_us = 0;
  double count = 0;
};

// One phase of a UnitRun: the units of one tile position in the run's period, in period 0.
struct RunPhase {
  double work_us = 0;
  double serial_us = 0;
  double flops = 0;  // one unit's tiled FLOPs
  std::int64_t units = 0;
};

// Runs of prefill tiles whose work grows by the same step from one period of tiles to the next (a
// causal prompt's query tiles: keys grow linearly with the tile index). Period p (p = 0 the longest)
// holds each phase's units, each shorter than in period 0 by p × step_us; its serial time and FLOPs
// fall by p × serial_step_us and p × flops_step. Every unit of period p is at least as long as every
// unit of period p + 1, so the units sorted longest first are the periods in order. Runs stream no
// bytes of their own (own_dram_bytes 0), so their waves last as long as their longest unit.
struct UnitRun {
  std::int64_t first_phase = 0;  // into Waves::phases
  std::int64_t phases = 0;       // sorted longest first
  std::int64_t periods = 0;
  double step_us = 0;
  double serial_step_us = 0;
  double flops_step = 0;
};

// Work units spread over the machine.
struct Waves {
  double sum_work_us = 0;  // Σ over units of their time on one slot
  double max_work_us = 0;
  double unit_stream_us = 0;  // one kind of unit: its bytes at the whole device's bandwidth
  double unit_serial_us = 0;  // one kind of unit: its per-key and Q/O work
  double ctas = 0;
  double flops_tiled = 0;
  // Bytes the streaming floor adds beyond the call's DRAM bytes: a mixed call's single-token rows
  // stream at their decode rate, expressed in bytes at the call's rate.
  double stream_extra_bytes = 0;
  // Distinct unit kinds; reused between calls so the hot path does not allocate once warm.
  std::vector<UnitKind>* units = nullptr;
  // Runs of tiles summed in closed form (with `units` set); without them, every tile is a UnitKind.
  std::vector<UnitRun>* runs = nullptr;
  std::vector<RunPhase>* phases = nullptr;
};

// One unit's times on one slot (addUnits): c its math, m its bytes at the bandwidth it may draw.
struct UnitTimes {
  double c = 0, m = 0, serial = 0, work = 0, stream = 0;
};
UnitTimes unitTimes(const Rates& r, double unit_flops, double unit_bytes, double unit_keys, double unit_qo_bytes,
                    double own_dram_bytes);

// A unit's time on one slot: its math or its bytes at the bandwidth one unit can draw, the per-key
// loop and softmax work, and its Q load and O store, which bracket the KV loop and are not hidden.
// `own_dram_bytes`: what the unit alone must bring from DRAM, so its wave cannot finish before the
// device has delivered them: a decode unit's share of its request's and KV head's keys (row tiles of
// one group share them through L2); 0 for a prefill tile, whose DRAM bytes are the keys it is first to
// read and which its request's later tiles share, so only the call as a whole is held to them.
void addUnits(Waves& w, const Rates& r, double count, double unit_flops, double unit_bytes, double unit_keys,
              double unit_qo_bytes, double own_dram_bytes);

// Adds a run whose phases are already in w.phases (from run.first_phase): its units' sums to w.
void addRun(Waves& w, const UnitRun& run);

// The longest-first wave schedule, each wave lasting as long as its longest unit or as the device
// takes to stream the wave's bytes, whichever is longer; and the call never faster than the machine
// streams its DRAM bytes (units that read the same KV at once, such as the row tiles of one request,
// share it through L2).
double kernelTime(const Waves& w, const Rates& r, double dram_bytes);

// The wave schedule's time alone, without the streaming floor (cost/AttentionCostSchedule.cpp).
// Sorts w.units and may split w.runs.
double scheduleTime(const Waves& w, double slots, bool rolling);

// The fraction of a call's time the larger roof (compute_us or memory_us) must reach to set it.
inline constexpr double kRoofShare = 0.5;
// Compute or memory when that roof's time is at least kRoofShare of the call's; else latency.
Bound roofBound(const AttentionCost& c);

// Prefill and extend: query tiles of one query head, or of one KV head's packed query heads; a mixed
// call's single-token rows at `single` rates, their KV cut into `single_splits` (cost/AttentionCostPrefill.cpp).
void prefillWaves(Waves& w, const AttentionShape& s, const KernelModel& k, const Rates& call_rates, const Rates& single,
                  std::span<const RequestGroup> groups, double reread, std::int64_t page_size, int single_splits);
// The reference prefillWaves sums in closed form: every tile one UnitKind (w.runs is ignored).
void prefillWavesPerTile(Waves& w, const AttentionShape& s, const KernelModel& k, const Rates& call_rates,
                         const Rates& single, std::span<const RequestGroup> groups, double reread,
                         std::int64_t page_size, int single_splits);

// vLLM FLEX_ATTENTION's query blocks (KernelFamily::query_blocks_span_requests): a request of fewer than
// tile_q new tokens shares its block with others and the block visits all their pages
// (cost/AttentionCostBlocks.cpp).
void spanningBlockWaves(Waves& w, const AttentionShape& s, const KernelModel& k, const Rates& r,
                        std::span<const RequestGroup> groups, double reread, double index_bytes_per_key);

Traffic countTraffic(const AttentionShape& s, const KernelModel& k, std::span<const RequestGroup> groups,
                     std::int64_t page_size);

// sinks: the sink logits' bytes; dequant: the math factor of a quantized KV cache.
AttentionCost predictUnfused(const AttentionShape& s, const KernelModel& kernel, const DeviceModel& device, Phase phase,
                             std::span<const RequestGroup> groups, const Traffic& t, double sinks, double dequant);

// The call's measured correction (cost/MeasuredCorrection.cpp): a decode of one token per request or a
// prefill of whole prompts takes the kernel's grid time at its batch and mean length (beyond the grid,
// the edge's time scaled by the model from the edge on); an extend or a mixed launch, its parts'
// corrected over modelled time. Other calls keep the model's time.
void applyMeasuredCorrection(AttentionCost& out, const AttentionShape& shape, const KernelModel& kernel,
                             const DeviceModel& device, Phase phase, std::span<const RequestGroup> groups,
                             std::int64_t page_size);

}  // namespace attnsim::attention_cost
