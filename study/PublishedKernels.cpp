#include "study/PublishedKernels.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <set>

#include "catalog/Catalog.hpp"
#include "core/Error.hpp"
#include "core/Strings.hpp"
#include "cost/AttentionCost.hpp"
#include "study/Calibration.hpp"
#include "study/Measurements.hpp"

namespace attnsim {

namespace {

const std::vector<std::string> kPublishedColumns{"id",           "gpu",    "kernel",     "impl",           "phase",
                                                 "batch",        "q_len",  "kv_len",     "heads",          "kv_heads",
                                                 "head_dim",     "causal", "dtype",      "q_dtype",        "page_size",
                                                 "published_us", "date",   "source_url", "source_locator", "setup"};
const std::vector<std::string> kPublishedPhases{"prefill", "extend", "decode", "verify"};
const std::vector<std::string> kPublishedKvDtypes{"bf16", "fp16", "fp8_e4m3", "fp8_e5m2"};
const std::vector<std::string> kPublishedQueryDtypes{"", "bf16", "fp8"};

// One row's cells by column name, failing with the file, line and column of a bad cell.
struct PublishedCells {
  const std::string& path;
  int line;
  const std::vector<std::string>& cells;

  [[nodiscard]] int columnOf(const std::string& name) const {
    return static_cast<int>(std::find(kPublishedColumns.begin(), kPublishedColumns.end(), name) -
                            kPublishedColumns.begin());
  }
  [[noreturn]] void fail(const std::string& name, const std::string& why) const {
    throw LocatedInputError({path, line, columnOf(name) + 1}, name, fmt::format("column '{}': {}", name, why));
  }
  [[nodiscard]] const std::string& text(const std::string& name) const {
    return cells[static_cast<std::size_t>(columnOf(name))];
  }
  [[nodiscard]] const std::string& oneOf(const std::string& name, const std::vector<std::string>& allowed) const {
    const std::string& v = text(name);
    if (std::find(allowed.begin(), allowed.end(), v) == allowed.end()) {
      fail(name, fmt::format("'{}' is not one of: {}{}", v, join(allowed, ", "), didYouMean(v, allowed)));
    }
    return v;
  }
  [[nodiscard]] std::int64_t integer(const std::string& name, std::int64_t min) const {
    const std::string& v = text(name);
    std::int64_t x = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (ec != std::errc{} || end != v.data() + v.size() || x < min) {
      fail(name, fmt::format("'{}' is not a whole number of at least {}", v, min));
    }
    return x;
  }
  [[nodiscard]] double positive(const std::string& name) const {
    const std::string& v = text(name);
    double x = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (ec != std::errc{} || end != v.data() + v.size() || !(x > 0) || !std::isfinite(x)) {
      fail(name, fmt::format("'{}' is not a positive number", v));
    }
    return x;
  }
};

std::vector<std::string> publishedHardwareIds(const Catalog& c) {
  std::vector<std::string> ids;
  ids.reserve(c.hardwareProfiles().size());
  for (const auto& h : c.hardwareProfiles()) ids.push_back(h.id);
  return ids;
}

std::vector<std::string> publishedKernelIds(const Catalog& c) {
  std::vector<std::string> ids;
  ids.reserve(c.kernels().size());
  for (const auto& k : c.kernels()) ids.push_back(k.id);
  return ids;
}

PublishedKernelPoint parsePublishedRow(const Catalog& c, const PublishedCells& cells) {
  PublishedKernelPoint p;
  p.line = cells.line;
  p.id = cells.text("id");
  if (p.id.empty()) cells.fail("id", "empty: every row needs an id");
  p.date = cells.text("date");
  p.source_url = cells.text("source_url");
  if (p.source_url.empty()) cells.fail("source_url", "empty: every published figure names its source");
  p.source_locator = cells.text("source_locator");
  p.setup = cells.text("setup");
  MeasurementRow& r = p.row;
  r.source = cells.path;
  r.line = cells.line;
  r.kind = "attention";
  r.hardware = cells.oneOf("gpu", publishedHardwareIds(c));
  r.device = r.hardware;
  r.kernel = cells.oneOf("kernel", publishedKernelIds(c));
  r.impl = cells.text("impl");
  r.phase = cells.oneOf("phase", kPublishedPhases);
  r.batch = cells.integer("batch", 1);
  r.q_len = cells.integer("q_len", 1);
  r.kv_len = cells.integer("kv_len", 1);
  r.heads = cells.integer("heads", 1);
  r.kv_heads = cells.integer("kv_heads", 1);
  r.head_dim = cells.integer("head_dim", 1);
  r.causal = cells.integer("causal", 0) > 0;
  r.dtype = cells.oneOf("dtype", kPublishedKvDtypes);
  r.q_dtype = cells.oneOf("q_dtype", kPublishedQueryDtypes);
  r.page_size = cells.integer("page_size", 0);
  r.median_us = cells.positive("published_us");
  r.runs = 1;
  r.engine = "";
  r.origin = p.source_url;
  return p;
}

}  // namespace

std::vector<PublishedKernelPoint> readPublishedKernels(const Catalog& c, const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("{}: cannot read the file", path));
  std::string line;
  if (!std::getline(in, line)) throw LocatedInputError({path, 1, 1}, "", "empty file: a header row is expected");
  if (splitCsvLine(line) != kPublishedColumns) {
    throw LocatedInputError({path, 1, 1}, "", fmt::format("the header must be: {}", join(kPublishedColumns, ",")));
  }
  std::vector<PublishedKernelPoint> out;
  std::set<std::string> ids;
  int number = 1;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line == "\r") continue;
    bool unterminated = false;
    const auto cells = splitCsvLine(line, &unterminated);
    if (unterminated) throw LocatedInputError({path, number, 1}, "", "a quoted cell is not closed on its line");
    if (cells.size() != kPublishedColumns.size()) {
      throw LocatedInputError({path, number, 1}, "",
                              fmt::format("{} cells, the header has {}", cells.size(), kPublishedColumns.size()));
    }
    out.push_back(parsePublishedRow(c, {path, number, cells}));
    if (!ids.insert(out.back().id).second) {
      throw LocatedInputError({path, number, 1}, "id", fmt::format("id '{}' appears twice", out.back().id));
    }
  }
  return out;
}

std::vector<PublishedKernelCheck> checkPublishedKernels(const Catalog& c,
                                                        std::span<const PublishedKernelPoint> points) {
  std::vector<PublishedKernelCheck> out;
  out.reserve(points.size());
  for (const auto& p : points) {
    const MeasurementRow& r = p.row;
    const KernelModel base = measuredKernelModel(c, r.kernel, r.hardware, phaseOf(r));
    const FitPoint fp = fitPointFrom(r, base, c);
    const DeviceModel device = resolveDevice(c.hardware(r.hardware), DType::BF16);
    const FitParams params{base.compute_efficiency, base.memory_efficiency, base.fixed_us, base.key_us * 1000.0};
    out.push_back({&p, predictPoint(fp, base, device, params), base.provenance, base.band});
  }
  return out;
}

}  // namespace attnsim
