#include "simulator/ServeRun.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include "catalog/Catalog.hpp"
#include "core/Error.hpp"
#include "hardware/KernelEfficiency.hpp"
#include "simulator/ServeSpec.hpp"

namespace attnsim {

namespace {

constexpr std::int64_t kExact = 16;
constexpr double kSteps = 16;  // buckets per doubling

PredictionInput engineInput(const Catalog& c, const Scenario& s, const ModelSpec& model, Phase phase) {
  const HardwareProfile& hw = c.hardware(s.hardware);
  const Engine& e = c.engine(s.engine);
  ServingOptions options = servingOptions(s);
  options.backend.reset();
  const EngineRun run = runEngine(c, hw, model, e, options, s.backend, phase, StageScope::Deployment);
  if (run.selection.refusal) throw EngineRefusal(*run.selection.refusal);
  return predictionInputFor(c, hw, model, e, run, s.cuda_graphs);
}

// SGLang's --schedule-conservativeness (ServerArgs default 1.0): a number > 0.
double scheduleConservativeness(const Scenario& s) {
  const auto it = s.engine_options.find("schedule_conservativeness");
  if (it == s.engine_options.end()) return 1.0;
  const std::string& text = it->second;
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(v) || v <= 0) {
    throw UsageError(
        fmt::format("--option schedule_conservativeness={}: expected a number > 0 (SGLang's default 1.0)", text));
  }
  return v;
}

// init_schedule_policy: init = min(init x conservativeness, 1), floor = min(init x factor, 1), and the
// decay per decode step that takes init to the floor in decay_steps.
NewTokenRatioAdmission newTokenRatioOf(const NewTokenRatioPolicy& p, double conservativeness) {
  NewTokenRatioAdmission a;
  a.init = std::min(p.init * conservativeness, 1.0);
  a.min = std::min(a.init * p.min_factor, 1.0);
  a.decay = (a.init - a.min) / static_cast<double>(p.decay_steps);
  a.retract_decode_steps = p.retract_decode_steps;
  a.clip_max_new_tokens = p.clip_max_new_tokens;
  return a;
}

}  // namespace

std::uint64_t BatchTimer::bucket(std::int64_t x) {
  if (x <= kExact) return static_cast<std::uint64_t>(std::max<std::int64_t>(x, 0));
  return static_cast<std::uint64_t>(kExact) +
         static_cast<std::uint64_t>(std::floor(kSteps * std::log2(static_cast<double>(x) / kExact)));
}

std::int64_t BatchTimer::representative(std::uint64_t b) {
  if (b <= static_cast<std::uint64_t>(kExact)) return static_cast<std::int64_t>(b);
  return std::llround(kExact * std::exp2((static_cast<double>(b - kExact) + 0.5) / kSteps));
}

BatchTimer::BatchTimer(const Catalog& c, const PredictionInput& prefill, const PredictionInput& decode,
                       bool cuda_graphs, HostStepCost host)
    : prefill_(std::make_unique<Predictor>(c, prefill)),
      decode_(std::make_unique<Predictor>(c, decode)),
      cuda_graphs_(cuda_graphs),
      host_(host) {}

std::size_t BatchTimer::BatchKeyHash::operator()(const BatchKey& k) const noexcept {
  std::uint64_t h = 14695981039346656037ULL;  // FNV-1a over the fields
  for (const std::uint16_t v : k) {
    h ^= v;
    h *= 1099511628211ULL;
  }
  return static_cast<std::size_t>(h);
}

