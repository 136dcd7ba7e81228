// vLLM FLEX_ATTENTION's work units: query blocks of the flattened batch that span requests.
#include <algorithm>

#include "cost/AttentionCostInternal.hpp"

namespace attnsim::attention_cost {

// Query blocks that span requests (vLLM's FLEX_ATTENTION, flex_attention.py build_block_mask_direct):
// a request of fewer than tile_q new tokens shares its block with floor(tile_q / q_len) - 1 others, and
// the block visits all their pages; a longer request takes ceil(q_len / tile_q) blocks of its own, each
// visiting all its pages. Blocks of different requests read different keys: their bytes are their own.
void spanningBlockWaves(Waves& w, const AttentionShape& s, const KernelModel& k, const Rates& r,
                        std::span<const RequestGroup> groups, double reread, double index_bytes_per_key) {
  const std::int64_t bm = std::max(1, k.tile_q);
  const double heads = k.gqa_packing ? s.num_kv_heads : s.num_heads;
  const double width = s.d_qk + s.d_v;
  const double bytes_per_key = kvBytesPerKey(s, k, reread, index_bytes_per_key);
  const double qo_bytes = static_cast<double>(bm) * width * s.act_bytes;
  auto add = [&](double blocks, double keys) {
    const double bytes = keys * bytes_per_key + qo_bytes;
    addUnits(w, r, blocks * heads, 2.0 * static_cast<double>(bm) * keys * width, bytes, keys, qo_bytes, bytes);
  };
  for (const auto& g : groups) {
    const auto keys = static_cast<double>(roundUp(uniqueKvTokens(g, s), k.tile_kv));
    if (g.q_len >= bm) {
      add(static_cast<double>(g.count * ceilDiv(g.q_len, bm)), keys);
      continue;
    }
    const std::int64_t per_block = bm / g.q_len;
    const std::int64_t full = g.count / per_block;
    if (full > 0) add(static_cast<double>(full), keys * static_cast<double>(per_block));
    if (g.count % per_block > 0) add(1, keys * static_cast<double>(g.count % per_block));
  }
}

}  // namespace attnsim::attention_cost
