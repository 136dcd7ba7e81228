// unit: measurement import (validation, all or nothing), calibration on synthetic data with known
// parameters, the validation report on a small committed sample, and calibrations in the catalog.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>
#include <random>

#include "core/Error.hpp"
#include "reports/StepValidation.hpp"
#include "reports/ValidationReport.hpp"
#include "study/Measurements.hpp"
#include "study/StepValidation.hpp"
#include "study/Validation.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

const std::string kSample = std::string(ATTNSIM_TEST_DATA) + "/measurements_sample.csv";

TEST(Measurements, ImportsAndMapsTheCommittedSample) {
  const auto rows = readMeasurementCsv(kSample, defaultCatalog());
  ASSERT_GT(rows.size(), 50U);
  int attention = 0;
  for (const auto& r : rows) {
    EXPECT_EQ(r.hardware, "h100-sxm");
    if (r.kind == "attention") {
      ++attention;
      EXPECT_TRUE(r.kernel == "fa2" || r.kernel == "cudnn-fmha" || r.kernel == "sdpa-math") << r.impl;
      EXPECT_GE(r.runs, 20);
    }
  }
  EXPECT_GT(attention, 40);
  OverlayDir dir;
  const std::string db = (dir.path() / "study.db").string();
  {
    Store store(db);
    store.insertMeasurements(rows);
    store.insertMeasurements(rows);  // re-importing the same file replaces, never duplicates
  }
  Store reopened(db);
  EXPECT_EQ(reopened.measurements().size(), rows.size());
  EXPECT_EQ(reopened.measurements("attention").size(), static_cast<std::size_t>(attention));
}

TEST(Measurements, BadRowsAreReportedWithTheirLinesAndNothingIsImported) {
  std::string text = readFile(kSample);
  const auto header_end = text.find('\n');
  text =
      text.substr(0, header_end + 1) +
      "NVIDIA H100 80GB "
      "HBM3,2026-11-22,2.11,3.6,13.0,attention,sdpa_flsh,decode,1,1,512,32,32,128,0,bf16,16.5,16,17,100,1,1,\n"
      "NVIDIA B300,2026-11-22,2.11,3.6,13.0,attention,sdpa_flash,decode,1,1,512,32,32,128,0,bf16,16.5,16,17,100,1,1,\n"
      "NVIDIA H100 80GB "
      "HBM3,2026-11-22,2.11,3.6,13.0,attention,sdpa_flash,decode,1,9,4,32,32,128,0,bf16,x,16,17,100,1,1,\n";
  try {
    (void)parseMeasurementCsv(text, "bad.csv", defaultCatalog());
    FAIL() << "expected the bad rows to be refused";
  } catch (const LocatedInputError& e) {
    // Located at the first bad row and column (impl is field 7); the message lists every bad row.
    EXPECT_EQ(e.where().str(), "bad.csv:2:7");
    EXPECT_EQ(e.key(), "impl");
    const std::string m = e.what();
    EXPECT_NE(m.find("bad.csv:2:7: column 'impl': 'sdpa_flsh' is no kernel family's measured_as"), std::string::npos)
        << m;
    EXPECT_NE(m.find("did you mean 'sdpa_flash'"), std::string::npos) << m;
    EXPECT_NE(m.find("bad.csv:3:1: column 'device': 'NVIDIA B300'"), std::string::npos) << m;
    EXPECT_NE(m.find("bad.csv:4:17: column 'median_us': 'x' is not a finite non-negative number"), std::string::npos)
        << m;
    EXPECT_NE(m.find("bad.csv:4:10: column 'q_len': needs 1 <= q_len <= kv_len"), std::string::npos) << m;
  }
  // Through the program: exit 2 and an empty study.
  OverlayDir dir;
  const auto bad = dir.path() / "bad.csv";
  std::ofstream(bad) << text;
  const std::string db = (dir.path() / "study.db").string();
  const auto r = runAttnsim("measurements import " + kSample + " " + bad.string() + " --db " + db);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_FALSE(std::filesystem::exists(db)) << "nothing half-imported";
}

