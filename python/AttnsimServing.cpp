// The Python module's serving and study calls: serve_sim, capacity_memory, capacity_search, sweep and
// report. Each returns the dict (or list) `attnsim --json` prints for the same command (reports/Answers).
#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "core/Files.hpp"
#include "core/Strings.hpp"
#include "python/ModuleSupport.hpp"
#include "reports/Answers.hpp"
#include "simulator/Capacity.hpp"
#include "simulator/GoodputTargets.hpp"
#include "study/Calibration.hpp"
#include "study/CapacityStore.hpp"
#include "study/Sweep.hpp"

using namespace attnsim;

namespace attnsim_py {

namespace {

// The keywords of serve_sim and capacity_search beside the scenario's, as the flags of the commands.
struct ServingKeywords {
  ArrivalSpec arrivals;
  bool bench_given = false, lengths_given = false, dataset_given = false;
  // serve_sim only: the requests of a trace file, the file the requests are written to, the goodput
  // targets (as vllm bench serve's --goodput) and the study file the run is stored in.
  std::string trace, write_trace, db;
  std::vector<std::string> goodput;
  ServeClient client;
  std::int64_t warmup_requests = 0;
  bool ignore_eos = false;
  double slo_ttft_ms = 2000, slo_tpot_ms = 50, target_rate = 0;
  py::kwargs scenario;  // the rest
};
using ServingSetter = std::function<void(ServingKeywords&, const py::handle&, const std::string&)>;

// A string of space-separated items or a list of strings (goodput: "ttft:500 tpot:50").
std::vector<std::string> wordsOf(const py::handle& v, const std::string& key) {
  std::vector<std::string> out;
  if (py::isinstance<py::str>(v)) {
    std::istringstream in(v.cast<std::string>());
    for (std::string word; in >> word;) out.push_back(word);
    return out;
  }
  return as<std::vector<std::string>>(v, key, "a string or a list of strings");
}

double positive(const py::handle& v, const std::string& key) {
  const auto x = as<double>(v, key, "a number");
  if (!(x > 0)) throw UsageError(fmt::format("{}: expected a number > 0, got {}", key, x));
  return x;
}

std::int64_t atLeast(const py::handle& v, const std::string& key, std::int64_t low) {
  const auto x = as<std::int64_t>(v, key, "an integer");
  if (x < low) throw UsageError(fmt::format("{}: expected an integer >= {}, got {}", key, low, x));
  return x;
}

const std::map<std::string, ServingSetter>& servingSetters() {
  using K = ServingKeywords;
  using H = const py::handle&;
  using S = const std::string&;
  static const std::map<std::string, ServingSetter> setters{
      {"rate", [](K& k, H v, S key) { k.arrivals.rate = positive(v, key); }},
      {"requests", [](K& k, H v, S key) { k.arrivals.requests = atLeast(v, key, 1); }},
      {"arrival", [](K& k, H v, S key) { k.arrivals.process = as<std::string>(v, key, "a string"); }},
      {"cv", [](K& k, H v, S key) { k.arrivals.cv = positive(v, key); }},
      {"prompt_len", [](K& k, H v, S key) { k.arrivals.prompt_tokens = atLeast(v, key, 1); }},
      {"output_len", [](K& k, H v, S key) { k.arrivals.output_tokens = atLeast(v, key, 1); }},
      {"lengths",
       [](K& k, H v, S key) {
         k.arrivals.lengths = as<std::string>(v, key, "a string");
         k.lengths_given = true;
       }},
      {"dataset_name",
       [](K& k, H v, S key) {
         const auto name = as<std::string>(v, key, "a string");
         if (name != "random" && name != "generated-shared-prefix" && name != "sonnet")
           throw UsageError(key + ": " + name + " not in {random, generated-shared-prefix, sonnet}");
         k.arrivals.lengths = name;
         k.dataset_given = true;
       }},
      {"gsp_num_groups", [](K& k, H v, S key) { k.arrivals.gsp_num_groups = atLeast(v, key, 1); }},
      {"gsp_prompts_per_group", [](K& k, H v, S key) { k.arrivals.gsp_prompts_per_group = atLeast(v, key, 1); }},
      {"gsp_system_prompt_len", [](K& k, H v, S key) { k.arrivals.gsp_system_prompt_len = atLeast(v, key, 1); }},
      {"gsp_question_len", [](K& k, H v, S key) { k.arrivals.gsp_question_len = atLeast(v, key, 1); }},
      {"gsp_output_len", [](K& k, H v, S key) { k.arrivals.gsp_output_len = atLeast(v, key, 1); }},
      {"gsp_range_ratio", [](K& k, H v, S key) { k.arrivals.gsp_range_ratio = as<double>(v, key, "a number"); }},
      {"gsp_ordered", [](K& k, H v, S key) { k.arrivals.gsp_ordered = as<bool>(v, key, "a bool"); }},
      {"sonnet_input_len", [](K& k, H v, S key) { k.arrivals.sonnet_input_len = atLeast(v, key, 1); }},
      {"sonnet_output_len", [](K& k, H v, S key) { k.arrivals.sonnet_output_len = atLeast(v, key, 1); }},
      {"sonnet_prefix_len", [](K& k, H v, S key) { k.arrivals.sonnet_prefix_len = atLeast(v, key, 0); }},
      {"trace", [](K& k, H v, S key) { k.trace = as<std::string>(v, key, "a string (a file)"); }},
      {"write_trace", [](K& k, H v, S key) { k.write_trace = as<std::string>(v, key, "a string (a file)"); }},
      {"goodput", [](K& k, H v, S key) { k.goodput = wordsOf(v, key); }},
      {"db", [](K& k, H v, S key) { k.db = as<std::string>(v, key, "a string (a file)"); }},
      {"random_range_ratio", [](K& k, H v, S key) { k.arrivals.range_ratio = as<double>(v, key, "a number"); }},
      {"random_prefix_len", [](K& k, H v, S key) { k.arrivals.prefix_len = atLeast(v, key, 0); }},
      {"backend_bench",
       [](K& k, H v, S key) {
         k.arrivals.bench = as<std::string>(v, key, "a string");
         k.bench_given = true;
       }},
      {"seed", [](K& k, H v, S key) { k.arrivals.seed = as<std::uint64_t>(v, key, "an integer >= 0"); }},
      {"max_concurrency", [](K& k, H v, S key) { k.client.max_concurrency = atLeast(v, key, 1); }},
      {"warmup_requests", [](K& k, H v, S key) { k.warmup_requests = atLeast(v, key, 0); }},
      {"ignore_eos", [](K& k, H v, S key) { k.ignore_eos = as<bool>(v, key, "a bool"); }},
      {"slo_ttft_ms", [](K& k, H v, S key) { k.slo_ttft_ms = positive(v, key); }},
      {"slo_tpot_ms", [](K& k, H v, S key) { k.slo_tpot_ms = positive(v, key); }},
      {"target_rate", [](K& k, H v, S key) { k.target_rate = positive(v, key); }},
  };
  return setters;
}

// Keywords of one call only (as the flags of its command): the rest pass to the scenario, which
// refuses what it does not know by name.
bool servingKeywordApplies(const std::string& key, bool search) {
  if (key == "target_rate") return search;
  if (key == "trace" || key == "write_trace" || key == "goodput") return !search;
  return true;  // db: serve-sim --db and capacity search --db
}

// Serving keywords read, the rest kept for the scenario; `search`: capacity_search's keywords.
ServingKeywords servingFrom(const py::kwargs& kwargs, bool search) {
  ServingKeywords k;
  const auto& setters = servingSetters();
  for (const auto& [name, value] : kwargs) {
    const auto key = as<std::string>(name, "keyword", "a string");
    const auto it = setters.find(key);
    if (it == setters.end() || !servingKeywordApplies(key, search)) {
      k.scenario[name] = value;
    } else {
      it->second(k, value, key);
    }
  }
  // As the flags: --dataset-name excludes --lengths, --goodput the --slo-* targets.
  if (k.lengths_given && k.dataset_given) throw UsageError("dataset_name excludes lengths");
  if (!k.goodput.empty() && (kwargs.contains("slo_ttft_ms") || kwargs.contains("slo_tpot_ms")))
    throw UsageError("goodput excludes slo_ttft_ms and slo_tpot_ms");
  if (search) k.arrivals.requests = kwargs.contains("requests") ? k.arrivals.requests : 1000;
  return k;
}

// A string or a list of them (hardware, engine), or an int or a list of ints (tp).
std::vector<py::object> listOf(const py::kwargs& kwargs, const char* key) {
  std::vector<py::object> out;
  if (!kwargs.contains(key)) return out;
  py::object v = kwargs[key];
  if (py::isinstance<py::str>(v)) {
    for (const auto& item : splitList(v.cast<std::string>())) out.emplace_back(py::str(item));
  } else if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    for (const auto& item : v) out.push_back(py::reinterpret_borrow<py::object>(item));
  } else {
    out.push_back(v);
  }
  return out;
}

py::object serveSim(const Catalog* catalog, const py::kwargs& kwargs) {
  const auto c = catalogOf(catalog, std::nullopt);
  ServingKeywords k = servingFrom(kwargs, false);
  const Scenario s = scenarioFrom(k.scenario);
  // The random dataset and the client follow the engine's own benchmark unless backend_bench names one.
  if (!k.bench_given) k.arrivals.bench = s.engine == "sglang" ? "sglang" : "vllm";
  const ServeSlo slo = k.goodput.empty()
                           ? ServeSlo{k.slo_ttft_ms / 1e3, k.slo_tpot_ms / 1e3, std::numeric_limits<double>::infinity()}
                           : goodputSlo(k.goodput, "goodput");
  const std::vector<ServeRequest> requests = k.trace.empty() ? generateRequests(k.arrivals) : readTrace(k.trace);
  const ServeBenchmark bench{requests,        slo, k.client, k.warmup_requests, k.ignore_eos, k.trace.empty(),
                             k.arrivals.bench};
  const ServeBenchmarkRun run = runServeBenchmark(*c, s, bench);
  if (!k.write_trace.empty()) writeFileAtomically(k.write_trace, requestsCsv(requests));
  if (!k.db.empty()) {
    storeServeSimRun(k.db, run, requests,
                     {s.backend.has_value(), s.cuda_graphs, k.trace, k.arrivals, k.client.max_concurrency, slo});
  }
  return toPython(serveBenchmarkJson(run));
}

py::object capacitySearch(const Catalog* catalog, const py::kwargs& kwargs) {
  const auto c = catalogOf(catalog, std::nullopt);
  ServingKeywords k = servingFrom(kwargs, true);
  CapacitySearchSpec spec;
  spec.arrivals = k.arrivals;
  spec.slo = {k.slo_ttft_ms / 1e3, k.slo_tpot_ms / 1e3};
  spec.target_rate = k.target_rate;
  auto tps = listOf(k.scenario, "tp");
  if (tps.empty()) tps.emplace_back(py::int_(1));
  for (const auto& hw : listOf(k.scenario, "hardware")) {
    for (const auto& engine : listOf(k.scenario, "engine")) {
      for (const auto& tp : tps) {
        py::kwargs one;
        for (const auto& [name, value] : k.scenario) one[name] = value;
        one["hardware"] = hw;
        one["engine"] = engine;
        one["tp"] = tp;
        spec.scenarios.push_back(scenarioFrom(one));
      }
    }
  }
  std::optional<Store> store;
  std::optional<CapacityStore> stored;
  if (!k.db.empty()) stored.emplace(store.emplace(k.db));
  nlohmann::json rows = nlohmann::json::array();
  searchCapacities(*c, spec, [&](const CapacitySearchRow& row) {
    if (stored && row.capacity) storeCapacitySearch(*stored, row, k.arrivals, spec.slo, k.target_rate);
    rows.push_back(capacitySearchJson(row, k.target_rate));
  });
  return toPython(rows);
}

py::object runSweepCall(const std::string& spec_name, const std::string& db, int jobs, const std::string& shard,
                        const Catalog* catalog) {
  Catalog c = catalog ? *catalog : defaultCatalog();
  const SweepSpec spec = loadSweepSpec(spec_name, c);
  if (!spec.calibration_study.empty()) applyStudyCalibrations(c, Store(spec.calibration_study, StoreAccess::ReadOnly));
  SweepOptions o;
  o.jobs = jobs > 0 ? jobs : static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  o.program_version = ATTNSIM_VERSION;
  o.shard = shard.empty() ? shardFromEnvironment() : parseShard(shard);  // as sweep --shard I/N
  SweepSummary summary;
  {
    Store store(db);
    summary = runSweep(c, spec, store, o);
  }
  return toPython(sweepSummaryJson(summary, spec, db, o.shard));
}

}  // namespace

