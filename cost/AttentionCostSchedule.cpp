// The wave schedule of the work units (cost/AttentionCostWaves.cpp): kinds of equal units one by one,
// and UnitRuns of tiles in closed form, so that a prefill call costs the same at any prompt length.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "cost/AttentionCostInternal.hpp"

namespace attnsim::attention_cost {

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
  // Full waves of units that stream no bytes of their own (runs): each lasts as long as its longest
  // unit, since no unit's serial work exceeds its whole time.
  void streamFree(double longest_sum_us, double serial_us) {
    if (rolling) {
      chain_us += longest_sum_us;
      tail_us = std::max(tail_us, serial_us);
      return;
    }
    us += longest_sum_us;
  }
  // After the last wave: a rolling schedule's time from its sums.
  void finish() {
    if (!rolling) return;
    us = std::max(chain_us, bytes_us + tail_us);
  }
};

// The wave being filled: its units, its longest unit and serial tail, its units' streaming time.
struct OpenWave {
  double filled = 0;
  double longest = 0;
  double serial = 0;
  double bytes_us = 0;
};

// Σ_{i<n} floor((a·i + b) / m) for a, b >= 0 and m >= 1, by Euclid's reduction in O(log) steps.
std::int64_t floorSum(std::int64_t n, std::int64_t m, std::int64_t a, std::int64_t b) {
  std::int64_t sum = 0;
  while (n > 0) {
    if (a >= m) {
      sum += n * (n - 1) / 2 * (a / m);
      a %= m;
    }
    if (b >= m) {
      sum += n * (b / m);
      b %= m;
    }
    const std::int64_t y = a * n + b;
    if (y < m) break;
    n = y / m;
    b = y % m;
    std::swap(m, a);
  }
  return sum;
}

// A run's units by rank, longest first: rank = period × per_period + offset, the offset falling in a
// phase (longest phase first).
struct RunRanks {
  const UnitRun& run;
  std::span<const RunPhase> phases;
  std::int64_t per_period = 0;

  RunRanks(const Waves& w, const UnitRun& r)
      : run(r),
        phases(std::span<const RunPhase>(*w.phases).subspan(static_cast<std::size_t>(r.first_phase),
                                                            static_cast<std::size_t>(r.phases))) {
    for (const auto& ph : phases) per_period += ph.units;
  }
  [[nodiscard]] std::int64_t units() const { return run.periods * per_period; }
  [[nodiscard]] double work(std::int64_t rank) const {
    const std::int64_t period = rank / per_period;
    const double down = static_cast<double>(period) * run.step_us;
    std::int64_t offset = rank % per_period;
    for (const auto& ph : phases) {
      if (offset < ph.units) return ph.work_us - down;
      offset -= ph.units;
    }
    return phases.back().work_us - down;
  }
  // The longest serial tail among ranks [lo, hi): each phase's first unit there has its longest.
  [[nodiscard]] double maxSerial(std::int64_t lo, std::int64_t hi) const {
    double out = 0;
    const std::int64_t period = lo / per_period;
    const std::int64_t offset = lo % per_period;
    std::int64_t begin = 0;
    for (const auto& ph : phases) {
      const std::int64_t end = begin + ph.units;
      const std::int64_t first =
          offset < end ? period * per_period + std::max(begin, offset) : (period + 1) * per_period + begin;
      const std::int64_t first_period = first / per_period;
      if (first < hi) out = std::max(out, ph.serial_us - static_cast<double>(first_period) * run.serial_step_us);
      begin = end;
    }
    return out;
  }
  // Σ_{j<n} work(t + j·slots): the longest units of n full waves from rank t. A leader's offset is
  // below c when floor(x / P) - floor((x - c) / P) is 1, so each phase's leaders are floor sums.
  [[nodiscard]] double leaderSum(std::int64_t t, std::int64_t n, std::int64_t slots) const {
    const std::int64_t periods = floorSum(n, per_period, slots, t);
    double sum = -static_cast<double>(periods) * run.step_us;
    std::int64_t end = 0;
    std::int64_t below_before = 0;
    for (const auto& ph : phases) {
      end += ph.units;
      const std::int64_t below =
          end == per_period ? n : periods - (floorSum(n, per_period, slots, t - end + per_period) - n);
      sum += ph.work_us * static_cast<double>(below - below_before);
      below_before = below;
    }
    return sum;
  }
};

