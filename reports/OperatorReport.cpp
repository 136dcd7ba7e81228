#include "reports/OperatorReport.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <tuple>

#include "catalog/Catalog.hpp"
#include "cost/Collective.hpp"

namespace attnsim {

namespace {

std::string pct(double x) { return fmt::format("{:.1f}%", 100 * x); }

std::string heldOutTable(const OperatorCalibration& ops) {
  const auto errors = ops.heldOutErrors();
  std::string md;
  for (const auto& line : ops.not_fitted) md += fmt::format("Not fitted: {}.\n\n", line);
  if (errors.empty()) return md;
  md +=
      "### Fitted on these rows, checked on the held-out ones\n\n"
      "Held out: GEMM shapes off the power-of-two grid and every row of the engine whose grid was not fitted; "
      "all-reduce message sizes 2^i elements with i % 3 = 1; MoE shape classes whose (hidden + 3·inter + 7·experts + "
      "13·top-k, widths in units of 64) is divisible by 4 and every MoE call of 48, 192, 768, 3072 or 12288 tokens. "
      "Default: the step model's figures without the fit (the dense-gemm family's roofline; the ring all-reduce on "
      "the profile's link; the grouped-gemm and elementwise rooflines of the routed experts).\n\n"
      "| hardware | engine | operator | held-out calls | MAPE default | MAPE fitted | p90 fitted | worst call "
      "(predicted / measured µs) |\n|---|---|---|---|---|---|---|---|\n";
  for (const auto& e : errors) {
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} ({:.1f} / {:.1f}) |\n", e.hardware, e.engine, e.op,
                      e.points, pct(e.default_mape), pct(e.mape), pct(e.p90), e.worst.shape, e.worst.fitted_us,
                      e.worst.measured_us);
  }
  return md;
}

struct CatalogErrors {
  double sum = 0;
  int points = 0;
  std::string basis;
};

// What the catalog predicts for a row with its shipped fits, and on what it rests.
std::optional<std::pair<double, std::string>> catalogPrediction(const Catalog& c, const MeasurementRow& r) {
  const HardwareProfile& hw = c.hardware(r.hardware);
  if (r.kind == "gemm") {
    const GemmSurface* s = hw.gemmSurface(r.dtype);
    if (!s) return std::nullopt;
    return std::pair{s->engineUs(r.engine, static_cast<double>(r.batch), static_cast<double>(r.q_len),
                                 static_cast<double>(r.kv_len)),
                     s->transferred_from.empty() ? "own fit" : "transferred from " + s->transferred_from};
  }
  if (r.kind == "moe") {  // batch = tokens, q_len = hidden, kv_len = inter / TP, heads = experts, kv_heads = top-k
    const MoeFit* f = hw.moeFit(r.engine, r.dtype);
    if (!f) return std::nullopt;
    return std::pair{f->us(moeCallOf(r)),
                     f->transferred_from.empty() ? "own fit" : "transferred from " + f->transferred_from};
  }
  if (r.kind != "allreduce" || !hw.interconnect_link || r.batch < 2) return std::nullopt;
  const AllReduceFit* f = allReduceFitFor(*hw.interconnect_link, static_cast<int>(r.batch), r.engine);
  const std::string basis = !f                            ? "ring default"
                            : f->transferred_from.empty() ? "own fit"
                                                          : "transferred from " + f->transferred_from;
  return std::pair{allReduceUs(*hw.interconnect_link, r.bytes, static_cast<int>(r.batch), r.engine), basis};
}

std::string catalogTable(const Catalog& c, const std::vector<MeasurementRow>& rows) {
  std::map<std::tuple<std::string, std::string, std::string>, CatalogErrors> groups;
  for (const auto& r : rows) {
    if ((r.kind != "gemm" && r.kind != "allreduce" && r.kind != "moe") || r.median_us <= 0) continue;
    const auto predicted = catalogPrediction(c, r);
    if (!predicted) continue;
    CatalogErrors& g = groups[{r.hardware, r.engine, r.kind == "allreduce" ? r.kind : r.kind + ":" + r.dtype}];
    g.sum += std::fabs(predicted->first / r.median_us - 1);
    ++g.points;
    g.basis = predicted->second;
  }
  if (groups.empty()) return {};
  std::string md =
      "\n### The catalog's shipped fits on these rows\n\n"
      "Every row, training ones included: on the device a fit came from this is its in-sample error; on a "
      "device that took a transferred fit (H200, GB200 ...) it is the transfer check.\n\n"
      "| hardware | engine | operator | calls | catalog fit | MAPE |\n|---|---|---|---|---|---|\n";
  for (const auto& [key, g] : groups) {
    const std::string& engine = std::get<1>(key);
    md += fmt::format("| {} | {} | {} | {} | {} | {} |\n", std::get<0>(key), engine.empty() ? "-" : engine,
                      std::get<2>(key), g.points, g.basis, pct(g.sum / g.points));
  }
  return md;
}

}  // namespace

std::string operatorValidationMarkdown(const Catalog& catalog, const std::vector<MeasurementRow>& rows) {
  const OperatorCalibration ops = calibrateOperators(catalog, rows, "");
  if (ops.points.empty() && ops.not_fitted.empty()) return {};
  return "\n## The step's operators beside attention\n\n" + heldOutTable(ops) + catalogTable(catalog, rows);
}

}  // namespace attnsim
