#include "study/Measurements.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <sstream>

#include "core/Error.hpp"
#include "core/Strings.hpp"
#include "catalog/Catalog.hpp"

namespace attnsim {

namespace {

const std::vector<std::string> kColumns{"device",   "date",     "torch",  "triton", "cuda",      "kind",
                                        "impl",     "phase",    "batch",  "q_len",  "kv_len",    "heads",
                                        "kv_heads", "head_dim", "causal", "dtype",  "median_us", "p20_us",
                                        "p80_us",   "runs",     "flops",  "bytes",  "note"};
const std::vector<std::string> kKinds{"attention",    "copy",         "gemm",       "launch", "graph_capture",
                                      "graph_replay", "graph_launch", "graph_node", "step"};
const std::vector<std::string> kPhases{"prefill", "extend", "decode", "verify"};

}  // namespace

std::vector<std::string> splitCsvLine(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cell += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cell);
      cell.clear();
    } else if (c != '\r') {
      cell += c;
    }
  }
  out.push_back(cell);
  return out;
}

std::vector<MeasurementRow> parseMeasurementCsv(const std::string& text, const std::string& source,
                                                const Catalog& catalog) {
  std::map<std::string, std::string> device_to_hw;
  for (const auto& h : catalog.hardwareProfiles()) {
    for (const auto& n : h.device_names) device_to_hw[n] = h.id;
  }
  std::map<std::string, std::string> impl_to_kernel;
  std::vector<std::string> impls;
  for (const auto& k : catalog.kernels()) {
    for (const auto& m : k.measured_as) {
      impl_to_kernel[m] = k.id;
      impls.push_back(m);
    }
  }
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line)) throw InputError(source + ": empty file");
  const auto header = splitCsvLine(line);
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  for (const auto& c : kColumns) {
    if (!col.count(c)) throw InputError(fmt::format("{}:1: missing column '{}'", source, c));
  }
  std::vector<MeasurementRow> rows;
  std::vector<std::string> errors;
  int number = 1;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    const auto cells = splitCsvLine(line);
    std::vector<std::string> row_errors;
    auto cell = [&](const std::string& name) -> std::string {
      const auto found = col.find(name);
      if (found == col.end()) return {};  // an optional column the file does not have
      const std::size_t i = found->second;
      return i < cells.size() ? cells[i] : std::string{};
    };
    auto fail = [&](const std::string& name, const std::string& msg) {
      row_errors.push_back(fmt::format("{}:{}: column '{}': {}", source, number, name, msg));
    };
    auto integer = [&](const std::string& name, bool required) -> std::int64_t {
      const std::string s = cell(name);
      if (s.empty()) {
        if (required) fail(name, "is empty");
        return 0;
      }
      std::int64_t v = 0;
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec != std::errc{} || end != s.data() + s.size() || v < 0)
        fail(name, "'" + s + "' is not a non-negative integer");
      return v;
    };
    auto real = [&](const std::string& name, bool required) -> double {
      const std::string s = cell(name);
      if (s.empty()) {
        if (required) fail(name, "is empty");
        return 0;
      }
      double v = 0;
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec != std::errc{} || end != s.data() + s.size() || !(v >= 0))
        fail(name, "'" + s + "' is not a non-negative number");
      return v;
    };
    if (cells.size() != header.size()) {
      errors.push_back(fmt::format("{}:{}: {} cells, the header has {}", source, number, cells.size(), header.size()));
      continue;
    }
    MeasurementRow r;
    r.source = source;
    r.line = number;
    r.device = cell("device");
    r.date = cell("date");
    r.torch = cell("torch");
    r.triton = cell("triton");
    r.cuda = cell("cuda");
    r.kind = cell("kind");
    r.impl = cell("impl");
    r.phase = cell("phase");
    r.dtype = cell("dtype");
    r.note = cell("note");
    if (const auto it = device_to_hw.find(r.device); it != device_to_hw.end()) {
      r.hardware = it->second;
    } else {
      fail("device", "'" + r.device + "' is no hardware profile's device_names");
    }
    if (std::find(kKinds.begin(), kKinds.end(), r.kind) == kKinds.end()) {
      fail("kind", fmt::format("'{}' is not one of: {}{}", r.kind, join(kKinds, ", "), didYouMean(r.kind, kKinds)));
    }
    const bool attention = r.kind == "attention";
    r.batch = integer("batch", true);
    r.q_len = integer("q_len", attention);
    r.kv_len = integer("kv_len", attention);
    r.heads = integer("heads", attention);
    r.kv_heads = integer("kv_heads", attention);
    r.head_dim = integer("head_dim", attention);
    r.causal = integer("causal", attention) != 0;
    r.median_us = real("median_us", true);
    r.p20_us = real("p20_us", false);
    r.p80_us = real("p80_us", false);
    r.runs = integer("runs", true);
    r.flops = real("flops", attention);
    r.bytes = real("bytes", attention);
    r.page_size = integer("page_size", false);  // optional column: absent or empty is contiguous KV
    if (r.median_us <= 0) fail("median_us", "must be positive");
    if (attention) {
      if (const auto it = impl_to_kernel.find(r.impl); it != impl_to_kernel.end()) {
        r.kernel = it->second;
      } else {
        fail("impl", fmt::format("'{}' is no kernel family's measured_as ({}){}", r.impl, join(impls, ", "),
                                 didYouMean(r.impl, impls)));
      }
      if (std::find(kPhases.begin(), kPhases.end(), r.phase) == kPhases.end()) {
        fail("phase", fmt::format("'{}' is not one of: {}", r.phase, join(kPhases, ", ")));
      }
      if (r.q_len < 1 || r.kv_len < r.q_len) fail("q_len", "needs 1 <= q_len <= kv_len");
      if (r.kv_heads < 1 || r.heads < r.kv_heads || r.heads % r.kv_heads != 0) fail("kv_heads", "must divide heads");
      if (r.runs < 20) fail("runs", "fewer than 20 timed runs");
    }
    if (row_errors.empty()) {
      rows.push_back(std::move(r));
    } else {
      errors.insert(errors.end(), row_errors.begin(), row_errors.end());
    }
  }
  if (!errors.empty()) {
    const std::size_t shown = std::min<std::size_t>(errors.size(), 20);
    std::string msg = fmt::format("{} bad row(s); nothing imported:\n", errors.size());
    for (std::size_t i = 0; i < shown; ++i) msg += "  " + errors[i] + "\n";
    if (shown < errors.size()) msg += fmt::format("  ... and {} more\n", errors.size() - shown);
    throw InputError(msg);
  }
  return rows;
}

std::vector<MeasurementRow> readMeasurementCsv(const std::string& path, const Catalog& catalog) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("cannot read measurement file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return parseMeasurementCsv(text.str(), path, catalog);
}

}  // namespace attnsim
