// The study reports (attnsim report priorities|whatif|matrix): golden answers with tolerances on a
// small study, escaping of hostile names from a store, determinism, errors, and the HTML drawn by
// headless Chromium.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <tuple>
#include <utility>
#include <vector>

#include "TestSupport.hpp"
#include "reports/HtmlDocument.hpp"
#include "reports/SvgPlots.hpp"

namespace attnsim {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::readFile;
using test::runAttnsim;

const fs::path kReportsData = fs::path(ATTNSIM_TEST_DATA) / "reports";

// This suite's scratch folder (a name of its own: the tests build as unity batches).
fs::path reportsScratch() { return test::suiteScratchDir("reports"); }

// A folder for this test process, removed when it exits.

// The small study: tests/data/reports/small.yaml swept, with the committed H100 measurements.
const fs::path& smallStudy() {
  static const fs::path db = [] {
    fs::path path = reportsScratch() / "small.db";
    const auto sweep = runAttnsim("sweep " + (kReportsData / "small.yaml").string() + " --db " + path.string());
    EXPECT_EQ(sweep.exit_code, 0) << sweep.output;
    const fs::path m = fs::path(ATTNSIM_SOURCE_DIR) / "measurements/data/h100";
    const auto import = runAttnsim("measurements import " + (m / "measurements.csv").string() + " " +
                                   (m / "engine_kernels.csv").string() + " --db " + path.string());
    EXPECT_EQ(import.exit_code, 0) << import.output;
    return path;
  }();
  return db;
}

test::CommandResult report(const std::string& kind, const fs::path& db, const fs::path& out,
                           const std::string& extra = "") {
  return runAttnsim("report " + kind + " --db " + db.string() + " --out " + out.string() + " " + extra);
}

// What differs between machines and catalog versions but not between answers: the store's path,
// the sweep id and hashes (they follow the catalog's bytes), the program version.
std::string normalized(std::string text, const fs::path& db, const json& provenance) {
  auto replace = [&text](const std::string& from, const std::string& to) {
    for (auto at = text.find(from); !from.empty() && at != std::string::npos; at = text.find(from, at + to.size())) {
      text.replace(at, from.size(), to);
    }
  };
  replace(db.string(), "STUDY.db");
  replace(std::to_string(provenance.at("sweep_id").get<std::int64_t>()), "SWEEP_ID");
  replace(provenance.at("catalog_hash").get<std::string>(), "CATALOG_HASH");
  replace(provenance.at("spec_hash").get<std::string>(), "SPEC_HASH");
  replace("attnsim " + provenance.at("report_version").get<std::string>(), "attnsim VERSION");
  replace("version " + provenance.at("program_version").get<std::string>(), "version VERSION");
  return text;
}

// Text equal to the golden one but for numbers, which may differ by a rounding step.
void expectSameText(const std::string& got, const std::string& want, const std::string& name) {
  static const std::regex number(R"(-?\d+(\.\d+)?)");
  auto split = [](const std::string& s, std::vector<std::string>& words, std::vector<double>& numbers) {
    std::string rest;
    std::size_t last = 0;
    for (auto it = std::sregex_iterator(s.begin(), s.end(), number); it != std::sregex_iterator(); ++it) {
      rest += s.substr(last, static_cast<std::size_t>(it->position())) + "#";
      numbers.push_back(std::stod(it->str()));
      last = static_cast<std::size_t>(it->position() + it->length());
    }
    words.push_back(rest + s.substr(last));
  };
  std::vector<std::string> got_words, want_words;
  std::vector<double> got_numbers, want_numbers;
  split(got, got_words, got_numbers);
  split(want, want_words, want_numbers);
  ASSERT_EQ(got_words, want_words) << name << ": the text around the numbers differs";
  ASSERT_EQ(got_numbers.size(), want_numbers.size()) << name;
  for (std::size_t i = 0; i < got_numbers.size(); ++i) {
    EXPECT_NEAR(got_numbers[i], want_numbers[i], 0.1 + 1e-3 * std::abs(want_numbers[i])) << name << " number " << i;
  }
}

void expectSameJson(const json& got, const json& want, const std::string& where) {
  if (want.is_number() && got.is_number()) {
    EXPECT_NEAR(got.get<double>(), want.get<double>(), 1e-9 + 1e-6 * std::abs(want.get<double>())) << where;
  } else if (want.is_object() && got.is_object()) {
    EXPECT_EQ(got.size(), want.size()) << where;
    for (const auto& [k, v] : want.items()) {
      if (got.contains(k)) {
        expectSameJson(got.at(k), v, fmt::format("{}.{}", where, k));
      } else {
        ADD_FAILURE() << where << ": no key " << k;
      }
    }
  } else if (want.is_array() && got.is_array()) {
    ASSERT_EQ(got.size(), want.size()) << where;
    for (std::size_t i = 0; i < want.size(); ++i)
      expectSameJson(got[i], want[i], where + "[" + std::to_string(i) + "]");
  } else {
    EXPECT_EQ(got, want) << where;
  }
}

// Compares the report's JSON and Markdown with tests/data/reports/NAME.{json,md}, or writes them
// with ATTNSIM_UPDATE_GOLDEN=1.
void checkGolden(const fs::path& dir, const std::string& kind, const std::string& name) {
  json got = json::parse(readFile(dir / (kind + ".json")));
  const json provenance = got.at("provenance");
  got.erase("provenance");
  const std::string markdown = normalized(readFile(dir / (kind + ".md")), smallStudy(), provenance);
  if (kind == "matrix") got.erase("support_tables");  // the catalog's own tables: tests/test_docs.cpp
  const fs::path json_file = kReportsData / (name + ".json"), md_file = kReportsData / (name + ".md");
  if (std::getenv("ATTNSIM_UPDATE_GOLDEN")) {
    std::ofstream(json_file) << got.dump(1) << "\n";
    if (kind != "matrix") std::ofstream(md_file) << markdown;
    return;
  }
  expectSameJson(got, json::parse(readFile(json_file)), name);
  if (kind != "matrix") expectSameText(markdown, readFile(md_file), name + ".md");
}

TEST(StudyReports, PrioritiesMatchTheGolden) {
  const fs::path out = reportsScratch() / "golden";
  const auto r = report("priorities", smallStudy(), out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  checkGolden(out, "priorities", "priorities");
}

TEST(StudyReports, WhatIfMatchesTheGolden) {
  const fs::path out = reportsScratch() / "golden";
  auto r = report("whatif", smallStudy(), out, "--compare vllm:FLASH_ATTN,vllm:FLASHINFER,vllm:TRITON_ATTN");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  checkGolden(out, "whatif", "whatif-backends");
  r = report("whatif", smallStudy(), out, "--compare-engines --hardware h100-sxm");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  checkGolden(out, "whatif", "whatif-engines");
  r = report("whatif", smallStudy(), out, "--compare-hardware --engine sglang");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  checkGolden(out, "whatif", "whatif-hardware");
}

// tests/data/reports/axis.yaml swept: one engine on one GPU over the KV-cache dtype and CUDA graphs on/off.
const fs::path& axisStudy() {
  static const fs::path db = [] {
    fs::path path = reportsScratch() / "axis.db";
    const auto sweep = runAttnsim("sweep " + (kReportsData / "axis.yaml").string() + " --db " + path.string());
    EXPECT_EQ(sweep.exit_code, 0) << sweep.output;
    return path;
  }();
  return db;
}

// --axis puts each point's step under every value of the axis side by side, with the bands, the ratio to
// the baseline value and whether the two bands overlap.
TEST(StudyReports, WhatIfComparesAnyAxisAgainstABaselineWithTheBands) {
  const fs::path out = reportsScratch() / "axis";
  for (const auto& [args, axis, baseline, other] : {std::tuple{"--axis kv_dtype", "kv_dtype", "auto", "fp8"},
                                                    {"--axis cuda_graphs", "cuda_graphs", "on", "off"},
                                                    {"--axis kv_dtype --baseline fp8", "kv_dtype", "fp8", "auto"}}) {
    const auto r = report("whatif", axisStudy(), out, args);
    ASSERT_EQ(r.exit_code, 0) << args << "\n" << r.output;
    const json j = json::parse(readFile(out / "whatif.json"));
    EXPECT_EQ(j["axis"], axis);
    EXPECT_EQ(j["baseline"], baseline) << args;
    EXPECT_EQ(j["subjects"], json::array({fmt::format("{}={}", axis, baseline), fmt::format("{}={}", axis, other)}));
    int compared = 0;
    for (const auto& p : j["points"]) {
      EXPECT_EQ(p["where"].get<std::string>().find(std::string(axis) == "kv_dtype" ? "kv=" : "eager"),
                std::string::npos)
          << "the compared axis is not part of the panel: " << p["where"];
      const auto& e = p["entries"];
      if (e.size() != 2 || !e[0]["valid"].get<bool>() || !e[1]["valid"].get<bool>()) continue;
      ++compared;
      const double base = e[0]["step_us"], step = e[1]["step_us"];
      EXPECT_FALSE(e[0].contains("ratio_to_baseline"));
      EXPECT_NEAR(e[1]["ratio_to_baseline"].get<double>(), step / base, 1e-12);
      // CUDA graphs change the whole step: the steps' bands decide (for the kv dtype, the attention calls')
      const double lo = std::max(base / (1 + e[0]["band"].get<double>()), step / (1 + e[1]["band"].get<double>()));
      const double hi = std::min(base * (1 + e[0]["band"].get<double>()), step * (1 + e[1]["band"].get<double>()));
      if (std::string(axis) == "cuda_graphs") {
        EXPECT_EQ(e[1]["within_band_of_baseline"].get<bool>(), lo <= hi) << p;
      }
      // Eager pays every kernel launch a replayed graph saves: no decode step is faster without graphs.
      if (std::string(axis) == "cuda_graphs" && p["workload"].get<std::string>().rfind("decode", 0) == 0) {
        EXPECT_GE(step, base) << p;
      }
    }
    EXPECT_GE(compared, 8) << args;
    const std::string md = readFile(out / "whatif.md");
    EXPECT_NE(md.find(fmt::format("| {0}={1} / {0}={2} |", axis, other, baseline)), std::string::npos) << md;
    EXPECT_NE(md.find(fmt::format("--axis {}", axis)), std::string::npos) << "the regenerate command";
  }
  ASSERT_EQ(report("whatif", axisStudy(), out, "--axis cuda_graphs").exit_code, 0);
  const std::string md = readFile(out / "whatif.md");
  EXPECT_NE(md.find("| h100-sxm · llama-3.1-8b · vllm · tp=1 · kv=auto | decode b=1 c=1024 |"), std::string::npos)
      << md;
}

// FP8 weights and speculative decoding are axes too: the weights change every GEMM of the step (the
// steps' bands decide), and a verify step stands beside the decode step of the same batch and context.
TEST(StudyReports, WhatIfComparesWeightDtypesAndSpeculativeDecodingSideBySide) {
  const fs::path db = reportsScratch() / "axis-weights.db", out = reportsScratch() / "axis-weights";
  const auto sweep = runAttnsim("sweep " + (kReportsData / "axis-weights.yaml").string() + " --db " + db.string());
  ASSERT_EQ(sweep.exit_code, 0) << sweep.output;
  auto r = report("whatif", db, out, "--axis weight_dtype");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  json j = json::parse(readFile(out / "whatif.json"));
  EXPECT_EQ(j["subjects"], json::array({"weight_dtype=default", "weight_dtype=fp8"}));
  int faster = 0;
  for (const auto& p : j["points"]) {
    const auto& e = p["entries"];
    ASSERT_EQ(e.size(), 2U) << p;
    ASSERT_TRUE(e[0]["valid"].get<bool>() && e[1]["valid"].get<bool>()) << p;
    // Llama-3.1-8B's BF16 weights in FP8: half the bytes every GEMM reads, never a slower step.
    EXPECT_LE(e[1]["step_us"].get<double>(), e[0]["step_us"].get<double>() * 1.0001) << p;
    faster += e[1]["step_us"].get<double>() < e[0]["step_us"].get<double>() ? 1 : 0;
  }
  EXPECT_EQ(j["points"].size(), 8U) << "4 decode and 4 verify workloads";
  EXPECT_GT(faster, 0);

  r = report("whatif", db, out, "--axis spec_decoding --engine vllm");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  j = json::parse(readFile(out / "whatif.json"));
  EXPECT_EQ(j["subjects"], json::array({"spec_decoding=off", "spec_decoding=eagle draft=3 topk=1"}));
  int compared = 0;
  for (const auto& p : j["points"]) {
    const auto& e = p["entries"];
    if (!e[0]["valid"].get<bool>() || !e[1]["valid"].get<bool>()) continue;
    ++compared;
    EXPECT_EQ(p["workload"].get<std::string>().rfind("b=", 0), 0U) << "aligned by batch and context: " << p;
    // A verify step runs 4 query tokens per request where a decode step runs 1: never cheaper.
    EXPECT_GE(e[1]["step_us"].get<double>(), e[0]["step_us"].get<double>()) << p;
  }
  EXPECT_EQ(compared, 8) << "4 batch x context pairs under each weight dtype";
  EXPECT_NE(readFile(out / "whatif.md").find("Compared per output token"), std::string::npos);
  EXPECT_NE(j["acceptance"]["assumed"].get<std::string>().find("EAGLE-3 on Llama-3.1-8B"), std::string::npos) << j;
}

// --axis spec_decoding compares the time per output token at the acceptance it states: nothing accepted
// leaves a verify step dearer than the decode step; every draft accepted makes it cheaper where the
// verify step costs less than its tokens' worth of decode steps.
TEST(StudyReports, WhatIfOnSpecDecodingComparesTimePerOutputTokenAtTheStatedAcceptance) {
  const fs::path db = reportsScratch() / "axis-spec.db", out = reportsScratch() / "axis-spec";
  const auto sweep = runAttnsim("sweep " + (kReportsData / "axis-weights.yaml").string() + " --db " + db.string());
  ASSERT_EQ(sweep.exit_code, 0) << sweep.output;
  auto ratios = [&](const std::string& accept) {
    const auto r = report("whatif", db, out, "--axis spec_decoding --engine vllm --spec-accept-length " + accept);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const json j = json::parse(readFile(out / "whatif.json"));
    EXPECT_EQ(j["acceptance"]["accept_length"].get<double>(), std::stod(accept)) << j["acceptance"];
    std::vector<double> out_ratios;
    for (const auto& p : j["points"]) {
      const auto& e = p["entries"];
      if (!e[0]["valid"].get<bool>() || !e[1]["valid"].get<bool>()) continue;
      const double tokens = e[1]["tokens_per_step"].get<double>();
      EXPECT_DOUBLE_EQ(e[1]["us_per_output_token"].get<double>(), e[1]["step_us"].get<double>() / tokens) << p;
      EXPECT_DOUBLE_EQ(e[1]["ratio_to_baseline"].get<double>(),
                       e[1]["us_per_output_token"].get<double>() / e[0]["step_us"].get<double>())
          << p;
      out_ratios.push_back(e[1]["ratio_to_baseline"].get<double>());
    }
    return out_ratios;
  };
  const auto none = ratios("1"), all = ratios("3");
  ASSERT_EQ(none.size(), 8U);
  ASSERT_EQ(all.size(), none.size());
  for (std::size_t i = 0; i < none.size(); ++i) {
    EXPECT_GE(none[i], 1.0) << i;
    EXPECT_NEAR(all[i], none[i] / 3, 1e-9) << i;
  }
  EXPECT_LT(*std::min_element(all.begin(), all.end()), 1.0) << "3 tokens per verify beat decoding somewhere";
}

// An axis value the filtered engine was never swept with (SGLang spells FP8 fp8_e4m3, vLLM fp8) is left out
// of the comparison, not shown as an empty column; a baseline no matched point has is an error.
TEST(StudyReports, WhatIfOnAnAxisLeavesOutValuesTheFilteredEngineWasNotSweptWith) {
  const fs::path spec = reportsScratch() / "axis-engines.yaml", db = reportsScratch() / "axis-engines.db";
  std::ofstream(spec) << "name: axis-engines\nhardware: [h100-sxm]\nmodels: [llama-3.1-8b]\nengines: [vllm, sglang]\n"
                         "kv_dtypes: [default, fp8, fp8_e4m3]\nworkloads:\n  - decode: {batch: [8], context: [4096]}\n"
                         "drop:\n  - \"kv_dtype == 'fp8' && engine == 'sglang'\"\n"
                         "  - \"kv_dtype == 'fp8_e4m3' && engine != 'sglang'\"\n";
  ASSERT_EQ(runAttnsim("sweep " + spec.string() + " --db " + db.string()).exit_code, 0);
  const fs::path out = reportsScratch() / "axis-engines";
  auto r = report("whatif", db, out, "--axis kv_dtype --engine vllm");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(json::parse(readFile(out / "whatif.json"))["subjects"], json::array({"kv_dtype=default", "kv_dtype=fp8"}));
  r = report("whatif", db, out, "--axis kv_dtype");  // both engines: every value has points
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json all = json::parse(readFile(out / "whatif.json"));
  EXPECT_EQ(all["subjects"].size(), 3U);
  EXPECT_EQ(all["points"].size(), 2U) << "one panel per engine";
  r = report("whatif", db, out, "--axis kv_dtype --engine vllm --baseline fp8_e4m3");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--baseline fp8_e4m3: no point matching the filters has kv_dtype=fp8_e4m3"),
            std::string::npos)
      << r.output;
}

// --compare-engines over a one-engine store, or an axis with one value, exits 2 saying what varies instead.
TEST(StudyReports, WhatIfOverWhatDoesNotVarySaysWhatCanBeCompared) {
  const fs::path out = reportsScratch() / "axis-bad";
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {"--compare-engines", "--compare-engines: sweep 'reports-axis' has one engine (vllm)"},
           {"--compare-hardware", "--compare-hardware: sweep 'reports-axis' has one hardware (h100-sxm)"},
           {"--axis tp", "--axis tp: sweep 'reports-axis' has one tp (1)"},
           {"--axis kv", "did you mean 'kv_dtype'"},
           {"--axis kv_dtype --baseline fp16",
            "--baseline fp16: not a value of kv_dtype in this sweep (it has auto, fp8)"},
           {"--axis kv_dtype --compare-engines", "one of --compare-engines, --compare-hardware and --axis"}}) {
    const auto r = report("whatif", axisStudy(), out, args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_NE(r.output.find(message), std::string::npos) << args << "\n" << r.output;
    if (args.rfind("--compare-", 0) == 0 || args == "--axis tp") {
      EXPECT_NE(r.output.find("compare instead --axis kv_dtype (auto, fp8); --axis cuda_graphs (on, off)"),
                std::string::npos)
          << r.output;
      EXPECT_EQ(r.output.find("vllm:FLASHMLA"), std::string::npos) << "a backend never valid here: " << r.output;
    }
  }
  EXPECT_FALSE(fs::exists(out / "whatif.json"));
}