// active_experts counts the experts a moe row's routing reached: a count on an attention row, or a
// negative one, is refused with the column named.
TEST(Measurements, ActiveExpertsIsAPositiveCountOfMoeRowsOnly) {
  const std::string header =
      "device,date,torch,triton,cuda,kind,impl,phase,batch,q_len,kv_len,heads,kv_heads,head_dim,causal,dtype,"
      "median_us,p20_us,p80_us,runs,flops,bytes,note,active_experts\n";
  const std::string attention =
      "NVIDIA H100 80GB HBM3,2026-11-22,2.11,3.6,13.0,attention,sdpa_flash,decode,1,1,512,32,"
      "32,128,0,bf16,16.5,16,17,100,1,1,,5\n";
  try {
    (void)parseMeasurementCsv(header + attention, "experts.csv", defaultCatalog());
    FAIL() << "expected an attention row's active_experts to be refused";
  } catch (const LocatedInputError& e) {
    EXPECT_EQ(e.key(), "active_experts");
    EXPECT_NE(std::string(e.what()).find("moe rows only"), std::string::npos) << e.what();
  }
}

// expert_matrices is an expert's weight matrices, 2 (no gate) or 3 (gated), of moe rows only: any other
// count, or one on an attention row, is refused with the column named.
TEST(Measurements, ExpertMatricesIsTwoOrThreeOfMoeRowsOnly) {
  const std::string header =
      "device,date,torch,triton,cuda,kind,impl,phase,batch,q_len,kv_len,heads,kv_heads,head_dim,causal,dtype,"
      "median_us,p20_us,p80_us,runs,flops,bytes,note,expert_matrices\n";
  const std::string moe = "NVIDIA H100 80GB HBM3,2026-11-22,,,,moe,k,,16,2688,1856,128,6,1,,bf16,90,,,10,,,,";
  const std::string attention =
      "NVIDIA H100 80GB HBM3,2026-11-22,2.11,3.6,13.0,attention,sdpa_flash,decode,1,1,512,32,"
      "32,128,0,bf16,16.5,16,17,100,1,1,,2\n";
  EXPECT_EQ(parseMeasurementCsv(header + moe + "2\n", "experts.csv", defaultCatalog()).front().expert_matrices, 2);
  EXPECT_EQ(parseMeasurementCsv(header + moe + "\n", "experts.csv", defaultCatalog()).front().expert_matrices, 0);
  for (const std::string& text : {header + moe + "4\n", header + attention}) {
    try {
      (void)parseMeasurementCsv(text, "experts.csv", defaultCatalog());
      FAIL() << "expected expert_matrices to be refused: " << text;
    } catch (const LocatedInputError& e) {
      EXPECT_EQ(e.key(), "expert_matrices");
      EXPECT_NE(std::string(e.what()).find("2 or 3, moe rows only"), std::string::npos) << e.what();
    }
  }
}

