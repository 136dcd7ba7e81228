#include "catalog/Catalog.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <filesystem>
#include <set>

#include "backends/EngineOrder.hpp"
#include "backends/RuleVariables.hpp"
#include "catalog/OperatorTransfer.hpp"
#include "core/Strings.hpp"
#include "hardware/AttentionSurface.hpp"

namespace attnsim {

namespace {

std::string stem(const std::string& path) { return std::filesystem::path(path).stem().string(); }

template <class T, class Parse>
std::vector<T> loadAll(const CatalogSource& source, std::string_view folder, Parse parse) {
  std::vector<T> items;
  std::set<std::string> ids;
  for (const auto* f : source.filesUnder(folder)) {
    if (std::filesystem::path(f->path).parent_path().generic_string() + "/" != folder) continue;
    const YamlReader r = YamlReader::parseDocument(f->content, f->display);
    T item = parse(r);
    if (item.id != stem(f->path)) {
      r.fail("id", fmt::format("id '{}' must match the file name '{}'", item.id, stem(f->path)));
    }
    if (!ids.insert(item.id).second) r.fail("id", "duplicate id '" + item.id + "'");
    items.push_back(std::move(item));
  }
  return items;
}

template <class T>
const T& lookup(const std::vector<T>& items, std::string_view id, std::string_view what) {
  for (const auto& item : items) {
    if (item.id == id) return item;
  }
  std::vector<std::string> ids;
  ids.reserve(items.size());
  for (const auto& item : items) ids.push_back(item.id);
  throw UsageError(fmt::format("unknown {} '{}'{}; valid ids: {}", what, id, didYouMean(id, ids), join(ids, ", ")));
}

// A backend's KV dtypes are spelled as its engine spells them: one the engine does not list
// could never be asked for, so it is a typo.
void checkKvDtypes(const YamlReader& r, const Backend& b, const std::vector<std::string>& engine_kv) {
  auto check = [&](const std::optional<std::vector<std::string>>& kvs, const char* key) {
    if (!kvs) return;
    for (const auto& kv : *kvs) {
      if (std::find(engine_kv.begin(), engine_kv.end(), kv) == engine_kv.end()) {
        r.fail(key, fmt::format("'{}' is not one of the engine's kv_dtypes ({}){}", kv, join(engine_kv, ", "),
                                didYouMean(kv, engine_kv)));
      }
    }
  };
  check(b.caps.kv_cache_dtypes, "kv_cache_dtypes");
  for (const auto& v : b.variants) check(v.caps.kv_cache_dtypes, "variants");
}

// A declared limit no rule reads would be silently ignored. stages, block_sizes and attention_types
// are read by the engine's own checks only; dtypes, kv_cache_dtypes and head_sizes are read by the
// engine's check or, where it has none, as the kernel's limit (selection/KernelLimits.hpp).
void checkLimitsAreRead(const Backend& b, const EnginePolicy& p) {
  static const std::array<std::pair<const char*, const char*>, 3> kReadBy{
      {{"stages", "stage"}, {"block_sizes", "block_size"}, {"attention_types", "attention_type"}}};
  const auto check = [&p](const BackendCaps& caps, const std::string& owner) {
    for (const auto& [field, reader] : kReadBy) {
      const auto at = caps.declared_at.find(field);
      if (at == caps.declared_at.end() || p.reads(reader)) continue;
      throw CatalogError(at->second, field,
                         fmt::format("{} declares {}, but no rule of {} reads it (its validation list has no '{}' "
                                     "check), so the limit would be ignored: remove it, or add {{check: {}}} to "
                                     "backends/{}/engine.yaml",
                                     owner, field, p.engine, reader, reader, p.engine));
    }
  };
  check(b.caps, "backend " + b.id());
  for (const auto& v : b.variants) check(v.caps, "variant " + v.name + " of " + b.id());
}

Engine loadEngine(const CatalogSource& source, const std::string& folder) {
  Engine e;
  const std::string policy_path = folder + "engine.yaml";
  const CatalogFile* policy_file = nullptr;
  for (const auto* f : source.filesUnder(folder)) {
    if (f->path == policy_path) policy_file = f;
  }
  if (!policy_file) throw CatalogError({folder, 1, 1}, "", "an engine folder needs an engine.yaml policy file");
  const YamlReader pr = YamlReader::parseDocument(policy_file->content, policy_file->display);
  e.policy = parseEnginePolicy(pr, scenarioVariables());
  if (e.policy.engine + "/" != folder.substr(std::string("backends/").size())) {
    pr.fail("engine", "engine '" + e.policy.engine + "' must match its folder " + folder);
  }
  std::vector<std::string> known = scenarioVariables();
  for (const auto& o : e.policy.options) known.push_back(o.name);
  const Expr::VariableCheck check = ruleVariableCheck(known, e.policy.options, e.policy.kv_dtypes);
  std::set<std::pair<std::string, std::string>> keys;
  for (const auto* f : source.filesUnder(folder)) {
    if (f->path == policy_path) continue;
    const YamlReader r = YamlReader::parseDocument(f->content, f->display);
    if (f->path.starts_with(folder + "order/")) {  // an overlay's branches for the engine's order
      applyOrderInserts(r, e.policy, check);
      continue;
    }
    Backend b = parseBackend(r, e.policy.engine, check);
    if (!keys.insert({b.name, b.kind}).second) r.fail("name", "duplicate backend '" + b.name + "' of kind " + b.kind);
    checkKvDtypes(r, b, e.policy.kv_dtypes);
    checkLimitsAreRead(b, e.policy);
    e.backends.push_back(std::move(b));
  }
  return e;
}

// A kernel family id written in a backend file must name a loaded family.
void checkKernel(const Catalog& c, const std::string& id, const SourceLocation& at, std::string key_path,
                 const std::string& owner) {
  if (id.empty() || c.findKernel(id)) return;
  throw CatalogError(at, std::move(key_path), fmt::format("{} names unknown kernel family '{}'", owner, id));
}

// An MLA extend rule names its absorbed form's family, and its MHA form runs the prefill kernel over
// per-head K/V, which a latent-cache family cannot.
void checkMlaExtend(const Catalog& c, const BackendCaps& caps, const std::string& path, const std::string& owner) {
  if (!caps.mla_extend) return;
  checkKernel(c, caps.mla_extend->absorbed_kernel, caps.mla_extend->absorbed_kernel_at,
              path + "mla_extend.absorbed_kernel", owner);
  if (caps.prefill_kernel.empty()) return;
  const KernelFamily& prefill = c.kernel(caps.prefill_kernel);
  if (prefill.attendsLatentCache()) {
    throw CatalogError(caps.prefill_kernel_at, path + "prefill_kernel",
                       fmt::format("{} runs its MLA extend in MHA form (mla_extend), but prefill kernel '{}' is {}: "
                                   "name a family that attends per-head K/V",
                                   owner, caps.prefill_kernel, prefill.algorithm));
  }
}

void checkKernels(const Catalog& c, const Backend& b) {
  checkKernel(c, b.caps.prefill_kernel, b.caps.prefill_kernel_at, "prefill_kernel", "backend " + b.id());
  checkKernel(c, b.caps.decode_kernel, b.caps.decode_kernel_at, "decode_kernel", "backend " + b.id());
  checkMlaExtend(c, b.caps, "", "backend " + b.id());
  // A variant inherits the base's ids, which were checked above, so a failing id is the variant's own.
  for (std::size_t i = 0; i < b.variants.size(); ++i) {
    const BackendVariant& v = b.variants[i];
    const std::string variant_path = fmt::format("variants[{}].", i);
    const std::string owner = fmt::format("variant {} of {}", v.name, b.id());
    checkKernel(c, v.caps.prefill_kernel, v.caps.prefill_kernel_at, variant_path + "prefill_kernel", owner);
    checkKernel(c, v.caps.decode_kernel, v.caps.decode_kernel_at, variant_path + "decode_kernel", owner);
    checkMlaExtend(c, v.caps, variant_path, owner);
  }
}

// Docs rows and priority lists of engine.yaml must name the engine's backends (and variants).
void checkPolicyNames(const Engine& e) {
  for (std::size_t t = 0; t < e.policy.docs_tables.size(); ++t) {
    const DocsTable& table = e.policy.docs_tables[t];
    for (std::size_t i = 0; i < table.rows.size(); ++i) {
      try {
        (void)resolveDocsRow(e, table.rows[i]);
      } catch (const InputError& err) {
        throw CatalogError(table.rows_at.at(i), fmt::format("docs.tables[{}].rows", t), err.what());
      }
    }
  }
  const auto names = backendNames(e);
  for (std::size_t l = 0; l < e.policy.selection.size(); ++l) {
    const PriorityList& list = e.policy.selection[l];
    for (const auto& branch : list.branches) {
      const std::string& n = branch.backend;
      if (std::find(names.begin(), names.end(), n) == names.end()) {
        throw CatalogError(branch.at, fmt::format("selection[{}].priority", l),
                           fmt::format("unknown backend '{}'{}", n, didYouMean(n, names)));
      }
    }
  }
}

// Names that refer to other files are checked once everything is loaded; each error points at
// the file, line and column where the name is written.
void crossCheck(const Catalog& c) {
  for (const auto& e : c.engines()) {
    for (const auto& b : e.backends) checkKernels(c, b);
    checkPolicyNames(e);
  }
}

// A fit's optional `heldout: {mape, p90_abs_rel_error, points}`: its residuals on points kept out of it.
KernelEfficiency parseCalibration(const YamlReader& r, const std::string& source) {
  KernelEfficiency e;
  e.compute_efficiency = r.getNumber("compute_efficiency", 0.01, 1.0);
  e.memory_efficiency = r.getNumber("memory_efficiency", 0.01, 1.0);
  e.fixed_us = r.getNumber("fixed_us", 0, 1e6);
  e.key_ns = r.findNumber("key_ns", 0, 1000).value_or(0);
  const auto points = r.getInt("points", 1, 1 << 30);
  const double mape = r.getNumber("fit_mape", 0, 100);
  e.provenance = Provenance::Measured;
  e.fit_mape = mape;
  e.fit_points = static_cast<int>(points);
  e.heldout = parseHeldOutResiduals(r);
  // An entry kept from an earlier file by `calibrate --export` carries that file's source.
  const auto entry_source = r.get<std::string>("source", source);
  e.source =
      fmt::format("calibrated on {} points (fit MAPE {:.1f}%{}): {}", points, 100 * mape,
                  e.heldout ? fmt::format(", held-out MAPE {:.1f}% p90 {:.1f}% on {} points", 100 * e.heldout->mape,
                                          100 * e.heldout->p90_abs_rel_error, e.heldout->points)
                            : "",
                  entry_source);
  r.finish();
  return e;
}

// Each profile's launch and graph costs: its platform's, with the profile's own figures in their place.
void resolvePlatforms(std::vector<HardwareProfile>& hardware, const std::vector<HostPlatform>& platforms) {
  for (auto& hw : hardware) {
    const auto p =
        std::find_if(platforms.begin(), platforms.end(), [&](const HostPlatform& x) { return x.id == hw.platform; });
    if (p == platforms.end()) {
      throw InputError(fmt::format("hardware profile '{}': no hardware/platforms/{}.yaml for its platform '{}'", hw.id,
                                   hw.platform, hw.platform));
    }
    hw.overheads = resolveOverheads(*p, hw.own_overheads.value_or(OverheadOverrides{}));
  }
}

// A calibration's `surfaces:` section: per kernel family and phase class, what that entry's fitted
// roofline still misses on measured shapes. Each belongs to a `kernels:` entry of the same file.
void attachSurfaces(const YamlReader& surfaces, HardwareProfile& hw) {
  for (const auto& name : surfaces.keysOf()) {
    const YamlReader phases = surfaces.map(name);
    for (const auto& phase : phases.keysOf()) {
      auto fit = hw.calibrations.find({name, phase});
      if (fit == hw.calibrations.end())
        phases.fail(phase, fmt::format("no kernels: {}: {} entry in this file to correct", name, phase));
      fit->second.surface = std::make_shared<const AttentionSurface>(parseAttentionSurface(phases.map(phase)));
    }
    phases.finish();
  }
  surfaces.finish();
}

// hardware/calibrations/<hardware>.yaml: fitted efficiencies per kernel family and phase class.
void loadCalibrations(const CatalogSource& source, std::vector<HardwareProfile>& hardware,
                      const std::vector<KernelFamily>& kernels) {
  for (const auto* f : source.filesUnder("hardware/calibrations/")) {
    const YamlReader r = YamlReader::parseDocument(f->content, f->display);
    const auto id = r.get<std::string>("hardware");
    auto hw = std::find_if(hardware.begin(), hardware.end(), [&](const HardwareProfile& h) { return h.id == id; });
    if (hw == hardware.end()) r.fail("hardware", "no hardware profile '" + id + "'");
    if (id != stem(f->path)) r.fail("hardware", fmt::format("'{}' must match the file name '{}'", id, stem(f->path)));
    const auto origin = r.get<std::string>("source");
    (void)r.get<std::string>("created");
    if (auto o = r.findMap("overheads")) {
      hw->overheads.kernel_launch_us = o->getNumber("kernel_launch_us", 0, 1000);
      hw->overheads.graph_replay_base_us = o->getNumber("graph_replay_base_us", 0, 10000);
      const auto per_node = o->findNumber("graph_replay_per_node_us", 0, 100);
      if (per_node) hw->overheads.graph_replay_per_node_us = *per_node;
      const auto points = o->getInt("points", 1, 1 << 20);
      const auto overheads_origin = o->get<std::string>("source", origin);  // kept from an earlier file
      hw->overheads.source =
          fmt::format("kernel_launch_us, graph_replay_base_us{} calibrated on {} points: {}; {}; other figures {}",
                      per_node ? ", graph_replay_per_node_us" : "", points, overheads_origin,
                      o->get<std::string>("note"), hw->overheads.source);
      o->finish();
    }
    if (auto gemm = r.findMap("gemm")) hw->gemm_surfaces = parseGemmSurfaces(*gemm, origin);
    if (auto moe = r.findMap("moe")) hw->moe_fits = parseMoeFits(*moe, origin);
    if (auto all_reduce = r.findMap("allreduce")) {
      if (!hw->interconnect_link) r.fail("allreduce", "profile '" + id + "' has no interconnect_link to measure");
      hw->interconnect_link->all_reduces = parseAllReduceFits(*all_reduce, origin);
    }
    const YamlReader families = r.map("kernels");
    for (const auto& name : families.keysOf()) {
      if (std::none_of(kernels.begin(), kernels.end(), [&](const KernelFamily& k) { return k.id == name; })) {
        throw CatalogError(families.locateKey(name), families.keyPath(name), "no kernel family '" + name + "'");
      }
      const YamlReader phases = families.map(name);
      for (const char* phase : {"prefill", "extend", "decode"}) {
        if (auto fit = phases.findMap(phase)) hw->calibrations[{name, phase}] = parseCalibration(*fit, origin);
      }
      phases.finish();
    }
    families.finish();
    if (auto surfaces = r.findMap("surfaces")) attachSurfaces(*surfaces, *hw);
    r.finish();
  }
}

}  // namespace

std::vector<const Backend*> findBackends(const Engine& engine, std::string_view name) {
  std::vector<const Backend*> out;
  for (const auto& b : engine.backends) {
    if (b.name == name) out.push_back(&b);
  }
  return out;
}

std::vector<std::string> backendNames(const Engine& engine) {
  std::vector<std::string> names;
  for (const auto& b : engine.backends) {
    if (std::find(names.begin(), names.end(), b.name) == names.end()) names.push_back(b.name);
  }
  return names;
}

DocsRow resolveDocsRow(const Engine& engine, const std::string& row) {
  std::string name = row;
  std::string variant;
  std::string kind;
  if (const auto at = name.find('@'); at != std::string::npos) {
    variant = name.substr(at + 1);
    name.resize(at);
  }
  if (const auto slash = name.find('/'); slash != std::string::npos) {
    kind = name.substr(slash + 1);
    name.resize(slash);
  }
  const Backend* backend = nullptr;
  for (const auto* b : findBackends(engine, name)) {
    if (kind.empty() || b->kind == kind) backend = backend ? backend : b;
  }
  if (!backend) throw InputError(fmt::format("{} docs: row '{}' names no backend", engine.policy.engine, row));
  DocsRow out{backend, &backend->caps, variant};
  if (!variant.empty()) {
    const BackendVariant* v = backend->variant(variant);
    if (!v)
      throw InputError(fmt::format("{} docs: backend {} has no variant '{}'", engine.policy.engine, name, variant));
    out.caps = &v->caps;
  }
  return out;
}

namespace {
std::atomic<std::int64_t> catalog_loads{0};
}  // namespace

std::int64_t Catalog::loadCount() { return catalog_loads.load(); }

Catalog Catalog::load(const CatalogSource& source) {
  ++catalog_loads;
  Catalog c;
  c.hardware_ = loadAll<HardwareProfile>(source, "hardware/profiles/", parseHardwareProfile);
  c.platforms_ = loadAll<HostPlatform>(source, "hardware/platforms/", parseHostPlatform);
  resolvePlatforms(c.hardware_, c.platforms_);
  c.models_ = loadAll<ModelSpec>(source, "model/configs/", parseModelSpec);
  c.kernels_ = loadAll<KernelFamily>(source, "backends/kernels/", parseKernelFamily);
  loadCalibrations(source, c.hardware_, c.kernels_);
  transferOperatorFits(c.hardware_);
  std::set<std::string> engine_folders;
  for (const auto& f : source.files()) {
    const std::filesystem::path p(f.path);
    const auto parts = std::vector<std::string>(p.begin(), p.end());
    if (parts.size() == 3 && parts[0] == "backends" && parts[1] != "kernels") {
      engine_folders.insert("backends/" + parts[1] + "/");
    }
  }
  for (const auto& folder : engine_folders) c.engines_.push_back(loadEngine(source, folder));
  crossCheck(c);
  c.hash_ = source.contentHash();
  return c;
}

void Catalog::applyCalibration(std::string_view hardware, const std::string& kernel, const std::string& phase_class,
                               const KernelEfficiency& efficiency) {
  auto hw =
      std::find_if(hardware_.begin(), hardware_.end(), [&](const HardwareProfile& h) { return h.id == hardware; });
  if (hw == hardware_.end() || !findKernel(kernel)) return;  // a study of hardware this catalog lacks
  hw->calibrations[{kernel, phase_class}] = efficiency;
}

const HardwareProfile& Catalog::hardware(std::string_view id) const { return lookup(hardware_, id, "hardware"); }
const ModelSpec& Catalog::model(std::string_view id) const { return lookup(models_, id, "model"); }
const KernelFamily& Catalog::kernel(std::string_view id) const { return lookup(kernels_, id, "kernel family"); }

const KernelFamily* Catalog::findKernel(std::string_view id) const {
  for (const auto& k : kernels_) {
    if (k.id == id) return &k;
  }
  return nullptr;
}

const Engine& Catalog::engine(std::string_view id) const {
  std::vector<std::string> ids;
  for (const auto& e : engines_) {
    if (e.policy.engine == id) return e;
    ids.push_back(e.policy.engine);
  }
  throw UsageError(fmt::format("unknown engine '{}'{}; valid engines: {}", id, didYouMean(id, ids), join(ids, ", ")));
}

}  // namespace attnsim