TEST(StudyReports, MatrixMatchesTheGolden) {
  const fs::path out = reportsScratch() / "golden";
  const auto r = report("matrix", smallStudy(), out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  checkGolden(out, "matrix", "matrix");
  // The support tables come from the catalog the store holds, as `attnsim docs` prints them.
  const std::string md = readFile(out / "matrix.md");
  const auto docs = runAttnsim("docs --engine vllm");
  const std::string first_table = docs.output.substr(docs.output.find("\n|"), 400);
  EXPECT_NE(md.find(first_table), std::string::npos);
}

TEST(StudyReports, SameStoreSameReport) {
  const fs::path a = reportsScratch() / "same-a", b = reportsScratch() / "same-b";
  for (const auto& kind : {"priorities", "matrix"}) {
    ASSERT_EQ(report(kind, smallStudy(), a).exit_code, 0);
    ASSERT_EQ(report(kind, smallStudy(), b).exit_code, 0);
    for (const auto& ext : {".md", ".html", ".json"}) {
      const std::string file = std::string(kind) + ext;
      EXPECT_EQ(readFile(a / file), readFile(b / file)) << file;
    }
  }
}

// Every line of every pipe table has as many unescaped `|` as its header.
void expectWellFormedTables(const std::string& markdown, const std::string& name) {
  std::istringstream in(markdown);
  std::optional<std::size_t> columns;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.empty() || line[0] != '|') {
      columns.reset();
      continue;
    }
    std::size_t bars = 0;
    for (std::size_t i = 0; i < line.size(); ++i) bars += line[i] == '|' && (i == 0 || line[i - 1] != '\\');
    if (!columns) columns = bars;
    EXPECT_EQ(bars, *columns) << name << ":" << line_no << ": " << line;
  }
}

