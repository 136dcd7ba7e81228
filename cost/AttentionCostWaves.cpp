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

void addUnits(Waves& w, const Rates& r, double count, double unit_flops, double unit_bytes, double unit_keys,
              double unit_qo_bytes, double own_dram_bytes) {
  const double c = unit_flops / r.flop_per_slot;
  const double m = unit_bytes / (r.byte_per_slot * r.slot_share);
  const double serial = r.unit_us + unit_keys * r.key_us + unit_qo_bytes / r.byte_per_slot;
  const double work = std::max(c, m) + serial;
  const double stream = own_dram_bytes / (r.byte_per_slot * r.slots);
  w.sum_work_us += count * work;
  w.max_work_us = std::max(w.max_work_us, work);
  w.unit_serial_us = std::max(w.unit_serial_us, serial);
  w.unit_stream_us = std::max(w.unit_stream_us, stream);
  w.ctas += count;
  w.flops_tiled += count * unit_flops;
  if (w.units) w.units->push_back({work, serial, stream, count});
}

namespace {

constexpr double kWhole = 1e-9;  // counts are whole numbers held in doubles

// The schedule's time.
// Lockstep (the default): a wave lasts as long as its longest unit, or as the device takes to stream
// the bytes of all its units plus the serial per-key and Q/O work of the unit with the most of it,
// whichever is longer: a unit's own bytes overlap its math, but no unit finishes before the bandwidth
// has delivered them, and the next wave's bytes wait for that tail.
// Rolling (KernelFamily::rolling_waves): the waves' longest units still follow each other, but the
// bytes of all waves stream back to back and only the longest serial tail is added once: the SM
// holds more latency-bound units than the slots keep busy, so one unit's tail hides behind the next
// one's loads (flex-decoding: 5 resident CTAs per SM, each visiting a key every ~50 ns).
struct Schedule {
  double us = 0;
  bool rolling = false;
  double chain_us = 0;  // rolling: Σ of the waves' longest units
  double bytes_us = 0;  // rolling: Σ of the waves' streaming times
  double tail_us = 0;   // rolling: the longest serial tail
  void wave(double longest_us, double serial_us, double wave_bytes_us, double times = 1) {
    if (rolling) {
      chain_us += times * longest_us;
      bytes_us += times * wave_bytes_us;
      tail_us = std::max(tail_us, serial_us);
      return;
    }
    const double streamed = wave_bytes_us + serial_us;
    us += times * std::max(longest_us, streamed);
  }
  // After the last wave: a rolling schedule's time from its sums.
  void finish() {
    if (!rolling) return;
    us = std::max(chain_us, bytes_us + tail_us);
  }
};

// Longest-first scheduling in waves of `slots` units: the next wave's units start when slots free,
// and the slots of a bandwidth-bound wave free together. So a unit past a full wave costs its own
// time at its slot share of bandwidth (FA2 decode, 264 -> 272 units on 264 slots: 1.5x, measured
// 1.46-1.57x on the H100, measurements/data/h100/wave_edges.csv), not a share of the call's bytes.
// Adding a unit or lengthening one never shortens the schedule.
Schedule waveSchedule(const Waves& w, double slots, bool rolling) {
  Schedule out;
  out.rolling = rolling;
  if (!w.units) {  // one kind of unit
    const double full = std::floor(w.ctas / slots + kWhole);
    out.wave(w.max_work_us, w.unit_serial_us, slots * w.unit_stream_us, full);
    const double rest = w.ctas - full * slots;
    if (rest > kWhole) out.wave(w.max_work_us, w.unit_serial_us, rest * w.unit_stream_us);
    return out;
  }
  auto& units = *w.units;
  if (units.size() > 1) {
    std::sort(units.begin(), units.end(), [](const auto& a, const auto& b) { return a.work_us > b.work_us; });
  }
  double filled = 0;  // units in the open wave
  double longest = 0;
  double serial = 0;
  double bytes_us = 0;
  for (const auto& kind : units) {
    double remaining = kind.count;
    if (filled > 0) {  // complete the open wave
      const double take = std::min(remaining, slots - filled);
      filled += take;
      serial = std::max(serial, kind.serial_us);
      bytes_us += take * kind.stream_us;
      remaining -= take;
      if (filled + kWhole < slots) continue;
      out.wave(longest, serial, bytes_us);
      filled = 0;
    }
    const double full = std::floor(remaining / slots + kWhole);
    if (full > 0) out.wave(kind.work_us, kind.serial_us, slots * kind.stream_us, full);
    remaining -= full * slots;
    if (remaining > kWhole) {
      filled = remaining;
      longest = kind.work_us;
      serial = kind.serial_us;
      bytes_us = remaining * kind.stream_us;
    }
  }
  if (filled > 0) out.wave(longest, serial, bytes_us);
  return out;
}

}  // namespace

double kernelTime(const Waves& w, const Rates& r, double dram_bytes) {
  Schedule waves = waveSchedule(w, r.slots, r.rolling);
  waves.finish();
  const double stream = (dram_bytes + w.stream_extra_bytes) / (r.byte_per_slot * r.slots);
  return std::max(waves.us, stream);
}

// A roof sets the call's time when the call takes at most twice that roof's time; a call that takes
// longer waits on something neither roof counts (a serial per-key loop, a launch), so it is latency-bound.
Bound roofBound(const AttentionCost& c) {
  const double roof_us = std::max(c.compute_us, c.memory_us);
  if (roof_us < kRoofShare * c.time_us) return Bound::Latency;
  return c.compute_us >= c.memory_us ? Bound::Compute : Bound::Memory;
}

}  // namespace attnsim::attention_cost
