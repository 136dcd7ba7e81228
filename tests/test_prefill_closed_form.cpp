// A prefill call's work units summed in closed form (runs of tiles, cost/AttentionCostPrefill.cpp, and
// their waves, cost/AttentionCostSchedule.cpp) cost what the tiles cost one by one
// (prefillWavesPerTile, every tile a kind of unit) over many shapes: causal and not, windows and
// top-k, GQA packed and not, tile sizes, prompts with prefixes, batches mixing prompts with decode
// rows, lockstep and rolling schedules, compute- and memory-bound tiles.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "TestSupport.hpp"
#include "cost/AttentionCostInternal.hpp"

namespace attnsim {
namespace {

using attention_cost::Rates;
using attention_cost::Waves;

struct PrefillCase {
  AttentionShape shape;
  KernelModel kernel;
  Rates rates;
  Rates single;
  std::vector<RequestGroup> groups;
  int single_splits = 1;
};

struct PrefillOutcome {
  Waves w;
  double time_us = 0;
  double time_with_bytes_us = 0;
  bool used_runs = false;
};

PrefillOutcome prefillCostOf(const PrefillCase& c, bool closed_form) {
  thread_local std::vector<attention_cost::UnitKind> units;
  thread_local std::vector<attention_cost::UnitRun> runs;
  thread_local std::vector<attention_cost::RunPhase> phases;
  units.clear();
  runs.clear();
  phases.clear();
  PrefillOutcome out;
  out.w.units = &units;
  out.w.runs = &runs;
  out.w.phases = &phases;
  if (closed_form) {
    attention_cost::prefillWaves(out.w, c.shape, c.kernel, c.rates, c.single, c.groups, 1.0, 16, c.single_splits);
  } else {
    attention_cost::prefillWavesPerTile(out.w, c.shape, c.kernel, c.rates, c.single, c.groups, 1.0, 16,
                                        c.single_splits);
  }
  out.used_runs = !runs.empty();
  // The waves alone, then under a streaming floor that binds now and then.
  out.time_us = attention_cost::kernelTime(out.w, c.rates, 0.0);
  const double floor_bytes = 0.5 * out.time_us * c.rates.byte_per_slot * c.rates.slots;
  // kernelTime sorts and cuts the units it is given: cost the waves afresh for the second time.
  units.clear();
  runs.clear();
  phases.clear();
  Waves again;
  again.units = &units;
  again.runs = &runs;
  again.phases = &phases;
  if (closed_form) {
    attention_cost::prefillWaves(again, c.shape, c.kernel, c.rates, c.single, c.groups, 1.0, 16, c.single_splits);
  } else {
    attention_cost::prefillWavesPerTile(again, c.shape, c.kernel, c.rates, c.single, c.groups, 1.0, 16,
                                        c.single_splits);
  }
  out.time_with_bytes_us = attention_cost::kernelTime(again, c.rates, floor_bytes);
  return out;
}

void expectSameCost(double closed, double tiles, const std::string& what) {
  EXPECT_LE(std::fabs(closed - tiles), 1e-9 * std::max({1e-6, std::fabs(closed), std::fabs(tiles)})) << what;
}

// Rates from compute-bound (tensor cores, H100-like) to memory-bound (few FLOP per slot), with or
// without per-key and per-unit times.
Rates randomSlotRates(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  Rates r;
  r.slots = std::array<double, 5>{1, 7, 108, 132, 264}[rng() % 5];
  r.flop_per_slot = std::pow(10.0, 4.0 + 4.0 * unit(rng));
  r.byte_per_slot = std::pow(10.0, 1.0 + 3.0 * unit(rng));
  r.key_us = rng() % 3 == 0 ? 0.0 : 1e-4 * unit(rng);
  r.slot_share = 1.0 + 3.0 * unit(rng);
  r.rolling = rng() % 3 == 0;
  r.unit_us = rng() % 2 == 0 ? 0.0 : 2.0 * unit(rng);
  return r;
}

std::vector<RequestGroup> randomPrefillGroups(std::mt19937_64& rng) {
  std::vector<RequestGroup> groups;
  const int prompts = rng() % 4 == 0 ? 2 : 1;
  for (int i = 0; i < prompts; ++i) {
    // Mostly prompts up to 9k tokens, now and then up to 64k.
    const std::int64_t q = 1 + static_cast<std::int64_t>(rng() % (rng() % 10 == 0 ? 65536 : 9000));
    const std::int64_t prefix = rng() % 3 == 0 ? static_cast<std::int64_t>(rng() % 5000) : 0;
    groups.push_back({1 + static_cast<std::int64_t>(rng() % 4), q, prefix + q});
  }
  if (rng() % 3 == 0)
    groups.push_back({1 + static_cast<std::int64_t>(rng() % 64), 1, 1 + static_cast<std::int64_t>(rng() % 40000)});
  return groups;
}

PrefillCase randomPrefillCase(std::mt19937_64& rng, const std::vector<KernelModel>& kernels,
                              const AttentionShape& base) {
  PrefillCase c;
  c.kernel = kernels[rng() % kernels.size()];
  c.kernel.tile_q = std::array<int, 5>{16, 64, 128, 128, 192}[rng() % 5];
  c.kernel.tile_kv = std::array<int, 6>{16, 32, 64, 128, 128, 176}[rng() % 6];
  c.kernel.tensor_math = rng() % 4 != 0;
  c.shape = base;
  const std::array<std::array<int, 2>, 6> heads{{{64, 8}, {32, 8}, {28, 4}, {48, 8}, {16, 16}, {40, 8}}};
  const auto& h = heads[rng() % heads.size()];
  c.shape.num_heads = h[0];
  c.shape.num_kv_heads = h[1];
  c.shape.causal = rng() % 5 != 0;
  c.shape.window = rng() % 4 == 0 ? 1 + static_cast<std::int64_t>(rng() % 5000) : 0;
  c.shape.top_k = rng() % 8 == 0 ? 1 + static_cast<std::int64_t>(rng() % 3000) : 0;
  c.rates = randomSlotRates(rng);
  c.single = rng() % 2 == 0 ? c.rates : randomSlotRates(rng);
  c.single.slots = c.rates.slots;
  c.single_splits = 1 + static_cast<int>(rng() % 4);
  c.groups = randomPrefillGroups(rng);
  return c;
}

std::string describe(const PrefillCase& c) {
  std::string out =
      fmt::format(", slots {}, rolling {}, tensor {}, groups", c.rates.slots, c.rates.rolling, c.kernel.tensor_math);
  for (const auto& g : c.groups) out += fmt::format(" {}x{}/{}", g.count, g.q_len, g.context);
  out += fmt::format(", FLOP/byte per slot {}/{}, key_us {}, unit_us {}", c.rates.flop_per_slot, c.rates.byte_per_slot,
                     c.rates.key_us, c.rates.unit_us);
  return out;
}

TEST(PrefillClosedForm, CostsWhatTheTilesCostOneByOne) {
  const Catalog& catalog = test::defaultCatalog();
  const HardwareProfile& hw = catalog.hardware("h100-sxm");
  // Packed (fa3, flashinfer, triton-unified) and unpacked (fa2, flex-attention) query heads.
  std::vector<KernelModel> kernels;
  for (const char* id : {"fa3", "flashinfer", "triton-unified", "fa2", "flex-attention"}) {
    kernels.push_back(resolveKernel(catalog.kernel(id), hw));
  }
  const AttentionShape base = resolveShape(catalog.model("llama-3.1-70b").primaryLayer(), catalog.kernel("fa3"),
                                           Phase::Prefill, KvCacheDtype::Auto, DType::BF16, 1);
  std::mt19937_64 rng(27);
  int with_runs = 0;
  constexpr int kCases = 3000;
  for (int i = 0; i < kCases; ++i) {
    const PrefillCase c = randomPrefillCase(rng, kernels, base);
    const PrefillOutcome closed = prefillCostOf(c, true);
    const PrefillOutcome tiles = prefillCostOf(c, false);
    const std::string what = fmt::format("case {}: tiles {}x{}, heads {}/{}, causal {}, window {}, top_k {}", i,
                                         c.kernel.tile_q, c.kernel.tile_kv, c.shape.num_heads, c.shape.num_kv_heads,
                                         c.shape.causal, c.shape.window, c.shape.top_k) +
                             describe(c);
    with_runs += closed.used_runs ? 1 : 0;
    EXPECT_FALSE(tiles.used_runs) << what;
    expectSameCost(closed.time_us, tiles.time_us, what + " time");
    expectSameCost(closed.time_with_bytes_us, tiles.time_with_bytes_us, what + " time with bytes");
    expectSameCost(closed.w.sum_work_us, tiles.w.sum_work_us, what + " sum_work_us");
    expectSameCost(closed.w.max_work_us, tiles.w.max_work_us, what + " max_work_us");
    expectSameCost(closed.w.unit_serial_us, tiles.w.unit_serial_us, what + " unit_serial_us");
    expectSameCost(closed.w.unit_stream_us, tiles.w.unit_stream_us, what + " unit_stream_us");
    expectSameCost(closed.w.flops_tiled, tiles.w.flops_tiled, what + " flops_tiled");
    expectSameCost(closed.w.stream_extra_bytes, tiles.w.stream_extra_bytes, what + " stream_extra_bytes");
    EXPECT_EQ(closed.w.ctas, tiles.w.ctas) << what;
  }
  // Most cases take the closed form (short prompts and some interleavings stay tile by tile).
  EXPECT_GT(with_runs, kCases / 3);
}

}  // namespace
}  // namespace attnsim
