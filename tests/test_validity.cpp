// One validity rule for every command: over the whole default catalog (every engine × hardware
// profile × model × phase), the backends `rank` treats as valid are exactly the names for which
// `select --backend NAME`, asked about the phase's stage alone (runEngine's StageScope::PhaseOnly),
// accepts the scenario and runs NAME in that stage; every other name is either refused with the
// engine's reason (the same text in both) or runs as a backend that `rank` itself lists
// (docs/SELECTION.md "Validity"). A deployment (`select` itself: every stage) accepts a subset: what
// it refuses beyond that, it refuses for the other stage only.
#include <gtest/gtest.h>

#include <optional>
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

// `select` over every stage (a deployment), or over the phase's stage alone.
Selection selectOf(const Scenario& s, bool phase_only) {
  const Catalog& c = defaultCatalog();
  const auto model = resolveModel(c, s);
  SelectionInput in{&c.hardware(s.hardware), model.get(), &c.engine(s.engine).policy, servingOptions(s), std::nullopt};
  if (phase_only) in.only_stage = stageOf(s.workload.phase);
  return Selector(c).select(in);
}

SelectAnswer selectAnswers(const Scenario& base, const Engine& e, bool phase_only) {
  SelectAnswer a;
  const bool prefill = base.workload.phase == Phase::Prefill;
  auto stageName = [prefill](const Selection& s) { return nameOf(prefill ? s.prefill : s.decode); };
  const Selection own = selectOf(base, phase_only);
  if (!own.refusal) a.engine_default = stageName(own);
  for (const auto& name : backendNames(e)) {
    Scenario s = base;
    s.backend = name;
    const Selection sel = selectOf(s, phase_only);
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

// What a deployment accepts, rank accepts too; what rank accepts beyond it, the deployment refuses for
// the other stage.
void compareWithDeployment(const Scenario& s, const SelectAnswer& deployment, const RankAnswer& rank) {
  const std::string where =
      s.engine + " × " + s.hardware + " × " + s.model + " × " + std::string(phaseName(s.workload.phase));
  const std::string other = s.workload.phase == Phase::Prefill ? "decode" : "prefill";
  for (const auto& name : deployment.runs) EXPECT_TRUE(rank.valid.count(name)) << where << ": " << name;
  for (const auto& name : rank.valid) {
    if (deployment.runs.count(name)) continue;
    ASSERT_TRUE(deployment.refusals.count(name)) << where << ": " << name;
    EXPECT_NE(deployment.refusals.at(name).find("serve the " + other), std::string::npos)
        << where << ": " << name << ": " << deployment.refusals.at(name);
  }
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
          const RankAnswer rank = rankAnswers(s, e.policy.engine);
          compare(s, selectAnswers(s, e, true), rank, mismatches);
          compareWithDeployment(s, selectAnswers(s, e, false), rank);
          ++scenarios;
        }
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(scenarios, static_cast<int>(c.engines().size() * c.hardwareProfiles().size() * c.models().size() * 2));
}

// A decode query is not refused for the prefill backend it would pair with (issue 29): SGLang's
// trtllm_mha prefills only on SM100 but decodes on the H100, so rank ranks it for decode and says, in
// the selection's notes, that a deployment naming it for both stages is refused; select still refuses it.
TEST(Validity, SglangTrtllmMhaOnHopperRanksForDecodeAndSaysItsPrefillIsRefused) {
  Scenario s = engineScenario("sglang", "h100-sxm", "llama-3.1-8b");
  EXPECT_TRUE(ranksBackend(s, "trtllm_mha"));
  s.backend = "trtllm_mha";
  EXPECT_NE(refusalOf(selectionOf(s)).find("trtllm_mha cannot serve the prefill phase"), std::string::npos);
  const ScenarioPrediction p = predictScenario(defaultCatalog(), s);
  ASSERT_TRUE(p.backend.has_value());
  EXPECT_TRUE(mentions(p.backend->notes, "trtllm_mha cannot serve the prefill stage here")) << p.backend->notes.size();
  Scenario prefill = engineScenario("sglang", "h100-sxm", "llama-3.1-8b");
  prefill.workload = Workload::uniform(Phase::Prefill, 1, 2048, 2048);
  EXPECT_FALSE(ranksBackend(prefill, "trtllm_mha"));
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
