#pragma once
// Runs a sweep spec into a store: the points of one shard that the store does not hold yet are
// evaluated by worker threads and written by one writer in large transactions, each point's rows
// with it, so an interrupted sweep resumes where it stopped with no point lost or written twice.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "study/SweepSpec.hpp"

namespace attnsim {

class Catalog;
class Store;

struct SweepShard {
  int index = 0;  // 0-based
  int count = 1;
};
// "k/N" with 1 <= k <= N (as --shard spells it); UsageError otherwise.
SweepShard parseShard(const std::string& text);
// The shard from a Slurm job array (SLURM_ARRAY_TASK_ID / SLURM_ARRAY_TASK_COUNT) or an MPI launch
// (OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE, PMI_RANK / PMI_SIZE); the whole sweep otherwise.
SweepShard shardFromEnvironment();

struct SweepProgress {
  std::int64_t done = 0;   // points of this shard in the store
  std::int64_t total = 0;  // points of this shard
  std::int64_t written = 0;
  std::int64_t predictions = 0;  // written by this run
  double seconds = 0;            // since the sweep started: planning, the groups' selection, evaluation and writes
};

struct SweepOptions {
  int jobs = 1;  // worker threads evaluating points; one more thread writes
  SweepShard shard;
  std::int64_t commit_points = 20000;  // a transaction closes after this many points...
  double commit_seconds = 1.0;         // ...or this long after it opened
  std::string program_version;
  const std::atomic<bool>* stop = nullptr;             // set (e.g. by SIGINT): finish the open batch, commit, return
  std::function<void(const SweepProgress&)> progress;  // called from the writer, a few times a second
};

struct SweepSummary {
  std::int64_t sweep_id = 0;
  std::int64_t points = 0;        // of the whole sweep, after filters
  std::int64_t groups = 0;        // evaluated by this run (shared selection work)
  SweepProgress progress;         // this shard at the end
  std::int64_t already_done = 0;  // points found in the store at the start
  bool interrupted = false;
};

SweepSummary runSweep(const Catalog& catalog, const SweepSpec& spec, Store& store, const SweepOptions& options);

// The sweep's id in the store: stable for one spec text, catalog and calibration.
std::int64_t sweepId(const SweepSpec& spec, const std::string& catalog_hash);

}  // namespace attnsim
