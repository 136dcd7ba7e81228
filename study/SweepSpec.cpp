#include "study/SweepSpec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "catalog/Catalog.hpp"
#include "core/Files.hpp"
#include "core/Strings.hpp"
#include "core/YamlReader.hpp"
#include "model/ModelSpec.hpp"
#include "study/CapacitySpec.hpp"

namespace attnsim {

const std::vector<EmbeddedFile>& embeddedSweepFiles();  // generated from sweeps/*.yaml

namespace {

constexpr std::int64_t kMaxTokens = std::int64_t{1} << 26;

// An integer axis: one integer, a range string, or a list of either. `fallback` when absent.
std::vector<std::int64_t> intAxis(const YamlReader& r, std::string_view key, std::int64_t min, std::int64_t max,
                                  std::vector<std::int64_t> fallback = {}) {
  const auto node = r.raw(key);
  if (!node || node->IsNull()) {
    if (fallback.empty()) r.failMissing(key);
    return fallback;
  }
  std::vector<std::int64_t> out;
  auto add = [&](const YAML::Node& item) {
    if (!item.IsScalar()) r.failAt(item, key, "expected an integer or a range such as 1..256x2");
    try {
      for (const auto v : parseIntRange(item.Scalar(), min, max)) out.push_back(v);
    } catch (const InputError& e) {
      r.failAt(item, key, e.what());
    }
  };
  if (node->IsSequence()) {
    for (const auto& item : *node) add(item);
  } else {
    add(*node);
  }
  if (out.empty()) r.failAt(*node, key, "the list is empty");
  return out;
}

// A spec's workloads are held in memory: more than this is a typo in a range, not a study.
constexpr std::size_t kMaxWorkloads = std::size_t{1} << 20;

// Refuses an item whose axes multiply past kMaxWorkloads before any of it is expanded.
void checkCount(const YamlReader& r, const std::vector<SweepWorkload>& out, std::initializer_list<std::size_t> axes) {
  std::size_t n = 1;
  for (const auto a : axes) {
    if (a != 0 && n > kMaxWorkloads / a) n = kMaxWorkloads + 1;
    n = n > kMaxWorkloads ? n : n * a;
  }
  if (n > kMaxWorkloads - std::min(out.size(), kMaxWorkloads)) {
    throw CatalogError(r.location(), r.path(),
                       fmt::format("the axes make more than {} workloads; narrow a range", kMaxWorkloads));
  }
}

SweepWorkload uniform(Phase phase, std::int64_t batch, std::int64_t q_len, std::int64_t context, std::string label) {
  return {Workload::uniform(phase, batch, q_len, context), std::nullopt, std::move(label)};
}

void readDecode(const YamlReader& d, std::vector<SweepWorkload>& out) {
  const auto batches = intAxis(d, "batch", 1, 1 << 20);
  const auto contexts = intAxis(d, "context", 1, kMaxTokens);
  checkCount(d, out, {batches.size(), contexts.size()});
  for (const auto b : batches) {
    for (const auto c : contexts) {
      out.push_back(uniform(Phase::Decode, b, 1, c, fmt::format("decode b={} c={}", b, c)));
    }
  }
}

void readPrefill(const YamlReader& p, std::vector<SweepWorkload>& out) {
  const auto batches = intAxis(p, "batch", 1, 1 << 20, {1});
  const auto lengths = intAxis(p, "length", 1, kMaxTokens);
  checkCount(p, out, {batches.size(), lengths.size()});
  for (const auto b : batches) {
    for (const auto n : lengths) {
      out.push_back(uniform(Phase::Prefill, b, n, n, fmt::format("prefill b={} n={}", b, n)));
    }
  }
}

void readExtend(const YamlReader& x, std::vector<SweepWorkload>& out) {
  const auto batches = intAxis(x, "batch", 1, 1 << 20, {1});
  const auto chunks = intAxis(x, "chunk", 1, kMaxTokens);
  const auto prefixes = intAxis(x, "prefix", 1, kMaxTokens);
  checkCount(x, out, {batches.size(), chunks.size(), prefixes.size()});
  for (const auto b : batches) {
    for (const auto chunk : chunks) {
      for (const auto prefix : prefixes) {
        out.push_back(uniform(Phase::Extend, b, chunk, prefix + chunk,
                              fmt::format("extend b={} chunk={} prefix={}", b, chunk, prefix)));
      }
    }
  }
}

void readVerify(const YamlReader& v, std::vector<SweepWorkload>& out) {
  const auto algorithm = v.get<std::string>("algorithm", "eagle");
  const std::int64_t topk = v.findInt("topk", 1, 64).value_or(1);
  const auto batches = intAxis(v, "batch", 1, 1 << 20);
  const auto contexts = intAxis(v, "context", 1, kMaxTokens);
  const auto drafts = intAxis(v, "draft_tokens", 1, 64);
  checkCount(v, out, {batches.size(), contexts.size(), drafts.size()});
  for (const auto b : batches) {
    for (const auto c : contexts) {
      for (const auto n : drafts) {
        SweepWorkload w{Workload::uniform(Phase::Verify, b, n, std::max(c, n), topk), algorithm,
                        fmt::format("verify b={} c={} draft={} topk={} {}", b, std::max(c, n), n, topk, algorithm)};
        out.push_back(std::move(w));
      }
    }
  }
}

void readMixed(const YamlReader& item, std::vector<SweepWorkload>& out) {
  const auto node = item.raw("mixed");
  for (const auto& text : item.get<std::vector<std::string>>("mixed")) {
    try {
      out.push_back({parseMix(text), std::nullopt, "mixed " + join(splitList(text), ",")});
    } catch (const InputError& e) {
      item.failAt(*node, "mixed", e.what());
    }
  }
}

std::vector<SweepWorkload> readWorkloads(const YamlReader& r) {
  std::vector<SweepWorkload> out;
  const auto items = r.list("workloads");
  if (items.empty()) r.failMissing("workloads");
  for (const auto& item : items) {
    const std::size_t before = out.size();
    int kinds = 0;
    if (const auto d = item.findMap("decode")) ++kinds, readDecode(*d, out), d->finish();
    if (const auto p = item.findMap("prefill")) ++kinds, readPrefill(*p, out), p->finish();
    if (const auto x = item.findMap("extend")) ++kinds, readExtend(*x, out), x->finish();
    if (const auto v = item.findMap("verify")) ++kinds, readVerify(*v, out), v->finish();
    if (item.has("mixed")) ++kinds, readMixed(item, out);
    item.finish();
    if (kinds != 1 || out.size() == before) {
      throw CatalogError(item.location(), item.path(),
                         "each workload item is exactly one of decode, prefill, extend, verify or mixed");
    }
  }
  return out;
}

void readEngines(const YamlReader& r, const Catalog& c, SweepSpec& spec) {
  std::vector<std::string> engine_ids;
  for (const auto& e : c.engines()) engine_ids.push_back(e.policy.engine);
  if (r.has("engines")) {
    for (const auto& id : r.getListOf("engines", engine_ids)) spec.engines.push_back({id, backendNames(c.engine(id))});
  }
  const auto node = r.raw("backends");
  if (node && !node->IsNull()) {
    if (!node->IsSequence()) r.failAt(*node, "backends", "expected a list of engine:NAME");
    for (const auto& item : *node) {
      const std::string text = item.IsScalar() ? item.Scalar() : "";
      const auto colon = text.find(':');
      const std::string engine = text.substr(0, colon);
      if (colon == std::string::npos || std::find(engine_ids.begin(), engine_ids.end(), engine) == engine_ids.end()) {
        r.failAt(item, "backends",
                 fmt::format("'{}': expected engine:NAME with an engine of {}", text, join(engine_ids, ", ")));
      }
      const std::string name = text.substr(colon + 1);
      const auto names = backendNames(c.engine(engine));
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        r.failAt(item, "backends", fmt::format("{} has no backend '{}'{}", engine, name, didYouMean(name, names)));
      }
      auto it =
          std::find_if(spec.engines.begin(), spec.engines.end(), [&](const auto& e) { return e.engine == engine; });
      if (it == spec.engines.end()) it = spec.engines.insert(spec.engines.end(), {engine, {}});
      if (std::find(it->backends.begin(), it->backends.end(), name) == it->backends.end()) it->backends.push_back(name);
    }
  }
  if (spec.engines.empty()) r.failMissing("engines");
}

void readServing(const YamlReader& r, const Catalog& c, SweepSpec& spec) {
  // A KV dtype no engine of the spec knows would only make every point a refusal.
  std::vector<std::string> kv_dtypes{"default"};
  for (const auto& e : spec.engines) {
    for (const auto& kv : c.engine(e.engine).policy.kv_dtypes) {
      if (std::find(kv_dtypes.begin(), kv_dtypes.end(), kv) == kv_dtypes.end()) kv_dtypes.push_back(kv);
    }
  }
  const auto kvs = r.has("kv_dtypes") ? r.getListOf("kv_dtypes", kv_dtypes) : std::vector<std::string>{"default"};
  for (const auto& kv : kvs) {
    spec.kv_dtypes.push_back(kv == "default" ? std::nullopt : std::optional<std::string>(kv));
  }
  // Weight dtypes: the model's own ("default") or a quantisation as --weight-dtype takes it.
  std::vector<std::string> weight_dtypes{"default"};
  weight_dtypes.insert(weight_dtypes.end(), weightDtypes().begin(), weightDtypes().end());
  const auto ws =
      r.has("weight_dtypes") ? r.getListOf("weight_dtypes", weight_dtypes) : std::vector<std::string>{"default"};
  for (const auto& w : ws) {
    spec.weight_dtypes.push_back(w == "default" ? std::nullopt : std::optional<std::string>(w));
  }
  const auto pages = r.raw("page_sizes");
  const bool engine_default = !pages || pages->IsNull() || (pages->IsScalar() && pages->Scalar() == "default");
  if (engine_default) spec.page_sizes.emplace_back();
  if (!engine_default) {
    for (const auto p : intAxis(r, "page_sizes", 1, 4096)) spec.page_sizes.emplace_back(p);
  }
  spec.tp = intAxis(r, "tp", 1, 1024, {1});
  if (!r.has("cuda_graphs")) {
    spec.cuda_graphs = {true};
    return;
  }
  for (const auto& g : r.getListOf("cuda_graphs", {"on", "off"})) spec.cuda_graphs.push_back(g == "on");
}

void readCalibration(const YamlReader& r, SweepSpec& spec) {
  const auto node = r.raw("calibration");
  if (!node || node->IsNull() || (node->IsScalar() && node->Scalar() == "catalog")) return;
  if (!node->IsMap()) r.failAt(*node, "calibration", "expected 'catalog' or {study: FILE}");
  const YamlReader c = r.map("calibration");
  std::filesystem::path study = c.get<std::string>("study");
  c.finish();
  if (study.is_relative() && !spec.file.starts_with("sweeps/")) {
    study = std::filesystem::path(spec.file).parent_path() / study;
  }
  // Opening a missing study would create an empty one and quietly use the catalog's figures.
  if (!std::filesystem::is_regular_file(study)) {
    c.failAt(*c.raw("study"), "study",
             fmt::format("no study file '{}' (attnsim calibrate --db FILE writes one)", study.string()));
  }
  spec.calibration_study = study.string();
}

void readDrops(const YamlReader& r, SweepSpec& spec) {
  const auto node = r.raw("drop");
  if (!node || node->IsNull()) return;
  if (!node->IsSequence()) r.failAt(*node, "drop", "expected a list of expressions");
  for (const auto& item : *node) {
    if (!item.IsScalar()) r.failAt(item, "drop", "expected an expression");
    try {
      spec.drop.push_back(Expr::parse(item.Scalar(), checkSweepFilterVariable));
    } catch (const ExprSyntaxError& e) {
      r.failAt(item, "drop", fmt::format("in expression \"{}\": {}", item.Scalar(), e.what()));
    }
  }
}

}  // namespace

