// `import attnsim`: the library's catalog, select, predict, rank and check for notebooks. Every
// answer is the same plain data `attnsim --json` prints (dicts and lists); every error is the
// CLI's, as a Python exception that carries its location.
#include <fmt/format.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "catalog/Catalog.hpp"
#include "core/Error.hpp"
#include "core/Strings.hpp"
#include "python/ModuleSupport.hpp"
#include "reports/CatalogJson.hpp"
#include "reports/Json.hpp"
#include "simulator/CheckRun.hpp"
#include "simulator/Evaluation.hpp"
#include "study/Calibration.hpp"
#include "study/Store.hpp"

using namespace attnsim;

namespace {

// Exception types, created once at import and owned by the module.
PyObject* g_input_error = nullptr;
PyObject* g_catalog_error = nullptr;
PyObject* g_usage_error = nullptr;
PyObject* g_engine_refusal = nullptr;

void raise(PyObject* type, const char* message, const SourceLocation* where = nullptr, const std::string& key = "") {
  py::object exc = py::reinterpret_borrow<py::object>(type)(message);
  exc.attr("file") = where ? py::cast(where->file) : py::none();
  exc.attr("line") = where ? py::cast(where->line) : py::none();
  exc.attr("column") = where ? py::cast(where->column) : py::none();
  exc.attr("key") = key.empty() ? py::none() : py::cast(key);
  PyErr_SetObject(type, exc.ptr());
}

// NOLINTNEXTLINE(performance-unnecessary-value-param): pybind11 takes a void(*)(std::exception_ptr) translator
void translateErrors(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const CatalogError& e) {
    raise(g_catalog_error, e.what(), &e.where(), e.keyPath());
  } catch (const UsageError& e) {
    raise(g_usage_error, e.what());
  } catch (const InputError& e) {
    raise(g_input_error, e.what());
  } catch (const EngineRefusal& e) {
    raise(g_engine_refusal, e.what());
  }
}

}  // namespace

