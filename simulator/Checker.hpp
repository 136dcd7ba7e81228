#pragma once
// attnsim check: runs the algorithm a kernel family computes with (tiles, paging, split-KV, MLA
// form, quantized KV) on random inputs with a model layer's real head geometry and compares it
// with the golden attention.
#include <string>

#include "cost/Workload.hpp"
#include "kernels/Quant.hpp"

namespace attnsim {

struct KernelFamily;
struct AttentionLayerSpec;

struct CheckRequest {
  const KernelFamily* kernel = nullptr;
  const AttentionLayerSpec* layer = nullptr;
  Phase phase = Phase::Decode;
  kernels::KvFormat kv = kernels::KvFormat::BF16;
  DType dtype = DType::BF16;
  std::int64_t page_size = 16;
  std::int64_t tree_topk = 1;  // verify: > 1 checks a draft tree
  unsigned seed = 7;
  double flop_budget = 4e8;  // golden FLOPs allowed; lengths shrink to fit
};

struct CheckOutcome {
  bool passed = false;
  double max_abs_err = 0;
  double max_rel_err = 0;  // max |error| / max |golden output|
  double tolerance = 0;    // on max_rel_err, from the dtypes (docs/REFERENCE_KERNELS.md)
  std::string pipeline;    // what ran, in words
  int batch = 0;
  std::int64_t q_len = 0;
  std::int64_t context = 0;
  int heads = 0, kv_heads = 0, d_qk = 0, d_v = 0;
  int splits = 1;
  std::int64_t window = 0;
  std::int64_t top_k = 0;
  bool scaled_down = false;
  std::string scaled_note;
};

CheckOutcome runCheck(const CheckRequest& request);

// The documented tolerance on the normalized max error for inputs in `dtype` and a KV cache in `kv`.
double checkTolerance(kernels::KvFormat kv, DType dtype);

}  // namespace attnsim
