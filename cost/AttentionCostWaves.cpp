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
  out.gapped_launches = first.gapped_launches + second.gapped_launches;
  return out;
}

}  // namespace attnsim

namespace attnsim::attention_cost {

UnitTimes unitTimes(const Rates& r, double unit_flops, double unit_bytes, double unit_keys, double unit_qo_bytes,
                    double own_dram_bytes) {
  UnitTimes t;
  t.c = unit_flops / r.flop_per_slot;
  t.m = unit_bytes / (r.byte_per_slot * r.slot_share);
  t.serial = r.unit_us + unit_keys * r.key_us + unit_qo_bytes / r.byte_per_slot;
  t.work = std::max(t.c, t.m) + t.serial;
  t.stream = own_dram_bytes / (r.byte_per_slot * r.slots);
  return t;
}

void addUnits(Waves& w, const Rates& r, double count, double unit_flops, double unit_bytes, double unit_keys,
              double unit_qo_bytes, double own_dram_bytes) {
  const UnitTimes t = unitTimes(r, unit_flops, unit_bytes, unit_keys, unit_qo_bytes, own_dram_bytes);
  w.sum_work_us += count * t.work;
  w.max_work_us = std::max(w.max_work_us, t.work);
  w.unit_serial_us = std::max(w.unit_serial_us, t.serial);
  w.unit_stream_us = std::max(w.unit_stream_us, t.stream);
  w.ctas += count;
  w.flops_tiled += count * unit_flops;
  if (w.units) w.units->push_back({t.work, t.serial, t.stream, count});
}

void addRun(Waves& w, const UnitRun& run) {
  const auto n = static_cast<double>(run.periods);
  const double below = n * (n - 1) / 2;  // Σ p over the periods
  for (std::int64_t i = 0; i < run.phases; ++i) {
    const RunPhase& ph = (*w.phases)[static_cast<std::size_t>(run.first_phase + i)];
    const auto units = static_cast<double>(ph.units);
    w.sum_work_us += units * (n * ph.work_us - below * run.step_us);
    w.flops_tiled += units * (n * ph.flops - below * run.flops_step);
    w.ctas += units * n;
    w.max_work_us = std::max(w.max_work_us, ph.work_us);
    w.unit_serial_us = std::max(w.unit_serial_us, ph.serial_us);
  }
}

double kernelTime(const Waves& w, const Rates& r, double dram_bytes) {
  const double waves_us = scheduleTime(w, r.slots, r.rolling);
  const double stream = (dram_bytes + w.stream_extra_bytes) / (r.byte_per_slot * r.slots);
  return std::max(waves_us, stream);
}

// A roof sets the call's time when the call takes at most twice that roof's time; a call that takes
// longer waits on something neither roof counts (a serial per-key loop, a launch), so it is latency-bound.
Bound roofBound(const AttentionCost& c) {
  const double roof_us = std::max(c.compute_us, c.memory_us);
  if (roof_us < kRoofShare * c.time_us) return Bound::Latency;
  return c.compute_us >= c.memory_us ? Bound::Compute : Bound::Memory;
}

}  // namespace attnsim::attention_cost
