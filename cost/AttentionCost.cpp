#include "cost/AttentionCost.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "backends/KernelFamily.hpp"
#include "hardware/HardwareProfile.hpp"
#include "model/ModelSpec.hpp"

namespace attnsim {

namespace {

constexpr std::int64_t kNoCap = std::numeric_limits<std::int64_t>::max() / 4;
constexpr double kBytesPerIndex = 4;          // int32 page-table entries
constexpr double kPartialBytes = 4;           // split-KV partial outputs and LSE in fp32
constexpr double kLatencyUtilization = 0.25;  // below this busy fraction a call counts as latency-bound

std::int64_t capOf(const AttentionShape& s) {
  std::int64_t cap = kNoCap;
  if (s.window > 0) cap = std::min(cap, s.window);
  if (s.top_k > 0) cap = std::min(cap, s.top_k);
  return cap;
}

std::int64_t ceilDiv(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
std::int64_t roundUp(std::int64_t a, std::int64_t m) { return ceilDiv(a, m) * m; }

// Keys seen by the query row at absolute position `pos` (0-based), causal.
std::int64_t keysAt(std::int64_t pos, std::int64_t cap) { return std::min(pos + 1, cap); }

struct Traffic {
  double kv_read = 0;    // page-granular KV bytes, before GQA re-reads
  double kv_unique = 0;  // token-granular KV bytes
  double page_tables = 0;
  double q_bytes = 0;
  double o_bytes = 0;
  double tokens = 0;
  double flops = 0;
};

Traffic countTraffic(const AttentionShape& s, const KernelModel& k, std::span<const RequestGroup> groups,
                     std::int64_t page_size) {
  Traffic t;
  const double kv_token_bytes = static_cast<double>(s.num_kv_heads) * s.kv_token_width * s.kv_elem_bytes;
  const std::int64_t page = std::max<std::int64_t>(1, page_size);
  for (const auto& g : groups) {
    const auto n = static_cast<double>(g.count);
    const double attended = attendedKeys(g, s);
    const std::int64_t unique = uniqueKvTokens(g, s);
    const std::int64_t pages = ceilDiv(unique, page);
    t.tokens += n * static_cast<double>(g.q_len);
    t.flops += n * 2.0 * s.num_heads * attended * (s.d_qk + s.d_v);
    t.kv_unique += n * static_cast<double>(unique) * kv_token_bytes;
    t.kv_read += n * static_cast<double>(k.paged_native ? pages * page : unique) * kv_token_bytes;
    if (k.paged_emulated) t.page_tables += n * static_cast<double>(unique) * kBytesPerIndex;
    if (k.paged_native) t.page_tables += n * static_cast<double>(pages) * kBytesPerIndex;
  }
  t.q_bytes = t.tokens * s.num_heads * s.d_qk * s.act_bytes;
  t.o_bytes = t.tokens * s.num_heads * s.d_v * s.act_bytes;
  return t;
}

// Work of one split choice: units of equal work (count, time on one slot) spread over the machine.
struct Waves {
  double sum_work_us = 0;  // Σ over units of their time on one slot
  double max_work_us = 0;
  double ctas = 0;
  double flops_tiled = 0;
  bool compute_dominant = false;
  // Distinct unit kinds; reused between calls so the hot path does not allocate once warm.
  std::vector<std::pair<double, double>>* units = nullptr;  // (work, count)
};

struct Rates {
  double flop_per_slot = 0;  // FLOP per µs one slot achieves
  double byte_per_slot = 0;
  double slots = 1;
  double key_us = 0;  // per key a unit visits
};

void addUnits(Waves& w, const Rates& r, double count, double unit_flops, double unit_bytes, double unit_keys) {
  const double c = unit_flops / r.flop_per_slot;
  const double m = unit_bytes / r.byte_per_slot;
  const double work = std::max(c, m) + unit_keys * r.key_us;
  w.sum_work_us += count * work;
  if (work > w.max_work_us) {
    w.max_work_us = work;
    w.compute_dominant = c >= m;
  }
  w.ctas += count;
  w.flops_tiled += count * unit_flops;
  if (w.units) w.units->emplace_back(work, count);
}

// Longest-first scheduling in waves of `slots` units: each wave lasts as long as its longest
// (first) unit. Adding a unit or lengthening one never shortens the schedule.
double kernelTime(const Waves& w, double slots) {
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

// Decode and verify: each unit is one KV head with its packed query heads (or one query head),
// over one KV split. What does not depend on the split count is computed once per group.
struct DecodeUnit {
  double count = 0;  // units per split: requests × heads × row tiles
  std::int64_t kv_tiles = 0;
  double rows_padded = 0;
  double rows_in_unit = 0;
  double kv_bytes_per_key = 0;
  double qo_bytes = 0;

  // index_bytes_per_key: the page-table bytes a unit reads per key (a per-token index when paging is
  // emulated, one entry per page when native).
  DecodeUnit(const RequestGroup& g, const AttentionShape& s, const KernelModel& k, double reread,
             double index_bytes_per_key) {
    const int group = s.groupSize();
    const std::int64_t rows = k.gqa_packing ? group * g.q_len : g.q_len;
    const std::int64_t padded = k.tensor_math ? std::min<std::int64_t>(k.tile_q, roundUp(rows, 16)) : rows;
    const std::int64_t row_tiles = ceilDiv(rows, padded);
    count = static_cast<double>(g.count * (k.gqa_packing ? s.num_kv_heads : s.num_heads) * row_tiles);
    kv_tiles = ceilDiv(uniqueKvTokens(g, s), k.tile_kv);
    rows_padded = static_cast<double>(padded);
    rows_in_unit = static_cast<double>(rows) / static_cast<double>(row_tiles);
    kv_bytes_per_key =
        s.kv_token_width * s.kv_elem_bytes * (k.gqa_packing ? 1.0 : reread / group) + index_bytes_per_key;
    qo_bytes = rows_in_unit * (s.d_qk + s.d_v) * s.act_bytes;
  }

  struct Work {
    double flops, bytes, keys;
  };
  // One unit's work when the KV is cut into `splits` pieces.
  [[nodiscard]] Work work(const AttentionShape& s, const KernelModel& k, int splits) const {
    const double keys = static_cast<double>(ceilDiv(kv_tiles, splits) * k.tile_kv);
    double bytes = keys * kv_bytes_per_key + qo_bytes;
    if (splits > 1) bytes += rows_in_unit * (s.d_v + 1) * kPartialBytes;
    return {2.0 * rows_padded * keys * (s.d_qk + s.d_v), bytes, keys};
  }
};

void decodeWaves(Waves& w, const AttentionShape& s, const KernelModel& k, const Rates& r,
                 std::span<const RequestGroup> groups, int splits, double reread, double index_bytes_per_key) {
  for (const auto& g : groups) {
    const DecodeUnit unit(g, s, k, reread, index_bytes_per_key);
    const auto work = unit.work(s, k, splits);
    addUnits(w, r, unit.count * splits, work.flops, work.bytes, work.keys);
  }
}

// Prefill and extend: each unit is one query tile of one query head; a causal tile computes its
// diagonal block whole. DRAM bytes are shared among units in proportion to the keys they read.
void prefillWaves(Waves& w, const AttentionShape& s, const KernelModel& k, const Rates& r,
                  std::span<const RequestGroup> groups, double dram_bytes) {
  const std::int64_t cap = capOf(s);
  const std::int64_t bm = std::max(1, k.tile_q);
  auto tileKeys = [&](const RequestGroup& g, std::int64_t t) {
    if (!s.causal) return roundUp(std::min(g.context, cap), k.tile_kv);
    const std::int64_t first = g.prefix() + t * bm;
    const std::int64_t last = g.prefix() + std::min(g.q_len, (t + 1) * bm) - 1;
    const std::int64_t start = std::max<std::int64_t>(0, first + 1 - cap);
    return roundUp(last + 1 - start, k.tile_kv);
  };
  double total_keys = 0;
  for (const auto& g : groups) {
    for (std::int64_t t = 0; t < ceilDiv(g.q_len, bm); ++t) {
      total_keys += static_cast<double>(g.count * s.num_heads) * static_cast<double>(tileKeys(g, t));
    }
  }
  const double bytes_per_key = total_keys > 0 ? dram_bytes / total_keys : 0;
  for (const auto& g : groups) {
    for (std::int64_t t = 0; t < ceilDiv(g.q_len, bm); ++t) {
      const auto keys = static_cast<double>(tileKeys(g, t));
      const double rows =
          k.tensor_math ? static_cast<double>(bm) : static_cast<double>(std::min(g.q_len, (t + 1) * bm) - t * bm);
      addUnits(w, r, static_cast<double>(g.count * s.num_heads), 2.0 * rows * keys * (s.d_qk + s.d_v),
               keys * bytes_per_key, keys);
    }
  }
}

}  // namespace

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

double attendedKeys(const RequestGroup& g, const AttentionShape& s) {
  const std::int64_t cap = capOf(s);
  const std::int64_t prefix = g.prefix();
  if (!s.causal) return static_cast<double>(g.q_len) * static_cast<double>(std::min(g.context, cap));
  if (g.tree_topk > 1) {
    // A speculative tree: the root, then levels of tree_topk nodes; a node sees the prefix and its path.
    double sum = static_cast<double>(keysAt(prefix, cap));
    std::int64_t remaining = g.q_len - 1;
    for (std::int64_t depth = 1; remaining > 0; ++depth) {
      const std::int64_t n = std::min(remaining, g.tree_topk);
      sum += static_cast<double>(n) * static_cast<double>(keysAt(prefix + depth, cap));
      remaining -= n;
    }
    return sum;
  }
  // Rows i = 0..q-1 see min(prefix + i + 1, cap) keys: a ramp while under the cap, then flat.
  const auto q = static_cast<double>(g.q_len);
  const auto p = static_cast<double>(prefix);
  const double c = static_cast<double>(std::clamp<std::int64_t>(cap - prefix, 0, g.q_len));
  return c * p + c * (c + 1) / 2 + (q - c) * static_cast<double>(cap == kNoCap ? 0 : cap);
}

std::int64_t uniqueKvTokens(const RequestGroup& g, const AttentionShape& s) {
  if (!s.causal) return std::min(g.context, capOf(s));
  std::int64_t unique = g.context;
  if (s.window > 0) unique = g.context - std::max<std::int64_t>(0, g.prefix() + 1 - s.window);
  if (s.top_k > 0 && g.tree_topk <= 1) unique = std::min(unique, s.top_k * g.q_len);
  return std::max<std::int64_t>(1, unique);
}

// An unfused path: separate library kernels (products, softmax, masking, copies) that each spread
// over the whole machine and run one after another, so their times add. They materialise the whole
// q × kv score rectangle, causal or not. With an fp32 working precision (PyTorch's math path for
// bf16/fp16) the inputs are first upcast, K and V expanded to every query head, and the keys scaled
// (read and written once more) before the products read them.
static AttentionCost predictUnfused(const AttentionShape& s, const KernelModel& kernel, const DeviceModel& device,
                                    Phase phase, std::span<const RequestGroup> groups, const Traffic& t, double sinks,
                                    double dequant) {
  AttentionCost out;
  const double a = s.act_bytes;
  const bool upcast = kernel.working_bytes > 0 && kernel.working_bytes != a;
  const double w = upcast ? kernel.working_bytes : a;
  const double g = s.groupSize();
  double rectangle = 0;  // score elements per head
  for (const auto& grp : groups) rectangle += static_cast<double>(grp.count * grp.q_len * grp.context);
  const double scores = rectangle * s.num_heads;
  const bool masked = phase != Phase::Decode;  // prefill, extend, verify apply a mask over the rectangle
  // Products write the scores, softmax reads and writes them, PV reads them; a mask is built (1 byte)
  // and applied (read, write, mask read).
  const double score_bytes = scores * (4 * w + (masked ? 2 * w + 2 : 0));
  const double kv_elems = t.kv_read / a;  // K and V elements as stored
  double kv_bytes = 0;
  if (upcast) {
    const double key_elems = kv_elems * s.d_qk / (s.d_qk + s.d_v);
    kv_bytes = kv_elems * (a + w)                      // read as stored, written upcast
               + (g > 1 ? kv_elems * (w + g * w) : 0)  // expanded to every query head
               + key_elems * g * 2 * w                 // keys scaled
               + kv_elems * g * w;                     // read by the two products
  } else {
    kv_bytes = t.kv_read * g;  // the batched products read K and V once per query head
  }
  const double io_bytes = (t.q_bytes + t.o_bytes) * (upcast ? 1 + 2 * w / a : 1) + t.page_tables + sinks;
  out.flops = t.flops;
  out.bytes_min = t.q_bytes + t.o_bytes + t.kv_unique;
  out.flops_tiled = rectangle * s.num_heads * 2.0 * (s.d_qk + s.d_v) * dequant;
  out.bytes = score_bytes + kv_bytes + io_bytes;
  const double peak = kernel.tensor_math && !upcast ? device.tensor_flops_per_us : device.vector_flops_per_us;
  out.compute_us = out.flops_tiled / (peak * kernel.compute_efficiency);
  out.memory_us = out.bytes / (device.bytes_per_us * kernel.memory_efficiency);
  out.kernel_us = out.compute_us + out.memory_us;
  out.fixed_us = kernel.fixed_us;
  out.time_us = out.kernel_us + out.fixed_us;
  out.ctas = std::max(1, device.compute_units * kernel.ctas_per_sm);
  out.utilization = 1.0;
  out.bound = out.fixed_us >= out.kernel_us     ? Bound::Latency
              : out.compute_us >= out.memory_us ? Bound::Compute
                                                : Bound::Memory;
  return out;
}

AttentionCost predictAttention(const AttentionShape& shape, const KernelModel& kernel, const DeviceModel& device,
                               Phase phase, std::span<const RequestGroup> groups, std::int64_t page_size) {
  for (const auto& rule : kernel.tiles_by_head_dim) {
    if (rule.max_head_dim == 0) break;
    if (std::max(shape.d_qk, shape.d_v) <= rule.max_head_dim) {
      KernelModel tiled = kernel;
      tiled.tile_q = rule.tile_q;
      tiled.tile_kv = rule.tile_kv;
      if (rule.ctas_per_sm > 0) tiled.ctas_per_sm = rule.ctas_per_sm;
      tiled.key_us = kernel.key_us * static_cast<double>(kernel.tile_kv) / rule.tile_kv;
      tiled.tiles_by_head_dim[0].max_head_dim = 0;
      return predictAttention(shape, tiled, device, phase, groups, page_size);
    }
  }
  AttentionCost out;
  const Traffic t = countTraffic(shape, kernel, groups, page_size);
  const double slots = std::max(1, device.compute_units * kernel.ctas_per_sm);
  const double peak = kernel.tensor_math ? device.tensor_flops_per_us : device.vector_flops_per_us;
  const double dequant = shape.kv_quantized ? 1.0 + kernel.quantized_kv_overhead : 1.0;
  const Rates rates{peak * kernel.compute_efficiency / dequant / slots,
                    device.bytes_per_us * kernel.memory_efficiency / slots, slots, kernel.key_us};
  const int group = shape.groupSize();
  const double miss = t.kv_read > 0 ? std::clamp(1.0 - device.l2_bytes / t.kv_read, 0.0, 1.0) : 0.0;
  // A kernel that does not pack GQA heads re-reads KV per query head, less what L2 keeps; an unfused
  // path expands K and V to every query head and then reads the expanded copies (the copy itself
  // runs at copy speed, small beside the batched products that read it).
  const double reread = kernel.gqa_packing ? 1.0
                        : kernel.unfused   ? static_cast<double>(group)
                                           : 1.0 + (group - 1) * miss;
  const double sinks = shape.sinks ? shape.num_heads * 4.0 : 0.0;
  const double base_bytes = t.q_bytes + t.o_bytes + t.kv_read * reread + t.page_tables + sinks;

  out.flops = t.flops;
  out.bytes_min = t.q_bytes + t.o_bytes + t.kv_unique;
  const bool decode_like = phase == Phase::Decode || phase == Phase::Verify;
  int max_splits = 1;
  if (decode_like && kernel.split_kv) {
    std::int64_t min_tiles = kNoCap;
    for (const auto& g : groups) min_tiles = std::min(min_tiles, ceilDiv(uniqueKvTokens(g, shape), kernel.tile_kv));
    max_splits = static_cast<int>(std::clamp<std::int64_t>(min_tiles, 1, kernel.max_splits));
    if (kernel.split_spans_pool && (kernel.paged_emulated || kernel.paged_native)) {
      // The kernel sizes its splits over the whole page pool it is handed (two per SM over the
      // batch's KV heads), so one sequence's keys fill only ceil(splits × sequence / pool) of them.
      double requests = 0;
      double longest = 0;
      for (const auto& g : groups) {
        requests += static_cast<double>(g.count);
        longest = std::max(longest, static_cast<double>(uniqueKvTokens(g, shape)));
      }
      const double heuristic = std::max(1.0, std::floor(device.compute_units / (requests * shape.num_kv_heads)) * 2.0);
      const double used = kernel.kv_pool_tokens > 0 ? std::ceil(heuristic * longest / kernel.kv_pool_tokens) : 1.0;
      max_splits = std::clamp(static_cast<int>(used), 1, max_splits);
    }
  }
  if (kernel.unfused) return predictUnfused(shape, kernel, device, phase, groups, t, sinks, dequant);
  const double index_bytes_per_key = kernel.paged_emulated ? kBytesPerIndex
                                     : kernel.paged_native
                                         ? kBytesPerIndex / static_cast<double>(std::max<std::int64_t>(1, page_size))
                                         : 0.0;
  // The engines pick the split count that fills the machine best; take the fastest, fewest on ties.
  double best = std::numeric_limits<double>::infinity();
  thread_local std::vector<std::pair<double, double>> units;
  // A uniform decode batch has one kind of unit: its per-split-invariant part is computed once.
  const bool one_kind = decode_like && groups.size() == 1;
  const std::optional<DecodeUnit> uniform =
      one_kind ? std::optional<DecodeUnit>(std::in_place, groups.front(), shape, kernel, reread, index_bytes_per_key)
               : std::nullopt;
  for (int s = 1; s <= max_splits; ++s) {
    units.clear();
    Waves w;
    w.units = uniform ? nullptr : &units;
    if (uniform) {
      const auto work = uniform->work(shape, kernel, s);
      addUnits(w, rates, uniform->count * s, work.flops, work.bytes, work.keys);
    } else if (decode_like) {
      decodeWaves(w, shape, kernel, rates, groups, s, reread, index_bytes_per_key);
    } else {
      prefillWaves(w, shape, kernel, rates, groups, base_bytes);
    }
    const double partial_bytes = s > 1 ? 2.0 * s * t.tokens * shape.num_heads * (shape.d_v + 1) * kPartialBytes : 0.0;
    const double kernel_us = kernelTime(w, slots);
    const double merge_us = s > 1 ? partial_bytes / 2 / (device.bytes_per_us * kernel.memory_efficiency) : 0.0;
    const double fixed = kernel.fixed_us * (s > 1 ? 2 : 1);
    const double total = kernel_us + merge_us + fixed;
    if (total < best * (1 - 1e-12)) {
      best = total;
      out.splits = s;
      out.ctas = w.ctas;
      out.flops_tiled = w.flops_tiled * dequant;
      out.bytes = base_bytes + partial_bytes;
      out.kernel_us = kernel_us + merge_us;
      out.fixed_us = fixed;
      out.time_us = total;
      out.utilization = kernel_us > 0 ? w.sum_work_us / (slots * kernel_us) : 0;
      // Latency: launch overhead dominates, or the machine is mostly idle so one unit's serial
      // work sets the time rather than the device's FLOP/s or bandwidth.
      const bool latency = fixed >= out.kernel_us || out.utilization < kLatencyUtilization;
      out.bound = latency ? Bound::Latency : w.compute_dominant ? Bound::Compute : Bound::Memory;
    }
    // Past two full waves more splits only add merge work. (The candidate set shrinks as the batch
    // grows, so the minimum still cannot fall when requests are added.)
    if (w.ctas >= 2 * slots) break;
  }
  out.compute_us = out.flops_tiled / (peak * kernel.compute_efficiency);
  out.memory_us = out.bytes / (device.bytes_per_us * kernel.memory_efficiency);
  return out;
}

}  // namespace attnsim
