#pragma once
// serve-sim's engine state (internal to simulator/ServeSim*.cpp): the KV pool, the queues, the
// running requests and the step being formed. ServeSim.cpp forms and runs the steps;
// ServeScheduling.cpp holds SGLang's admission and retraction and the prefix cache's bookkeeping.
#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <vector>

#include "simulator/PrefixCache.hpp"
#include "simulator/ServeSim.hpp"

namespace attnsim::servesim {

struct Live {
  std::size_t index = 0;
  std::int64_t cached = 0;        // tokens whose KV is in the pool
  std::int64_t prefill_left = 0;  // prompt (and, after a preemption, generated) tokens still to prefill
  std::int64_t generated = 0;
  std::int64_t pages = 0;         // pages it uses, its prefix's shared ones included
  std::int64_t shared_pages = 0;  // of those, the prefix cache's
  std::int64_t cache_key = -1;    // the cache entry they belong to: its group's, or its own (ownKey)
  double last_token_s = 0;
  double accept_credit = 0;  // speculative decoding: the fraction of a token carried to its next verify
};

struct Chunk {
  std::size_t live = 0;  // index into the running list
  std::int64_t tokens = 0;
};

// The simulation state: the pool, the queues and the outcomes.
class ServeEngine {
 public:
  ServeEngine(const std::vector<ServeRequest>& requests, const SchedulerConfig& c, const ServeClient& client,
              ServeResult& out)
      : req_(requests),
        c_(c),
        out_(out),
        free_pages_(c.kv_tokens / c.page_size),
        limited_(client.max_concurrency > 0),
        loop_(client.loop),
        stream_(client.loop.costs() || c.frontend.costs() || c.tokenizer_window.wait_us > 0),
        ratio_(c.new_token_ratio ? c.new_token_ratio->init : 0) {
    ready_.assign(requests.size(), 0.0);
    if (limited_) {
      const auto n = std::min<std::size_t>(static_cast<std::size_t>(client.max_concurrency), requests.size());
      slots_.assign(n, 0.0);  // every slot free from the start
    }
  }

  void run(const StepTimer& timer);

