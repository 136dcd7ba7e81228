// Prefill and extend work units: query tiles over the keys they attend, with their first-read DRAM bytes.
#include <algorithm>

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
  [[nodiscard]] std::int64_t keys(const RequestGroup& g, std::int64_t t) const {
    if (!s.causal) return roundUp(std::min(g.context, cap), k.tile_kv);
    const std::int64_t first = g.prefix() + t * bm / per_position;
    const std::int64_t last = g.prefix() + (t * bm + rows(g, t) - 1) / per_position;
    const std::int64_t start = std::max<std::int64_t>(0, first + 1 - cap);
    return roundUp(last + 1 - start, k.tile_kv);
  }
  // The keys tile t is the first of its request's tiles to read: tiles run in order and share what
  // an earlier tile of their head fetched (L2), so DRAM bytes go to the tile that first needs them.
  [[nodiscard]] std::int64_t newKeys(const RequestGroup& g, std::int64_t t) const {
    if (!s.causal) return t == 0 ? std::min(g.context, cap) : 0;
    auto end = [&](std::int64_t i) { return g.prefix() + (i * bm + rows(g, i) - 1) / per_position + 1; };
    if (t > 0) return end(t) - end(t - 1);
    return end(0) - std::max<std::int64_t>(0, g.prefix() + 1 - cap);
  }
};

}  // namespace

// A mixed call's single-token rows run at `single` (the kernel's decode-only efficiencies): the same
// program over the same bytes, so a row costs what it costs in a decode-only call of this kernel.
void prefillWaves(Waves& w, const AttentionShape& s, const KernelModel& k, const Rates& call_rates, const Rates& single,
                  std::span<const RequestGroup> groups, double reread, std::int64_t page_size, int single_splits) {
  const bool packed = k.family && k.family->packsQueryHeadsInPrefill();
  const PrefillTiles tiles{capOf(s), std::max(1, k.tile_q), packed ? s.groupSize() : 1, s, k};
  const double heads = packed ? s.num_kv_heads : s.num_heads;
  const double width = s.d_qk + s.d_v;
  for (const auto& g : groups) {
    const Traffic t = attention_cost::countTraffic(s, k, std::span<const RequestGroup>(&g, 1), page_size);
    const double dram = t.q_bytes + t.o_bytes + t.kv_read * reread + t.page_tables;
    const Rates& r = g.q_len == 1 ? single : call_rates;
    const double parts = g.q_len == 1 ? single_splits : 1;  // a single-token row's KV splits
    w.stream_extra_bytes += dram * (call_rates.byte_per_slot / r.byte_per_slot - 1);
    const std::int64_t n = tiles.count(g);
    double keys = 0;
    for (std::int64_t i = 0; i < n; ++i) keys += static_cast<double>(tiles.newKeys(g, i));
    const double bytes_per_key = keys > 0 ? dram / (keys * static_cast<double>(g.count) * heads) : 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const auto unit_keys = static_cast<double>(tiles.keys(g, i));
      const auto rows = static_cast<double>(tiles.rows(g, i));
      // Tensor-core tiles compute whole MMA blocks of 16 rows: a tile with fewer valid rows (a short
      // or single-token sequence) computes them rounded up to 16, as the decode units do; kernels pick
      // a smaller query tile for short rows (FlashInfer's CTA_TILE_Q 16, Triton's BLOCK_M 16).
      const double rows_computed =
          k.tensor_math ? static_cast<double>(std::min(tiles.bm, roundUp(tiles.rows(g, i), 16))) : rows;
      // A causal tile's diagonal block is masked element by element: one more pass of per-key work.
      const double masked = s.causal ? std::min(unit_keys, static_cast<double>(tiles.bm)) : 0.0;
      const double unit_bytes = static_cast<double>(tiles.newKeys(g, i)) * bytes_per_key;
      addUnits(w, r, static_cast<double>(g.count) * heads * parts, 2.0 * rows_computed * unit_keys * width / parts,
               unit_bytes / parts, (unit_keys + masked) / parts, rows * width * s.act_bytes,
               g.q_len == 1 ? unit_bytes / parts : 0.0);
    }
  }
}

}  // namespace attnsim::attention_cost
