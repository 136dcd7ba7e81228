#include "simulator/ServeSpec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/Error.hpp"
#include "core/Strings.hpp"

namespace attnsim {

const std::vector<std::string>& servedSpecAlgorithms() {
  static const std::vector<std::string> algorithms{"eagle", "eagle3", "mtp"};
  return algorithms;
}

std::optional<SpecDecodeConfig> specDecodeOf(const Scenario& s) {
  const SpecDecoding& d = s.spec;
  if (!d.algorithm && !d.num_steps && !d.accept_length && !d.draft_tokens && !d.topk) return std::nullopt;
  const std::string algorithm = d.algorithm.value_or("");
  if (std::find(servedSpecAlgorithms().begin(), servedSpecAlgorithms().end(), algorithm) ==
      servedSpecAlgorithms().end()) {
    throw UsageError(
        fmt::format("speculative decoding '{}': serve-sim runs {} (--speculative-algorithm EAGLE, EAGLE3 or NEXTN; "
                    "--speculative-config with method eagle, eagle3 or mtp)",
                    algorithm.empty() ? "(no algorithm)" : algorithm, join(servedSpecAlgorithms(), ", ")));
  }
  if (!d.num_steps || *d.num_steps < 1) {
    throw UsageError(
        "speculative decoding: give the draft steps, --speculative-num-steps N or --speculative-config "
        "'{\"num_speculative_tokens\": N}' (N >= 1)");
  }
  SpecDecodeConfig c;
  c.algorithm = algorithm;
  c.num_steps = *d.num_steps;
  c.topk = d.topk.value_or(1);
  if (c.topk < 1) throw UsageError(fmt::format("--speculative-eagle-topk {}: expected 1 or more", c.topk));
  if (c.topk == 1) {
    c.draft_tokens = c.num_steps + 1;  // a chain verifies its drafts and the last verified token
  } else if (!d.draft_tokens || *d.draft_tokens < 2) {
    throw UsageError(
        "speculative decoding with --speculative-eagle-topk > 1: give --speculative-num-draft-tokens (>= 2)");
  } else {
    c.draft_tokens = *d.draft_tokens;
  }
  const auto most = static_cast<double>(c.num_steps + 1);
  if (!d.accept_length || !std::isfinite(*d.accept_length) || *d.accept_length < 1 || *d.accept_length > most) {
    throw UsageError(
        fmt::format("speculative decoding: give --spec-accept-length, the mean tokens a verify step emits per request "
                    "(the bonus token included), in [1, {}] for {} draft steps (e.g. 2.77: EAGLE-3 on Llama-3.1-8B, "
                    "MT-bench, 7 drafts; 1.85-1.9: DeepSeek-V3's MTP; docs/CAPACITY.md)",
                    most, c.num_steps));
  }
  c.accept_length = *d.accept_length;
  return c;
}

ModelSpec draftModelOf(const ModelSpec& target, const std::string& algorithm) {
  ModelSpec d = target;
  d.id = fmt::format("{}-{}-draft", target.id, algorithm);
  d.num_layers = 1;
  d.encoder.reset();
  if (algorithm == "mtp") {
    if (d.moe) d.moe->first_dense_layers = 0;  // DeepSeek's MTP module: one MoE decoder layer
    if (!d.layer_pattern.empty()) d.layer_pattern = {d.layer_pattern.back()};
  } else {
    d.moe.reset();  // the EAGLE head: one dense Llama decoder layer at the target's width
    d.layer_pattern = {target.primaryLayer().name};
  }
  const double layer_share = target.num_layers > 0 ? 1.0 / target.num_layers : 1.0;
  d.parameters_b = target.parameters_b * layer_share;
  if (d.active_parameters_b) d.active_parameters_b = *d.active_parameters_b * layer_share;
  return d;
}

}  // namespace attnsim