// One kind of equal units: it completes the open wave, fills whole waves, and opens the next.
void kindWaves(Schedule& out, OpenWave& open, const UnitKind& kind, double slots) {
  double remaining = kind.count;
  if (open.filled > 0) {  // complete the open wave
    const double take = std::min(remaining, slots - open.filled);
    open.filled += take;
    open.serial = std::max(open.serial, kind.serial_us);
    open.bytes_us += take * kind.stream_us;
    remaining -= take;
    if (open.filled + kWhole < slots) return;
    out.wave(open.longest, open.serial, open.bytes_us);
    open.filled = 0;
  }
  const double full = std::floor(remaining / slots + kWhole);
  if (full > 0) out.wave(kind.work_us, kind.serial_us, slots * kind.stream_us, full);
  remaining -= full * slots;
  if (remaining > kWhole) open = {remaining, kind.work_us, kind.serial_us, remaining * kind.stream_us};
}

// A run, the same way: its whole waves' longest units summed in closed form.
void runWaves(Schedule& out, OpenWave& open, const RunRanks& run, std::int64_t slots) {
  const std::int64_t total = run.units();
  std::int64_t taken = 0;
  if (open.filled > 0) {
    taken = std::min<std::int64_t>(total, slots - std::llround(open.filled));
    open.serial = std::max(open.serial, run.maxSerial(0, taken));
    open.filled += static_cast<double>(taken);
    if (open.filled + kWhole < static_cast<double>(slots)) return;
    out.wave(open.longest, open.serial, open.bytes_us);
    open.filled = 0;
  }
  const std::int64_t full = (total - taken) / slots;
  if (full > 0) out.streamFree(run.leaderSum(taken, full, slots), run.maxSerial(taken, taken + full * slots));
  const std::int64_t rest = taken + full * slots;
  if (rest < total) open = {static_cast<double>(total - rest), run.work(rest), run.maxSerial(rest, total), 0};
}

double runTop(const Waves& w, const UnitRun& run) {
  return (*w.phases)[static_cast<std::size_t>(run.first_phase)].work_us;
}
double runBottom(const Waves& w, const UnitRun& run) {
  const RunPhase& shortest = (*w.phases)[static_cast<std::size_t>(run.first_phase + run.phases - 1)];
  return shortest.work_us - static_cast<double>(run.periods - 1) * run.step_us;
}

// Works this close count as equal: a run's values and the kinds cut from it are sums in other orders,
// and the order of equal units does not change the schedule.
bool above(double a, double b) { return a > b + 1e-12 * std::fabs(b); }

// Periods [from, to) of a run as kinds of units.
void expandPeriods(const Waves& w, const UnitRun& run, std::int64_t from, std::int64_t to) {
  for (std::int64_t p = from; p < to; ++p) {
    for (std::int64_t i = 0; i < run.phases; ++i) {
      const RunPhase ph = (*w.phases)[static_cast<std::size_t>(run.first_phase + i)];
      const auto down = static_cast<double>(p);
      w.units->push_back({ph.work_us - down * run.step_us, ph.serial_us - down * run.serial_step_us, 0,
                          static_cast<double>(ph.units)});
    }
  }
}