namespace attnsim_py {

py::object toPython(const nlohmann::json& j) { return py::module_::import("json").attr("loads")(j.dump()); }

const Catalog& defaultCatalog() {
  static const std::shared_ptr<const Catalog> catalog = Catalog::embedded();
  return *catalog;
}

namespace {

ModelGeometry geometryFrom(const py::dict& d) {
  ModelGeometry g;
  const std::vector<std::string> keys{"num_heads",   "num_kv_heads",      "head_dim",   "head_dim_v",    "num_layers",
                                      "hidden_size", "intermediate_size", "vocab_size", "sliding_window"};
  for (const auto& [k, v] : d) {
    const auto key = as<std::string>(k, "geometry", "string keys");
    const int n = as<int>(v, "geometry." + key, "an integer");
    if (key == "num_heads")
      g.num_heads = n;
    else if (key == "head_dim")
      g.head_dim = n;
    else if (key == "num_kv_heads")
      g.num_kv_heads = n;
    else if (key == "head_dim_v")
      g.head_dim_v = n;
    else if (key == "num_layers")
      g.num_layers = n;
    else if (key == "hidden_size")
      g.hidden_size = n;
    else if (key == "intermediate_size")
      g.intermediate_size = n;
    else if (key == "vocab_size")
      g.vocab_size = n;
    else if (key == "sliding_window")
      g.sliding_window = n;
    else
      throw UsageError("geometry: no key '" + key + "'" + didYouMean(key, keys) + "; keys: " + join(keys, ", "));
  }
  return g;
}

std::optional<std::string> optString(const py::handle& v, const std::string& key) {
  if (v.is_none()) return std::nullopt;
  return as<std::string>(v, key, "a string");
}

std::optional<std::int64_t> optInt(const py::handle& v, const std::string& key) {
  if (v.is_none()) return std::nullopt;
  return as<std::int64_t>(v, key, "an integer");
}

// A scenario as keywords give it; the workload is assembled once every keyword is read.
struct ScenarioKeywords {
  Scenario s;
  std::string phase = "decode", mix;
  std::int64_t batch = 1, context = 4096;
  std::optional<std::int64_t> q_len;  // as --q-len: the phase's own when not given
};
using Setter = void (*)(ScenarioKeywords&, const py::handle&, const std::string&);

std::string str(const py::handle& v, const std::string& key) { return as<std::string>(v, key, "a string"); }
std::int64_t integer(const py::handle& v, const std::string& key) { return as<std::int64_t>(v, key, "an integer"); }

// Keywords as the command line's flags (underscores for dashes), with the same defaults.
const std::map<std::string, Setter>& scenarioSetters() {
  using K = ScenarioKeywords;
  using H = const py::handle&;
  using S = const std::string&;
  static const std::map<std::string, Setter> setters{
      {"hardware", [](K& k, H v, S key) { k.s.hardware = str(v, key); }},
      {"model", [](K& k, H v, S key) { k.s.model = str(v, key); }},
      {"engine", [](K& k, H v, S key) { k.s.engine = str(v, key); }},
      {"backend", [](K& k, H v, S key) { k.s.backend = optString(v, key); }},
      {"prefill_backend", [](K& k, H v, S key) { k.s.prefill_backend = optString(v, key); }},
      {"decode_backend", [](K& k, H v, S key) { k.s.decode_backend = optString(v, key); }},
      {"kernel", [](K& k, H v, S key) { k.s.kernel = str(v, key); }},
      {"phase", [](K& k, H v, S key) { k.phase = str(v, key); }},
      {"batch", [](K& k, H v, S key) { k.batch = integer(v, key); }},
      {"q_len", [](K& k, H v, S key) { k.q_len = optInt(v, key); }},
      {"context", [](K& k, H v, S key) { k.context = integer(v, key); }},
      {"mix", [](K& k, H v, S key) { k.mix = str(v, key); }},
      {"kv_dtype", [](K& k, H v, S key) { k.s.kv_dtype = optString(v, key); }},
      {"page_size", [](K& k, H v, S key) { k.s.page_size = optInt(v, key); }},
      {"tp", [](K& k, H v, S key) { k.s.tp = integer(v, key); }},
      {"spec_algorithm", [](K& k, H v, S key) { k.s.spec.algorithm = optString(v, key); }},
      {"spec_topk", [](K& k, H v, S key) { k.s.spec.topk = optInt(v, key); }},
      {"spec_draft_tokens", [](K& k, H v, S key) { k.s.spec.draft_tokens = optInt(v, key); }},
      {"spec_attention_mode", [](K& k, H v, S key) { k.s.spec.attention_mode = optString(v, key); }},
      {"spec_num_steps", [](K& k, H v, S key) { k.s.spec.num_steps = optInt(v, key); }},
      {"spec_accept_length", [](K& k, H v, S key) { k.s.spec.accept_length = as<double>(v, key, "a number"); }},
      {"prefix", [](K& k, H v, S key) { k.s.has_prefix = as<bool>(v, key, "a bool"); }},
      {"cuda_version", [](K& k, H v, S key) { k.s.cuda_version = as<double>(v, key, "a number"); }},
      {"cuda_graphs", [](K& k, H v, S key) { k.s.cuda_graphs = as<bool>(v, key, "a bool"); }},
      {"allow_context_beyond_max_position",
       [](K& k, H v, S key) { k.s.allow_context_beyond_max_position = as<bool>(v, key, "a bool"); }},
      {"options",
       [](K& k, H v, S key) {
         k.s.engine_options = as<std::map<std::string, std::string>>(v, key, "a dict of strings");
       }},
      {"geometry", [](K& k, H v, S key) { k.s.geometry = geometryFrom(as<py::dict>(v, key, "a dict")); }},
      {"weight_dtype", [](K& k, H v, S key) { k.s.weight_dtype = optString(v, key); }},
  };
  return setters;
}

}  // namespace

Scenario scenarioFrom(const py::kwargs& kwargs) {
  ScenarioKeywords k;
  const auto& setters = scenarioSetters();
  for (const auto& [name, value] : kwargs) {
    const auto key = as<std::string>(name, "keyword", "a string");
    const auto it = setters.find(key);
    if (it == setters.end()) {
      std::vector<std::string> keys;
      keys.reserve(setters.size());
      for (const auto& [known, setter] : setters) keys.push_back(known);
      throw UsageError("no scenario keyword '" + key + "'" + didYouMean(key, keys) + "; keywords: " + join(keys, ", "));
    }
    it->second(k, value, key);
  }
  if (k.batch < 1 || k.q_len.value_or(1) < 1 || k.context < 1) {
    throw UsageError("batch, q_len and context must be at least 1");
  }
  if (k.s.tp < 1) throw UsageError("tp must be at least 1");
  k.s.workload = k.mix.empty()
                     ? Workload::forPhase(parsePhase(k.phase), k.batch, k.q_len, k.context, k.s.spec.topk.value_or(1))
                     : parseMix(k.mix);
  qualifyBackends(k.s);
  return k.s;
}

// A call's scenario: the Scenario given, or one made of the keywords (not both).
Scenario scenarioOf(const std::optional<Scenario>& given, const py::kwargs& kwargs) {
  if (!given) return scenarioFrom(kwargs);
  if (!kwargs.empty()) throw UsageError("give a Scenario or scenario keywords, not both");
  return *given;
}

// The catalog a call uses: the one given or the embedded default, with a study's calibrations.
std::shared_ptr<const Catalog> catalogOf(const Catalog* given, const std::optional<std::string>& db) {
  const Catalog& base = given ? *given : defaultCatalog();
  if (!db) return {&base, [](const Catalog*) {}};
  auto c = std::make_shared<Catalog>(base);
  applyStudyCalibrations(*c, Store(*db));
  return c;
}

}  // namespace attnsim_py

