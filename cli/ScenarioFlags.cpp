#include <fmt/format.h>

#include <cmath>

#include "cli/Commands.hpp"
#include "core/Error.hpp"
#include "study/Calibration.hpp"
#include "study/Store.hpp"
#include "study/SweepSpec.hpp"

namespace attnsim::cli {

namespace {

// A flag that takes a list in predict and rank, where one value is needed.
std::int64_t singleValue(const char* flag, const std::string& text, std::int64_t max) {
  std::vector<std::int64_t> values;
  try {
    values = parseIntList(text, 1, max);
  } catch (const InputError& e) {
    throw UsageError(fmt::format("{} {}", flag, e.what()));
  }
  if (values.size() != 1) throw UsageError(fmt::format("{} {}: one value here", flag, text));
  return values.front();
}

}  // namespace

CatalogSource GlobalOptions::catalogSource() const {
  CatalogSource source = CatalogSource::embedded();
  if (!catalog_dir.empty()) source.overlayDirectory(catalog_dir);
  return source;
}

std::shared_ptr<const Catalog> GlobalOptions::sharedCatalog() const {
  if (!loaded_ || loaded_dir_ != catalog_dir) {
    loaded_ =
        catalog_dir.empty() ? Catalog::embedded() : std::make_shared<const Catalog>(Catalog::load(catalogSource()));
    loaded_dir_ = catalog_dir;
  }
  return loaded_;
}

void ScenarioFlags::addServing(CLI::App& cmd) {
  cmd.add_option("--kv-dtype", kv_dtype, "KV-cache dtype as the engine spells it (auto, fp8, fp8_e4m3, ...)");
  cmd.add_option("--page-size", page_size, "KV-cache page (block) size in tokens (default: the engine's)");
  cmd.add_option("--spec-algorithm", spec_algorithm, "speculative decoding algorithm (eagle, eagle3, mtp, ngram)");
  cmd.add_option("--spec-topk", spec_topk, "speculative decoding topk (1 = chain, >1 = tree)");
  cmd.add_option("--spec-draft-tokens", spec_draft_tokens, "draft tokens verified per step");
  cmd.add_option("--cuda-version", cuda_version, "CUDA toolkit version (default 12.9)");
  cmd.add_flag("--prefix", has_prefix, "prefill runs over a cached prefix (prefix cache / chunked context)");
  cmd.add_option("--tp", tp, "tensor-parallel size")->check(CLI::Range(1, 1024));
  cmd.add_option("--weight-dtype", weight_dtype,
                 "the checkpoint's weight dtype instead of the model's (bf16, fp8, fp8_block, mxfp4, nvfp4 ...)");
  cmd.add_option("--option", engine_options, "engine-specific flag, name=value (repeatable)");
}

void ScenarioFlags::addStageBackends(CLI::App& cmd) {
  cmd.add_option("--prefill-backend", prefill_backend, "explicit prefill backend");
  cmd.add_option("--decode-backend", decode_backend, "explicit decode backend");
  cmd.add_option("--speculative-attention-mode", spec_attention_mode, "SGLang: prefill or decode");
}

void ScenarioFlags::addWorkload(CLI::App& cmd) {
  takes_workload = true;
  auto* phase_flag = cmd.add_option("--phase", phase, "batch phase")
                         ->check(CLI::IsMember({"prefill", "extend", "decode", "verify"}))
                         ->capture_default_str()
                         ->each([this](const std::string&) { phase_given = true; });
  auto* batch_flag =
      cmd.add_option("--batch", batch, "requests in the batch (predict, rank: a list or range, e.g. 1,8 or 1..256x2)")
          ->capture_default_str();
  auto* q_len_flag =
      cmd.add_option("--q-len", q_len,
                     "new tokens per request (extend and verify: required; decode: 1; prefill: the context)")
          ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 24));
  auto* context_flag = cmd.add_option("--context", context,
                                      "tokens each request attends to, new ones included (required unless --mix or "
                                      "--prefill-length; prefill: the prompt length; predict, rank: a list)");
  auto* prefill_flag =
      cmd.add_option("--prefill-length", prefill_length, "prefill prompts of this length (a list): --phase prefill");
  cmd.add_option("--mix", mix,
                 "a mixed batch COUNTxQ_LEN@CONTEXT,... (e.g. 1x2048@2048,31x1@4096: a prefill chunk and 31 "
                 "decodes); replaces --phase/--batch/--q-len/--context")
      ->excludes(phase_flag)
      ->excludes(batch_flag)
      ->excludes(q_len_flag)
      ->excludes(context_flag)
      ->excludes(prefill_flag);
  cmd.add_option("--cuda-graph", cuda_graph, "CUDA graphs")->check(CLI::IsMember({"on", "off"}))->capture_default_str();
  cmd.add_flag("--allow-context-beyond-max-position", allow_context_beyond_max_position,
               "accept a context longer than the model's max_position_embeddings (RoPE scaling, what-if)");
}

