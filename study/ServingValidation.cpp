#include "study/ServingValidation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "core/Error.hpp"
#include "core/Strings.hpp"
#include "study/Measurements.hpp"

namespace attnsim {

namespace {

struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::pair<int, std::vector<std::string>>> rows;  // line number, cells
  [[nodiscard]] std::size_t column(const std::string& path, const std::string& name) const {
    const auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) {
      throw LocatedInputError({path, 1, 1}, name,
                              fmt::format("missing column '{}'; the header has: {}", name, join(header, ", ")));
    }
    return static_cast<std::size_t>(it - header.begin());
  }
};

CsvTable readServingCsv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("{}: cannot read the file", path));
  CsvTable t;
  std::string line;
  if (!std::getline(in, line)) throw LocatedInputError({path, 1, 1}, "", "empty file: a header row is expected");
  t.header = splitCsvLine(line);
  int number = 1;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line == "\r") continue;
    bool unterminated = false;
    auto cells = splitCsvLine(line, &unterminated);
    if (unterminated) throw LocatedInputError({path, number, 1}, "", "a quoted cell is not closed on its line");
    if (cells.size() != t.header.size()) {
      throw LocatedInputError({path, number, 1}, "",
                              fmt::format("{} cells, the header has {}", cells.size(), t.header.size()));
    }
    t.rows.emplace_back(number, std::move(cells));
  }
  return t;
}

std::optional<double> parseMetric(const std::string& text) {
  if (text.empty()) return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

MetricSummary summarizeMetric(const std::vector<const ServingComparison*>& runs, const char* column) {
  MetricSummary s;
  s.column = column;
  std::vector<double> apes;
  apes.reserve(runs.size());
  for (const auto* c : runs) {
    const auto e = c->error(column);
    if (!e) continue;
    apes.push_back(std::abs(*e));
    s.mean_signed += *e;
    if (std::abs(*e) <= 0.10) ++s.within_10;
    if (std::abs(*e) <= 0.15) ++s.within_15;
    if (std::abs(*e) >= std::abs(s.worst_error)) {
      s.worst_error = *e;
      s.worst_id = c->run->id;
    }
  }
  s.n = apes.size();
  if (s.n == 0) return s;
  double total = 0;
  for (const double a : apes) total += a;
  s.mape = total / static_cast<double>(s.n);
  s.mean_signed /= static_cast<double>(s.n);
  std::sort(apes.begin(), apes.end());
  s.median_ape = s.n % 2 == 1 ? apes[s.n / 2] : (apes[s.n / 2 - 1] + apes[s.n / 2]) / 2;
  return s;
}

ServingGroupSummary summarizeGroup(std::string group, const std::vector<const ServingComparison*>& runs) {
  ServingGroupSummary g{std::move(group), runs.size(), {}};
  g.metrics.reserve(kServingMetrics.size());
  for (const auto& m : kServingMetrics) g.metrics.push_back(summarizeMetric(runs, m.column));
  return g;
}

// How the client loaded the engine, from the setup's flags: the regime decides which costs show.
std::string loadOf(const ServingSetup& s) {
  const auto flag = [&](const std::string& name) -> std::string {
    const auto it = std::find(s.flags.begin(), s.flags.end(), name);
    return it != s.flags.end() && it + 1 != s.flags.end() ? *(it + 1) : std::string{};
  };
  if (!flag("--max-concurrency").empty()) return "load closed loop (--max-concurrency)";
  const std::string rate = flag("--rate").empty() ? flag("--request-rate") : flag("--rate");
  return rate == "inf" ? "load all at once (--rate inf)" : "load open loop at a rate";
}

// setups.csv `other_readings`: readings separated by ';', each a list of words.
std::vector<std::vector<std::string>> readingsOf(const std::string& cell) {
  std::vector<std::vector<std::string>> out;
  std::istringstream parts(cell);
  for (std::string part; std::getline(parts, part, ';');) {
    std::istringstream words(part);
    std::vector<std::string> reading;
    for (std::string w; words >> w;) reading.push_back(w);
    if (!reading.empty()) out.push_back(std::move(reading));
  }
  return out;
}

}  // namespace

bool PublishedServingRun::complete() const { return notes.rfind("complete", 0) == 0; }

std::vector<PublishedServingRun> readPublishedServing(const std::string& path) {
  const CsvTable t = readServingCsv(path);
  const std::size_t id = t.column(path, "id"), engine = t.column(path, "engine"),
                    version = t.column(path, "engine_version"), model = t.column(path, "model"),
                    gpu = t.column(path, "gpu"), dataset = t.column(path, "dataset"),
                    url = t.column(path, "source_url"), locator = t.column(path, "source_locator"),
                    notes = t.column(path, "notes");
  std::vector<std::size_t> metric_columns;
  metric_columns.reserve(kServingMetrics.size());
  for (const auto& m : kServingMetrics) metric_columns.push_back(t.column(path, m.column));
  std::vector<PublishedServingRun> runs;
  runs.reserve(t.rows.size());
  for (const auto& [line, cells] : t.rows) {
    PublishedServingRun r{cells[id],  cells[engine],  cells[version], cells[model], cells[gpu], cells[dataset],
                          cells[url], cells[locator], cells[notes],   line,         {}};
    for (std::size_t i = 0; i < kServingMetrics.size(); ++i) {
      const std::string& text = cells[metric_columns[i]];
      const auto v = parseMetric(text);
      if (!text.empty() && !v) {
        throw LocatedInputError({path, line, 1}, kServingMetrics[i].column,
                                fmt::format("'{}' is not a number (leave the cell empty when not stated)", text));
      }
      if (v) r.metrics[kServingMetrics[i].column] = *v;
    }
    runs.push_back(std::move(r));
  }
  return runs;
}

