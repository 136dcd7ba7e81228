// predict and rank over lists (--hardware a,b --batch 1..256x2 ...): the flags become a sweep
// spec (YAML, so it is checked and stored like any other), run by the sweep engine into the
// --db study or an in-memory store, and read back as one table or JSON rows.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/Commands.hpp"
#include "core/Error.hpp"
#include "hardware/KernelEfficiency.hpp"
#include "study/Store.hpp"
#include "study/StoreStatement.hpp"
#include "study/Sweep.hpp"

namespace attnsim::cli {

namespace {

constexpr std::int64_t kMaxBatch = std::int64_t{1} << 24, kMaxTokens = std::int64_t{1} << 26;

YAML::Node intList(const std::vector<std::int64_t>& values) {
  YAML::Node n(YAML::NodeType::Sequence);
  for (const auto v : values) n.push_back(v);
  return n;
}

std::vector<std::int64_t> listFlag(const char* flag, const std::string& text, std::int64_t max) {
  try {
    return parseIntList(text, 1, max);
  } catch (const InputError& e) {
    throw UsageError(fmt::format("{} {}", flag, e.what()));
  }
}

YAML::Node workloadNode(const ScenarioFlags& f) {
  YAML::Node w;
  const auto batch = intList(listFlag("--batch", f.batch, kMaxBatch));
  if (!f.mix.empty()) {
    w["mixed"].push_back(f.mix);
    return w;
  }
  f.checkPrefillLength();
  if (f.context.empty() && f.prefill_length.empty()) {
    throw UsageError("--context is required for phase " + f.phase + " (or give --mix or --prefill-length)");
  }
  const std::int64_t q_len = f.q_len.value_or(1);
  const auto contexts = f.context.empty() ? std::vector<std::int64_t>{} : listFlag("--context", f.context, kMaxTokens);
  const Phase phase = f.prefill_length.empty() ? parsePhase(f.phase) : Phase::Prefill;
  // The contexts, or a prefill's lengths: each is checked against --q-len as the single-value path does.
  const auto lengths = f.prefill_length.empty() ? contexts : listFlag("--prefill-length", f.prefill_length, kMaxTokens);
  for (const auto n : lengths) checkQLenForPhase(phase, f.q_len, n);
  if (phase == Phase::Prefill) {
    w["prefill"]["batch"] = batch;
    w["prefill"]["length"] = intList(lengths);
  } else if (phase == Phase::Extend) {
    std::vector<std::int64_t> prefixes;
    for (const auto c : contexts) {
      if (c <= q_len) throw UsageError(fmt::format("--context {} must exceed --q-len {} for extend", c, q_len));
      prefixes.push_back(c - q_len);
    }
    w["extend"]["batch"] = batch;
    w["extend"]["chunk"] = q_len;
    w["extend"]["prefix"] = intList(prefixes);
  } else if (phase == Phase::Verify) {
    w["verify"]["batch"] = batch;
    w["verify"]["context"] = intList(contexts);
    w["verify"]["draft_tokens"] = q_len;
    w["verify"]["topk"] = f.spec_topk.value_or(1);
    w["verify"]["algorithm"] = f.spec_algorithm.value_or("eagle");
  } else {
    w["decode"]["batch"] = batch;
    w["decode"]["context"] = intList(contexts);
  }
  return w;
}

void refuseUnsupported(const ScenarioFlags& f) {
  const bool unsupported = !f.kernel.empty() || f.prefill_backend || f.decode_backend || f.has_prefix ||
                           f.cuda_version || !f.engine_options.empty() || f.spec_attention_mode || f.num_heads ||
                           f.head_dim || f.models.empty();
  if (unsupported) {
    throw UsageError(
        "with lists, predict and rank take --hardware, --model, --engine or --backend engine:NAME, the workload "
        "flags, --kv-dtype, --page-size, --tp, --cuda-graph and --db (not --kernel, stage backends, --prefix, "
        "--cuda-version, --option or a custom geometry)");
  }
}

std::string specText(const ScenarioFlags& f, bool rank) {
  refuseUnsupported(f);
  YAML::Node spec;
  spec["name"] = rank ? "rank" : "predict";
  spec["description"] = "attnsim predict/rank over lists on the command line";
  for (const auto& h : splitList(f.hardware)) spec["hardware"].push_back(h);
  for (const auto& m : splitList(f.models)) spec["models"].push_back(m);
  std::string engine = f.engines;
  std::optional<std::string> backend = f.backend.empty() ? std::nullopt : std::optional<std::string>(f.backend);
  qualifyBackend(backend, engine, "--backend");
  if (backend) {
    if (engine.empty()) throw UsageError("--backend needs engine:NAME, e.g. vllm:FLASH_ATTN");
    spec["backends"].push_back(engine + ":" + *backend);
  } else if (!engine.empty() || rank) {
    for (const auto& e : splitList(engine)) spec["engines"].push_back(e);
  }
  if (!spec["engines"] && !spec["backends"] && !rank) throw UsageError("give --engine E or --backend engine:NAME");
  if (f.kv_dtype) spec["kv_dtypes"].push_back(*f.kv_dtype);
  if (f.page_size) spec["page_sizes"].push_back(*f.page_size);
  spec["tp"].push_back(f.tp);
  spec["cuda_graphs"].push_back(f.cuda_graph);
  spec["workloads"].push_back(workloadNode(f));
  YAML::Emitter out;
  out << spec;
  return out.c_str();
}

bool isList(const ScenarioFlags& f) {
  auto many = [](const std::string& text) {
    return splitList(text).size() > 1 || text.find("..") != std::string::npos;
  };
  return many(f.hardware) || many(f.models) || many(f.batch) || many(f.context) || many(f.prefill_length);
}

constexpr const char* kRowsSql = R"(
  SELECT g.hardware, g.model, g.engine, p.workload, p.phase, p.batch, p.context, p.valid, s.refusal, c.backend,
         c.variant, c.reason, c.engine_default, r.rank, r.step_us, r.attention_us, r.eager_us, r.graph_us, r.bound,
         r.graph_mode, r.band, r.provenance, r.tie_band
  FROM points p JOIN sweep_groups g ON g.sweep = p.sweep AND g.id = p.grp
  JOIN selections s ON s.sweep = p.sweep AND s.grp = p.grp
  LEFT JOIN candidates c ON c.sweep = p.sweep AND c.grp = p.grp
  LEFT JOIN predictions r ON r.sweep = p.sweep AND r.point = p.id AND r.slot = c.slot
  WHERE p.sweep = ? ORDER BY p.id, g.engine, r.rank IS NULL, r.rank, c.slot)";

// One row of the table: a prediction, or why there is none.
nlohmann::json rowOf(const Statement& q) {
  nlohmann::json row{{"hardware", q.text(0)},  {"model", q.text(1)}, {"engine", q.text(2)},
                     {"workload", q.text(3)},  {"phase", q.text(4)}, {"batch", q.integer(5)},
                     {"context", q.integer(6)}};
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
  return row;
}

// predict: the engine's own choice (or the one forced backend); rank: every valid backend.
nlohmann::json studyRows(const Store& store, std::int64_t sweep, bool rank, bool forced) {
  Statement q(store.handle(), kRowsSql);
  q.bind(1, sweep);
  nlohmann::json rows = nlohmann::json::array();
  std::string last_point;
  double best_us = 0, best_band = 0;  // the point's fastest (rank 1 sorts first)
  while (q.step()) {
    const std::string point = q.text(0) + q.text(1) + q.text(2) + q.text(3);
    const bool predicted = !q.isNull(13);
    // A point with no prediction lists first its refusal (predictions sort first).
    const bool wanted = rank ? predicted || point != last_point
                             : point != last_point && (forced || (predicted && q.integer(12) != 0) || !predicted);
    if (!wanted) continue;
    nlohmann::json row = rowOf(q);
    if (predicted && q.integer(13) == 1) best_us = q.real(14), best_band = q.real(22);
    // Tied within uncertainty with the point's fastest (docs/COST_MODEL.md "Uncertainty").
    if (predicted && rank) row["tied_with_fastest"] = withinBands(best_us, best_band, q.real(14), q.real(22));
    rows.push_back(std::move(row));
    last_point = point;
  }
  return rows;
}

void printRows(const nlohmann::json& rows, bool rank) {
  fmt::print("{:<14} {:<16} {:<8} {:<34} {:<24} {:>4} {:>11} {:>5} {:>12}  {:<8} {}\n", "hardware", "model", "engine",
             "workload", "backend", rank ? "rank" : "", "step µs", "±", "attention µs", "bound", "figures");
  for (const auto& r : rows) {
    const auto text = [&](const char* k) { return r.contains(k) ? r[k].get<std::string>() : std::string(); };
    if (r.contains("refusal")) {
      fmt::print("{:<14} {:<16} {:<8} {:<34} {:<24} refused: {}\n", text("hardware"), text("model"), text("engine"),
                 text("workload"), text("backend"), text("refusal"));
      continue;
    }
    const std::string backend = text("backend") + (text("variant").empty() ? "" : " [" + text("variant") + "]");
    const bool tied = rank && r["rank"].get<int>() > 1 && r["tied_with_fastest"].get<bool>();
    fmt::print("{:<14} {:<16} {:<8} {:<34} {:<24} {:>4} {:>11.1f} {:>4.0f}% {:>12.2f}  {:<8} {}{}\n", text("hardware"),
               text("model"), text("engine"), text("workload"), backend,
               rank ? (tied ? "≈" : "") + std::to_string(r["rank"].get<int>()) : "", r["step_us"].get<double>(),
               100 * r["band"].get<double>(), r["attention_us"].get<double>(), text("bound"), text("provenance"),
               rank && r["engine_default"].get<bool>() ? "  ← engine default" : "");
  }
  if (rank) {
    fmt::print("≈: tied within uncertainty with the point's fastest (docs/COST_MODEL.md \"Uncertainty\")\n");
  }
}

}  // namespace

