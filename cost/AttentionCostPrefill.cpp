// Prefill and extend work units: query tiles over the keys they attend, with their first-read DRAM bytes.
// A long prompt's tiles are summed in closed form: past its first tile, a causal prompt's tiles repeat
// with a period (the tiles over which the keys grow by whole key tiles), each phase of the period
// growing by the same keys per period, so runs of periods are UnitRuns (cost/AttentionCostSchedule.cpp).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "backends/KernelFamily.hpp"
#include "cost/AttentionCostInternal.hpp"

namespace attnsim::attention_cost {

namespace {

// Prefill and extend: each unit is one query tile of one query head, or of one KV head's packed
// query heads (the tile's rows are query positions × group); a causal tile computes its diagonal
// block whole. Each request group's DRAM bytes go to its units by the keys each is the first to read
// (newKeys), so a decode row in a mixed batch carries its own KV, not the prefill's, and a longer
// prompt never lightens a tile.
struct PrefillTiles {
  std::int64_t cap, bm, per_position;  // packed rows per query position (the group, or 1)
  const AttentionShape& s;
  const KernelModel& k;

  [[nodiscard]] std::int64_t count(const RequestGroup& g) const { return ceilDiv(g.q_len * per_position, bm); }
  [[nodiscard]] std::int64_t rows(const RequestGroup& g, std::int64_t t) const {
    return std::min(g.q_len * per_position, (t + 1) * bm) - t * bm;
  }
  [[nodiscard]] std::int64_t start(const RequestGroup& g, std::int64_t t) const {
    return std::max<std::int64_t>(0, g.prefix() + t * bm / per_position + 1 - cap);
  }
  [[nodiscard]] std::int64_t keys(const RequestGroup& g, std::int64_t t) const {
    if (!s.causal) return roundUp(std::min(g.context, cap), k.tile_kv);
    const std::int64_t last = g.prefix() + (t * bm + rows(g, t) - 1) / per_position;
    return roundUp(last + 1 - start(g, t), k.tile_kv);
  }
  [[nodiscard]] std::int64_t end(const RequestGroup& g, std::int64_t t) const {
    return g.prefix() + (t * bm + rows(g, t) - 1) / per_position + 1;
  }
  // The keys tile t is the first of its request's tiles to read: tiles run in order and share what
  // an earlier tile of their head fetched (L2), so DRAM bytes go to the tile that first needs them.
  [[nodiscard]] std::int64_t newKeys(const RequestGroup& g, std::int64_t t) const {
    if (!s.causal) return t == 0 ? std::min(g.context, cap) : 0;
    if (t > 0) return end(g, t) - end(g, t - 1);
    return end(g, 0) - std::max<std::int64_t>(0, g.prefix() + 1 - cap);
  }
  // Σ newKeys over the request's tiles.
  [[nodiscard]] std::int64_t allNewKeys(const RequestGroup& g) const {
    if (!s.causal) return std::min(g.context, cap);
    return end(g, count(g) - 1) - std::max<std::int64_t>(0, g.prefix() + 1 - cap);
  }
  // Tiles after which a causal tile's keys have grown by whole key tiles and its rows start at the
  // same offset in a query position: the tiles repeat with this period, shifted by whole key tiles.
  [[nodiscard]] std::int64_t period() const {
    if (!s.causal) return 1;
    const std::int64_t span = per_position * k.tile_kv;
    return span / std::gcd(bm, span);
  }
};

// One tile's arguments to addUnits, and what decides the form of its time.
struct TileUnit {
  double flops, bytes, keys, qo_bytes, own_dram_bytes;
  bool flat;         // non-causal, or under the window or top-k cap: the keys stop growing
  bool masked_full;  // the diagonal block masks a whole tile of keys
};

// One request group's tiles at its rates.
struct GroupTiles {
  const PrefillTiles& tiles;
  const RequestGroup& g;
  const Rates& r;
  double count;  // units per tile: requests × heads × KV splits
  double parts;
  double width;
  double bytes_per_key;