std::vector<std::string> flagsUnderReading(const std::vector<std::string>& flags,
                                           const std::vector<std::string>& reading) {
  std::vector<std::string> out = flags;
  for (std::size_t i = 0; i < reading.size(); i += 2) {
    if (reading[i].rfind("--", 0) != 0 || i + 1 >= reading.size() || reading[i + 1].rfind("--", 0) == 0) {
      throw InputError(
          fmt::format("reading '{}': '{}' is not a --flag followed by its value", join(reading, " "), reading[i]));
    }
    const auto it = std::find(out.begin(), out.end(), reading[i]);
    if (it != out.end() && it + 1 != out.end()) {
      *(it + 1) = reading[i + 1];
    } else {
      out.push_back(reading[i]);
      out.push_back(reading[i + 1]);
    }
  }
  return out;
}

std::vector<ServingSetup> readServingSetups(const std::string& path,
                                            const std::vector<PublishedServingRun>& published) {
  const CsvTable t = readServingCsv(path);
  const std::size_t id = t.column(path, "id"), flags = t.column(path, "serve_sim_flags"),
                    approx = t.column(path, "approximations"), gaps = t.column(path, "not_modelled");
  const auto other = std::find(t.header.begin(), t.header.end(), "other_readings");  // optional column
  std::vector<std::string> ids;
  ids.reserve(published.size());
  for (const auto& p : published) ids.push_back(p.id);
  std::set<std::string> seen;
  std::vector<ServingSetup> setups;
  setups.reserve(t.rows.size());
  for (const auto& [line, cells] : t.rows) {
    if (std::find(ids.begin(), ids.end(), cells[id]) == ids.end()) {
      throw LocatedInputError(
          {path, line, 1}, "id",
          fmt::format("'{}' is no run of the published file{}", cells[id], didYouMean(cells[id], ids)));
    }
    if (!seen.insert(cells[id]).second) {
      throw LocatedInputError({path, line, 1}, "id", fmt::format("'{}' has a setup already", cells[id]));
    }
    ServingSetup s{cells[id], {}, cells[approx], cells[gaps], line, {}};
    std::istringstream words(cells[flags]);
    for (std::string w; words >> w;) s.flags.push_back(w);
    if (s.flags.empty() && s.not_modelled.empty()) {
      throw LocatedInputError({path, line, 1}, "not_modelled",
                              "a setup without serve_sim_flags must say in not_modelled why it cannot be expressed");
    }
    if (other != t.header.end()) s.readings = readingsOf(cells[static_cast<std::size_t>(other - t.header.begin())]);
    try {
      for (const auto& r : s.readings) {
        if (s.flags.empty()) throw InputError("a setup without serve_sim_flags has no other reading");
        (void)flagsUnderReading(s.flags, r);
      }
    } catch (const InputError& e) {
      throw LocatedInputError({path, line, 1}, "other_readings", fmt::format("{}: {}", s.id, e.what()));
    }
    setups.push_back(std::move(s));
  }
  return setups;
}

std::map<std::string, double> servingMetricsOf(const ServeResult& r) {
  return {{"ttft_mean_ms", r.ttft.mean * 1e3},
          {"ttft_median_ms", r.ttft.p50 * 1e3},
          {"tpot_mean_ms", r.tpot.mean * 1e3},
          {"tpot_median_ms", r.tpot.p50 * 1e3},
          {"itl_mean_ms", r.itl.mean * 1e3},
          {"e2e_mean_ms", r.e2e.mean * 1e3},
          {"output_throughput", r.output_tokens_per_s},
          {"request_throughput", r.requests_per_s},
          {"total_throughput", r.total_tokens_per_s}};
}

std::optional<double> servingError(const PublishedServingRun& run, const std::map<std::string, double>& predicted,
                                   const std::string& column) {
  const auto p = predicted.find(column);
  const auto m = run.metrics.find(column);
  if (p == predicted.end() || m == run.metrics.end() || m->second <= 0) return std::nullopt;
  return (p->second - m->second) / m->second;
}

std::optional<double> ServingComparison::error(const std::string& column) const {
  return servingError(*run, predicted, column);
}

std::vector<std::string> ServingComparison::beyondTargets() const {
  std::vector<std::string> out;
  for (const auto& t : kServingTargets) {
    if (const auto e = error(t.column); e && std::abs(*e) > t.max_abs_error) out.emplace_back(t.column);
  }
  return out;
}

void summarizeServing(ServingValidation& v) {
  v.groups.clear();
  std::vector<const ServingComparison*> all;
  std::map<std::string, std::vector<const ServingComparison*>> by_engine, by_backend, by_load;
  all.reserve(v.compared.size());
  for (const auto& c : v.compared) {
    all.push_back(&c);
    by_engine[c.run->engine].push_back(&c);
    by_backend[c.backend].push_back(&c);
    by_load[loadOf(*c.setup)].push_back(&c);
  }
  v.groups.push_back(summarizeGroup("all", all));
  for (const auto& [engine, runs] : by_engine) v.groups.push_back(summarizeGroup("engine " + engine, runs));
  for (const auto& [backend, runs] : by_backend) v.groups.push_back(summarizeGroup("backend " + backend, runs));
  for (const auto& [load, runs] : by_load) v.groups.push_back(summarizeGroup(load, runs));
}

}  // namespace attnsim