void ScenarioFlags::checkPrefillLength() const {
  if (prefill_length.empty()) return;
  if (phase_given && phase != "prefill") {
    throw UsageError(fmt::format(
        "--prefill-length {} asks for a prefill, but --phase is {}: give --phase {} with --context (and --q-len), "
        "or --phase prefill",
        prefill_length, phase, phase));
  }
  if (!context.empty()) {
    throw UsageError(fmt::format("--prefill-length {} and --context {} both give a prefill's length: give one",
                                 prefill_length, context));
  }
}

Workload ScenarioFlags::workload() const {
  if (!mix.empty()) return parseMix(mix);
  checkPrefillLength();
  const std::int64_t b = singleValue("--batch", batch, std::int64_t{1} << 24);
  if (!prefill_length.empty()) {
    const std::int64_t n = singleValue("--prefill-length", prefill_length, std::int64_t{1} << 26);
    return Workload::forPhase(Phase::Prefill, b, q_len, n);
  }
  const Phase p = parsePhase(phase);
  if (context.empty()) throw UsageError("--context is required for phase " + phase + " (or give --mix)");
  return Workload::forPhase(p, b, q_len, singleValue("--context", context, std::int64_t{1} << 26),
                            spec_topk.value_or(1));
}

void ScenarioFlags::addGeometry(CLI::App& cmd) {
  cmd.add_option("--num-heads", num_heads, "custom model: query heads");
  cmd.add_option("--num-kv-heads", geometry.num_kv_heads, "custom model: KV heads");
  cmd.add_option("--head-dim", head_dim, "custom model: head dimension");
  cmd.add_option("--head-dim-v", geometry.head_dim_v, "custom model: value head dimension");
  cmd.add_option("--num-layers", geometry.num_layers, "custom model: layers");
  cmd.add_option("--hidden-size", geometry.hidden_size, "custom model: hidden size");
  cmd.add_option("--intermediate-size", geometry.intermediate_size, "custom model: MLP size");
  cmd.add_option("--vocab-size", geometry.vocab_size, "custom model: vocabulary");
  cmd.add_option("--sliding-window", geometry.sliding_window, "custom model: sliding window (0 = full)");
}

void ScenarioFlags::addStudy(CLI::App& cmd) {
  cmd.add_option("--db", db, "use this study's calibrations (attnsim calibrate --db) instead of the catalog's");
}

Scenario ScenarioFlags::scenario(const std::string& hw, const std::string& model, const std::string& engine) const {
  Scenario s;
  s.hardware = hw;
  s.model = model;
  if (num_heads || head_dim) {
    s.geometry = geometry;
    s.geometry->num_heads = num_heads.value_or(0);
    s.geometry->head_dim = head_dim.value_or(0);
  }
  s.engine = engine;
  if (!backend.empty()) s.backend = backend;
  s.prefill_backend = prefill_backend;
  s.decode_backend = decode_backend;
  s.kernel = kernel;
  // Commands without the workload flags (select; check, which takes --phase alone) keep a nominal
  // batch: one request over 4096 tokens.
  constexpr std::int64_t kNominalContext = 4096;
  s.workload = takes_workload
                   ? workload()
                   : Workload::uniform(parsePhase(phase), singleValue("--batch", batch, std::int64_t{1} << 24), 1,
                                       kNominalContext, spec_topk.value_or(1));
  s.kv_dtype = kv_dtype;
  s.page_size = page_size;
  s.tp = tp;
  s.weight_dtype = weight_dtype;
  s.spec = {spec_algorithm, spec_topk, spec_draft_tokens, spec_attention_mode, std::nullopt, std::nullopt};
  s.has_prefix = has_prefix;
  s.cuda_version = cuda_version;
  s.cuda_graphs = cuda_graph == "on";
  s.engine_options = parseEngineOptions(engine_options);
  s.allow_context_beyond_max_position = allow_context_beyond_max_position;
  qualifyBackends(s);
  return s;
}

std::shared_ptr<const Catalog> ScenarioFlags::catalog(const GlobalOptions& global) const {
  if (db.empty()) return global.sharedCatalog();
  auto calibrated = std::make_shared<Catalog>(global.loadCatalog());
  applyStudyCalibrations(*calibrated, Store(db, StoreAccess::ReadOnly));
  return calibrated;
}

CLI::Validator positiveNumber() {
  return {[](const std::string& text) -> std::string {
            double v = 0;
            if (CLI::detail::lexical_cast(text, v) && std::isfinite(v) && v > 0) return {};
            return fmt::format("'{}' is not a number above 0", text);
          },
          "NUMBER > 0"};
}

CLI::Validator integerList(std::int64_t min, std::int64_t max) {
  return {[min, max](const std::string& text) -> std::string {
            try {
              parseIntList(text, min, max);
            } catch (const InputError& e) {
              return e.what();
            }
            return {};
          },
          fmt::format("INT in [{}, {}], ...", min, max)};
}

}  // namespace attnsim::cli
