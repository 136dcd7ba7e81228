// unit: extending the catalog never fails silently (issue 30): an input a prediction needs is
// required where it is needed, and the error names the file's key.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "catalog/Catalog.hpp"
#include "hardware/KernelEfficiency.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

std::string overlay(const std::string& name) {
  return std::string("--catalog ") + ATTNSIM_SOURCE_DIR + "/tests/data/overlays/" + name + " ";
}

bool has(const CommandResult& r, const std::string& text) { return r.output.find(text) != std::string::npos; }

// tests/data/overlays/no-link: the H100 profile under another id, without its interconnect_link.
TEST(Extending, AProfileWithoutALinkRefusesTensorParallelPredictionsNamingTheKey) {
  const std::string base = overlay("no-link") +
                           "predict --hardware h100-nolink --model llama-3.1-70b --engine vllm --phase decode "
                           "--batch 8 --context 2048";
  const auto tp2 = runAttnsim(base + " --tp 2");
  EXPECT_EQ(tp2.exit_code, 2) << tp2.output;
  EXPECT_TRUE(has(tp2, "has no interconnect_link")) << tp2.output;
  EXPECT_TRUE(has(tp2, "--tp 1")) << tp2.output;
  // One GPU communicates nothing: the profile serves it as before.
  const auto tp1 = runAttnsim(overlay("no-link") +
                              "predict --hardware h100-nolink --model llama-3.1-8b --engine vllm --phase decode "
                              "--batch 8 --context 2048");
  EXPECT_EQ(tp1.exit_code, 0) << tp1.output;
  // The same GPU with its link predicts TP 2, with the all-reduces in the step.
  EXPECT_EQ(runAttnsim("predict --hardware h100-sxm --model llama-3.1-70b --engine vllm --phase decode --batch 8 "
                       "--context 2048 --tp 2")
                .exit_code,
            0);
}

TEST(Extending, AMisplacedOverlayFileIsAnErrorWithTheNearestFolder) {
  // tests/data/overlays/misplaced-folder: the no-link profile under hardware/profile/, one letter off.
  const auto r = runAttnsim(overlay("misplaced-folder") + "list hardware");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r, "'hardware/profile/h100-nolink.yaml' is in no catalog folder")) << r.output;
  EXPECT_TRUE(has(r, "did you mean 'hardware/profiles'")) << r.output;
  // tests/data/overlays/misplaced-file: a file that is not YAML in a catalog folder would be skipped just the same.
  const auto md = runAttnsim(overlay("misplaced-file") + "list models");
  EXPECT_EQ(md.exit_code, 2) << md.output;
  EXPECT_TRUE(has(md, "is not a .yaml file")) << md.output;
  // In its folder the same profile loads.
  const auto ok = runAttnsim(overlay("no-link") + "list hardware");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_TRUE(has(ok, "h100-nolink")) << ok.output;
}

// An overlay's new backend is in no table of SGLang's document: `docs` says so instead of leaving it out.
TEST(Extending, DocsNamesAnOverlayBackendThatNoTableLists) {
  const auto docs = runAttnsim(overlay("kernel-limits") + "docs --engine sglang");
  EXPECT_EQ(docs.exit_code, 0) << docs.output;
  EXPECT_TRUE(has(docs, "sglang backends in no table of the document above")) << docs.output;
  EXPECT_TRUE(has(docs, "fa3_limited")) << docs.output;
}

