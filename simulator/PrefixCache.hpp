#pragma once
// Shared prompt prefixes kept in the KV pool, as vLLM's automatic prefix caching and SGLang's radix
// cache keep them: a group's prefix is held once, in whole pages, whoever uses it; a later request
// of the group skips its prefill. An unused prefix stays until the pool needs its pages: the least
// recently used one gives them up from its tail, a page at a time (vLLM frees a request's blocks
// tail first into its free queue and evicts from the queue's front: SingleTypeKVCacheManager.free,
// BlockPool.get_new_blocks). serve-sim's requests name their group and prefix length (ServeRequest);
// a request vLLM preempted keeps its computed pages under a key of its own (ServeEngine).
#include <algorithm>
#include <cstdint>
#include <unordered_map>

namespace attnsim {

class PrefixCache {
 public:
  // Pages of the group's prefix resident now (0: none).
  [[nodiscard]] std::int64_t pages(std::int64_t group) const {
    const auto it = entries_.find(group);
    return it == entries_.end() ? 0 : it->second.pages;
  }
  // Whether a running request uses the group's prefix (then it is not evictable).
  [[nodiscard]] bool inUse(std::int64_t group) const {
    const auto it = entries_.find(group);
    return it != entries_.end() && it->second.refs > 0;
  }
  // Pages held by no running request: what the pool may take back.
  [[nodiscard]] std::int64_t evictable() const { return evictable_; }

  // A request starts to use a resident prefix / stops using it at `tick` (for least-recent eviction).
  void acquire(std::int64_t group) {
    Entry& e = entries_.at(group);
    if (e.refs++ == 0) evictable_ -= e.pages;
  }
  void release(std::int64_t group, std::int64_t tick) {
    Entry& e = entries_.at(group);
    e.last_use = tick;
    if (--e.refs == 0) evictable_ += e.pages;
  }
  // The request that computed the prefix hands its pages to the cache, and goes on using them.
  void insert(std::int64_t group, std::int64_t pages) { entries_[group] = Entry{pages, 1, 0}; }

  // Pages `key` holds from now on, used by no request (an entry it was using is replaced): a
  // preempted request's computed pages, evictable from `tick` on. 0 pages: the entry is dropped.
  void keep(std::int64_t key, std::int64_t pages, std::int64_t tick) {
    const auto it = entries_.find(key);
    if (it != entries_.end()) {
      if (it->second.refs == 0) evictable_ -= it->second.pages;
      entries_.erase(it);
    }
    if (pages <= 0) return;
    entries_[key] = Entry{pages, 0, tick};
    evictable_ += pages;
  }
  // Drops an unused entry; returns the pages it held (0 when absent or in use).
  std::int64_t drop(std::int64_t key) {
    const auto it = entries_.find(key);
    if (it == entries_.end() || it->second.refs > 0) return 0;
    const std::int64_t pages = it->second.pages;
    evictable_ -= pages;
    entries_.erase(it);
    return pages;
  }

  // Frees pages of unused entries, least recently used first and from each one's tail, until `need`
  // pages are freed or none is left; returns the pages freed.
  std::int64_t evict(std::int64_t need) {
    std::int64_t freed = 0;
    while (freed < need && evictable_ > 0) {
      auto victim = entries_.end();
      for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        if (it->second.refs == 0 && (victim == entries_.end() || it->second.last_use < victim->second.last_use)) {
          victim = it;
        }
      }
      const std::int64_t take = std::min(need - freed, victim->second.pages);
      freed += take;
      evictable_ -= take;
      victim->second.pages -= take;
      if (victim->second.pages == 0) entries_.erase(victim);
    }
    return freed;
  }

 private:
  struct Entry {
    std::int64_t pages = 0, refs = 0, last_use = 0;
  };
  std::unordered_map<std::int64_t, Entry> entries_;
  std::int64_t evictable_ = 0;
};

}  // namespace attnsim