TEST(StudyReports, HostileNamesFromTheStorePrintAsText) {
  const fs::path db = reportsScratch() / "hostile.db";
  fs::copy_file(smallStudy(), db, fs::copy_options::overwrite_existing);
  test::runSql(db, R"(
    UPDATE sweep_groups SET model = '<script>alert(1)</script>|m' WHERE model = 'llama-3.1-8b';
    UPDATE candidates SET backend = '<b>x</b>|`y`*_z_' WHERE backend = 'TRITON_ATTN';
    UPDATE candidates SET reason = '<img src=x onerror=alert(2)>|r' WHERE valid = 0;
    UPDATE sweeps SET name = '<i>n</i>|s';)");
  const fs::path out = reportsScratch() / "hostile";
  ASSERT_EQ(report("priorities", db, out).exit_code, 0);
  ASSERT_EQ(report("matrix", db, out).exit_code, 0);
  const auto w = report("whatif", db, out, "--compare 'vllm:<b>x</b>|`y`*_z_,vllm:FLASH_ATTN'");
  ASSERT_EQ(w.exit_code, 0) << w.output;
  int files = 0;
  for (const auto& entry : fs::directory_iterator(out)) {
    const std::string text = readFile(entry.path());
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() == ".json") continue;  // JSON carries the names as they are
    ++files;
    // A fenced block (the command that regenerates the report) shows its text verbatim: skip it.
    const std::string shown = std::regex_replace(text, std::regex(R"((`{3,})sh\n[\s\S]*?\n\1)"), "");
    for (const char* raw : {"<script", "<b>x", "<img", "<i>n"})
      EXPECT_EQ(shown.find(raw), std::string::npos) << name << ": " << raw;
    if (entry.path().extension() == ".md") expectWellFormedTables(text, name);
  }
  EXPECT_EQ(files, 3 * 2 + 2 + 2 + 1);  // 3 pages and 3 Markdown files, 2 + 2 + 1 SVG figures
  const std::string html = readFile(out / "priorities.html");
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;|m"), std::string::npos);
  EXPECT_NE(readFile(out / "priorities.md").find(R"(&lt;script&gt;alert(1)&lt;/script&gt;\|m)"), std::string::npos);
  EXPECT_NE(readFile(out / "matrix.html").find("&lt;img src=x onerror=alert(2)&gt;|r"), std::string::npos);
  EXPECT_NE(readFile(out / "whatif.md").find(R"(&lt;b&gt;x&lt;/b&gt;\|\`y\`\*\_z\_)"), std::string::npos);
}

