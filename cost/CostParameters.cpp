// Resolution of catalog entries into the plain structs the cost model runs on: done once per
// scenario, outside the hot path.
#include <algorithm>

#include "backends/KernelFamily.hpp"
#include "cost/AttentionCost.hpp"
#include "hardware/HardwareProfile.hpp"
#include "model/ModelSpec.hpp"

namespace attnsim {

AttentionShape resolveShape(const AttentionLayerSpec& layer, const KernelFamily& kernel, Phase phase,
                            KvCacheDtype kv_dtype, DType dtype, int tp, bool absorbed) {
  AttentionShape s;
  const int ranks = std::max(1, tp);
  s.num_heads = std::max(1, layer.num_heads / ranks);
  s.window = layer.sliding_window;
  s.top_k = layer.sparse_top_k;
  s.causal = layer.causal;
  s.sinks = layer.sinks;
  s.act_bytes = bytesOf(dtype);
  s.kv_elem_bytes = kvElementBytes(kv_dtype, dtype);
  s.kv_quantized = s.kv_elem_bytes < 2.0;
  absorbed = absorbed || kernel.attendsLatentCache();
  if (layer.mla && (absorbed || phase == Phase::Decode)) {
    // Weight-absorbed MLA: queries in the latent space against one shared latent KV head.
    s.num_kv_heads = 1;
    s.d_qk = layer.mla->kv_lora_rank + layer.mla->qk_rope_head_dim;
    s.d_v = layer.mla->kv_lora_rank;
    s.kv_token_width = s.d_qk;
  } else if (layer.mla) {
    // Naive MLA prefill: K and V up-projected per head.
    s.num_kv_heads = s.num_heads;
    s.d_qk = layer.head_dim;
    s.d_v = layer.head_dim_v;
    s.kv_token_width = s.d_qk + s.d_v;
  } else {
    s.num_kv_heads = std::max(1, layer.num_kv_heads / ranks);
    s.d_qk = layer.head_dim;
    s.d_v = layer.head_dim_v;
    s.kv_token_width = s.d_qk + s.d_v;
  }
  return s;
}

const char* calibrationClass(Phase phase) {
  switch (phase) {
    case Phase::Prefill:
      return "prefill";
    case Phase::Extend:
      return "extend";
    case Phase::Decode:
    case Phase::Verify:
      return "decode";
  }
  return "prefill";
}

KernelModel resolveKernel(const KernelFamily& kernel, const HardwareProfile& hw, Phase phase) {
  KernelModel k;
  k.family = &kernel;
  k.tile_q = kernel.tile_q > 0 ? kernel.tile_q : 64;
  k.tile_kv = kernel.tile_kv > 0 ? kernel.tile_kv : 64;
  const bool decode_call = phase == Phase::Decode || phase == Phase::Verify;
  std::size_t rules = 0;
  for (const auto& rule : kernel.tiles_by_head_dim) {
    const bool applies = (rule.phase == TilePhase::Any || (rule.phase == TilePhase::Decode) == decode_call) &&
                         (rule.architecture < 0 || rule.architecture == architectureIndex(hw.architecture));
    if (applies && rules < k.tiles_by_head_dim.size()) k.tiles_by_head_dim[rules++] = rule;
  }
  const auto& g1 = kernel.group1_decode;
  if (phase == Phase::Decode && (g1.architecture < 0 || g1.architecture == architectureIndex(hw.architecture))) {
    for (std::size_t i = 0; i < g1.rules.size() && i < k.group1_rules.size(); ++i) k.group1_rules[i] = g1.rules[i];
  }
  k.split_kv = kernel.split_kv;
  k.gqa_packing = kernel.gqa_packing;
  k.query_blocks_span_requests = kernel.query_blocks_span_requests;
  k.paged_native = kernel.paging == Paging::Native;
  k.paged_emulated = kernel.paging == Paging::Emulated;
  k.unfused = kernel.algorithm == "unfused";
  k.working_bytes = kernel.working_precision == "fp32" ? 4.0 : 0.0;
  k.tensor_math = kernel.math == "tensor";
  const bool decode_like = phase == Phase::Decode || phase == Phase::Verify;
  k.ctas_per_sm = decode_like && kernel.decode_ctas_per_sm > 0 ? kernel.decode_ctas_per_sm : kernel.ctas_per_sm;
  k.max_splits = kernel.max_splits;
  k.split_spans_pool = kernel.split_spans_pool;
  k.row_tiles_reread_keys = kernel.row_tiles_reread_keys;
  k.splits_mixed_decode_rows = kernel.splits_mixed_decode_rows;
  k.slot_bandwidth_share = decode_like && kernel.decode_slot_bandwidth_share > 0 ? kernel.decode_slot_bandwidth_share
                                                                                 : kernel.slot_bandwidth_share;
  k.split_policy = kernel.split_policy;
  k.rolling_waves = kernel.rolling_waves;
  k.paged_key_us = kernel.paged_key_ns / 1000.0;
  k.unit_us = kernel.unit_us;
  k.prefill_unit_us = kernel.prefill_unit_us;
  k.merge_launch_us = kernel.merge_launch_us;
  // The device's fit for the phase class; an extend without its own fit uses the prefill fit.
  auto found = hw.calibrations.find({kernel.id, calibrationClass(phase)});
  if (found == hw.calibrations.end() && phase == Phase::Extend) found = hw.calibrations.find({kernel.id, "prefill"});
  const KernelEfficiency& e = found != hw.calibrations.end() ? found->second : kernel.efficiencyFor(hw.architecture);
  k.compute_efficiency = e.compute_efficiency;
  k.memory_efficiency = e.memory_efficiency;
  k.fixed_us = e.fixed_us;
  k.key_us = e.key_ns / 1000.0;
  k.quantized_kv_key_factor = kernel.quantized_kv_key_factor;
  k.efficiency_source = &e.source;
  k.provenance = e.provenance;
  // The step's non-attention kernels (GEMMs, elementwise) have their own documented default band.
  const bool linear =
      kernel.algorithm == "gemm" || kernel.algorithm == "grouped_gemm" || kernel.algorithm == "elementwise";
  const UncertaintyBand band = bandOf(e, linear ? kNonAttentionDefaultBand : kDefaultBand);
  k.band = band.band;
  k.band_basis = band.basis;
  k.surface = e.surface.get();
  return k;
}

DeviceModel resolveDevice(const HardwareProfile& hw, DType dtype) {
  DeviceModel d;
  const auto& p = hw.peak;
  double tflops = 0;
  if (dtype == DType::FP32) {
    tflops = p.tf32_tflops.value_or(p.fp32_tflops.value_or(0));
  } else if (dtype == DType::FP16) {
    tflops = p.fp16_tflops.value_or(p.bf16_tflops.value_or(0));
  } else {
    tflops = p.bf16_tflops.value_or(p.fp16_tflops.value_or(0));
  }
  d.tensor_flops_per_us = tflops * 1e6;
  d.vector_flops_per_us = p.fp32_tflops.value_or(tflops / 8) * 1e6;
  d.bytes_per_us = hw.memory_bandwidth_gbps * 1e3;
  d.l2_bytes = static_cast<double>(hw.l2_bytes);
  d.l2_bytes_per_us = hw.l2_bandwidth_gbps * 1e3;
  d.compute_units = hw.compute_units;
  return d;
}

}  // namespace attnsim
