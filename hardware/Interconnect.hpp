#pragma once
// The link GPUs of one node use for tensor-parallel collectives, as structured, sourced data
// (`interconnect_link:` in a hardware profile, beside the free-text `interconnect`).
#include <optional>
#include <string>

#include "core/YamlReader.hpp"
#include "hardware/OperatorFits.hpp"

namespace attnsim {

struct InterconnectLink {
  std::string kind;           // nvswitch, nvlink, xgmi, pcie
  double bandwidth_gbps = 0;  // per GPU, per direction, GB/s (the ring all-reduce's bus bandwidth bound)
  double latency_us = 0;      // fixed cost of one collective call
  int max_gpus = 1;           // GPUs one node connects this way (the largest TP over this link)
  std::string source;
  // The engines' custom all-reduces and NCCL's measured over this link (a calibration's `allreduce:`,
  // NCCL under `nccl`); none: the ring model above, on the profile's figures.
  std::vector<AllReduceFit> all_reduces;

  // The fit of this engine's all-reduce, else the first engine's measured (not NCCL's: an engine's
  // own all-reduce is what an unmeasured engine is closest to); null when none was.
  [[nodiscard]] const AllReduceFit* allReduceFor(std::string_view engine) const;
  // NCCL's all-reduce measured over this link (the `nccl` entry of `allreduce:`); null when it was not.
  [[nodiscard]] const AllReduceFit* ncclAllReduce() const;
};

extern const std::vector<std::string> kInterconnectKinds;

std::optional<InterconnectLink> parseInterconnectLink(const YamlReader& profile);

}  // namespace attnsim
