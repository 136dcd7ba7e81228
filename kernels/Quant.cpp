#include "kernels/Quant.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "core/Error.hpp"

namespace attnsim::kernels {

namespace {

// Positive finite magnitudes of a format by code (codes 0 .. 2^(bits-1) - 1), NaN where not finite.
struct Table {
  std::array<float, 128> magnitude{};
  int finite = 0;  // codes 0 .. finite-1 are finite and increasing
};

const Table& tableOf(MiniFloat f) {
  static const std::array<Table, 3> tables = [] {
    std::array<Table, 3> t{};
    for (const MiniFloat fmt : {MiniFloat::E4M3, MiniFloat::E5M2, MiniFloat::E2M1}) {
      Table& table = t[static_cast<std::size_t>(fmt)];
      const int half = 1 << (formatOf(fmt).bits() - 1);
      for (int code = 0; code < half; ++code)
        table.magnitude[static_cast<std::size_t>(code)] = decode(fmt, static_cast<std::uint8_t>(code));
      while (table.finite < half && std::isfinite(table.magnitude[static_cast<std::size_t>(table.finite)]))
        ++table.finite;
    }
    return t;
  }();
  return tables[static_cast<std::size_t>(f)];
}

constexpr int kFp4Block = 16;

}  // namespace

const MiniFloatFormat& formatOf(MiniFloat f) {
  static const MiniFloatFormat e4m3{4, 3, 7, false, true};
  static const MiniFloatFormat e5m2{5, 2, 15, true, true};
  static const MiniFloatFormat e2m1{2, 1, 1, false, false};
  switch (f) {
    case MiniFloat::E4M3:
      return e4m3;
    case MiniFloat::E5M2:
      return e5m2;
    case MiniFloat::E2M1:
      return e2m1;
  }
  return e4m3;
}

double maxFinite(MiniFloat f) {
  const Table& t = tableOf(f);
  return t.magnitude[static_cast<std::size_t>(t.finite - 1)];
}

float decode(MiniFloat f, std::uint8_t code) {
  const MiniFloatFormat& fmt = formatOf(f);
  const int mant_mask = (1 << fmt.mantissa_bits) - 1;
  const int exp_mask = (1 << fmt.exponent_bits) - 1;
  const bool negative = ((code >> (fmt.exponent_bits + fmt.mantissa_bits)) & 1) != 0;
  const int exponent = (code >> fmt.mantissa_bits) & exp_mask;
  const int mantissa = code & mant_mask;
  float value = 0;
  if (fmt.has_infinity && exponent == exp_mask) {
    value = mantissa == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
  } else if (!fmt.has_infinity && fmt.has_nan && exponent == exp_mask && mantissa == mant_mask) {
    value = std::numeric_limits<float>::quiet_NaN();  // E4M3: S.1111.111
  } else if (exponent == 0) {
    value = std::ldexp(static_cast<float>(mantissa) / static_cast<float>(1 << fmt.mantissa_bits), 1 - fmt.bias);
  } else {
    value = std::ldexp(1.0f + static_cast<float>(mantissa) / static_cast<float>(1 << fmt.mantissa_bits),
                       exponent - fmt.bias);
  }
  return negative ? -value : value;
}

std::uint8_t encode(MiniFloat f, float value, bool saturate) {
  const MiniFloatFormat& fmt = formatOf(f);
  const Table& t = tableOf(f);
  const auto sign = static_cast<std::uint8_t>(std::signbit(value) ? 1u << (fmt.bits() - 1) : 0u);
  const int exp_mask = (1 << fmt.exponent_bits) - 1;
  const int mant_mask = (1 << fmt.mantissa_bits) - 1;
  const auto nan_code = static_cast<std::uint8_t>((exp_mask << fmt.mantissa_bits) | mant_mask);
  if (std::isnan(value))
    return fmt.has_nan ? static_cast<std::uint8_t>(sign | nan_code) : static_cast<std::uint8_t>(sign | (t.finite - 1));
  const float a = std::fabs(value);
  const float max = t.magnitude[static_cast<std::size_t>(t.finite - 1)];
  if (a > max) {
    // Round-to-nearest-even past the largest finite value: beyond max + half an ulp overflows.
    const float ulp = max - t.magnitude[static_cast<std::size_t>(t.finite - 2)];
    const bool overflows = std::isinf(a) || a >= max + ulp / 2;
    if (saturate || !overflows) return static_cast<std::uint8_t>(sign | (t.finite - 1));
    if (fmt.has_infinity) return static_cast<std::uint8_t>(sign | (exp_mask << fmt.mantissa_bits));
    return fmt.has_nan ? static_cast<std::uint8_t>(sign | nan_code) : static_cast<std::uint8_t>(sign | (t.finite - 1));
  }
  // The first code whose magnitude is >= a, then the nearer of it and its predecessor (ties: even code).
  const auto* begin = t.magnitude.data();
  const auto* hi = std::lower_bound(begin, begin + t.finite, a);
  auto code = static_cast<int>(hi - begin);
  if (code > 0 && *hi != a) {
    const float up = *hi - a;
    const float down = a - *(hi - 1);
    if (down < up || (down == up && ((code - 1) & 1) == 0)) --code;
  }
  return static_cast<std::uint8_t>(sign | code);
}

KvFormat referenceKvFormat(KvCacheDtype kv, DType model_dtype) {
  switch (kv) {
    case KvCacheDtype::FP8_E4M3:
    case KvCacheDtype::FP8_DS_MLA:  // its latent part is E4M3 with per-tile scales
      return KvFormat::FP8_E4M3;
    case KvCacheDtype::FP8_E5M2:
      return KvFormat::FP8_E5M2;
    case KvCacheDtype::FP4_E2M1:
      return KvFormat::FP4_E2M1;
    case KvCacheDtype::BF16:
      return KvFormat::BF16;
    case KvCacheDtype::FP16:
      return KvFormat::FP16;
    case KvCacheDtype::FP32:
      return KvFormat::FP32;
    case KvCacheDtype::Auto:
      return inputFormat(model_dtype);
    case KvCacheDtype::INT8:
      break;
  }
  throw UsageError("no reference KV format for kv dtype '" + std::string(kvCacheDtypeName(kv)) + "'");
}

KvFormat inputFormat(DType dtype) {
  switch (dtype) {
    case DType::FP32:
      return KvFormat::FP32;
    case DType::FP16:
      return KvFormat::FP16;
    case DType::BF16:
      return KvFormat::BF16;
  }
  return KvFormat::BF16;
}

std::string kvFormatName(KvFormat f) {
  switch (f) {
    case KvFormat::BF16:
      return "bf16";
    case KvFormat::FP16:
      return "fp16";
    case KvFormat::FP32:
      return "fp32";
    case KvFormat::FP8_E4M3:
      return "fp8_e4m3";
    case KvFormat::FP8_E5M2:
      return "fp8_e5m2";
    case KvFormat::FP4_E2M1:
      return "fp4_e2m1";
  }
  return "bf16";
}

bool isQuantized(KvFormat f) { return f == KvFormat::FP8_E4M3 || f == KvFormat::FP8_E5M2 || f == KvFormat::FP4_E2M1; }

float roundToBf16(float x) { return static_cast<float>(Eigen::bfloat16(x)); }
float roundToFp16(float x) { return static_cast<float>(Eigen::half(x)); }

std::size_t roundTripKv(std::span<float> values, int rows, int heads, int width, KvFormat format,
                        ScaleGranularity granularity) {
  const auto at = [&](int r, int h, int c) -> float& {
    return values[(static_cast<std::size_t>(r) * heads + h) * width + c];
  };
  if (format == KvFormat::FP32) return 0;
  if (format == KvFormat::BF16 || format == KvFormat::FP16) {
    for (float& v : values) v = format == KvFormat::BF16 ? roundToBf16(v) : roundToFp16(v);
    return 0;
  }
  auto headAmax = [&](int h) {
    float amax = 0;
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c < width; ++c) amax = std::max(amax, std::fabs(at(r, h, c)));
    }
    return amax;
  };
  float tensor_amax = 0;
  for (int h = 0; h < heads; ++h) tensor_amax = std::max(tensor_amax, headAmax(h));
  if (format == KvFormat::FP8_E4M3 || format == KvFormat::FP8_E5M2) {
    const MiniFloat mf = format == KvFormat::FP8_E4M3 ? MiniFloat::E4M3 : MiniFloat::E5M2;
    const auto max = static_cast<float>(maxFinite(mf));
    for (int h = 0; h < heads; ++h) {
      const float amax = granularity == ScaleGranularity::PerHead ? headAmax(h) : tensor_amax;
      const float scale = amax > 0 ? amax / max : 1.0f;
      for (int r = 0; r < rows; ++r) {
        for (int c = 0; c < width; ++c) at(r, h, c) = decode(mf, encode(mf, at(r, h, c) / scale)) * scale;
      }
    }
    return granularity == ScaleGranularity::PerHead ? static_cast<std::size_t>(heads) : 1;
  }
  // NVFP4: value = e2m1 × block scale (E4M3) × tensor scale (FP32), 16 values per block.
  const auto fp4_max = static_cast<float>(maxFinite(MiniFloat::E2M1));
  const auto e4m3_max = static_cast<float>(maxFinite(MiniFloat::E4M3));
  const float global = tensor_amax > 0 ? tensor_amax / (fp4_max * e4m3_max) : 1.0f;
  std::size_t scales = 1;
  for (int r = 0; r < rows; ++r) {
    for (int h = 0; h < heads; ++h) {
      for (int c0 = 0; c0 < width; c0 += kFp4Block) {
        const int c1 = std::min(width, c0 + kFp4Block);
        float amax = 0;
        for (int c = c0; c < c1; ++c) amax = std::max(amax, std::fabs(at(r, h, c)));
        const float block = decode(MiniFloat::E4M3, encode(MiniFloat::E4M3, amax / fp4_max / global));
        const float scale = block > 0 ? block * global : 1.0f;
        for (int c = c0; c < c1; ++c)
          at(r, h, c) = decode(MiniFloat::E2M1, encode(MiniFloat::E2M1, at(r, h, c) / scale)) * scale;
        ++scales;
      }
    }
  }
  return scales;
}

}  // namespace attnsim::kernels