 private:
  std::int64_t pagesFor(std::int64_t tokens) const { return (tokens + c_.page_size - 1) / c_.page_size; }
  // Pages for `tokens` of the request, taking cached pages no request uses only when that makes it
  // fit (vLLM's allocate_slots refuses before evicting when free plus cached-free blocks are short).
  bool reserve(Live& l, std::int64_t tokens) {
    const std::int64_t need = pagesFor(tokens) - l.pages;
    if (need > availablePages()) return false;
    if (need > free_pages_) free_pages_ += cache_.evict(need - free_pages_);
    if (need > 0) {
      free_pages_ -= need;
      l.pages += need;
    }
    return true;
  }
  void release(Live& l) {
    free_pages_ += l.pages - l.shared_pages;
    if (l.shared_pages > 0) cache_.release(l.cache_key, out_.steps);
    l.pages = 0;
    l.shared_pages = 0;
  }
  // Pages the pool can give: free, and (prefix caching) held by prefixes no request uses.
  [[nodiscard]] std::int64_t availablePages() const { return free_pages_ + cache_.evictable(); }
  // The cache key of a request's own pages (kept over a preemption): negative, apart from the groups'.
  [[nodiscard]] static std::int64_t ownKey(std::size_t index) { return -2 - static_cast<std::int64_t>(index); }
  struct PrefixHit {
    std::int64_t key = -1, pages = 0;
  };
  [[nodiscard]] PrefixHit prefixHit(const Live& l) const;
  void usePrefix(Live& l, const PrefixHit& hit);
  // vLLM: a preempted request's full pages of computed tokens stay cached under its own key.
  void keepForRecompute(Live& l);
  void donatePrefix(Live& l);
  // The requests due and sent by `seen_by` join the waiting queue (the closed-loop client sends one when
  // a slot frees).
  void admitArrivals(double seen_by);
  // When the client sends request i: when it is due and (closed loop) a slot is free; +inf: no slot yet.
  [[nodiscard]] double sendTime(std::size_t i) const {
    if (!limited_) return req_[i].arrival_s;
    return slots_.empty() ? std::numeric_limits<double>::infinity() : std::max(req_[i].arrival_s, slots_.front());
  }
  // The client sends every request due by t, in order; each reaches the scheduler after the client's
  // and the front end's loops have handled it (ready_). The time in the system is counted up to
  // `counted_to`: a request sent before it is added from its send.
  void sendDue(double t, double counted_to);
  // When the next request not yet admitted reaches the scheduler (sending it if it is due first).
  [[nodiscard]] double nextVisible();
  // The engine idles until t (nothing runnable).
  void idleUntil(double t);
  // A request sent at `sent` through the client's then the front end's loop; a chunk emitted at
  // `emitted` through the front end's then the client's: the time it is through (tandem FIFO queues).
  double inbound(double sent) {
    if (!stream_) return sent;
    client_free_ = std::max(client_free_, sent) + loop_.per_request_us * 1e-6;
    fe_free_ = std::max(fe_free_, client_free_) + c_.frontend.per_request_us * 1e-6;
    return windowClose(fe_free_);
  }
  // When the tokenizer's micro-batch window that a request reaching it at t opens or joins closes.
  double windowClose(double t) {
    const BatchWindow& w = c_.tokenizer_window;
    if (w.wait_us <= 0) return t;
    if (t > window_close_ || window_members_ >= w.max_requests) {
      window_close_ = t + w.wait_us * 1e-6;
      window_members_ = 0;
    }
    ++window_members_;
    return window_close_;
  }
  double outbound(double emitted) {
    if (!stream_) return emitted;
    fe_free_ = std::max(fe_free_, emitted) + c_.frontend.per_chunk_us * 1e-6;
    client_free_ = std::max(client_free_, fe_free_) + loop_.per_chunk_us * 1e-6;
    return client_free_;
  }
  // A slot of the closed-loop client frees at t (kept in order: the oldest first).
  void freeSlot(double t) { slots_.push_back(slots_.empty() ? t : std::max(t, slots_.back())); }
  // Tokens of a prefill to run now: a chunk of the budget, or (chunking off) the whole rest when it
  // fits or the step has nothing else; 0 when it must wait.
  // With attention replicas the budget is also what the request's replica has left this step.
  [[nodiscard]] std::int64_t prefillTokens(const Live& l, std::int64_t budget) const {
    if (replicated()) budget = std::min(budget, replica_left_[replicaOf(l)]);
    if (c_.chunked_prefill) return std::min(l.prefill_left, budget);
    return l.prefill_left <= budget || (prefills_.empty() && decodes_.empty()) ? l.prefill_left : 0;
  }
  [[nodiscard]] bool replicated() const { return c_.attention_replicas > 1; }
  [[nodiscard]] std::size_t replicaOf(const Live& l) const {
    return l.index % static_cast<std::size_t>(c_.attention_replicas);
  }
  // A request whose replica has prefilled all it may this step waits; the others' requests go on.
  [[nodiscard]] bool replicaFull(const Live& l) const { return replicated() && replica_left_[replicaOf(l)] <= 0; }
  void schedulePrefill(const Live& l, std::size_t slot, std::int64_t tokens) {
    prefills_.push_back({slot, tokens});
    if (replicated()) replica_left_[replicaOf(l)] -= tokens;
  }
  // Each group's busiest replica: the most prefill tokens, the most decoding requests (Workload::replica).
  void replicaShare(Workload& w) const;
  // A decoding request's tokens in a step (its budget share) and the KV slots it holds through it:
  // 1 and 1, or under speculative decoding the verified tokens and the draft slots.
  [[nodiscard]] std::int64_t decodeTokens() const { return c_.spec ? c_.spec->draft_tokens : 1; }
  [[nodiscard]] std::int64_t decodeSlots() const { return c_.spec ? c_.spec->lookahead() : 1; }
  // Tokens a verify emits for the request: accept_length on average (a fraction is carried to the next
  // step), at least 1, never past its output.
  [[nodiscard]] std::int64_t acceptedTokens(Live& l) const;
  void preemptNewest();
  // A request taken out of the running batch: its pages go back and it waits to prefill again
  // (prompt and generated tokens), counted as a preemption.
  void giveBackForRecompute(Live& l);
  // SGLang: a request's output still to come, as admission clips it.
  [[nodiscard]] std::int64_t clippedLeft(const Live& l) const {
    return std::min(std::max<std::int64_t>(req_[l.index].output_tokens - l.generated, 0),
                    c_.new_token_ratio->clip_max_new_tokens);
  }
  [[nodiscard]] double admissionReserve() const;
  [[nodiscard]] std::int64_t decodePagesNeeded(const std::vector<std::size_t>& which) const;
  void retractForDecode();
  void scheduleRunning(std::int64_t& budget);
  void scheduleWaiting(std::int64_t& budget);
  void formBatch();
  [[nodiscard]] Workload workload() const;
  // Requests sent by now that the scheduler has not seen yet (it formed this step before they came).
  [[nodiscard]] std::size_t sentNotSeen() const;
  void finishStep(double end_s, double step_s);
  void complete(std::size_t slot, double end_s, std::int64_t tokens = 1);

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
  bool limited_ = false;                  // the client holds at most max_concurrency requests in flight
  std::deque<double> slots_;              // the client's free slots, by the time each freed (oldest first)
  SerialStage loop_;                      // the client's loop
  bool stream_ = false;                   // the client's or the front end's loop costs something
  std::size_t next_send_ = 0;             // requests before it are sent (those from next_arrival_ on not yet admitted)
  std::vector<double> ready_;             // when each sent request reaches the scheduler
  double fe_free_ = 0, client_free_ = 0;  // when the front end's and the client's loops are next free
  double window_close_ = -1;              // when the tokenizer's open micro-batch window closes
  std::int64_t window_members_ = 0;       // requests in it
  double last_seen_ = 0;                  // when the client read the last request's last chunk
  double ratio_ = 0;                      // SGLang's new-token ratio
  bool preempted_ = false;                // this step's batch forming preempted a running request
  std::vector<std::int64_t> replica_left_;  // attention replicas: prefill tokens each may still take this step
  struct ReplicaLoad {
    std::int64_t count = 0, tokens = 0, context = 0;
  };
  mutable std::vector<ReplicaLoad> replica_loads_;  // replicaShare's scratch, kept between steps
  PrefixCache cache_;
};

}  // namespace attnsim::servesim
