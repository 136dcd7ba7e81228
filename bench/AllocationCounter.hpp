#pragma once
// Heap allocations made by this program (bench/AllocationCounter.cpp replaces operator new), so a
// benchmark can report how many its loop makes per item.
#include <cstdint>

namespace attnsim::bench {

std::int64_t allocations();

}  // namespace attnsim::bench
