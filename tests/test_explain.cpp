// select --explain: the rule that decided each stage's backend and each rejection, with the
// engine source it is read from.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "TestSupport.hpp"

namespace attnsim::test {
namespace {

// SGLang's default comes from a rule (get_default_attn_backend), not from the user: "chosen by"
// names the rule's source rather than "explicit".
TEST(Explain, SglangDefaultIsChosenByGetDefaultAttnBackendRule) {
  const Selection s = selectionOf(engineScenario("sglang", "h100-sxm", "llama-3.1-8b"));
  ASSERT_TRUE(s.decode);
  EXPECT_EQ(s.decode->how.rfind("rule ", 0), 0U) << s.decode->how;
  EXPECT_NE(s.decode->decided_by.source.find("get_default_attn_backend"), std::string::npos);
  EXPECT_NE(s.decode->decided_by.rule.find("attention_backend == null"), std::string::npos);
}

TEST(Explain, ExplicitBackendIsChosenByTheUsersFlag) {
  Scenario sc = engineScenario("sglang", "h100-sxm", "llama-3.1-8b");
  sc.backend = "triton";
  const Selection s = selectionOf(sc);
  ASSERT_TRUE(s.decode);
  EXPECT_EQ(s.decode->how, "explicit");
  EXPECT_NE(s.decode->decided_by.rule.find("attention_backend"), std::string::npos);
}

// vLLM walks a priority list: the list's label, order and source decide.
TEST(Explain, VllmDefaultIsChosenByThePriorityList) {
  const Selection s = selectionOf(engineScenario("vllm", "h100-sxm", "llama-3.1-8b"));
  ASSERT_TRUE(s.decode);
  EXPECT_EQ(s.decode->decided_by.rule.rfind("priority list", 0), 0U);
  EXPECT_NE(s.decode->decided_by.source.find("cuda.py"), std::string::npos) << s.decode->decided_by.source;
}

// trtllm_mha on Hopper: refused by the descriptor's SM100 prefill requirement.
TEST(Explain, SglangTrtllmMhaRefusalNamesTheSm100PrefillRequirement) {
  Scenario sc = engineScenario("sglang", "h100-sxm", "llama-3.1-8b");
  sc.backend = "trtllm_mha";
  const Selection s = selectionOf(sc);
  ASSERT_TRUE(s.refusal);
  EXPECT_NE(s.refused_by.rule.find("cc_major != 10"), std::string::npos) << s.refused_by.rule;
  EXPECT_FALSE(s.refused_by.source.empty());
}

// A rule's error (SGLang's DSA KV dtype check) is its own decider.
TEST(Explain, RuleErrorRefusalCitesTheRule) {
  Scenario sc = engineScenario("sglang", "h100-sxm", "deepseek-v3.2");
  sc.kv_dtype = "fp8_e5m2";
  const Selection s = selectionOf(sc);
  ASSERT_TRUE(s.refusal);
  EXPECT_NE(s.refused_by.source.find("_dsa_kv_cache_dtype_default"), std::string::npos) << s.refused_by.source;
}

// Every rejection of every engine on a few platforms carries a rule and a source.
TEST(Explain, EveryRejectionHasARuleAndASource) {
  for (const auto* engine : {"vllm", "sglang", "rtp-llm"}) {
    for (const auto* hw : {"h100-sxm", "mi300x", "xeon-spr-amx"}) {
      for (const auto* model : {"llama-3.1-8b", "deepseek-v3"}) {
        const Selection s = selectionOf(engineScenario(engine, hw, model));
        EXPECT_EQ(s.rejected.size(), s.rejected_why.size());
        for (const auto& [name, why] : s.rejected_why) {
          for (const auto& f : why) {
            EXPECT_FALSE(f.reason.empty() || f.rule.empty() || f.source.empty()) << engine << " " << hw << " " << name;
          }
        }
      }
    }
  }
}

// The catalog cites a source for every rule, priority list and validation check.
TEST(Explain, EveryRuleListAndCheckCitesASource) {
  for (const auto& e : defaultCatalog().engines()) {
    for (const auto& r : e.policy.rules) EXPECT_FALSE(r.source.empty()) << e.policy.engine << " rule " << r.note.text;
    for (const auto& l : e.policy.selection) EXPECT_FALSE(l.source.empty()) << e.policy.engine << " " << l.label;
    for (const auto& c : e.policy.validation) {
      if (c.check != "requirements") {
        EXPECT_FALSE(c.source.empty()) << e.policy.engine << " check " << c.check;
      }
    }
  }
}

// Each branch of an engine's order carries its own engine source (select --explain prints it per branch),
// and SGLang's default is an order: its model overrides and generic defaults are branches, not one rule.
TEST(Explain, EveryOrderBranchCitesItsEngineSource) {
  for (const auto& e : defaultCatalog().engines()) {
    for (const auto& l : e.policy.selection) {
      ASSERT_EQ(l.branches.size(), l.order.size()) << e.policy.engine << " " << l.label;
      for (const auto& b : l.branches) EXPECT_FALSE(b.source.empty()) << e.policy.engine << " " << b.backend;
    }
  }
  const PriorityList* order = defaultCatalog().engine("sglang").policy.list("default");
  ASSERT_NE(order, nullptr);
  EXPECT_TRUE(order->first_match);
  EXPECT_GE(std::count(order->order.begin(), order->order.end(), "fa3"), 2);  // GPT-OSS's and the generic one
}

TEST(Explain, CommandShowsRuleAndSourceInTextAndJson) {
  const auto text = runAttnsim("select --engine sglang --hardware h100-sxm --model llama-3.1-8b --explain");
  EXPECT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("rule:   rule when"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("source: arg_groups/model_override_base.py"), std::string::npos);
  const auto answer = runAttnsim("--json select --engine sglang --hardware h100-sxm --model llama-3.1-8b --explain");
  const auto j = nlohmann::json::parse(answer.output);
  EXPECT_NE(j["explain"]["chosen"]["decode"]["decided_by"]["source"].get<std::string>().find("get_default_attn"),
            std::string::npos);
  EXPECT_FALSE(j["explain"]["rejected"]["aiter"][0]["source"].get<std::string>().empty());
  const auto plain = runAttnsim("--json select --engine sglang --hardware h100-sxm --model llama-3.1-8b");
  EXPECT_FALSE(nlohmann::json::parse(plain.output).contains("explain"));
}

}  // namespace
}  // namespace attnsim::test
