#include "reports/ServingValidationReport.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include "core/Strings.hpp"

namespace attnsim {

namespace {

// The four metrics the targets name, in the per-run and per-group tables.
constexpr std::array<const char*, 4> kHeadlineMetrics{"ttft_mean_ms", "tpot_mean_ms", "itl_mean_ms",
                                                      "output_throughput"};

std::string signedPercent(double x) { return fmt::format("{:+.1f}%", 100 * x); }

std::string servingCell(const ServingComparison& c, const char* column) {
  const auto m = c.run->metrics.find(column);
  const auto p = c.predicted.find(column);
  if (m == c.run->metrics.end()) return p == c.predicted.end() ? "–" : fmt::format("– / {:.4g}", p->second);
  const auto e = c.error(column);
  return fmt::format("{:.4g} / {:.4g} ({})", m->second, p->second, e ? signedPercent(*e) : "–");
}

const MetricSummary* metricOf(const ServingGroupSummary& g, const char* column) {
  for (const auto& m : g.metrics) {
    if (m.column == column) return &m;
  }
  return nullptr;
}

std::string metricLabel(const char* column) {
  for (const auto& m : kServingMetrics) {
    if (std::string(m.column) == column) return fmt::format("{} ({})", m.label, m.unit);
  }
  return column;
}

void summaryTable(std::string& md, const ServingGroupSummary& all) {
  md.append(
      "| metric | runs | MAPE | median |error| | mean error | within 10% | within 15% | worst run |\n"
      "|---|---|---|---|---|---|---|---|\n");
  for (const auto& m : all.metrics) {
    if (m.n == 0) continue;
    md.append(fmt::format("| {} | {} | {:.1f}% | {:.1f}% | {} | {} | {} | {} ({}) |\n", metricLabel(m.column.c_str()),
                          m.n, 100 * m.mape, 100 * m.median_ape, signedPercent(m.mean_signed), m.within_10, m.within_15,
                          m.worst_id, signedPercent(m.worst_error)));
  }
}

void groupTable(std::string& md, const ServingValidation& v) {
  md.append("| group | runs |");
  for (const char* c : kHeadlineMetrics) md.append(fmt::format(" {} MAPE (n) |", metricLabel(c)));
  md.append("\n|---|---|---|---|---|---|\n");
  for (const auto& g : v.groups) {
    md.append(fmt::format("| {} | {} |", g.group, g.runs));
    for (const char* c : kHeadlineMetrics) {
      const MetricSummary* m = metricOf(g, c);
      md.append(m && m->n > 0 ? fmt::format(" {:.1f}% ({}) |", 100 * m->mape, m->n) : " – |");
    }
    md.append("\n");
  }
}

std::string readingsNote(const ServingComparison& c);

// A setup's not_modelled as its causes: clauses separated by "; " outside parentheses.
std::vector<std::string> causeClauses(const std::string& text) {
  std::vector<std::string> out;
  int depth = 0;
  std::size_t begin = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '(') ++depth;
    if (text[i] == ')') depth = std::max(0, depth - 1);
    if (depth == 0 && text.compare(i, 2, "; ") == 0) {
      out.push_back(text.substr(begin, i - begin));
      begin = i + 2;
    }
  }
  if (begin < text.size()) out.push_back(text.substr(begin));
  return out;
}

// Causes that several runs' setups name, labelled C1, C2, ... in order of first appearance: the report
// states each once and the runs name it by label and title. Adjacent clauses that the same runs name
// are one cause (one explanation in several clauses).
struct SharedCauses {
  std::vector<std::pair<std::string, std::size_t>> causes;  // cause, runs naming it
  std::map<std::string, std::size_t> index;                 // cause -> its place in causes
  std::map<std::string, std::vector<std::string>> of;       // a setup's not_modelled -> its causes

