// The KV-cache write of a step's new tokens (family kv-cache-write): a scatter whose time is its bytes at
// the family's bandwidth, or, in an engine whose kernel runs one CTA per token (KernelFamily::token_cta),
// the waves of those CTAs, each as long as its loads and stores take one after another. Beside it, the
// query's FP8 quantization an engine runs before the attention kernel (KernelFamily::query_quant).
#include <algorithm>
#include <cmath>

#include "backends/KernelFamily.hpp"
#include "cost/StepModel.hpp"

namespace attnsim {

double kvWriteUs(const KernelModel& write, const DeviceModel& device, std::string_view engine, double tokens,
                 double loop_elements, double bytes) {
  const double roofline = rooflineUs(write, device, 0, bytes);
  if (write.family == nullptr || tokens <= 0 || loop_elements <= 0) return roofline;
  const KernelFamily::TokenCtas& t = write.family->token_cta;
  if (t.latency_us <= 0 || device.compute_units <= 0 ||
      std::find(t.engines.begin(), t.engines.end(), engine) == t.engines.end()) {
    return roofline;
  }
  // The block is min(elements, max_threads) threads, whole warps, each moving one element of K and one
  // of V a pass. A CTA's first pass waits on its slot and its loads before it stores; further passes
  // (more elements than threads) overlap those of the SM's other CTAs, so their bytes set the time.
  constexpr double kWarp = 32;
  const double threads = std::ceil(std::min(loop_elements, static_cast<double>(t.max_threads)) / kWarp) * kWarp;
  const double resident = std::min(static_cast<double>(t.sm_ctas), std::floor(t.sm_threads / threads));
  const double ctas_at_once = static_cast<double>(device.compute_units) * std::max(1.0, resident);
  return std::max(roofline, tokens * t.latency_us / ctas_at_once + write.fixed_us);
}

double queryQuantUs(const KernelFamily::QueryQuant& quant, const KernelModel& elementwise, const DeviceModel& device,
                    double query_elements) {
  if (quant.launches <= 0 || query_elements <= 0) return 0;
  // Every launch pays the elementwise family's fixed time; their bytes together stream at its bandwidth.
  return rooflineUs(elementwise, device, 0, query_elements * quant.bytes_per_element) +
         (quant.launches - 1) * elementwise.fixed_us;
}

}  // namespace attnsim
