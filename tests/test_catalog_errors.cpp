// unit: every loader error names the file, line, column and key, and suggests the valid key.
#include <gtest/gtest.h>

#include <regex>

#include "core/Error.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

// Loads the overlay and returns the CatalogError it must raise.
CatalogError loadError(const OverlayDir& overlay) {
  try {
    (void)overlay.load();
  } catch (const CatalogError& e) {
    return e;
  }
  ADD_FAILURE() << "the catalog loaded without an error";
  return CatalogError({}, "", "");
}

std::string replaceOnce(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

int lineOf(const std::string& text, const std::string& needle) {
  const auto at = text.find(needle);
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
}

// "file:line:col" of the first `needle` in `text`, written to `path` in the overlay: what a
// cross-check error must start with, the file shown as the overlay path the loader displays.
std::string locationOf(const OverlayDir& overlay, const std::string& path, const std::string& text,
                       const std::string& needle) {
  const auto at = text.find(needle);
  EXPECT_NE(at, std::string::npos) << needle;
  const auto line_start = text.rfind('\n', at);
  const auto column = at - (line_start == std::string::npos ? 0 : line_start + 1) + 1;
  return (overlay.path() / path).string() + ":" + std::to_string(lineOf(text, needle)) + ":" + std::to_string(column);
}

// The error names the file, line and column where the offending name is written, then its key.
void expectAt(const CatalogError& e, const std::string& location, const std::string& key_path) {
  EXPECT_EQ(e.where().str(), location);
  EXPECT_EQ(e.keyPath(), key_path);
  EXPECT_EQ(std::string(e.what()).rfind(location + ": '" + key_path + "': ", 0), 0U) << e.what();
}

const char* kH100 = "hardware/profiles/h100-sxm.yaml";

TEST(CatalogErrors, YamlSyntaxErrorNamesLine) {
  OverlayDir overlay;
  overlay.write("hardware/profiles/broken.yaml", "id: broken\nname: [unclosed\nvendor: nvidia\n");
  const CatalogError e = loadError(overlay);
  EXPECT_NE(std::string(e.what()).find("broken.yaml:"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("YAML syntax error"), std::string::npos) << e.what();
  EXPECT_GE(e.where().line, 2);
}

TEST(CatalogErrors, DuplicateKeyNamesBothLines) {
  // YAML allows a key once per mapping; yaml-cpp would keep both and the reader see the first.
  OverlayDir overlay;
  const std::string base = embeddedFile(kH100);
  const std::string text = base + "memory_bandwidth_gbps: 3000\n";
  overlay.write(kH100, text);
  const CatalogError e = loadError(overlay);
  const int first = lineOf(text, "memory_bandwidth_gbps:");
  const int second = static_cast<int>(std::count(base.begin(), base.end(), '\n')) + 1;
  EXPECT_EQ(e.where().line, second);
  EXPECT_EQ(e.keyPath(), "memory_bandwidth_gbps");
  EXPECT_NE(std::string(e.what()).find("duplicate key 'memory_bandwidth_gbps': also written at line " +
                                       std::to_string(first)),
            std::string::npos)
      << e.what();
}

TEST(CatalogErrors, DuplicateNestedKeyIsFoundToo) {
  OverlayDir overlay;
  const std::string text =
      replaceOnce(embeddedFile(kH100), "peak_tflops: {fp64: 66.9,", "peak_tflops: {fp64: 66.9, fp64: 1,");
  overlay.write(kH100, text);
  const CatalogError e = loadError(overlay);
  EXPECT_EQ(e.where().line, lineOf(text, "peak_tflops:"));
  EXPECT_NE(std::string(e.what()).find("duplicate key 'fp64'"), std::string::npos) << e.what();
}

TEST(CatalogErrors, DeepNestingIsRefusedNotRecursed) {
  OverlayDir overlay;
  overlay.write(kH100, embeddedFile(kH100) + "extra: " + std::string(200, '[') + std::string(200, ']') + "\n");
  const CatalogError e = loadError(overlay);
  EXPECT_NE(std::string(e.what()).find("nested deeper than"), std::string::npos) << e.what();
}

TEST(CatalogErrors, UnknownKeySuggestsTheClosestKey) {
  OverlayDir overlay;
  const std::string text = replaceOnce(embeddedFile(kH100), "memory_gb:", "memroy_gb:");
  overlay.write(kH100, text);
  const CatalogError e = loadError(overlay);
  EXPECT_EQ(e.where().line, lineOf(text, "memroy_gb"));
  EXPECT_EQ(e.where().column, 1);
  EXPECT_EQ(e.keyPath(), "memroy_gb");
  EXPECT_NE(std::string(e.what()).find("(did you mean 'memory_gb'?)"), std::string::npos) << e.what();
}

TEST(CatalogErrors, UnknownNestedKeyHasItsPath) {
  OverlayDir overlay;
  const std::string text = replaceOnce(embeddedFile(kH100), "fp8: 1978.9", "fp88: 1978.9");
  overlay.write(kH100, text);
  const CatalogError e = loadError(overlay);
  EXPECT_EQ(e.keyPath(), "peak_tflops.fp88");
  EXPECT_NE(std::string(e.what()).find("did you mean 'fp8'"), std::string::npos) << e.what();
}

TEST(CatalogErrors, WrongTypeSaysWhatWasExpected) {
  OverlayDir overlay;
  const std::string text = replaceOnce(embeddedFile(kH100), "compute_units: 132", "compute_units: many");
  overlay.write(kH100, text);
  const CatalogError e = loadError(overlay);
  EXPECT_EQ(e.where().line, lineOf(text, "compute_units"));
  EXPECT_EQ(e.where().column, 16);
  EXPECT_NE(std::string(e.what()).find("expected an integer, got 'many'"), std::string::npos) << e.what();
}

TEST(CatalogErrors, OutOfRangeValueGivesTheRange) {
  OverlayDir overlay;
  overlay.write(kH100, replaceOnce(embeddedFile(kH100), "compute_units: 132", "compute_units: 0"));
  const CatalogError e = loadError(overlay);
  EXPECT_EQ(e.keyPath(), "compute_units");
  EXPECT_NE(std::string(e.what()).find("value 0 is out of range [1, 100000]"), std::string::npos) << e.what();
}

TEST(CatalogErrors, MissingRequiredKey) {
  OverlayDir overlay;
  overlay.write(kH100, std::regex_replace(embeddedFile(kH100), std::regex("\nsource: [^\n]*"), ""));
  const CatalogError e = loadError(overlay);
  EXPECT_EQ(e.keyPath(), "source");
  EXPECT_NE(std::string(e.what()).find("required key 'source' is missing"), std::string::npos) << e.what();
}

TEST(CatalogErrors, EnumValueSuggestsTheAllowedValue) {
  OverlayDir overlay;
  overlay.write(kH100, replaceOnce(embeddedFile(kH100), "platform: cuda", "platform: cdua"));
  const CatalogError e = loadError(overlay);
  EXPECT_NE(std::string(e.what()).find("'cdua' is not one of: cuda, rocm, npu, xpu, cpu (did you mean 'cuda'?)"),
            std::string::npos)
      << e.what();
}

TEST(CatalogErrors, IdMustMatchFileName) {
  OverlayDir overlay;
  overlay.write("hardware/profiles/h100-copy.yaml", embeddedFile(kH100));
  const CatalogError e = loadError(overlay);
  EXPECT_NE(std::string(e.what()).find("must match the file name 'h100-copy'"), std::string::npos) << e.what();
}

TEST(CatalogErrors, UnknownVariableInARulePointsAtIt) {
  OverlayDir overlay;
  const std::string path = "backends/vllm/FLASH_ATTN.yaml";
  const std::string text = replaceOnce(embeddedFile(path), "has_sink && cc < 9.0", "has_sinks && cc < 9.0");
  overlay.write(path, text);
  const CatalogError e = loadError(overlay);
  EXPECT_EQ(e.where().line, lineOf(text, "has_sinks"));
  EXPECT_EQ(e.keyPath(), "requires[0].fail_when");
  EXPECT_NE(std::string(e.what()).find("unknown variable 'has_sinks' (did you mean 'has_sink'?)"), std::string::npos)
      << e.what();
}

TEST(CatalogErrors, ModelLayerPatternMustNameALayerType) {
  OverlayDir overlay;
  const std::string path = "model/configs/gemma-3-27b.yaml";
  overlay.write(path,
                replaceOnce(embeddedFile(path), "layer_pattern: [local, local,", "layer_pattern: [lcoal, local,"));
  const CatalogError e = loadError(overlay);
  EXPECT_NE(std::string(e.what()).find("'lcoal' is not a layer type"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("did you mean 'local'"), std::string::npos) << e.what();
}

TEST(CatalogErrors, BackendMustNameAKnownKernelFamily) {
  OverlayDir overlay;
  const std::string path = "backends/vllm/TRITON_ATTN.yaml";
  const std::string text =
      replaceOnce(embeddedFile(path), "decode_kernel: triton-unified", "decode_kernel: triton-unfied");
  overlay.write(path, text);
  const CatalogError e = loadError(overlay);
  expectAt(e, locationOf(overlay, path, text, "triton-unfied"), "decode_kernel");
  EXPECT_NE(std::string(e.what()).find("unknown kernel family 'triton-unfied'"), std::string::npos) << e.what();
}

TEST(CatalogErrors, BackendPrefillKernelErrorPointsAtTheName) {
  OverlayDir overlay;
  const std::string path = "backends/vllm/FLASH_ATTN.yaml";
  const std::string text = replaceOnce(embeddedFile(path), "prefill_kernel: fa2", "prefill_kernel: fa22");
  overlay.write(path, text);
  const CatalogError e = loadError(overlay);
  expectAt(e, locationOf(overlay, path, text, "fa22"), "prefill_kernel");
  EXPECT_NE(std::string(e.what()).find("backend vllm:FLASH_ATTN names unknown kernel family 'fa22'"), std::string::npos)
      << e.what();
}

TEST(CatalogErrors, VariantKernelErrorPointsAtTheName) {
  OverlayDir overlay;
  const std::string path = "backends/vllm/FLASH_ATTN.yaml";
  const std::string text = replaceOnce(embeddedFile(path), "    decode_kernel: fa3\n", "    decode_kernel: fa33\n");
  overlay.write(path, text);
  const CatalogError e = loadError(overlay);
  expectAt(e, locationOf(overlay, path, text, "fa33"), "variants[0].decode_kernel");
  EXPECT_NE(std::string(e.what()).find("variant FA3 of vllm:FLASH_ATTN names unknown kernel family 'fa33'"),
            std::string::npos)
      << e.what();
}

TEST(CatalogErrors, PriorityListMustNameKnownBackends) {
  OverlayDir overlay;
  const std::string path = "backends/vllm/engine.yaml";
  const std::string text = replaceOnce(embeddedFile(path), "[FLASH_ATTN, FLASHINFER, TRITON_ATTN, FLEX_ATTENTION]",
                                       "[FLASH_ATTN, FLASHINFR, TRITON_ATTN, FLEX_ATTENTION]");
  overlay.write(path, text);
  const CatalogError e = loadError(overlay);
  expectAt(e, locationOf(overlay, path, text, "FLASHINFR"), "selection[3].priority");
  EXPECT_NE(std::string(e.what()).find("unknown backend 'FLASHINFR' (did you mean 'FLASHINFER'?)"), std::string::npos)
      << e.what();
}

TEST(CatalogErrors, DocsRowWithAnUnknownVariantPointsAtTheRow) {
  OverlayDir overlay;
  const std::string path = "backends/vllm/engine.yaml";
  const std::string text = replaceOnce(embeddedFile(path), "FLASH_ATTN@FA3,", "FLASH_ATTN@FA4,");
  overlay.write(path, text);
  const CatalogError e = loadError(overlay);
  expectAt(e, locationOf(overlay, path, text, "FLASH_ATTN@FA4"), "docs.tables[0].rows");
  EXPECT_NE(std::string(e.what()).find("vllm docs: backend FLASH_ATTN has no variant 'FA4'"), std::string::npos)
      << e.what();
}

TEST(CatalogErrors, DocsRowWithAnUnknownBackendPointsAtTheRow) {
  OverlayDir overlay;
  const std::string path = "backends/vllm/engine.yaml";
  const std::string text = replaceOnce(embeddedFile(path), "ROCM_AITER_MLA_SPARSE,", "ROCM_AITER_MLA_SPARSEE,");
  overlay.write(path, text);
  const CatalogError e = loadError(overlay);
  expectAt(e, locationOf(overlay, path, text, "ROCM_AITER_MLA_SPARSEE"), "docs.tables[1].rows");
  EXPECT_NE(std::string(e.what()).find("vllm docs: row 'ROCM_AITER_MLA_SPARSEE' names no backend"), std::string::npos)
      << e.what();
}

TEST(CatalogErrors, CalibrationOfAnUnknownKernelFamilyPointsAtItsName) {
  OverlayDir overlay;
  const std::string path = "hardware/calibrations/h100-sxm.yaml";
  const std::string text = replaceOnce(embeddedFile(path), "\n  fa2:\n", "\n  fa22:\n");
  overlay.write(path, text);
  const CatalogError e = loadError(overlay);
  expectAt(e, locationOf(overlay, path, text, "fa22"), "kernels.fa22");
  EXPECT_NE(std::string(e.what()).find("no kernel family 'fa22'"), std::string::npos) << e.what();
}

TEST(CatalogErrors, UnknownFeatureNameListsTheFeatures) {
  OverlayDir overlay;
  const std::string path = "backends/vllm/TRITON_ATTN.yaml";
  overlay.write(path,
                replaceOnce(embeddedFile(path), "{sink: true, mm_prefix: true}", "{sinks: true, mm_prefix: true}"));
  const CatalogError e = loadError(overlay);
  EXPECT_EQ(e.keyPath(), "features.sinks");
  EXPECT_NE(std::string(e.what()).find("did you mean 'sink'"), std::string::npos) << e.what();
}

TEST(CatalogErrors, OverlayOfAMissingDirectoryIsAUsageError) {
  CatalogSource source = CatalogSource::embedded();
  EXPECT_THROW(source.overlayDirectory("/nonexistent/attnsim/catalog"), UsageError);
}

TEST(CatalogErrors, ValidOverlayAddsAHardwareProfile) {
  OverlayDir overlay;
  overlay.write("hardware/profiles/h100-sxm-throttled.yaml",
                replaceOnce(replaceOnce(embeddedFile(kH100), "id: h100-sxm", "id: h100-sxm-throttled"),
                            "boost_clock_mhz: 1980", "boost_clock_mhz: 1600"));
  const Catalog c = overlay.load();
  EXPECT_DOUBLE_EQ(c.hardware("h100-sxm-throttled").boost_clock_mhz, 1600.0);
  EXPECT_NE(c.contentHash(), defaultCatalog().contentHash());
}

}  // namespace
}  // namespace attnsim::test
