#pragma once
// What a device's measurements say about the operators of a step beside attention (a calibration's
// `gemm:` and `allreduce:` entries, hardware/calibrations/<id>.yaml): the dense GEMM's achieved
// fraction of its roofline over a grid of shapes, and the TP all-reduce's two regimes.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/YamlReader.hpp"
#include "hardware/KernelEfficiency.hpp"

namespace attnsim {

// The dtypes a GEMM surface may be fitted for: bf16 activations and weights; fp8 per-tensor (or
// per-token) scaled; fp8 with 128×128 block scales (DeepSeek's checkpoints, DeepGEMM); nvfp4.
extern const std::vector<std::string> kGemmDtypes;
// The dtypes a fused-MoE fit may be fitted for: the GEMM dtypes and mxfp4 experts with bf16
// activations (w4a16: gpt-oss's checkpoints, AIConfigurator's w4a16_mxfp4).
extern const std::vector<std::string> kMoeDtypes;

// A GEMM's roofline on a device for one dtype: the larger of 2MNK at the dtype's tensor peak and the
// bytes of A, B and C at the DRAM bandwidth; no fixed time, no efficiency. A and B are read at the
// dtype's width (bf16 2 bytes; fp8 and fp8_block 1, the activation quantized inside the call; nvfp4
// 4.5 bits), C written in bf16.
struct GemmRoofline {
  double flops_per_us = 0;  // 0: the device has no peak for the dtype
  double bytes_per_us = 0;
  double a_bytes = 2, b_bytes = 2, c_bytes = 2;
  [[nodiscard]] double us(double m, double n, double k) const;
};
struct PeakThroughput;
GemmRoofline gemmRoofline(const PeakThroughput& peak, double bandwidth_gbps, std::string_view dtype);

// A dense GEMM's efficiency over (M, N, K): at each node of a grid of powers of two, the roofline
// time over the measured time. On a device (resolve) each node's time is its roofline there over the
// node's efficiency, made non-decreasing along M, N and K (more work never takes less time: what is
// left is the tables' noise); between nodes the log of the time is interpolated linearly in log2 M,
// log2 N, log2 K, and beyond the grid it scales with the roofline from the nearest edge.
struct GemmSurface {
  std::string dtype;
  std::vector<double> log2_m, log2_n, log2_k;  // ascending
  std::vector<double> log_efficiency;          // [m][n][k], k fastest
  int points = 0;                              // nodes measured (the rest filled from their neighbours)
  std::string source;
  std::optional<HeldOutResiduals> heldout;
  std::string transferred_from;  // empty: this device's own measurements
  GemmRoofline roofline;         // the device's (resolve)
  std::vector<double> log_time;  // per node on the device (resolve)

  void resolve(const GemmRoofline& device);
  // The GEMM's time on the resolved device, µs. Allocation-free.
  [[nodiscard]] double us(double m, double n, double k) const;
  [[nodiscard]] std::size_t index(std::size_t im, std::size_t in, std::size_t ik) const {
    return (im * log2_n.size() + in) * log2_k.size() + ik;
  }
};

// The engine's custom all-reduce inside one node: the smaller of a one-shot regime (each GPU reads
// every peer's whole buffer: latency + (n-1)/n · bytes / bandwidth) and a two-shot regime
// (reduce-scatter then all-gather: latency + 2(n-1)/n · bytes / bandwidth), fitted to measured calls.
// The key of NCCL's own all-reduce among a calibration's `allreduce:` entries (timed by nccl-tests,
// not inside an engine): what an engine runs where its custom all-reduce cannot (cost/Collective.hpp).
inline constexpr std::string_view kNcclAllReduce = "nccl";

// NCCL's latency grows with the GPUs (its ring and tree take more steps): each regime may add
// latency_per_peer_us for every GPU beyond the first (0 for the engines' custom kernels, whose one
// shot reads every peer at once).
struct AllReduceFit {
  std::string engine;  // the engine whose all-reduce was timed (vllm, sglang), or nccl
  double one_shot_latency_us = 0, one_shot_gbps = 0;
  double two_shot_latency_us = 0, two_shot_gbps = 0;
  double one_shot_per_peer_us = 0, two_shot_per_peer_us = 0;
  int points = 0;
  double fit_mape = 0;
  std::string source;
  std::optional<HeldOutResiduals> heldout;
  std::string transferred_from;

  [[nodiscard]] double us(double bytes, int ranks) const;
};

// The relative band of a measured operator fit: its held-out p90 error, else its fit's MAPE as a p90.
// Transferred from another device: at least the non-attention default band (documented), since the
// held-out error says nothing of the transfer.
UncertaintyBand bandOf(const GemmSurface& s);
UncertaintyBand bandOf(const AllReduceFit& f);

// `gemm: {<dtype>: {m, n, k, efficiency, points, heldout}}` and `allreduce: {<engine>: {one_shot,
// two_shot, points, fit_mape, heldout}}` of a calibration file.
std::vector<GemmSurface> parseGemmSurfaces(const YamlReader& gemm, const std::string& origin);
std::vector<AllReduceFit> parseAllReduceFits(const YamlReader& allreduce, const std::string& origin);
std::optional<HeldOutResiduals> parseHeldOutResiduals(const YamlReader& fit);

}  // namespace attnsim
