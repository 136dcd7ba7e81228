#pragma once
// The host side of a device: the driver (CUDA, HIP, ...), the host CPU and the engine's Python and
// PyTorch layers that issue its work. Launch, graph-replay and capture costs belong here, not to
// one GPU: hardware/platforms/<platform>.yaml gives sourced defaults that every profile of that
// platform inherits; a profile may override single figures and a calibration overrides them all.
#include <optional>
#include <string>
#include <vector>

#include "core/YamlReader.hpp"

namespace attnsim {

// Host-side costs of launching work, each with where its figure comes from.
struct LaunchOverheads {
  double kernel_launch_us = 0;           // host time to issue one kernel of an engine's eager step
  double eager_gap_us = 0;               // GPU idle gap between stream-launched kernels, host ahead
  double graph_replay_base_us = 0;       // host cost of one graph launch
  double graph_replay_per_node_us = 0;   // GPU idle gap before each node of a replayed graph
  double graph_capture_ms_per_size = 0;  // one-time capture time of one batch size
  bool graphs = true;                    // whether the platform can capture and replay graphs at all
  std::string source;                    // where each figure comes from
};

// The figures a hardware profile sets itself (its `overheads:` map); unset ones come from the platform.
struct OverheadOverrides {
  std::optional<double> kernel_launch_us, eager_gap_us, graph_replay_base_us, graph_replay_per_node_us,
      graph_capture_ms_per_size;
  std::string source;
};

struct HostPlatform {
  std::string id;  // cuda, rocm, npu, xpu, cpu: a hardware profile's `platform`
  std::string name;
  LaunchOverheads overheads;
};

HostPlatform parseHostPlatform(const YamlReader& r);
// The optional `overheads:` map of a hardware profile.
OverheadOverrides parseOverheadOverrides(const YamlReader& r);
// The platform's figures with the profile's own in their place.
LaunchOverheads resolveOverheads(const HostPlatform& platform, const OverheadOverrides& own);

}  // namespace attnsim
