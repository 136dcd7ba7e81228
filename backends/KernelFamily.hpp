#pragma once
// How a kernel computes, independent of which engine calls it: FlashInfer's decode kernel is the
// same code in vLLM, SGLang and RTP-LLM. The cost model and the reference kernels key on this.
#include <string>
#include <vector>

#include "core/YamlReader.hpp"

namespace attnsim {

struct KernelFamily {
  std::string id;
  std::string name;
  std::string description;
  std::string source;
  std::vector<std::string> platforms;
  std::vector<std::string> phases;     // prefill, decode
  std::string algorithm;               // see kKernelAlgorithms
  std::string paging;                  // native, emulated (page table expanded per token), contiguous
  int tile_q = 0;                      // query rows per CTA tile (0: not tiled over queries)
  int tile_kv = 0;                     // keys per inner step
  bool split_kv = false;               // flash-decoding split over the KV length with an LSE merge
  bool gqa_packing = false;            // query heads of one KV head share one KV read
  std::vector<std::string> kv_dtypes;  // KV-cache element formats the kernel reads
};

extern const std::vector<std::string> kKernelAlgorithms;

KernelFamily parseKernelFamily(const YamlReader& r);

}  // namespace attnsim