TEST(StudyReports, BadRequestsExitTwo) {
  const fs::path out = reportsScratch() / "bad";
  auto r = report("whatif", smallStudy(), out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--compare-engines"), std::string::npos) << r.output;
  r = report("whatif", smallStudy(), out, "--compare vllm:FLASH_ATTN,vllm:FLASHINFR");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("did you mean 'vllm:FLASHINFER'"), std::string::npos) << r.output;
  r = report("priorities", smallStudy(), out, "--sweep nope");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("reports-small"), std::string::npos) << r.output;
  r = report("priorities", reportsScratch() / "missing.db", out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(fs::exists(reportsScratch() / "missing.db"));
}

// The README's first command run again after a catalog update stores a second sweep of the same name.
TEST(StudyReports, ASweepOfTheSameNameUnderAnotherCatalogLeavesTheRunningCatalogsSweepTheOneMeant) {
  const fs::path db = reportsScratch() / "two-catalogs.db";
  fs::copy_file(smallStudy(), db, fs::copy_options::overwrite_existing);
  test::runSql(
      db,
      "INSERT INTO sweeps (id, name, spec_text, spec_hash, catalog_hash, calibration, program_version, points) "
      "SELECT id + 1, name, spec_text, spec_hash, 'an-older-catalog', calibration, program_version, points "
      "FROM sweeps");
  auto r = report("priorities", db, reportsScratch() / "two-catalogs");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = report("priorities", db, reportsScratch() / "two-catalogs", "--sweep reports-small");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // Neither is the running catalog's: the user must say which.
  test::runSql(db, "UPDATE sweeps SET catalog_hash = 'another-catalog' WHERE catalog_hash <> 'an-older-catalog'");
  r = report("priorities", db, reportsScratch() / "two-catalogs");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("2 sweeps in this store"), std::string::npos) << r.output;
  r = report("priorities", db, reportsScratch() / "two-catalogs", "--sweep reports-small");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("give its id"), std::string::npos) << r.output;
}

