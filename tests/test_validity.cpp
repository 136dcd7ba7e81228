// One validity rule for every command: over the whole default catalog (every engine × hardware
// profile × model × phase), the backends `rank` treats as valid are exactly the names for which
// `select --backend NAME` accepts the scenario and runs NAME in the phase's stage; every other
// name is either refused with the engine's reason (the same text in both commands) or runs as a
// backend that `rank` itself lists (docs/SELECTION.md "Validity").
#include <gtest/gtest.h>

#include <set>

#include "TestSupport.hpp"
#include "core/Error.hpp"

namespace attnsim::test {
namespace {

struct SelectAnswer {
  std::set<std::string> runs;                     // names select --backend NAME runs in the stage
  std::map<std::string, std::string> refusals;    // name -> the engine's refusal
  std::map<std::string, std::string> runs_other;  // name -> what runs instead
  std::string engine_default;                     // select without --backend; "" when refused
};

SelectAnswer selectAnswers(const Scenario& base, const Engine& e) {
  SelectAnswer a;
  const bool prefill = base.workload.phase == Phase::Prefill;
  auto stageName = [prefill](const Selection& s) { return nameOf(prefill ? s.prefill : s.decode); };
  const Selection own = selectBackends(defaultCatalog(), base).selection;
  if (!own.refusal) a.engine_default = stageName(own);
  for (const auto& name : backendNames(e)) {
    Scenario s = base;
    s.backend = name;
    const Selection sel = selectBackends(defaultCatalog(), s).selection;
    if (sel.refusal) {
      a.refusals[name] = *sel.refusal;
    } else if (stageName(sel) == name) {
      a.runs.insert(name);
    } else {
      a.runs_other[name] = stageName(sel);
    }
  }
  return a;
}

struct RankAnswer {
  std::set<std::string> valid;
  std::map<std::string, std::string> invalid, resolved;
  std::string engine_default;
};

RankAnswer rankAnswers(const Scenario& s, const std::string& engine) {
  RankAnswer a;
  Ranking r;
  try {
    r = rankBackends(defaultCatalog(), s, {engine});
  } catch (const EngineRefusal&) {
    // nothing valid: the ranking is empty, so the invalid map is not available; select decides alone
    return a;
  }
  const std::string prefix = engine + ":";
  for (const auto& b : r.ranked) {
    a.valid.insert(b.backend);
    if (b.engine_default) a.engine_default = b.backend;
  }
  for (const auto& [name, why] : r.invalid) a.invalid[name.substr(prefix.size())] = why;
  for (const auto& [name, runs] : r.resolved) a.resolved[name.substr(prefix.size())] = runs.first.substr(prefix.size());
  return a;
}

void compare(const Scenario& s, const SelectAnswer& sel, const RankAnswer& rank, int& mismatches) {
  const std::string where =
      s.engine + " × " + s.hardware + " × " + s.model + " × " + std::string(phaseName(s.workload.phase));
  EXPECT_EQ(rank.valid, sel.runs) << where;
  for (const auto& [name, refusal] : sel.refusals) {
    EXPECT_FALSE(refusal.empty()) << where << ": " << name << " refused without a reason";
    EXPECT_EQ(refusal.find("[]"), std::string::npos) << where << ": " << name << " refused with no reasons";
    if (!rank.valid.empty()) {
      EXPECT_EQ(rank.invalid.count(name) ? rank.invalid.at(name) : "", refusal) << where << ": " << name;
    }
  }
  for (const auto& [name, target] : sel.runs_other) {
    EXPECT_TRUE(sel.runs.count(target)) << where << ": " << name << " runs as " << target << ", not valid by its name";
    if (!rank.valid.empty()) {
      EXPECT_EQ(rank.resolved.count(name) ? rank.resolved.at(name) : "", target) << where << ": " << name;
    }
  }
  if (!sel.engine_default.empty()) {
    EXPECT_TRUE(sel.runs.count(sel.engine_default)) << where << ": default " << sel.engine_default;
    EXPECT_EQ(rank.engine_default, sel.engine_default) << where;
  }
  mismatches += rank.valid == sel.runs ? 0 : 1;
}

TEST(Validity, RankAndSelectAgreeOverTheWholeCatalog) {
  const Catalog& c = defaultCatalog();
  int scenarios = 0, mismatches = 0;
  for (const auto& e : c.engines()) {
    for (const auto& hw : c.hardwareProfiles()) {
      for (const auto& m : c.models()) {
        for (const Phase phase : {Phase::Prefill, Phase::Decode}) {
          Scenario s = engineScenario(e.policy.engine, hw.id, m.id);
          s.workload = Workload::uniform(phase, 4, phase == Phase::Prefill ? 512 : 1, 2048);
          compare(s, selectAnswers(s, e), rankAnswers(s, e.policy.engine), mismatches);
          ++scenarios;
        }
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(scenarios, static_cast<int>(c.engines().size() * c.hardwareProfiles().size() * c.models().size() * 2));
}

// The old rank asked a per-stage engine for the phase's backend alone when both stages failed;
// SGLang's trtllm_mha on H100 was then ranked for decode although --attention-backend refuses it.
TEST(Validity, SglangTrtllmMhaOnHopperIsNotRankedForDecode) {
  Scenario s = engineScenario("sglang", "h100-sxm", "llama-3.1-8b");
  EXPECT_FALSE(ranksBackend(s, "trtllm_mha"));
  s.backend = "trtllm_mha";
  EXPECT_NE(refusalOf(selectionOf(s)), "");
}

// vLLM's CPU platform runs CPU_ATTN whatever is asked: rank lists CPU_ATTN once and names the rest
// as running as CPU_ATTN.
TEST(Validity, VllmCpuRanksTheBackendANameResolvesTo) {
  const Scenario s = engineScenario("vllm", "xeon-spr-amx", "llama-3.1-8b");
  const Ranking r = rankBackends(defaultCatalog(), s, {"vllm"});
  ASSERT_EQ(r.ranked.size(), 1U);
  EXPECT_EQ(r.ranked.front().backend, "CPU_ATTN");
  EXPECT_EQ(r.resolved.at("vllm:FLASH_ATTN").first, "vllm:CPU_ATTN");
}

// RTP-LLM has no backend flag: --backend NAME forces NAME in the stages its descriptor runs.
TEST(Validity, RtpLlmBackendFlagForcesOnlyTheStagesItRuns) {
  Scenario s = engineScenario("rtp-llm", "h100-sxm", "llama-3.1-8b");
  s.backend = "TRT_V2";
  const Selection sel = selectionOf(s);
  EXPECT_EQ(refusalOf(sel), "");
  EXPECT_EQ(nameOf(sel.prefill), "TRT_V2");
  EXPECT_EQ(nameOf(sel.decode), nameOf(selectionOf(engineScenario("rtp-llm", "h100-sxm", "llama-3.1-8b")).decode));
  s.backend.reset();
  s.decode_backend = "TRT_V2";  // a stage flag still names the stage
  EXPECT_NE(refusalOf(selectionOf(s)), "");
}

}  // namespace
}  // namespace attnsim::test
