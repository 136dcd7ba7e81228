// The step's two timelines (CPU launching, GPU stream running) over a StepGraph: the literal walk,
// the same walk without predecessors, and many step times of one graph computed side by side.
#include <algorithm>
#include <cmath>

#include "cost/StepModel.hpp"

namespace attnsim {

namespace {

// The timeline of simulateStep. kReadPredecessors: wait for every predecessor's end (the literal DAG
// walk); otherwise the stream's free time stands for them, which is the same number when durations
// and gaps are not negative (simulateStep checks that first).
template <bool kReadPredecessors>
StepTimeline walk(const StepGraph& graph, const StepCosts& costs, GraphMode mode, const LaunchCosts& launch) {
  StepTimeline t;
  const auto& schedule = graph.schedule();
  [[maybe_unused]] std::vector<double>* end = nullptr;
  if constexpr (kReadPredecessors) {
    thread_local std::vector<double> ends;
    ends.assign(schedule.size(), 0.0);
    end = &ends;
  }
  double cpu = costs.host_plan_us;
  double gpu_free = 0;
  bool piece_open = false;
  if (mode == GraphMode::Full) {
    cpu += launch.graph_replay_base_us;
    t.launches = 1;
  }
  for (std::size_t i = 0; i < schedule.size(); ++i) {
    const ScheduledNode node = schedule[i];
    const bool attention = node.launch == NodeLaunch::Attention;
    const double dur = attention ? costs.attention_us[node.slot - kStepOpCount] : costs.op_us[node.slot];
    const int launches = attention ? costs.attention_launches[node.slot - kStepOpCount] : costs.op_launches[node.slot];
    const int gapped =
        attention ? costs.attention_gapped_launches[node.slot - kStepOpCount] : costs.op_launches[node.slot];
    double ready = 0;
    if constexpr (kReadPredecessors) {
      for (const int p : graph.predecessors(i)) ready = std::max(ready, (*end)[static_cast<std::size_t>(p)]);
    }
    // An eager op costs the host kernel_launch_us (PyTorch's dispatch and launch of the op, fitted
    // per DAG node: a split-KV merge launched from inside the op adds no Python dispatch), and even
    // with the host ahead the GPU idles eager_gap_us before each stream-launched kernel. A replayed
    // graph costs the host one graph launch (base) per graph or piece; on the GPU each of its
    // kernels starts graph_replay_per_node_us after the previous one ends. Both gaps are measured
    // the same way (measurements/eager_gap.py).
    double gap = 0;
    if (mode == GraphMode::Eager || (mode == GraphMode::Piecewise && attention)) {
      cpu += launch.kernel_launch_us;
      t.launches += launches;
      piece_open = false;
      gap = launch.eager_gap_us * gapped;
    } else {
      if (mode == GraphMode::Piecewise && !piece_open) {
        cpu += launch.graph_replay_base_us;
        t.launches += 1;
        piece_open = true;
      }
      gap = launch.graph_replay_per_node_us * gapped;
    }
    double start = std::max(cpu, gpu_free + gap);
    if constexpr (kReadPredecessors) {
      start = std::max(start, ready + gap);
      (*end)[i] = start + dur;
    }
    gpu_free = start + dur;
    t.gpu_busy_us += dur;
    t.by_category[node.category] += dur;
  }
  t.step_us = gpu_free;
  t.cpu_us = cpu;
  t.nodes = static_cast<int>(schedule.size());
  return t;
}

// Not negative and not NaN (a negative zero counts as negative: adding it is not exact).
bool nonNegative(double x) { return !std::isnan(x) && !std::signbit(x); }

// Whether the stream's free time bounds every predecessor's end: every node's duration and gap, and
// the CPU's launch costs, are not negative.
bool streamOrdered(const StepCosts& costs, const LaunchCosts& launch) {
  const auto ok = [](double x) { return nonNegative(x); };
  const auto ok_launches = [](int n) { return n >= 0; };
  return nonNegative(costs.host_plan_us) && nonNegative(launch.kernel_launch_us) &&
         nonNegative(launch.graph_replay_base_us) && nonNegative(launch.graph_replay_per_node_us) &&
         nonNegative(launch.eager_gap_us) && std::all_of(costs.op_us.begin(), costs.op_us.end(), ok) &&
         std::all_of(costs.attention_us.begin(), costs.attention_us.end(), ok) &&
         std::all_of(costs.op_launches.begin(), costs.op_launches.end(), ok_launches) &&
         std::all_of(costs.attention_launches.begin(), costs.attention_launches.end(), ok_launches) &&
         costs.attention_gapped_launches.size() == costs.attention_launches.size();
}

}  // namespace

StepTimeline simulateStepReference(const StepGraph& graph, const StepCosts& costs, GraphMode mode,
                                   const LaunchCosts& launch) {
  return walk<true>(graph, costs, mode, launch);
}

StepTimeline simulateStep(const StepGraph& graph, const StepCosts& costs, GraphMode mode, const LaunchCosts& launch) {
  return streamOrdered(costs, launch) ? walk<false>(graph, costs, mode, launch)
                                      : walk<true>(graph, costs, mode, launch);
}

std::array<double, 4> kernelTimeByCategory(const StepGraph& graph, const StepCosts& costs) {
  std::array<double, 4> by_category{};
  for (const ScheduledNode node : graph.schedule()) {
    const bool attention = node.launch == NodeLaunch::Attention;
    by_category.at(node.category) += attention ? costs.attention_us[node.slot - kStepOpCount] : costs.op_us[node.slot];
  }
  return by_category;
}

namespace {

// Per-thread tables of simulateStepTimes, lane-minor: row r of a table is lanes() doubles.
struct LaneTables {
  std::vector<double> dur, gap, cpu_add, cpu, gpu_free;
  std::vector<std::size_t> walked;  // lanes simulateStep walks alone (negative or NaN inputs)

