// predict and rank over lists: the sweep's rows read back from its store, as JSON and as one table.
#include "hardware/KernelEfficiency.hpp"
#include "reports/Answers.hpp"
#include "reports/TextOut.hpp"
#include "study/StoreStatement.hpp"

namespace attnsim {

using nlohmann::json;

namespace {

constexpr const char* kSweepAnswerSql = R"(
  SELECT g.hardware, g.model, g.engine, p.workload, p.phase, p.batch, p.context, p.valid, s.refusal, c.backend,
         c.variant, c.reason, c.engine_default, r.rank, r.step_us, r.attention_us, r.eager_us, r.graph_us, r.bound,
         r.graph_mode, r.band, r.provenance, r.tie_band, p.memory_fits, p.memory_reason, p.memory_need_mib,
         p.memory_have_mib, r.memory_fits, r.memory_reason, r.memory_need_mib, r.memory_have_mib
  FROM points p JOIN sweep_groups g ON g.sweep = p.sweep AND g.id = p.grp
  JOIN selections s ON s.sweep = p.sweep AND s.grp = p.grp
  LEFT JOIN candidates c ON c.sweep = p.sweep AND c.grp = p.grp
  LEFT JOIN predictions r ON r.sweep = p.sweep AND r.point = p.id AND r.slot = c.slot
  WHERE p.sweep = ? ORDER BY p.id, g.engine, r.rank IS NULL, r.rank, c.slot)";

// A memory verdict as the store keeps it from column `first` on (null: not assessed, e.g. no serving data).
json sweepMemoryJson(const Statement& q, int first) {
  if (q.isNull(first)) return nullptr;
  return {{"fits", q.integer(first) != 0},
          {"reason", q.isNull(first + 1) ? json() : json(q.text(first + 1))},
          {"need_mib", q.isNull(first + 2) ? json() : json(q.real(first + 2))},
          {"have_mib", q.isNull(first + 3) ? json() : json(q.real(first + 3))}};
}

// One row of the table: a prediction, or why there is none.
json sweepRowJson(const Statement& q) {
  json row{
      {"hardware", q.text(0)}, {"model", q.text(1)},    {"engine", q.text(2)},     {"workload", q.text(3)},
      {"phase", q.text(4)},    {"batch", q.integer(5)}, {"context", q.integer(6)}, {"memory", sweepMemoryJson(q, 23)}};
  if (q.isNull(13)) {
    row["refusal"] = q.integer(7) ? q.text(11) : q.text(8);
    if (!q.isNull(9) && q.integer(7)) row["backend"] = q.text(9);
    return row;
  }
  row.update({{"backend", q.text(9)},
              {"variant", q.text(10)},
              {"rank", q.integer(13)},
              {"step_us", q.real(14)},
              {"attention_us", q.real(15)},
              {"eager_us", q.real(16)},
              {"graph_us", q.real(17)},
              {"bound", q.text(18)},
              {"graph_mode", q.text(19)},
              {"band", q.real(20)},
              {"provenance", q.text(21)},
              {"engine_default", q.integer(12) != 0}});
  // A predicted backend's own deployment (backends differ in page size, workspace and graph memory); a
  // store written before schema 8 has only the engine's, kept as it was.
  if (!q.isNull(27)) row["memory"] = sweepMemoryJson(q, 27);
  return row;
}

std::string sweepFitsColumn(const json& r) {
  if (!r.contains("memory") || r["memory"].is_null()) return "-";
  if (r["memory"]["fits"].get<bool>()) return "yes";
  return r["memory"]["reason"] == "weights" ? "no (W)" : "no (KV)";
}

}  // namespace

json sweepAnswerJson(const Store& store, std::int64_t sweep, bool rank, bool forced) {
  Statement q(store.handle(), kSweepAnswerSql);
  q.bind(1, sweep);
  json rows = json::array();
  std::string last_point;
  double best_us = 0, best_band = 0;  // the point's fastest (rank 1 sorts first)
  while (q.step()) {
    const std::string point = q.text(0) + q.text(1) + q.text(2) + q.text(3);
    const bool predicted = !q.isNull(13);
    // A point with no prediction lists first its refusal (predictions sort first).
    const bool wanted = rank ? predicted || point != last_point
                             : point != last_point && (forced || (predicted && q.integer(12) != 0) || !predicted);
    if (!wanted) continue;
    json row = sweepRowJson(q);
    if (predicted && q.integer(13) == 1) best_us = q.real(14), best_band = q.real(22);
    // Tied within uncertainty with the point's fastest (docs/COST_MODEL.md "Uncertainty").
    if (predicted && rank) row["tied_with_fastest"] = withinBands(best_us, best_band, q.real(14), q.real(22));
    rows.push_back(std::move(row));
    last_point = point;
  }
  return rows;
}

std::string sweepAnswerText(const json& rows, bool rank) {
  std::string out = fmt::format("{:<14} {:<16} {:<8} {:<34} {:<24} {:>4} {:>11} {:>5} {:>12}  {:<8} {:<7} {}\n",
                                "hardware", "model", "engine", "workload", "backend", rank ? "rank" : "", "step µs",
                                "±", "attention µs", "bound", "fits", "figures");
  for (const auto& r : rows) {
    const auto text = [&](const char* k) { return r.contains(k) ? r[k].get<std::string>() : std::string(); };
    if (r.contains("refusal")) {
      appendf(out, "{:<14} {:<16} {:<8} {:<34} {:<24} refused: {}\n", text("hardware"), text("model"), text("engine"),
              text("workload"), text("backend"), text("refusal"));
      continue;
    }
    const std::string backend =
        text("variant").empty() ? text("backend") : fmt::format("{} [{}]", text("backend"), text("variant"));
    const bool tied = rank && r["rank"].get<int>() > 1 && r["tied_with_fastest"].get<bool>();
    appendf(out, "{:<14} {:<16} {:<8} {:<34} {:<24} {:>4} {:>11.1f} {:>4.0f}% {:>12.2f}  {:<8} {:<7} {}{}\n",
            text("hardware"), text("model"), text("engine"), text("workload"), backend,
            rank ? fmt::format("{}{}", tied ? "≈" : "", r["rank"].get<int>()) : "", r["step_us"].get<double>(),
            100 * r["band"].get<double>(), r["attention_us"].get<double>(), text("bound"), sweepFitsColumn(r),
            text("provenance"), rank && r["engine_default"].get<bool>() ? "  ← engine default" : "");
  }
  if (rank) {
    out.append("≈: tied within uncertainty with the point's fastest (docs/COST_MODEL.md \"Uncertainty\")\n");
    out.append(
        "fits: whether this backend's deployment holds the point's batch (the engine sizes its KV pool with the "
        "backend's page size, workspace and graph memory); W: the weights leave no KV pool, KV: the batch's KV "
        "exceeds it\n");
  }
  return out;
}

}  // namespace attnsim
