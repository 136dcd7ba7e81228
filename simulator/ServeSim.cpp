#include "simulator/ServeSim.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>

#include "simulator/ServeEngine.hpp"
#include "simulator/ServeMetrics.hpp"

namespace attnsim {

namespace servesim {

void ServeEngine::sendDue(double t, double counted_to) {
  while (next_send_ < req_.size()) {
    const double sent = sendTime(next_send_);
    if (sent > t || std::isinf(sent)) break;
    if (limited_) slots_.pop_front();  // sent when it is due and a slot is free, in order (the semaphore is FIFO)
    out_.requests[next_send_].arrival_s = sent;
    ready_[next_send_] = inbound(sent);
    out_.in_system_seconds += std::max(0.0, counted_to - sent);  // in the system from its send
    ++next_send_;
  }
}

double ServeEngine::nextVisible() {
  if (next_arrival_ == next_send_) sendDue(sendTime(next_send_), now_);
  return next_arrival_ < next_send_ ? ready_[next_arrival_] : std::numeric_limits<double>::infinity();
}

void ServeEngine::admitArrivals(double seen_by) {
  sendDue(now_, now_);
  while (next_arrival_ < next_send_ && ready_[next_arrival_] <= seen_by) {
    const ServeRequest& r = req_[next_arrival_];
    if (pagesFor(r.prompt_tokens + r.output_tokens + decodeSlots() - 1) > c_.kv_tokens / c_.page_size) {
      ++out_.rejected;  // never fits the pool, whatever else runs
      if (limited_) freeSlot(now_);
    } else {
      Live l;
      l.index = next_arrival_;
      l.prefill_left = r.prompt_tokens;
      waiting_.push_back(l);
    }
    ++next_arrival_;
  }
}

void ServeEngine::idleUntil(double t) {
  if (t <= now_) return;
  // Requests sent but still on their way through the client and the front end are in the system.
  for (std::size_t i = next_arrival_; i < next_send_; ++i)
    out_.in_system_seconds += std::max(0.0, t - std::max(now_, out_.requests[i].arrival_s));
  now_ = t;
}

// Recompute preemption: the newest running request gives its pages back and waits in front.
void ServeEngine::giveBackForRecompute(Live& l) {
  const bool own = l.shared_pages == 0 || l.cache_key == ownKey(l.index);  // not pages of a group's prefix
  if (c_.keep_preempted_pages && c_.prefix_caching && own) {
    keepForRecompute(l);
  } else {
    release(l);
  }
  l.prefill_left = req_[l.index].prompt_tokens + l.generated;
  l.cached = 0;
  ++out_.requests[l.index].preemptions;
  ++out_.preemptions;
}

void ServeEngine::preemptNewest() {
  Live l = running_.back();
  running_.pop_back();
  preempted_ = true;
  giveBackForRecompute(l);
  waiting_.push_front(l);
}

void ServeEngine::scheduleRunning(std::int64_t& budget) {
  if (c_.preemption == Preemption::Retract && c_.new_token_ratio) retractForDecode();
  for (std::size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Live& l = running_[i];
    const bool decode = l.prefill_left == 0;
    const std::int64_t tokens = decode ? decodeTokens() : prefillTokens(l, budget);
    if (tokens == 0) continue;
    while (!reserve(l, l.cached + (decode ? decodeSlots() : tokens))) {
      if (running_.size() == i + 1) {  // it is the newest: it preempts itself
        preemptNewest();
        return;
      }
      preemptNewest();
    }
    budget -= tokens;
    if (l.prefill_left > 0) {
      schedulePrefill(l, i, tokens);
    } else {
      decodes_.push_back(i);
    }
  }
}

void ServeEngine::scheduleWaiting(std::int64_t& budget) {
  const bool by_ratio = c_.new_token_ratio.has_value();
  double held = by_ratio ? admissionReserve() : 0;  // pool kept back for running requests' outputs
  std::size_t k = 0;  // the first waiting request whose replica may still prefill (the front one without replicas)
  while (k < waiting_.size() && budget > 0 && static_cast<std::int64_t>(running_.size()) < c_.max_running_requests) {
    Live& l = waiting_[k];
    if (replicaFull(l)) {
      ++k;
      continue;
    }
    const PrefixHit found = prefixHit(l);
    const std::int64_t hit = found.pages;
    if (by_ratio && !running_.empty()) {  // an idle engine admits what fits the pool (no livelock)
      // The prefix it matches is pinned: not evictable for it (PrefillAdder._lock_node).
      const std::int64_t pinned = hit > 0 && !cache_.inUse(found.key) ? cache_.pages(found.key) : 0;
      const double room = static_cast<double>((availablePages() - pinned) * c_.page_size) - held;
      const std::int64_t extend = l.prefill_left - hit * c_.page_size;
      if (static_cast<double>(extend + clippedLeft(l) + c_.page_size) >= room) break;
    }
    if (hit > 0) usePrefix(l, found);
    const std::int64_t tokens = prefillTokens(l, budget);
    if (tokens == 0 || !reserve(l, l.cached + tokens)) {
      if (hit > 0) {  // not admitted: it gives the prefix back and waits as it was
        release(l);
        l.cached = 0;
        l.prefill_left += hit * c_.page_size;
      }
      break;
    }
    if (by_ratio && tokens == l.prefill_left) held += static_cast<double>(clippedLeft(l));
    RequestOutcome& o = out_.requests[l.index];
    if (o.scheduled_s < o.arrival_s) o.scheduled_s = now_;
    budget -= tokens;
    running_.push_back(l);
    waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(k));
    schedulePrefill(running_.back(), running_.size() - 1, tokens);
  }
}

void ServeEngine::formBatch() {
  prefills_.clear();
  decodes_.clear();
  std::int64_t budget = c_.max_batched_tokens;
  if (replicated()) replica_left_.assign(static_cast<std::size_t>(c_.attention_replicas), c_.replica_batched_tokens);
  preempted_ = false;
  if (c_.mixed_batches) {  // running requests keep their place; new prefills fill the rest of the budget
    scheduleRunning(budget);
    if (!preempted_ || c_.admit_after_preemption) scheduleWaiting(budget);
    return;
  }
  // Separate prefill and decode steps: a prefill step whenever a prefill can start or continue.
  const bool partial = std::any_of(running_.begin(), running_.end(), [](const Live& l) { return l.prefill_left > 0; });
  if (partial || !waiting_.empty()) {
    for (std::size_t i = 0; i < running_.size() && budget > 0; ++i) {
      Live& l = running_[i];
      if (l.prefill_left == 0 || replicaFull(l)) continue;
      const std::int64_t tokens = prefillTokens(l, budget);
      if (tokens == 0 || !reserve(l, l.cached + tokens)) break;
      budget -= tokens;
      schedulePrefill(l, i, tokens);
    }
    scheduleWaiting(budget);
    if (!prefills_.empty()) return;
  }
  scheduleRunning(budget);
}

Workload ServeEngine::workload() const {
  Workload w;
  std::int64_t decode_context = 0;
  const std::int64_t q = decodeTokens();  // a verify's last token sees its drafts before it
  for (const std::size_t i : decodes_) decode_context += running_[i].cached + q;
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
  if (nd > 0) w.groups.push_back({nd, q, std::max<std::int64_t>(q, decode_context / nd), c_.spec ? c_.spec->topk : 1});
  const Phase decode = c_.spec ? Phase::Verify : Phase::Decode;
  w.phase = np == 0 ? decode : (nd == 0 && fresh ? Phase::Prefill : Phase::Extend);
  if (replicated()) replicaShare(w);
  return w;
}

std::int64_t ServeEngine::acceptedTokens(Live& l) const {
  if (!c_.spec) return 1;
  l.accept_credit += c_.spec->accept_length;
  const auto whole = static_cast<std::int64_t>(std::floor(l.accept_credit + 1e-9));
  l.accept_credit -= static_cast<double>(whole);
  return std::clamp<std::int64_t>(whole, 1, req_[l.index].output_tokens - l.generated);
}

void ServeEngine::complete(std::size_t slot, double end_s, std::int64_t tokens) {
  Live& l = running_[slot];
  RequestOutcome& o = out_.requests[l.index];
  l.generated += tokens;  // a verify's accepted tokens come out together, in one chunk
  out_.emitted_tokens += tokens;
  const double seen = outbound(end_s);  // when the client reads the chunk
  if (l.generated == 1) {
    o.first_token_s = seen;
  } else {
    out_.itl_samples.push_back(seen - l.last_token_s);
  }
  l.last_token_s = seen;
  if (l.generated >= o.output_tokens) {
    o.finish_s = seen;
    release(l);
    free_pages_ += cache_.drop(ownKey(l.index));  // its own pages kept over a preemption: no one else's
    done_[slot] = true;
    if (limited_) freeSlot(seen);
    out_.in_system_seconds += seen - end_s;  // done in the engine, its last chunk still on its way
    last_seen_ = std::max(last_seen_, seen);
  }
}

std::size_t ServeEngine::sentNotSeen() const { return next_send_ - next_arrival_; }

void ServeEngine::finishStep(double end_s, double step_s) {
  out_.timeline.push_back({now_, static_cast<std::int64_t>(running_.size()), static_cast<std::int64_t>(waiting_.size()),
                           0, c_.kv_tokens - free_pages_ * c_.page_size});
  out_.in_system_seconds += static_cast<double>(running_.size() + waiting_.size() + sentNotSeen()) * step_s;
  std::int64_t batch_tokens = 0;
  done_.assign(running_.size(), false);
  if (stream_) sendDue(end_s, end_s);  // requests sent during the step reach the loops before its chunks
  for (const Chunk& ch : prefills_) {
    Live& l = running_[ch.live];
    l.cached += ch.tokens;
    l.prefill_left -= ch.tokens;
    donatePrefix(l);
    batch_tokens += ch.tokens;
    if (l.prefill_left == 0) complete(ch.live, end_s);  // the prefill's last chunk yields a token
  }
  for (const std::size_t i : decodes_) {
    const std::int64_t emitted = acceptedTokens(running_[i]);
    running_[i].cached += emitted;  // the accepted tokens' KV stays; the rejected drafts' slots are reused
    batch_tokens += decodeTokens();
    complete(i, end_s, emitted);
  }
  out_.timeline.back().batch_tokens = batch_tokens;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < running_.size(); ++i) {
    if (!done_[i]) running_[kept++] = running_[i];
  }
  running_.resize(kept);
}

