"""GPU memory free when an SGLang model runner starts (issue 28, docs/CAPACITY.md "Where serve-sim stands").

    python3 measurements/start_memory.py --out start_memory.csv

SGLang sizes its KV pool as the memory free after loading the weights less (1 - mem_fraction_static)
times the memory free before loading them (model_runner.py profile_max_num_token, with total_gpu_memory
= min_per_gpu_memory from init_torch_distributed): so the pool is start_free x mem_fraction_static -
weights, where start_free is what torch.cuda.mem_get_info reports free once the process holds a CUDA
context and its torch.distributed group. This records, on one GPU: the device total as torch reports it,
the free memory after the CUDA context alone, and after a one-rank NCCL process group has run an
all-reduce (what a TP-1 runner has set up before it measures), each after torch.cuda.empty_cache()
as SGLang's get_available_gpu_memory calls it.
"""
import argparse
import csv
import datetime
import os
import sys

import torch
import torch.distributed as dist


def free_mib():
    torch.cuda.empty_cache()
    free, total = torch.cuda.mem_get_info()
    return free / 2**20, total / 2**20


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.cuda.set_device(0)
    torch.zeros(1, device="cuda")  # the CUDA context
    ctx_free, total = free_mib()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29511")
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
    t = torch.ones(1024, device="cuda")
    dist.all_reduce(t)
    torch.cuda.synchronize()
    nccl_free, _ = free_mib()
    dist.destroy_process_group()
    rows = [
        ("total", total, "torch.cuda.mem_get_info total"),
        ("free_after_context", ctx_free, "free after the CUDA context (one 4-byte tensor)"),
        ("free_after_nccl", nccl_free, "free after a one-rank NCCL group ran an all-reduce"),
    ]
    with open(args.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["device", "torch", "date", "quantity", "mib", "what"])
        for q, mib, what in rows:
            w.writerow([torch.cuda.get_device_name(0), torch.__version__, datetime.date.today().isoformat(), q,
                        f"{mib:.1f}", what])
    sys.stdout.write(open(args.out).read())


if __name__ == "__main__":
    main()
