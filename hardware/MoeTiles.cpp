// The token-tile rule of FlashInfer's trtllm-gen fused MoE and the MoE fit's factor on it (hardware/MoeFit.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "hardware/MoeFit.hpp"

namespace attnsim {

namespace {
// nextPowerOfTwo(ceil(tokens per expert)) of FlashInfer's launcher, at least 1.
double moeNextPowerOfTwo(double tokens_per_expert) {
  return std::exp2(std::ceil(std::log2(std::max(1.0, std::ceil(tokens_per_expert)))));
}
}  // namespace

std::size_t moeTokenTileIndex(const std::vector<double>& tiles, double tokens_per_expert) {
  // The next power of two clamped to the tiles is the centre of the candidates; the smallest candidate,
  // the tile one below the centre where there is one, runs without a tuned tactic.
  const double centre = moeNextPowerOfTwo(tokens_per_expert);
  std::size_t i = 0;
  while (i + 1 < tiles.size() && tiles[i] < centre) ++i;
  return i > 0 ? i - 1 : 0;
}

MoeTileFill moeTileFill(const std::vector<double>& tiles, const MoeCall& call) {
  if (tiles.empty()) return {};
  const double t = std::max(1.0, call.tokensPerExpert());
  return {moeTokenTileIndex(tiles, t), std::log(moeNextPowerOfTwo(t) / t)};
}

double MoeFit::tileLogFactor(const MoeCall& call) const {
  if (token_tiles.empty() || tile_fill_exponent.size() != token_tiles.size()) return 0.0;
  const MoeTileFill fill = moeTileFill(token_tiles, call);
  return tile_fill_exponent[fill.tile] * fill.log_shortfall;
}

void parseMoeTokenTiles(const YamlReader& r, MoeFit& f) {
  f.token_tiles = r.getNumbers("token_tiles", 1, 4096);
  for (std::size_t i = 1; i < f.token_tiles.size(); ++i) {
    if (f.token_tiles[i] <= f.token_tiles[i - 1]) r.fail("token_tiles", "the tiles must ascend");
  }
  f.tile_fill_exponent = r.getNumbers("tile_fill_exponent", -10, 10);
  if (f.tile_fill_exponent.size() != f.token_tiles.size()) {
    r.fail("tile_fill_exponent", fmt::format("{} exponents for {} token tiles (one per tile)",
                                             f.tile_fill_exponent.size(), f.token_tiles.size()));
  }
}

}  // namespace attnsim
