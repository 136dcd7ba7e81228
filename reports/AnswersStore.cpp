// A sweep's summary and the reports over a store, as the CLI prints them and the Python module returns
// them.
#include <filesystem>

#include "core/Error.hpp"
#include "reports/Answers.hpp"
#include "reports/CapacityReport.hpp"
#include "reports/TextOut.hpp"
#include "study/CapacityQueries.hpp"

namespace attnsim {

using nlohmann::json;

json sweepSummaryJson(const SweepSummary& s, const SweepSpec& spec, const std::string& db, SweepShard shard) {
  const double secs = s.progress.seconds;
  return {{"sweep", spec.name},
          {"sweep_id", s.sweep_id},
          {"db", db},
          {"shard", fmt::format("{}/{}", shard.index + 1, shard.count)},
          {"points", s.points},
          {"shard_points", s.progress.total},
          {"already_stored", s.already_done},
          {"written", s.progress.written},
          {"predictions", s.progress.predictions},
          {"groups", s.groups},
          {"seconds", secs},
          {"points_per_second", secs > 0 ? static_cast<double>(s.progress.written) / secs : 0},
          {"predictions_per_second", secs > 0 ? static_cast<double>(s.progress.predictions) / secs : 0},
          {"interrupted", s.interrupted}};
}

std::string sweepSummaryText(const json& j) {
  return fmt::format(
      "sweep {} → {} (shard {}): {} points, {} stored before, {} written with {} predictions ({} groups) in "
      "{:.2f} s: {:.0f} points/s, {:.0f} predictions/s\n",
      j["sweep"].get<std::string>(), j["db"].get<std::string>(), j["shard"].get<std::string>(),
      j["shard_points"].get<std::int64_t>(), j["already_stored"].get<std::int64_t>(), j["written"].get<std::int64_t>(),
      j["predictions"].get<std::int64_t>(), j["groups"].get<std::int64_t>(), j["seconds"].get<double>(),
      j["points_per_second"].get<double>(), j["predictions_per_second"].get<double>());
}

StudyReport storeReport(const ReportRequest& r, const Catalog& fallback) {
  const bool capacity = r.what == "capacity";
  if (!std::filesystem::exists(r.db)) {
    throw UsageError(
        fmt::format("--db {}: no such file (run attnsim {})", r.db, capacity ? "capacity study" : "sweep first"));
  }
  Store store(r.db, StoreAccess::ReadOnly);
  if (capacity) {
    std::string command = fmt::format("attnsim report capacity --db {} --out {}", study_report::shellWord(r.db),
                                      study_report::shellWord(r.out_dir));
    if (!r.study.empty()) command.append(" --study ").append(study_report::shellWord(r.study));
    return capacityReport(loadCapacityData(store, r.study), command);
  }
  const StudyData data = loadStudyData(store, r.sweep, fallback);
  if (r.what == "priorities") return prioritiesReport(data);
  if (r.what == "matrix") return matrixReport(data);
  if (r.what == "whatif") return whatIfReport(data, r.whatif);
  throw UsageError(fmt::format("report {}: expected priorities, whatif, matrix or capacity", r.what));
}

}  // namespace attnsim
