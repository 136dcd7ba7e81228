#pragma once
#include <cstddef>

// The catalog-wide laws sweep every profile in the release run. Under ASan+UBSan (scripts/test.sh's second
// run, -DATTNSIM_SANITIZE=ON) they sweep every third: that run looks for memory errors and undefined
// behaviour in the same code paths, which a sample reaches at a third of the cost; the laws themselves are
// judged in full by the release run.
namespace attnsim::test {

#ifdef ATTNSIM_TESTS_SANITIZED
inline constexpr std::size_t kSanitizerStride = 3;
#else
inline constexpr std::size_t kSanitizerStride = 1;
#endif

// Whether the index-th item of a catalog-wide sweep is checked in this build.
inline bool checkedInThisBuild(std::size_t index) { return index % kSanitizerStride == 0; }

// A count a full sweep must exceed, scaled to the share this build checks.
inline std::size_t sweepFloor(std::size_t full_sweep_floor) { return full_sweep_floor / kSanitizerStride; }

}  // namespace attnsim::test
