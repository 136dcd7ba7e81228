#include "catalog/OperatorTransfer.hpp"

#include <fmt/format.h>

#include <algorithm>

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
}

}  // namespace attnsim
