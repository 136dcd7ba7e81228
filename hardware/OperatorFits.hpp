#pragma once
// What a device's measurements say about the operators of a step beside attention (a calibration's
// `gemm:` and `allreduce:` entries, hardware/calibrations/<id>.yaml): the dense GEMM's achieved
// fraction of its roofline over a grid of shapes, and the TP all-reduce's two regimes.
#include <algorithm>
#include <array>
#include <cmath>
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
  int sms = 0;  // the device's SMs (a kernel's tile pick depends on them); 0: unknown
  [[nodiscard]] double us(double m, double n, double k) const;
};
struct PeakThroughput;
GemmRoofline gemmRoofline(const PeakThroughput& peak, double bandwidth_gbps, std::string_view dtype);

// What another engine's timed GEMM call holds beside the kernel of a surface (AIConfigurator's
// collectors time each engine's own linear layer, collector/vllm/collect_gemm.py and
// collector/sglang/collect_gemm.py@095f58a): vLLM's block-FP8 call runs eagerly, so the host's issue
// time of its Python dispatch, activation quantization and kernel launches bounds it from below;
// vLLM's per-tensor FP8 call adds its own activation quantization kernels. Per shape class, a floor
// (the host issue time: an eager call back to back takes at least that) and a time added to the
// kernel's, fixed and per row of A (vLLM's dynamic per-tensor FP8 quantization reduces the absolute
// maximum with one block per token, each block an atomic max on the one scale: csrc/quantization/w8a8/
// fp8/common.cu dynamic_scaled_fp8_quant), and the kernel's time scaled where the engine's own kernel
// or timing differs (vLLM times one weight copy per graph for nvfp4, L2-warm, where SGLang's rows cycle
// six): time = max(floor, scale · kernel + extra + per_row · M). The classes follow where vLLM 0.24's block-FP8
// dispatch changes path: DeepGEMM takes N % 64 == 0 and K % 128 == 0 only (vllm/utils/deep_gemm.py
// should_use_deepgemm_for_fp8_linear; CUTLASS otherwise), FlashInfer's swap-AB kernel takes M < 32 on
// the GPUs with the dynamic kernel (vllm/model_executor/kernels/linear/scaled_mm/flashinfer.py), and an
// M that is not a multiple of 4 leaves the per-token-group scales off TMA's 16-byte alignment, which
// costs an extra layout pass when K spans more than one 128-wide group.
inline constexpr std::size_t kGemmShapeClasses = 5;
// 0: N % 64 or K % 128 off (no DeepGEMM); 1: M < 32, scales aligned; 2: M < 32, not; 3: M >= 32,
// aligned; 4: M >= 32, not.
std::size_t gemmShapeClass(double m, double n, double k);
// Per-tensor FP8 (one scale for all of A) takes other classes: vLLM's CUTLASS scaled-mm picks its config
// by M alone (SM100: swap-AB tiles of 32 rows of A up to M 16 and of 64 up to 64, 128-row tiles up to 256,
// 256-row ones above: vllm-project/vllm@487e7b0e csrc/quantization/w8a8/cutlass/c3x/
// scaled_mm_sm100_fp8_dispatch.cuh; SM90 splits at 16, 64 and 128, scaled_mm_sm90_fp8_dispatch.cuh), and
// its timed call at M = 1 costs a fixed 9-16 µs more than at M = 2 on the B200 (docs/MEASUREMENTS.md).
// 0: M = 1; 1: M 2-16 (one swap-AB tile); 2: M 17-256; 3: above, whole 256-row tiles (SM100's default
// config); 4: above, the last tile part-filled.
std::size_t gemmPerTensorFp8Class(double m);
struct GemmEngineTiming {
  std::string engine;
  std::array<double, kGemmShapeClasses> floor_us{}, extra_us{}, per_row_us{};
  std::array<double, kGemmShapeClasses> kernel_scale{1, 1, 1, 1, 1};
  int points = 0;
  bool per_tensor_fp8 = false;  // classes by gemmPerTensorFp8Class, else gemmShapeClass
  // Per element of A (M · K), every class: per-tensor FP8's quantization reads all of A twice, once for
  // its maximum and once to convert it (dynamic_scaled_fp8_quant above), where SGLang's per-token pass,
  // inside the kernel surface, converts each row as it reads it. 0 for the other dtypes.
  double per_element_us = 0;
  std::optional<HeldOutResiduals> heldout;
  [[nodiscard]] std::size_t shapeClass(double m, double n, double k) const {
    return per_tensor_fp8 ? gemmPerTensorFp8Class(m) : gemmShapeClass(m, n, k);
  }
  [[nodiscard]] double us(double kernel_us, double m, double n, double k) const {
    const std::size_t c = shapeClass(m, n, k);
    const double added = extra_us[c] + per_row_us[c] * m + per_element_us * m * k;
    return std::max(floor_us[c], kernel_scale[c] * kernel_us + added);
  }
};