  void fill(const StepGraph& graph, std::span<const StepLane> lanes, const LaunchCosts& launch) {
    const std::size_t n = lanes.size();
    dur.assign(graph.slots() * n, 0.0);
    gap.assign(graph.slots() * n, 0.0);
    cpu_add.assign(3 * n, 0.0);
    cpu.assign(n, 0.0);
    gpu_free.assign(n, 0.0);
    walked.clear();
    for (std::size_t l = 0; l < n; ++l) {
      const StepCosts& c = *lanes[l].costs;
      const GraphMode mode = lanes[l].mode;
      if (!streamOrdered(c, launch)) walked.push_back(l);
      // The same products and sums as walk(): a gap is the mode's per-kernel gap times the node's launches.
      const double op_gap = mode == GraphMode::Eager ? launch.eager_gap_us : launch.graph_replay_per_node_us;
      const double attention_gap = mode == GraphMode::Full ? launch.graph_replay_per_node_us : launch.eager_gap_us;
      for (std::size_t s = 0; s < kStepOpCount; ++s) {
        dur[s * n + l] = c.op_us[s];
        gap[s * n + l] = op_gap * c.op_launches[s];
      }
      for (std::size_t a = 0; a < c.attention_us.size() && kStepOpCount + a < graph.slots(); ++a) {
        dur[(kStepOpCount + a) * n + l] = c.attention_us[a];
        gap[(kStepOpCount + a) * n + l] = attention_gap * c.attention_gapped_launches[a];
      }
      // Adding zero leaves a non-negative time unchanged, so every mode adds a per-kind CPU cost.
      const double eager = launch.kernel_launch_us;
      const std::array<double, 3> add = mode == GraphMode::Eager  ? std::array{eager, eager, eager}
                                        : mode == GraphMode::Full ? std::array{0.0, 0.0, 0.0}
                                                                  : std::array{eager, launch.graph_replay_base_us, 0.0};
      for (std::size_t k = 0; k < 3; ++k) cpu_add[k * n + l] = add.at(k);
      cpu[l] = c.host_plan_us;
      if (mode == GraphMode::Full) cpu[l] += launch.graph_replay_base_us;
    }
  }
};

}  // namespace

void simulateStepTimes(const StepGraph& graph, std::span<const StepLane> lanes, const LaunchCosts& launch,
                       std::span<double> step_us) {
  thread_local LaneTables t;
  t.fill(graph, lanes, launch);
  const std::size_t n = lanes.size();
  double* cpu = t.cpu.data();
  double* gpu_free = t.gpu_free.data();
  for (const ScheduledNode node : graph.schedule()) {
    const double* dur = t.dur.data() + node.slot * n;
    const double* gap = t.gap.data() + node.slot * n;
    const double* add = t.cpu_add.data() + static_cast<std::size_t>(node.launch) * n;
    for (std::size_t l = 0; l < n; ++l) {
      cpu[l] += add[l];
      const double stream = gpu_free[l] + gap[l];
      gpu_free[l] = (cpu[l] < stream ? stream : cpu[l]) + dur[l];
    }
  }
  for (std::size_t l = 0; l < n; ++l) step_us[l] = gpu_free[l];
  for (const std::size_t l : t.walked) step_us[l] = walk<true>(graph, *lanes[l].costs, lanes[l].mode, launch).step_us;
}

}  // namespace attnsim
