// The sweep runner: worker threads evaluate chunks of points into batches; the calling thread
// writes them, committing every few thousand points or second.
#include "study/Sweep.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "catalog/Catalog.hpp"
#include "study/SweepStore.hpp"

namespace attnsim {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kChunkPoints = 256;

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The batch of `w` against the pool of `split`: 1 fits, 0 does not (the reason: "weights" when the
// weights leave no pool, "kv_cache" when the batch's KV exceeds it), and the KV MiB per GPU.
void memoryVerdict(const MemorySplit& split, const Workload& w, std::int8_t& fits, const char*& reason, double& need,
                   double& have) {
  need = batchKvMib(split, w);
  have = std::max(0.0, split.kv_pool_mib);
  const bool weights = split.weightsFit();
  fits = weights && need <= have ? 1 : 0;
  reason = fits ? nullptr : weights ? "kv_cache" : "weights";
}

}  // namespace

void evaluateSweepPoint(const SweepGroup& g, const SweepWorkload& w, PointRow& row, std::vector<PredictionRow>& out) {
  thread_local std::vector<const Predictor*> predictors;
  thread_local std::vector<std::int32_t> slots;
  thread_local std::vector<StepPrediction> steps;
  predictors.clear();
  slots.clear();
  for (std::size_t slot = 0; slot < g.candidates.size(); ++slot) {
    if (!g.candidates[slot].predictor) continue;
    predictors.push_back(&*g.candidates[slot].predictor);
    slots.push_back(static_cast<std::int32_t>(slot));
  }
  steps.resize(predictors.size());
  Predictor::predictSteps(predictors, w.workload, steps);
  row.valid = !g.refusal;
  row.memory_fits = -1;
  row.memory_reason = nullptr;
  if (g.memory) {
    memoryVerdict(*g.memory, w.workload, row.memory_fits, row.memory_reason, row.memory_need_mib, row.memory_have_mib);
  }
  row.first = static_cast<std::uint32_t>(out.size());
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const StepPrediction& p = steps[i];
    const bool graphs = g.scenario.cuda_graphs;
    PredictionRow& r = out.emplace_back();
    r = {slots[i],
         0,
         p.attention_us,
         p.eager_us,
         p.graph_us,
         graphs ? p.graph_us : p.eager_us,
         boundName(p.bound),
         graphModeName(p.graph_mode),
         graphs ? p.graph_band : p.eager_band,
         graphs ? p.graph_tie_band : p.eager_tie_band,
         p.provenance};
    if (const auto& split = g.candidates[static_cast<std::size_t>(slots[i])].memory) {
      memoryVerdict(*split, w.workload, r.memory_fits, r.memory_reason, r.memory_need_mib, r.memory_have_mib);
    }
  }
  row.count = static_cast<std::uint32_t>(out.size()) - row.first;
  const auto begin = out.begin() + row.first;
  std::sort(begin, out.end(), [&](const PredictionRow& a, const PredictionRow& b) {
    if (a.step_us != b.step_us) return a.step_us < b.step_us;
    return g.candidates[a.slot].backend < g.candidates[b.slot].backend;
  });
  row.best_slot = row.count ? begin->slot : -1;
  row.default_slot = -1;
  for (auto it = begin; it != out.end(); ++it) {
    it->rank = static_cast<std::int32_t>(it - begin) + 1;
    if (it->slot == g.default_slot) {
      row.default_slot = it->slot;
      row.default_rank = it->rank;
      row.regret = it->step_us / begin->step_us - 1;
      row.regret_us = it->step_us - begin->step_us;
      row.default_within_band = withinBands(begin->step_us, begin->tie_band, it->step_us, it->tie_band);
    }
  }
}

namespace {

// The queue between workers and the writer, and the pool of batches they pass around.
class Pipeline {
 public:
  Pipeline(const SweepSpec& spec, const SweepPlan& plan, const std::vector<SweepGroup>& groups,
           std::vector<std::uint32_t> todo, int workers, const std::atomic<bool>* stop)
      : spec_(spec), plan_(plan), groups_(groups), todo_(std::move(todo)), workers_left_(workers), stop_(stop) {}