void bindServing(py::module_& m) {
  py::class_<WhatIfOptions>(m, "WhatIf", "report whatif's choices, as its flags (compare, axis, baseline, ...)")
      .def(py::init([](const std::string& compare, bool engines, bool hardware, const std::string& axis,
                       const std::string& baseline, const std::string& engine, const std::string& hardware_filter,
                       const std::string& model_filter, std::optional<double> spec_accept_length) {
             return WhatIfOptions{splitList(compare), engines,      hardware, engine,
                                  hardware_filter,    model_filter, axis,     baseline,
                                  spec_accept_length};
           }),
           py::kw_only(), py::arg("compare") = "", py::arg("compare_engines") = false,
           py::arg("compare_hardware") = false, py::arg("axis") = "", py::arg("baseline") = "", py::arg("engine") = "",
           py::arg("hardware") = "", py::arg("model") = "", py::arg("spec_accept_length") = py::none());
  m.def(
      "serve_sim", [](const Catalog* catalog, const py::kwargs& kwargs) { return serveSim(catalog, kwargs); },
      py::kw_only(), py::arg("catalog") = nullptr,
      "a request-level serving simulation (as `attnsim --json serve-sim`): scenario keywords and rate, requests, "
      "arrival, cv, prompt_len, output_len, lengths or dataset_name (with gsp_*), trace, write_trace, seed, "
      "max_concurrency, warmup_requests, slo_ttft_ms and slo_tpot_ms or goodput, db, ...");
  m.def(
      "capacity_memory",
      [](const std::optional<Scenario>& scenario, const Catalog* catalog, const py::kwargs& kwargs) {
        const auto c = catalogOf(catalog, std::nullopt);
        return toPython(memorySplitJson(capacityOf(*c, scenarioOf(scenario, kwargs))));
      },
      py::arg("scenario") = py::none(), py::kw_only(), py::arg("catalog") = nullptr,
      "the engine's GPU memory split and KV capacity (as `attnsim --json capacity memory`)");
  m.def(
      "capacity_search",
      [](const Catalog* catalog, const py::kwargs& kwargs) { return capacitySearch(catalog, kwargs); }, py::kw_only(),
      py::arg("catalog") = nullptr,
      "the highest rate within the SLO for each hardware × engine × tp (lists), as `attnsim --json capacity search`");
  m.def("sweep", &runSweepCall, py::arg("spec"), py::kw_only(), py::arg("db"), py::arg("jobs") = 0,
        py::arg("shard") = "", py::arg("catalog") = nullptr,
        "run a sweep spec (or its shard I/N) into a store (as `attnsim --json sweep SPEC --db DB [--shard I/N]`)");
  m.def(
      "report",
      [](const std::string& what, const std::string& db, const std::string& out, const std::string& sweep,
         const std::string& study, const WhatIfOptions& whatif) {
        const ReportRequest r{what, db, out, sweep, study, whatif};
        const StudyReport report = storeReport(r, defaultCatalog());
        writeStudyReport(report, out);
        return toPython(report.json);
      },
      py::arg("what"), py::kw_only(), py::arg("db"), py::arg("out"), py::arg("sweep") = "", py::arg("study") = "",
      py::arg("whatif") = WhatIfOptions{},
      "a study report written to `out`; returns its JSON (as `attnsim --json report WHAT`)");
}

}  // namespace attnsim_py
