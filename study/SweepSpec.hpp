#pragma once
// A sweep spec: the axes of a study (hardware × models × engines or backends × serving options ×
// workloads), read from YAML with the catalog's strict reader, and its expansion into numbered
// points. docs/SWEEPS.md describes the format; sweeps/ holds the built-in specs.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/Expr.hpp"
#include "simulator/Scenario.hpp"

namespace attnsim {

class Catalog;

// One workload of the spec, with the speculative-decoding settings a verify step needs.
struct SweepWorkload {
  Workload workload;
  std::optional<std::string> spec_algorithm;  // verify only
  std::string label;                          // "decode b=32 c=4096", stable: part of a point's key
};

// The candidates of one engine: every backend of the engine, or the ones the spec names.
struct SweepEngine {
  std::string engine;
  std::vector<std::string> backends;
};

struct SweepSpec {
  std::string name;
  std::string description;
  std::string text;  // the YAML as read (stored with the sweep)
  std::string file;  // where it came from ("sweeps/default.yaml" for a built-in one)
  std::vector<std::string> hardware, models;
  std::vector<SweepEngine> engines;
  std::vector<std::optional<std::string>> kv_dtypes;      // nullopt: the engine's default
  std::vector<std::optional<std::string>> weight_dtypes;  // nullopt: the model's own (its checkpoint)
  std::vector<std::optional<std::int64_t>> page_sizes;
  std::vector<std::int64_t> tp;
  std::vector<bool> cuda_graphs;
  std::vector<SweepWorkload> workloads;
  std::vector<Expr> drop;         // a point is dropped when any is true
  std::string calibration_study;  // empty: the catalog's calibration; else a study file (calibrate --db)
};

// Reads a spec; ids are checked against the catalog. Errors are CatalogErrors at file:line:col.
SweepSpec parseSweepSpec(std::string_view text, const std::string& file, const Catalog& catalog);
// A built-in name (sweeps/NAME.yaml, embedded) or a path to a YAML file.
SweepSpec loadSweepSpec(const std::string& name_or_path, const Catalog& catalog);
std::vector<std::string> builtinSweepNames();

// "1..256x2" (geometric), "512..4096+512" (arithmetic) or "64": the integers it spells, each in
// [min, max]. Throws InputError describing the expected syntax.
std::vector<std::int64_t> parseIntRange(std::string_view text, std::int64_t min, std::int64_t max);

// A comma list of those ("1,8,64..256x2").
std::vector<std::int64_t> parseIntList(std::string_view text, std::int64_t min, std::int64_t max);

// The variables a `drop` expression may use, set for one point.
Env sweepFilterEnv(const Scenario& s, const SweepWorkload& w);
std::string checkSweepFilterVariable(std::string_view name);

// 64-bit FNV-1a: stable across runs and machines (keys, shards, ids).
std::uint64_t stableHash(std::string_view text);

}  // namespace attnsim