TEST(Measurements, CsvQuotingFollowsRfc4180) {
  EXPECT_EQ(splitCsvLine(R"(a,"b, c","say ""hi""",)"), (std::vector<std::string>{"a", "b, c", "say \"hi\"", ""}));
}

TEST(Calibration, RecoversKnownParametersFromSyntheticData) {
  const Catalog& c = defaultCatalog();
  const KernelModel base = measuredKernelModel(c, "fa2", "h100-sxm", Phase::Prefill);
  const DeviceModel device = resolveDevice(c.hardware("h100-sxm"), DType::BF16);
  const FitParams truth{0.62, 0.83, 6.5, 0.8};
  std::vector<FitPoint> points;
  std::vector<MeasurementRow> rows;
  rows.reserve(96);
  for (const char* phase : {"prefill", "decode"}) {
    for (const std::int64_t batch : {1, 4, 32}) {
      for (const std::int64_t ctx : {64, 512, 2048, 8192}) {
        for (const std::int64_t d : {64, 256}) {
          MeasurementRow r;
          r.phase = phase;
          r.batch = batch;
          r.q_len = std::string(phase) == "prefill" ? ctx : 1;
          r.kv_len = ctx;
          r.heads = 32;
          r.kv_heads = 8;
          r.head_dim = d;
          r.dtype = "bf16";
          rows.push_back(r);
        }
      }
    }
  }
  for (auto& r : rows) {
    FitPoint p = fitPointFrom(r);
    p.measured_us = predictPoint(p, base, device, truth);
    points.push_back(p);
  }
  const FitResult fit = fitKernel(points, base, device, FitParams{0.5, 0.75, 3.0, 0.0});
  EXPECT_NEAR(fit.params.compute_efficiency, truth.compute_efficiency, 0.01 * truth.compute_efficiency);
  EXPECT_NEAR(fit.params.memory_efficiency, truth.memory_efficiency, 0.01 * truth.memory_efficiency);
  EXPECT_NEAR(fit.params.fixed_us, truth.fixed_us, 0.01 * truth.fixed_us);
  EXPECT_NEAR(fit.params.key_ns, truth.key_ns, 0.01 * truth.key_ns);
  EXPECT_LT(fit.mape, 1e-3);
}

TEST(Calibration, LaunchAndGraphCostsFromTheSample) {
  const LineFit exact = fitLine({{1, 5}, {2, 7}, {10, 23}});
  EXPECT_NEAR(exact.intercept, 3.0, 1e-9);
  EXPECT_NEAR(exact.slope, 2.0, 1e-9);
  const auto fits = fitOverheads(readMeasurementCsv(kSample, defaultCatalog()));
  ASSERT_EQ(fits.size(), 1U);
  // H100: 100 launches in 878 µs and 1000 in 8311 µs; graphs of 100 and 1000 nodes replay in 102 and 999 µs.
  EXPECT_NEAR(fits[0].kernel_launch_us, (8310.760 - 878.146) / 900, 1e-6);
  EXPECT_NEAR(fits[0].graph_replay_base_us, 102.045 - 100 * (999.416 - 102.045) / 900, 1e-6);
  EXPECT_EQ(fits[0].graph_node_us, 0) << "the sample has no graph_node rows";
  // The committed calibration is this fit over the committed H100 data set, carried into the catalog.
  const auto committed = fitOverheads(readMeasurementCsv(
      std::string(ATTNSIM_SOURCE_DIR) + "/measurements/data/h100/measurements.csv", defaultCatalog()));
  ASSERT_EQ(committed.size(), 1U);
  const auto& overheads = defaultCatalog().hardware("h100-sxm").overheads;
  // Its eager launch cost is the synthetic decoder's host time per step node, above a bare launch.
  const auto steps = stepValidation(defaultCatalog(), [] {
    auto rows = readMeasurementCsv(std::string(ATTNSIM_SOURCE_DIR) + "/measurements/data/h100/measurements.csv",
                                   defaultCatalog());
    std::erase_if(rows, [](const MeasurementRow& r) { return r.kind != "step"; });
    return rows;
  }());
  ASSERT_EQ(steps.host_us_per_node.count("h100-sxm"), 1U);
  EXPECT_NEAR(overheads.kernel_launch_us, steps.host_us_per_node.at("h100-sxm"), 1e-3);
  EXPECT_GT(overheads.kernel_launch_us, committed[0].kernel_launch_us);
  EXPECT_NEAR(overheads.graph_replay_base_us, committed[0].graph_replay_base_us, 1e-3);
  EXPECT_GT(committed[0].graph_node_us, 0);
  EXPECT_NEAR(overheads.graph_replay_per_node_us, committed[0].graph_node_us, 1e-3);
}

TEST(StepValidation, ComparesTheSyntheticDecoderAndFitsTheHostCostOnFourBatches) {
  auto rows = readMeasurementCsv(kSample, defaultCatalog());
  std::erase_if(rows, [](const MeasurementRow& r) { return r.kind != "step"; });
  ASSERT_EQ(rows.size(), 14U);
  const StepValidation s = stepValidation(defaultCatalog(), rows);
  ASSERT_EQ(s.rows.size(), 7U);  // batches 1 to 64, eager and graph paired
  double host = 0;
  int n = 0;
  for (const auto& r : s.rows) {
    EXPECT_GT(r.model_nodes, 8 * 10) << "ten kernels a layer and the head";
    EXPECT_GT(r.graph_predicted_us, 0);
    EXPECT_GE(r.eager_predicted_us, r.graph_predicted_us) << "a replay never costs the host more";
    if ((r.batch == 1 || r.batch == 4 || r.batch == 16 || r.batch == 64) &&
        r.eager_measured_us > 1.5 * r.graph_measured_us) {
      host += r.eager_measured_us / r.model_nodes;
      ++n;
    }
  }
  ASSERT_GT(n, 0);
  EXPECT_NEAR(s.host_us_per_node.at("h100-sxm"), host / n, 1e-9);
  EXPECT_NE(stepValidationMarkdown(s).find("## Forward step"), std::string::npos);
  // A step row that is not the catalog's synthetic decoder is refused with its line.
  rows.front().note = "synthetic decoder: 4 layers, hidden 2048, heads 16/4, d 128, mlp 5632, context 2048";
  try {
    (void)stepValidation(defaultCatalog(), rows);
    FAIL() << "expected the mismatched geometry to be refused";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is not the catalog model 'harness-decoder'"), std::string::npos) << e.what();
  }
}

TEST(Calibration, RelativeLineFitWeighsSmallAndLargeAlike) {
  // y = 5 + 1·x except a large point 10% low: the relative fit keeps the intercept near 5, the
  // absolute one is pulled far off by the large point's residual.
  const std::vector<std::pair<double, double>> xy{{10, 15}, {20, 25}, {100, 105}, {3000, 0.9 * 3005}};
  EXPECT_NEAR(fitLine(xy, true).intercept, 5.0, 2.0);
  EXPECT_GT(std::fabs(fitLine(xy, false).intercept - 5.0), 3 * std::fabs(fitLine(xy, true).intercept - 5.0));
}

const std::string kMeasurementsHeader =
    "device,date,torch,triton,cuda,kind,impl,phase,batch,q_len,kv_len,heads,kv_heads,head_dim,causal,dtype,"
    "median_us,p20_us,p80_us,runs,flops,bytes,page_size,note\n";

TEST(Measurements, PagedRowsAndGraphNodeGapsImport) {
  const std::string text =
      kMeasurementsHeader +
      "NVIDIA H100 80GB HBM3,2026-11-22,2.11,3.6,13.0,attention,flex_decoding_paged,decode,8,1,4096,32,8,128,0,bf16,"
      "230,229,231,100,1,1,128,paged\n"
      "NVIDIA H100 80GB HBM3,2026-11-22,2.11,3.6,13.0,attention,flex_decoding,decode,8,1,4096,32,8,128,0,bf16,"
      "72,71,73,100,1,1,,contiguous\n"
      "NVIDIA H100 80GB HBM3,2026-11-22,2.11,3.6,13.0,graph_node,cuda_graph,,200,,,,,,,,0.256,0.255,0.257,999,,,,gap\n";
  const auto rows = parseMeasurementCsv(text, "paged.csv", defaultCatalog());
  ASSERT_EQ(rows.size(), 3U);
  EXPECT_EQ(rows[0].kernel, "flex-decoding");
  EXPECT_EQ(rows[0].page_size, 128);
  EXPECT_EQ(rows[1].page_size, 0) << "an empty page_size is contiguous KV";
  // Paged rows are never fitted: they test how a contiguous fit carries over to paged KV.
  EXPECT_TRUE(HoldoutRule(rows, {}).heldOut(rows[0]));
  EXPECT_FALSE(HoldoutRule(rows, {}).heldOut(rows[1]));
  // The model reads a paged point's page table; the same call contiguous reads none.
  const KernelModel base = measuredKernelModel(defaultCatalog(), "flex-decoding", "h100-sxm", Phase::Decode);
  const DeviceModel device = resolveDevice(defaultCatalog().hardware("h100-sxm"), DType::BF16);
  EXPECT_GT(predictPoint(fitPointFrom(rows[0]), base, device, {}),
            predictPoint(fitPointFrom(rows[1]), base, device, {}));
  // The page_size survives the store.
  OverlayDir dir;
  const std::string db = (dir.path() / "paged.db").string();
  {
    Store store(db);
    store.insertMeasurements(rows);
  }
  const auto stored = Store(db).measurements("attention");
  ASSERT_EQ(stored.size(), 2U);
  EXPECT_EQ(stored[0].page_size, 128);
  const auto fits = fitOverheads(rows);
  EXPECT_TRUE(fits.empty()) << "no launch rows: no overhead fit, whatever the node gaps";
}

TEST(Measurements, AStoreOfAnotherSchemaIsRefused) {
  OverlayDir dir;
  const std::string db = (dir.path() / "old.db").string();
  { Store store(db); }
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, "UPDATE meta SET value = '1' WHERE key = 'schema_version'", nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(raw);
  }
  try {
    Store reopened(db);
    FAIL() << "expected the old store to be refused";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("schema version 1"), std::string::npos) << e.what();
  }
  const auto r = runAttnsim("report validation --db " + db + " --out " + (dir.path() / "out").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

TEST(Calibration, ReportOnTheCommittedSample) {
  const auto rows = readMeasurementCsv(kSample, defaultCatalog());
  const Validation v = runValidation(defaultCatalog(), rows, {{2048, 8192}});
  const std::string markdown = validationMarkdown(v, StepValidation{});
  ASSERT_FALSE(v.fits.empty());
  for (const auto& f : v.fits) {
    EXPECT_GT(f.train, 0) << f.kernel;
    EXPECT_TRUE(std::isfinite(f.fit.mape)) << f.kernel;
    EXPECT_GE(f.fit.params.memory_efficiency, 0.01);
    EXPECT_LE(f.fit.params.memory_efficiency, 1.0);
  }
  EXPECT_NE(markdown.find("## Held-out error per implementation and phase"), std::string::npos);
  EXPECT_NE(markdown.find("## Ranking agreement"), std::string::npos);
  EXPECT_GE(v.ranking.top1, 0.0);
  EXPECT_LE(v.ranking.top1, 1.0);
  EXPECT_NE(validationScatterSvg(v).find("<circle"), std::string::npos);
}

TEST(Calibration, TheReportListsTheImplementationsAboveTheTargetWithTheirWorstPoint) {
  Validation v;
  v.errors = {{"h100-sxm", "fa2", "sdpa_flash", "decode", 2, 0.3, 0.08, 0.09},
              {"h200", "flex-decoding", "flex_decoding_paged", "decode", 2, 0.3, 0.15, 0.2}};
  v.held_out = {{"h200", "flex-decoding", "flex_decoding_paged", "decode", "decode", "b8 small", "p", 50, 60, 45},
                {"h200", "flex-decoding", "flex_decoding_paged", "decode", "decode", "b8 large", "q", 100, 90, 80},
                {"h100-sxm", "fa2", "sdpa_flash", "decode", "decode", "b1", "p", 10, 12, 10.9}};
  v.ranking.shapes = 4;
  v.ranking.top1 = 0.5;
  v.ranking.top1_tie_aware = 0.75;
  const std::string md = validationMarkdown(v, StepValidation{});
  EXPECT_NE(md.find("met by 1 of 2"), std::string::npos) << md;
  EXPECT_NE(
      md.find("Top-1 at least 90%, ties counted as agreement (\"Ranking agreement\"): 75.0%, missed (strict 50.0%)"),
      std::string::npos)
      << md;
  // One row for the miss, at its worst point (-20% beats -10%); fa2 at 8% is not listed.
  EXPECT_NE(md.find("| h200 | flex-decoding | flex_decoding_paged | decode | 15.0% | b8 large | 100.0 | 80.0 | -20% |"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("| h100-sxm | fa2 | sdpa_flash | decode | 8.0% |"), std::string::npos) << md;
}

TEST(Calibration, ExportedFitsLoadIntoTheCatalogAndDbTakesOver) {
  // The committed calibrations are in the default catalog.
  const KernelModel calibrated =
      resolveKernel(defaultCatalog().kernel("fa2"), defaultCatalog().hardware("h100-sxm"), Phase::Decode);
  EXPECT_EQ(calibrated.efficiency_source->rfind("calibrated on", 0), 0U) << *calibrated.efficiency_source;
  const KernelModel other =
      resolveKernel(defaultCatalog().kernel("flashinfer"), defaultCatalog().hardware("h100-sxm"), Phase::Decode);
  EXPECT_EQ(other.efficiency_source->rfind("calibrated on", 0), std::string::npos);
  // A study's own fit, exported and overlaid, or taken over with --db.
  OverlayDir dir, study;  // the overlay holds catalog files only (a stray file in it is an error)
  const std::string db = (study.path() / "study.db").string();
  ASSERT_EQ(runAttnsim("measurements import " + kSample + " --db " + db).exit_code, 0);
  const auto fit =
      runAttnsim("calibrate --db " + db + " --export " + (dir.path() / "hardware" / "calibrations").string());
  ASSERT_EQ(fit.exit_code, 0) << fit.output;
  const Catalog overlaid = [&] {
    CatalogSource source = CatalogSource::embedded();
    source.overlayDirectory(dir.path());
    return Catalog::load(source);
  }();
  EXPECT_NE(resolveKernel(overlaid.kernel("fa2"), overlaid.hardware("h100-sxm"), Phase::Decode).compute_efficiency, 0);
  const auto with_db = runAttnsim(
      "--json predict --hardware h100-sxm --kernel fa2 --num-heads 32 --num-kv-heads 8 "
      "--head-dim 128 --batch 8 --context 4096 --db " +
      db);
  ASSERT_EQ(with_db.exit_code, 0) << with_db.output;
  EXPECT_NE(with_db.output.find("measurements_sample.csv"), std::string::npos) << "the study's fit is the one used";
}

}  // namespace
}  // namespace attnsim::test
