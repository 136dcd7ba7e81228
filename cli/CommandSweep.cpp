// attnsim sweep SPEC --db FILE: a study over a spec's axes, into a store (docs/SWEEPS.md).
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "catalog/Catalog.hpp"
#include "cli/Commands.hpp"
#include "core/Error.hpp"
#include "core/Strings.hpp"
#include "reports/Answers.hpp"
#include "study/Calibration.hpp"
#include "study/Store.hpp"
#include "study/Sweep.hpp"
#include "study/SweepStore.hpp"

namespace attnsim::cli {

namespace {

std::atomic<bool> interrupted{false};
extern "C" void onInterrupt(int /*signal*/) { interrupted = true; }

// SIGINT and SIGTERM finish the open batch and commit it; a second one kills the process.
class InterruptGuard {
 public:
  InterruptGuard() {
    interrupted = false;
    struct sigaction action {};
    action.sa_handler = onInterrupt;
    action.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &action, &old_int_);
    sigaction(SIGTERM, &action, &old_term_);
  }
  ~InterruptGuard() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

// One line on a terminal, rewritten in place; nothing when stderr is a file or a pipe (logs).
std::function<void(const SweepProgress&)> progressLine(const std::string& name) {
  if (!isatty(STDERR_FILENO)) return {};
  return [name](const SweepProgress& p) {
    const double rate = p.seconds > 0 ? static_cast<double>(p.written) / p.seconds : 0;
    const auto left = p.total - p.done;
    const std::string eta = rate > 0 ? fmt::format("{:.0f} s", static_cast<double>(left) / rate) : "?";
    fmt::print(stderr, "\r\033[Ksweep {}: {}/{} points ({:.1f}%) · {:.0f} points/s · ETA {}", name, p.done, p.total,
               p.total ? 100.0 * static_cast<double>(p.done) / static_cast<double>(p.total) : 100.0, rate, eta);
    std::fflush(stderr);
  };
}

struct SweepFlags {
  std::string spec, db, shard;
  int jobs = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  std::int64_t commit_points = 20000;
  bool bench = false, list = false;
};

int runSweepCommand(const SweepFlags& f, const GlobalOptions& global) {
  if (f.list) {
    for (const auto& name : builtinSweepNames()) fmt::print("{}\n", name);
    return 0;
  }
  if (f.spec.empty()) throw UsageError("sweep: give a SPEC (built-in: " + join(builtinSweepNames(), ", ") + ")");
  const CatalogSource source = global.catalogSource();
  Catalog catalog = global.loadCatalog();  // a copy: the spec's calibration study may apply fits
  const SweepSpec spec = loadSweepSpec(f.spec, catalog);
  if (!spec.calibration_study.empty())
    applyStudyCalibrations(catalog, Store(spec.calibration_study, StoreAccess::ReadOnly));
  std::string db = f.db;
  if (f.bench) {
    db = (std::filesystem::temp_directory_path() / fmt::format("attnsim-bench-{}.db", getpid())).string();
  } else if (db.empty()) {
    throw UsageError("sweep: --db FILE is required (the store the points go to)");
  }
  SweepOptions o;
  o.jobs = f.jobs;
  o.shard = f.shard.empty() ? shardFromEnvironment() : parseShard(f.shard);
  o.commit_points = f.commit_points;
  o.program_version = ATTNSIM_VERSION;
  o.stop = &interrupted;
  o.progress = progressLine(spec.name);
  SweepSummary summary;
  {
    Store store(db);
    storeCatalogFiles(store, catalog.contentHash(), source.files());
    const InterruptGuard guard;
    summary = runSweep(catalog, spec, store, o);
  }
  if (o.progress) fmt::print(stderr, "\r\033[K");
  if (f.bench) {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db + suffix);
  }
  const auto j = sweepSummaryJson(summary, spec, f.bench ? "(temporary)" : db, o.shard);
  if (global.json) {
    std::cout << j.dump(2) << "\n";
  } else {
    fmt::print("{}", sweepSummaryText(j));
  }
  if (summary.interrupted) {
    std::cerr << fmt::format("attnsim: interrupted: {} of {} points stored; run the same command to resume\n",
                             summary.progress.done, summary.progress.total);
    return 130;
  }
  return 0;
}

}  // namespace

Runner addSweepCommand(CLI::App& app, const GlobalOptions& global) {
  auto f = std::make_shared<SweepFlags>();
  app.add_option("spec", f->spec, "a built-in spec name (attnsim sweep --list) or a YAML file");
  app.add_option("--db", f->db, "the store (SQLite) the points go to; a rerun resumes it");
  app.add_option("--jobs", f->jobs, "worker threads evaluating points (default: every core); one more writes")
      ->check(CLI::Range(1, 1024));
  app.add_option("--shard", f->shard,
                 "k/N: only the points of shard k (by key hash); default from SLURM_ARRAY_TASK_ID/_COUNT or "
                 "OMPI_COMM_WORLD_RANK/_SIZE, else all");
  app.add_option("--commit-points", f->commit_points, "points per transaction (also committed every second)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 30));
  app.add_flag("--bench", f->bench, "run into a temporary store and report the throughput (writes included)");
  app.add_flag("--list", f->list, "list the built-in specs");
  return [f, &global]() { return runSweepCommand(*f, global); };
}

}  // namespace attnsim::cli
