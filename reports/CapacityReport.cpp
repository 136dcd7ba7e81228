// attnsim report capacity: the serving results of a study store as a document (docs/REPORTS.md).
#include "reports/CapacityReport.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "reports/SvgPlots.hpp"

namespace attnsim {

namespace {

using nlohmann::json;

constexpr std::array<std::int64_t, 5> kContexts = {1024, 4096, 16384, 32768, 131072};

std::string configLabel(const CapacityConfigRow& r) {
  return fmt::format("{}:{}{}", r.engine, r.backend.empty() ? "-" : r.backend, r.forced_backend ? "" : " (own)");
}

std::string setupLabel(const CapacityConfigRow& r) { return fmt::format("{} · TP {}", r.hardware, r.tp); }

// A configuration a rate search or study tried (a rate, or why none): not a serve-sim run's, which has
// neither and is shown with the serve-sim runs.
bool searched(const CapacityConfigRow& r) { return r.max_rate.has_value() || !r.error.empty(); }

// Why a searched configuration has no rate (a store from before the reason was kept has none).
std::string unmetNote(const CapacityConfigRow& r) {
  return r.error.empty() ? "no rate meets the SLO, not even the lowest searched" : r.error;
}

std::string gib(double mib) { return fmt::format("{:.1f}", mib / 1024); }

struct Index {
  std::map<std::int64_t, std::vector<const StoredRun*>> runs;  // config id -> runs by rate
  // config id -> the highest rate within the SLO with every step at its band's slow and fast end (the
  // search's search-slow and search-fast probes; absent for a store written before they were kept)
  std::map<std::int64_t, std::pair<double, double>> band;
  std::vector<std::string> models, hardware;  // in first-seen order
};

Index indexOf(const CapacityData& d) {
  Index x;
  for (const auto& r : d.runs) {
    x.runs[r.config].push_back(&r);
    if (r.row.kind != "search-slow" && r.row.kind != "search-fast") continue;
    auto& [slow, fast] = x.band[r.config];
    double& end = r.row.kind == "search-slow" ? slow : fast;
    if (r.row.meets_slo) end = std::max(end, r.row.rate);
  }
  for (auto& [id, runs] : x.runs) {
    std::stable_sort(runs.begin(), runs.end(), [](const auto* a, const auto* b) { return a->row.rate < b->row.rate; });
  }
  for (const auto& c : d.configs) {
    if (std::find(x.models.begin(), x.models.end(), c.row.model) == x.models.end()) x.models.push_back(c.row.model);
    if (std::find(x.hardware.begin(), x.hardware.end(), c.row.hardware) == x.hardware.end()) {
      x.hardware.push_back(c.row.hardware);
    }
  }
  return x;
}

ServeSlo sloOf(const CapacityData& d) {
  if (d.study) return {d.study->slo_ttft_ms / 1e3, d.study->slo_tpot_ms / 1e3};
  return d.runs.empty() ? ServeSlo{} : d.runs.front().row.slo;
}

void provenance(HtmlDocument& doc, const CapacityData& d, const std::string& command) {
  const ServeSlo slo = sloOf(d);
  if (d.study) {
    const StoredStudy& s = *d.study;
    doc.paragraph(fmt::format(
        "Study: capacity study '{}' (id {}, spec hash {}) in {}, {} configurations. Catalog hash {}. Program version "
        "{} (the study's), report by attnsim {}. Traffic: {}. SLO: p99 TTFT ≤ {:g} ms and p99 TPOT ≤ {:g} ms, "
        "nothing rejected.{}",
        s.name, s.id, s.spec_hash, d.path, d.configs.size(), s.catalog_hash, s.program_version, ATTNSIM_VERSION,
        s.arrivals, s.slo_ttft_ms, s.slo_tpot_ms,
        s.target_rate > 0 ? fmt::format(" Target rate: {:g} requests/s.", s.target_rate) : ""));
  } else {
    doc.paragraph(fmt::format(
        "Serving runs no capacity study owns (serve-sim --db, capacity search --db) in {}: {} configurations. Report "
        "by attnsim {}. SLO of the first run: p99 TTFT ≤ {:g} ms, p99 TPOT ≤ {:g} ms.",
        d.path, d.configs.size(), ATTNSIM_VERSION, slo.ttft_s * 1e3, slo.tpot_s * 1e3));
  }
  doc.paragraph(
      "Every latency below is simulated: requests through the engine's scheduler (serve-sim), each step timed by the "
      "step model (uncalibrated default where the catalog has no fit). Its uncertainty band is carried through: "
      "'band' is the highest rate within the SLO when every step takes the slow end of its band, t × (1 + band), "
      "and the fast end, t / (1 + band), searched on the same arrivals (docs/COST_MODEL.md 'Uncertainty').");
  doc.paragraph("Regenerate with:");
  doc.command(command);
}

// Per model, the highest rate of each configuration: rows engine:backend, columns hardware · TP.
void rateSection(HtmlDocument& doc, const CapacityData& d, const Index& x) {
  doc.heading("Highest request rate within the SLO");
  doc.paragraph(
      "Requests per second one replica (TP GPUs) serves with p99 TTFT and p99 TPOT within the SLO, found by doubling "
      "then bisecting to 1% on the same arrivals. '(own)' marks the engine's own backend choice; a grey cell is a "
      "configuration the engine refuses or that leaves no KV cache, or 'none' where not even the lowest rate "
      "searched meets the SLO (its reason in the tooltip and the table; such a configuration is never picked).");
  ReportTable table{{"model", "hardware", "TP", "engine:backend", "max req/s", "band req/s", "req/s per GPU", "note"},
                    {}};
  for (const auto& model : x.models) {
    HeatMap map{fmt::format("{}: highest req/s within the SLO", model), "hardware · TP", "engine:backend", {}, {}, {}};
    double best = 0;
    for (const auto& c : d.configs) {
      if (c.row.model != model || !searched(c.row)) continue;
      if (c.row.max_rate) best = std::max(best, *c.row.max_rate);
      const std::string col = setupLabel(c.row), row = configLabel(c.row);
      if (std::find(map.columns.begin(), map.columns.end(), col) == map.columns.end()) map.columns.push_back(col);
      if (std::find(map.rows.begin(), map.rows.end(), row) == map.rows.end()) map.rows.push_back(row);
    }
    map.cells.assign(map.rows.size(), std::vector<HeatCell>(map.columns.size()));
    for (const auto& c : d.configs) {
      if (c.row.model != model || !searched(c.row)) continue;
      const auto ri = std::find(map.rows.begin(), map.rows.end(), configLabel(c.row)) - map.rows.begin();
      const auto ci = std::find(map.columns.begin(), map.columns.end(), setupLabel(c.row)) - map.columns.begin();
      HeatCell& cell = map.cells[static_cast<std::size_t>(ri)][static_cast<std::size_t>(ci)];
      // No rate within the SLO: said as such (why in the note), grey like a refusal, never ranked.
      const bool rated = c.row.max_rate && !c.row.sloUnmet();
      const std::string note = c.row.sloUnmet() ? unmetNote(c.row) : c.row.error;
      const std::string rate = rated ? fmt::format("{:.2f}", *c.row.max_rate) : c.row.sloUnmet() ? "none" : "-";
      cell.tooltip = fmt::format("{} on {}: {}", configLabel(c.row), setupLabel(c.row), rated ? rate + " req/s" : note);
      if (c.row.sloUnmet()) cell.text = "none";
      if (rated) {
        cell.text = fmt::format("{:.1f}", *c.row.max_rate);
        cell.color = fadedColor("#2e7d32", 0.15 + 0.85 * (best > 0 ? *c.row.max_rate / best : 0));
      }
      const auto band = x.band.find(c.id);
      table.rows.push_back(
          {model, c.row.hardware, std::to_string(c.row.tp), configLabel(c.row), rate,
           rated && band != x.band.end() ? fmt::format("{:.2f}-{:.2f}", band->second.first, band->second.second) : "-",
           rated ? fmt::format("{:.2f}", *c.row.max_rate / c.row.tp) : "-", note});
    }
    doc.figure({fmt::format("capacity-rate-{}.svg", x.models.size() > 1 ? model : "all"),
                heatMapSvg(map, {{"#2e7d32", "highest rate of the model"},
                                 {"#eeeeee", "refused, no KV room, or 'none': no rate meets the SLO"}}),
                fmt::format("{}: the highest request rate within the SLO per configuration", model)});
  }
  doc.table(table);
}

void gpusSection(HtmlDocument& doc, const CapacityData& d, const Index& x) {
  const double target = d.study ? d.study->target_rate : 0;
  if (target <= 0) return;
  doc.heading(fmt::format("GPUs for {:g} requests/s", target));
  doc.paragraph(
      "Replicas of the configuration that serve the target, each TP GPUs: ceil(target / highest rate) x TP. Replicas "
      "share the load evenly (no imbalance, no router). The fewest GPUs per model and hardware:");
  ReportTable table{{"model", "hardware", "GPUs", "configuration", "max req/s per replica"}, {}};
  for (const auto& model : x.models) {
    for (const auto& hw : x.hardware) {
      const StoredConfig* best = nullptr;
      for (const auto& c : d.configs) {
        if (c.row.model != model || c.row.hardware != hw || c.row.sloUnmet() || !c.gpus_for_target ||
            *c.gpus_for_target <= 0) {
          continue;
        }
        if (!best || *c.gpus_for_target < *best->gpus_for_target) best = &c;
      }
      table.rows.push_back(
          {model, hw, best ? std::to_string(*best->gpus_for_target) : "none",
           best ? fmt::format("{} at TP {}", configLabel(best->row), best->row.tp) : "no configuration",
           best ? fmt::format("{:.2f}", *best->row.max_rate) : "-"});
    }
  }
  doc.table(table);
}

void memorySection(HtmlDocument& doc, const CapacityData& d) {
  doc.heading("Memory split per GPU and KV capacity");
  doc.paragraph(
      "Per GPU (TP rank), by each engine's rule in backends/<engine>/engine.yaml serving: (docs/CAPACITY.md). The "
      "reserve holds the activation peak, CUDA graphs and runtime. Requests that fit the KV pool at once, per context "
      "length (pages rounded up; the scheduler may cap running requests lower).");
  ReportTable split{{"hardware", "model", "engine:backend", "TP", "GPU GiB", "weights GiB", "KV pool GiB",
                     "reserve GiB", "KV tokens", "page", "max running"},
                    {}};
  ReportTable kv{{"hardware", "model", "engine:backend", "TP"}, {}};
  for (const auto c : kContexts) kv.header.push_back(fmt::format("{}k tokens", c / 1024));
  std::vector<StackedBar> bars;
  std::set<std::string> seen;
  for (const auto& c : d.configs) {
    if (!c.row.split || c.row.forced_backend) continue;
    const MemorySplit& m = *c.row.split;
    const std::string who = fmt::format("{} · {} · {} · TP {}", c.row.hardware, c.row.model, c.row.engine, c.row.tp);
    if (!seen.insert(who).second) continue;
    split.rows.push_back({c.row.hardware, c.row.model, configLabel(c.row), std::to_string(c.row.tp), gib(m.gpu_mib),
                          gib(m.weights_mib), gib(std::max(0.0, m.kv_pool_mib)), gib(m.other_mib),
                          std::to_string(m.kv_tokens), std::to_string(m.page_size),
                          std::to_string(m.max_running_requests)});
    std::vector<std::string> row{c.row.hardware, c.row.model, configLabel(c.row), std::to_string(c.row.tp)};
    for (const auto ctx : kContexts) row.push_back(std::to_string(requestsThatFit(m, ctx)));
    kv.rows.push_back(std::move(row));
    bars.push_back({who,
                    {m.weights_mib / 1024, std::max(0.0, m.kv_pool_mib) / 1024,
                     std::min(m.other_mib, m.gpu_mib - m.weights_mib) / 1024}});
  }
  if (!bars.empty()) {
    doc.figure({"capacity-memory.svg",
                stackedBarsSvg("GPU memory per rank (GiB)", "GiB", {"weights", "KV pool", "engine reserve"}, bars),
                "GPU memory per rank: weights, KV pool and the engine's reserve, per engine's own choice"});
  }
  doc.table(split);
  doc.heading("Requests that fit the KV pool at once", 3);
  doc.table(kv);
}

LineSeries seriesOf(const std::vector<const StoredRun*>& runs, const std::string& label, std::size_t i, bool ttft) {
  LineSeries s{label, paletteColor(i), {}};
  for (const auto* r : runs) {
    if (r->row.kind == "search") s.points.emplace_back(r->row.rate, ttft ? r->ttft_ms.p99 : r->tpot_ms.p99);
  }
  return s;
}

// Per model and hardware, p99 TTFT and p99 TPOT against the offered rate for the engines' own choices.
void kneeSection(HtmlDocument& doc, const CapacityData& d, const Index& x) {
  const ServeSlo slo = sloOf(d);
  bool any = false;
  for (const auto& model : x.models) {
    for (const auto& hw : x.hardware) {
      LineChart ttft{fmt::format("{} on {}: p99 TTFT", model, hw),
                     "offered requests/s",
                     "p99 TTFT (ms)",
                     {},
                     slo.ttft_s * 1e3,
                     slo.ttft_s * 1e3 * 4,
                     true};
      LineChart tpot{fmt::format("{} on {}: p99 TPOT", model, hw),
                     "offered requests/s",
                     "p99 TPOT (ms)",
                     {},
                     slo.tpot_s * 1e3,
                     slo.tpot_s * 1e3 * 4,
                     true};
      for (const auto& c : d.configs) {
        if (c.row.model != model || c.row.hardware != hw || c.row.forced_backend || !x.runs.contains(c.id)) continue;
        const std::string label = fmt::format("{} · TP {}", configLabel(c.row), c.row.tp);
        ttft.series.push_back(seriesOf(x.runs.at(c.id), label, ttft.series.size(), true));
        tpot.series.push_back(seriesOf(x.runs.at(c.id), label, tpot.series.size(), false));
      }
      if (ttft.series.empty() || ttft.series.front().points.empty()) continue;
      if (!any) {
        doc.heading("Latency against the offered rate: the knee");
        doc.paragraph(
            "Every simulation of the rate search (same arrivals, scaled), for each engine's own backend choice: p99 "
            "latency stays near the unloaded step time, then climbs once the batch the KV pool and the token budget "
            "allow is full. The dashed line is the SLO; values above 4x the SLO are drawn at the top edge.");
        any = true;
      }
      doc.figure({fmt::format("capacity-knee-{}-{}-ttft.svg", model, hw), lineChartSvg(ttft), ttft.title});
      doc.figure({fmt::format("capacity-knee-{}-{}-tpot.svg", model, hw), lineChartSvg(tpot), tpot.title});
    }
  }
}

// The runs serve-sim stored, with their running requests and KV use over time (the first four drawn).
LineChart timelineChart(const CapacityData& d, const StoredRun& r, const StoredConfig& c, const std::string& who) {
  LineChart chart{fmt::format("run {}: {}", r.id, who), "time (s)", "running requests / KV use (%)", {}, 0, 0, false};
  LineSeries running{"running requests", paletteColor(0), {}}, kv{"KV use (% of the pool)", paletteColor(1), {}};
  const double pool = c.row.split ? static_cast<double>(std::max<std::int64_t>(1, c.row.split->kv_tokens)) : 1;
  for (const auto& [run, p] : d.timeline) {
    if (run != r.id) continue;
    running.points.emplace_back(p.t_s, static_cast<double>(p.running));
    kv.points.emplace_back(p.t_s, 100 * static_cast<double>(p.kv_used_tokens) / pool);
  }
  chart.series = {running, kv};
  return chart;
}

void runsSection(HtmlDocument& doc, const CapacityData& d) {
  ReportTable table{{"run", "configuration", "traffic", "req/s", "p50 TTFT ms", "p99 TTFT ms", "p99 TPOT ms",
                     "output tok/s", "goodput req/s", "mean batch", "peak KV use"},
                    {}};
  std::vector<ReportFigure> figures;
  for (const auto& r : d.runs) {
    if (r.row.kind != "serve-sim") continue;
    const auto c = std::find_if(d.configs.begin(), d.configs.end(), [&](const auto& x) { return x.id == r.config; });
    const std::string who =
        fmt::format("{} · {} · {} · TP {}", c->row.hardware, c->row.model, configLabel(c->row), c->row.tp);
    table.rows.push_back({std::to_string(r.id), who, r.row.arrivals, fmt::format("{:.2f}", r.row.rate),
                          fmt::format("{:.1f}", r.ttft_ms.p50), fmt::format("{:.1f}", r.ttft_ms.p99),
                          fmt::format("{:.2f}", r.tpot_ms.p99), fmt::format("{:.0f}", r.output_tokens_per_s),
                          fmt::format("{:.2f}", r.goodput_rps), fmt::format("{:.1f}", r.mean_batch),
                          study_report::percent(r.peak_kv_use)});
    const LineChart chart = timelineChart(d, r, *c, who);
    if (figures.size() < 4 && !chart.series.front().points.empty()) {
      figures.push_back({fmt::format("capacity-run-{}.svg", r.id), lineChartSvg(chart), chart.title});
    }
  }
  if (table.rows.empty()) return;
  doc.heading("serve-sim runs");
  doc.table(table);
  for (const auto& f : figures) doc.figure(f);
}

void assumptions(HtmlDocument& doc) {
  doc.heading("Assumptions and what is not modelled");
  for (const char* text :
       {"Scheduler: each engine's limits from its serving: data (token budget, running requests, mixed or separate "
        "prefill), chunked prefill, page allocation, recompute preemption; no scheduler CPU time beyond the step "
        "model's own CPU timeline.",
        "Memory: weights sharded over TP (no expert parallelism), the engine's reserve rule, KV by dtype, page, MLA "
        "latent and sliding window; activation and CUDA-graph memory are attnsim estimates.",
        "Communication: two ring all-reduces per layer over the profile's interconnect (latency assumed); no "
        "expert-parallel all-to-all, no pipeline parallelism, no overlap of communication with compute.",
        "Not simulated: prefix caching, speculative decoding, disaggregated prefill, multi-node links, router "
        "imbalance between replicas.",
        "Step times are predictions memoised by 4% buckets of batch shape; no measurement stands behind a row "
        "unless the catalog's calibration has one for that kernel family and device."}) {
    doc.paragraph(text);
  }
}

json configsJson(const CapacityData& d, const Index& x) {
  json out = json::array();
  for (const auto& c : d.configs) {
    json row = {{"hardware", c.row.hardware}, {"model", c.row.model},    {"engine", c.row.engine},
                {"backend", c.row.backend},   {"tp", c.row.tp},          {"forced_backend", c.row.forced_backend},
                {"error", c.row.error},       {"max_rate_rps", nullptr}, {"gpus_for_target", nullptr}};
    if (c.row.max_rate) row["max_rate_rps"] = *c.row.max_rate;
    const auto band = x.band.find(c.id);
    row["max_rate_band_rps"] = band != x.band.end() && !c.row.sloUnmet()
                                   ? json::array({band->second.first, band->second.second})
                                   : json(nullptr);
    if (c.gpus_for_target && !c.row.sloUnmet()) row["gpus_for_target"] = *c.gpus_for_target;
    row["slo_unmet"] = c.row.sloUnmet() ? json(unmetNote(c.row)) : json(nullptr);
    if (c.row.split) {
      row["memory_gib"] = {{"gpu", c.row.split->gpu_mib / 1024},
                           {"weights", c.row.split->weights_mib / 1024},
                           {"kv_pool", c.row.split->kv_pool_mib / 1024},
                           {"reserve", c.row.split->other_mib / 1024}};
      row["kv_tokens"] = c.row.split->kv_tokens;
    }
    json probes = json::array();
    if (x.runs.contains(c.id)) {
      for (const auto* r : x.runs.at(c.id)) {
        probes.push_back({{"kind", r->row.kind},
                          {"rate", r->row.rate},
                          {"meets_slo", r->row.meets_slo},
                          {"p99_ttft_ms", r->ttft_ms.p99},
                          {"p99_tpot_ms", r->tpot_ms.p99},
                          {"output_tokens_per_s", r->output_tokens_per_s},
                          {"goodput_rps", r->goodput_rps}});
      }
    }
    row["runs"] = std::move(probes);
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace

StudyReport capacityReport(const CapacityData& data, const std::string& command) {
  const Index x = indexOf(data);
  StudyReport report{"capacity", HtmlDocument("attnsim capacity report"), json::object()};
  HtmlDocument& doc = report.document;
  provenance(doc, data, command);
  if (std::any_of(data.configs.begin(), data.configs.end(), [](const auto& c) { return c.row.max_rate.has_value(); })) {
    rateSection(doc, data, x);
  }
  gpusSection(doc, data, x);
  memorySection(doc, data);
  kneeSection(doc, data, x);
  runsSection(doc, data);
  assumptions(doc);
  json provenance = {{"report_version", ATTNSIM_VERSION}, {"db", data.path}};
  if (data.study) {
    provenance.update({{"study", data.study->name},
                       {"study_id", data.study->id},
                       {"spec_hash", data.study->spec_hash},
                       {"catalog_hash", data.study->catalog_hash},
                       {"program_version", data.study->program_version},
                       {"traffic", data.study->arrivals},
                       {"target_rate", data.study->target_rate}});
  }
  const ServeSlo slo = sloOf(data);
  report.json = {{"provenance", provenance},
                 {"slo", {{"p99_ttft_ms", slo.ttft_s * 1e3}, {"p99_tpot_ms", slo.tpot_s * 1e3}}},
                 {"configs", configsJson(data, x)}};
  return report;
}

}  // namespace attnsim