  explicit SharedCauses(const ServingValidation& v) {
    std::map<std::string, std::vector<std::size_t>> runs_of_clause;
    for (std::size_t run = 0; run < v.compared.size(); ++run) {
      for (const auto& clause : causeClauses(v.compared[run].setup->not_modelled)) {
        auto& runs = runs_of_clause[clause];
        if (runs.empty() || runs.back() != run) runs.push_back(run);
      }
    }
    std::map<std::string, std::size_t> runs;
    std::vector<std::string> order;
    for (const auto& c : v.compared) {
      const std::string& text = c.setup->not_modelled;
      if (!of.contains(text)) {
        auto& merged = of[text];
        const std::vector<std::size_t>* previous = nullptr;
        for (const auto& clause : causeClauses(text)) {
          const auto& these = runs_of_clause[clause];
          if (previous != nullptr && these.size() > 1 && these == *previous) {
            merged.back().append("; " + clause);
          } else {
            merged.push_back(clause);
          }
          previous = &these;
        }
      }
      for (const auto& cause : of[text]) {
        if (runs[cause]++ == 0) order.push_back(cause);
      }
    }
    for (const auto& cause : order) {
      if (runs[cause] < 2) continue;
      index[cause] = causes.size();
      causes.emplace_back(cause, runs[cause]);
    }
  }
  static std::string title(const std::string& clause) {
    const auto colon = clause.find(": ");
    if (colon != std::string::npos && colon <= 80) return clause.substr(0, colon);
    return clause.size() <= 80 ? clause : clause.substr(0, 77) + "...";
  }
  // A compared run's causes: shared ones by label and title, its own in full.
  [[nodiscard]] std::string text(const std::string& not_modelled) const {
    std::string out;
    for (const auto& clause : of.at(not_modelled)) {
      if (!out.empty()) out.append("; ");
      const auto it = index.find(clause);
      out.append(it == index.end() ? clause : fmt::format("C{} ({})", it->second + 1, title(clause)));
    }
    return out;
  }
  void list(std::string& md) const {
    if (causes.empty()) return;
    md.append("Causes several runs share, each stated once (the runs name them by label):\n\n");
    for (std::size_t i = 0; i < causes.size(); ++i) {
      md.append(fmt::format("- **C{}** ({} runs): {}\n", i + 1, causes[i].second, causes[i].first));
    }
    md.append("\n");
  }
};

void runTable(std::string& md, const ServingValidation& v, const SharedCauses& shared) {
  md.append("Each cell: published / predicted (error).\n\n| run | backend |");
  for (const char* c : kHeadlineMetrics) md.append(fmt::format(" {} |", metricLabel(c)));
  md.append(" not modelled |\n|---|---|---|---|---|---|---|\n");
  for (const auto& c : v.compared) {
    md.append(fmt::format("| {} | {} |", c.run->id, c.backend));
    for (const char* m : kHeadlineMetrics) md.append(fmt::format(" {} |", servingCell(c, m)));
    md.append(fmt::format(" {} |\n", c.setup->not_modelled.empty() ? "–" : shared.text(c.setup->not_modelled)));
  }
}

// Runs within the target of one metric, over the runs that publish it.
std::pair<std::size_t, std::size_t> withinTarget(const ServingValidation& v, const ServingTarget& t) {
  std::size_t within = 0, n = 0;
  for (const auto& c : v.compared) {
    if (const auto e = c.error(t.column)) {
      ++n;
      if (std::abs(*e) <= t.max_abs_error) ++within;
    }
  }
  return {within, n};
}

// The targets, and every run beyond one with what the engine did that serve-sim does not
// model (setups.csv `not_modelled`), or that no cause is identified yet.
void targetSection(std::string& md, const ServingValidation& v, const SharedCauses& shared) {
  md.append("| metric | target |error| | runs within | runs |\n|---|---|---|---|\n");
  for (const auto& t : kServingTargets) {
    const auto [within, n] = withinTarget(v, t);
    md.append(fmt::format("| {} | {:.0f}% | {} | {} |\n", metricLabel(t.column), 100 * t.max_abs_error, within, n));
  }
  md.append("\n");
  shared.list(md);
  md.append("Runs beyond a target, with the metrics that miss and why:\n\n");
  for (const auto& c : v.compared) {
    const auto beyond = c.beyondTargets();
    if (beyond.empty()) continue;
    std::string misses;
    for (const auto& m : beyond) {
      if (!misses.empty()) misses.append(", ");
      misses.append(fmt::format("{} {}", metricLabel(m.c_str()), signedPercent(*c.error(m))));
    }
    std::string why = c.setup->not_modelled.empty() ? "no cause identified yet" : shared.text(c.setup->not_modelled);
    if (!c.readings.empty() && why.back() != '.') why.append(".");
    md.append(fmt::format("- **{}**: {}. Why: {}{}\n", c.run->id, misses, why, readingsNote(c)));
  }
}

