// unit: the KV-cache number formats against their definitions, and the attention error they cost.
#include <gtest/gtest.h>

#include <array>
#include <cmath>

#include "backends/KernelFamily.hpp"
#include "kernels/Quant.hpp"
#include "simulator/Checker.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::kernels {
namespace {

TEST(Fp8E4M3, DecodeTableMatchesTheFormat) {
  EXPECT_EQ(decode(MiniFloat::E4M3, 0x38), 1.0f);                  // 0 0111 000
  EXPECT_EQ(decode(MiniFloat::E4M3, 0x7E), 448.0f);                // largest finite: 1.75 * 2^8
  EXPECT_TRUE(std::isnan(decode(MiniFloat::E4M3, 0x7F)));          // S.1111.111 is the only NaN
  EXPECT_EQ(decode(MiniFloat::E4M3, 0x78), 256.0f);                // exponent 1111 is finite (no infinities)
  EXPECT_EQ(decode(MiniFloat::E4M3, 0x08), std::ldexp(1.0f, -6));  // smallest normal
  EXPECT_EQ(decode(MiniFloat::E4M3, 0x01), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_EQ(decode(MiniFloat::E4M3, 0x07), 7 * std::ldexp(1.0f, -9));
  EXPECT_EQ(decode(MiniFloat::E4M3, 0xB8), -1.0f);
  EXPECT_EQ(maxFinite(MiniFloat::E4M3), 448.0);
}

TEST(Fp8E4M3, EncodeRoundsToNearestEvenAndSaturates) {
  EXPECT_EQ(encode(MiniFloat::E4M3, 1.0625f), 0x38);  // tie between 1 (even) and 1.125
  EXPECT_EQ(encode(MiniFloat::E4M3, 1.1875f), 0x3A);  // tie between 1.125 and 1.25 (even)
  EXPECT_EQ(encode(MiniFloat::E4M3, 1.07f), 0x39);
  EXPECT_EQ(encode(MiniFloat::E4M3, std::ldexp(1.0f, -10)), 0x00);      // half the smallest subnormal: ties to zero
  EXPECT_EQ(encode(MiniFloat::E4M3, 3 * std::ldexp(1.0f, -10)), 0x02);  // 1.5 subnormal ulps: ties to even
  EXPECT_EQ(encode(MiniFloat::E4M3, 500.0f), 0x7E);                     // saturates
  EXPECT_EQ(encode(MiniFloat::E4M3, 460.0f, false), 0x7E);              // below 448 + half an ulp (464)
  EXPECT_EQ(encode(MiniFloat::E4M3, 500.0f, false), 0x7F);              // no infinity: NaN
  EXPECT_EQ(encode(MiniFloat::E4M3, -2.0f), 0xC0);
  for (int code = 0; code < 256; ++code) {
    const float v = decode(MiniFloat::E4M3, static_cast<std::uint8_t>(code));
    if (std::isnan(v)) continue;
    EXPECT_EQ(decode(MiniFloat::E4M3, encode(MiniFloat::E4M3, v)), v) << code;
  }
}

TEST(Fp8E5M2, DecodeAndEncodeFollowTheIeeeLayout) {
  EXPECT_EQ(decode(MiniFloat::E5M2, 0x3C), 1.0f);
  EXPECT_EQ(decode(MiniFloat::E5M2, 0x7B), 57344.0f);
  EXPECT_TRUE(std::isinf(decode(MiniFloat::E5M2, 0x7C)));
  EXPECT_TRUE(std::isnan(decode(MiniFloat::E5M2, 0x7D)));
  EXPECT_EQ(decode(MiniFloat::E5M2, 0x01), std::ldexp(1.0f, -16));
  EXPECT_EQ(encode(MiniFloat::E5M2, 60000.0f, false), 0x7B);  // below 57344 + 4096
  EXPECT_EQ(encode(MiniFloat::E5M2, 62000.0f, false), 0x7C);  // overflows to infinity
  EXPECT_EQ(encode(MiniFloat::E5M2, 1e9f), 0x7B);             // saturating
  EXPECT_EQ(encode(MiniFloat::E5M2, 1.125f), 0x3C);           // tie between 1 (even) and 1.25
  for (int code = 0; code < 256; ++code) {
    const float v = decode(MiniFloat::E5M2, static_cast<std::uint8_t>(code));
    if (!std::isfinite(v)) continue;
    EXPECT_EQ(decode(MiniFloat::E5M2, encode(MiniFloat::E5M2, v)), v) << code;
  }
}

TEST(Fp4E2M1, TheEightMagnitudes) {
  const std::array<float, 8> expected{0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (int code = 0; code < 8; ++code) {
    EXPECT_EQ(decode(MiniFloat::E2M1, static_cast<std::uint8_t>(code)), expected[code]);
    EXPECT_EQ(decode(MiniFloat::E2M1, static_cast<std::uint8_t>(code | 8)), -expected[code]);
  }
  EXPECT_EQ(encode(MiniFloat::E2M1, 2.5f), 4);  // tie between 2 (code 4, even) and 3
  EXPECT_EQ(encode(MiniFloat::E2M1, 5.0f), 6);  // tie between 4 (even) and 6
  EXPECT_EQ(encode(MiniFloat::E2M1, 0.25f), 0);
  EXPECT_EQ(encode(MiniFloat::E2M1, 0.3f), 1);
  EXPECT_EQ(encode(MiniFloat::E2M1, 7.0f), 7);  // saturates at 6
}

TEST(KvRoundTrip, ScalesAndBlocks) {
  // FP8 per-tensor: the largest magnitude maps to 448 exactly and survives.
  std::vector<float> v{0.1f, -3.0f, 2.0f, 0.5f};
  roundTripKv(v, 1, 1, 4, KvFormat::FP8_E4M3, ScaleGranularity::PerTensor);
  EXPECT_FLOAT_EQ(v[1], -3.0f);
  // Per-head scales: each head keeps its own largest value.
  std::vector<float> heads{1000.0f, 1.0f, 0.001f, 0.002f};
  EXPECT_EQ(roundTripKv(heads, 1, 2, 2, KvFormat::FP8_E4M3, ScaleGranularity::PerHead), 2U);
  EXPECT_FLOAT_EQ(heads[3], 0.002f);
  // NVFP4: values on the E2M1 grid times the block's scale survive exactly.
  const std::array<float, 8> grid{0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  std::vector<float> on_grid(32);
  for (std::size_t i = 0; i < 32; ++i) on_grid[i] = (i % 2 == 0 ? 1.0f : -1.0f) * grid[i % 8];
  const std::vector<float> exact = on_grid;
  EXPECT_EQ(roundTripKv(on_grid, 1, 1, 32, KvFormat::FP4_E2M1, ScaleGranularity::PerTensor), 3U);  // 2 blocks + tensor
  EXPECT_EQ(on_grid, exact);
  // Any other value lands within half the widest grid gap (4 to 6) of the block's scale: amax / 6.
  std::vector<float> ramp(16);
  for (std::size_t i = 0; i < 16; ++i) ramp[i] = 0.37f * static_cast<float>(i);
  const std::vector<float> before = ramp;
  roundTripKv(ramp, 1, 1, 16, KvFormat::FP4_E2M1, ScaleGranularity::PerTensor);
  for (std::size_t i = 0; i < 16; ++i) EXPECT_LE(std::fabs(ramp[i] - before[i]), 0.37f * 15 / 6 * 1.0001f) << i;
}

TEST(InputRounding, Bf16AndFp16RoundToNearestEven) {
  EXPECT_EQ(roundToBf16(1.00390625f), 1.0f);       // exactly half a bf16 ulp above 1: ties to even
  EXPECT_EQ(roundToBf16(1.01171875f), 1.015625f);  // 1.5 ulps: ties to even (up)
  EXPECT_EQ(roundToFp16(1.0f + std::ldexp(1.0f, -11)), 1.0f);
  EXPECT_EQ(roundToFp16(70000.0f), std::numeric_limits<float>::infinity());
}

TEST(QuantizedAttention, ErrorGrowsWithCoarserKvAndStaysWithinTolerance) {
  const Catalog& c = test::defaultCatalog();
  CheckRequest rq;
  rq.kernel = &c.kernel("flashinfer");
  rq.layer = &c.model("llama-3.1-8b").primaryLayer();
  rq.phase = Phase::Decode;
  std::vector<double> errors;
  for (const KvFormat kv : {KvFormat::BF16, KvFormat::FP8_E4M3, KvFormat::FP8_E5M2, KvFormat::FP4_E2M1}) {
    rq.kv = kv;
    const CheckOutcome o = runCheck(rq);
    EXPECT_TRUE(o.passed) << kvFormatName(kv) << " " << o.max_rel_err << " > " << o.tolerance;
    errors.push_back(o.max_rel_err);
  }
  EXPECT_LT(errors[0], errors[1]);  // bf16 < fp8 e4m3
  EXPECT_LT(errors[1], errors[2]);  // e4m3 < e5m2 (one mantissa bit fewer)
  EXPECT_LT(errors[1], errors[3]);  // fp8 < fp4
}

}  // namespace
}  // namespace attnsim::kernels