int runListStudy(const ScenarioFlags& f, const GlobalOptions& global, bool rank) {
  if (!isList(f)) return -1;
  // The study's store is also where its calibrations come from; a new store has none yet.
  ScenarioFlags calibrations = f;
  if (!std::filesystem::exists(f.db)) calibrations.db.clear();
  Catalog catalog = calibrations.catalog(global);
  if (rank && f.engines.empty()) {
    // rank over every engine, as the single-scenario rank does
    ScenarioFlags all = f;
    for (const auto& e : catalog.engines()) all.engines += (all.engines.empty() ? "" : ",") + e.policy.engine;
    return runListStudy(all, global, rank);
  }
  SweepSpec spec = parseSweepSpec(specText(f, rank), "(command line)", catalog);
  spec.calibration_study = f.db;
  Store store(f.db.empty() ? ":memory:" : f.db);
  SweepOptions o;
  o.jobs = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  o.program_version = ATTNSIM_VERSION;
  const SweepSummary summary = runSweep(catalog, spec, store, o);
  const auto rows = studyRows(store, summary.sweep_id, rank, !f.backend.empty());
  if (global.json) {
    std::cout << rows.dump(2) << "\n";
  } else {
    printRows(rows, rank);
  }
  return 0;
}

}  // namespace attnsim::cli
