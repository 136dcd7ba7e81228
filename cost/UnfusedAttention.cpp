// An unfused path: separate library kernels (products, softmax, masking, copies) that each spread
// over the whole machine and run one after another, so their times add. They materialise the whole
// q × kv score rectangle, causal or not. With an fp32 working precision (PyTorch's math path for
// bf16/fp16) the inputs are first upcast, K and V expanded to every query head, and the keys scaled
// (read and written once more) before the products read them.
#include <algorithm>

#include "cost/AttentionCost.hpp"
#include "cost/AttentionCostInternal.hpp"

namespace attnsim::attention_cost {

AttentionCost predictUnfused(const AttentionShape& s, const KernelModel& kernel, const DeviceModel& device, Phase phase,
                             std::span<const RequestGroup> groups, const Traffic& t, double sinks, double dequant) {
  AttentionCost out;
  const double a = s.act_bytes;
  const bool upcast = kernel.working_bytes > 0 && kernel.working_bytes != a;
  const double w = upcast ? kernel.working_bytes : a;
  const double g = s.groupSize();
  double rectangle = 0;  // score elements per head
  for (const auto& grp : groups) rectangle += static_cast<double>(grp.count * grp.q_len * grp.context);
  const double scores = rectangle * s.num_heads;
  const bool masked = phase != Phase::Decode;  // prefill, extend, verify apply a mask over the rectangle
  // Products write the scores, softmax reads and writes them, PV reads them; a mask is built (1 byte)
  // and applied (read, write, mask read).
  const double score_bytes = scores * (4 * w + (masked ? 2 * w + 2 : 0));
  const double kv_elems = t.kv_read / a;  // K and V elements as stored
  double kv_bytes = 0;
  if (upcast) {
    const double key_elems = kv_elems * s.d_qk / (s.d_qk + s.d_v);
    kv_bytes = kv_elems * (a + w)                      // read as stored, written upcast
               + (g > 1 ? kv_elems * (w + g * w) : 0)  // expanded to every query head
               + key_elems * g * 2 * w                 // keys scaled
               + kv_elems * g * w;                     // read by the two products
  } else {
    kv_bytes = t.kv_read * g;  // the batched products read K and V once per query head
  }
  const double io_bytes = (t.q_bytes + t.o_bytes) * (upcast ? 1 + 2 * w / a : 1) + t.page_tables + sinks;
  out.flops = t.flops;
  out.bytes_min = t.q_bytes + t.o_bytes + t.kv_unique;
  out.flops_tiled = rectangle * s.num_heads * 2.0 * (s.d_qk + s.d_v) * dequant;
  out.bytes = score_bytes + kv_bytes + io_bytes;
  const double peak = kernel.tensor_math && !upcast ? device.tensor_flops_per_us : device.vector_flops_per_us;
  out.compute_us = out.flops_tiled / (peak * kernel.compute_efficiency);
  out.memory_us = out.bytes / (device.bytes_per_us * kernel.memory_efficiency);
  out.kernel_us = out.compute_us + out.memory_us;
  out.fixed_us = kernel.fixed_us;
  out.time_us = out.kernel_us + out.fixed_us;
  out.ctas = std::max(1, device.compute_units * kernel.ctas_per_sm);
  out.utilization = 1.0;
  out.bound = roofBound(out);
  return out;
}

}  // namespace attnsim::attention_cost
