// FLOP and byte counts of one attention call: the exact counts behind the roofline's lower bound,
// and the KV, page-table, Q and O bytes the kernel moves (GQA re-reads are the caller's, as they
// depend on the device's L2).
#include <algorithm>

#include "cost/AttentionCost.hpp"
#include "cost/AttentionCostInternal.hpp"

namespace attnsim {

namespace {

using attention_cost::capOf;
using attention_cost::kNoCap;

// Keys seen by the query row at absolute position `pos` (0-based), causal.
std::int64_t keysAt(std::int64_t pos, std::int64_t cap) { return std::min(pos + 1, cap); }

}  // namespace

double attendedKeys(const RequestGroup& g, const AttentionShape& s) {
  const std::int64_t cap = capOf(s);
  const std::int64_t prefix = g.prefix();
  if (!s.causal) return static_cast<double>(g.q_len) * static_cast<double>(std::min(g.context, cap));
  if (g.tree_topk > 1) {
    // A speculative tree: the root, then levels of tree_topk nodes; a node sees the prefix and its path.
    auto sum = static_cast<double>(keysAt(prefix, cap));
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

namespace attention_cost {

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

}  // namespace attention_cost

}  // namespace attnsim
