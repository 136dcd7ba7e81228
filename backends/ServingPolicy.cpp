#include "backends/ServingPolicy.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/Strings.hpp"

namespace attnsim {

const std::vector<std::string> kServingMemoryVariables = {
    "weights_mib",         "activation_mib", "cuda_graph_mib",    "cuda_graph_max_batch", "decode_graph_sizes",
    "prefill_graph_sizes", "context_len",    "device_memory_mib", "vocab_size",           "mxfp4_moe",
    "moe_experts",         "moe_layers",     "moe_hidden",        "moe_intermediate"};
const std::vector<std::string> kServingSchedulerVariables = {"kv_tokens"};

namespace {

Expr::VariableCheck checkAgainst(std::vector<std::string> names) {
  return [names = std::move(names)](std::string_view name) -> std::string {
    if (std::find(names.begin(), names.end(), name) != names.end()) return {};
    return fmt::format("unknown variable '{}'{}", name, didYouMean(name, names));
  };
}

ServingHost parseServingHost(const YamlReader& host, const std::vector<std::string>& names) {
  ServingHost h;
  h.overlap = host.getExpr("overlap", checkAgainst(names));
  const std::vector<YamlReader> terms = host.list("terms");
  h.terms.reserve(terms.size());
  for (const YamlReader& t : terms) {
    HostWorkTerm w;
    w.what = t.get<std::string>("what");
    w.fixed_us = t.findNumber("fixed_us", 0, 1e6).value_or(0);
    w.per_request_us = t.findNumber("per_request_us", 0, 1e6).value_or(0);
    w.per_token_us = t.findNumber("per_token_us", 0, 1e6).value_or(0);
    w.when = t.findExpr("when", checkAgainst(names));
    w.source = t.get<std::string>("source");
    t.finish();
    h.terms.push_back(std::move(w));
  }
  h.source = host.get<std::string>("source");
  host.finish();
  return h;
}

std::vector<StreamCostTerm> parseStreamTerms(const YamlReader& stream, const char* key,
                                             const std::vector<std::string>& names) {
  std::vector<StreamCostTerm> out;
  if (!stream.has(key)) return out;
  const std::vector<YamlReader> terms = stream.list(key);
  out.reserve(terms.size());
  for (const YamlReader& t : terms) {
    StreamCostTerm c;
    c.what = t.get<std::string>("what");
    c.per_request_us = t.findNumber("per_request_us", 0, 1e7).value_or(0);
    c.per_chunk_us = t.findNumber("per_chunk_us", 0, 1e7).value_or(0);
    c.batch_wait_us = t.findNumber("batch_wait_us", 0, 1e7).value_or(0);
    c.batch_max = t.findInt("batch_max", 1, 1 << 20).value_or(1);
    c.when = t.findExpr("when", checkAgainst(names));
    c.source = t.get<std::string>("source");
    t.finish();
    out.push_back(std::move(c));
  }
  return out;
}

ServingStream parseServingStream(const YamlReader& stream, const std::vector<std::string>& names) {
  ServingStream s;
  s.frontend = parseStreamTerms(stream, "frontend", names);
  s.client = parseStreamTerms(stream, "client", {});  // the benchmark's: no engine option applies
  s.source = stream.get<std::string>("source");
  stream.finish();
  return s;
}

}  // namespace

ServingPolicy parseServingPolicy(const YamlReader& r, const std::vector<std::string>& known) {
  ServingPolicy p;
  p.source = r.get<std::string>("source");
  p.attention_dp = r.findExpr("attention_dp", checkAgainst(known));
  std::vector<std::string> names = known;
  // Derived variables come before the activation estimate (it needs max_batched_tokens).
  for (const auto& v : kServingMemoryVariables) {
    if (v != "activation_mib") names.push_back(v);
  }
  if (auto derive = r.findMap("derive")) {
    for (const auto& key : derive->keysOf()) {
      p.derive.emplace_back(key, derive->getExpr(key, checkAgainst(names)));
      names.push_back(key);
    }
    derive->finish();
  }
  names.emplace_back("activation_mib");
  const YamlReader memory = r.map("memory");
  p.memory.kv_pool_mib = memory.getExpr("kv_pool_mib", checkAgainst(names));
  p.memory.logit_rows = memory.findExpr("logit_rows", checkAgainst(names));
  p.memory.sliding_window_pool = memory.findExpr("sliding_window_pool", checkAgainst(names));
  p.memory.note = memory.get<std::string>("note", "");
  p.memory.source = memory.get<std::string>("source");
  memory.finish();

  const YamlReader sched = r.map("scheduler");
  p.scheduler.max_batched_tokens = sched.getExpr("max_batched_tokens", checkAgainst(names));
  names.insert(names.end(), kServingSchedulerVariables.begin(), kServingSchedulerVariables.end());
  p.scheduler.max_running_requests = sched.getExpr("max_running_requests", checkAgainst(names));
  p.scheduler.mixed_batches = sched.getExpr("mixed_batches", checkAgainst(names));
  p.scheduler.chunked_prefill = sched.findExpr("chunked_prefill", checkAgainst(names));
  p.scheduler.policy = sched.getOneOf("policy", {"decode-first", "prefill-first"});
  p.scheduler.preemption = sched.findOneOf("preemption", {"recompute", "retract"}).value_or("recompute");
  p.scheduler.prefix_caching = sched.findExpr("prefix_caching", checkAgainst(names));
  p.scheduler.keep_preempted_pages = sched.get<bool>("keep_preempted_pages", false);
  p.scheduler.admit_after_preemption = sched.get<bool>("admit_after_preemption", true);
  if (auto ratio = sched.findMap("new_token_ratio")) {
    NewTokenRatioPolicy n;
    n.init = ratio->getNumber("init", 1e-6, 1);
    n.min_factor = ratio->getNumber("min_factor", 1e-6, 1);
    n.decay_steps = ratio->getInt("decay_steps", 1, std::int64_t{1} << 30);
    n.retract_decode_steps = ratio->getInt("retract_decode_steps", 0, std::int64_t{1} << 30);
    n.clip_max_new_tokens = ratio->getInt("clip_max_new_tokens", 1, std::int64_t{1} << 30);
    n.dp_attention_factor = ratio->findNumber("dp_attention_factor", 1e-6, 1e6).value_or(1.0);
    n.source = ratio->get<std::string>("source");
    ratio->finish();
    p.scheduler.new_token_ratio = n;
  }
  p.scheduler.source = sched.get<std::string>("source");
  sched.finish();
  if (auto host = r.findMap("host")) p.host = parseServingHost(*host, names);
  if (auto stream = r.findMap("stream")) p.stream = parseServingStream(*stream, names);
  r.finish();
  return p;
}

}  // namespace attnsim
