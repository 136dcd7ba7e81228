// `attnsim predict --gemm M,N,K [--engine E]`, `predict --allreduce BYTES` and `predict --moe TOKENS --model M`: one of
// the step's operators beside attention, as the step model costs it, with where its figures come from and how sure they
// are.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "catalog/Catalog.hpp"
#include "cli/Commands.hpp"
#include "core/Error.hpp"
#include "core/Strings.hpp"
#include "cost/Collective.hpp"
#include "cost/OperatorSources.hpp"
#include "cost/StepModel.hpp"
#include "model/ModelSpec.hpp"

namespace attnsim::cli {

namespace {

struct OperatorAnswer {
  std::string what;
  double us = 0;
  double roofline_us = 0;  // 0: not a roofline's fraction (all-reduce)
  std::string provenance, source;
  UncertaintyBand band;
};

std::array<double, 3> parseGemmShape(const std::string& text) {
  const auto items = splitList(text);
  std::array<double, 3> mnk{};
  if (items.size() != 3) throw UsageError("--gemm: expected M,N,K (three positive integers), got '" + text + "'");
  for (std::size_t i = 0; i < 3; ++i) {
    try {
      std::size_t used = 0;
      const long long v = std::stoll(items[i], &used);
      if (used != items[i].size() || v < 1) throw std::invalid_argument("");
      mnk[i] = static_cast<double>(v);
    } catch (const std::exception&) {
      throw UsageError(fmt::format("--gemm: '{}' is not a positive integer (expected M,N,K)", items[i]));
    }
  }
  return mnk;
}

// Which kernel a measured surface's price stands for: with a single-wave class (DeepGEMM's one-wave launches,
// GemmSurface::kernelUs), whether `engine` (none named: the class's own engine) runs it.
std::string gemmKernelNote(const GemmSurface& s, const std::string& engine) {
  if (!s.single_wave) return {};
  const std::string& own = s.single_wave->engine;
  if (engine.empty())
    return fmt::format(" (as {} runs it, with DeepGEMM's one-wave class; --engine names another engine)", own);
  if (engine == own) return fmt::format(" (as {} runs it, with DeepGEMM's one-wave class)", own);
  return fmt::format(" (the surface alone: DeepGEMM's one-wave class is {}'s, not {}'s)", own, engine);
}

OperatorAnswer gemmAnswer(const Catalog& c, const HardwareProfile& hw, const std::string& shape,
                          const std::string& dtype, const std::string& engine) {
  if (std::find(kGemmDtypes.begin(), kGemmDtypes.end(), dtype) == kGemmDtypes.end())
    throw UsageError(fmt::format("--gemm-dtype: no GEMM dtype '{}' (one of: {})", dtype, join(kGemmDtypes, ", ")));
  const auto [m, n, k] = parseGemmShape(shape);
  const GemmRoofline roofline = hw.gemmRoofline(dtype);
  if (roofline.flops_per_us <= 0)
    throw UsageError(fmt::format("--gemm-dtype {}: {} has no {} peak in its profile", dtype, hw.id, dtype));
  OperatorAnswer a;
  a.what = fmt::format("{} · GEMM m={:.0f} n={:.0f} k={:.0f} {}{}", hw.id, m, n, k, dtype,
                       engine.empty() ? std::string{} : " (" + engine + ")");
  a.roofline_us = roofline.us(m, n, k);
  if (const GemmSurface* s = hw.gemmSurface(dtype)) {
    a.us = s->kernelUs(engine, m, n, k);  // the step's price for a linear in `engine` (cost/StepModel.cpp)
    a.provenance = provenanceLabel(Provenance::Measured);
    a.source = s->source + gemmKernelNote(*s, engine);
    a.band = bandOf(*s);
    return a;
  }
  // No measured surface: the dense-gemm family's roofline, as the step model costs it.
  const KernelModel family = resolveKernel(c.kernel("dense-gemm"), hw);
  DeviceModel device = resolveDevice(hw, DType::BF16);
  device.tensor_flops_per_us = roofline.flops_per_us;
  a.us = rooflineUs(family, device, 2 * m * n * k, m * k * roofline.a_bytes + n * k * roofline.b_bytes + m * n * 2);
  a.provenance = provenanceLabel(family.provenance);
  a.source = family.efficiency_source ? *family.efficiency_source : std::string{};
  a.band = {family.band, family.band_basis};
  return a;
}

OperatorAnswer allReduceAnswer(const HardwareProfile& hw, double bytes, int gpus, const std::string& engine) {
  if (!(bytes > 0)) throw UsageError("--allreduce: expected a positive number of bytes");
  if (gpus < 2) throw UsageError("--allreduce: give --tp 2 or more (the GPUs the all-reduce spans)");
  if (!hw.interconnect_link)
    throw UsageError(fmt::format("--allreduce: {} has no interconnect_link in its profile to reduce over", hw.id));
  const InterconnectLink& link = *hw.interconnect_link;
  if (gpus > link.max_gpus)
    throw UsageError(fmt::format("--tp {}: {}'s {} link joins at most {} GPUs", gpus, hw.id, link.kind, link.max_gpus));
  OperatorAnswer a;
  a.what = fmt::format("{} · all-reduce of {:.0f} bytes over {} GPUs{}", hw.id, bytes, gpus,
                       engine.empty() ? std::string{} : " (" + engine + ")");
  a.us = allReduceUs(link, bytes, gpus, engine);
  if (const AllReduceFit* f = allReduceFitFor(link, gpus, engine)) {
    a.provenance = provenanceLabel(Provenance::Measured);
    a.source = f->engine == engine || engine.empty() ? f->source
               : f->engine == kNcclAllReduce
                   ? f->source + fmt::format(" ({}'s custom all-reduce does not run over {} GPUs of a {} link)", engine,
                                             gpus, link.kind)
                   : f->source + fmt::format(" ({} not measured)", engine);
    a.band = bandOf(*f);
  } else {
    a.provenance = provenanceLabel(Provenance::Default);
    a.source = "ring model over the profile's interconnect_link: " + link.source;
    a.band = {kNonAttentionDefaultBand, BandBasis::Documented};
  }
  return a;
}

OperatorAnswer moeAnswer(const Catalog& c, const HardwareProfile& hw, const ScenarioFlags& flags,
                         const OperatorFlags& op) {
  if (flags.models.empty()) throw UsageError("--moe: give --model, the MoE model whose layer is called");
  ModelSpec model = c.model(flags.models);
  if (!model.moe) throw UsageError(fmt::format("--moe: model '{}' has no routed experts", flags.models));
  if (flags.weight_dtype) model.weight_dtype = *flags.weight_dtype;
  const MoeSpec& moe = *model.moe;
  const auto ep = static_cast<double>(op.ep);
  const auto tp = static_cast<double>(flags.tp);
  if (moe.num_experts % op.ep != 0)
    throw UsageError(fmt::format("--ep {}: {}'s {} experts do not split evenly", op.ep, model.id, moe.num_experts));
  const auto tokens = static_cast<double>(op.moe_tokens);
  const double experts = moe.num_experts / ep, topk = moe.experts_per_token / ep;
  const double inter = moe.expert_intermediate_size / tp;
  // The step model's routing: each token draws top-k of all experts; this GPU holds 1/ep of them.
  const double active = experts * (1.0 - std::pow(1.0 - moe.experts_per_token / double(moe.num_experts), tokens));
  const LinearKernels k = resolveLinearKernels(c, hw, model, flags.engines);
  OperatorAnswer a;
  a.what = fmt::format("{} · {} MoE layer, {:.0f} tokens, {} experts top-{} (inter {}) at TP {} EP {} in {}{}", hw.id,
                       model.id, tokens, moe.num_experts, moe.experts_per_token, moe.expert_intermediate_size, flags.tp,
                       op.ep, model.weight_dtype, flags.engines.empty() ? std::string{} : " (" + flags.engines + ")");
  const MoeCall call{tokens, static_cast<double>(model.hidden_size), inter, experts, tokens * topk, active};
  if (const GemmRoofline rates = hw.gemmRoofline(model.weight_dtype); rates.flops_per_us > 0)
    a.roofline_us = moeRooflineUs(rates, call);
  if (const MoeFit* f = k.moe) {
    a.us = f->us(call);
    a.provenance = provenanceLabel(Provenance::Measured);
    a.source = moeFitSource(k, flags.engines);
    a.band = bandOf(*f);
    return a;
  }
  a.us = routedExpertsDefault(k, {tokens, tokens, call.hidden, inter, experts, topk, bytesOf(model.dtype),
                                  weightBytesPerElement(model.weight_dtype, true)})
             .sum();
  a.provenance = provenanceLabel(Provenance::Default);
  a.source = "grouped-gemm and elementwise families' rooflines (no fused-MoE fit for the device and dtype)";
  a.band = {kNonAttentionDefaultBand, BandBasis::Documented};
  return a;
}

}  // namespace

bool predictOperator(const Catalog& c, const ScenarioFlags& flags, const OperatorFlags& op, bool as_json) {
  if (op.given() == 0) return false;
  if (op.given() > 1) throw UsageError("give one of --gemm, --allreduce and --moe");
  const HardwareProfile& hw = c.hardware(flags.hardware);
  const OperatorAnswer a = op.moe_tokens > 0 ? moeAnswer(c, hw, flags, op)
                           : op.gemm.empty()
                               ? allReduceAnswer(hw, op.allreduce_bytes, static_cast<int>(flags.tp), flags.engines)
                               : gemmAnswer(c, hw, op.gemm, op.gemm_dtype, flags.engines);
  if (as_json) {
    nlohmann::json j{{"operator", a.what},
                     {"us", a.us},
                     {"band", a.band.band},
                     {"band_basis", bandBasisName(a.band.basis)},
                     {"low_us", bandLow(a.us, a.band.band)},
                     {"high_us", bandHigh(a.us, a.band.band)},
                     {"provenance", a.provenance},
                     {"source", a.source}};
    if (a.roofline_us > 0) j["roofline_us"] = a.roofline_us;
    std::cout << j.dump(2) << "\n";
    return true;
  }
  fmt::print("{}\n{:.2f} µs, ±{:.0f}% ({}) in [{:.2f}, {:.2f}]\n", a.what, a.us, 100 * a.band.band,
             bandBasisName(a.band.basis), bandLow(a.us, a.band.band), bandHigh(a.us, a.band.band));
  if (a.roofline_us > 0)
    fmt::print("roofline {:.2f} µs: {:.0f}% of it achieved\n", a.roofline_us, 100 * a.roofline_us / a.us);
  fmt::print("figures: {}: {}\n", a.provenance, a.source);
  return true;
}

}  // namespace attnsim::cli
