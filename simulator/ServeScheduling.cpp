#include <algorithm>
#include <tuple>
#include <vector>

#include "simulator/ServeEngine.hpp"

namespace attnsim::servesim {

// The pool SGLang's admission keeps for the running requests: every decoding request's clipped
// remaining output x the ratio, and the whole clipped output of a prefill this step completes.
double ServeEngine::admissionReserve() const {
  double reserve = 0;
  for (const Live& l : running_) {
    if (l.prefill_left == 0) reserve += static_cast<double>(clippedLeft(l)) * ratio_;
  }
  for (const Chunk& ch : prefills_) {
    const Live& l = running_[ch.live];
    if (ch.tokens == l.prefill_left) reserve += static_cast<double>(clippedLeft(l));
  }
  return reserve;
}

// SGLang DP attention: each replica runs attention on its own requests and the step waits for the
// slowest, so the step is costed on each group's busiest replica (the MLP still sees every replica's
// tokens: Predictor::gathered).
void ServeEngine::replicaShare(Workload& w) const {
  const auto n = static_cast<std::size_t>(c_.attention_replicas);
  // The member scratch keeps a step allocation-free: replicas [0, n) prefill, [n, 2n) decode.
  replica_loads_.assign(2 * n, ReplicaLoad{});
  const auto prefill = replica_loads_.begin();
  const auto decode = prefill + static_cast<std::ptrdiff_t>(n);
  for (const Chunk& ch : prefills_) {
    const Live& l = running_[ch.live];
    ReplicaLoad& r = prefill[static_cast<std::ptrdiff_t>(replicaOf(l))];
    ++r.count;
    r.tokens += ch.tokens;
    r.context += l.cached + ch.tokens;
  }
  const std::int64_t q = decodeTokens();
  for (const std::size_t i : decodes_) {
    ReplicaLoad& r = decode[static_cast<std::ptrdiff_t>(replicaOf(running_[i]))];
    ++r.count;
    r.tokens += q;
    r.context += running_[i].cached + q;
  }
  const auto busiest = [](auto first, auto last) {
    return *std::max_element(first, last, [](const ReplicaLoad& a, const ReplicaLoad& b) {
      return std::tie(a.tokens, a.context) < std::tie(b.tokens, b.context);
    });
  };
  w.replica.clear();
  if (!prefills_.empty()) {
    const ReplicaLoad b = busiest(prefill, decode);
    w.replica.push_back(
        {b.count, std::max<std::int64_t>(1, b.tokens / b.count), std::max<std::int64_t>(1, b.context / b.count)});
  }
  if (!decodes_.empty()) {
    const ReplicaLoad b = busiest(decode, replica_loads_.end());
    w.replica.push_back({b.count, q, std::max(q, b.context / b.count), w.groups.back().tree_topk});
  }
}

std::int64_t ServeEngine::decodePagesNeeded(const std::vector<std::size_t>& which) const {
  std::int64_t need = 0;
  for (const std::size_t i : which) need += pagesFor(running_[i].cached + decodeSlots()) - running_[i].pages;
  return need;
}

// SGLang's retract_decode before a decode step: when the pool cannot take the step's new pages, the
// decoding requests with the fewest output tokens (then the longest prompt) give all their KV back,
// at least one and until the rest fit, never the last; they wait at the back of the queue to prefill
// prompt and output again, and the ratio is reset. Otherwise the ratio decays.
void ServeEngine::retractForDecode() {
  const NewTokenRatioAdmission& n = *c_.new_token_ratio;
  std::vector<std::size_t> keep;
  keep.reserve(running_.size());
  for (std::size_t i = 0; i < running_.size(); ++i) {
    if (running_[i].prefill_left == 0) keep.push_back(i);
  }
  if (keep.empty()) return;
  if (decodePagesNeeded(keep) <= availablePages()) {
    ratio_ = std::max(ratio_ - n.decay, n.min);
    return;
  }
  std::stable_sort(keep.begin(), keep.end(), [&](std::size_t a, std::size_t b) {
    const Live &x = running_[a], &y = running_[b];
    if (x.generated != y.generated) return x.generated > y.generated;
    return req_[x.index].prompt_tokens < req_[y.index].prompt_tokens;
  });
  std::vector<bool> out(running_.size(), false);
  while (keep.size() > 1) {
    Live& l = running_[keep.back()];
    out[keep.back()] = true;
    keep.pop_back();
    giveBackForRecompute(l);
    waiting_.push_back(l);
    if (decodePagesNeeded(keep) <= availablePages()) break;
  }
  std::int64_t decoded = 0, max_new = 0;
  for (const std::size_t i : keep) {
    decoded += running_[i].generated;
    max_new += req_[running_[i].index].output_tokens;
  }
  ratio_ =
      std::min(1.0, static_cast<double>(decoded + n.retract_decode_steps * static_cast<std::int64_t>(keep.size())) /
                        static_cast<double>(std::max<std::int64_t>(max_new, 1)));
  std::size_t kept = 0;
  for (std::size_t i = 0; i < running_.size(); ++i) {
    if (!out[i]) running_[kept++] = running_[i];
  }
  running_.resize(kept);
}

// The whole pages the cache holds for a request that has computed nothing yet: those it kept when it
// was preempted, else its group's prefix; leaving at least one token to compute (vLLM: num_tokens - 1;
// SGLang: input_len - 1).
ServeEngine::PrefixHit ServeEngine::prefixHit(const Live& l) const {
  const ServeRequest& r = req_[l.index];
  if (!c_.prefix_caching || l.cached > 0) return {};
  const std::int64_t most = (l.prefill_left - 1) / c_.page_size;
  const std::int64_t own = cache_.pages(ownKey(l.index));
  if (own > 0) return {ownKey(l.index), std::min(own, most)};
  if (r.prefix_group < 0) return {};
  return {r.prefix_group, std::min(cache_.pages(r.prefix_group), most)};
}

// The request starts with the cached pages as its own first tokens (undone by release()).
void ServeEngine::usePrefix(Live& l, const PrefixHit& hit) {
  cache_.acquire(hit.key);
  l.cache_key = hit.key;
  l.cached = hit.pages * c_.page_size;
  l.prefill_left -= l.cached;
  l.pages = hit.pages;
  l.shared_pages = hit.pages;
}

// vLLM's automatic prefix caching hashes every full block a request computes and, when the scheduler
// preempts it, frees its blocks tail first into the free queue with their hashes: its recompute
// finds them cached unless other requests' allocations evicted them (vllm/v1/core/
// single_type_kv_cache_manager.py SingleTypeKVCacheManager.free, vllm/v1/core/block_pool.py
// BlockPool.free_blocks and get_new_blocks @ 002f3491). The partial last page is freed.
void ServeEngine::keepForRecompute(Live& l) {
  const std::int64_t full = std::min(l.cached / c_.page_size, l.pages);
  free_pages_ += l.pages - full;
  cache_.keep(ownKey(l.index), full, out_.steps);  // replaces the own entry it was using, if any
  l.pages = 0;
  l.shared_pages = 0;
  l.cache_key = -1;
}

// A request that has computed its group's whole prefix pages, none of them cached, hands them to
// the cache: they stay after it finishes, for the group's later requests.
void ServeEngine::donatePrefix(Live& l) {
  const ServeRequest& r = req_[l.index];
  if (!c_.prefix_caching || r.prefix_group < 0 || l.shared_pages > 0) return;
  const std::int64_t full = std::min(r.prefix_tokens, r.prompt_tokens) / c_.page_size;
  if (full == 0 || l.cached < full * c_.page_size || cache_.pages(r.prefix_group) > 0) return;
  cache_.insert(r.prefix_group, full);
  l.shared_pages = full;
  l.cache_key = r.prefix_group;
}

}  // namespace attnsim::servesim
