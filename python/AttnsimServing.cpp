// The Python module's serving and study calls: serve_sim, capacity_memory, capacity_search, sweep and
// report. Each returns the dict (or list) `attnsim --json` prints for the same command (reports/Answers).
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <thread>

#include "core/Strings.hpp"
#include "python/ModuleSupport.hpp"
#include "reports/Answers.hpp"
#include "simulator/Capacity.hpp"
#include "study/Calibration.hpp"

using namespace attnsim;

namespace attnsim_py {

namespace {

// The keywords of serve_sim and capacity_search beside the scenario's, as the flags of the commands.
struct ServingKeywords {
  ArrivalSpec arrivals;
  bool bench_given = false;
  ServeClient client;
  std::int64_t warmup_requests = 0;
  bool ignore_eos = false;
  double slo_ttft_ms = 2000, slo_tpot_ms = 50, target_rate = 0;
  py::kwargs scenario;  // the rest
};
using ServingSetter = std::function<void(ServingKeywords&, const py::handle&, const std::string&)>;

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
      {"lengths", [](K& k, H v, S key) { k.arrivals.lengths = as<std::string>(v, key, "a string"); }},
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

// Serving keywords read, the rest kept for the scenario; `search`: target_rate is one of them.
ServingKeywords servingFrom(const py::kwargs& kwargs, bool search) {
  ServingKeywords k;
  const auto& setters = servingSetters();
  for (const auto& [name, value] : kwargs) {
    const auto key = as<std::string>(name, "keyword", "a string");
    const auto it = setters.find(key);
    if (it == setters.end() || (key == "target_rate" && !search)) {
      k.scenario[name] = value;
    } else {
      it->second(k, value, key);
    }
  }
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
  // The random dataset follows the engine's own benchmark unless backend_bench names one.
  if (!k.bench_given) k.arrivals.bench = s.engine == "sglang" ? "sglang" : "vllm";
  const ServeBenchmark bench{generateRequests(k.arrivals),
                             {k.slo_ttft_ms / 1e3, k.slo_tpot_ms / 1e3, std::numeric_limits<double>::infinity()},
                             k.client,
                             k.warmup_requests,
                             k.ignore_eos,
                             true};
  return toPython(serveBenchmarkJson(runServeBenchmark(*c, s, bench)));
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
  nlohmann::json rows = nlohmann::json::array();
  searchCapacities(*c, spec,
                   [&](const CapacitySearchRow& row) { rows.push_back(capacitySearchJson(row, k.target_rate)); });
  return toPython(rows);
}

py::object runSweepCall(const std::string& spec_name, const std::string& db, int jobs, const Catalog* catalog) {
  Catalog c = catalog ? *catalog : defaultCatalog();
  const SweepSpec spec = loadSweepSpec(spec_name, c);
  if (!spec.calibration_study.empty()) applyStudyCalibrations(c, Store(spec.calibration_study, StoreAccess::ReadOnly));
  SweepOptions o;
  o.jobs = jobs > 0 ? jobs : static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  o.program_version = ATTNSIM_VERSION;
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
      "arrival, cv, prompt_len, output_len, lengths, seed, max_concurrency, warmup_requests, slo_ttft_ms, ...");
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
        py::arg("catalog") = nullptr, "run a sweep spec into a store (as `attnsim --json sweep SPEC --db DB`)");
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
