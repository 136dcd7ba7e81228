// The MoE fit's time for a call: the roofline of its experts' weights and tokens, over the efficiency
// interpolated on its grid (tokens per expert, weight MiB, width), with the padded sizes and the token
// tile's factor (hardware/MoeFit.hpp; the tile rule in MoeTiles.cpp, the parser in OperatorFits.cpp).
#include "hardware/MoeFit.hpp"

#include <algorithm>
#include <cmath>

#include "hardware/AxisPosition.hpp"

namespace attnsim {

double MoeCall::activeExperts() const {
  const double a = active >= 0 ? active : std::min(experts, assignments);
  return std::max(1.0, a);
}

double moeRooflineUs(const GemmRoofline& rates, const MoeCall& call) {
  const double a = call.assignments, h = call.hidden, i = call.inter, m = call.matrices;
  const double bytes = call.activeExperts() * m * h * i * rates.b_bytes + a * (2 * h + m * i) * 2;
  return std::max(2 * m * a * h * i / rates.flops_per_us, bytes / rates.bytes_per_us);
}

double moeWeightMib(const GemmRoofline& rates, const MoeCall& call) {
  return call.activeExperts() * call.matrices * call.hidden * call.inter * rates.b_bytes / (1024.0 * 1024.0);
}

MoeCall MoeFit::padded(const MoeCall& call) const {
  if (pad_to <= 1) return call;
  MoeCall c = call;
  const double multiple = pad_to;
  c.hidden = std::ceil(call.hidden / multiple) * multiple;
  c.inter = std::ceil(call.inter / multiple) * multiple;
  return c;
}

double MoeFit::us(const MoeCall& call) const {
  return fixed_us + (gridUs(call) - fixed_us) * std::exp(tileLogFactor(call));
}

double MoeFit::gridUs(const MoeCall& unpadded) const {
  const MoeCall call = padded(unpadded);
  const AxisPosition bt = positionOn(log2_tokens_per_expert, std::log2(std::max(1.0, call.tokensPerExpert())));
  const AxisPosition bw = positionOn(log2_weights_mib, std::log2(std::max(1e-9, moeWeightMib(roofline, call))));
  const AxisPosition bi = positionOn(log2_inter, std::log2(std::max(1.0, call.gridWidth())));
  const double log_eff =
      interpolateGrid3(log_efficiency, log2_tokens_per_expert, log2_weights_mib, log2_inter, bt, bw, bi);
  return fixed_us + moeRooflineUs(roofline, call) / std::exp(log_eff);
}

}  // namespace attnsim
