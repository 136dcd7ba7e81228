#pragma once
// How well a kernel uses a device: the roofline's efficiencies and fixed costs. Kernel families
// carry defaults per architecture; a device's calibration (hardware/calibrations/) overrides them.
#include <string>

namespace attnsim {

// Efficiency parameters of the roofline: achieved fraction of the device's peak FLOP/s and memory
// bandwidth, and the fixed time of one launch on the GPU (prologue, epilogue, tail).
struct KernelEfficiency {
  double compute_efficiency = 0.5;
  double memory_efficiency = 0.75;
  double fixed_us = 3.0;
  double key_ns = 0;        // per key a work unit visits: loop and softmax work that does not scale with head width
  double host_plan_us = 0;  // CPU work per forward before the first launch (plan(), scheduler metadata)
  std::string source;
};

}  // namespace attnsim