TEST(ReportText, EscapesForEachOutput) {
  EXPECT_EQ(escapeHtml(R"(<a href="x">'&'</a>)"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  EXPECT_EQ(escapeXml("<t>&'\""), "&lt;t&gt;&amp;&apos;&quot;");
  EXPECT_EQ(escapeMarkdown("a|b *c* `d` [e](f) _g_ h_i #j\nk"), R"(a\|b \*c\* \`d\` \[e\](f) \_g\_ h_i #j k)");
  EXPECT_EQ(escapeMarkdown("# title"), R"(\# title)");
  HtmlDocument doc("<t>");
  doc.table({{"<h>|"}, {{"<c>|"}}});
  doc.command("echo ```x```");
  EXPECT_EQ(doc.html().find("<c>"), std::string::npos);
  EXPECT_NE(doc.markdown().find("| &lt;c&gt;\\| |"), std::string::npos);
  EXPECT_NE(doc.markdown().find("````sh\necho ```x```\n````"), std::string::npos);
}

// Headless Chromium opens each report: the page's SVG heat maps are in the rendered DOM, and a
// screenshot of the priorities page holds far more than a blank page's.
bool haveChromium() { return std::system("command -v chromium > /dev/null 2>&1") == 0; }

std::string chromium(const std::string& args) {
  const std::string profile = (reportsScratch() / "chromium-profile").string();
  return "chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
         "--disable-background-networking --disable-component-update --disable-sync --user-data-dir=" +
         profile + " " + args + " 2>/dev/null";
}

std::string capture(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return out;
  std::array<char, 4096> buffer{};
  for (std::size_t n = 0; (n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0;) out.append(buffer.data(), n);
  pclose(pipe);
  return out;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ReportRender, ChromiumDrawsThePlots) {
  if (!haveChromium()) GTEST_SKIP() << "chromium is not installed (apt-get install chromium): render test skipped";
  const fs::path out = reportsScratch() / "render";
  ASSERT_EQ(report("priorities", smallStudy(), out).exit_code, 0);
  ASSERT_EQ(report("matrix", smallStudy(), out).exit_code, 0);
  ASSERT_EQ(report("whatif", smallStudy(), out, "--compare-engines").exit_code, 0);
  for (const auto& [page, svgs] : {std::pair{"priorities", 2}, {"matrix", 2}, {"whatif", 1}}) {
    const std::string dom = capture(chromium("--dump-dom file://" + (out / (std::string(page) + ".html")).string()));
    EXPECT_EQ(count(dom, "<svg"), static_cast<std::size_t>(svgs)) << page;
    EXPECT_GE(count(dom, "class=\"cell\""), 16U) << page;
  }
  std::ofstream(out / "blank.html") << "<!DOCTYPE html><html><body></body></html>\n";
  for (const char* page : {"blank", "priorities"}) {
    capture(chromium("--window-size=1200,1600 --screenshot=" + (out / (std::string(page) + ".png")).string() +
                     " file://" + (out / (std::string(page) + ".html")).string()));
  }
  const std::string png = readFile(out / "priorities.png"), blank = readFile(out / "blank.png");
  ASSERT_GT(png.size(), 24U);
  ASSERT_GT(blank.size(), 24U);
  EXPECT_EQ(png.substr(1, 3), "PNG");
  auto be32 = [&png](std::size_t at) {
    return (std::uint32_t(std::uint8_t(png[at])) << 24) | (std::uint32_t(std::uint8_t(png[at + 1])) << 16) |
           (std::uint32_t(std::uint8_t(png[at + 2])) << 8) | std::uint32_t(std::uint8_t(png[at + 3]));
  };
  EXPECT_EQ(be32(16), 1200U);  // IHDR width and height
  EXPECT_EQ(be32(20), 1600U);
  EXPECT_GT(png.size(), 10 * blank.size()) << "the rendered report compresses like a blank page";
}

}  // namespace
}  // namespace attnsim
