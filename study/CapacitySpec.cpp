// Capacity study specs (docs/CAPACITY.md, "Capacity studies") and the study's run.
#include "study/CapacitySpec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "catalog/Catalog.hpp"
#include "core/Error.hpp"
#include "core/Files.hpp"
#include "core/Strings.hpp"
#include "core/YamlReader.hpp"
#include "hardware/HardwareProfile.hpp"
#include "model/ModelSpec.hpp"

namespace attnsim {

const std::vector<EmbeddedFile>& embeddedSweepFiles();  // generated from sweeps/*.yaml

namespace {

std::vector<std::string> ids(const auto& items, auto field) {
  std::vector<std::string> out;
  out.reserve(items.size());
  for (const auto& i : items) out.push_back(field(i));
  return out;
}

// engine_options: {ENGINE: {NAME: VALUE}}, for engines of the spec; the engine checks names and values.
void readEngineOptions(const YamlReader& r, CapacitySpec& spec) {
  const auto options = r.findMap("engine_options");
  if (!options) return;
  for (const auto& engine : options->keysOf()) {
    const bool listed =
        std::any_of(spec.engines.begin(), spec.engines.end(), [&](const SweepEngine& e) { return e.engine == engine; });
    if (!listed) options->fail(engine, fmt::format("engine '{}' is not one of the spec's engines", engine));
    const YamlReader flags = options->map(engine);
    for (const auto& name : flags.keysOf()) spec.engine_options[engine][name] = flags.get<std::string>(name);
    flags.finish();
  }
  options->finish();
}

void readEngines(const YamlReader& r, const Catalog& c, CapacitySpec& spec) {
  const auto engine_ids = ids(c.engines(), [](const Engine& e) { return e.policy.engine; });
  for (const auto& id : r.get<std::vector<std::string>>("engines", {})) {
    if (std::find(engine_ids.begin(), engine_ids.end(), id) == engine_ids.end()) {
      r.fail("engines",
             fmt::format("unknown engine '{}' (known: {}){}", id, join(engine_ids, ", "), didYouMean(id, engine_ids)));
    }
    spec.engines.push_back({id, {}});
  }
  const auto node = r.raw("backends");
  if (node && !node->IsNull()) {
    if (!node->IsSequence()) r.failAt(*node, "backends", "expected a list of engine:NAME");
    for (const auto& item : *node) {
      const std::string text = item.IsScalar() ? item.Scalar() : "";
      const auto colon = text.find(':');
      const std::string engine = text.substr(0, std::min(colon, text.size()));
      if (colon == std::string::npos || std::find(engine_ids.begin(), engine_ids.end(), engine) == engine_ids.end()) {
        r.failAt(item, "backends",
                 fmt::format("'{}': expected engine:NAME with an engine of {}", text, join(engine_ids, ", ")));
      }
      const std::string name = text.substr(colon + 1);
      const auto names = backendNames(c.engine(engine));
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        r.failAt(item, "backends", fmt::format("{} has no backend '{}'{}", engine, name, didYouMean(name, names)));
      }
      spec.engines.push_back({engine, {name}});
    }
  }
  if (spec.engines.empty()) r.failMissing("engines");
}

void readTraffic(const YamlReader& r, CapacitySpec& spec) {
  const YamlReader slo = r.map("slo");
  spec.slo.ttft_s = slo.getNumber("p99_ttft_ms", 1e-3, 1e9) / 1e3;
  spec.slo.tpot_s = slo.getNumber("p99_tpot_ms", 1e-3, 1e9) / 1e3;
  slo.finish();
  const YamlReader a = r.map("arrivals");
  ArrivalSpec& out = spec.arrivals;
  out.process = a.findOneOf("process", {"poisson", "gamma"}).value_or("poisson");
  out.cv = a.findNumber("cv", 1e-3, 100).value_or(1);
  out.requests = a.getInt("requests", 1, 1000000);
  out.prompt_tokens = a.getInt("prompt_len", 1, 1 << 24);
  out.output_tokens = a.getInt("output_len", 1, 1 << 24);
  out.lengths = a.findOneOf("lengths", {"fixed", "uniform", "exponential"}).value_or("fixed");
  out.seed = static_cast<std::uint64_t>(a.findInt("seed", 0, std::int64_t{1} << 62).value_or(1));
  a.finish();
  spec.target_rate = r.findNumber("target_rate", 0, 1e9).value_or(0);
}

}  // namespace

CapacitySpec parseCapacitySpec(std::string_view text, const std::string& file, const Catalog& catalog) {
  const YamlReader r = YamlReader::parseDocument(text, file);
  CapacitySpec spec;
  spec.text = std::string(text);
  spec.file = file;
  spec.name = r.get<std::string>("name");
  spec.description = r.get<std::string>("description", "");
  spec.hardware = r.getListOf("hardware", ids(catalog.hardwareProfiles(), [](const auto& h) { return h.id; }));
  spec.models = r.getListOf("models", ids(catalog.models(), [](const auto& m) { return m.id; }));
  readEngines(r, catalog, spec);
  for (const auto& tp : r.get<std::vector<std::string>>("tp", {"1"})) {
    try {
      for (const auto v : parseIntRange(tp, 1, 1024)) spec.tp.push_back(v);
    } catch (const InputError& e) {
      r.fail("tp", e.what());
    }
  }
  spec.kv_dtype = r.find<std::string>("kv_dtype");
  readEngineOptions(r, spec);
  spec.cuda_graphs = r.findOneOf("cuda_graphs", {"on", "off"}).value_or("on") == "on";
  readTraffic(r, spec);
  r.finish();
  if (spec.hardware.empty() || spec.models.empty()) {
    throw CatalogError(r.location(), r.path(), "hardware and models need at least one id each");
  }
  return spec;
}