StepTime BatchTimer::operator()(const Workload& w) {
  // Key: phase, then (count, q_len, context) buckets of the prefill group and of the decode group.
  // With attention replicas, the busiest replica's groups the same way after them: attention and the
  // kernels beside it run on that share, the MLP on the gathered tokens (Predictor::gathered), so a
  // decode step depends on the share alone (every replica padded to it) and a prefill step on the
  // share and the batch's counts and lengths, not its contexts: only those are keyed.
  BatchKey key{};
  std::size_t at = 0;
  key[at++] = static_cast<std::uint16_t>(w.phase);
  Workload rep;
  rep.phase = w.phase;
  enum class Keyed { All, NoContext, None };
  const auto represent = [&](const std::vector<RequestGroup>& groups, std::vector<RequestGroup>& out, Keyed keyed) {
    if (groups.size() > 2) throw std::logic_error("BatchTimer: a serve-sim batch has at most two groups");
    if (keyed != Keyed::None) key[at++] = static_cast<std::uint16_t>(groups.size());
    for (const auto& g : groups) {
      const std::uint64_t bc = bucket(g.count), bq = bucket(g.q_len), bx = bucket(g.context);
      if (keyed != Keyed::None) {
        key[at++] = static_cast<std::uint16_t>(bc);
        key[at++] = static_cast<std::uint16_t>(bq);
        key[at++] = static_cast<std::uint16_t>(keyed == Keyed::All ? bx : 0);
      }
      RequestGroup r{representative(bc), representative(bq), representative(bx), g.tree_topk};
      r.context = std::max(r.context, r.q_len);
      if (w.phase == Phase::Prefill) r.context = r.q_len;
      out.push_back(r);
    }
  };
  const Keyed batch_key = w.replica.empty() ? Keyed::All : decodeLike(w.phase) ? Keyed::None : Keyed::NoContext;
  represent(w.groups, rep.groups, batch_key);
  represent(w.replica, rep.replica, Keyed::All);
  auto it = memo_.find(key);
  if (it == memo_.end()) {
    Predictor& target = w.phase == Phase::Decode ? *decode_ : w.phase == Phase::Verify ? *verify_ : *prefill_;
    const Prediction p = target.predict(rep);
    StepTime t{cuda_graphs_ ? p.graph.step_us : p.eager.step_us,
               cuda_graphs_ ? p.graph_decision.mode : GraphMode::Eager};
    if (spec_) t.us += drafterUs(rep);
    it = memo_.emplace(key, Timed{t, cuda_graphs_ ? p.uncertainty.graph_band : p.uncertainty.eager_band}).first;
  }
  StepTime t = it->second.time;
  if (band_end_ != 0) t.us = band_end_ > 0 ? bandHigh(t.us, it->second.band) : bandLow(t.us, it->second.band);
  t.gpu_us = t.us;  // the band is the step model's: the engine's CPU work is data beside it
  t.host_us = host_.hostUs(w);
  t.overlapped = host_.overlap;
  t.us = host_.stepUs(t.gpu_us, t.host_us);
  return t;
}

void BatchTimer::setSpeculative(const Catalog& c, const PredictionInput& verify, const PredictionInput& draft_prefill,
                                const PredictionInput& draft_decode, const SpecDecodeConfig& spec) {
  verify_ = std::make_unique<Predictor>(c, verify);
  draft_prefill_ = std::make_unique<Predictor>(c, draft_prefill);
  draft_decode_ = std::make_unique<Predictor>(c, draft_decode);
  spec_ = spec;
}

// The draft model's passes of a step: one over the step's tokens (vLLM's first propose forward, SGLang's
// draft extend), then num_steps - 1 over topk tokens per verifying request (serve-sim puts the verifying
// requests in the last group: a verify step's only one, a mixed step's second).
double BatchTimer::drafterUs(const Workload& rep) {
  auto stepUs = [this](Predictor& p, const Workload& w) {
    const Prediction d = p.predict(w);
    return cuda_graphs_ ? d.graph.step_us : d.eager.step_us;
  };
  double us = stepUs(decodeLike(rep.phase) ? *draft_decode_ : *draft_prefill_, rep);
  const bool verifying = rep.phase == Phase::Verify || (rep.phase == Phase::Extend && rep.groups.size() == 2);
  if (!verifying || spec_->num_steps < 2) return us;
  const RequestGroup& g = rep.groups.back();
  const Workload drafts = Workload::uniform(Phase::Decode, g.count * spec_->topk, 1, g.context);
  return us + static_cast<double>(spec_->num_steps - 1) * stepUs(*draft_decode_, drafts);
}

SerialStage serialStageOf(const std::vector<StreamCostTerm>& terms, const Env& env) {
  SerialStage out;
  for (const StreamCostTerm& t : terms) {
    if (t.when && !truthy(t.when->evaluate(env))) continue;
    out.per_request_us += t.per_request_us;
    out.per_chunk_us += t.per_chunk_us;
  }
  return out;
}

BatchWindow batchWindowOf(const std::vector<StreamCostTerm>& terms, const Env& env) {
  BatchWindow out;
  for (const StreamCostTerm& t : terms) {
    if (t.batch_wait_us <= 0 || (t.when && !truthy(t.when->evaluate(env)))) continue;
    out.wait_us = std::max(out.wait_us, t.batch_wait_us);
    out.max_requests = std::max(out.max_requests, t.batch_max);
  }
  return out;
}

SerialStage benchmarkClientOf(const Catalog& c, const std::string& engine) {
  const auto& serving = c.engine(engine).policy.serving;
  if (!serving || !serving->stream) return {};
  return serialStageOf(serving->stream->client, {});
}

