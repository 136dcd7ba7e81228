#pragma once
// Shared by the attention cost's translation units, not offered outside the cost stage:
// AttentionTraffic.cpp counts FLOPs and bytes, UnfusedAttention.cpp costs library-kernel paths,
// AttentionCost.cpp spreads fused kernels' work units over the machine. The small helpers are
// inline because the split search calls them in its hot loop.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>

#include "cost/AttentionCost.hpp"

namespace attnsim::attention_cost {

inline constexpr std::int64_t kNoCap = std::numeric_limits<std::int64_t>::max() / 4;
inline constexpr double kBytesPerIndex = 4;  // int32 page-table entries
inline constexpr double kPartialBytes = 4;   // split-KV partial outputs and LSE in fp32

inline std::int64_t capOf(const AttentionShape& s) {
  std::int64_t cap = kNoCap;
  if (s.window > 0) cap = std::min(cap, s.window);
  if (s.top_k > 0) cap = std::min(cap, s.top_k);
  return cap;
}

inline std::int64_t ceilDiv(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
inline std::int64_t roundUp(std::int64_t a, std::int64_t m) { return ceilDiv(a, m) * m; }

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
                     std::int64_t page_size);

// sinks: the sink logits' bytes; dequant: the math factor of a quantized KV cache.
AttentionCost predictUnfused(const AttentionShape& s, const KernelModel& kernel, const DeviceModel& device, Phase phase,
                             std::span<const RequestGroup> groups, const Traffic& t, double sinks, double dequant);

}  // namespace attnsim::attention_cost
