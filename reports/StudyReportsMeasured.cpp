#include "reports/StudyReportsMeasured.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/Strings.hpp"

namespace attnsim {

namespace study_report {

std::optional<Shape> shapeOf(const Catalog& catalog, const StudyPoint& p) {
  const auto& models = catalog.models();
  const auto it = std::find_if(models.begin(), models.end(), [&](const ModelSpec& m) { return m.id == p.model; });
  if (it == models.end() || it->attention_layers.size() != 1) return std::nullopt;
  const auto& l = it->attention_layers.front();
  const int tp = static_cast<int>(std::max<std::int64_t>(1, p.tp));
  if (l.num_heads % tp != 0) return std::nullopt;
  return Shape{l.num_heads / tp, l.isMla() ? 1 : std::max(1, l.num_kv_heads / tp), l.validatedHeadSize(), l.kind};
}

std::set<std::string> measuredNames(const Catalog& catalog, const StudyCandidate& cand, const std::string& kind,
                                    const std::string& phase) {
  std::set<std::string> names;
  const auto& engines = catalog.engines();
  const auto e =
      std::find_if(engines.begin(), engines.end(), [&](const Engine& x) { return x.policy.engine == cand.engine; });
  if (e == engines.end()) return names;
  auto add = [&](const std::string& kernel) {
    if (const KernelFamily* k = catalog.findKernel(kernel)) names.insert(k->measured_as.begin(), k->measured_as.end());
  };
  const bool decode = phase == "decode" || phase == "verify";
  for (const Backend* b : findBackends(*e, cand.backend)) {
    if (!kind.empty() && b->kind != kind) continue;
    const BackendVariant* v = cand.variant.empty() ? nullptr : b->variant(cand.variant);
    const BackendCaps& caps = v ? v->caps : b->caps;
    if (phase.empty() || !decode) add(caps.prefill_kernel);
    if (phase.empty() || decode) add(caps.decode_kernel);
  }
  return names;
}

const MeasurementRow* measuredAt(const StudyData& data, const StudyPoint& p, const Shape& s,
                                 const std::set<std::string>& names) {
  const std::string dtype = p.selected_kv_dtype.find("fp8") != std::string::npos ? "fp8_e4m3" : "bf16";
  // A row timed inside the point's own engine is preferred over the same kernel timed in another
  // engine (vLLM's FA3 call and SGLang's differ by page size and by the KV write around them).
  const MeasurementRow* other_engine = nullptr;
  for (const auto& m : data.measurements) {
    if (m.hardware == p.hardware && names.count(m.impl) && m.phase == p.phase && m.batch == p.batch &&
        m.q_len == p.q_len && m.kv_len == p.context && m.heads == s.heads && m.kv_heads == s.kv_heads &&
        m.head_dim == s.head_dim && m.dtype == dtype) {
      if (m.engine.empty() || m.engine == p.engine) return &m;
      if (!other_engine) other_engine = &m;
    }
  }
  return other_engine;
}

}  // namespace study_report

namespace {

using nlohmann::json;
using namespace study_report;

struct Match {
  std::size_t point = 0;
  std::string backend;
  bool is_default = false;
  double predicted_us = 0, measured_us = 0, p20_us = 0, p80_us = 0;
  std::string impl;
  bool kv_write = false;  // the measured call also wrote the new tokens' K/V, which the prediction leaves out
};

std::vector<Match> matches(const StudyData& data) {
  std::vector<Match> out;
  for (std::size_t i = 0; i < data.points.size(); ++i) {
    const StudyPoint& p = data.points[i];
    const auto shape = p.valid ? shapeOf(data.catalog, p) : std::nullopt;
    if (!shape) continue;
    const auto [begin, end] = data.candidatesOf(i);
    for (std::size_t c = begin; c < end; ++c) {
      const StudyCandidate& cand = data.candidates[c];
      if (!cand.predicted) continue;
      const auto* m = measuredAt(data, p, *shape, measuredNames(data.catalog, cand, shape->kind, p.phase));
      if (m)
        out.push_back({i, cand.backend, cand.engine_default, cand.attention_us, m->median_us, m->p20_us, m->p80_us,
                       m->impl, m->kv_write});
    }
  }
  return out;
}

struct Coverage {
  std::map<std::string, std::set<std::string>> measured, predicted_only;  // engine · hardware -> backends
};

Coverage coverage(const StudyData& data) {
  std::set<std::string> measured_hardware;
  for (const auto& m : data.measurements) measured_hardware.insert(m.hardware);
  Coverage out;
  for (std::size_t i = 0; i < data.points.size(); ++i) {
    const StudyPoint& p = data.points[i];
    if (!measured_hardware.count(p.hardware)) continue;
    const auto [begin, end] = data.candidatesOf(i);
    for (std::size_t c = begin; c < end; ++c) {
      const auto& cand = data.candidates[c];
      if (!cand.valid) continue;  // a refused backend's variant is unknown, and it runs nothing here
      const auto names = measuredNames(data.catalog, cand, "", "");
      const bool any = std::any_of(data.measurements.begin(), data.measurements.end(), [&](const MeasurementRow& m) {
        return m.hardware == p.hardware && names.count(m.impl);
      });
      (any ? out.measured : out.predicted_only)[p.engine + " · " + p.hardware].insert(cand.backend);
    }
  }
  for (auto& [key, names] : out.predicted_only) {
    for (const auto& n : out.measured[key]) names.erase(n);
  }
  return out;
}

ReportTable coverageTable(const Coverage& cov) {
  ReportTable t{{"engine · hardware", "measured backends", "predicted only"}, {}};
  std::set<std::string> keys;
  for (const auto& [k, v] : cov.measured) keys.insert(k);
  for (const auto& [k, v] : cov.predicted_only) keys.insert(k);
  for (const auto& k : keys) {
    auto list = [&](const auto& map) {
      const auto it = map.find(k);
      return it == map.end() || it->second.empty()
                 ? std::string("-")
                 : join(std::vector<std::string>(it->second.begin(), it->second.end()), ", ");
    };
    t.rows.push_back({k, list(cov.measured), list(cov.predicted_only)});
  }
  return t;
}

// A row converted from a database that keeps only a mean has no spread to show.
std::string measuredWithSpread(const Match& m) {
  if (m.p20_us <= 0 && m.p80_us <= 0) return fmt::format("{} (no spread kept)", micros(m.measured_us));
  return fmt::format("{} ({}-{})", micros(m.measured_us), micros(m.p20_us), micros(m.p80_us));
}

ReportTable matchTable(const StudyData& data, const std::vector<Match>& ms) {
  ReportTable t{{"engine", "hardware", "model", "workload", "backend", "engine's choice", "predicted µs",
                 "measured µs (p20-p80)", "error", "measured as"},
                {}};
  for (const auto& m : ms) {
    const StudyPoint& p = data.points[m.point];
    t.rows.push_back({p.engine, p.hardware, p.model + " " + optionsLabel(p), p.workload, m.backend,
                      m.is_default ? "yes" : "no", micros(m.predicted_us), measuredWithSpread(m),
                      fmt::format("{:+.0f}%", 100 * (m.predicted_us / m.measured_us - 1)),
                      m.kv_write ? fmt::format("{} (incl. KV write)", m.impl) : m.impl});
  }
  return t;
}

// Every predicted-versus-measured pair, for scripts (the Markdown table shows the same rows).
json measuredPairsJson(const StudyData& data, const std::vector<Match>& ms) {
  json pairs = json::array();
  for (const auto& m : ms) {
    const StudyPoint& p = data.points[m.point];
    pairs.push_back({{"engine", p.engine},
                     {"hardware", p.hardware},
                     {"model", p.model},
                     {"workload", p.workload},
                     {"backend", m.backend},
                     {"engine_choice", m.is_default},
                     {"predicted_us", m.predicted_us},
                     {"measured_us", m.measured_us},
                     {"measured_as", m.impl},
                     {"measured_with_kv_write", m.kv_write}});
  }
  return pairs;
}

}  // namespace

json measuredSection(HtmlDocument& doc, const StudyData& data) {
  doc.heading("Against measurements");
  if (data.measurements.empty()) {
    doc.paragraph("The store holds no attention measurements: every figure above is predicted. Import some with:");
    doc.command(
        "attnsim measurements import measurements/data/h100/measurements.csv "
        "measurements/data/h100/engine_kernels.csv --db " +
        data.path);
    return {{"measurements", 0}};
  }
  const Coverage cov = coverage(data);
  doc.paragraph(
      "Which of the engines' backends the store holds measurements of on the swept hardware (a backend "
      "counts as measured when a kernel family it runs has rows under one of its measured_as names):");
  doc.table(coverageTable(cov));
  const auto ms = matches(data);
  std::map<std::size_t, std::vector<const Match*>> by_point;
  for (const auto& m : ms) by_point[m.point].push_back(&m);
  std::int64_t default_measured = 0, compared = 0, agree = 0;
  double ape = 0;
  for (const auto& [point, list] : by_point) {
    default_measured += std::any_of(list.begin(), list.end(), [](const Match* m) { return m->is_default; });
    if (list.size() < 2) continue;
    ++compared;
    auto by = [](auto member) { return [member](const Match* a, const Match* b) { return a->*member < b->*member; }; };
    agree += *std::min_element(list.begin(), list.end(), by(&Match::measured_us)) ==
             *std::min_element(list.begin(), list.end(), by(&Match::predicted_us));
  }
  for (const auto& m : ms) ape += std::abs(m.predicted_us / m.measured_us - 1);
  doc.paragraph(fmt::format(
      "At {} of the sweep's points a backend's attention call was measured at exactly the point's shape (batch, "
      "query and KV length, heads per GPU, head size, KV dtype); {} predicted-versus-measured pairs, mean absolute "
      "error {}. The engine's own choice was measured at {} of them. {} points have two or more of an engine's "
      "backends measured; there the predicted fastest of the measured ones is the measured fastest at {}. "
      "Elsewhere the regret above is predicted only. A row timed in the point's own engine is used where there is "
      "one; rows marked 'incl. KV write' also timed writing the new tokens' K/V into the cache, which the predicted "
      "attention call leaves out (the step has it as its own node).",
      by_point.size(), ms.size(), ms.empty() ? "-" : percent(ape / static_cast<double>(ms.size())), default_measured,
      compared, agree));
  if (!ms.empty()) doc.table(matchTable(data, ms));
  json out = {
      {"measurements", data.measurements.size()},    {"points_measured", by_point.size()},   {"pairs", ms.size()},
      {"default_measured_points", default_measured}, {"points_with_two_measured", compared}, {"fastest_agrees", agree},
      {"measured_backends", cov.measured},           {"predicted_only", cov.predicted_only}};
  out["mean_abs_error"] = ms.empty() ? json(nullptr) : json(ape / static_cast<double>(ms.size()));
  out["pairs_measured"] = measuredPairsJson(data, ms);
  return out;
}

}  // namespace attnsim