// tests/data/overlays/kernel-limits: an SGLang backend declaring head_sizes [64, 128] and
// kv_cache_dtypes [auto, fp8_e4m3], and a model with 256-wide heads. SGLang checks neither field, so
// select, rank, predict and check refuse what the kernel cannot run, as the kernel's limit.
TEST(Extending, ADeclaredLimitTheEngineDoesNotCheckIsTheKernelsLimit) {
  const std::string o = overlay("kernel-limits");
  const std::string hd256 = " --engine sglang --hardware h100-sxm --model llama-hd256 --backend fa3_limited";
  const std::string e5m2 =
      " --engine sglang --hardware h100-sxm --model llama-3.1-8b --backend fa3_limited "
      "--kv-dtype fp8_e5m2";
  const std::string head_reason = "kernel limit: head size 256 is not in head_sizes (64, 128) declared in";
  const std::string kv_reason = "kernel limit: KV cache fp8_e5m2 is not in kv_cache_dtypes (auto, fp8_e4m3)";
  const auto select = runAttnsim(o + "select" + hd256 + " --explain");
  EXPECT_EQ(select.exit_code, 1) << select.output;
  EXPECT_TRUE(has(select, "SGLang accepts fa3_limited for the prefill stage, but its kernel cannot run"))
      << select.output;
  EXPECT_TRUE(has(select, head_reason)) << select.output;
  // --explain names the kernel's limit and the file that declares it, not an engine rule.
  EXPECT_TRUE(has(select, "rule:   kernel limit: head_sizes (the engine does not check it)")) << select.output;
  EXPECT_TRUE(has(select, "kernel-limits/backends/sglang/fa3_limited.yaml:11")) << select.output;
  const auto predict = runAttnsim(o + "predict" + e5m2 + " --phase decode --batch 8 --context 2048");
  EXPECT_EQ(predict.exit_code, 1) << predict.output;
  EXPECT_TRUE(has(predict, kv_reason)) << predict.output;
  const auto check = runAttnsim(o + "check --backend sglang:fa3_limited --model llama-hd256 --hardware h100-sxm");
  EXPECT_EQ(check.exit_code, 1) << check.output;
  EXPECT_TRUE(has(check, head_reason)) << check.output;
  const auto rank = runAttnsim(o +
                               "rank --engine sglang --hardware h100-sxm --model llama-hd256 --phase decode "
                               "--batch 8 --context 2048");
  EXPECT_TRUE(has(rank, "sglang:fa3_limited")) << rank.output;
  EXPECT_TRUE(has(rank, head_reason)) << rank.output;
  // Within its limits the backend runs: head dim 128, an E4M3 cache.
  const auto ok = runAttnsim(o +
                             "check --backend sglang:fa3_limited --model llama-3.1-8b --hardware h100-sxm "
                             "--kv-dtype fp8_e4m3");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  // A kernel family's kv_dtypes is a limit too: SGLang lets fa3 decode an fp8_e5m2 cache when it is named
  // for the decode stage alone, and FA3 reads E4M3 only.
  const auto fa3 = runAttnsim(
      "select --engine sglang --hardware h100-sxm --model llama-3.1-8b --kv-dtype fp8_e5m2 "
      "--prefill-backend triton --decode-backend fa3");
  EXPECT_EQ(fa3.exit_code, 1) << fa3.output;
  EXPECT_TRUE(has(fa3, "kernel limit: decode kernel fa3 reads a KV cache of fp16, bf16, fp8_e4m3")) << fa3.output;
}

// tests/data/overlays/unread-limit: an SGLang backend declaring block_sizes, which no rule of SGLang reads.
TEST(Extending, ADeclaredLimitNoRuleReadsIsACatalogError) {
  const auto r = runAttnsim(overlay("unread-limit") + "list backends");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r,
                  "fa3_blocks.yaml:10:14: 'block_sizes': backend sglang:fa3_blocks declares block_sizes, but no "
                  "rule of sglang reads it"))
      << r.output;
  EXPECT_TRUE(has(r, "add {check: block_size} to backends/sglang/engine.yaml")) << r.output;
}

// calibrate --export into an overlay writes h100-sxm.yaml, which replaces the shipped file of that
// name: the new fits are merged with the catalog's, and the output says what was added, replaced and kept.
TEST(Extending, ExportingACalibrationIntoAnOverlayKeepsTheCatalogsOtherFits) {
  OverlayDir overlay, study;  // the overlay holds catalog files only
  const std::string db = (study.path() / "study.db").string();
  const std::string sample = std::string(ATTNSIM_SOURCE_DIR) + "/tests/data/measurements_sample.csv";
  ASSERT_EQ(runAttnsim("measurements import " + sample + " --db " + db).exit_code, 0);
  const auto fit = runAttnsim("calibrate --db " + db + " --hardware h100-sxm --export " +
                              (overlay.path() / "hardware" / "calibrations").string());
  ASSERT_EQ(fit.exit_code, 0) << fit.output;
  EXPECT_TRUE(has(fit, "(merged with hardware/calibrations/h100-sxm.yaml)")) << fit.output;
  EXPECT_TRUE(has(fit, "replaced: cudnn-fmha (decode, extend, prefill), fa2 (decode, extend, prefill)")) << fit.output;
  EXPECT_TRUE(has(fit, "kept:     fa3, fa3-mla, fa4, flex-attention, flex-attention-vllm")) << fit.output;
  const Catalog c = overlay.load();
  const auto& fits = c.hardware("h100-sxm").calibrations;
  // The shipped fit of a family the sample does not measure stays, with its own source.
  const auto kept = fits.find({"triton-sglang", "decode"});
  ASSERT_NE(kept, fits.end());
  EXPECT_NE(kept->second.source.find("measurements/data/h100/engine_kernels.csv"), std::string::npos)
      << kept->second.source;
  const auto refit = fits.find({"fa2", "decode"});
  ASSERT_NE(refit, fits.end());
  EXPECT_NE(refit->second.source.find("measurements_sample.csv"), std::string::npos) << refit->second.source;
  // The shipped launch and graph costs are replaced by the sample's, which measured them.
  EXPECT_NE(c.hardware("h100-sxm").overheads.source.find("measurements_sample.csv"), std::string::npos);
}