ServeSetup serveSetup(const Catalog& c, const Scenario& s) {
  ServeSetup out;
  out.capacity = capacityOf(c, s);
  const MemorySplit& m = out.capacity.split;
  if (!m.weightsFit() || m.kv_tokens <= 0) {
    throw InputError(fmt::format("{} on {} with {} at TP {}: the weights leave no KV cache ({:.1f} GiB short)",
                                 out.capacity.model->id, out.capacity.hardware->id, out.capacity.engine,
                                 out.capacity.tp, -m.kv_pool_mib / 1024));
  }
  // Attention replicas are scheduled as one engine with their pools, budgets and running limits
  // added, each request on the replica the round-robin dispatch gave it, each replica prefilling at
  // most its own budget a step (docs/CAPACITY.md "SGLang DP attention").
  out.scheduler.max_batched_tokens = m.max_batched_tokens * m.attention_dp;
  out.scheduler.max_running_requests = m.max_running_requests * m.attention_dp;
  out.scheduler.attention_replicas = m.attention_dp;
  out.scheduler.replica_batched_tokens = m.max_batched_tokens;
  out.scheduler.kv_tokens = m.engineKvTokens();
  out.scheduler.page_size = m.page_size;
  const ServingScheduler& sched = c.engine(s.engine).policy.serving->scheduler;
  out.scheduler.mixed_batches = m.mixed_batches;
  out.scheduler.preemption = sched.preemption == "retract" ? Preemption::Retract : Preemption::Recompute;
  if (sched.new_token_ratio) {
    const double dp = m.attention_dp > 1 ? sched.new_token_ratio->dp_attention_factor : 1.0;
    out.scheduler.new_token_ratio = newTokenRatioOf(*sched.new_token_ratio, scheduleConservativeness(s) * dp);
  }
  out.scheduler.chunked_prefill = m.chunked_prefill;
  out.scheduler.prefix_caching = m.prefix_caching;
  out.scheduler.keep_preempted_pages = sched.keep_preempted_pages;
  out.scheduler.admit_after_preemption = sched.admit_after_preemption;
  out.scheduler.spec = specDecodeOf(s);
  if (out.scheduler.spec) {
    // The draft layer's KV shares the pool: each token holds one more layer's worth.
    const auto layers = static_cast<std::int64_t>(out.capacity.model->num_layers);
    const std::int64_t pages = out.scheduler.kv_tokens / out.scheduler.page_size * layers / (layers + 1);
    out.scheduler.kv_tokens = pages * out.scheduler.page_size;
  }
  if (const auto& host = c.engine(s.engine).policy.serving->host) {
    out.host = hostStepCost(*host, m.host_overlap, out.capacity.engine_env);
  }
  if (const auto& stream = c.engine(s.engine).policy.serving->stream) {
    out.scheduler.frontend = serialStageOf(stream->frontend, out.capacity.engine_env);
    out.scheduler.tokenizer_window = batchWindowOf(stream->frontend, out.capacity.engine_env);
  }
  return out;
}

ServeSession::ServeSession(const Catalog& c, const Scenario& s) : setup_(serveSetup(c, s)) {
  const ModelSpec& model = *setup_.capacity.model;  // kept alive by the setup
  PredictionInput prefill = engineInput(c, s, model, Phase::Extend);
  PredictionInput decode = engineInput(c, s, model, Phase::Decode);
  timer_ = std::make_unique<BatchTimer>(c, prefill, decode, s.cuda_graphs, setup_.host);
  if (setup_.scheduler.spec) {
    draft_model_ = std::make_unique<ModelSpec>(draftModelOf(model, *s.spec.algorithm));
    const PredictionInput verify = engineInput(c, s, model, Phase::Verify);
    prefill.model = draft_model_.get();
    decode.model = draft_model_.get();
    timer_->setSpeculative(c, verify, prefill, decode, *setup_.scheduler.spec);
  }
}

ServeResult ServeSession::run(const std::vector<ServeRequest>& requests, const ServeSlo& slo,
                              const ServeClient& client) {
  ServeResult r = simulateServing(
      requests, setup_.scheduler, [this](const Workload& w) { return (*timer_)(w); }, slo, client);
  r.distinct_batches = static_cast<std::int64_t>(timer_->evaluations());
  return r;
}

ServeRun serveScenario(const Catalog& c, const Scenario& s, const std::vector<ServeRequest>& requests,
                       const ServeSlo& slo, const ServeClient& client) {
  ServeSession session(c, s);
  return {session.setup(), session.run(requests, slo, client)};
}

}  // namespace attnsim
