#include "cost/AttentionCost.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "backends/KernelFamily.hpp"
#include "cost/AttentionCostInternal.hpp"
#include "cost/AttentionCostSplits.hpp"

namespace attnsim {

namespace {

using attention_cost::capOf;
using attention_cost::ceilDiv;
using attention_cost::kBytesPerIndex;
using attention_cost::kNoCap;
using attention_cost::kPartialBytes;
using attention_cost::Rates;
using attention_cost::roundUp;
using attention_cost::Traffic;
using attention_cost::Waves;

// Decode and verify: each unit is one KV head with its packed query heads (or one query head),
// over one KV split. What does not depend on the split count is computed once per group.
struct DecodeUnit {
  double count = 0;  // units per split: requests × heads × row tiles
  std::int64_t kv_tiles = 0;
  double rows_padded = 0;
  double rows_in_unit = 0;
  double row_tiles = 1;  // tiles of one request's packed query rows, which share its keys
  double kv_bytes_per_key = 0;
  double qo_bytes = 0;

  // index_bytes_per_key: the page-table bytes a unit reads per key (a per-token index when paging is
  // emulated, one entry per page when native).
  DecodeUnit(const RequestGroup& g, const AttentionShape& s, const KernelModel& k, double reread,
             double index_bytes_per_key) {
    const int group = s.groupSize();
    const std::int64_t rows = k.gqa_packing ? group * g.q_len : g.q_len;
    const std::int64_t padded = k.tensor_math ? std::min<std::int64_t>(k.tile_q, roundUp(rows, 16)) : rows;
    const std::int64_t tiles = ceilDiv(rows, padded);
    count = static_cast<double>(g.count * (k.gqa_packing ? s.num_kv_heads : s.num_heads) * tiles);
    kv_tiles = ceilDiv(uniqueKvTokens(g, s), k.tile_kv);
    rows_padded = static_cast<double>(padded);
    row_tiles = static_cast<double>(tiles);
    rows_in_unit = static_cast<double>(rows) / row_tiles;
    kv_bytes_per_key = attention_cost::kvBytesPerKey(s, k, reread, index_bytes_per_key);
    qo_bytes = rows_in_unit * (s.d_qk + s.d_v) * s.act_bytes;
  }