// A fit from 1 point for 4 parameters reported ±0%, from 6 points ±2%: a band reflects how much the
// fit knows (hardware/KernelEfficiency.hpp bandOf).
TEST(Extending, AFitFromFewPointsPerParameterIsAThinFitWithAtLeastThePublishedBand) {
  KernelEfficiency e;
  e.provenance = Provenance::Measured;
  e.fit_points = 1;  // one point, fitted exactly
  EXPECT_EQ(bandOf(e).basis, BandBasis::ThinFit);
  EXPECT_DOUBLE_EQ(bandOf(e).band, kPublishedBand);
  e.fit_points = 6;
  e.fit_mape = 0.01;
  EXPECT_EQ(bandOf(e).basis, BandBasis::ThinFit);
  EXPECT_DOUBLE_EQ(bandOf(e).band, kPublishedBand);
  // Enough points: the in-sample MAPE scaled to a p90 and to new points (n / (n - 4)).
  e.fit_points = 40;
  e.fit_mape = 0.05;
  EXPECT_EQ(bandOf(e).basis, BandBasis::Fit);
  EXPECT_DOUBLE_EQ(bandOf(e).band, kFitMapeToP90 * 0.05 * 40.0 / 36.0);
  // Two held-out points are too few for a p90; four or more replace the fit's own figure.
  e.heldout = HeldOutResiduals{0.01, 0.01, 2};
  EXPECT_EQ(bandOf(e).basis, BandBasis::Fit);
  e.heldout = HeldOutResiduals{0.03, 0.06, 8};
  EXPECT_EQ(bandOf(e).basis, BandBasis::HeldOut);
  EXPECT_DOUBLE_EQ(bandOf(e).band, 0.06);
  // calibrate says which fits are thin: the sample measures 2 extend points per family.
  OverlayDir study;
  const std::string db = (study.path() / "study.db").string();
  const std::string sample = std::string(ATTNSIM_SOURCE_DIR) + "/tests/data/measurements_sample.csv";
  ASSERT_EQ(runAttnsim("measurements import " + sample + " --db " + db).exit_code, 0);
  const auto fit = runAttnsim("calibrate --db " + db + " --hardware h100-sxm");
  ASSERT_EQ(fit.exit_code, 0) << fit.output;
  EXPECT_TRUE(has(fit, "40%  thin fit")) << fit.output;
  EXPECT_TRUE(has(fit, "3 thin fit(s): fewer than 3 points per fitted parameter")) << fit.output;
}

// `predict --phase extend --prefill-length 512 --context 4096` ran as a prefill of 512: a flag that
// does not apply is refused, never dropped.
TEST(Extending, APrefillLengthWithAnotherPhaseOrAContextIsRefusedNotDropped) {
  const std::string base = "predict --hardware h100-sxm --model llama-3.1-8b --engine vllm";
  const auto extend = runAttnsim(base + " --phase extend --prefill-length 512 --context 4096 --q-len 512");
  EXPECT_EQ(extend.exit_code, 2) << extend.output;
  EXPECT_TRUE(has(extend, "--prefill-length 512 asks for a prefill, but --phase is extend")) << extend.output;
  const auto both = runAttnsim(base + " --prefill-length 512 --context 4096");
  EXPECT_EQ(both.exit_code, 2) << both.output;
  EXPECT_TRUE(has(both, "--prefill-length 512 and --context 4096 both give a prefill's length")) << both.output;
  // rank's list path refuses the same way.
  const auto rank = runAttnsim(
      "rank --hardware h100-sxm --model llama-3.1-8b --engine vllm --phase decode "
      "--prefill-length 512,1024");
  EXPECT_EQ(rank.exit_code, 2) << rank.output;
  // Alone, or with --phase prefill, it is the prompt length.
  EXPECT_EQ(runAttnsim(base + " --prefill-length 512").exit_code, 0);
  EXPECT_EQ(runAttnsim(base + " --phase prefill --prefill-length 512").exit_code, 0);
}

