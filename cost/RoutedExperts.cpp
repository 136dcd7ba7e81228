// The analytical cost of a MoE layer's routed experts (StepModel.hpp: routedExpertsDefault).
#include <cmath>

#include "cost/StepModel.hpp"

namespace attnsim {

RoutedExpertTimes routedExpertsDefault(const LinearKernels& k, const RoutedExpertShape& s) {
  auto grouped = [&](double flops, double bytes) { return rooflineUs(k.grouped_gemm, k.device_weights, flops, bytes); };
  auto elementwise = [&](double flops, double bytes) { return rooflineUs(k.elementwise, k.device, flops, bytes); };
  const double routed = s.tokens * s.topk;
  // Distinct experts a batch touches: each distinct token picks topk of E.
  const double touched = s.experts * (1.0 - std::pow(1.0 - s.topk / s.experts, s.distinct));
  RoutedExpertTimes t;
  t.topk = elementwise(0, s.tokens * s.experts * 4.0 * 2);
  t.gate_up = grouped(2 * routed * 2 * s.inter * s.hidden, touched * 2 * s.inter * s.hidden * s.weight_bytes +
                                                               routed * (s.hidden + 2 * s.inter) * s.act_bytes);
  t.act = elementwise(0, 3 * routed * s.inter * s.act_bytes);
  t.down = grouped(2 * routed * s.hidden * s.inter,
                   touched * s.hidden * s.inter * s.weight_bytes + routed * (s.hidden + s.inter) * s.act_bytes);
  t.combine = elementwise(0, (routed + s.tokens) * s.hidden * s.act_bytes);
  return t;
}

}  // namespace attnsim
