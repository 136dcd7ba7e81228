"""GPU-side cost per kernel of eager launches against graph replay, measured the same way.

Eager: the stream is held busy by a long sleep kernel while the host queues 200 tiny kernels, so
the host is ahead and what separates consecutive kernels on the GPU is the device's own launch
path (the front end fetching each launch), not the host. Graph: the same 200 kernels captured and
replayed. Both from the profiler's kernel trace (the harness's graph_node method). Prints one line
per mode: the median idle gap between one kernel's end and the next one's start, and the median
kernel duration.

    python3 measurements/eager_gap.py

H200, torch 2.11.0+cu130, driver 580.159.04 (2026-11-23), two runs: eager gap median 0.93 and 0.96 us,
graph replay gap 0.065 us, tiny kernel 0.90-0.99 us (hardware/platforms/cuda.yaml eager_gap_us).
"""
import sys

import torch
from torch.profiler import ProfilerActivity, profile

NODES = 200


def traced(fn):
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    kernels = [(e.name, e.time_range.start, e.time_range.end - e.time_range.start) for e in prof.events()
               if e.device_type == torch.autograd.DeviceType.CUDA and "add" in e.name.lower()]
    return sorted(kernels, key=lambda k: k[1])


def gaps_of(kernels):
    gaps = [max(0.0, s1 - (s0 + d0)) for (_, s0, d0), (_, s1, _) in zip(kernels, kernels[1:])]
    durations = [d for _, _, d in kernels]
    return sorted(gaps), sorted(durations)


def report(mode, kernels):
    if len(kernels) < NODES // 2:
        print(f"{mode}: only {len(kernels)} kernels traced", file=sys.stderr)
        return
    gaps, durations = gaps_of(kernels)
    med = gaps[len(gaps) // 2]
    p20, p80 = gaps[len(gaps) // 5], gaps[4 * len(gaps) // 5]
    print(f"{mode}: {len(kernels)} kernels; idle gap median {med:.3f} us (p20 {p20:.3f}, p80 {p80:.3f}); "
          f"kernel duration median {durations[len(durations) // 2]:.3f} us")


def main():
    x = torch.zeros(1, device="cuda")

    def eager():
        torch.cuda._sleep(50_000_000)  # ~25 ms at 2 GHz: the host queues every launch before the GPU frees
        for _ in range(NODES):
            x.add_(1.0)

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(NODES):
            x.add_(1.0)
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    report("eager (host ahead)", traced(eager))
    report("graph replay", traced(graph.replay))


if __name__ == "__main__":
    main()
