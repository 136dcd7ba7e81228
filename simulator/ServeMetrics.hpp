#pragma once
// The benchmarks' metrics over a finished serve-sim run: percentiles of TTFT, TPOT, E2E, queueing
// and ITL, throughput per second of the run, goodput, and the batch and KV-use averages.
#include "simulator/ServeSim.hpp"

namespace attnsim {

void aggregateServing(const SchedulerConfig& c, const ServeSlo& slo, ServeResult& r);

}  // namespace attnsim
