#pragma once
// The step's operator fits (GEMM surfaces, fused-MoE fits, all-reduces) carried from a calibrated device to the
// uncalibrated devices of its architecture, each resolved on its device's own roofline.
#include <vector>

#include "hardware/HardwareProfile.hpp"

namespace attnsim {

// A device without its own GEMM surface, MoE fits or all-reduce fit takes those of the first calibrated device (by
// id) of its architecture: the same tensor cores and kernels, run at its own peaks and bandwidth; an
// all-reduce only over a link of the same kind and bandwidth. Each says where it came from. Then every
// surface is resolved on its device (none kept where the device has no peak for the dtype). Likewise each
// attention calibration (kernel family and phase class) a device lacks, its measured surface with it:
// applied at the device's own roofline, with at least the documented transfer band.
void transferOperatorFits(std::vector<HardwareProfile>& hardware);

}  // namespace attnsim
