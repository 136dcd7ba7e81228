// The priorities report's priority-list check on a store whose measurements are made up to order
// vLLM's two measured backends on an H100 (TRITON_ATTN, listed third; FLEX_ATTENTION, fourth) three
// ways: the list right, a tie within the runs' spread, and the list wrong by 3×.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

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

}  // namespace
}  // namespace attnsim::test
