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
#include "reports/Answers.hpp"
#include "study/Store.hpp"
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

}  // namespace

int runListStudy(const ScenarioFlags& f, const GlobalOptions& global, bool rank) {
  if (!isList(f)) return -1;
  // The study's store is also where its calibrations come from; a new store has none yet.
  ScenarioFlags calibrations = f;
  if (!std::filesystem::exists(f.db)) calibrations.db.clear();
  const auto shared_catalog = calibrations.catalog(global);
  const Catalog& catalog = *shared_catalog;
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
  const auto rows = sweepAnswerJson(store, summary.sweep_id, rank, !f.backend.empty());
  if (global.json) {
    std::cout << rows.dump(2) << "\n";
  } else {
    fmt::print("{}", sweepAnswerText(rows, rank));
  }
  return 0;
}

}  // namespace attnsim::cli