// Run `i` cut around work `v` inside it: the periods wholly at or above v stay, those wholly at or
// below become a new run, and the one or two between become kinds.
void splitRun(const Waves& w, std::size_t i, double v) {
  const UnitRun run = (*w.runs)[i];
  const double longest = runTop(w, run);
  const double shortest = (*w.phases)[static_cast<std::size_t>(run.first_phase + run.phases - 1)].work_us;
  const auto periods = static_cast<double>(run.periods);
  auto at = [&](double top, std::int64_t p) { return top - static_cast<double>(p) * run.step_us; };
  auto upper = static_cast<std::int64_t>(std::clamp(std::floor((shortest - v) / run.step_us) + 1, 0.0, periods));
  while (upper > 0 && at(shortest, upper - 1) < v) --upper;
  while (upper < run.periods && at(shortest, upper) >= v) ++upper;
  auto lower = static_cast<std::int64_t>(std::clamp(std::ceil((longest - v) / run.step_us), 0.0, periods));
  lower = std::max(lower, upper);
  while (lower > upper && at(longest, lower - 1) <= v) --lower;
  while (lower < run.periods && at(longest, lower) > v) ++lower;
  expandPeriods(w, run, upper, lower);
  if (lower < run.periods) {
    UnitRun tail = run;
    tail.first_phase = static_cast<std::int64_t>(w.phases->size());
    tail.periods = run.periods - lower;
    const auto down = static_cast<double>(lower);
    for (std::int64_t k = 0; k < run.phases; ++k) {
      const RunPhase ph = (*w.phases)[static_cast<std::size_t>(run.first_phase + k)];
      w.phases->push_back({ph.work_us - down * run.step_us, ph.serial_us - down * run.serial_step_us,
                           ph.flops - down * run.flops_step, ph.units});
    }
    w.runs->push_back(tail);
  }
  (*w.runs)[i].periods = upper;
}

bool sortedRunsInterleave(const Waves& w) {
  auto& runs = *w.runs;
  std::sort(runs.begin(), runs.end(), [&](const auto& a, const auto& b) { return runTop(w, a) > runTop(w, b); });
  for (std::size_t i = 1; i < runs.size(); ++i) {
    if (above(runTop(w, runs[i]), runBottom(w, runs[i - 1]))) return true;
  }
  return false;
}

// One phase of interleaving runs on the common grid: its units in grid periods [from, to).
struct GridPhase {
  RunPhase phase;  // in grid period 0
  std::int64_t from = 0;
  std::int64_t to = 0;
};

// Interleaving runs of one step (prompts of other lengths or prefixes in one call) re-cut on a common
// grid of periods: grid period q holds the units whose work lies in (T - (q + 1) step, T - q step],
// T the longest, so each phase joins the grid at the period its longest unit falls in, and between
// the periods where phases join or leave, the phases present form one run. False where the runs'
// steps differ (tiles of other forms).
bool regridRuns(const Waves& w) {
  thread_local std::vector<GridPhase> grid;
  thread_local std::vector<std::int64_t> edges;
  grid.clear();
  edges.clear();
  auto& runs = *w.runs;
  const UnitRun ref = runs.front();
  const double top = runTop(w, ref);  // runs are sorted longest first
  for (const auto& run : runs) {
    const bool same = std::fabs(run.step_us - ref.step_us) <= 1e-12 * ref.step_us &&
                      std::fabs(run.serial_step_us - ref.serial_step_us) <= 1e-12 * std::fabs(ref.serial_step_us) &&
                      std::fabs(run.flops_step - ref.flops_step) <= 1e-12 * std::fabs(ref.flops_step);
    if (!same) return false;
    for (std::int64_t i = 0; i < run.phases; ++i) {
      const RunPhase ph = (*w.phases)[static_cast<std::size_t>(run.first_phase + i)];
      const auto join = static_cast<std::int64_t>(std::floor((top - ph.work_us) / ref.step_us + 1e-9));
      const auto up = static_cast<double>(join);
      grid.push_back({{ph.work_us + up * ref.step_us, ph.serial_us + up * ref.serial_step_us,
                       ph.flops + up * ref.flops_step, ph.units},
                      join,
                      join + run.periods});
      edges.push_back(join);
      edges.push_back(join + run.periods);
    }
  }
  std::sort(grid.begin(), grid.end(), [](const auto& a, const auto& b) { return a.phase.work_us > b.phase.work_us; });
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  runs.clear();
  for (std::size_t e = 1; e < edges.size(); ++e) {
    UnitRun run = ref;
    run.first_phase = static_cast<std::int64_t>(w.phases->size());
    run.periods = edges[e] - edges[e - 1];
    const auto down = static_cast<double>(edges[e - 1]);
    for (const auto& g : grid) {
      if (g.from > edges[e - 1] || g.to < edges[e]) continue;
      w.phases->push_back({g.phase.work_us - down * ref.step_us, g.phase.serial_us - down * ref.serial_step_us,
                           g.phase.flops - down * ref.flops_step, g.phase.units});
    }
    run.phases = static_cast<std::int64_t>(w.phases->size()) - run.first_phase;
    if (run.phases > 0) runs.push_back(run);
  }
  return true;
}

