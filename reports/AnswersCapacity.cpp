// capacity memory, search and study answers as JSON and text.
#include "core/Strings.hpp"
#include "hardware/HardwareProfile.hpp"
#include "model/ModelSpec.hpp"
#include "reports/Answers.hpp"
#include "reports/TextOut.hpp"

namespace attnsim {

using nlohmann::json;

json memorySplitJson(const CapacityReport& r) {
  const MemorySplit& s = r.split;
  json derived = json::object();
  for (const auto& [name, value] : s.derived) derived[name] = value;
  return {{"hardware", r.hardware->id},
          {"model", r.model->id},
          {"engine", r.engine},
          {"backend", r.backend},
          {"kv_dtype", r.kv_dtype},
          {"tp", r.tp},
          {"gpu_mib", s.gpu_mib},
          {"weights_mib", s.weights_mib},
          {"activation_mib", s.activation_mib},
          {"cuda_graph_mib", s.cuda_graph_mib},
          {"engine_reserve_mib", s.other_mib},
          {"kv_pool_mib", s.kv_pool_mib},
          {"kv_bytes_per_token", s.kv.full_bytes},
          {"kv_bytes_per_token_windowed", s.kv.windowed_bytes},
          {"sliding_window", s.kv.max_window},
          {"page_size", s.page_size},
          {"kv_tokens", s.kv_tokens},
          {"kv_pages", s.kv_pages},
          {"attention_dp", s.attention_dp},
          {"engine_kv_tokens", s.engineKvTokens()},
          {"max_batched_tokens", s.max_batched_tokens},
          {"max_running_requests", s.max_running_requests},
          {"decode_graph_sizes", s.decode_graph_sizes},
          {"prefill_graph_sizes", s.prefill_graph_sizes},
          {"weights_fit", s.weightsFit()},
          {"derived", derived},
          {"note", s.note},
          {"source", s.source}};
}

std::string memorySplitText(const CapacityReport& r) {
  const MemorySplit& s = r.split;
  std::string out = fmt::format("{} · {} · {}:{} · TP {} · KV {} · page {}\n\n", r.hardware->id, r.model->id, r.engine,
                                r.backend, r.tp, r.kv_dtype, s.page_size);
  appendf(out, "GPU memory per rank     {:>10.2f} GiB\n", s.gpu_mib / 1024);
  appendf(out, "  weights               {:>10.2f} GiB  ({:.2f} GB, {} {}B params / TP {}{})\n", s.weights_mib / 1024,
          s.weights_mib * kMiB / 1e9, r.model->weight_dtype, r.model->parameters_b, r.tp,
          s.attention_dp > 1 ? fmt::format(", attention / TP {}", r.tp / s.attention_dp) : "");
  appendf(out, "  KV pool               {:>10.2f} GiB\n", s.kv_pool_mib / 1024);
  appendf(out, "  engine reserve        {:>10.2f} GiB  (not weights nor KV), holding by attnsim's estimates:\n",
          s.other_mib / 1024);
  appendf(out, "    activation peak     {:>10.2f} GiB  (at {} tokens)\n", s.activation_mib / 1024,
          s.max_batched_tokens);
  appendf(out, "    CUDA graphs         {:>10.2f} GiB  ({} decode + {} prefill sizes)\n", s.cuda_graph_mib / 1024,
          s.decode_graph_sizes, s.prefill_graph_sizes);
  appendf(out, "KV per token            {:>10.0f} B", s.kv.full_bytes);
  if (s.kv.windowed_layers > 0) {
    appendf(out, " (+ {:.0f} B in {} sliding-window layers, up to {} tokens)", s.kv.windowed_bytes,
            s.kv.windowed_layers, s.kv.max_window);
  }
  appendf(out, "\nKV capacity             {:>10} tokens, {} pages\n", s.kv_tokens, s.kv_pages);
  if (s.attention_dp > 1) {
    appendf(out,
            "DP attention            {:>10} tokens in the engine: {} attention replicas of TP {}, each GPU holding\n"
            "                        its replica's requests (attention weights {}x replicated)\n",
            s.engineKvTokens(), s.attention_dp, r.tp / s.attention_dp, s.attention_dp);
  }
  appendf(out, "scheduler               {} tokens per step, {} running requests\n", s.max_batched_tokens,
          s.max_running_requests);
  for (const auto& [name, value] : s.derived) appendf(out, "  {:<22}{:>10.6g}\n", name, value);
  if (!s.weightsFit()) out.append("\nDOES NOT FIT: the weights leave no room for a KV cache\n");
  appendf(out, "\n{}\nsource: {}\n", s.note, s.source);
  return out;
}

// A search where no rate meets the SLO has no rate's figures: they are null and slo_unmet says why.
json capacitySearchJson(const CapacitySearchRow& row, double target_rate) {
  if (!row.capacity) return {{"hardware", row.hardware}, {"engine", row.engine}, {"tp", row.tp}, {"error", row.error}};
  const CapacityReport& c = *row.capacity;
  const RateSearch& r = row.search;
  const bool met = r.slo_unmet.empty();
  auto figure = [met](double v) { return met ? json(v) : json(); };
  return {{"hardware", c.hardware->id},
          {"model", c.model->id},
          {"engine", c.engine},
          {"backend", c.backend},
          {"tp", c.tp},
          {"max_rate_rps", r.max_rate},
          // the step model's band carried through: the highest rate with every step at its band's slow and fast end
          {"max_rate_band_rps", met ? json::array({r.rate_slow_end, r.rate_fast_end}) : json()},
          {"slo_unmet", met ? json() : json(r.slo_unmet)},
          {"output_tokens_per_s", figure(r.at_max.output_tokens_per_s)},
          {"p99_ttft_ms", figure(r.at_max.ttft.p99 * 1e3)},
          {"p99_tpot_ms", figure(r.at_max.tpot.p99 * 1e3)},
          {"gpus_for_target", met && target_rate > 0 ? json(r.gpusFor(target_rate, c.tp)) : json()},
          {"simulations", r.simulations}};
}

std::string capacitySearchHeader(const CapacitySearchSpec& spec) {
  std::string out = fmt::format(
      "highest rate with p99 TTFT <= {:g} ms and p99 TPOT <= {:g} ms; {} requests, prompt {} / output {} tokens",
      spec.slo.ttft_s * 1e3, spec.slo.tpot_s * 1e3, spec.arrivals.requests, spec.arrivals.prompt_tokens,
      spec.arrivals.output_tokens);
  out.append(
      "\nband req/s: the highest rate with every step at the slow and the fast end of the step model's band\n\n");
  appendf(out, "{:<14}{:<26}{:>4}{:>12}{:>16}{:>12}{:>12}{:>12}{:>8}\n", "hardware", "engine:backend", "TP",
          "max req/s", "band req/s", "tokens/s", "p99 TTFT", "p99 TPOT", "GPUs");
  return out;
}

std::string capacitySearchText(const CapacitySearchRow& row, double target_rate) {
  if (!row.capacity) return fmt::format("{:<14}{:<26}{:>4}  {}\n", row.hardware, row.engine, row.tp, row.error);
  const CapacityReport& c = *row.capacity;
  const RateSearch& r = row.search;
  const std::string name = fmt::format("{}:{}", row.engine, c.backend);
  if (!r.slo_unmet.empty()) return fmt::format("{:<14}{:<26}{:>4}  {}\n", row.hardware, name, c.tp, r.slo_unmet);
  return fmt::format("{:<14}{:<26}{:>4}{:>12.2f}{:>16}{:>12.0f}{:>10.0f}ms{:>10.1f}ms{:>8}\n", row.hardware, name, c.tp,
                     r.max_rate, fmt::format("{:.2f}-{:.2f}", r.rate_slow_end, r.rate_fast_end),
                     r.at_max.output_tokens_per_s, r.at_max.ttft.p99 * 1e3, r.at_max.tpot.p99 * 1e3,
                     target_rate > 0 ? std::to_string(r.gpusFor(target_rate, c.tp)) : "-");
}

json capacityConfigJson(const CapacityConfigRow& r) {
  json row = {{"hardware", r.hardware}, {"model", r.model}, {"engine", r.engine},
              {"backend", r.backend},   {"tp", r.tp},       {"forced_backend", r.forced_backend}};
  if (!r.error.empty()) row["error"] = r.error;
  if (r.max_rate) row["max_rate_rps"] = *r.max_rate;
  if (r.sloUnmet()) row["slo_unmet"] = r.error;  // no rate meets the SLO: why
  if (r.split) row["kv_tokens"] = r.split->kv_tokens;
  return row;
}

// '(own)': the engine's own choice, apart from the same backend forced by the spec (as the report marks it).
std::string capacityConfigText(const CapacityConfigRow& r) {
  return fmt::format(
      "{:<10}{:<15}{:<32}{:>4}{:>12}  {}\n", r.hardware, r.model,
      fmt::format("{}:{}{}", r.engine, r.backend.empty() ? "-" : r.backend, r.forced_backend ? "" : " (own)"), r.tp,
      r.sloUnmet() ? "none"
      : r.max_rate ? fmt::format("{:.2f}", *r.max_rate)
                   : "-",
      r.error.substr(0, r.error.find('\n')));
}

}  // namespace attnsim