// tests/data/overlays/engine-order: a new SGLang backend (fa3_tuned) and two small files under
// backends/<engine>/order/ that put a branch into SGLang's default order and into vLLM's priority lists,
// with no copy of either engine.yaml.
TEST(Extending, AnOverlayInsertsABackendIntoTheEnginesOrderWithoutCopyingIt) {
  const std::string dir = std::string(ATTNSIM_SOURCE_DIR) + "/tests/data/overlays/engine-order";
  EXPECT_FALSE(std::filesystem::exists(dir + "/backends/sglang/engine.yaml"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/backends/vllm/engine.yaml"));
  const std::string o = overlay("engine-order");
  const std::string llama = " --engine sglang --hardware h100-sxm --model llama-3.1-8b";
  const auto tuned = runAttnsim(o + "select" + llama);
  EXPECT_EQ(tuned.exit_code, 0) << tuned.output;
  EXPECT_TRUE(has(tuned, "backend   fa3_tuned")) << tuned.output;
  EXPECT_TRUE(has(tuned, "Llama on Hopper: fa3_tuned (tuned FA3 build) by default")) << tuned.output;
  // The shipped catalog keeps SGLang's own default; the branch's condition keeps it off other models and GPUs.
  EXPECT_TRUE(has(runAttnsim("select" + llama), "backend   fa3 ")) << runAttnsim("select" + llama).output;
  EXPECT_TRUE(has(runAttnsim(o + "select --engine sglang --hardware h100-sxm --model gpt-oss-20b"), "backend   fa3 "));
  EXPECT_TRUE(
      has(runAttnsim(o + "select --engine sglang --hardware b200 --model llama-3.1-8b"), "backend   trtllm_mha"));
  // vLLM: TRITON_ATTN goes before FLASH_ATTN in every list that has it, for models with sinks only.
  const std::string sinks = " --engine vllm --hardware h100-sxm --model gpt-oss-20b";
  EXPECT_TRUE(has(runAttnsim(o + "select" + sinks), "backend   TRITON_ATTN"))
      << runAttnsim(o + "select" + sinks).output;
  EXPECT_FALSE(has(runAttnsim("select" + sinks), "backend   TRITON_ATTN"));
  EXPECT_TRUE(
      has(runAttnsim(o + "select --engine vllm --hardware h100-sxm --model llama-3.1-8b"), "backend   FLASH_ATTN"));
  // The loaded order holds the inserted branches, each naming the file that put it there.
  OverlayDir copy;
  copy.write("backends/sglang/fa3_tuned.yaml", readFile(dir + "/backends/sglang/fa3_tuned.yaml"));
  copy.write("backends/sglang/order/fa3_tuned.yaml", readFile(dir + "/backends/sglang/order/fa3_tuned.yaml"));
  const Catalog c = copy.load();
  const PriorityList* order = c.engine("sglang").policy.list("default");
  ASSERT_NE(order, nullptr);
  const auto at = std::find(order->order.begin(), order->order.end(), "fa3_tuned");
  ASSERT_NE(at, order->order.end());
  EXPECT_EQ(*(at + 1), "fa3");  // before the first fa3 branch
  EXPECT_NE(order->branches[at - order->order.begin()].inserted_by.find("order/fa3_tuned.yaml"), std::string::npos);
}

// An insert's anchor or list that the engine's order lacks is a catalog error at its line, with the
// nearest name; so is a file under order/ that inserts nothing.
TEST(Extending, AnOrderInsertWithAnUnknownAnchorIsACatalogErrorWithTheNearestName) {
  OverlayDir dir;
  dir.write("backends/sglang/order/mine.yaml",
            "insert:\n  - backend: triton\n    when: \"has_sink\"\n    before: fa33\n    source: \"test\"\n");
  const auto r = runAttnsim("--catalog " + dir.path().string() + " list backends");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r, "order/mine.yaml:4")) << r.output;
  EXPECT_TRUE(has(r, "no branch of the order picks 'fa33'")) << r.output;
  EXPECT_TRUE(has(r, "did you mean 'fa3'")) << r.output;
  OverlayDir label;
  label.write("backends/vllm/order/mine.yaml",
              "list: Standard\ninsert:\n  - {backend: TRITON_ATTN, before: FLASH_ATTN, source: \"test\"}\n");
  const auto l = runAttnsim("--catalog " + label.path().string() + " list backends");
  EXPECT_EQ(l.exit_code, 2) << l.output;
  EXPECT_TRUE(has(l, "mine.yaml:1")) << l.output;
  EXPECT_TRUE(has(l, "vllm has no selection list labelled 'Standard'")) << l.output;
  OverlayDir unknown;
  unknown.write("backends/sglang/order/mine.yaml",
                "insert:\n  - {backend: fa3_fast, before: fa3, when: \"sm90\", source: \"test\"}\n");
  const auto u = runAttnsim("--catalog " + unknown.path().string() + " list backends");
  EXPECT_EQ(u.exit_code, 2) << u.output;
  EXPECT_TRUE(has(u, "unknown backend 'fa3_fast'")) << u.output;
  OverlayDir both;
  both.write("backends/sglang/order/mine.yaml",
             "insert:\n  - {backend: triton, before: fa3, after: fa4, source: \"test\"}\n");
  EXPECT_TRUE(
      has(runAttnsim("--catalog " + both.path().string() + " list backends"), "name exactly one of before: or after:"));
}

