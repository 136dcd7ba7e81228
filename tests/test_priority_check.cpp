// The priorities report's priority-list check on a store whose measurements are made up to order
// vLLM's two measured backends on an H100 (TRITON_ATTN, listed third; FLEX_ATTENTION, fourth) three
// ways: the list right, a tie within the runs' spread, and the list wrong by 3×.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>

#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path checkScratch() { return suiteScratchDir("priority-check"); }

// One prefill row of Llama-3.1-8B's attention (32 query, 8 KV heads of 128) on an H100.
std::string row(const std::string& impl, std::int64_t length, double median, double p20, double p80) {
  const std::string page = "16";  // both run over vLLM's 16-token pages
  return "NVIDIA H100 80GB HBM3,2026-11-23,2.11.0+cu130,3.6.0,13.0,attention," + impl + ",prefill,1," +
         std::to_string(length) + "," + std::to_string(length) + ",32,8,128,1,bf16," + std::to_string(median) + "," +
         std::to_string(p20) + "," + std::to_string(p80) + ",100,1e9,1e7," + page + ",made up for the test,abc\n";
}

json priorityCheck() {
  const fs::path dir = checkScratch();
  const fs::path csv = dir / "made-up.csv";
  {
    std::ofstream f(csv);
    f << "device,date,torch,triton,cuda,kind,impl,phase,batch,q_len,kv_len,heads,kv_heads,head_dim,causal,dtype,"
         "median_us,p20_us,p80_us,runs,flops,bytes,page_size,note,engine_commit\n";
    f << row("vllm_triton_unified", 1024, 10, 9.5, 10.5)
      << row("vllm_flex_attention", 1024, 20, 19, 21);  // the list is right
    f << row("vllm_triton_unified", 2048, 20, 18, 22)
      << row("vllm_flex_attention", 2048, 21, 19, 23);  // within the spread
    f << row("vllm_triton_unified", 4096, 60, 58, 62)
      << row("vllm_flex_attention", 4096, 20, 19, 21);  // the list is wrong
  }
  const fs::path spec = dir / "spec.yaml";
  {
    std::ofstream f(spec);
    f << "name: check\nhardware: [h100-sxm]\nmodels: [llama-3.1-8b]\nengines: [vllm]\n"
         "workloads:\n  - prefill: {length: [1024, 2048, 4096]}\n";
  }
  const fs::path db = dir / "check.db";
  fs::remove(db);
  const auto sweep = runAttnsim("sweep " + spec.string() + " --db " + db.string());
  EXPECT_EQ(sweep.exit_code, 0) << sweep.output;
  const auto import = runAttnsim("measurements import " + csv.string() + " --db " + db.string());
  EXPECT_EQ(import.exit_code, 0) << import.output;
  const auto report = runAttnsim("report priorities --db " + db.string() + " --out " + (dir / "out").string());
  EXPECT_EQ(report.exit_code, 0) << report.output;
  std::ifstream in(dir / "out" / "priorities.json");
  return json::parse(in)["priority_lists"];
}

TEST(PriorityCheck, PairsAgreeTieOrDisagreeByTheMeasuredOrderAndItsSpread) {
  const json check = priorityCheck();
  ASSERT_EQ(check["lists"].size(), 1U) << check.dump(2);
  const json& list = check["lists"][0];
  EXPECT_EQ(list["engine"], "vllm");
  EXPECT_EQ(list["hardware"], "h100-sxm");
  EXPECT_EQ(list["points"], 3);
  EXPECT_EQ(list["points_with_a_pair"], 3);
  EXPECT_EQ(list["pairs"]["agree"], 1);
  EXPECT_EQ(list["pairs"]["within_noise"], 1);
  EXPECT_EQ(list["pairs"]["disagree"], 1);
  EXPECT_DOUBLE_EQ(list["worst_ratio"].get<double>(), 3.0);
  EXPECT_NE(list["worst_disagreement"].get<std::string>().find("TRITON_ATTN (listed 3) 3.00× FLEX_ATTENTION"),
            std::string::npos)
      << list["worst_disagreement"];
}

