#pragma once
// KV-cache number formats, bit-exact: FP8 E4M3 (OCP "e4m3fn": no infinities, max 448), FP8 E5M2
// (IEEE-like, max 57344, infinities), FP4 E2M1 (max 6) with NVFP4-style block scales.
// Encoding rounds to nearest, ties to even; values beyond the largest finite one saturate
// (KV-cache quantizers clamp) unless asked otherwise.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/Formats.hpp"

namespace attnsim::kernels {

enum class MiniFloat { E4M3, E5M2, E2M1 };

struct MiniFloatFormat {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  bool has_infinity;  // E5M2: all-ones exponent is inf/NaN; E4M3: only S.1111.111 is NaN; E2M1: none
  bool has_nan;
  [[nodiscard]] int bits() const { return 1 + exponent_bits + mantissa_bits; }
};
const MiniFloatFormat& formatOf(MiniFloat f);
double maxFinite(MiniFloat f);

float decode(MiniFloat f, std::uint8_t code);
std::uint8_t encode(MiniFloat f, float value, bool saturate = true);

// Quantized storage of a row-major block of values.
enum class KvFormat { BF16, FP16, FP32, FP8_E4M3, FP8_E5M2, FP4_E2M1 };
// The format a KV cache stores in (auto: the model's dtype); UsageError for one the reference
// kernels do not implement (int8).
KvFormat referenceKvFormat(KvCacheDtype kv, DType model_dtype);
// The format inputs in `dtype` are rounded to.
KvFormat inputFormat(DType dtype);
std::string kvFormatName(KvFormat f);
bool isQuantized(KvFormat f);

enum class ScaleGranularity { PerTensor, PerHead };

// Encodes `values` (rows × (heads × width)) and writes the decoded values back in place: the round
// trip a KV cache makes. FP8 uses one scale per tensor or per head (amax / max finite); FP4 uses
// one E4M3 scale per 16 consecutive values of a head plus a per-tensor FP32 scale (NVFP4).
// BF16/FP16 round to nearest even. Returns the number of scale values stored.
std::size_t roundTripKv(std::span<float> values, int rows, int heads, int width, KvFormat format,
                        ScaleGranularity granularity);

// Rounds to bfloat16 / float16 and back (inputs in the model's dtype).
float roundToBf16(float x);
float roundToFp16(float x);

}  // namespace attnsim::kernels