// select --explain walks the order branch by branch: each earlier branch with why it did not pick (its
// condition false, or its backend not valid here), the branch that picked, each with its source.
TEST(Extending, SelectExplainNamesTheOrderBranchByBranch) {
  const auto text = runAttnsim("select --engine sglang --hardware h100-sxm --model llama-3.1-8b --explain");
  EXPECT_EQ(text.exit_code, 0) << text.output;
  EXPECT_TRUE(has(text, "order 'default': the first branch whose condition holds")) << text.output;
  EXPECT_TRUE(has(text, "sm90=true")) << text.output;
  EXPECT_TRUE(has(text, "trtllm_mla       condition false")) << text.output;
  EXPECT_TRUE(has(text, "fa3              picked")) << text.output;
  EXPECT_TRUE(has(text, "when:   sm90 && (use_mla || mha_spec_ok)")) << text.output;
  EXPECT_TRUE(has(text, "source: arg_groups/model_override_base.py:get_default_attn_backend @ 00d56e2c (MHA and MLA"))
      << text.output;
  const auto answer = runAttnsim("--json select --engine sglang --hardware h100-sxm --model llama-3.1-8b --explain");
  ASSERT_EQ(answer.exit_code, 0) << answer.output;
  const auto order = nlohmann::json::parse(answer.output).at("explain").at("order");
  ASSERT_EQ(order.size(), 1U);
  EXPECT_EQ(order[0].at("pick"), "first_match");
  const auto& branches = order[0].at("branches");
  ASSERT_GE(branches.size(), 2U);
  for (std::size_t i = 0; i + 1 < branches.size(); ++i) {
    EXPECT_EQ(branches[i].at("outcome"), "condition false") << branches[i].dump();
    EXPECT_FALSE(branches[i].at("when").is_null()) << branches[i].dump();
    EXPECT_FALSE(branches[i].at("source").get<std::string>().empty()) << branches[i].dump();
  }
  EXPECT_EQ(branches.back().at("backend"), "fa3");
  EXPECT_EQ(branches.back().at("outcome"), "picked");
  // vLLM validates each branch it reaches: with the overlay's TRITON_ATTN branch, a model without sinks
  // passes it by its condition, and FLASH_ATTN picks.
  const auto vllm = runAttnsim(overlay("engine-order") +
                               "--json select --engine vllm --hardware h100-sxm --model llama-3.1-8b --explain");
  ASSERT_EQ(vllm.exit_code, 0) << vllm.output;
  const auto walk = nlohmann::json::parse(vllm.output).at("explain").at("order").at(0);
  EXPECT_EQ(walk.at("pick"), "first_valid");
  EXPECT_EQ(walk.at("branches").at(0).at("backend"), "TRITON_ATTN");
  EXPECT_EQ(walk.at("branches").at(0).at("outcome"), "condition false");
  EXPECT_NE(walk.at("branches").at(0).at("inserted_by").get<std::string>().find("triton-for-sinks.yaml"),
            std::string::npos);
  EXPECT_EQ(walk.at("branches").at(1).at("outcome"), "picked");
  // A branch whose backend cannot serve the scenario: FA2 on an A100 has no sinks, nor has FlashInfer.
  const auto a100 = runAttnsim("--json select --engine vllm --hardware a100-sxm-80g --model gpt-oss-20b --explain");
  ASSERT_EQ(a100.exit_code, 0) << a100.output;
  const auto fa2 = nlohmann::json::parse(a100.output).at("explain").at("order").at(0).at("branches").at(0);
  EXPECT_EQ(fa2.at("backend"), "FLASH_ATTN");
  EXPECT_EQ(fa2.at("outcome"), "not valid");
  EXPECT_FALSE(fa2.at("reasons").empty()) << fa2.dump();
  EXPECT_NE(fa2.at("source").get<std::string>().find("_get_backend_priorities"), std::string::npos);
}

}  // namespace
}  // namespace attnsim::test
