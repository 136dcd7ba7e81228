// Expanding a sweep spec into groups and points, and choosing a shard's points.
#include "study/SweepPlan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>

#include "core/Error.hpp"
#include "study/SweepGroups.hpp"

namespace attnsim {

SweepShard parseShard(const std::string& text) {
  const auto slash = text.find('/');
  try {
    if (slash != std::string::npos) {
      std::size_t a = 0, b = 0;
      const int k = std::stoi(text.substr(0, slash), &a);
      const int n = std::stoi(text.substr(slash + 1), &b);
      if (a == slash && b == text.size() - slash - 1 && n >= 1 && k >= 1 && k <= n) return {k - 1, n};
    }
  } catch (const std::exception&) {
    // falls through to the usage error
  }
  throw UsageError(fmt::format("--shard {}: expected k/N with 1 <= k <= N, e.g. 1/4", text));
}

SweepShard shardFromEnvironment() {
  const std::array<std::pair<const char*, const char*>, 3> sources = {
      {{"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT"},
       {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
       {"PMI_RANK", "PMI_SIZE"}}};
  for (const auto& [rank_var, size_var] : sources) {
    const char* rank = std::getenv(rank_var);
    const char* size = std::getenv(size_var);
    if (!rank || !size) continue;
    try {
      const int k = std::stoi(rank), n = std::stoi(size);
      // Slurm numbers array tasks from its --array start (0 or 1 as the user chose): taken modulo N.
      if (n >= 1 && k >= 0) return {k % n, n};
    } catch (const std::exception&) {
      // reported below
    }
    throw UsageError(fmt::format("{}={} / {}={}: expected a rank and a count", rank_var, rank, size_var, size));
  }
  return {};
}

std::int64_t sweepId(const SweepSpec& spec, const std::string& catalog_hash) {
  const std::string identity =
      fmt::format("{:016x}|{}|{}", stableHash(spec.text), catalog_hash, spec.calibration_study);
  return static_cast<std::int64_t>(stableHash(identity) & 0x7fffffffffffffffULL);
}

std::string pointKey(const PlannedGroup& g, const SweepWorkload& w) { return g.key_prefix + "|" + w.label; }

namespace {

struct Combination {
  Scenario scenario;
  const SweepEngine* engine = nullptr;
  std::string key_prefix;
};

std::vector<Combination> combinations(const SweepSpec& spec) {
  std::vector<Combination> out;
  for (const auto& hw : spec.hardware) {
    for (const auto& model : spec.models) {
      for (const auto& engine : spec.engines) {
        for (const auto& kv : spec.kv_dtypes) {
          for (const auto& page : spec.page_sizes) {
            for (const auto tp : spec.tp) {
              for (const bool graphs : spec.cuda_graphs) {
                for (const auto& weights : spec.weight_dtypes) {
                  Combination c;
                  c.scenario.hardware = hw;
                  c.scenario.model = model;
                  c.scenario.engine = engine.engine;
                  c.scenario.kv_dtype = kv;
                  c.scenario.page_size = page;
                  c.scenario.tp = tp;
                  c.scenario.cuda_graphs = graphs;
                  c.scenario.weight_dtype = weights;
                  c.engine = &engine;
                  // The model's own weights add nothing to the key: a spec without the axis keeps its keys.
                  c.key_prefix = fmt::format("{}|{}|{}|kv={}|page={}|tp={}|graphs={}{}", hw, model, engine.engine,
                                             kv.value_or("default"), page ? std::to_string(*page) : "default", tp,
                                             graphs ? "on" : "off", weights ? "|weights=" + *weights : "");
                  out.push_back(std::move(c));
                }
              }
            }
          }
        }
      }
    }
  }
  return out;
}

bool dropped(const SweepSpec& spec, const Scenario& s, const SweepWorkload& w) {
  if (spec.drop.empty()) return false;
  const Env env = sweepFilterEnv(s, w);
  for (const auto& e : spec.drop) {
    if (e.test(env)) return true;
  }
  return false;
}

// The group scenario of a combination for one workload class.
Scenario groupScenario(const Combination& c, const SweepWorkload& w) {
  Scenario s = c.scenario;
  s.workload = w.workload;
  if (w.workload.phase == Phase::Verify) {
    s.spec.algorithm = w.spec_algorithm;
    s.spec.topk = w.workload.groups.front().tree_topk;
  }
  return s;
}

}  // namespace

SweepPlan planSweep(const SweepSpec& spec, SweepShard shard) {
  std::vector<std::string> classes;
  std::vector<std::uint32_t> class_of;
  for (const auto& w : spec.workloads) {
    const std::string cls = workloadClass(w.workload, w.spec_algorithm);
    auto it = std::find(classes.begin(), classes.end(), cls);
    if (it == classes.end()) it = classes.insert(classes.end(), cls);
    class_of.push_back(static_cast<std::uint32_t>(it - classes.begin()));
  }
  SweepPlan plan;
  const auto combos = combinations(spec);
  const auto n_workloads = static_cast<std::int64_t>(spec.workloads.size());
  plan.id_space = static_cast<std::int64_t>(combos.size()) * n_workloads;
  std::map<std::int64_t, std::uint32_t> group_index;
  for (std::size_t ci = 0; ci < combos.size(); ++ci) {
    const Combination& c = combos[ci];
    for (std::uint32_t wi = 0; wi < spec.workloads.size(); ++wi) {
      const SweepWorkload& w = spec.workloads[wi];
      if (dropped(spec, c.scenario, w)) continue;
      ++plan.total_points;
      if (stableHash(c.key_prefix + "|" + w.label) % static_cast<std::uint64_t>(shard.count) !=
          static_cast<std::uint64_t>(shard.index)) {
        continue;
      }
      const auto gid = static_cast<std::int64_t>(ci * classes.size() + class_of[wi]);
      auto [it, added] = group_index.try_emplace(gid, static_cast<std::uint32_t>(plan.groups.size()));
      if (added) {
        plan.groups.push_back({gid, groupScenario(c, w), classes[class_of[wi]], c.engine, c.key_prefix});
      }
      plan.points.push_back({static_cast<std::int64_t>(ci) * n_workloads + wi, it->second, wi});
    }
  }
  return plan;
}

}  // namespace attnsim