// DeepGEMM's Hopper FP8 launches of one wave of deep-pipelined tiles without multicast
// (hardware/DeepGemmPick.hpp deepGemmSingleWaveDeepTile): each SM runs one tile along the whole K, so the
// call takes a time fixed by K alone (fixed_us + per_k_block_us per 128 of K) whatever M and N, or the
// surface's where that is longer (a large M over few N reads A at the DRAM's pace). Fitted on the grid
// rows of that class, which the surface leaves out.
// Only the engine whose DeepGEMM build was timed runs them so (vLLM 0.24's block-FP8 rows of those shapes
// take 86-98 µs, its eager floor, where SGLang's take 155: its own DeepGEMM picks differently).
struct GemmSingleWave {
  std::string engine;  // whose rows show them (sglang)
  double fixed_us = 0, per_k_block_us = 0;
  int points = 0;
  [[nodiscard]] double us(double k) const { return fixed_us + per_k_block_us * std::ceil(k / 128); }
};

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
  std::string transferred_from;           // empty: this device's own measurements
  std::vector<GemmEngineTiming> engines;  // the other engines' timed calls over this kernel
  // Rows of A per tile of the dtype's kernels (1: none): an M above one tile costs what the next multiple
  // of the tile costs, the padded rows of its last tile computed and thrown away (study/OperatorCalibration.cpp
  // gemmMTile says which kernels and why); the grid's nodes, powers of two, are multiples of it already.
  double m_tile = 1;
  std::optional<GemmSingleWave> single_wave;  // `single_wave:` of a Hopper fp8_block surface
  GemmRoofline roofline;                      // the device's (resolve)
  std::vector<double> log_time;               // per node on the device (resolve)

  void resolve(const GemmRoofline& device);
  // The GEMM's time on the resolved device, µs. Allocation-free.
  [[nodiscard]] double us(double m, double n, double k) const { return kernelUs({}, m, n, k); }
  // The kernel as `engine` runs it: the single-wave class only for its own engine (or none named).
  [[nodiscard]] double kernelUs(std::string_view engine, double m, double n, double k) const;
  // Whether kernelUs prices `engine`'s calls (none named: as the class's own engine) with the one-wave class.
  [[nodiscard]] bool takesSingleWave(std::string_view engine) const {
    return single_wave && roofline.sms > 0 && (engine.empty() || engine == single_wave->engine);
  }
  // The surface's interpolation alone (no single-wave class).
  [[nodiscard]] double surfaceUs(double m, double n, double k) const;
  // One engine's timed call of the shape (GemmEngineTiming), the kernel's time for any other engine.
  [[nodiscard]] double engineUs(std::string_view engine, double m, double n, double k) const;
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
// An engine's custom all-reduce changes with the GPU count: its kernel runs one-shot at 2 GPUs and
// switches to two-shot at a size that falls with the GPUs, and above a size that also depends on the
// GPU count the engine leaves it for another all-reduce (vLLM: csrc/custom_all_reduce.cuh, the
// per-world-size limits of vllm/distributed/device_communicators/all_reduce_utils.py; SGLang's copy in
// sgl-kernel). So each measured GPU count has regimes of its own (`ranks:`), and the shared regimes
// stand for the GPU counts not measured.
struct AllReduceRegimes {
  int ranks = 0;
  double one_shot_latency_us = 0, one_shot_gbps = 0;
  double two_shot_latency_us = 0, two_shot_gbps = 0;
};

struct AllReduceFit {
  std::string engine;  // the engine whose all-reduce was timed (vllm, sglang), or nccl
  double one_shot_latency_us = 0, one_shot_gbps = 0;
  double two_shot_latency_us = 0, two_shot_gbps = 0;
  double one_shot_per_peer_us = 0, two_shot_per_peer_us = 0;
  std::vector<AllReduceRegimes> per_ranks;  // ascending ranks; empty: the shared regimes everywhere
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