// Cuts the runs around the kinds that fall inside them, so that sorted longest first, runs and kinds
// follow each other without interleaving (a prompt's first and last tiles, decode rows), after
// putting interleaving runs on a common grid. False where runs of different steps interleave.
bool separateRuns(const Waves& w) {
  constexpr int kMaxCuts = 64;
  int cuts = 0;
  auto& runs = *w.runs;
  if (sortedRunsInterleave(w) && !regridRuns(w)) return false;
  for (bool cut = true; cut;) {  // until no kind falls inside a run, the kinds cut from runs included
    cut = false;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      for (std::size_t k = 0; k < w.units->size() && runs[i].periods > 0; ++k) {
        const double v = (*w.units)[k].work_us;
        if (!above(runTop(w, runs[i]), v) || !above(v, runBottom(w, runs[i]))) continue;
        if (++cuts > kMaxCuts) return false;
        splitRun(w, i, v);
        cut = true;
      }
    }
  }
  std::erase_if(runs, [](const UnitRun& r) { return r.periods == 0; });
  return !sortedRunsInterleave(w);
}

}  // namespace

// Longest-first scheduling in waves of `slots` units: the next wave's units start when slots free,
// and the slots of a bandwidth-bound wave free together. So a unit past a full wave costs its own
// time at its slot share of bandwidth (FA2 decode, 264 -> 272 units on 264 slots: 1.5x, measured
// 1.46-1.57x on the H100, measurements/data/h100/wave_edges.csv), not a share of the call's bytes.
// Adding a unit or lengthening one never shortens the schedule.
double scheduleTime(const Waves& w, double slots, bool rolling) {
  Schedule out;
  out.rolling = rolling;
  if (!w.units) {  // one kind of unit
    const double full = std::floor(w.ctas / slots + kWhole);
    out.wave(w.max_work_us, w.unit_serial_us, slots * w.unit_stream_us, full);
    const double rest = w.ctas - full * slots;
    if (rest > kWhole) out.wave(w.max_work_us, w.unit_serial_us, rest * w.unit_stream_us);
    out.finish();
    return out.us;
  }
  const bool runs = w.runs && !w.runs->empty();
  if (runs && !separateRuns(w)) {  // interleaved runs: every period a kind
    for (const auto& run : *w.runs) expandPeriods(w, run, 0, run.periods);
    w.runs->clear();
  }
  auto& units = *w.units;
  if (units.size() > 1) {
    std::sort(units.begin(), units.end(), [](const auto& a, const auto& b) { return a.work_us > b.work_us; });
  }
  const std::span<const UnitRun> sorted_runs = runs ? std::span<const UnitRun>(*w.runs) : std::span<const UnitRun>();
  const auto whole_slots = static_cast<std::int64_t>(std::llround(slots));
  OpenWave open;
  std::size_t next_run = 0;
  for (const auto& kind : units) {
    while (next_run < sorted_runs.size() && above(runTop(w, sorted_runs[next_run]), kind.work_us)) {
      runWaves(out, open, RunRanks(w, sorted_runs[next_run++]), whole_slots);
    }
    kindWaves(out, open, kind, slots);
  }
  for (; next_run < sorted_runs.size(); ++next_run)
    runWaves(out, open, RunRanks(w, sorted_runs[next_run]), whole_slots);
  if (open.filled > 0) out.wave(open.longest, open.serial, open.bytes_us);
  out.finish();
  return out.us;
}

}  // namespace attnsim::attention_cost
