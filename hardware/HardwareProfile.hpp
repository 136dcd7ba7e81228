#pragma once
// One accelerator (or CPU socket) as the cost model and the selectors see it.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/YamlReader.hpp"
#include "hardware/HostPlatform.hpp"
#include "hardware/Interconnect.hpp"
#include "hardware/KernelEfficiency.hpp"
#include "hardware/MoeFit.hpp"

namespace attnsim {

// Dense peak throughput per data type, TFLOP/s (TOPS for int8). Absent when the device has no such path.
struct PeakThroughput {
  std::optional<double> fp64_tflops, fp32_tflops, tf32_tflops, fp16_tflops, bf16_tflops, fp8_tflops, fp4_tflops,
      int8_tops;
};

struct HardwareProfile {
  std::string id;
  std::string name;
  std::string vendor;        // nvidia, amd, huawei, intel
  std::string platform;      // cuda, rocm, npu, xpu, cpu
  std::string architecture;  // ampere, ada, hopper, blackwell, cdna2, cdna3, cdna4, davinci, xe-hpc, sapphire-rapids
  std::optional<double> compute_capability;  // CUDA only, e.g. 9.0
  std::string gfx_target;                    // ROCm only, e.g. gfx942
  int compute_units = 0;                     // SMs, CUs, AI cores, Xe cores or CPU cores
  double boost_clock_mhz = 0;
  PeakThroughput peak;
  double memory_gb = 0;              // as the vendor states it (decimal GB)
  double memory_bandwidth_gbps = 0;  // GB/s
  // The device's total memory as the CUDA driver reports it (torch.cuda.mem_get_info, MiB), where
  // measured: what the engines multiply by their memory fraction; unset: memory_gb read as GiB.
  std::optional<double> reported_memory_mib;
  std::string reported_memory_source;
  std::int64_t l2_bytes = 0;
  // Read bandwidth of a working set the L2 holds (GB/s; 0: unknown) and where it comes from: what a
  // kernel replayed back to back on the same inputs reads at, as timed without an L2 flush.
  double l2_bandwidth_gbps = 0;
  std::string l2_bandwidth_source;
  std::optional<std::int64_t> llc_bytes;  // last-level cache beyond L2 (Infinity Cache, CPU L3)
  std::optional<double> shared_memory_per_cu_kib;
  std::vector<std::string> features;  // amx, xmx, tma, wgmma ...
  // Resolved when the catalog loads: the platform's figures (hardware/platforms), then the profile's
  // own (`overheads:`), then a calibration's.
  LaunchOverheads overheads;
  std::optional<OverheadOverrides> own_overheads;
  std::string interconnect;
  std::optional<InterconnectLink> interconnect_link;  // structured, for TP collectives
  std::optional<double> tdp_w;
  std::string source;
  std::string confidence;  // A primary, B primary via transcription, C secondary/estimated
  std::string notes;
  std::vector<std::string> device_names;  // names the device reports (torch, nvidia-smi), for imported measurements
  // Kernel-family efficiencies fitted to this device's measurements (hardware/calibrations/<id>.yaml),
  // keyed by (kernel family, phase class: prefill, extend or decode); they take precedence over the
  // family's own figures.
  std::map<std::pair<std::string, std::string>, KernelEfficiency> calibrations;
  // Dense GEMM efficiency surfaces per dtype (a calibration's `gemm:`), this device's own or, where
  // it has none, those of the calibrated device of its architecture (GemmSurface::transferred_from).
  std::vector<GemmSurface> gemm_surfaces;
  // Fused-MoE fits per (engine, expert dtype) (a calibration's `moe:`), this device's own or its
  // architecture's calibrated device's (MoeFit::transferred_from).
  std::vector<MoeFit> moe_fits;

  [[nodiscard]] int ccMajor() const { return compute_capability ? static_cast<int>(*compute_capability) : 0; }
  [[nodiscard]] bool hasFeature(const std::string& f) const;
  // The dtype's measured GEMM surface, resolved on this device (null: none, or no peak for the dtype).
  [[nodiscard]] const GemmSurface* gemmSurface(std::string_view dtype) const;
  [[nodiscard]] GemmRoofline gemmRoofline(std::string_view dtype) const;
  // The MoE fit of the dtype timed in `engine`, else in any engine (null: none).
  [[nodiscard]] const MoeFit* moeFit(std::string_view engine, std::string_view dtype) const;
};

HardwareProfile parseHardwareProfile(const YamlReader& r);

// The platforms a profile, backend or kernel family may name (cuda, rocm, npu, xpu, cpu).
const std::vector<std::string>& platformNames();

}  // namespace attnsim
