#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <span>

#include "catalog/Catalog.hpp"
#include "cost/Collective.hpp"
#include "study/Calibration.hpp"
#include "study/OperatorCalibration.hpp"

// The engines' custom all-reduce and NCCL's from `allreduce` rows (study/OperatorCalibration.hpp).
namespace attnsim {

namespace {

// One regime's line: latency + per_peer · (GPUs − 1) + bytes moved / bandwidth.
struct RegimeLine {
  double latency_us = 0, per_peer_us = 0, gbps = 0;
};

// A regime's call: bytes moved (its share of the message), GPUs beyond the first, measured µs.
struct RegimeCall {
  double moved = 0, peers = 0, us = 0;
};

// The regime's line on relative residuals over its calls; the per-peer latency only when `per_peer`
// (NCCL). nullopt when the line is not physical (too few calls, a non-positive slope); a negative
// latency is held at 0.
std::optional<RegimeLine> regimeLine(const std::vector<RegimeCall>& calls, bool per_peer) {
  if (!per_peer) {
    std::vector<std::pair<double, double>> xy;
    xy.reserve(calls.size());
    for (const auto& c : calls) xy.emplace_back(c.moved, c.us);
    if (xy.size() < 2) return std::nullopt;
    const LineFit f = fitLine(xy, true);
    if (f.slope <= 0) return std::nullopt;
    return RegimeLine{std::max(0.0, f.intercept), 0, 1.0 / (f.slope * 1e3)};
  }
  if (calls.size() < 3) return std::nullopt;
  Eigen::MatrixXd a(static_cast<Eigen::Index>(calls.size()), 3);
  Eigen::VectorXd y = Eigen::VectorXd::Ones(static_cast<Eigen::Index>(calls.size()));
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const auto row = static_cast<Eigen::Index>(i);
    const double w = 1.0 / calls[i].us;  // relative residuals
    a(row, 0) = w;
    a(row, 1) = w * calls[i].moved;
    a(row, 2) = w * calls[i].peers;
  }
  const Eigen::Vector3d beta = a.colPivHouseholderQr().solve(y);
  if (beta(1) <= 0) return std::nullopt;
  return RegimeLine{std::max(0.0, beta(0)), std::max(0.0, beta(2)), 1.0 / (beta(1) * 1e3)};
}

struct AllReduceRow {
  double bytes = 0;
  int ranks = 1;
  double us = 0;
};

// The two regimes by alternation: each training call goes to the regime that predicts it faster
// (the engine picks the faster one), each regime's line is refitted on its calls, until no call moves.
// `per_peer`: each regime's latency also grows with the GPUs (NCCL).
AllReduceFit fitRegimes(const std::vector<AllReduceRow>& train, bool per_peer) {
  AllReduceFit f;
  f.one_shot_latency_us = 3, f.one_shot_gbps = 100, f.two_shot_latency_us = 15, f.two_shot_gbps = 400;
  std::vector<char> one(train.size(), 0);
  for (std::size_t i = 0; i < train.size(); ++i) one[i] = train[i].bytes <= 512 * 1024 ? 1 : 0;
  for (int iteration = 0; iteration < 50; ++iteration) {
    std::vector<RegimeCall> a, b;
    for (std::size_t i = 0; i < train.size(); ++i) {
      const double share = (train[i].ranks - 1.0) / train[i].ranks * train[i].bytes;
      (one[i] ? a : b).push_back({one[i] ? share : 2 * share, train[i].ranks - 1.0, train[i].us});
    }
    if (auto line = regimeLine(a, per_peer)) {
      f.one_shot_latency_us = line->latency_us, f.one_shot_per_peer_us = line->per_peer_us;
      f.one_shot_gbps = line->gbps;
    }
    if (auto line = regimeLine(b, per_peer)) {
      f.two_shot_latency_us = line->latency_us, f.two_shot_per_peer_us = line->per_peer_us;
      f.two_shot_gbps = line->gbps;
    }
    bool moved = false;
    for (std::size_t i = 0; i < train.size(); ++i) {
      const double n = train[i].ranks, share = (n - 1) / n * train[i].bytes;
      const char next =
          f.one_shot_latency_us + (n - 1) * f.one_shot_per_peer_us + share / (f.one_shot_gbps * 1e3) <=
                  f.two_shot_latency_us + (n - 1) * f.two_shot_per_peer_us + 2 * share / (f.two_shot_gbps * 1e3)
              ? 1
              : 0;
      moved = moved || next != one[i];
      one[i] = next;
    }
    if (!moved) break;
  }
  return f;
}

bool allReduceHeldOut(const MeasurementRow& r) {
  const auto i =
      static_cast<std::int64_t>(std::lround(std::log2(static_cast<double>(std::max<std::int64_t>(1, r.q_len)))));
  return i % 3 == 1;
}

// The engine's own regimes at each GPU count with enough training calls (4: two per regime); NCCL's
// latency grows with the GPUs through its per-peer term instead.
std::vector<AllReduceRegimes> perRanksRegimes(const std::vector<AllReduceRow>& train) {
  std::map<int, std::vector<AllReduceRow>> by_ranks;
  for (const auto& t : train) by_ranks[t.ranks].push_back(t);
  std::vector<AllReduceRegimes> out;
  for (const auto& [ranks, calls] : by_ranks) {
    if (calls.size() < 4) continue;
    const AllReduceFit f = fitRegimes(calls, false);
    out.push_back({ranks, f.one_shot_latency_us, f.one_shot_gbps, f.two_shot_latency_us, f.two_shot_gbps});
  }
  return out;
}

std::string allReduceHeldOutYaml(const std::optional<HeldOutResiduals>& h) {
  return fmt::format("{{mape: {:.4f}, p90_abs_rel_error: {:.4f}, points: {}}}", h->mape, h->p90_abs_rel_error,
                     h->points);
}

// ", ranks: {2: {one_shot: …, two_shot: …}, …}" of a fit with per-GPU-count regimes; "" without.
std::string perRanksYaml(const AllReduceFit& f) {
  if (f.per_ranks.empty()) return {};
  std::vector<std::string> items;
  items.reserve(f.per_ranks.size());
  for (const auto& r : f.per_ranks) {
    items.push_back(
        fmt::format("{}: {{one_shot: {{latency_us: {:.3f}, bandwidth_gbps: {:.1f}}}, two_shot: "
                    "{{latency_us: {:.3f}, bandwidth_gbps: {:.1f}}}}}",
                    r.ranks, r.one_shot_latency_us, r.one_shot_gbps, r.two_shot_latency_us, r.two_shot_gbps));
  }
  return fmt::format(", ranks: {{{}}}", fmt::join(items, ", "));
}

}  // namespace