  [[nodiscard]] TileUnit unit(std::int64_t i) const {
    const AttentionShape& s = tiles.s;
    const std::int64_t keys = tiles.keys(g, i);
    const auto unit_keys = static_cast<double>(keys);
    const auto rows = static_cast<double>(tiles.rows(g, i));
    // Tensor-core tiles compute whole MMA blocks of 16 rows: a tile with fewer valid rows (a short
    // or single-token sequence) computes them rounded up to 16, as the decode units do; kernels pick
    // a smaller query tile for short rows (FlashInfer's CTA_TILE_Q 16, Triton's BLOCK_M 16).
    const double rows_computed =
        tiles.k.tensor_math ? static_cast<double>(std::min(tiles.bm, roundUp(tiles.rows(g, i), 16))) : rows;
    // A causal tile's diagonal block is masked element by element: one more pass of per-key work.
    const double masked = s.causal ? std::min(unit_keys, static_cast<double>(tiles.bm)) : 0.0;
    const double unit_bytes = static_cast<double>(tiles.newKeys(g, i)) * bytes_per_key;
    return {2.0 * rows_computed * unit_keys * width / parts,
            unit_bytes / parts,
            (unit_keys + masked) / parts,
            rows * width * s.act_bytes,
            g.q_len == 1 ? unit_bytes / parts : 0.0,
            !s.causal || tiles.start(g, i) > 0,
            keys >= tiles.bm};
  }
  void add(Waves& w, std::int64_t from, std::int64_t to) const {
    for (std::int64_t i = from; i < to; ++i) {
      const TileUnit u = unit(i);
      addUnits(w, r, count, u.flops, u.bytes, u.keys, u.qo_bytes, u.own_dram_bytes);
    }
  }
};

GroupTiles groupTiles(const PrefillTiles& tiles, const RequestGroup& g, const Rates& r, double heads, double dram,
                      int single_splits) {
  const double parts = g.q_len == 1 ? single_splits : 1;  // a single-token row's KV splits
  const auto keys = static_cast<double>(tiles.allNewKeys(g));
  const double bytes_per_key = keys > 0 ? dram / (keys * static_cast<double>(g.count) * heads) : 0;
  return {tiles,
          g,
          r,
          static_cast<double>(g.count) * heads * parts,
          parts,
          static_cast<double>(tiles.s.d_qk + tiles.s.d_v),
          bytes_per_key};
}

// Do a and b agree to rounding?
bool near(double a, double b) { return std::fabs(a - b) <= 1e-12 * std::max({1.0, std::fabs(a), std::fabs(b)}); }

// The form of one tile's time: flat or growing keys, whole masked block, math or bytes the longer.
struct TileForm {
  TileUnit unit;
  UnitTimes t;
  [[nodiscard]] bool sameForm(const TileForm& o) const {
    return unit.flat == o.unit.flat && unit.masked_full == o.unit.masked_full && (t.c >= t.m) == (o.t.c >= o.t.m);
  }
};

TileForm formOf(const GroupTiles& gt, const TileUnit& u) {
  return {u, unitTimes(gt.r, u.flops, u.bytes, u.keys, u.qo_bytes, u.own_dram_bytes)};
}
TileForm formOf(const GroupTiles& gt, std::int64_t i) { return formOf(gt, gt.unit(i)); }

// `periods` whole periods of flat tiles from `first` (non-causal, or under the cap at both ends, so
// between too): each phase's tiles are equal, one kind of units. False, with nothing added, otherwise.
bool addFlatPeriods(Waves& w, const GroupTiles& gt, std::int64_t first, std::int64_t periods) {
  const std::int64_t period = gt.tiles.period();
  const std::int64_t last = first + (periods - 1) * period;
  for (std::int64_t phase = 0; phase < period; ++phase) {
    const TileUnit top_unit = gt.unit(last + phase);
    if (!top_unit.flat) return false;  // a causal prompt's tiles: decided before their times are costed
    const TileUnit low_unit = gt.unit(first + phase);
    if (!low_unit.flat) return false;
    const TileForm top = formOf(gt, top_unit);
    const TileForm low = formOf(gt, low_unit);
    if (top.t.work != low.t.work || top.t.serial != low.t.serial || top.unit.flops != low.unit.flops) return false;
  }
  for (std::int64_t phase = 0; phase < period; ++phase) {
    const TileUnit u = gt.unit(first + phase);
    addUnits(w, gt.r, gt.count * static_cast<double>(periods), u.flops, u.bytes, u.keys, u.qo_bytes, u.own_dram_bytes);
  }
  return true;
}

// Merges adjacent phases of equal units (sorted longest first), so the schedule walks fewer of them;
// returns the new end.
std::vector<RunPhase>::iterator mergeEqualPhases(std::vector<RunPhase>::iterator begin,
                                                 std::vector<RunPhase>::iterator end) {
  auto out = begin;
  for (auto it = begin + 1; it != end; ++it) {
    if (it->work_us == out->work_us && it->serial_us == out->serial_us && it->flops == out->flops) {
      out->units += it->units;
    } else {
      *++out = *it;
    }
  }
  return out + 1;
}

// `periods` whole periods of growing tiles from `first` as one UnitRun, if every phase keeps one form
// from its first period to its last (each test is monotone in the tile index, so it holds between)
// and grows by the same step, a period's longest unit no longer than the previous period's shortest.
// False, with nothing added, otherwise.
bool addGrowingRun(Waves& w, const GroupTiles& gt, std::int64_t first, std::int64_t periods) {
  const std::int64_t period = gt.tiles.period();
  const std::int64_t last = first + (periods - 1) * period;
  const TileForm top0 = formOf(gt, last);
  const TileForm low0 = formOf(gt, first);
  if (top0.unit.flat) return false;
  const auto p = static_cast<double>(periods - 1);
  UnitRun run{static_cast<std::int64_t>(w.phases->size()),
              0,
              periods,
              (top0.t.work - low0.t.work) / p,
              (top0.t.serial - low0.t.serial) / p,
              (top0.unit.flops - low0.unit.flops) / p};
  bool ok = true;
  for (std::int64_t phase = 0; phase < period && ok; ++phase) {
    const TileForm top = phase == 0 ? top0 : formOf(gt, last + phase);
    const TileForm low = phase == 0 ? low0 : formOf(gt, first + phase);
    ok = top.sameForm(low) && top.sameForm(top0) && near((top.t.work - low.t.work) / p, run.step_us) &&
         near((top.t.serial - low.t.serial) / p, run.serial_step_us) &&
         near((top.unit.flops - low.unit.flops) / p, run.flops_step);
    w.phases->push_back({top.t.work, top.t.serial, top.unit.flops, std::llround(gt.count)});
  }
  const auto begin = w.phases->begin() + run.first_phase;
  if (ok) {
    std::sort(begin, w.phases->end(), [](const auto& a, const auto& b) { return a.work_us > b.work_us; });
    ok = run.step_us > 0 && run.step_us * (1 + 1e-12) >= begin->work_us - w.phases->back().work_us;  // ties round
  }
  if (!ok) {
    w.phases->erase(begin, w.phases->end());
    return false;
  }
  w.phases->erase(mergeEqualPhases(begin, w.phases->end()), w.phases->end());
  run.phases = static_cast<std::int64_t>(w.phases->end() - begin);
  w.runs->push_back(run);
  addRun(w, run);
  return true;
}

// Whether every phase of the period starting at tile `at` keeps the form of the period at `first`.
bool periodKeepsForm(const GroupTiles& gt, std::int64_t first, std::int64_t at) {
  for (std::int64_t phase = 0; phase < gt.tiles.period(); ++phase) {
    if (!formOf(gt, at + phase).sameForm(formOf(gt, first + phase))) return false;
  }
  return true;
}

// Tiles [from, to) of one group: whole periods as runs where the tiles' time keeps one form; where it
// changes (the tiles cross from memory- to compute-bound as their keys grow), the range splits at the
// first period whose form differs, found by bisection (a form changes once along a prompt), so a long
// prompt costs a few runs however long it is; the rest tile by tile.
void addSegment(Waves& w, const GroupTiles& gt, std::int64_t from, std::int64_t to) {
  constexpr std::int64_t kMaxPeriod = 128;
  const std::int64_t period = gt.tiles.period();
  const std::int64_t periods = (to - from) / period;
  if (periods < 2 || period > kMaxPeriod) return gt.add(w, from, to);
  const std::int64_t whole = from + periods * period;
  if (!addFlatPeriods(w, gt, from, periods) && !addGrowingRun(w, gt, from, periods)) {
    if (periods < 4) return gt.add(w, from, to);
    std::int64_t same = 1, differs = periods;  // periods [0, same) keep the first one's form
    if (!periodKeepsForm(gt, from, from + period)) differs = 1;
    while (differs - same > 1) {
      const std::int64_t mid = std::midpoint(same, differs);
      (periodKeepsForm(gt, from, from + mid * period) ? same : differs) = mid;
    }
    // One form throughout (the run failed on its steps): halve instead.
    const std::int64_t split = differs == periods ? periods / 2 : std::max<std::int64_t>(differs, 1);
    addSegment(w, gt, from, from + split * period);
    return addSegment(w, gt, from + split * period, to);
  }
  gt.add(w, whole, to);
}

void addGroups(Waves& w, const AttentionShape& s, const KernelModel& k, const Rates& call_rates, const Rates& single,
               std::span<const RequestGroup> groups, double reread, std::int64_t page_size, int single_splits,
               bool runs) {
  const bool packed = k.family && k.family->packsQueryHeadsInPrefill();
  const PrefillTiles tiles{capOf(s), std::max(1, k.tile_q), packed ? s.groupSize() : 1, s, k};
  const double heads = packed ? s.num_kv_heads : s.num_heads;
  for (const auto& g : groups) {
    const Traffic t = attention_cost::countTraffic(s, k, std::span<const RequestGroup>(&g, 1), page_size);
    const double dram = t.q_bytes + t.o_bytes + t.kv_read * reread + t.page_tables;
    const Rates& r = g.q_len == 1 ? single : call_rates;
    w.stream_extra_bytes += dram * (call_rates.byte_per_slot / r.byte_per_slot - 1);
    const GroupTiles gt = groupTiles(tiles, g, r, heads, dram, single_splits);
    const std::int64_t n = tiles.count(g);
    // The first tile reads the prefix's keys and the last may be short: both stay single tiles.
    if (!runs || g.q_len == 1 || n < 3) {
      gt.add(w, 0, n);
      continue;
    }
    gt.add(w, 0, 1);
    addSegment(w, gt, 1, n - 1);
    gt.add(w, n - 1, n);
  }
}

}  // namespace

// A mixed call's single-token rows run at `single` (the kernel's decode-only efficiencies): the same
// program over the same bytes, so a row costs what it costs in a decode-only call of this kernel.
void prefillWaves(Waves& w, const AttentionShape& s, const KernelModel& k, const Rates& call_rates, const Rates& single,
                  std::span<const RequestGroup> groups, double reread, std::int64_t page_size, int single_splits) {
  addGroups(w, s, k, call_rates, single, groups, reread, page_size, single_splits,
            w.units != nullptr && w.runs != nullptr && w.phases != nullptr);
}

void prefillWavesPerTile(Waves& w, const AttentionShape& s, const KernelModel& k, const Rates& call_rates,
                         const Rates& single, std::span<const RequestGroup> groups, double reread,
                         std::int64_t page_size, int single_splits) {
  addGroups(w, s, k, call_rates, single, groups, reread, page_size, single_splits, false);
}

}  // namespace attnsim::attention_cost
