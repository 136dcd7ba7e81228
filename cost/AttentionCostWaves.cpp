// The machine model under every fused attention kernel: units of work (CTAs) on SM/CU slots.
// Compute-bound units are scheduled in waves, longest first (the tail of a wave is idle time), and
// the whole kernel is never faster than the device streams the call's DRAM bytes: with
// memory-bound units a partial last wave draws more bandwidth per unit, so time grows with bytes
// rather than in steps of a wave.
#include <algorithm>
#include <cmath>

#include "cost/AttentionCostInternal.hpp"

namespace attnsim {

const char* boundName(Bound b) {
  switch (b) {
    case Bound::Compute:
      return "compute";
    case Bound::Memory:
      return "memory";
    case Bound::Latency:
      return "latency";
  }
  return "memory";
}

AttentionCost sequentialCalls(const AttentionCost& first, const AttentionCost& second) {
  AttentionCost out = first.time_us >= second.time_us ? first : second;
  out.flops = first.flops + second.flops;
  out.flops_tiled = first.flops_tiled + second.flops_tiled;
  out.bytes = first.bytes + second.bytes;
  out.bytes_min = first.bytes_min + second.bytes_min;
  out.ctas = first.ctas + second.ctas;
  out.compute_us = first.compute_us + second.compute_us;
  out.memory_us = first.memory_us + second.memory_us;
  out.kernel_us = first.kernel_us + second.kernel_us;
  out.fixed_us = first.fixed_us + second.fixed_us;
  out.time_us = first.time_us + second.time_us;
  out.launches = first.launches + second.launches;
  return out;
}

}  // namespace attnsim

namespace attnsim::attention_cost {

void addUnits(Waves& w, const Rates& r, double count, double unit_flops, double unit_bytes, double unit_keys,
              double unit_qo_bytes) {
  const double c = unit_flops / r.flop_per_slot;
  const double m = unit_bytes / (r.byte_per_slot * r.slot_share);
  const double work = std::max(c, m) + unit_keys * r.key_us + unit_qo_bytes / r.byte_per_slot;
  w.sum_work_us += count * work;
  if (work > w.max_work_us) {
    w.max_work_us = work;
    w.compute_dominant = c >= m;
  }
  w.ctas += count;
  w.flops_tiled += count * unit_flops;
  if (w.units) w.units->emplace_back(work, count);
}

namespace {

// Longest-first scheduling in waves of `slots` units: each wave lasts as long as its longest
// (first) unit. Adding a unit or lengthening one never shortens the schedule.
double waveTime(const Waves& w, double slots) {
  if (!w.units) return std::ceil(w.ctas / slots - 1e-9) * w.max_work_us;  // one kind of unit
  auto& units = *w.units;
  if (units.size() > 1) {
    std::sort(units.begin(), units.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  }
  double time = 0;
  double position = 0;  // units scheduled so far
  for (const auto& [work, count] : units) {
    // Waves that start inside [position, position + count): multiples of slots in that range.
    const double starts = std::floor((position + count - 1) / slots) - std::floor((position - 1) / slots);
    time += starts * work;
    position += count;
  }
  return time;
}

}  // namespace

KernelTime kernelTime(const Waves& w, const Rates& r, double dram_bytes) {
  const double waves = waveTime(w, r.slots);
  const double stream = (dram_bytes + w.stream_extra_bytes) / (r.byte_per_slot * r.slots);
  return {std::max(waves, stream), stream >= waves};
}

}  // namespace attnsim::attention_cost
