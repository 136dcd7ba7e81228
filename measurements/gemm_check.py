#!/usr/bin/env python3
"""Dense bf16 GEMMs of real models' projections, timed as CUDA-graph replays with the L2 flushed
(harness.timed): attnsim's own check of the GEMM surfaces it fits to AIConfigurator's tables, on the
H100 they came from and on the H200 they are transferred to (docs/MEASUREMENTS.md).

    python3 measurements/gemm_check.py --out gemm_check.csv
"""
import argparse

import torch

from harness import Recorder, timed

# (N, K) of the projections of Llama-3.1-8B (TP 1) and Llama-3.1-70B (TP 4): QKV, O, gate-up, down.
PROJECTIONS = [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336),
               (2560, 8192), (8192, 2048), (14336, 8192), (8192, 7168)]
TOKENS = [1, 8, 32, 128, 512, 2048, 8192]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    rec = Recorder(args.out)
    for n, k in PROJECTIONS:
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        for m in TOKENS:
            a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            med, p20, p80, runs, how = timed(lambda: torch.nn.functional.linear(a, w))
            rec.add(kind="gemm", impl="torch_linear", batch=m, q_len=n, kv_len=k, dtype="bf16", median_us=f"{med:.3f}",
                    p20_us=f"{p20:.3f}", p80_us=f"{p80:.3f}", runs=runs, flops=f"{2.0 * m * n * k:.6g}",
                    bytes=f"{2.0 * (m * k + n * k + m * n):.6g}", note=f"{how}, L2 flushed; batch=M q_len=N kv_len=K")
    print(f"gemm_check: {rec.count} rows to {args.out}")


if __name__ == "__main__":
    main()
