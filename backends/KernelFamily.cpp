#include "backends/KernelFamily.hpp"

namespace attnsim {

const std::vector<std::string> kKernelAlgorithms{
    "tiled_online_softmax",  // FlashAttention-style prefill/extend
    "paged_decode",          // one query row per request, KV read through a page table
    "mla_absorbed",          // MLA with the up-projections absorbed: 576-wide keys, 512-wide values
    "mla_sparse",            // MLA over a top-k selected index set
    "unfused",               // QK^T, softmax, PV as separate kernels (reference/fallback paths)
};

namespace {
const std::vector<std::string> kPlatforms{"cuda", "rocm", "npu", "xpu", "cpu"};
const std::vector<std::string> kPhases{"prefill", "decode"};
const std::vector<std::string> kPaging{"native", "emulated", "contiguous"};
const std::vector<std::string> kKvFormats{"fp32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2", "fp4_e2m1", "int8"};
}  // namespace

KernelFamily parseKernelFamily(const YamlReader& r) {
  KernelFamily k;
  k.id = r.get<std::string>("id");
  k.name = r.get<std::string>("name");
  k.description = r.get<std::string>("description");
  k.source = r.get<std::string>("source");
  k.platforms = r.getListOf("platforms", kPlatforms);
  k.phases = r.getListOf("phases", kPhases);
  k.algorithm = r.getOneOf("algorithm", kKernelAlgorithms);
  k.paging = r.getOneOf("paging", kPaging);
  k.tile_q = static_cast<int>(r.findInt("tile_q", 1, 1024).value_or(0));
  k.tile_kv = static_cast<int>(r.findInt("tile_kv", 1, 4096).value_or(0));
  k.split_kv = r.get<bool>("split_kv");
  k.gqa_packing = r.get<bool>("gqa_packing");
  k.kv_dtypes = r.getListOf("kv_dtypes", kKvFormats);
  r.finish();
  return k;
}

}  // namespace attnsim
