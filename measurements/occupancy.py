"""How many CTAs of each decode kernel an SM holds at once, from the profiler's own kernel records.

The cost model schedules a kernel's CTAs on `ctas_per_sm` slots per SM (backends/kernels/*.yaml).
That number is the kernel's occupancy: registers per thread, shared memory per CTA and threads per
CTA against the SM's limits. The profiler's trace gives the first three for every kernel it records;
this script writes them, with the occupancy they imply, one CSV row per kernel:

    python3 measurements/occupancy.py --out occupancy.csv [--vllm-src DIR] [--sglang-src DIR]

With an engine's source tree (engine_kernels.py: the kernels are loaded from there at run time), its
Triton decode kernels are recorded too, called as engine_kernels.py times them.

Hopper limits (CUDA C Programming Guide, "Compute capability 9.0"): 65536 registers, 64 warps,
32 CTAs and 227 KiB of shared memory per CTA (228 KiB per SM, 1 KiB of it reserved per CTA).
Registers are allocated per warp in units of 256.
"""
import argparse
import csv
import itertools
import json
import os
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

REGS_PER_SM, WARPS_PER_SM, CTAS_PER_SM, SMEM_PER_SM, SMEM_RESERVED = 65536, 64, 32, 228 * 1024, 1024


def resident_ctas(threads, regs, smem):
    """CTAs per SM and the resource that limits them."""
    warps = -(-threads // 32)
    regs_per_warp = -(-regs * 32 // 256) * 256
    limits = {"warps": WARPS_PER_SM // warps, "ctas": CTAS_PER_SM,
              "registers": REGS_PER_SM // (regs_per_warp * warps) if regs else CTAS_PER_SM,
              "shared memory": SMEM_PER_SM // (smem + SMEM_RESERVED)}
    limit = min(limits, key=limits.get)
    return limits[limit], limit


def traced_kernels(fn):
    """The kernel records of one call of `fn` (after a warm-up call), from the profiler's trace."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        prof.export_chrome_trace(f.name)
        events = json.load(open(f.name))["traceEvents"]
    return [e for e in events if e.get("cat") == "kernel"]


def calls():
    """(implementation, shape, call) for the decode kernels the calibration fits, at a batch that fills
    the machine (32 requests of 4096 keys) and at a lone wave (8 requests)."""
    from torch.nn.attention.experimental._paged_attention import PagedAttention
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    harness.allow_recompiles()
    compiled = torch.compile(flex_attention, dynamic=False)
    for b in (8, 32):
        for heads, kv_heads in ((32, 32), (32, 8)):
            shape = f"decode b{b} q1 kv4096 h{heads}/{kv_heads} d128"
            q, k, v = harness.make_qkv(b, 1, 4096, heads, kv_heads, 128)
            for impl, backend in harness.SDPA_BACKENDS.items():
                if impl != "sdpa_math" and not (impl == "sdpa_efficient" and heads != kv_heads):
                    yield impl, shape, harness.sdpa_call(backend, q, k, v, "decode")
            mask = create_block_mask(lambda bi, h, qi, ki: ki >= 0, None, None, 1, 4096, device="cuda")
            yield "flex_decoding", shape, (lambda q=q, k=k, v=v, m=mask, g=heads != kv_heads:
                                           compiled(q, k, v, block_mask=m, enable_gqa=g))
            yield "flex_decoding_paged", shape + " paged/128", harness.paged_flex_call(
                compiled, PagedAttention, create_block_mask, b, 4096, heads, kv_heads, 128)


def engine_calls(vllm_src, sglang_src):
    """(implementation, shape, call) for the engines' Triton decode kernels, at the same two batches."""
    if not (vllm_src or sglang_src):
        return
    import engine_kernels as ek
    vllm = ek.load_vllm(vllm_src) if vllm_src else None
    sglang = ek.load_sglang(sglang_src) if sglang_src else None
    for b in (8, 32):
        for d in (128, 64):
            shape = f"decode b{b} q1 kv4096 h32/8 d{d}"
            if vllm:
                run = ek.vllm_unified_call(vllm["unified"], [(1, 4096)] * b, 32, 8, d, torch.bfloat16)[0]
                yield "vllm_triton_unified", shape + " paged/16", run
            if sglang:
                yield "sglang_triton_decode", shape + " paged/1", ek.sglang_decode_call(sglang, b, 4096, 32, 8, d)[0]
        if vllm:
            for heads in (16, 128):
                run = ek.vllm_mla_call(vllm["mla"], b, 4096, heads, torch.bfloat16)[0]
                yield "vllm_triton_mla_decode", f"decode b{b} q1 kv4096 h{heads}/1 d576 paged/16", run


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--vllm-src", help="vLLM source tree: record TRITON_ATTN's and TRITON_MLA's decode kernels")
    parser.add_argument("--sglang-src", help="SGLang source tree: record the triton backend's decode kernels")
    args = parser.parse_args()
    device = torch.cuda.get_device_properties(0)
    columns = ["device", "impl", "shape", "kernel", "grid", "block", "registers_per_thread", "shared_memory",
               "profiler_occupancy_pct", "resident_ctas_per_sm", "limited_by"]
    with open(args.out, "w", newline="") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        for impl, shape, fn in itertools.chain(calls(), engine_calls(args.vllm_src, args.sglang_src)):
            for e in traced_kernels(fn):
                a = e.get("args", {})
                threads = 1
                for n in a.get("block", [1]):
                    threads *= n
                regs, smem = a.get("registers per thread", 0), a.get("shared memory", 0)
                ctas, limit = resident_ctas(threads, regs, smem)
                writer.writerow([device.name, impl, shape, e["name"][:120], "x".join(map(str, a.get("grid", []))),
                                 "x".join(map(str, a.get("block", []))), regs, smem,
                                 a.get("est. achieved occupancy %", ""), ctas, limit])
                print(f"{impl:22s} {shape:40s} {e['name'][:60]:60s} regs {regs} smem {smem} -> {ctas} CTAs/SM "
                      f"({limit})", flush=True)


if __name__ == "__main__":
    main()