namespace {

using namespace attnsim_py;

std::vector<std::string> engineList(const py::object& engines) {
  if (engines.is_none()) return {};
  if (py::isinstance<py::str>(engines)) return splitList(engines.cast<std::string>());
  return as<std::vector<std::string>>(engines, "engines", "a string or a list of strings");
}

std::string scenarioRepr(const Scenario& s) {
  std::string what = !s.kernel.empty() ? "kernel=" + s.kernel
                                       : "engine=" + (s.engine.empty() ? std::string("*") : s.engine) +
                                             (s.backend ? ", backend=" + *s.backend : "");
  return "Scenario(hardware=" + s.hardware + ", model=" + (s.model.empty() ? "custom" : s.model) + ", " + what +
         ", workload=" + describe(s.workload) + ")";
}

void bindErrors(py::module_& m) {
  g_input_error = PyErr_NewException("attnsim.InputError", PyExc_ValueError, nullptr);
  g_catalog_error = PyErr_NewException("attnsim.CatalogError", g_input_error, nullptr);
  g_usage_error = PyErr_NewException("attnsim.UsageError", g_input_error, nullptr);
  g_engine_refusal = PyErr_NewException("attnsim.EngineRefusal", PyExc_RuntimeError, nullptr);
  m.attr("InputError") = py::handle(g_input_error);
  m.attr("CatalogError") = py::handle(g_catalog_error);
  m.attr("UsageError") = py::handle(g_usage_error);
  m.attr("EngineRefusal") = py::handle(g_engine_refusal);
  py::register_exception_translator(translateErrors);
}

void bindTypes(py::module_& m) {
  py::class_<Catalog, std::shared_ptr<Catalog>>(m, "Catalog", "the embedded catalog, optionally overlaid by a folder")
      .def(py::init([](const std::optional<std::string>& overlay) {
             CatalogSource source = CatalogSource::embedded();
             if (overlay) source.overlayDirectory(*overlay);
             return std::make_shared<Catalog>(Catalog::load(source));
           }),
           py::arg("overlay") = py::none())
      .def(
          "list",
          [](const Catalog& c, const std::string& what, const std::string& engine) {
            return toPython(catalogListJson(c, what, engine));
          },
          py::arg("what"), py::arg("engine") = "",
          "entries of one kind: hardware, models, backends, kernels, engines or variables")
      .def_property_readonly("hash", &Catalog::contentHash);

  py::class_<Scenario>(m, "Scenario", "one scenario; keywords as the CLI's flags (batch, context, kv_dtype, ...)")
      .def(py::init([](const py::kwargs& kwargs) { return scenarioFrom(kwargs); }))
      .def_readonly("hardware", &Scenario::hardware)
      .def_readonly("model", &Scenario::model)
      .def_readonly("engine", &Scenario::engine)
      .def_readonly("backend", &Scenario::backend)
      .def_readonly("kernel", &Scenario::kernel)
      .def_property_readonly("phase", [](const Scenario& s) { return std::string(phaseName(s.workload.phase)); })
      .def_property_readonly("workload", [](const Scenario& s) { return describe(s.workload); })
      .def("__repr__", &scenarioRepr);
}

void bindCalls(py::module_& m) {
  m.def(
      "list",
      [](const std::string& what, const std::string& engine, const Catalog* catalog) {
        return toPython(catalogListJson(catalog ? *catalog : defaultCatalog(), what, engine));
      },
      py::arg("what"), py::arg("engine") = "", py::arg("catalog") = nullptr, "the default catalog's entries");
  m.def(
      "select",
      [](const std::optional<Scenario>& scenario, const Catalog* catalog, const py::kwargs& kwargs) {
        const auto c = catalogOf(catalog, std::nullopt);
        return toPython(selectionJson(selectBackends(*c, scenarioOf(scenario, kwargs)), *c));
      },
      py::arg("scenario") = py::none(), py::kw_only(), py::arg("catalog") = nullptr,
      "the engine's validation and auto-selection, with reasons (as `attnsim --json select`)");
  m.def(
      "predict",
      [](const std::optional<Scenario>& scenario, const Catalog* catalog, const std::optional<std::string>& db,
         const py::kwargs& kwargs) {
        const auto c = catalogOf(catalog, db);
        return toPython(predictionJson(predictScenario(*c, scenarioOf(scenario, kwargs)), *c));
      },
      py::arg("scenario") = py::none(), py::kw_only(), py::arg("catalog") = nullptr, py::arg("db") = py::none(),
      "one backend's attention call and forward step (as `attnsim --json predict`)");
  m.def(
      "rank",
      [](const std::optional<Scenario>& scenario, const py::object& engines, const Catalog* catalog,
         const std::optional<std::string>& db, const py::kwargs& kwargs) {
        const auto c = catalogOf(catalog, db);
        return toPython(rankingJson(rankBackends(*c, scenarioOf(scenario, kwargs), engineList(engines)), *c));
      },
      py::arg("scenario") = py::none(), py::kw_only(), py::arg("engines") = py::none(), py::arg("catalog") = nullptr,
      py::arg("db") = py::none(), "every valid backend ordered by step time (as `attnsim --json rank`)");
  m.def(
      "check",
      [](const std::optional<Scenario>& scenario, double flop_budget, const Catalog* catalog,
         const py::kwargs& kwargs) {
        const auto c = catalogOf(catalog, std::nullopt);
        return toPython(checkJson(checkScenario(*c, scenarioOf(scenario, kwargs), flop_budget)));
      },
      py::arg("scenario") = py::none(), py::kw_only(), py::arg("flop_budget") = 4e8, py::arg("catalog") = nullptr,
      "a backend's algorithm on real numbers against the golden attention (as `attnsim --json check`)");
}

}  // namespace

PYBIND11_MODULE(attnsim, m) {
  m.doc() = "attnsim: which attention backend serving engines pick, why, and how fast it runs";
  m.attr("__version__") = ATTNSIM_VERSION;
  bindErrors(m);
  bindTypes(m);
  bindCalls(m);
  bindServing(m);
}