SweepSpec parseSweepSpec(std::string_view text, const std::string& file, const Catalog& catalog) {
  const YamlReader r = YamlReader::parseDocument(text, file);
  SweepSpec spec;
  spec.text = std::string(text);
  spec.file = file;
  spec.name = r.get<std::string>("name");
  spec.description = r.get<std::string>("description", "");
  std::vector<std::string> hw_ids, model_ids;
  for (const auto& h : catalog.hardwareProfiles()) hw_ids.push_back(h.id);
  for (const auto& m : catalog.models()) model_ids.push_back(m.id);
  spec.hardware = r.getListOf("hardware", hw_ids);
  spec.models = r.getListOf("models", model_ids);
  readEngines(r, catalog, spec);
  readServing(r, catalog, spec);
  spec.workloads = readWorkloads(r);
  readDrops(r, spec);
  readCalibration(r, spec);
  r.finish();
  for (const auto* axis : {&spec.hardware, &spec.models}) {
    if (axis->empty()) throw CatalogError(r.location(), r.path(), "hardware and models need at least one id each");
  }
  return spec;
}

std::vector<std::string> builtinSweepNames() {
  std::vector<std::string> names;
  for (const auto& f : embeddedSweepFiles()) {
    if (isCapacitySpecFile(f.path)) continue;  // sweeps/capacity*.yaml are capacity studies (study/CapacitySpec)
    names.push_back(std::filesystem::path(std::string(f.path)).stem().string());
  }
  return names;
}

SweepSpec loadSweepSpec(const std::string& name_or_path, const Catalog& catalog) {
  for (const auto& f : embeddedSweepFiles()) {
    if (!isCapacitySpecFile(f.path) && std::filesystem::path(std::string(f.path)).stem().string() == name_or_path) {
      return parseSweepSpec(f.content, std::string(f.path), catalog);
    }
  }
  if (!std::filesystem::exists(name_or_path)) {
    const auto names = builtinSweepNames();
    throw UsageError(fmt::format("sweep '{}': neither a built-in spec ({}) nor a file{}", name_or_path,
                                 join(names, ", "), didYouMean(name_or_path, names)));
  }
  return parseSweepSpec(readTextFile(name_or_path, "sweep spec"), name_or_path, catalog);
}

}  // namespace attnsim
