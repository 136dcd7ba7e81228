#include "simulator/ServeSim.hpp"

#include <algorithm>
#include <cmath>
#include <deque>

namespace attnsim {

namespace {

struct Live {
  std::size_t index = 0;
  std::int64_t cached = 0;        // tokens whose KV is in the pool
  std::int64_t prefill_left = 0;  // prompt (and, after a preemption, generated) tokens still to prefill
  std::int64_t generated = 0;
  std::int64_t pages = 0;
  double last_token_s = 0;
};

struct Chunk {
  std::size_t live = 0;  // index into the running list
  std::int64_t tokens = 0;
};

// The simulation state: the pool, the queues and the outcomes.
class Engine {
 public:
  Engine(const std::vector<ServeRequest>& requests, const SchedulerConfig& c, const ServeClient& client,
         ServeResult& out)
      : req_(requests), c_(c), out_(out), free_pages_(c.kv_tokens / c.page_size), limited_(client.max_concurrency > 0) {
    if (limited_) {
      const auto n = std::min<std::size_t>(static_cast<std::size_t>(client.max_concurrency), requests.size());
      slots_.assign(n, 0.0);  // every slot free from the start
    }
  }

  void run(const StepTimer& timer);

 private:
  std::int64_t pagesFor(std::int64_t tokens) const { return (tokens + c_.page_size - 1) / c_.page_size; }
  bool reserve(Live& l, std::int64_t tokens) {
    const std::int64_t need = pagesFor(tokens) - l.pages;
    if (need > free_pages_) return false;
    if (need > 0) {
      free_pages_ -= need;
      l.pages += need;
    }
    return true;
  }
  void release(Live& l) {
    free_pages_ += l.pages;
    l.pages = 0;
  }
  void admitArrivals();
  // Tokens of a prefill to run now: a chunk of the budget, or (chunking off) the whole rest when it
  // fits or the step has nothing else; 0 when it must wait.
  [[nodiscard]] std::int64_t prefillTokens(std::int64_t left, std::int64_t budget) const {
    if (c_.chunked_prefill) return std::min(left, budget);
    return left <= budget || (prefills_.empty() && decodes_.empty()) ? left : 0;
  }
  void preemptNewest();
  void scheduleRunning(std::int64_t& budget);
  void scheduleWaiting(std::int64_t& budget);
  void formBatch();
  [[nodiscard]] Workload workload() const;
  void finishStep(double end_s, double step_s);
  void complete(std::size_t slot, double end_s);

