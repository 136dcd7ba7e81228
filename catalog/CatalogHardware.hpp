#pragma once
// Catalog loading, hardware part: operator fits (GEMM surfaces, all-reduce fits) a device takes
// from a calibrated device of its architecture (catalog/Catalog.cpp calls it after the calibrations).
#include <vector>

#include "hardware/HardwareProfile.hpp"

namespace attnsim {

// A device without its own GEMM surface or all-reduce fit takes those of the first calibrated device (by
// id) of its architecture: the same tensor cores and kernels, run at its own peaks and bandwidth; an
// all-reduce only over a link of the same kind and bandwidth. Each says where it came from.
void transferOperatorFits(std::vector<HardwareProfile>& hardware);

}  // namespace attnsim
