#pragma once
// Serving results in the study store (docs/STORE.md, "Capacity"): capacity studies, one
// configuration's memory split and rate search, every simulation's aggregates, and the requests
// and timeline of the simulations kept in full. serve-sim --db, capacity search --db and
// capacity study write them; report capacity reads them.
#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "simulator/CapacitySearch.hpp"
#include "simulator/ServeBenchmark.hpp"
#include "study/Store.hpp"

namespace attnsim {

// The capacity tables, created when missing (CREATE TABLE IF NOT EXISTS: they need no schema version).
void createCapacityTables(sqlite3* db, const std::string& path);
// Copies the capacity tables of the store attached as `src` into `main` (store merge), inside the
// caller's transaction: ids remapped, a row equal to one already merged (parent ids mapped) kept once.
void mergeCapacityTables(sqlite3* db, const std::string& label);

// What a study ran: its spec (or the command) and the traffic every search shares.
struct CapacityStudyRow {
  std::string name, spec_text, spec_hash, catalog_hash, program_version, created;
  ServeSlo slo;
  ArrivalSpec arrivals;  // rate unused: searched
  double target_rate = 0;
};

// One hardware × model × engine × backend × TP configuration.
struct CapacityConfigRow {
  std::string hardware, model, engine, backend, kv_dtype;  // backend: the resolved one ("" when refused)
  bool forced_backend = false;                             // the spec named the backend
  int tp = 1;
  bool cuda_graphs = true;
  std::optional<MemorySplit> split;  // absent when the engine refused the scenario
  std::string error;                 // the refusal, or why it cannot serve (weights do not fit)
  std::optional<double> max_rate;    // searched: the highest rate within the SLO (0: none)
  double target_rate = 0;
  int simulations = 0;
  // Searched, and not even the lowest rate meets the SLO (error says why): no rate, no GPU count.
  [[nodiscard]] bool sloUnmet() const { return max_rate && *max_rate <= 0; }
};

// One simulation: how its requests came, and what came out.
struct ServeRunRow {
  std::string kind;      // serve-sim or search
  std::string arrivals;  // "trace FILE" or the generated process and its lengths
  double rate = 0;       // offered requests per second (for a trace: requests / last arrival)
  ServeSlo slo;
  bool meets_slo = false, at_max = false;
};

// Steps of a timeline kept in the store: at most this many, evenly strided.
constexpr std::size_t kTimelinePoints = 200;

class CapacityStore {
 public:
  explicit CapacityStore(Store& store) : store_(store) {}
  std::int64_t addStudy(const CapacityStudyRow& row);
  // study: NULL for a lone serve-sim or search.
  std::int64_t addConfig(std::optional<std::int64_t> study, const CapacityConfigRow& row);
  // Aggregates always; the requests and the timeline (at most `timeline_points` points) when `full`.
  std::int64_t addRun(std::int64_t config, const ServeRunRow& row, const ServeResult& result, bool full,
                      std::size_t timeline_points = kTimelinePoints);
  // A search: every probe's aggregates, the requests and timeline of the run at the highest rate.
  void addSearch(std::int64_t config, const std::string& arrivals, const ServeSlo& slo, const RateSearch& search);

 private:
  Store& store_;
};

// KV capacity of a configuration: how many requests of `context` tokens the pool holds at once.
std::int64_t requestsThatFit(const MemorySplit& split, std::int64_t context);

// "poisson 1000 requests, prompt 1024 / output 128 fixed, seed 1" (rate left out: it varies).
std::string describeArrivals(const ArrivalSpec& a);

// How a lone serve-sim run came about (serve-sim --db, Python serve_sim(db=...)).
struct ServeSimRecord {
  bool forced_backend = false, cuda_graphs = true;
  std::string trace;     // the trace file its requests came from; "" when generated from `arrivals`
  ArrivalSpec arrivals;  // the generated requests' spec
  std::int64_t max_concurrency = 0;
  ServeSlo slo;
};
// Stores the run in `db` (created when missing) as a configuration of its own with its aggregates,
// requests and timeline; returns the run's id (study/ServingRecords.cpp).
std::int64_t storeServeSimRun(const std::string& db, const ServeBenchmarkRun& b,
                              const std::vector<ServeRequest>& requests, const ServeSimRecord& r);
// Stores one configuration's rate search (capacity search --db, Python capacity_search(db=...)).
void storeCapacitySearch(CapacityStore& out, const CapacitySearchRow& row, const ArrivalSpec& arrivals,
                         const ServeSlo& slo, double target_rate);
// The requests as serve-sim --write-trace writes them: arrival_s,prompt_tokens,output_tokens.
std::string requestsCsv(const std::vector<ServeRequest>& requests);

}  // namespace attnsim
