#include "hardware/DeepGemmPick.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace attnsim {

namespace {

std::int64_t deepGemmCeilDiv(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
std::int64_t deepGemmAlign(std::int64_t a, std::int64_t b) { return deepGemmCeilDiv(a, b) * b; }

// The call's sizes as the pick reads them: whole numbers, at least 1.
struct DeepGemmShape {
  std::int64_t m, n, k, sms;
  DeepGemmShape(double m_rows, double n_cols, double k_depth, int sms_count)
      : m(static_cast<std::int64_t>(std::max(1.0, m_rows))),
        n(static_cast<std::int64_t>(std::max(1.0, n_cols))),
        k(static_cast<std::int64_t>(std::max(1.0, k_depth))),
        sms(std::max(1, sms_count)) {}
};

constexpr std::int64_t kSm90SharedMemory = 232448;
constexpr std::int64_t kDeepGemmBlockK = 128;  // FP8: 128 bytes of K per stage
constexpr std::int64_t kDeepGemmMaxStages = 16;

// Stages of the pipeline that fit beside the C tile, barriers and the 1D2D kernel's B scales.
std::int64_t deepGemmStages(std::int64_t bm, std::int64_t bn, std::int64_t k) {
  const std::int64_t cd = deepGemmAlign(bm * bn * 2, 1024);
  const std::int64_t barriers = kDeepGemmMaxStages * 8 * 2;
  const std::int64_t uniform_sfb = kDeepGemmBlockK % bn == 0 ? 1 : 2;
  const std::int64_t extra_sfb = deepGemmAlign(deepGemmCeilDiv(k, kDeepGemmBlockK) * 4 * uniform_sfb, 8);
  const std::int64_t per_stage = bm * kDeepGemmBlockK + bn * kDeepGemmBlockK + deepGemmAlign(bm * 4, 128);
  return std::min((kSm90SharedMemory - cd - barriers - extra_sfb) / per_stage, kDeepGemmMaxStages);
}

// get_layout_info's cycle estimate: L1 and L2 bytes per block times blocks over the bandwidths, divided by
// the last wave's use of the SMs; a cluster is never taken for one wave.
double deepGemmCycles(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t bm, std::int64_t bn, std::int64_t cm,
                      std::int64_t cn, std::int64_t sms, std::int64_t& waves) {
  const std::int64_t blocks = deepGemmCeilDiv(m, bm) * deepGemmCeilDiv(n, bn);
  waves = deepGemmCeilDiv(blocks, sms);
  const auto l2_bandwidth = static_cast<std::int64_t>(std::min(64.0 * static_cast<double>(sms), 8e6 / 1.3e3));
  const std::int64_t l1_bandwidth = 128 * sms;
  const std::int64_t l2_ab = k * (bm / cn + bn / cm);
  const std::int64_t l1_ab = k * (bm + bn);
  const std::int64_t l1_tc = k * (std::max<std::int64_t>(64, bm) + bn) + bm * bn * 2;
  const std::int64_t cd = bm * bn * 2;
  const std::int64_t l2 = (l2_ab + cd) * blocks / l2_bandwidth;
  const std::int64_t l1 = (l1_ab + l1_tc + cd) * blocks / l1_bandwidth;
  if (cm * cn > 1 && waves <= 1) return std::numeric_limits<double>::max();
  const double wave_efficiency = static_cast<double>(blocks) / static_cast<double>(waves * sms);
  return std::floor(static_cast<double>(std::max(l1, l2)) / wave_efficiency);
}

}  // namespace

DeepGemmTiles deepGemmSm90Tiles(double m_rows, double n_cols, double k_depth, int sms_count) {
  const auto [m, n, k, sms] = DeepGemmShape(m_rows, n_cols, k_depth, sms_count);
  std::array<std::int64_t, 5> block_ms{64, 128, 0, 0, 256};
  if (m <= 16) block_ms[2] = 16;
  if (m <= 32) block_ms[3] = 32;
  DeepGemmTiles best;
  double best_cycles = std::numeric_limits<double>::infinity();
  for (std::int64_t cm = 1; cm <= 2; ++cm) {
    for (std::int64_t cn = 1; cn <= 2; ++cn) {
      if (cm * cn > 2 || sms % (cm * cn) != 0) continue;
      for (std::int64_t bm : block_ms) {
        for (std::int64_t bn = 16; bn <= 192 && bm > 0; bn += 16) {
          const std::int64_t over = bn - kDeepGemmBlockK;  // the 1D2D kernel's unroll requirement
          if (bn > kDeepGemmBlockK && bn % over != 0 && kDeepGemmBlockK % over != 0) continue;
          if (bm > 128 && bn > 128) continue;
          const std::int64_t stages = deepGemmStages(bm, bn, k);
          if (stages < 3 || (bm * bn < std::int64_t{128} * 192 && stages < 4)) continue;
          std::int64_t waves = 0;
          const double cycles = deepGemmCycles(m, n, k, bm, bn, cm, cn, sms, waves);
          if (cycles >= best_cycles) continue;
          best_cycles = cycles;
          best = {static_cast<int>(bm),
                  static_cast<int>(bn),
                  static_cast<int>(cm * cn),
                  static_cast<int>(stages),
                  deepGemmCeilDiv(m, bm) * deepGemmCeilDiv(n, bn),
                  waves};
        }
      }
    }
  }
  return best;
}

bool deepGemmSingleWaveDeepTile(const DeepGemmTiles& t) { return t.waves == 1 && t.cluster == 1 && t.stages <= 4; }

namespace {

// One remembered pick: the shape's key (⌈M/64⌉, N, K, SMs) and whether it is in the class.
struct SingleWaveEntry {
  std::int64_t row_blocks = 0, n = 0, k = 0, sms = 0;  // row_blocks 0: empty
  bool single_wave = false;
};
constexpr std::size_t kSingleWaveSlots = 1024;  // a power of two: the slot is the hash's low bits

std::size_t singleWaveSlot(std::int64_t row_blocks, std::int64_t n, std::int64_t k, std::int64_t sms) {
  std::uint64_t h = 1469598103934665603ULL;
  for (const std::int64_t v : {row_blocks, n, k, sms}) h = (h ^ static_cast<std::uint64_t>(v)) * 1099511628211ULL;
  return static_cast<std::size_t>(h ^ (h >> 29)) & (kSingleWaveSlots - 1);
}

}  // namespace

bool deepGemmSingleWaveClass(double m_rows, double n_cols, double k_depth, int sms_count) {
  const auto [m, n, k, sms] = DeepGemmShape(m_rows, n_cols, k_depth, sms_count);
  if (m <= 64 || static_cast<double>(m) * static_cast<double>(n) > 256.0 * 128 * static_cast<double>(sms)) return false;
  const std::int64_t row_blocks = deepGemmCeilDiv(m, 64);
  thread_local std::array<SingleWaveEntry, kSingleWaveSlots> cache{};
  SingleWaveEntry& e = cache[singleWaveSlot(row_blocks, n, k, sms)];
  if (e.row_blocks != row_blocks || e.n != n || e.k != k || e.sms != sms) {
    // Any M of the same ⌈M/64⌉ picks the same tiles: its last row stands for them.
    const DeepGemmTiles t = deepGemmSm90Tiles(static_cast<double>(row_blocks * 64), static_cast<double>(n),
                                              static_cast<double>(k), static_cast<int>(sms));
    e = {row_blocks, n, k, sms, deepGemmSingleWaveDeepTile(t)};
  }
  return e.single_wave;
}

}  // namespace attnsim
