#include <fmt/format.h>

#include "cli/Commands.hpp"
#include "core/Error.hpp"

namespace attnsim::cli {

Catalog GlobalOptions::loadCatalog() const {
  CatalogSource source = CatalogSource::embedded();
  if (!catalog_dir.empty()) source.overlayDirectory(catalog_dir);
  return Catalog::load(source);
}

std::vector<std::string> splitList(const std::string& text) {
  std::vector<std::string> out;
  std::string item;
  for (const char c : text + ",") {
    if (c == ',') {
      if (!item.empty()) out.push_back(item);
      item.clear();
    } else if (c != ' ') {
      item += c;
    }
  }
  return out;
}

void ScenarioFlags::addTo(CLI::App& cmd) {
  cmd.add_option("--engine", engines, "engine id(s): vllm, sglang, rtp-llm (comma list for a matrix)")->required();
  cmd.add_option("--hardware", hardware, "hardware profile id(s) (comma list for a matrix)")->required();
  cmd.add_option("--model", models, "model id(s) (comma list for a matrix)")->required();
  cmd.add_option("--kv-dtype", kv_dtype, "KV-cache dtype as the engine spells it (auto, fp8, fp8_e4m3, ...)");
  cmd.add_option("--page-size", page_size, "KV-cache page (block) size in tokens");
  cmd.add_option("--spec-algorithm", spec_algorithm, "speculative decoding algorithm (eagle, eagle3, mtp, ngram)");
  cmd.add_option("--spec-topk", spec_topk, "speculative decoding topk (1 = chain, >1 = tree)");
  cmd.add_option("--spec-draft-tokens", spec_draft_tokens, "draft tokens verified per step");
  cmd.add_option("--cuda-version", cuda_version, "CUDA toolkit version (default 12.9)");
  cmd.add_flag("--prefix", has_prefix, "prefill runs over a cached prefix (prefix cache / chunked context)");
  cmd.add_option("--tp", tp, "tensor-parallel size")->check(CLI::Range(1, 1024));
  cmd.add_option("--backend", backend, "explicit backend for both phases (NAME or engine:NAME)");
  cmd.add_option("--prefill-backend", prefill_backend, "explicit prefill backend");
  cmd.add_option("--decode-backend", decode_backend, "explicit decode backend");
  cmd.add_option("--speculative-attention-mode", speculative_attention_mode, "SGLang: prefill or decode");
  cmd.add_option("--option", engine_options, "engine-specific selection flag, name=value (repeatable)");
}

namespace {

std::optional<std::string> stripEngine(const std::optional<std::string>& name, const std::string& engine,
                                       const char* flag) {
  if (!name) return std::nullopt;
  const auto colon = name->find(':');
  if (colon == std::string::npos) return name;
  const std::string prefix = name->substr(0, colon);
  if (prefix != engine) {
    throw UsageError(
        fmt::format("{} {}: names engine '{}' but the scenario's engine is '{}'", flag, *name, prefix, engine));
  }
  return name->substr(colon + 1);
}

}  // namespace

ServingOptions ScenarioFlags::servingOptions(const std::string& engine) const {
  ServingOptions o;
  o.kv_dtype = kv_dtype;
  o.page_size = page_size;
  o.spec_algorithm = spec_algorithm;
  o.spec_topk = spec_topk;
  o.spec_draft_tokens = spec_draft_tokens;
  o.cuda_version = cuda_version;
  o.has_prefix = has_prefix;
  o.tp = tp;
  o.backend = stripEngine(backend, engine, "--backend");
  o.prefill_backend = stripEngine(prefill_backend, engine, "--prefill-backend");
  o.decode_backend = stripEngine(decode_backend, engine, "--decode-backend");
  o.speculative_attention_mode = speculative_attention_mode;
  parseEngineOptions(engine_options, o);
  return o;
}

void parseEngineOptions(const std::vector<std::string>& items, ServingOptions& o) {
  for (const auto& kv : items) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) throw UsageError("--option " + kv + ": expected name=value");
    o.engine_options[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
}

}  // namespace attnsim::cli
