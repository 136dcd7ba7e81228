#pragma once
// The split counts the engines' Triton decode kernels launch, which follow fixed rules rather than the
// fastest split the cost model would search for (AttentionCost.cpp asks here before its search).
#include <span>

#include "cost/AttentionCost.hpp"

namespace attnsim::attention_cost {

// The split count of a decode call whose kernel has a split rule (fixed, segments, sglang); 0 when the
// kernel's rule is `search`. Allocation-free.
int ruledSplits(const KernelModel& kernel, const AttentionShape& shape, std::span<const RequestGroup> groups,
                int compute_units);

}  // namespace attnsim::attention_cost
