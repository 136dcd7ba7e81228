#pragma once
// Which tiles DeepGEMM's Hopper FP8 GEMM (block-scaled, bf16 out: SGLang's fp8_block linear,
// deep_gemm fp8_gemm_nt through sglang.srt.layers.deep_gemm_wrapper gemm_nt_f8f8bf16) launches for a
// shape, and when that launch runs slowly. Facts from sgl-project/DeepGEMM@88965b0
// csrc/jit_kernels/heuristics/sm90.hpp (get_layout_candidates, get_pipeline_config, get_layout_info)
// and common.hpp (get_best_config); the slow class from AIConfigurator's H100 SGLang 0.5.14 rows
// (docs/MEASUREMENTS.md, "The step's GEMMs and all-reduces").

namespace attnsim {

struct DeepGemmTiles {
  int block_m = 0, block_n = 0;
  int cluster = 1;  // 2: TMA multicast of A or B over a pair of SMs
  int stages = 0;   // pipeline stages that fit the shared memory
  long long blocks = 0, waves = 0;
};

// DeepGEMM's pick on SM90 for an FP8 1D2D GEMM of m × n × k on `sms` SMs: every legal (block M, block N,
// cluster) is costed by its modelled L1/L2 traffic over its wave efficiency, the cheapest taken (first
// on ties). Allocation-free.
DeepGemmTiles deepGemmSm90Tiles(double m, double n, double k, int sms);

// One wave of tiles, no multicast and at most 4 stages (tiles of 128 × 192 or 256 × 96-128): each SM
// computes its one tile along the whole K, and those launches take far longer than the shape's
// neighbours (H100, N 2,048 × K 16,384: M 1,281-2,048 take 333-364 µs, M 2,049 172).
bool deepGemmSingleWaveDeepTile(const DeepGemmTiles& t);

// deepGemmSingleWaveDeepTile(deepGemmSm90Tiles(m, n, k, sms)), remembered per thread so that a step can
// ask it for every linear: allocation-free, a fixed table of the last answers per (⌈M/64⌉, N, K, SMs).
// Above 32 rows the pick reads M only through its blocks of 64, 128 and 256 rows, all fixed by ⌈M/64⌉,
// so one answer stands for 64 values of M. No call of M ≤ 64 is in the class (a 64-row tile of the same
// block N has as many blocks and moves fewer bytes, so it wins; tests/test_operator_fits.cpp checks it
// over a grid), nor one of M × N above 256 × 128 per SM (no legal tile covers it in one wave): both are
// answered without the pick.
bool deepGemmSingleWaveClass(double m, double n, double k, int sms);

}  // namespace attnsim