TEST(PriorityCheck, PositionsNoMeasurementBacksRestOnPredictionsOnly) {
  const json check = priorityCheck();
  ASSERT_EQ(check["lists"].size(), 1U);
  const json& list = check["lists"][0];
  EXPECT_EQ(list["prediction_only"], json({"FLASH_ATTN", "FLASHINFER"}));
  for (const auto& p : list["positions"]) {
    const bool measured = p["backend"] == "TRITON_ATTN" || p["backend"] == "FLEX_ATTENTION";
    EXPECT_EQ(p["measured_points"], measured ? 3 : 0) << p;
  }
}

// FA3 is timed in both engines at one shape: vLLM's call over 64-token pages and SGLang's over single
// tokens, each with its own KV write. The report compares each engine's prediction with the row
// timed in that engine, and says that the row includes the KV write.
TEST(PriorityCheck, EachEnginesPredictionIsComparedWithTheRowTimedInThatEngine) {
  const fs::path dir = checkScratch() / "own-engine";
  fs::create_directories(dir);
  const fs::path csv = dir / "fa3-both-engines.csv";
  {
    std::ofstream f(csv);
    f << "device,date,torch,triton,cuda,kind,impl,phase,batch,q_len,kv_len,heads,kv_heads,head_dim,causal,dtype,"
         "median_us,p20_us,p80_us,runs,flops,bytes,page_size,note,engine_commit,engine,engine_version,window,q_dtype,"
         "kv_write,l2_warm,origin\n";
    // SGLang's row first, so that taking the first row of the kernel would give vLLM the wrong one.
    for (const auto& [impl, engine, us, page] :
         {std::tuple{"sglang_fa3", "sglang", 30.0, 1}, std::tuple{"vllm_fa3", "vllm", 10.0, 64}}) {
      f << "NVIDIA H100 80GB HBM3,2026-08-21,,,,attention," << impl << ",decode,8,1,4096,32,8,128,0,bf16," << us
        << ",,,6,1e9,1e7," << page << ",made up for the test,," << engine << ",0,0,bf16,1,1,made-up\n";
    }
  }
  const fs::path spec = dir / "spec.yaml";
  {
    std::ofstream f(spec);
    f << "name: own\nhardware: [h100-sxm]\nmodels: [llama-3.1-8b]\nengines: [vllm, sglang]\n"
         "workloads:\n  - decode: {batch: [8], context: [4096]}\n";
  }
  const fs::path db = dir / "own.db";
  fs::remove(db);
  ASSERT_EQ(runAttnsim("sweep " + spec.string() + " --db " + db.string()).exit_code, 0);
  const auto import = runAttnsim("measurements import " + csv.string() + " --db " + db.string());
  ASSERT_EQ(import.exit_code, 0) << import.output;
  const auto report = runAttnsim("report priorities --db " + db.string() + " --out " + (dir / "out").string());
  ASSERT_EQ(report.exit_code, 0) << report.output;
  std::ifstream in(dir / "out" / "priorities.json");
  const json pairs = json::parse(in)["measured"]["pairs_measured"];
  int fa3_pairs = 0;
  for (const auto& pair : pairs) {
    if (pair["backend"] != "FLASH_ATTN" && pair["backend"] != "fa3") continue;
    ++fa3_pairs;
    const std::string engine = pair["engine"];
    EXPECT_EQ(pair["measured_as"], engine + "_fa3") << pair;
    EXPECT_DOUBLE_EQ(pair["measured_us"].get<double>(), engine == "vllm" ? 10.0 : 30.0) << pair;
    EXPECT_TRUE(pair["measured_with_kv_write"].get<bool>()) << pair;
  }
  EXPECT_EQ(fa3_pairs, 2) << pairs.dump(2);
  std::ifstream md(dir / "out" / "priorities.md");
  const std::string text((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("vllm_fa3 (incl. KV write)"), std::string::npos);
  EXPECT_NE(text.find("(no spread kept)"), std::string::npos);
}

}  // namespace
}  // namespace attnsim::test
