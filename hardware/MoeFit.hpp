#pragma once
// What a device's measurements say about one MoE layer's routed experts (a calibration's `moe:`
// entry, hardware/calibrations/<id>.yaml): the fused-MoE call's achieved fraction of the roofline of
// its expert GEMMs as a function of the tokens each active expert serves and of the expert's
// intermediate width, over a fixed time.
#include <optional>
#include <string>
#include <vector>

#include "core/YamlReader.hpp"
#include "hardware/KernelEfficiency.hpp"
#include "hardware/OperatorFits.hpp"

namespace attnsim {

// One MoE layer call on one GPU: the rank's slice of every expert it holds. `assignments` is the
// (token, expert) pairs routed to this rank's experts (tokens · top-k without expert parallelism);
// `active` the rank's experts that receive at least one (< 0: balanced routing, min(experts, assignments));
// `matrices` an expert's weight matrices: 3 gated (gate, up, down), 2 without a gate (Nemotron-H's relu²).
struct MoeCall {
  double tokens = 0, hidden = 0;
  double inter = 0;    // an expert's intermediate width on this rank (inter_size / TP)
  double experts = 0;  // experts on this rank
  double assignments = 0;
  double active = -1;
  double matrices = 3;
  [[nodiscard]] double activeExperts() const;
  [[nodiscard]] double tokensPerExpert() const { return assignments / activeExperts(); }
  // The width on the fit's grid: the expert's first GEMM's output width, (matrices - 1) · inter (gate and up
  // fused, 2 · inter, with a gate; inter without), over 2: a gated expert's intermediate width, half of it
  // without a gate (FlashInfer's trtllm-gen runs that GEMM intermediateSizeFactor · inter wide, 2 gated).
  [[nodiscard]] double gridWidth() const { return (matrices - 1) * inter / 2; }
};

// The roofline of a call's expert GEMMs: gate-up (2·inter; up alone, inter, without a gate) and down over
// every assignment, 2 · matrices · assignments · hidden · inter FLOPs at the dtype's peak; each active
// expert's matrices · hidden · inter weights read once at the dtype's width and the assignments'
// activations (hidden in and out, the gate-up output and the inter activation) in bf16, at the DRAM bandwidth.
double moeRooflineUs(const GemmRoofline& rates, const MoeCall& call);

// The weights the call reads, MiB: each active expert's matrices · hidden · inter at the dtype's width.
double moeWeightMib(const GemmRoofline& rates, const MoeCall& call);

// The fitted call: fixed_us + roofline / efficiency(tokens per active expert, weights read, inter), the log
// of the efficiency interpolated trilinearly over log2 of the three on a grid and held at its edges beyond
// it. Tokens per expert set the expert GEMMs' arithmetic intensity; the weights read the call's size (how
// far it fills the GPU: a few small experts leave the DRAM and the SMs idle); the width the GEMMs' tiles.
struct MoeFit {
  std::string engine;  // whose fused-MoE call was timed (vllm, sglang)
  std::string dtype;   // the experts' weights: bf16, fp8, fp8_block, nvfp4, mxfp4
  std::string kernel;  // the engine's kernel as the database names it
  double fixed_us = 0;
  std::vector<double> log2_tokens_per_expert, log2_inter;  // ascending
  std::vector<double> log2_weights_mib{0.0};               // ascending; one node: no weights axis
  std::vector<double> log_efficiency;                      // [tokens per expert][weights][inter], inter fastest
  int points = 0;
  std::string source;
  std::optional<HeldOutResiduals> heldout;
  // The engine stores the experts with the hidden size and the width rounded up to a multiple of this
  // (performance.weight_padding of the grouped-gemm family; 1: none): the call runs at the padded sizes.
  int pad_to = 1;
  // The kernel's token tiles (performance.token_tiles of the grouped-gemm family; empty: no tile rule) and, per
  // tile, the exponent of the call's fill of its power-of-two tile (moeTileFill) in the factor on its time beyond
  // fixed_us: (next power of two / tokens per expert)^exponent where the tile is the call's own (0: none).
  std::vector<double> token_tiles, tile_fill_exponent;
  std::string transferred_from;  // empty: this device's own measurements
  GemmRoofline roofline;         // the device's (set where the device is resolved)

  // The call as the kernel runs it: hidden and inter rounded up to a multiple of pad_to.
  [[nodiscard]] MoeCall padded(const MoeCall& call) const;
  // The call's time on the resolved device, µs. Allocation-free.
  [[nodiscard]] double us(const MoeCall& call) const;
  // The same without the token-tile factor: fixed_us + roofline / efficiency of the grid.
  [[nodiscard]] double gridUs(const MoeCall& call) const;
  // The log of the token-tile factor on the call: its tile's exponent times its log shortfall (0 without tiles).
  [[nodiscard]] double tileLogFactor(const MoeCall& call) const;
  [[nodiscard]] std::size_t index(std::size_t it, std::size_t iw, std::size_t ii) const {
    return (it * log2_weights_mib.size() + iw) * log2_inter.size() + ii;
  }
};

// FlashInfer's trtllm-gen token tile for a call: the index in `tiles` (ascending powers of two) of the one below
// the next power of two of its tokens per active expert, clamped to the tiles (the smallest candidate of
// computeSelectedTileN, which a call without a tuned tactic runs; hardware/MoeTiles.cpp).
std::size_t moeTokenTileIndex(const std::vector<double>& tiles, double tokens_per_expert);
// A call's own tile (its index in `tiles`) and the log of how far its tokens per active expert fall short of
// their next power of two (0 at a power of two): the share of the power-of-two tile the padding wastes.
struct MoeTileFill {
  std::size_t tile = 0;
  double log_shortfall = 0;
};
MoeTileFill moeTileFill(const std::vector<double>& tiles, const MoeCall& call);

// The held-out p90 of the fit, else the non-attention default; at least that default when transferred.
UncertaintyBand bandOf(const MoeFit& f);

// `moe: {<engine>: {<dtype>: {kernel, fixed_us, tokens_per_expert, weights_mib, inter, efficiency, pad_to,
// token_tiles, tile_fill_exponent, points, heldout, source}}}` of a calibration file (weights_mib absent: one
// node, the grid over the other two; token_tiles absent: no tile rule).
std::vector<MoeFit> parseMoeFits(const YamlReader& moe, const std::string& origin);
// A fit's `token_tiles` and `tile_fill_exponent` (one per tile) into f.
void parseMoeTokenTiles(const YamlReader& r, MoeFit& f);

}  // namespace attnsim
