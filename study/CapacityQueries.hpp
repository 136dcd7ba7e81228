#pragma once
// Read-only queries over the store's capacity tables (docs/STORE.md, "Capacity") for
// `attnsim report capacity`: one capacity study (or the lone serve-sim and search runs), its
// configurations with their memory split and searched rate, every simulation's aggregates and
// the timelines kept. Rows come in id order, so a report of one store is the same every time.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "study/CapacityStore.hpp"

namespace attnsim {

struct StoredStudy {
  std::int64_t id = 0;
  std::string name, spec_hash, catalog_hash, program_version, arrivals;
  double slo_ttft_ms = 0, slo_tpot_ms = 0, target_rate = 0;
  std::int64_t requests = 0, prompt_tokens = 0, output_tokens = 0;
};

struct StoredConfig {
  std::int64_t id = 0;
  CapacityConfigRow row;
  std::optional<std::int64_t> gpus_for_target;
};

struct StoredRun {
  std::int64_t id = 0, config = 0;
  ServeRunRow row;
  std::int64_t requests = 0, steps = 0, preemptions = 0, rejected = 0;
  Percentiles ttft_ms, tpot_ms, itl_ms, e2e_s, queue_ms;  // max unused
  double output_tokens_per_s = 0, requests_per_s = 0, goodput_rps = 0, slo_attainment = 0;
  double mean_batch = 0, mean_kv_use = 0, peak_kv_use = 0;
};

struct CapacityData {
  std::optional<StoredStudy> study;  // absent: the runs no study owns (serve-sim --db, capacity search --db)
  std::vector<StoredConfig> configs;
  std::vector<StoredRun> runs;                                   // of those configurations, by id
  std::vector<std::pair<std::int64_t, TimelinePoint>> timeline;  // run id, point; of the runs kept in full
  std::string path;
};

// Every capacity study of the store, by id.
std::vector<StoredStudy> capacityStudies(const Store& store);
// `study`: a study's name or id; "" takes the store's only study, or, when it has none, the runs no
// study owns. UsageError when the store holds no serving results, or several studies and no name.
CapacityData loadCapacityData(const Store& store, const std::string& study);

}  // namespace attnsim
