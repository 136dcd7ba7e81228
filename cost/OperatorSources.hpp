#pragma once
// Where a step's figures beside attention come from (the dense GEMMs and the TP all-reduce), as
// `predict` states them: a measured fit of this device, one transferred from its architecture's
// calibrated device, or the catalog's defaults.
#include <string>
#include <string_view>
#include <vector>

#include "hardware/KernelEfficiency.hpp"

namespace attnsim {

class Catalog;
struct HardwareProfile;
struct LinearKernels;
struct ModelSpec;

struct OperatorSource {
  std::string what;  // "dense GEMMs (fp8_block)", "TP all-reduce (sglang)"
  Provenance provenance = Provenance::Default;
  std::string source;
  UncertaintyBand band;
};

// The step's dense GEMMs (the checkpoint's dtype), a MoE model's routed experts and, at TP above 1,
// its all-reduce.
// The source of the routed experts' fit `k.moe` for `engine`: the fit's own, and when it is another engine's,
// why (the same kernel: the family's moe_runner; or `engine` not measured).
std::string moeFitSource(const LinearKernels& k, std::string_view engine);

std::vector<OperatorSource> stepOperatorSources(const Catalog& catalog, const HardwareProfile& hw,
                                                const ModelSpec& model, std::string_view engine, int tp);

}  // namespace attnsim