// The run's headline errors under each other reading of its setup, for the targets list.
std::string readingsNote(const ServingComparison& c) {
  std::string note;
  for (const auto& r : c.readings) {
    std::string errors;
    for (const char* m : kHeadlineMetrics) {
      if (const auto e = servingError(*c.run, r.predicted, m)) {
        errors.append(fmt::format("{}{} {}", errors.empty() ? "" : ", ", metricLabel(m), signedPercent(*e)));
      }
    }
    note.append(fmt::format(" Read as `{}` instead: {}.", join(r.reading, " "), errors));
  }
  return note;
}

// MAPE of the runs read two ways, under the stated setup and under each other reading (grouped by
// the reading's flags): whether the other reading explains them better, metric by metric.
void readingsSection(std::string& md, const ServingValidation& v) {
  std::map<std::string, std::vector<std::pair<const ServingComparison*, const ServingReading*>>> by_reading;
  for (const auto& c : v.compared) {
    for (const auto& r : c.readings) by_reading[join(r.reading, " ")].emplace_back(&c, &r);
  }
  if (by_reading.empty()) return;
  md.append(
      "\n## Runs whose own figures contradict their stated setup\n\nMAPE over the runs of each other reading "
      "(setups.csv `other_readings`), as stated and as read the other way; the rest of the report uses the stated "
      "setup.\n\n| reading | runs |");
  for (const char* m : kHeadlineMetrics) md.append(fmt::format(" {} MAPE stated → other (n) |", metricLabel(m)));
  md.append("\n|---|---|---|---|---|---|\n");
  for (const auto& [reading, runs] : by_reading) {
    md.append(fmt::format("| `{}` | {} |", reading, runs.size()));
    for (const char* m : kHeadlineMetrics) {
      double stated = 0, other = 0;
      std::size_t n = 0;
      for (const auto& [c, r] : runs) {
        const auto a = c->error(m);
        const auto b = servingError(*c->run, r->predicted, m);
        if (!a || !b) continue;
        stated += std::abs(*a);
        other += std::abs(*b);
        ++n;
      }
      md.append(n == 0 ? " – |"
                       : fmt::format(" {:.1f}% → {:.1f}% ({}) |", 100 * stated / static_cast<double>(n),
                                     100 * other / static_cast<double>(n), n));
    }
    md.append("\n");
  }
}

void commandList(std::string& md, const ServingValidation& v) {
  for (const auto& c : v.compared) {
    md.append(fmt::format("- **{}** ({} {}, {}; source: {}, {})\n  `{}`\n", c.run->id, c.run->engine,
                          c.run->engine_version.empty() ? "version by date" : c.run->engine_version, c.run->gpu,
                          c.run->source_url, c.run->source_locator, c.command));
    if (!c.setup->approximations.empty()) md.append(fmt::format("  approximated: {}\n", c.setup->approximations));
    for (const auto& r : c.readings) md.append(fmt::format("  read as `{}`: `{}`\n", join(r.reading, " "), r.command));
  }
}

}  // namespace

