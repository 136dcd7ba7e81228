#pragma once
// Published kernel figures of GPUs attnsim has no measurements of (AMD MI300X and MI355X:
// measurements/data/amd/published.csv, its README names each source and setup), each beside what
// the catalog predicts for the same call today. A check, not a fit: too few points of any one family
// to hold some out; report validation --published FILE renders it (reports/ValidationReport).
#include <span>
#include <string>
#include <vector>

#include "hardware/KernelEfficiency.hpp"
#include "study/Store.hpp"

namespace attnsim {

class Catalog;

// One published call: its source and setup as the source states them, and the call as a measurement
// row of the family that runs it (hardware, kernel, phase, shape, KV and query dtype, page size;
// median_us is the published time).
struct PublishedKernelPoint {
  std::string id, date, source_url, source_locator, setup;
  int line = 0;
  MeasurementRow row;
};

// The catalog's prediction of a published call, as `predict --kernel` makes it: the family's figures
// on the device (a calibration where the catalog has one), with their provenance and band.
struct PublishedKernelCheck {
  const PublishedKernelPoint* point = nullptr;
  double predicted_us = 0;
  Provenance provenance = Provenance::Default;
  double band = 0;
  [[nodiscard]] double error() const { return predicted_us / point->row.median_us - 1; }
};

// The columns: id, gpu (a hardware profile), kernel (a kernel family), impl (the kernel as the source
// names it), phase (prefill, extend, decode, verify), batch, q_len, kv_len, heads, kv_heads,
// head_dim (an MLA family's latent width, 576), causal (0/1), dtype (the KV cache's), q_dtype (empty:
// bf16), page_size (0: contiguous), published_us, date, source_url, source_locator, setup. A bad cell
// is an InputError naming the file, line and column, with the allowed values.
std::vector<PublishedKernelPoint> readPublishedKernels(const Catalog& catalog, const std::string& path);

std::vector<PublishedKernelCheck> checkPublishedKernels(const Catalog& catalog,
                                                        std::span<const PublishedKernelPoint> points);

}  // namespace attnsim