  struct Work {
    double flops, bytes, keys, qo_bytes, dram_bytes;
  };
  // One unit's work when the KV is cut into `splits` pieces.
  [[nodiscard]] Work work(const AttentionShape& s, const KernelModel& k, int splits) const {
    const auto keys = static_cast<double>(ceilDiv(kv_tiles, splits) * k.tile_kv);
    const double kv = keys * kv_bytes_per_key;
    double bytes = kv + qo_bytes;
    if (splits > 1) bytes += rows_in_unit * (s.d_v + 1) * kPartialBytes;
    // The row tiles of one request and KV head read the same keys at once and DRAM delivers them once,
    // unless the grid runs them apart.
    const double dram = k.row_tiles_reread_keys ? bytes : bytes - kv * (1.0 - 1.0 / row_tiles);
    return {2.0 * rows_padded * keys * (s.d_qk + s.d_v), bytes, keys, qo_bytes, dram};
  }
};

void decodeWaves(Waves& w, const AttentionShape& s, const KernelModel& k, const Rates& r,
                 std::span<const RequestGroup> groups, int splits, double reread, double index_bytes_per_key) {
  for (const auto& g : groups) {
    const DecodeUnit unit(g, s, k, reread, index_bytes_per_key);
    const auto work = unit.work(s, k, splits);
    addUnits(w, r, unit.count * splits, work.flops, work.bytes, work.keys, work.qo_bytes, work.dram_bytes);
  }
}

// The first head-dim rule that covers the call's widest head, if the family has rules.
const HeadDimTiles* tileRuleFor(const AttentionShape& s, const KernelModel& k) {
  for (const auto& rule : k.tiles_by_head_dim) {
    if (rule.max_head_dim == 0) break;
    if (std::max(s.d_qk, s.d_v) <= rule.max_head_dim) return &rule;
  }
  return nullptr;
}

}  // namespace

const Group1DecodeRule* group1RuleFor(const AttentionShape& s, const KernelModel& k, Phase phase) {
  if (phase != Phase::Decode || s.num_heads != s.num_kv_heads) return nullptr;
  const int kv_bits = s.kv_elem_bytes >= 1.5 ? 16 : 8;
  for (const auto& rule : k.group1_rules) {
    if (rule.max_head_dim == 0) break;
    if (std::max(s.d_qk, s.d_v) <= rule.max_head_dim && (rule.kv_bits == 0 || rule.kv_bits == kv_bits)) return &rule;
  }
  return nullptr;
}

namespace {

// The per-key time was fitted at the family's key tile: a kernel stepping by fewer keys pays more per
// key. The rule list is emptied so the prediction with the rule applied does not look for one again.
KernelModel withTileRule(const KernelModel& kernel, const HeadDimTiles& rule) {
  KernelModel tiled = kernel;
  tiled.tile_q = rule.tile_q;
  tiled.tile_kv = rule.tile_kv;
  if (rule.ctas_per_sm > 0) tiled.ctas_per_sm = rule.ctas_per_sm;
  tiled.key_us = kernel.key_us * static_cast<double>(kernel.tile_kv) / rule.tile_kv;
  tiled.tiles_by_head_dim[0].max_head_dim = 0;
  return tiled;
}

// One call's inputs, passed together through the split search.
struct Call {
  const AttentionShape& shape;
  const KernelModel& kernel;
  const DeviceModel& device;
  std::span<const RequestGroup> groups;
  bool decode_like;
  std::int64_t page_size;
  // A mixed call whose kernel splits its single-token rows' KV (KernelModel::splits_mixed_decode_rows),
  // and the query tokens whose partial outputs a split writes.
  bool splits_single_rows = false;
  double split_tokens = 0;
};

// What every split count shares: the machine's slots and per-slot rates, and the bytes that do not
// depend on the split count.
struct CallTerms {
  double slots = 1;
  double peak = 0;
  double dequant = 1;
  Rates rates;
  Rates single_token_rates;  // a mixed call's decode rows (the same kernel's decode calibration)
  double reread = 1;         // KV reads per stored byte
  double sinks = 0;          // sink logits' bytes
  double base_bytes = 0;
  double index_bytes_per_key = 0;
  double page_lookup_us = 0;  // per key of a paged call of an emulated-paging kernel
};

Rates slotRates(const CallTerms& c, const KernelModel& kernel, const DeviceModel& device) {
  const double key_factor = c.dequant > 1 ? kernel.quantized_kv_key_factor : 1.0;
  return Rates{c.peak * kernel.compute_efficiency / c.dequant / c.slots,
               device.bytes_per_us * kernel.memory_efficiency / c.slots,
               c.slots,
               kernel.key_us * key_factor + c.page_lookup_us,
               kernel.slot_bandwidth_share,
               kernel.rolling_waves,
               kernel.unit_us};
}

CallTerms callTerms(const AttentionShape& shape, const KernelModel& kernel, const DeviceModel& device, const Traffic& t,
                    std::int64_t page_size, bool decode_like, const KernelModel* single_token_rows) {
  CallTerms c;
  c.slots = std::max(1, device.compute_units * kernel.ctas_per_sm);
  c.peak = kernel.tensor_math ? device.tensor_flops_per_us : device.vector_flops_per_us;
  c.dequant = shape.kv_quantized ? 1.0 + kernel.quantized_kv_overhead : 1.0;
  c.page_lookup_us = kernel.paged_emulated && page_size > 0 ? kernel.paged_key_us : 0.0;
  c.rates = slotRates(c, kernel, device);
  c.single_token_rates = single_token_rows ? slotRates(c, *single_token_rows, device) : c.rates;
  // A unit's own fixed time is a decode unit's (one KV head of a request): a prefill query tile's
  // prologue overlaps the previous tile's work under the persistent schedulers, unless the family
  // says its tiles pay their own (KernelFamily::prefill_unit_us).
  if (!decode_like) c.rates.unit_us = kernel.prefill_unit_us;
  const int group = shape.groupSize();
  // A kernel that does not pack GQA heads re-reads KV per query head, less what L2 keeps. (Unfused
  // paths count their own K/V reads.) The query head is the grid's slowest dimension (FA2's
  // (m_block, batch, head), flex attention's, SGLang's extend and vLLM's Triton prefill grids alike):
  // the query blocks of one head share its keys in L2, and a sibling query head comes back after one
  // KV head's keys over the whole batch. Single long prompts stay in L2; long decode rows do not.
  const bool packed = decode_like || !kernel.family ? kernel.gqa_packing : kernel.family->packsQueryHeadsInPrefill();
  const double reuse_bytes = t.kv_read / std::max(1, shape.num_kv_heads);
  const double miss = reuse_bytes > 0 ? std::clamp(1.0 - device.l2_bytes / reuse_bytes, 0.0, 1.0) : 0.0;
  c.reread = packed ? 1.0 : 1.0 + (group - 1) * miss;
  c.sinks = shape.sinks ? shape.num_heads * 4.0 : 0.0;
  c.base_bytes = t.q_bytes + t.o_bytes + t.kv_read * c.reread + t.page_tables + c.sinks;
  c.index_bytes_per_key = kernel.paged_emulated ? kBytesPerIndex
                          : kernel.paged_native
                              ? kBytesPerIndex / static_cast<double>(std::max<std::int64_t>(1, page_size))
                              : 0.0;
  return c;
}

// The kernel sizes its splits over the whole page pool it is handed (its split rule's count), so one
// sequence's keys fill only ceil(splits × sequence / pool) of them.
int poolSplits(const Call& call, int max_splits) {
  double longest = 0;
  for (const auto& g : call.groups) longest = std::max(longest, static_cast<double>(uniqueKvTokens(g, call.shape)));
  const double heuristic = attention_cost::perSmSplits(call.kernel, call.shape, call.groups, call.device.compute_units);
  const double used =
      call.kernel.kv_pool_tokens > 0 ? std::ceil(heuristic * longest / call.kernel.kv_pool_tokens) : 1.0;
  return std::clamp(static_cast<int>(used), 1, max_splits);
}

// Split-KV decode kernels may cut each request's KV into at most as many splits as its KV tiles.
int maxSplits(const Call& call) {
  const KernelModel& kernel = call.kernel;
  if (!(call.decode_like || call.splits_single_rows) || !kernel.split_kv) return 1;
  std::int64_t min_tiles = kNoCap;
  for (const auto& g : call.groups) {
    if (!call.decode_like && g.q_len > 1) continue;  // only the single-token rows of a mixed call split
    min_tiles = std::min(min_tiles, ceilDiv(uniqueKvTokens(g, call.shape), kernel.tile_kv));
  }
  const int max_splits = static_cast<int>(std::clamp<std::int64_t>(min_tiles, 1, kernel.max_splits));
  if (kernel.split_spans_pool && (kernel.paged_emulated || kernel.paged_native)) return poolSplits(call, max_splits);
  return max_splits;
}

// The work units of one split count; `uniform` is set for a decode batch of one kind of unit.
void addSplitUnits(Waves& w, const Call& call, const CallTerms& c, const std::optional<DecodeUnit>& uniform,
                   int splits) {
  if (call.kernel.query_blocks_span_requests) {
    attention_cost::spanningBlockWaves(w, call.shape, call.kernel, c.rates, call.groups, c.reread,
                                       c.index_bytes_per_key);
  } else if (uniform) {
    const auto work = uniform->work(call.shape, call.kernel, splits);
    addUnits(w, c.rates, uniform->count * splits, work.flops, work.bytes, work.keys, work.qo_bytes, work.dram_bytes);
  } else if (call.decode_like) {
    decodeWaves(w, call.shape, call.kernel, c.rates, call.groups, splits, c.reread, c.index_bytes_per_key);
  } else {
    attention_cost::prefillWaves(w, call.shape, call.kernel, c.rates, c.single_token_rates, call.groups, c.reread,
                                 call.page_size, splits);
  }
}

// One split count's time: the waves, the merge of the fp32 partial outputs, and one launch per kernel.
struct SplitTime {
  double partial_bytes = 0;
  double kernel_us = 0;
  double merge_us = 0;
  double fixed_us = 0;
  double total_us = 0;
  bool merge_gap_included = false;  // the family's merge_launch_us stands for the merge's launch and gap
};

SplitTime splitTime(const Call& call, const CallTerms& c, const Waves& w, int s) {
  const AttentionShape& shape = call.shape;
  SplitTime st;
  st.partial_bytes = s > 1 ? 2.0 * s * call.split_tokens * shape.num_heads * (shape.d_v + 1) * kPartialBytes : 0.0;
  // Split units write their fp32 partials (half of partial_bytes; the merge reads the other half).
  st.kernel_us = attention_cost::kernelTime(w, c.rates, c.base_bytes + st.partial_bytes / 2);
  st.merge_us = s > 1 ? st.partial_bytes / 2 / (call.device.bytes_per_us * call.kernel.memory_efficiency) : 0.0;
  const double merge_launch = call.kernel.merge_launch_us >= 0 ? call.kernel.merge_launch_us : call.kernel.fixed_us;
  st.fixed_us = call.kernel.fixed_us + (s > 1 ? merge_launch : 0.0);
  st.merge_gap_included = call.kernel.merge_launch_us >= 0;
  st.total_us = st.kernel_us + st.merge_us + st.fixed_us;
  return st;
}

void recordSplit(AttentionCost& out, const CallTerms& c, const Waves& w, const SplitTime& st, int s) {
  out.splits = s;
  out.launches = s > 1 ? 2 : 1;
  out.gapped_launches = s > 1 && !st.merge_gap_included ? 2 : 1;
  out.ctas = w.ctas;
  out.slots = c.slots;
  out.flops_tiled = w.flops_tiled * c.dequant;
  out.bytes = c.base_bytes + st.partial_bytes;
  out.kernel_us = st.kernel_us + st.merge_us;
  out.fixed_us = st.fixed_us;
  out.time_us = st.total_us;
  out.utilization = st.kernel_us > 0 ? w.sum_work_us / (c.slots * st.kernel_us) : 0;
}

// A kernel with a split rule (the engines' Triton decode kernels) launches exactly its rule's count (0:
// none). vLLM's FA4 graph splits also hold for a prefill of one-token prompts: its tokens never exceed
// the graph capture size where its decode's do not (longer prompts: not modelled, docs/COST_MODEL.md).
int ruledSplitCount(const Call& call) {
  const bool graph_rows =
      call.kernel.split_policy.rule == SplitRule::Graph &&
      std::all_of(call.groups.begin(), call.groups.end(), [](const RequestGroup& g) { return g.q_len == 1; });
  if (!(call.decode_like || graph_rows) || !call.kernel.split_kv) return 0;
  return attention_cost::ruledSplits(call.kernel, call.shape, call.groups, call.device.compute_units);
}

// The split count the kernel runs with. "fastest" (FlashInfer's and the Triton planners balance the
// KV over the machine): the fastest count, fewest on ties; the counts on offer shrink as the batch
// grows, so the minimum never falls. "occupancy" (FlashAttention's num_splits_heuristic): the
// heuristic's count or no split, whichever is faster. The heuristic weighs wave efficiency only; a
// split also pays a merge and a second launch, which vanish when the work reaches 80% of the SMs, so
// its own count alone makes a batch of 14 cheaper than 13 (Llama-3.1-8B, H100: 5 splits, then none).
// The unsplit time grows with batch and context, so the faster of the two does not fall.
AttentionCost searchSplits(const Call& call, const CallTerms& c) {
  AttentionCost out;
  double best = std::numeric_limits<double>::infinity();
  thread_local std::vector<attention_cost::UnitKind> units;
  thread_local std::vector<attention_cost::UnitRun> runs;
  thread_local std::vector<attention_cost::RunPhase> phases;
  // A uniform decode batch has one kind of unit: its per-split-invariant part is computed once.
  const bool one_kind = call.decode_like && call.groups.size() == 1 && !call.kernel.query_blocks_span_requests;
  const std::optional<DecodeUnit> uniform =
      one_kind ? std::optional<DecodeUnit>(std::in_place, call.groups.front(), call.shape, call.kernel, c.reread,
                                           c.index_bytes_per_key)
               : std::nullopt;
  // Costs split count s and keeps it if faster; true once more splits cannot help.
  auto consider = [&](int s) {
    units.clear();
    runs.clear();
    phases.clear();
    Waves w;
    w.units = uniform ? nullptr : &units;
    w.runs = uniform ? nullptr : &runs;
    w.phases = uniform ? nullptr : &phases;
    addSplitUnits(w, call, c, uniform, s);
    const SplitTime st = splitTime(call, c, w, s);
    if (st.total_us < best * (1 - 1e-12)) {
      best = st.total_us;
      recordSplit(out, c, w, st, s);
    }
    return w.ctas >= 2 * c.slots;
  };
  const int ruled = ruledSplitCount(call);
  if (ruled > 0) {
    // flex-decoding's count is capped by the KV tiles (splits past them are empty) and, over a page
    // pool, by the splits one sequence's pages fill.
    consider(call.kernel.split_policy.rule == SplitRule::PerSm ? std::min(ruled, maxSplits(call)) : ruled);
    return out;
  }
  const int max_splits = maxSplits(call);
  if (call.kernel.split_policy.rule == SplitRule::Occupancy) {
    // Its no-split rule at <= 4 KV blocks makes a fifth block cheaper than four: the count it gives
    // one block more is costed too, so the time does not fall when the context grows past it.
    const attention_cost::OccupancySplitCounts counts =
        max_splits > 1
            ? attention_cost::occupancySplits(call.kernel, call.shape, call.groups, call.device.compute_units)
            : attention_cost::OccupancySplitCounts{};
    const int chosen = counts.chosen;
    const int longer = std::min(std::max(max_splits, 1), counts.past_short_kv);
    consider(1);
    if (chosen > 1) consider(chosen);
    if (longer > 1 && longer != chosen) consider(longer);
    return out;
  }
  for (int s = 1; s <= max_splits; ++s) {
    if (consider(s)) break;
  }
  return out;
}

}  // namespace

AttentionCost predictAttention(const AttentionShape& shape, const KernelModel& kernel, const DeviceModel& device,
                               Phase phase, std::span<const RequestGroup> groups, std::int64_t page_size,
                               const KernelModel* single_token_rows) {
  if (const HeadDimTiles* rule = tileRuleFor(shape, kernel)) {
    return predictAttention(shape, withTileRule(kernel, *rule), device, phase, groups, page_size, single_token_rows);
  }
  const Traffic t = attention_cost::countTraffic(shape, kernel, groups, page_size);
  const bool decode_like = phase == Phase::Decode || phase == Phase::Verify;
  const CallTerms c = callTerms(shape, kernel, device, t, page_size, decode_like, single_token_rows);
  if (kernel.unfused)
    return attention_cost::predictUnfused(shape, kernel, device, phase, groups, t, c.sinks, c.dequant);
  Call call{shape, kernel, device, groups, decode_like, page_size};
  call.split_tokens = t.tokens;
  if (!decode_like && kernel.splits_mixed_decode_rows) {
    double single = 0;
    for (const auto& g : groups) single += g.q_len == 1 ? static_cast<double>(g.count) : 0.0;
    call.splits_single_rows = single > 0 && single < t.tokens;
    call.split_tokens = single;
  }
  AttentionCost out = searchSplits(call, c);
  out.flops = t.flops;
  out.bytes_min = t.q_bytes + t.o_bytes + t.kv_unique;
  out.compute_us = out.flops_tiled / (c.peak * kernel.compute_efficiency);
  out.memory_us = out.bytes / (device.bytes_per_us * kernel.memory_efficiency);
  out.bound = attention_cost::roofBound(out);
  // One query head per KV head: the family's group-1 decode kernel, timed from the grouped one's.
  if (const Group1DecodeRule* g1 = group1RuleFor(shape, kernel, phase)) {
    out.kernel_us = g1->factor * out.kernel_us + g1->fixed_us;
    out.time_us = g1->factor * out.time_us + g1->fixed_us;
  }
  if (kernel.corrected != nullptr || kernel.decode_rows != nullptr)
    attention_cost::applyMeasuredCorrection(out, shape, kernel, device, phase, groups, page_size);
  return out;
}

}  // namespace attnsim
