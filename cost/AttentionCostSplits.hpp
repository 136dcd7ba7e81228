#pragma once
// The split counts kernels launch by their own rules rather than the fastest split the cost model
// would search for: the engines' Triton decode kernels, the ROCm paged-attention partitions
// (AttentionCost.cpp asks here before its search) and FlashAttention's occupancy heuristic.
#include <span>

#include "cost/AttentionCost.hpp"

namespace attnsim::attention_cost {

// The split count of a decode call whose kernel has a split rule (fixed, segments, sglang, partition,
// per_sm); 0 when the kernel's rule is `search` or `occupancy`. Allocation-free.
int ruledSplits(const KernelModel& kernel, const AttentionShape& shape, std::span<const RequestGroup> groups,
                int compute_units);

// PyTorch flex-decoding's count (split_rule kind per_sm): the policy's splits per SM over the
// call's (request, KV head) programs, at least 1.
int perSmSplits(const KernelModel& kernel, const AttentionShape& shape, std::span<const RequestGroup> groups,
                int compute_units);

// FlashAttention's num_splits_heuristic for the call (see AttentionCostSplits.cpp): the count it
// picks, and the count it gives the same work once its KV exceeds 4 blocks (its no-split rule for
// short KV left out). One pass: the two differ only at that rule.
struct OccupancySplitCounts {
  int chosen = 1;
  int past_short_kv = 1;
};
OccupancySplitCounts occupancySplits(const KernelModel& kernel, const AttentionShape& shape,
                                     std::span<const RequestGroup> groups, int compute_units);

}  // namespace attnsim::attention_cost
