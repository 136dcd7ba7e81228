#pragma once
// A capacity study: the rate search (simulator/CapacitySearch) over hardware × model × engine (its
// own choice, or each named backend) × TP, for one traffic shape and one SLO, every result stored
// (study/CapacityStore). The spec is YAML (docs/CAPACITY.md, "Capacity studies"); the built-in
// ones are sweeps/capacity*.yaml, embedded beside the sweep specs.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "study/CapacityStore.hpp"
#include "study/SweepSpec.hpp"

namespace attnsim {

struct CapacitySpec {
  std::string name, description, text, file;
  std::vector<std::string> hardware, models;
  std::vector<SweepEngine> engines;  // no backends: the engine's own choice
  std::vector<std::int64_t> tp;
  std::optional<std::string> kv_dtype;
  // Engine flags per engine, as `--option name=value` gives them (engine_options: {sglang: {name: value}}).
  std::map<std::string, std::map<std::string, std::string>> engine_options;
  bool cuda_graphs = true;
  ServeSlo slo;
  ArrivalSpec arrivals;  // the rate is searched
  double target_rate = 0;
};

// Reads a spec; ids and backends are checked against the catalog (CatalogError at file:line:col).
CapacitySpec parseCapacitySpec(std::string_view text, const std::string& file, const Catalog& catalog);
// A built-in name (sweeps/capacity*.yaml) or a path.
CapacitySpec loadCapacitySpec(const std::string& name_or_path, const Catalog& catalog);
std::vector<std::string> builtinCapacitySpecNames();
// Whether an embedded sweeps/ file is a capacity spec (its name starts with "capacity").
bool isCapacitySpecFile(std::string_view path);

// One configuration of the study: the scenario it serves, and what the spec asked for.
struct CapacityConfig {
  Scenario scenario;
  bool forced_backend = false;
};
std::vector<CapacityConfig> capacityConfigs(const CapacitySpec& spec);

struct CapacityStudyOptions {
  std::string program_version;
  // Called after each configuration is stored (progress, a table row).
  std::function<void(const CapacityConfigRow&)> on_config;
};
// Runs every configuration's search and stores it; returns the study's id.
std::int64_t runCapacityStudy(const Catalog& catalog, const CapacitySpec& spec, Store& store,
                              const CapacityStudyOptions& options);

// One configuration searched and stored (capacity study and capacity search --db share it).
CapacityConfigRow searchAndStore(const Catalog& catalog, const CapacityConfig& config, const ArrivalSpec& arrivals,
                                 const ServeSlo& slo, double target_rate, CapacityStore& out,
                                 std::optional<std::int64_t> study);

}  // namespace attnsim
