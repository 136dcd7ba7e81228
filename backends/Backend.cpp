#include "backends/Backend.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/Strings.hpp"
#include "hardware/HardwareProfile.hpp"

namespace attnsim {

const std::vector<std::string> kFeatureNames{
    "sink",       "sparse",        "mm_prefix", "sliding_window", "multimodal",           "spec_decoding",
    "spec_topk1", "spec_topk_gt1", "fp8_kv",    "fp4_kv",         "chunked_prefix_cache", "paged",
    "mla"};
const std::vector<std::string> kCudaGraphLevels{"always", "uniform_batch", "uniform_single_token_decode", "never"};

namespace {

const std::vector<std::string> kStages{"prefill", "decode"};
const std::vector<std::string> kAttentionTypes{"decoder", "encoder", "encoder_only", "encoder_decoder"};
const std::vector<std::string> kDtypes{"fp16", "bf16", "fp32"};

CapabilityRange parseCapability(const YamlReader& parent, std::string_view key) {
  CapabilityRange c;
  const auto node = parent.raw(key);
  if (!node || node->IsNull()) return c;
  if (node->IsScalar() && node->Scalar() == "any") return c;
  if (!node->IsMap()) parent.failAt(*node, key, "expected 'any' or a mapping with min, max or majors");
  const YamlReader r = parent.map(key);
  c.any = false;
  c.min = r.findNumber("min", 0, 100);
  c.max = r.findNumber("max", 0, 100);
  for (const auto m : r.get<std::vector<std::int64_t>>("majors", {})) c.majors.push_back(static_cast<int>(m));
  if (!c.min && !c.max && c.majors.empty()) r.fail("", "give at least one of min, max, majors");
  r.finish();
  return c;
}

Feature parseFeature(const YamlReader& parent, const std::string& key, const Expr::VariableCheck& check) {
  const auto node = parent.raw(key);
  Feature f;
  if (node->IsScalar()) {
    const auto v = YamlReader::scalarValue(*node);
    if (!std::holds_alternative<bool>(v)) parent.failAt(*node, key, "expected true, false or {when, doc}");
    f.supported = std::get<bool>(v);
    return f;
  }
  const YamlReader r = parent.map(key);
  f.supported = true;
  f.only_when = r.getExpr("when", check);
  f.doc = r.get<std::string>("doc");
  r.finish();
  return f;
}

// A kernel family id and where it is written; the catalog checks the id once all families are loaded.
void readKernel(const YamlReader& r, std::string_view key, std::string& id, SourceLocation& at) {
  if (auto k = r.find<std::string>(key)) {
    id = *k;
    at = r.locateValue(key);
  }
}

MlaExtend parseMlaExtend(const YamlReader& r) {
  MlaExtend m;
  const std::string when = r.getOneOf("mha_when", {"always", "no_prefix", "prefix_outside_band"});
  m.mha_when = when == "always"      ? MlaExtend::MhaWhen::Always
               : when == "no_prefix" ? MlaExtend::MhaWhen::NoPrefix
                                     : MlaExtend::MhaWhen::OutsidePrefixBand;
  if (m.mha_when == MlaExtend::MhaWhen::OutsidePrefixBand) {
    m.absorbed_below_prefix_tokens = r.getInt("absorbed_below_prefix_tokens", 1, std::int64_t{1} << 40);
  }
  readKernel(r, "absorbed_kernel", m.absorbed_kernel, m.absorbed_kernel_at);
  m.decode_rows_join_extend = r.getOneOf("mixed_decode_rows", {"join_extend", "decode_call"}) == "join_extend";
  m.absorbed_in_prefill_graph = r.get<bool>("absorbed_in_prefill_graph", false);
  // Any way into the absorbed form needs its kernel family.
  const char* absorbs_by = m.mha_when != MlaExtend::MhaWhen::Always ? "mha_when"
                           : m.absorbed_in_prefill_graph            ? "absorbed_in_prefill_graph"
                                                                    : nullptr;
  if (absorbs_by && m.absorbed_kernel.empty()) {
    r.fail(absorbs_by, std::string(absorbs_by) + " needs absorbed_kernel: the kernel family of the absorbed form");
  }
  m.source = r.get<std::string>("source");
  r.finish();
  return m;
}

void parseCaps(const YamlReader& r, BackendCaps& c, const Expr::VariableCheck& check) {
  for (const auto* key : {"dtypes", "kv_cache_dtypes", "head_sizes", "block_sizes", "stages", "attention_types"}) {
    if (r.has(key)) c.declared_at[key] = r.locateValue(key);
  }
  if (r.has("platforms")) c.platforms = r.getListOf("platforms", platformNames());
  if (r.has("stages")) c.stages = r.getListOf("stages", kStages);
  if (r.has("dtypes")) c.dtypes = r.getListOf("dtypes", kDtypes);
  if (auto kv = r.find<std::vector<std::string>>("kv_cache_dtypes")) c.kv_cache_dtypes = *kv;
  if (r.has("block_sizes")) c.block_sizes = parseIntSet(r, "block_sizes");
  if (r.has("native_page_sizes")) c.native_page_sizes = parseIntSet(r, "native_page_sizes");
  if (r.has("head_sizes")) c.head_sizes = parseIntSet(r, "head_sizes");
  if (r.has("compute_capability")) c.compute_capability = parseCapability(r, "compute_capability");
  if (r.has("attention_types")) c.attention_types = r.getListOf("attention_types", kAttentionTypes);
  if (auto features = r.findMap("features")) {
    for (const auto& name : features->keysOf()) {
      if (std::find(kFeatureNames.begin(), kFeatureNames.end(), name) == kFeatureNames.end()) {
        features->fail(name, fmt::format("unknown feature '{}'{}; features are: {}", name,
                                         didYouMean(name, kFeatureNames), join(kFeatureNames, ", ")));
      }
      c.features[name] = parseFeature(*features, name, check);
    }
  }
  if (r.has("requires")) {
    c.requirements.clear();
    for (const auto& req : r.list("requires")) {
      c.requirements.push_back(
          {req.getExpr("fail_when", check), req.get<std::string>("reason"), req.get<std::string>("source", "")});
      req.finish();
    }
  }
  if (auto cg = r.findOneOf("cuda_graph", kCudaGraphLevels)) c.cuda_graph = *cg;
  readKernel(r, "prefill_kernel", c.prefill_kernel, c.prefill_kernel_at);
  readKernel(r, "decode_kernel", c.decode_kernel, c.decode_kernel_at);
  if (auto m = r.findMap("mla_extend")) c.mla_extend = parseMlaExtend(*m);
  if (auto f = r.find<std::string>("server_flag")) c.server_flag = *f;
  if (auto doc = r.findMap("documented")) {
    for (const auto& field : doc->keysOf()) c.documented[field] = doc->get<std::string>(field);
  }
}

}  // namespace

bool MlaExtend::absorbed(double prefix_tokens) const {
  switch (mha_when) {
    case MhaWhen::Always:
      return false;
    case MhaWhen::NoPrefix:
      return prefix_tokens > 0;
    case MhaWhen::OutsidePrefixBand:
      return prefix_tokens > 0 && prefix_tokens < static_cast<double>(absorbed_below_prefix_tokens);
  }
  return false;
}

bool IntSet::contains(std::int64_t v) const {
  if (any) return true;
  if (!values.empty()) return std::find(values.begin(), values.end(), v) != values.end();
  if (min && v < *min) return false;
  if (max && v > *max) return false;
  return multiple_of <= 0 || v % multiple_of == 0;
}

std::string IntSet::render() const {
  if (any) return "Any";
  if (!values.empty()) {
    std::vector<std::string> parts;
    for (const auto v : values) parts.push_back(std::to_string(v));
    return join(parts, ", ");
  }
  std::vector<std::string> parts;
  if (multiple_of > 0) parts.push_back(fmt::format("%{}", multiple_of));
  if (min) parts.push_back(fmt::format("≥{}", *min));
  if (max) parts.push_back(fmt::format("≤{}", *max));
  return join(parts, " ");
}

IntSet parseIntSet(const YamlReader& parent, std::string_view key) {
  IntSet s;
  const auto node = parent.raw(key);
  if (!node || node->IsNull()) return s;
  if (node->IsScalar()) {
    if (node->Scalar() == "any") return s;
    parent.failAt(*node, key, "expected 'any', a list of integers, or {multiple_of, min, max}");
  }
  s.any = false;
  if (node->IsSequence()) {
    s.values = parent.get<std::vector<std::int64_t>>(key);
    if (s.values.empty()) parent.failAt(*node, key, "an empty list allows nothing; write 'any' or list the values");
    return s;
  }
  const YamlReader r = parent.map(key);
  s.multiple_of = r.findInt("multiple_of", 1, 1 << 20).value_or(0);
  s.min = r.findInt("min", 0, std::int64_t{1} << 40);
  s.max = r.findInt("max", 0, std::int64_t{1} << 40);
  if (s.multiple_of == 0 && !s.min && !s.max) r.fail("", "give at least one of multiple_of, min, max");
  r.finish();
  return s;
}

bool CapabilityRange::contains(double cc) const {
  if (any) return true;
  if (min && cc < *min - 1e-9) return false;
  if (max && cc > *max + 1e-9) return false;
  if (!majors.empty() && std::find(majors.begin(), majors.end(), static_cast<int>(cc)) == majors.end()) return false;
  return true;
}

std::string CapabilityRange::render() const {
  if (any) return "Any";
  if (!majors.empty()) {
    const auto [lo, hi] = std::minmax_element(majors.begin(), majors.end());
    return *lo == *hi ? fmt::format("{}.x", *lo) : fmt::format("{}.x-{}.x", *lo, *hi);
  }
  if (min && max) return fmt::format("{}.x-{}.x", static_cast<int>(*min), static_cast<int>(*max));
  if (min) return fmt::format("≥{:.1f}", *min);
  return fmt::format("≤{:.1f}", *max);
}

std::string Feature::render() const {
  if (!doc.empty()) return doc;
  return supported ? "✅" : "❌";
}

const Feature* BackendCaps::feature(std::string_view name) const {
  const auto it = features.find(name);
  return it == features.end() ? nullptr : &it->second;
}

bool BackendCaps::featureHolds(std::string_view name, const Env& env) const {
  const Feature* f = feature(name);
  return f != nullptr && f->holds(env);
}

const BackendCaps& Backend::resolve(const Env& env, std::string* variant_name) const {
  for (const auto& v : variants) {
    if (v.when.test(env)) {
      if (variant_name) *variant_name = v.name;
      return v.caps;
    }
  }
  if (variant_name) variant_name->clear();
  return caps;
}

const BackendVariant* Backend::variant(std::string_view variant_name) const {
  for (const auto& v : variants) {
    if (v.name == variant_name) return &v;
  }
  return nullptr;
}

Backend parseBackend(const YamlReader& r, const std::string& engine, const Expr::VariableCheck& check_variable) {
  Backend b;
  b.engine = engine;
  b.name = r.get<std::string>("name");
  b.kind = r.getOneOf("kind", {"mha", "mla"});
  b.table_name = r.get<std::string>("table_name", b.name);
  b.description = r.get<std::string>("description");
  b.source = r.get<std::string>("source");
  parseCaps(r, b.caps, check_variable);
  if (b.caps.platforms.empty()) r.fail("platforms", "required key 'platforms' is missing");
  if (b.caps.dtypes.empty()) r.fail("dtypes", "required key 'dtypes' is missing");
  for (const auto& v : r.list("variants")) {
    BackendVariant variant;
    variant.name = v.get<std::string>("name");
    variant.when = v.getExpr("when", check_variable);
    variant.caps = b.caps;
    parseCaps(v, variant.caps, check_variable);
    v.finish();
    b.variants.push_back(std::move(variant));
  }
  r.finish();
  return b;
}

}  // namespace attnsim