std::string servingValidationMarkdown(const ServingValidation& v, const std::string& command) {
  std::string md = "# Serving validation: serve-sim against published benchmarks\n\n";
  md.append(
      fmt::format("Generated by `{}`. {} published runs predicted; {} complete runs not run (listed at the end, "
                  "each with its reason); {} complete runs without a setup.\n\n",
                  command, v.compared.size(), v.not_run.size(), v.no_setup.size()));
  md.append(
      "Error = (predicted − published) / published; MAPE = the mean of |error| over the runs that "
      "publish the metric. Each run's setup (serve-sim flags) is in setups.csv beside the published file, "
      "with what it approximates and what the engine did that serve-sim does not model.\n\n");
  if (!v.groups.empty()) {
    md.append("## All runs\n\n");
    summaryTable(md, v.groups.front());
    md.append("\n## Per engine, attention backend and load\n\n");
    groupTable(md, v);
  }
  const SharedCauses shared(v);
  md.append("\n## Against the targets\n\n");
  targetSection(md, v, shared);
  readingsSection(md, v);
  md.append("\n## Runs\n\n");
  runTable(md, v, shared);
  md.append("\n## Commands\n\n");
  commandList(md, v);
  if (!v.not_run.empty() || !v.no_setup.empty()) md.append("\n## Not run\n\n");
  for (const auto* s : v.not_run) md.append(fmt::format("- {}: {}\n", s->id, s->not_modelled));
  for (const auto* r : v.no_setup) md.append(fmt::format("- {}: no setup in setups.csv\n", r->id));
  return md;
}

std::string servingValidationCsv(const ServingValidation& v) {
  std::string csv = "id,engine,backend,metric,published,predicted,error\n";
  for (const auto& c : v.compared) {
    for (const auto& m : kServingMetrics) {
      const auto pub = c.run->metrics.find(m.column);
      const auto pred = c.predicted.find(m.column);
      if (pub == c.run->metrics.end() || pred == c.predicted.end()) continue;
      const auto e = c.error(m.column);
      csv.append(fmt::format("{},{},{},{},{},{},{}\n", c.run->id, c.run->engine, c.backend, m.column, pub->second,
                             pred->second, e ? fmt::format("{:.4f}", *e) : ""));
    }
  }
  return csv;
}

nlohmann::json servingValidationJson(const ServingValidation& v, const std::string& command) {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : v.groups) {
    nlohmann::json metrics = nlohmann::json::object();
    for (const auto& m : g.metrics) {
      if (m.n == 0) continue;
      metrics[m.column] = {{"runs", m.n},
                           {"mape", m.mape},
                           {"median_ape", m.median_ape},
                           {"mean_error", m.mean_signed},
                           {"within_10", m.within_10},
                           {"within_15", m.within_15},
                           {"worst_run", m.worst_id},
                           {"worst_error", m.worst_error}};
    }
    groups.push_back({{"group", g.group}, {"runs", g.runs}, {"metrics", metrics}});
  }
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& c : v.compared) {
    nlohmann::json errors = nlohmann::json::object();
    for (const auto& m : kServingMetrics) {
      if (const auto e = c.error(m.column)) errors[m.column] = *e;
    }
    nlohmann::json readings = nlohmann::json::array();
    for (const auto& r : c.readings) {
      nlohmann::json reading_errors = nlohmann::json::object();
      for (const auto& m : kServingMetrics) {
        if (const auto e = servingError(*c.run, r.predicted, m.column)) reading_errors[m.column] = *e;
      }
      readings.push_back({{"reading", join(r.reading, " ")},
                          {"command", r.command},
                          {"predicted", r.predicted},
                          {"error", reading_errors}});
    }
    runs.push_back({{"id", c.run->id},
                    {"engine", c.run->engine},
                    {"backend", c.backend},
                    {"command", c.command},
                    {"published", c.run->metrics},
                    {"predicted", c.predicted},
                    {"error", errors},
                    {"approximations", c.setup->approximations},
                    {"not_modelled", c.setup->not_modelled},
                    {"beyond_target", c.beyondTargets()},
                    {"other_readings", readings}});
  }
  nlohmann::json targets = nlohmann::json::array();
  for (const auto& t : kServingTargets) {
    const auto [within, n] = withinTarget(v, t);
    targets.push_back({{"metric", t.column}, {"max_abs_error", t.max_abs_error}, {"runs", n}, {"within", within}});
  }
  nlohmann::json not_run = nlohmann::json::array();
  for (const auto* s : v.not_run) not_run.push_back({{"id", s->id}, {"why", s->not_modelled}});
  for (const auto* r : v.no_setup) not_run.push_back({{"id", r->id}, {"why", "no setup"}});
  return {{"command", command}, {"groups", groups}, {"targets", targets}, {"runs", runs}, {"not_run", not_run}};
}

}  // namespace attnsim