  const std::vector<ServeRequest>& req_;
  const SchedulerConfig& c_;
  ServeResult& out_;
  std::int64_t free_pages_;
  std::size_t next_arrival_ = 0;
  double now_ = 0;
  std::deque<Live> waiting_;
  std::vector<Live> running_;
  std::vector<Chunk> prefills_;
  std::vector<std::size_t> decodes_;
  std::vector<bool> done_;
  bool limited_ = false;      // the client holds at most max_concurrency requests in flight
  std::deque<double> slots_;  // the client's free slots, by the time each freed (oldest first)
};

void Engine::admitArrivals() {
  while (next_arrival_ < req_.size() && req_[next_arrival_].arrival_s <= now_ && (!limited_ || !slots_.empty())) {
    const ServeRequest& r = req_[next_arrival_];
    if (limited_) {  // sent when it is due and a slot is free, in order (the semaphore is FIFO)
      out_.requests[next_arrival_].arrival_s = std::max(r.arrival_s, slots_.front());
      slots_.pop_front();
    }
    if (pagesFor(r.prompt_tokens + r.output_tokens) > c_.kv_tokens / c_.page_size) {
      ++out_.rejected;  // never fits the pool, whatever else runs
      if (limited_) slots_.push_back(now_);
    } else {
      Live l;
      l.index = next_arrival_;
      l.prefill_left = r.prompt_tokens;
      waiting_.push_back(l);
    }
    ++next_arrival_;
  }
}

// Recompute preemption: the newest running request gives its pages back and waits in front.
void Engine::preemptNewest() {
  Live l = running_.back();
  running_.pop_back();
  release(l);
  l.prefill_left = req_[l.index].prompt_tokens + l.generated;
  l.cached = 0;
  ++out_.requests[l.index].preemptions;
  ++out_.preemptions;
  waiting_.push_front(l);
}

void Engine::scheduleRunning(std::int64_t& budget) {
  for (std::size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Live& l = running_[i];
    const std::int64_t tokens = l.prefill_left > 0 ? prefillTokens(l.prefill_left, budget) : 1;
    if (tokens == 0) continue;
    while (!reserve(l, l.cached + tokens)) {
      if (running_.size() == i + 1) {  // it is the newest: it preempts itself
        preemptNewest();
        return;
      }
      preemptNewest();
    }
    budget -= tokens;
    if (l.prefill_left > 0) {
      prefills_.push_back({i, tokens});
    } else {
      decodes_.push_back(i);
    }
  }
}

void Engine::scheduleWaiting(std::int64_t& budget) {
  while (!waiting_.empty() && budget > 0 && static_cast<std::int64_t>(running_.size()) < c_.max_running_requests) {
    Live& l = waiting_.front();
    const std::int64_t tokens = prefillTokens(l.prefill_left, budget);
    if (tokens == 0 || !reserve(l, l.cached + tokens)) break;
    RequestOutcome& o = out_.requests[l.index];
    if (o.scheduled_s < o.arrival_s) o.scheduled_s = now_;
    budget -= tokens;
    running_.push_back(l);
    waiting_.pop_front();
    prefills_.push_back({running_.size() - 1, tokens});
  }
}

void Engine::formBatch() {
  prefills_.clear();
  decodes_.clear();
  std::int64_t budget = c_.max_batched_tokens;
  if (c_.mixed_batches) {  // running requests keep their place; new prefills fill the rest of the budget
    scheduleRunning(budget);
    scheduleWaiting(budget);
    return;
  }
  // Separate prefill and decode steps: a prefill step whenever a prefill can start or continue.
  const bool partial = std::any_of(running_.begin(), running_.end(), [](const Live& l) { return l.prefill_left > 0; });
  if (partial || !waiting_.empty()) {
    for (std::size_t i = 0; i < running_.size() && budget > 0; ++i) {
      Live& l = running_[i];
      if (l.prefill_left == 0) continue;
      const std::int64_t tokens = prefillTokens(l.prefill_left, budget);
      if (tokens == 0 || !reserve(l, l.cached + tokens)) break;
      budget -= tokens;
      prefills_.push_back({i, tokens});
    }
    scheduleWaiting(budget);
    if (!prefills_.empty()) return;
  }
  scheduleRunning(budget);
}

Workload Engine::workload() const {
  Workload w;
  std::int64_t decode_context = 0;
  for (const std::size_t i : decodes_) decode_context += running_[i].cached + 1;
  bool fresh = true;  // every chunk starts a prompt: a plain prefill
  std::int64_t tokens = 0, context = 0;
  for (const Chunk& ch : prefills_) {
    const Live& l = running_[ch.live];
    fresh = fresh && l.cached == 0 && ch.tokens == l.prefill_left;
    tokens += ch.tokens;
    context += l.cached + ch.tokens;
  }
  const auto np = static_cast<std::int64_t>(prefills_.size());
  const auto nd = static_cast<std::int64_t>(decodes_.size());
  if (np > 0) w.groups.push_back({np, std::max<std::int64_t>(1, tokens / np), std::max<std::int64_t>(1, context / np)});
  if (nd > 0) w.groups.push_back({nd, 1, std::max<std::int64_t>(1, decode_context / nd)});
  w.phase = np == 0 ? Phase::Decode : (nd == 0 && fresh ? Phase::Prefill : Phase::Extend);
  return w;
}

void Engine::complete(std::size_t slot, double end_s) {
  Live& l = running_[slot];
  RequestOutcome& o = out_.requests[l.index];
  ++l.generated;
  if (l.generated == 1) {
    o.first_token_s = end_s;
  } else {
    out_.itl_samples.push_back(end_s - l.last_token_s);
  }
  l.last_token_s = end_s;
  if (l.generated >= o.output_tokens) {
    o.finish_s = end_s;
    release(l);
    done_[slot] = true;
    if (limited_) slots_.push_back(end_s);
  }
}

void Engine::finishStep(double end_s, double step_s) {
  out_.timeline.push_back({now_, static_cast<std::int64_t>(running_.size()), static_cast<std::int64_t>(waiting_.size()),
                           0, c_.kv_tokens - free_pages_ * c_.page_size});
  out_.in_system_seconds += static_cast<double>(running_.size() + waiting_.size()) * step_s;
  std::int64_t batch_tokens = 0;
  done_.assign(running_.size(), false);
  for (const Chunk& ch : prefills_) {
    Live& l = running_[ch.live];
    l.cached += ch.tokens;
    l.prefill_left -= ch.tokens;
    batch_tokens += ch.tokens;
    if (l.prefill_left == 0) complete(ch.live, end_s);  // the prefill's last chunk yields a token
  }
  for (const std::size_t i : decodes_) {
    ++running_[i].cached;
    ++batch_tokens;
    complete(i, end_s);
  }
  out_.timeline.back().batch_tokens = batch_tokens;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < running_.size(); ++i) {
    if (!done_[i]) running_[kept++] = running_[i];
  }
  running_.resize(kept);
}

void Engine::run(const StepTimer& timer) {
  while (next_arrival_ < req_.size() || !waiting_.empty() || !running_.empty()) {
    if (waiting_.empty() && running_.empty()) now_ = std::max(now_, req_[next_arrival_].arrival_s);
    admitArrivals();
    formBatch();
    if (prefills_.empty() && decodes_.empty()) {
      if (next_arrival_ >= req_.size()) break;  // nothing runnable and nothing to come (cannot happen)
      now_ = std::max(now_, req_[next_arrival_].arrival_s);
      continue;
    }
    const StepTime st = timer(workload());
    const double step_s = st.us * 1e-6;
    ++out_.steps;
    if (st.mode == GraphMode::Full) ++out_.full_graph_steps;
    if (st.mode == GraphMode::Piecewise) ++out_.piecewise_steps;
    finishStep(now_ + step_s, step_s);
    now_ += step_s;
  }
  out_.makespan_s = now_;
}

}  // namespace

