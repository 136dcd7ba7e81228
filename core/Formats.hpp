#pragma once
// Number formats and KV layouts as types. Catalogs and users write them as text; they are
// converted here, once, where they are read, and every later stage works on the enums.
#include <string_view>

namespace attnsim {

// The activations' (and the model's compute) precision.
enum class DType { FP32, FP16, BF16 };
DType parseDType(std::string_view text);  // UsageError listing fp32, fp16, bf16
std::string_view dtypeName(DType d);
double bytesOf(DType d);

// The KV cache's element format, whatever an engine calls it: fp8, fp8_e4m3 and fp8_inc are E4M3;
// bfloat16 is bf16; nvfp4 is fp4_e2m1; auto is the model's dtype.
enum class KvCacheDtype { Auto, FP32, FP16, BF16, FP8_E4M3, FP8_E5M2, FP8_DS_MLA, FP4_E2M1, INT8 };
KvCacheDtype parseKvCacheDtype(std::string_view engine_spelling);  // UsageError on an unknown spelling
std::string_view kvCacheDtypeName(KvCacheDtype kv);
// Bytes stored per KV element, block scales included, for a model computing in `dtype`.
double kvElementBytes(KvCacheDtype kv, DType dtype);

// How a kernel reads a paged KV cache: whole pages through a page table (native), a per-token
// index table (emulated: the page table expanded to page size 1), or not at all (contiguous K/V).
enum class Paging { Native, Emulated, Contiguous };
Paging parsePaging(std::string_view text);
std::string_view pagingName(Paging p);

}  // namespace attnsim