void calibrateAllReduce(const Catalog& c, const std::string& hardware, const std::string& engine,
                        const std::vector<const MeasurementRow*>& rows, OperatorCalibration& out) {
  const HardwareProfile& hw = c.hardware(hardware);
  if (!hw.interconnect_link) return;
  std::vector<AllReduceRow> train;
  for (const auto* r : rows) {
    if (!allReduceHeldOut(*r)) train.push_back({r->bytes, static_cast<int>(r->batch), r->median_us});
  }
  AllReduceFit f = fitRegimes(train, engine == kNcclAllReduce);
  if (engine != kNcclAllReduce) f.per_ranks = perRanksRegimes(train);
  f.engine = engine;
  f.source = operatorRowOrigins(rows, engine);
  f.points = static_cast<int>(train.size());
  InterconnectLink ring = *hw.interconnect_link;
  ring.all_reduces.clear();
  double train_error = 0;
  const std::size_t first = out.points.size();
  for (const auto* r : rows) {
    const int ranks = static_cast<int>(r->batch);
    const double fitted = f.us(r->bytes, ranks);
    if (!allReduceHeldOut(*r)) train_error += std::fabs(fitted / r->median_us - 1);
    out.points.push_back({hardware, engine, "allreduce", fmt::format("bytes={:.0f} gpus={}", r->bytes, ranks),
                          r->median_us, fitted, allReduceUs(ring, r->bytes, ranks), allReduceHeldOut(*r)});
  }
  f.fit_mape = train.empty() ? 0 : train_error / static_cast<double>(train.size());
  for (const auto& e : heldOutErrors(std::span(out.points).subspan(first)))
    f.heldout = HeldOutResiduals{e.mape, e.p90, e.points};
  out.all_reduce.push_back({hardware, std::move(f)});
}

std::string allReduceCalibrationYaml(const OperatorCalibration& c, const std::string& hardware) {
  std::string text;
  bool first = true;
  for (const auto& a : c.all_reduce) {
    if (a.hardware != hardware) continue;
    if (first) text += "allreduce:\n", first = false;
    const AllReduceFit& f = a.fit;
    auto per_peer = [](double us) { return us > 0 ? fmt::format(", latency_per_peer_us: {:.3f}", us) : std::string{}; };
    text += fmt::format(
        "  {}: {{one_shot: {{latency_us: {:.3f}, bandwidth_gbps: {:.1f}{}}}, two_shot: {{latency_us: {:.3f}, "
        "bandwidth_gbps: {:.1f}{}}}{}, points: {}, fit_mape: {:.4f}{}, source: \"{}\"}}\n",
        f.engine, f.one_shot_latency_us, f.one_shot_gbps, per_peer(f.one_shot_per_peer_us), f.two_shot_latency_us,
        f.two_shot_gbps, per_peer(f.two_shot_per_peer_us), perRanksYaml(f), f.points, f.fit_mape,
        f.heldout ? ", heldout: " + allReduceHeldOutYaml(f.heldout) : std::string{}, f.source);
  }
  return text;
}

}  // namespace attnsim