  void work() {
    try {
      SweepBatch* batch = acquire();
      for (std::size_t begin = next_.fetch_add(kChunkPoints); begin < todo_.size() && !stopped();
           begin = next_.fetch_add(kChunkPoints)) {
        for (std::size_t i = begin; i < std::min(begin + kChunkPoints, todo_.size()); ++i) {
          const PlannedPoint& p = plan_.points[todo_[i]];
          PointRow& row = batch->points.emplace_back();
          row.id = p.id;
          row.group = p.group;
          row.workload = p.workload;
          evaluateSweepPoint(groups_[p.group], spec_.workloads[p.workload], row, batch->predictions);
        }
        push(batch);
        batch = acquire();
      }
      release(batch);
    } catch (...) {
      const std::lock_guard lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
    const std::lock_guard lock(mutex_);
    --workers_left_;
    ready_.notify_all();
  }

  // The next full batch; null when every worker has finished and the queue is empty.
  SweepBatch* pop(double wait_seconds) {
    std::unique_lock lock(mutex_);
    ready_.wait_for(lock, std::chrono::duration<double>(wait_seconds),
                    [&] { return !full_.empty() || workers_left_ == 0; });
    if (full_.empty()) return nullptr;
    SweepBatch* b = full_.front();
    full_.pop_front();
    space_.notify_one();
    return b;
  }
  [[nodiscard]] bool finished() {
    const std::lock_guard lock(mutex_);
    return workers_left_ == 0 && full_.empty();
  }
  void release(SweepBatch* b) {
    b->clear();
    const std::lock_guard lock(mutex_);
    free_.push_back(b);
  }
  void rethrow() {
    if (error_) std::rethrow_exception(error_);
  }
  [[nodiscard]] bool stopped() const { return (stop_ && stop_->load()) || failed_.load(); }
  void fail() { failed_ = true; }

 private:
  SweepBatch* acquire() {
    const std::lock_guard lock(mutex_);
    if (free_.empty()) return owned_.emplace_back(std::make_unique<SweepBatch>()).get();
    SweepBatch* b = free_.back();
    free_.pop_back();
    return b;
  }
  void push(SweepBatch* b) {
    std::unique_lock lock(mutex_);
    space_.wait(lock, [&] { return full_.size() < 16 || failed_.load(); });
    full_.push_back(b);
    ready_.notify_one();
  }

  const SweepSpec& spec_;
  const SweepPlan& plan_;
  const std::vector<SweepGroup>& groups_;
  const std::vector<std::uint32_t> todo_;
  std::atomic<std::size_t> next_{0};
  int workers_left_;
  const std::atomic<bool>* stop_;
  std::atomic<bool> failed_{false};
  std::mutex mutex_;
  std::condition_variable ready_, space_;
  std::deque<SweepBatch*> full_;
  std::vector<SweepBatch*> free_;
  std::vector<std::unique_ptr<SweepBatch>> owned_;
  std::exception_ptr error_;
};

// Runs fn(i) for i < n on `jobs` threads.
template <class Fn>
void parallelFor(std::size_t n, int jobs, Fn fn) {
  std::atomic<std::size_t> next{0};
  std::exception_ptr error;
  std::mutex m;
  auto body = [&] {
    try {
      for (std::size_t i = next++; i < n; i = next++) fn(i);
    } catch (...) {
      const std::lock_guard lock(m);
      error = std::current_exception();
      next = n;
    }
  };
  std::vector<std::jthread> threads;
  threads.reserve(static_cast<std::size_t>(jobs));
  for (int t = 1; t < jobs; ++t) threads.emplace_back(body);
  body();
  threads.clear();
  if (error) std::rethrow_exception(error);
}

// Writes batches as they come; returns the points and predictions written.
void writeAll(Pipeline& pipe, SweepWriter& writer, const SweepOptions& o, SweepProgress& progress,
              Clock::time_point start) {
  auto opened = start, reported = start;
  std::int64_t pending = 0;
  while (!pipe.finished()) {
    SweepBatch* b = pipe.pop(0.2);
    if (b) {
      if (!writer.open()) writer.begin(), opened = Clock::now();
      writer.write(*b);
      pending += static_cast<std::int64_t>(b->points.size());
      progress.written += static_cast<std::int64_t>(b->points.size());
      progress.predictions += static_cast<std::int64_t>(b->predictions.size());
      pipe.release(b);
    }
    if (writer.open() && (pending >= o.commit_points || secondsSince(opened) >= o.commit_seconds)) {
      writer.commit();
      progress.done += pending;
      pending = 0;
    }
    if (o.progress && secondsSince(reported) >= 0.25) {
      progress.seconds = secondsSince(start);
      SweepProgress shown = progress;
      shown.done += pending;  // evaluated and written, committed within the second
      o.progress(shown);
      reported = Clock::now();
    }
  }
  if (writer.open()) writer.commit();
  progress.done += pending;
  progress.seconds = secondsSince(start);
}

}  // namespace

SweepSummary runSweep(const Catalog& catalog, const SweepSpec& spec, Store& store, const SweepOptions& o) {
  const auto start = Clock::now();  // the summary's time covers planning, selection and writing
  SweepSummary summary;
  summary.sweep_id = sweepId(spec, catalog.contentHash());
  const SweepPlan plan = planSweep(spec, o.shard);
  summary.points = plan.total_points;
  writeSweepHeader(store, summary.sweep_id, spec, catalog.contentHash(), o.program_version, plan.total_points);
  const std::vector<char> stored = storedPoints(store, summary.sweep_id, plan.id_space);
  std::vector<std::uint32_t> todo;
  std::vector<char> needed(plan.groups.size(), 0);
  for (std::uint32_t i = 0; i < plan.points.size(); ++i) {
    if (stored[static_cast<std::size_t>(plan.points[i].id)]) continue;
    todo.push_back(i);
    needed[plan.points[i].group] = 1;
  }
  summary.already_done = static_cast<std::int64_t>(plan.points.size() - todo.size());
  summary.progress.total = static_cast<std::int64_t>(plan.points.size());
  summary.progress.done = summary.already_done;
  const int jobs = std::max(1, o.jobs);
  std::vector<SweepGroup> groups(plan.groups.size());
  // Each model under each weight dtype of the spec (the spec checked the dtypes; nullopt: the model's own).
  std::map<std::pair<std::string, std::optional<std::string>>, std::shared_ptr<const ModelSpec>> models;
  for (const auto& id : spec.models) {
    for (const auto& weights : spec.weight_dtypes) {
      auto model = std::make_shared<ModelSpec>(catalog.model(id));
      if (weights) model->weight_dtype = *weights;
      models[{id, weights}] = std::move(model);
    }
  }
  parallelFor(plan.groups.size(), jobs, [&](std::size_t i) {
    if (!needed[i]) return;
    const PlannedGroup& pg = plan.groups[i];
    const auto& model = models.at({pg.scenario.model, pg.scenario.weight_dtype});
    groups[i] = evaluateGroup(catalog, pg.scenario, model, pg.engine->backends);
    groups[i].id = pg.id;
    groups[i].workload_class = pg.workload_class;
  });
  summary.groups = std::count(needed.begin(), needed.end(), 1);
  writeGroups(store, summary.sweep_id, plan, groups, needed);
  const std::int64_t run = beginRun(store, summary.sweep_id, o.shard, jobs, o.program_version);
  Pipeline pipe(spec, plan, groups, std::move(todo), jobs, o.stop);
  SweepWriter writer(store, summary.sweep_id, spec, plan);
  {
    std::vector<std::jthread> workers;
    workers.reserve(static_cast<std::size_t>(jobs));
    for (int t = 0; t < jobs; ++t) workers.emplace_back([&pipe] { pipe.work(); });
    try {
      writeAll(pipe, writer, o, summary.progress, start);
    } catch (...) {
      pipe.fail();
      while (SweepBatch* b = pipe.pop(0.05)) pipe.release(b);
      throw;
    }
  }
  pipe.rethrow();
  summary.interrupted = summary.progress.done < summary.progress.total;
  endRun(store, run, summary.progress.written, summary.interrupted ? "interrupted" : "done");
  return summary;
}

}  // namespace attnsim
