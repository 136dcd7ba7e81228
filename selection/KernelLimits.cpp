#include "selection/KernelLimits.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/Formats.hpp"
#include "core/Strings.hpp"

namespace attnsim {

namespace {

const std::string* stringVar(const Env& env, const char* name) {
  const auto it = env.find(name);
  return it == env.end() ? nullptr : std::get_if<std::string>(&it->second);
}

bool has(const std::vector<std::string>& items, const std::string& item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

// The element format a kernel reads from a cache the engine spells `kv` (auto: the model's dtype).
std::string kvFormatOf(const std::string& kv, const std::string& model_dtype) {
  switch (parseKvCacheDtype(kv)) {
    case KvCacheDtype::Auto:
      return model_dtype;
    case KvCacheDtype::FP32:
      return "fp32";
    case KvCacheDtype::FP16:
      return "fp16";
    case KvCacheDtype::BF16:
      return "bf16";
    case KvCacheDtype::FP8_E4M3:
    case KvCacheDtype::FP8_DS_MLA:  // its latent part is E4M3
      return "fp8_e4m3";
    case KvCacheDtype::FP8_E5M2:
      return "fp8_e5m2";
    case KvCacheDtype::FP4_E2M1:
      return "fp4_e2m1";
    case KvCacheDtype::INT8:
      return "int8";
  }
  return kv;
}

Finding limit(std::string what, const std::string& field, const SourceLocation& at) {
  return {"kernel limit: " + std::move(what), "kernel limit: " + field + " (the engine does not check it)", at.str()};
}

// The backend file's own limits, where the engine's validation list has no check for them.
void backendLimits(const EnginePolicy& policy, const BackendCaps& caps, const Env& env, std::vector<Finding>& out) {
  const auto at = [&caps](const char* key) {
    const auto it = caps.declared_at.find(key);
    return it == caps.declared_at.end() ? SourceLocation{} : it->second;
  };
  const auto head = env.find("head_size");
  if (!policy.reads("head_size") && head != env.end() && std::holds_alternative<std::int64_t>(head->second)) {
    const auto hs = std::get<std::int64_t>(head->second);
    if (!caps.head_sizes.contains(hs)) {
      out.push_back(limit(fmt::format("head size {} is not in head_sizes ({}) declared in {}", hs,
                                      caps.head_sizes.render(), at("head_sizes").str()),
                          "head_sizes", at("head_sizes")));
    }
  }
  const std::string* dtype = stringVar(env, "dtype");
  if (!policy.reads("dtype") && dtype && !has(caps.dtypes, *dtype)) {
    out.push_back(limit(fmt::format("dtype {} is not in dtypes ({}) declared in {}", *dtype, join(caps.dtypes, ", "),
                                    at("dtypes").str()),
                        "dtypes", at("dtypes")));
  }
  const std::string* kv = stringVar(env, "kv_dtype");
  if (!policy.reads("kv_cache_dtype") && kv && caps.kv_cache_dtypes && !has(*caps.kv_cache_dtypes, *kv)) {
    out.push_back(limit(fmt::format("KV cache {} is not in kv_cache_dtypes ({}) declared in {}", *kv,
                                    join(*caps.kv_cache_dtypes, ", "), at("kv_cache_dtypes").str()),
                        "kv_cache_dtypes", at("kv_cache_dtypes")));
  }
}

// The kernel that reads the KV cache must read its format: the decode kernel always does.
void kernelKvLimit(const Catalog& catalog, const BackendCaps& caps, const Env& env, std::vector<Finding>& out) {
  const std::string* kv = stringVar(env, "kv_dtype");
  const std::string* dtype = stringVar(env, "dtype");
  const std::string* stage = stringVar(env, "stage");
  if (!kv || !dtype || caps.decode_kernel.empty() || (stage && *stage == "prefill")) return;
  const KernelFamily* k = catalog.findKernel(caps.decode_kernel);
  if (!k) return;
  const std::string format = kvFormatOf(*kv, *dtype);
  if (has(k->kv_dtypes, format)) return;
  out.push_back(limit(fmt::format("decode kernel {} reads a KV cache of {} (kv_dtypes in {}), not {}", k->id,
                                  join(k->kv_dtypes, ", "), k->kv_dtypes_at.str(), format),
                      "kv_dtypes of kernel " + k->id, k->kv_dtypes_at));
}

}  // namespace

std::vector<Finding> kernelLimitFindings(const Catalog& catalog, const EnginePolicy& policy, const BackendCaps& caps,
                                         const Env& env) {
  std::vector<Finding> out;
  backendLimits(policy, caps, env, out);
  kernelKvLimit(catalog, caps, env, out);
  for (auto& f : out) f.kernel_limit = true;
  return out;
}

}  // namespace attnsim