bool isCapacitySpecFile(std::string_view path) {
  return std::filesystem::path(std::string(path)).stem().string().starts_with("capacity");
}

std::vector<std::string> builtinCapacitySpecNames() {
  std::vector<std::string> names;
  for (const auto& f : embeddedSweepFiles()) {
    if (isCapacitySpecFile(f.path)) names.push_back(std::filesystem::path(std::string(f.path)).stem().string());
  }
  return names;
}

CapacitySpec loadCapacitySpec(const std::string& name_or_path, const Catalog& catalog) {
  for (const auto& f : embeddedSweepFiles()) {
    if (isCapacitySpecFile(f.path) && std::filesystem::path(std::string(f.path)).stem().string() == name_or_path) {
      return parseCapacitySpec(f.content, std::string(f.path), catalog);
    }
  }
  if (!std::filesystem::exists(name_or_path)) {
    const auto names = builtinCapacitySpecNames();
    throw UsageError(fmt::format("capacity study '{}': neither a built-in spec ({}) nor a file{}", name_or_path,
                                 join(names, ", "), didYouMean(name_or_path, names)));
  }
  return parseCapacitySpec(readTextFile(name_or_path, "capacity spec"), name_or_path, catalog);
}

std::vector<CapacityConfig> capacityConfigs(const CapacitySpec& spec) {
  std::vector<CapacityConfig> out;
  for (const auto& hw : spec.hardware) {
    for (const auto& model : spec.models) {
      for (const auto tp : spec.tp) {
        for (const auto& e : spec.engines) {
          Scenario s;
          s.hardware = hw;
          s.model = model;
          s.engine = e.engine;
          if (!e.backends.empty()) s.backend = e.backends.front();
          s.kv_dtype = spec.kv_dtype;
          if (const auto flags = spec.engine_options.find(e.engine); flags != spec.engine_options.end()) {
            for (const auto& [name, value] : flags->second) s.engine_options[name] = value;
          }
          s.tp = tp;
          s.cuda_graphs = spec.cuda_graphs;
          out.push_back({s, !e.backends.empty()});
        }
      }
    }
  }
  return out;
}

CapacityConfigRow searchAndStore(const Catalog& catalog, const CapacityConfig& config, const ArrivalSpec& arrivals,
                                 const ServeSlo& slo, double target_rate, CapacityStore& out,
                                 std::optional<std::int64_t> study) {
  const Scenario& s = config.scenario;
  CapacityConfigRow row;
  row.hardware = s.hardware;
  row.model = s.model;
  row.engine = s.engine;
  row.backend = s.backend.value_or("");
  row.forced_backend = config.forced_backend;
  row.kv_dtype = s.kv_dtype.value_or("");
  row.tp = static_cast<int>(s.tp);
  row.cuda_graphs = s.cuda_graphs;
  row.target_rate = target_rate;
  std::optional<RateSearch> search;
  try {
    const CapacityReport c = capacityOf(catalog, s);
    row.backend = c.backend;
    row.kv_dtype = c.kv_dtype;
    row.split = c.split;
    ServeSession session(catalog, s);  // throws when the weights leave no KV cache
    search = searchRate(session, arrivals, slo);
    row.max_rate = search->max_rate;
    row.simulations = search->simulations;
    row.error = search->slo_unmet;         // why not even the lowest rate meets the SLO; empty when one does
  } catch (const std::runtime_error& e) {  // the engine's refusal, a TP the heads do not split into, no KV room
    row.error = e.what();
  }
  const std::int64_t id = out.addConfig(study, row);
  if (search) out.addSearch(id, describeArrivals(arrivals), slo, *search);
  return row;
}

std::int64_t runCapacityStudy(const Catalog& catalog, const CapacitySpec& spec, Store& store,
                              const CapacityStudyOptions& options) {
  CapacityStore out(store);
  CapacityStudyRow head;
  head.name = spec.name;
  head.spec_text = spec.text;
  head.spec_hash = fmt::format("{:016x}", stableHash(spec.text));
  head.catalog_hash = catalog.contentHash();
  head.program_version = options.program_version;
  head.created = utcTimestamp();
  head.slo = spec.slo;
  head.arrivals = spec.arrivals;
  head.target_rate = spec.target_rate;
  const std::int64_t study = out.addStudy(head);
  for (const auto& config : capacityConfigs(spec)) {
    const CapacityConfigRow row =
        searchAndStore(catalog, config, spec.arrivals, spec.slo, spec.target_rate, out, study);
    if (options.on_config) options.on_config(row);
  }
  return study;
}

}  // namespace attnsim