void ServeEngine::run(const StepTimer& timer) {
  double last_end = -1;   // when the last step ended: a step starting then follows it back to back
  double last_start = 0;  // when it started
  bool ahead = false;     // its CPU work ran under the GPU's: the scheduler formed this step as it started
  bool chained = false;   // this step follows the last one with no empty iteration between
  while (next_arrival_ < req_.size() || !waiting_.empty() || !running_.empty()) {
    if (waiting_.empty() && running_.empty()) idleUntil(nextVisible());
    const bool back_to_back = chained && now_ == last_end;
    // An overlapping scheduler (vLLM --async-scheduling, SGLang's overlap loop) formed this step while the
    // last one ran on the GPU: it saw the requests sent before that step started, not those sent during it.
    admitArrivals(back_to_back && ahead ? last_start : now_);
    formBatch();
    if (prefills_.empty() && decodes_.empty()) {
      chained = false;  // an empty pass of the loop: the next one sees every request sent so far
      if (next_arrival_ >= req_.size()) break;  // nothing runnable and nothing to come (cannot happen)
      idleUntil(nextVisible());
      continue;
    }
    const StepTime st = timer(workload());
    const double step_s = (back_to_back ? st.us : st.fromIdleUs()) * 1e-6;
    last_start = now_;
    ahead = st.overlapped;
    chained = true;
    ++out_.steps;
    if (st.mode == GraphMode::Full) ++out_.full_graph_steps;
    if (st.mode == GraphMode::Piecewise) ++out_.piecewise_steps;
    if (st.host_us > st.gpu_us) ++out_.host_bound_steps;
    finishStep(now_ + step_s, step_s);
    now_ += step_s;
    last_end = now_;
  }
  out_.makespan_s = std::max(now_, last_seen_);  // until the client has read the last chunk
}

}  // namespace servesim

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
  servesim::ServeEngine(requests, config, client, r).run(timer);
  aggregateServing(config, slo, r);
  return r;
}

}  // namespace attnsim
