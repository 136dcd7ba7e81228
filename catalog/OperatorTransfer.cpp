#include "catalog/OperatorTransfer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace attnsim {

namespace {

// A device without MoE fits takes every one of its architecture's first calibrated device (by id).
void transferMoeFits(std::vector<HardwareProfile>& hardware, const std::vector<const HardwareProfile*>& donors) {
  std::vector<std::pair<std::size_t, MoeFit>> moe;
  for (std::size_t i = 0; i < hardware.size(); ++i) {
    const HardwareProfile& h = hardware[i];
    if (!h.moe_fits.empty()) continue;
    for (const auto* d : donors) {
      if (d->architecture != h.architecture || d->moe_fits.empty() || !d->moe_fits.front().transferred_from.empty())
        continue;
      for (const auto& f : d->moe_fits) {
        moe.emplace_back(i, f);
        moe.back().second.transferred_from = d->id;
        moe.back().second.source = fmt::format("measured on {}, applied at {}'s peaks: {}", d->id, h.id, f.source);
      }
      break;
    }
  }
  for (auto& [i, f] : moe) hardware[i].moe_fits.push_back(std::move(f));
}

// Attention calibrations with a measured surface (the four parameters and the surface) a device lacks,
// per kernel family and phase class, from the first calibrated device of its architecture by id.
void transferAttentionCalibrations(std::vector<HardwareProfile>& hardware,
                                   const std::vector<const HardwareProfile*>& donors) {
  std::vector<std::pair<std::size_t, std::pair<std::pair<std::string, std::string>, KernelEfficiency>>> copies;
  for (std::size_t i = 0; i < hardware.size(); ++i) {
    const HardwareProfile& h = hardware[i];
    std::set<std::pair<std::string, std::string>> taken;
    for (const auto* d : donors) {
      if (d == &h || d->architecture != h.architecture) continue;
      for (const auto& [key, e] : d->calibrations) {
        // The engines' own kernels (fits with a measured surface): what a user predicting a device of
        // the architecture they do not own relies on; a harness-only fit stays on its device.
        if (!e.surface || h.calibrations.contains(key) || !e.transferred_from.empty() || !taken.insert(key).second)
          continue;
        KernelEfficiency copy = e;
        copy.transferred_from = d->id;
        copy.source = fmt::format("measured on {}, applied at {}'s peaks and bandwidth: {}", d->id, h.id, e.source);
        copies.emplace_back(i, std::pair{key, std::move(copy)});
      }
    }
  }
  for (auto& [i, entry] : copies) hardware[i].calibrations.emplace(entry.first, std::move(entry.second));
}

}  // namespace

void transferOperatorFits(std::vector<HardwareProfile>& hardware) {
  std::vector<const HardwareProfile*> donors;
  donors.reserve(hardware.size());
  for (const auto& h : hardware) donors.push_back(&h);
  std::sort(donors.begin(), donors.end(), [](const auto* a, const auto* b) { return a->id < b->id; });
  std::vector<std::pair<std::size_t, GemmSurface>> surfaces;
  std::vector<std::pair<std::size_t, std::vector<AllReduceFit>>> all_reduces;
  for (std::size_t i = 0; i < hardware.size(); ++i) {
    const HardwareProfile& h = hardware[i];
    for (const auto& dtype : kGemmDtypes) {
      if (h.gemmSurface(dtype)) continue;
      for (const auto* d : donors) {
        const GemmSurface* s = d->gemmSurface(dtype);
        if (d->architecture != h.architecture || !s || !s->transferred_from.empty()) continue;
        surfaces.emplace_back(i, *s);
        surfaces.back().second.transferred_from = d->id;
        surfaces.back().second.source =
            fmt::format("measured on {}, applied at {}'s peaks: {}", d->id, h.id, s->source);
        break;
      }
    }
    if (!h.interconnect_link || !h.interconnect_link->all_reduces.empty()) continue;
    for (const auto* d : donors) {
      const auto& link = d->interconnect_link;
      if (d->architecture != h.architecture || !link || link->all_reduces.empty() ||
          link->kind != h.interconnect_link->kind || link->bandwidth_gbps != h.interconnect_link->bandwidth_gbps ||
          !link->all_reduces.front().transferred_from.empty())
        continue;
      all_reduces.emplace_back(i, link->all_reduces);
      for (auto& f : all_reduces.back().second) {
        f.transferred_from = d->id;
        f.source = fmt::format("measured on {} over the same link: {}", d->id, f.source);
      }
      break;
    }
  }
  for (auto& [i, s] : surfaces) hardware[i].gemm_surfaces.push_back(std::move(s));
  // Each surface on its own device's roofline; none where the device has no peak for the dtype.
  for (auto& h : hardware) {
    std::erase_if(h.gemm_surfaces, [&](GemmSurface& s) {
      const GemmRoofline roofline = h.gemmRoofline(s.dtype);
      if (roofline.flops_per_us <= 0) return true;
      s.resolve(roofline);
      return false;
    });
  }
  transferMoeFits(hardware, donors);
  for (auto& h : hardware) {
    std::erase_if(h.moe_fits, [&](MoeFit& f) {
      f.roofline = h.gemmRoofline(f.dtype);
      return f.roofline.flops_per_us <= 0;
    });
  }
  for (auto& [i, f] : all_reduces) hardware[i].interconnect_link->all_reduces = std::move(f);
  transferAttentionCalibrations(hardware, donors);
}

}  // namespace attnsim