Percentiles percentilesOf(std::vector<double> values) {
  Percentiles p;
  if (values.empty()) return p;
  std::sort(values.begin(), values.end());
  auto at = [&](double q) {
    const auto i = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size()))) - 1;
    return values[std::min(i, values.size() - 1)];
  };
  double sum = 0;
  for (const double v : values) sum += v;
  p.mean = sum / static_cast<double>(values.size());
  p.p50 = at(0.50);
  p.p90 = at(0.90);
  p.p99 = at(0.99);
  p.max = values.back();
  return p;
}

namespace {

void aggregate(const SchedulerConfig& c, const ServeSlo& slo, ServeResult& r) {
  std::vector<double> ttft, tpot, e2e, queue;
  std::int64_t tokens = 0, input = 0, good = 0, served = 0;
  for (const auto& o : r.requests) {
    if (o.finish_s <= 0) continue;  // rejected
    ++served;
    ttft.push_back(o.ttft());
    if (o.output_tokens > 1) tpot.push_back(o.tpot());
    e2e.push_back(o.e2e());
    queue.push_back(o.queueing());
    tokens += o.output_tokens;
    input += o.prompt_tokens;
    if (o.ttft() <= slo.ttft_s && o.tpot() <= slo.tpot_s && o.e2e() <= slo.e2e_s) ++good;
  }
  r.ttft = percentilesOf(ttft);
  r.tpot = percentilesOf(tpot);
  r.e2e = percentilesOf(e2e);
  r.queueing = percentilesOf(queue);
  r.itl = percentilesOf(std::move(r.itl_samples));
  r.itl_samples.clear();
  const double span = r.makespan_s > 0 ? r.makespan_s : 1;
  r.completed = served;
  r.total_input_tokens = input;
  r.total_output_tokens = tokens;
  r.output_tokens_per_s = static_cast<double>(tokens) / span;
  r.total_tokens_per_s = static_cast<double>(tokens + input) / span;
  r.requests_per_s = static_cast<double>(served) / span;
  r.goodput_rps = static_cast<double>(good) / span;
  r.slo_attainment = served > 0 ? static_cast<double>(good) / static_cast<double>(served) : 0;
  r.time_avg_in_system = r.in_system_seconds / span;
  double batch = 0, kv = 0;
  for (const auto& p : r.timeline) {
    batch += static_cast<double>(p.running);
    const double use = c.kv_tokens > 0 ? static_cast<double>(p.kv_used_tokens) / static_cast<double>(c.kv_tokens) : 0;
    kv += use;
    r.peak_kv_use = std::max(r.peak_kv_use, use);
  }
  const double n = r.timeline.empty() ? 1 : static_cast<double>(r.timeline.size());
  r.mean_batch = batch / n;
  r.mean_kv_use = kv / n;
}

}  // namespace

ServeResult simulateServing(const std::vector<ServeRequest>& requests, const SchedulerConfig& config,
                            const StepTimer& timer, const ServeSlo& slo, const ServeClient& client) {
  ServeResult r;
  r.requests.resize(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    r.requests[i].arrival_s = requests[i].arrival_s;
    r.requests[i].scheduled_s = -1;
    r.requests[i].prompt_tokens = requests[i].prompt_tokens;
    r.requests[i].output_tokens = requests[i].output_tokens;
  }
  Engine(requests, config, client, r).run(timer);
  aggregate(config, slo, r);
  return r;
}

}  // namespace attnsim
