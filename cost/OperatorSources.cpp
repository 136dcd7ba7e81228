#include "cost/OperatorSources.hpp"

#include <fmt/format.h>

#include "catalog/Catalog.hpp"
#include "cost/Collective.hpp"
#include "cost/StepModel.hpp"
#include "hardware/HardwareProfile.hpp"
#include "model/ModelSpec.hpp"

namespace attnsim {

std::string moeFitSource(const LinearKernels& k, std::string_view engine) {
  if (!k.moe) return {};
  if (k.moe_proxy)
    return fmt::format("{} ({} runs the same kernel here: {})", k.moe->source, engine, k.moe_proxy->source);
  if (k.moe->engine == engine || engine.empty()) return k.moe->source;
  return fmt::format("{} ({} not measured)", k.moe->source, engine);
}

std::vector<OperatorSource> stepOperatorSources(const Catalog& catalog, const HardwareProfile& hw,
                                                const ModelSpec& model, std::string_view engine, int tp) {
  std::vector<OperatorSource> out;
  const LinearKernels k = resolveLinearKernels(catalog, hw, model, engine);
  const GemmSurface* s = k.gemm_weights ? k.gemm_weights : k.gemm_bf16;
  std::string gemm_source = k.gemm.efficiency_source ? *k.gemm.efficiency_source : std::string{};
  // The price GemmSurface::kernelUs gives the step's linears: with DeepGEMM's one-wave class for the engine
  // whose rows show it.
  if (k.gemm_weights != nullptr && k.gemm_weights->takesSingleWave(engine)) {
    const GemmSingleWave& w = *k.gemm_weights->single_wave;
    gemm_source += fmt::format(
        "; {}'s linears that DeepGEMM launches as one wave take at least {:.1f} µs + {:.2f} µs per 128 of K "
        "(its one-wave class, fitted on {} of its rows)",
        w.engine, w.fixed_us, w.per_k_block_us, w.points);
  }
  out.push_back({fmt::format("dense GEMMs ({})", s ? s->dtype : model.weight_dtype),
                 k.gemm.provenance,
                 gemm_source,
                 {k.gemm.band, k.gemm.band_basis}});
  if (model.moe) {
    if (const MoeFit* f = k.moe) {
      out.push_back({fmt::format("routed experts ({}, {})", f->dtype, f->engine), Provenance::Measured,
                     moeFitSource(k, engine), bandOf(*f)});
    } else {
      out.push_back({fmt::format("routed experts ({})", model.weight_dtype),
                     Provenance::Default,
                     "grouped-gemm and elementwise families' rooflines (no fused-MoE fit for the device and dtype)",
                     {kNonAttentionDefaultBand, BandBasis::Documented}});
    }
  }
  if (tp <= 1 || !hw.interconnect_link) return out;
  const InterconnectLink& link = *hw.interconnect_link;
  if (const AllReduceFit* f = allReduceFitFor(link, tp, engine)) {
    const std::string note = f->engine == engine           ? std::string{}
                             : f->engine == kNcclAllReduce ? fmt::format(
                                                                 " ({}'s custom all-reduce does not run over {} GPUs "
                                                                 "of a {} link)",
                                                                 engine, tp, link.kind)
                                                           : fmt::format(" ({} not measured)", engine);
    out.push_back({fmt::format("TP all-reduce ({})", f->engine), Provenance::Measured, f->source + note, bandOf(*f)});
  } else {
    out.push_back({"TP all-reduce",
                   Provenance::Default,
                   "ring model over the profile's interconnect_link: " + link.source,
                   {kNonAttentionDefaultBand, BandBasis::Documented}});
  }
  return out;
}

}  // namespace attnsim
