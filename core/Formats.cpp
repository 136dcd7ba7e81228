#include "core/Formats.hpp"

#include <fmt/format.h>

#include <array>
#include <string>
#include <utility>

#include "core/Error.hpp"

namespace attnsim {

namespace {

constexpr std::array<std::pair<std::string_view, DType>, 3> kDTypes{
    {{"fp32", DType::FP32}, {"fp16", DType::FP16}, {"bf16", DType::BF16}}};

// Every engine spelling first; the canonical name of each format is its first spelling.
constexpr std::array<std::pair<std::string_view, KvCacheDtype>, 15> kKvSpellings{{
    {"auto", KvCacheDtype::Auto},
    {"fp32", KvCacheDtype::FP32},
    {"fp16", KvCacheDtype::FP16},
    {"float16", KvCacheDtype::FP16},
    {"bf16", KvCacheDtype::BF16},
    {"bfloat16", KvCacheDtype::BF16},
    {"fp8_e4m3", KvCacheDtype::FP8_E4M3},
    {"fp8", KvCacheDtype::FP8_E4M3},
    {"fp8_inc", KvCacheDtype::FP8_E4M3},
    {"fp8_e5m2", KvCacheDtype::FP8_E5M2},
    {"fp8_ds_mla", KvCacheDtype::FP8_DS_MLA},
    {"fp4_e2m1", KvCacheDtype::FP4_E2M1},
    {"nvfp4", KvCacheDtype::FP4_E2M1},
    {"int8", KvCacheDtype::INT8},
    {"", KvCacheDtype::Auto},
}};

constexpr std::array<std::pair<std::string_view, Paging>, 3> kPagings{
    {{"native", Paging::Native}, {"emulated", Paging::Emulated}, {"contiguous", Paging::Contiguous}}};

template <class Table>
std::string spellings(const Table& table) {
  std::string out;
  for (const auto& [name, value] : table) {
    if (name.empty()) continue;
    out += out.empty() ? std::string(name) : ", " + std::string(name);
  }
  return out;
}

}  // namespace

DType parseDType(std::string_view text) {
  for (const auto& [name, d] : kDTypes) {
    if (name == text) return d;
  }
  throw UsageError(fmt::format("dtype '{}': expected one of {}", text, spellings(kDTypes)));
}

std::string_view dtypeName(DType d) {
  for (const auto& [name, value] : kDTypes) {
    if (value == d) return name;
  }
  return "bf16";
}

double bytesOf(DType d) { return d == DType::FP32 ? 4.0 : 2.0; }

KvCacheDtype parseKvCacheDtype(std::string_view engine_spelling) {
  for (const auto& [name, kv] : kKvSpellings) {
    if (name == engine_spelling) return kv;
  }
  throw UsageError(fmt::format("KV-cache dtype '{}': expected one of {}", engine_spelling, spellings(kKvSpellings)));
}

std::string_view kvCacheDtypeName(KvCacheDtype kv) {
  for (const auto& [name, value] : kKvSpellings) {
    if (value == kv) return name;
  }
  return "auto";
}

double kvElementBytes(KvCacheDtype kv, DType dtype) {
  switch (kv) {
    case KvCacheDtype::FP8_DS_MLA:
      return 656.0 / 576.0;  // per token: 512 fp8 + 4 fp32 scales + 64 bf16 rope, over 576 elements
    case KvCacheDtype::FP8_E4M3:
    case KvCacheDtype::FP8_E5M2:
    case KvCacheDtype::INT8:
      return 1.0;
    case KvCacheDtype::FP4_E2M1:
      return 0.5 + 1.0 / 16;  // one fp8 scale per 16 values
    case KvCacheDtype::Auto:
      return dtype == DType::FP32 ? 4.0 : 2.0;
    case KvCacheDtype::FP32:
      return 4.0;
    case KvCacheDtype::FP16:
    case KvCacheDtype::BF16:
      return 2.0;
  }
  return 2.0;
}

Paging parsePaging(std::string_view text) {
  for (const auto& [name, p] : kPagings) {
    if (name == text) return p;
  }
  throw UsageError(fmt::format("paging '{}': expected one of {}", text, spellings(kPagings)));
}

std::string_view pagingName(Paging p) {
  for (const auto& [name, value] : kPagings) {
    if (value == p) return name;
  }
  return "native";
}

}  // namespace attnsim
