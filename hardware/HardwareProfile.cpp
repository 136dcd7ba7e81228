#include "hardware/HardwareProfile.hpp"

#include <algorithm>

namespace attnsim {

namespace {

const std::vector<std::string> kVendors{"nvidia", "amd", "huawei", "intel"};
const std::vector<std::string> kArchitectures{"ampere", "ada",   "hopper",  "blackwell", "cdna2",
                                              "cdna3",  "cdna4", "davinci", "xe-hpc",    "sapphire-rapids"};
const std::vector<std::string> kGrades{"A", "B", "C"};
const std::vector<std::string> kFeatures{"amx", "xmx", "tma", "wgmma", "tcgen05", "mfma"};

PeakThroughput parsePeak(const YamlReader& r) {
  constexpr double kMax = 100000.0;  // TFLOP/s: far above any device
  PeakThroughput p;
  p.fp64_tflops = r.findNumber("fp64", 0, kMax);
  p.fp32_tflops = r.findNumber("fp32", 0, kMax);
  p.tf32_tflops = r.findNumber("tf32", 0, kMax);
  p.fp16_tflops = r.findNumber("fp16", 0, kMax);
  p.bf16_tflops = r.findNumber("bf16", 0, kMax);
  p.fp8_tflops = r.findNumber("fp8", 0, kMax);
  p.fp4_tflops = r.findNumber("fp4", 0, kMax);
  p.int8_tops = r.findNumber("int8", 0, kMax);
  if (!p.fp16_tflops && !p.bf16_tflops) r.fail("fp16", "a peak for fp16 or bf16 is required");
  r.finish();
  return p;
}

}  // namespace

const std::vector<std::string>& platformNames() {
  static const std::vector<std::string> names{"cuda", "rocm", "npu", "xpu", "cpu"};
  return names;
}

bool HardwareProfile::hasFeature(const std::string& f) const {
  return std::find(features.begin(), features.end(), f) != features.end();
}

GemmRoofline gemmRoofline(const PeakThroughput& peak, double bandwidth_gbps, std::string_view dtype) {
  GemmRoofline r;
  r.bytes_per_us = bandwidth_gbps * 1e3;
  std::optional<double> tflops = peak.bf16_tflops ? peak.bf16_tflops : peak.fp16_tflops;
  if (dtype == "fp8" || dtype == "fp8_block") {
    tflops = peak.fp8_tflops;
    r.a_bytes = r.b_bytes = 1;
  } else if (dtype == "nvfp4") {
    tflops = peak.fp4_tflops;
    r.a_bytes = r.b_bytes = 4.5 / 8;
  } else if (dtype == "mxfp4") {  // weight-only: 4-bit values and an 8-bit scale per 32, bf16 math
    r.b_bytes = 4.25 / 8;
  }
  r.flops_per_us = tflops ? *tflops * 1e6 : 0;
  return r;
}

GemmRoofline HardwareProfile::gemmRoofline(std::string_view dtype) const {
  GemmRoofline r = attnsim::gemmRoofline(peak, memory_bandwidth_gbps, dtype);
  r.sms = compute_units;
  return r;
}

const GemmSurface* HardwareProfile::gemmSurface(std::string_view dtype) const {
  for (const auto& s : gemm_surfaces) {
    if (s.dtype == dtype) return &s;
  }
  return nullptr;
}

const MoeFit* HardwareProfile::moeFit(std::string_view engine, std::string_view dtype) const {
  const MoeFit* any = nullptr;
  for (const auto& f : moe_fits) {
    if (f.dtype != dtype) continue;
    if (f.engine == engine) return &f;
    if (!any) any = &f;
  }
  return any;
}

HardwareProfile parseHardwareProfile(const YamlReader& r) {
  HardwareProfile h;
  h.id = r.get<std::string>("id");
  h.name = r.get<std::string>("name");
  h.vendor = r.getOneOf("vendor", kVendors);
  h.platform = r.getOneOf("platform", platformNames());
  h.architecture = r.getOneOf("architecture", kArchitectures);
  h.compute_capability = r.findNumber("compute_capability", 1.0, 20.0);
  if (h.platform == "cuda" && !h.compute_capability) {
    r.fail("compute_capability", "a CUDA device needs 'compute_capability' (e.g. 9.0)");
  }
  h.gfx_target = r.get<std::string>("gfx_target", "");
  if (h.platform == "rocm" && h.gfx_target.empty())
    r.fail("gfx_target", "a ROCm device needs 'gfx_target' (e.g. gfx942)");
  h.compute_units = static_cast<int>(r.getInt("compute_units", 1, 100000));
  h.boost_clock_mhz = r.getNumber("boost_clock_mhz", 100, 10000);
  h.peak = parsePeak(r.map("peak_tflops"));
  h.memory_gb = r.getNumber("memory_gb", 1, 100000);
  if (auto reported = r.findMap("reported_memory")) {
    h.reported_memory_mib = reported->getNumber("mib", 1, 1e8);
    h.reported_memory_source = reported->get<std::string>("source");
    reported->finish();
  }
  h.memory_bandwidth_gbps = r.getNumber("memory_bandwidth_gbps", 1, 1e6);
  h.l2_bytes = r.getInt("l2_bytes", 0, std::int64_t{1} << 40);
  h.llc_bytes = r.findInt("llc_bytes", 0, std::int64_t{1} << 40);
  if (auto l2 = r.findMap("l2_bandwidth")) {
    h.l2_bandwidth_gbps = l2->getNumber("gbps", 1, 1e6);
    h.l2_bandwidth_source = l2->get<std::string>("source");
    l2->finish();
  }
  h.shared_memory_per_cu_kib = r.findNumber("shared_memory_per_cu_kib", 0, 100000);
  if (r.has("features")) h.features = r.getListOf("features", kFeatures);
  if (auto o = r.findMap("overheads")) h.own_overheads = parseOverheadOverrides(*o);
  h.interconnect = r.get<std::string>("interconnect", "");
  h.interconnect_link = parseInterconnectLink(r);
  h.tdp_w = r.findNumber("tdp_w", 1, 100000);
  h.source = r.get<std::string>("source");
  h.confidence = r.getOneOf("confidence", kGrades);
  h.notes = r.get<std::string>("notes", "");
  h.device_names = r.get<std::vector<std::string>>("device_names", {});
  r.finish();
  return h;
}

}  // namespace attnsim
