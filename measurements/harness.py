#!/usr/bin/env python3
"""attnsim GPU measurement harness.

Measures, on the one GPU it runs on, every attention implementation PyTorch offers there (SDPA's
flash, cuDNN, memory-efficient and math backends; FlexAttention compiled) for prefill, extend
and decode over head dims, MHA and GQA, batches and context lengths; plus the device's copy
bandwidth, GEMM throughput, kernel-launch cost, CUDA-graph capture and replay costs, and a
synthetic decoder step eager versus graph replay. One CSV row per measurement.

Timing: triton.testing.do_bench (CUDA events, L2 flushed before every run, warm-up first),
median and 20th/80th percentiles of at least 20 runs. Usage:
    python3 measurements/harness.py --out FILE.csv [--quick] [--vllm-src DIR] [--sglang-src DIR]
With an engine's source tree, the engine's own Triton attention kernels too (engine_kernels.py);
section vllm_flex: FlexAttention as vLLM's FLEX_ATTENTION backend calls it (vllm_flex.py).
"""
import argparse
import csv
import datetime
import math
import platform
import sys
import time
import traceback
import warnings

import torch
import triton

import engine_kernels
import vllm_flex
import triton.testing
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.bias import causal_lower_right

COLUMNS = ["device", "date", "torch", "triton", "cuda", "kind", "impl", "phase", "batch", "q_len", "kv_len",
           "heads", "kv_heads", "head_dim", "causal", "dtype", "median_us", "p20_us", "p80_us", "runs", "flops",
           "bytes", "page_size", "note", "engine_commit"]

# The math backend computes in float32 unless reduced-precision reductions are allowed (off by default).
MATH_NOTE = ("math in " + ("bf16" if torch.backends.cuda.fp16_bf16_reduction_math_sdp_allowed() else "fp32 (inputs upcast)")
             + f"; float32 matmul precision {torch.get_float32_matmul_precision()}")

SDPA_BACKENDS = {
    "sdpa_flash": SDPBackend.FLASH_ATTENTION,
    "sdpa_efficient": SDPBackend.EFFICIENT_ATTENTION,
    "sdpa_cudnn": SDPBackend.CUDNN_ATTENTION,
    "sdpa_math": SDPBackend.MATH,
}


class Recorder:
    def __init__(self, path):
        props = torch.cuda.get_device_properties(0)
        self.common = {
            "device": props.name,
            "date": datetime.date.today().isoformat(),
            "torch": torch.__version__,
            "triton": triton.__version__,
            "cuda": torch.version.cuda,
        }
        self.file = open(path, "w", newline="")
        self.writer = csv.DictWriter(self.file, fieldnames=COLUMNS)
        self.writer.writeheader()
        self.count = 0

    def add(self, **row):
        full = dict(self.common)
        full.update(row)
        for c in COLUMNS:
            full.setdefault(c, "")
        self.writer.writerow(full)
        self.file.flush()
        self.count += 1


GRAPH_TIMING = True  # --eager-timing turns it off


def as_graph(fn):
    """`fn` captured into a CUDA graph (after warm-up on a side stream), or None where it cannot be."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            fn()
    except Exception as e:
        print(f"no graph ({type(e).__name__}: {e}); timed eagerly", file=sys.stderr)
        torch.cuda.synchronize()
        return None
    return graph


def timed(fn, graph=None):
    """Median, p20, p80 in microseconds and the number of timed runs (at least 20), and how it was
    timed. The call is replayed from a CUDA graph where it can be, so that the figure is the GPU's
    time and not the host's dispatch (SDPA 10-20 µs, compiled FlexAttention 50-150 µs a call), as
    engines run decode; the harness's first data sets timed eager calls."""
    if graph is None and GRAPH_TIMING:
        graph = as_graph(fn)
    run = graph.replay if graph is not None else fn
    how = "timed as CUDA-graph replay" if graph is not None else "timed eagerly"
    run()
    torch.cuda.synchronize()
    start = time.perf_counter()
    run()
    torch.cuda.synchronize()
    estimate_ms = max((time.perf_counter() - start) * 1e3, 1e-3)
    rep_ms = max(100.0, 25 * estimate_ms)
    med, p20, p80 = triton.testing.do_bench(run, warmup=max(25.0, 3 * estimate_ms), rep=rep_ms,
                                            quantiles=[0.5, 0.2, 0.8])
    runs = max(20, int(rep_ms / estimate_ms))
    del graph
    return med * 1e3, p20 * 1e3, p80 * 1e3, runs, how


def profiled_kernels(fn, reps=1):
    """The GPU kernels `fn` runs, from the profiler's trace: (name, start µs, duration µs) in start order."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
    kernels = [(e.name, e.time_range.start, e.time_range.end - e.time_range.start) for e in prof.events()
               if e.device_type == torch.autograd.DeviceType.CUDA and not e.name.startswith(("Memcpy", "Memset"))]
    return sorted(kernels, key=lambda k: k[1])


def quantiles(values, qs):
    ordered = sorted(values)
    return [ordered[min(len(ordered) - 1, int(q * len(ordered)))] for q in qs]


def attention_work(batch, q_len, kv_len, heads, kv_heads, head_dim, phase):
    """Exact FLOPs and the bytes each input is read and each output written once (bf16)."""
    if phase == "prefill":
        attended = q_len * (q_len + 1) / 2
    elif phase == "extend":
        prefix = kv_len - q_len
        attended = q_len * prefix + q_len * (q_len + 1) / 2
    else:
        attended = q_len * kv_len
    flops = 2.0 * batch * heads * attended * 2 * head_dim
    elems = batch * (2 * q_len * heads * head_dim + 2 * kv_len * kv_heads * head_dim)
    return flops, 2.0 * elems


def make_qkv(batch, q_len, kv_len, heads, kv_heads, head_dim):
    q = torch.randn(batch, heads, q_len, head_dim, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(batch, kv_heads, kv_len, head_dim, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(batch, kv_heads, kv_len, head_dim, device="cuda", dtype=torch.bfloat16)
    return q, k, v


def sdpa_call(backend, q, k, v, phase):
    gqa = q.shape[1] != k.shape[1]
    if phase == "prefill":
        kwargs = {"is_causal": True}
    elif phase == "extend":
        kwargs = {"attn_mask": causal_lower_right(q.shape[2], k.shape[2])}
    else:
        kwargs = {}

    def run():
        with sdpa_kernel(backend):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=gqa, **kwargs)

    return run


def measure_attention(rec, quick):
    shapes = []
    head_dims = [64, 128, 256]
    groups = [(32, 32), (32, 8)]
    decode_batches = [1, 8, 32] if not quick else [1, 32]
    contexts = [512, 1024, 2048, 4096, 8192, 16384, 32768] if not quick else [2048, 8192]
    for d in head_dims:
        for heads, kv_heads in groups:
            for b in decode_batches:
                for ctx in contexts:
                    shapes.append(("decode", b, 1, ctx, heads, kv_heads, d))
            for b in ([1, 4] if not quick else [1]):
                for L in ([512, 1024, 2048, 4096, 8192] if not quick else [1024, 4096]):
                    shapes.append(("prefill", b, L, L, heads, kv_heads, d))
            extends = [(512, c) for c in (1024, 2048, 4096, 8192, 16384)] + [(2048, c) for c in (4096, 8192, 16384)]
            for q_len, ctx in (extends if not quick else [(512, 4096)]):
                shapes.append(("extend", 1, q_len, ctx, heads, kv_heads, d))
    for phase, b, q_len, kv_len, heads, kv_heads, d in shapes:
        kv_bytes = 2 * 2 * b * kv_len * kv_heads * d
        if kv_bytes > 16e9:
            continue
        q, k, v = make_qkv(b, q_len, kv_len, heads, kv_heads, d)
        flops, nbytes = attention_work(b, q_len, kv_len, heads, kv_heads, d, phase)
        for impl, backend in SDPA_BACKENDS.items():
            if impl == "sdpa_math" and (q_len * kv_len * heads * b > 2 ** 31 or q_len > 4096):
                continue  # the full score matrix would not fit or take minutes
            fn = sdpa_call(backend, q, k, v, phase)
            try:
                fn()
                torch.cuda.synchronize()
            except Exception as e:  # the backend does not take this shape
                print(f"skip {impl} {phase} b{b} q{q_len} kv{kv_len} h{heads}/{kv_heads} d{d}: {type(e).__name__}",
                      file=sys.stderr)
                continue
            med, p20, p80, runs, how = timed(fn)
            rec.add(kind="attention", impl=impl, phase=phase, batch=b, q_len=q_len, kv_len=kv_len, heads=heads,
                    kv_heads=kv_heads, head_dim=d, causal=int(phase != "decode"), dtype="bf16", median_us=f"{med:.3f}",
                    p20_us=f"{p20:.3f}", p80_us=f"{p80:.3f}", runs=runs, flops=f"{flops:.6g}", bytes=f"{nbytes:.6g}",
                    note=how + ("; " + MATH_NOTE if impl == "sdpa_math" else ""))
        del q, k, v
        torch.cuda.empty_cache()


def measure_wave_edges(rec):
    """Decode just below and just past whole waves of CTAs (batch x KV heads around 1x and 2x the SM
    count, where FlashAttention's heuristic does not split): does one unit more than a full wave cost
    a wave, or only its bytes? Written to a file of its own; the calibration does not read it."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    heads, kv_heads, d = 32, 8, 128
    full = sms // kv_heads
    batches = sorted({full - 1, full, full + 1, full + 2, 2 * full, 2 * full + 1, 2 * full + 2, 2 * full + 3})
    for ctx in (8192, 16384):
        for b in batches:
            q, k, v = make_qkv(b, 1, ctx, heads, kv_heads, d)
            flops, nbytes = attention_work(b, 1, ctx, heads, kv_heads, d, "decode")
            for impl, backend in SDPA_BACKENDS.items():
                if impl == "sdpa_math":
                    continue
                fn = sdpa_call(backend, q, k, v, "decode")
                try:
                    fn()
                    torch.cuda.synchronize()
                except Exception as e:  # the backend does not take this shape
                    print(f"skip {impl} decode b{b} kv{ctx}: {type(e).__name__}", file=sys.stderr)
                    continue
                med, p20, p80, runs, how = timed(fn)
                rec.add(kind="attention", impl=impl, phase="decode", batch=b, q_len=1, kv_len=ctx, heads=heads,
                        kv_heads=kv_heads, head_dim=d, causal=0, dtype="bf16", median_us=f"{med:.3f}",
                        p20_us=f"{p20:.3f}", p80_us=f"{p80:.3f}", runs=runs, flops=f"{flops:.6g}",
                        bytes=f"{nbytes:.6g}", note=f"{how}; wave edge: {b * kv_heads} units on {sms} SMs")
            del q, k, v
            torch.cuda.empty_cache()


def allow_recompiles():
    """Let torch.compile build one kernel per shape. Past dynamo's recompile limit (8 by default) a
    compiled function silently falls back to eager FlexAttention, which materialises the scores:
    the first data sets' FlexAttention decode rows (3-4 ms whatever the shape) were that fallback."""
    import torch._dynamo
    for name in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit", "accumulated_cache_size_limit"):
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, 100000)
    if hasattr(torch._dynamo.config, "fail_on_recompile_limit_hit"):
        torch._dynamo.config.fail_on_recompile_limit_hit = True


def measure_flex(rec, quick):
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    allow_recompiles()
    compiled = torch.compile(flex_attention, dynamic=False)
    cases = [("prefill", 1, L, L) for L in ([1024, 4096] if quick else [512, 1024, 2048, 4096, 8192])]
    decode_contexts = [4096] if quick else [512, 1024, 2048, 4096, 8192, 16384]
    cases += [("decode", b, 1, ctx) for b in ([8] if quick else [1, 8, 32]) for ctx in decode_contexts]
    for phase, b, q_len, kv_len in cases:
        for heads, kv_heads in [(32, 32), (32, 8)]:
            d = 128
            q, k, v = make_qkv(b, q_len, kv_len, heads, kv_heads, d)
            offset = kv_len - q_len

            def causal(bi, h, qi, ki):
                return qi + offset >= ki

            mask = create_block_mask(causal, None, None, q_len, kv_len, device="cuda")
            fn = lambda: compiled(q, k, v, block_mask=mask, enable_gqa=heads != kv_heads)
            # A short query runs PyTorch's flex-decoding template (split over the keys, the query heads
            # of one KV head in one tile); longer ones the flex-attention forward template.
            impl = "flex_decoding" if phase == "decode" else "flex"
            record_flex(rec, impl, fn, phase, b, q_len, kv_len, heads, kv_heads, d, "compiled, causal block mask")
            del q, k, v
    try:
        from torch.nn.attention.experimental._paged_attention import PagedAttention
    except ImportError as e:
        print(f"skip flex_paged: {e}", file=sys.stderr)
        return
    page = PAGED_FLEX_PAGE
    for b in ([8] if quick else [1, 8, 32]):
        for kv_len in decode_contexts:
            for heads, kv_heads in [(32, 32), (32, 8)]:
                fn = paged_flex_call(compiled, PagedAttention, create_block_mask, b, kv_len, heads, kv_heads, 128)
                record_flex(rec, "flex_decoding_paged", fn, "decode", b, 1, kv_len, heads, kv_heads, 128,
                            PAGED_FLEX_NOTE, page)
                del fn
                torch.cuda.empty_cache()


PAGED_FLEX_PAGE = 128  # PagedAttention needs the block mask's KV block size to equal the page size
PAGED_FLEX_NOTE = f"page_size={PAGED_FLEX_PAGE}; PagedAttention (torch experimental), pages shuffled"


def paged_flex_call(compiled, PagedAttention, create_block_mask, b, kv_len, heads, kv_heads, d):
    """Decode through torch's experimental PagedAttention: K/V in a pool of 128-token pages handed
    out in random order, the logical block mask converted to the physical one."""
    page = PAGED_FLEX_PAGE
    pages = b * kv_len // page
    paged = PagedAttention(pages, page, b, device="cuda")
    order = torch.randperm(pages).tolist()  # pages scattered over the pool, as after serving a while
    paged.empty_pages = order
    for i in range(b):
        paged.reserve(torch.tensor(i, device="cuda"), torch.tensor(kv_len, device="cuda"))
    k_cache = torch.randn(1, kv_heads, pages * page, d, device="cuda", dtype=torch.bfloat16)
    v_cache = torch.randn(1, kv_heads, pages * page, d, device="cuda", dtype=torch.bfloat16)
    q = torch.randn(b, heads, 1, d, device="cuda", dtype=torch.bfloat16)
    logical = create_block_mask(lambda bi, h, qi, ki: ki >= 0, b, None, 1, kv_len, device="cuda", BLOCK_SIZE=page)
    physical = paged.convert_logical_block_mask(logical)
    score_mod = paged.get_score_mod(None)
    return lambda: compiled(q, k_cache, v_cache, block_mask=physical, score_mod=score_mod,
                            enable_gqa=heads != kv_heads)


def measure_vllm_flex(rec, args):
    """FlexAttention as vLLM's FLEX_ATTENTION backend calls it (vllm_flex.py); then, to a file of
    its own (OUT_baseline.csv), the torch PagedAttention decode rows (flex_decoding_paged, the
    FlashDecoding template) at a few of the same shapes on the same machine, for comparison."""
    allow_recompiles()
    vllm_flex.measure(rec, timed, attention_work, args.quick)
    from torch.nn.attention.experimental._paged_attention import PagedAttention
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    baseline = Recorder(args.out[:-4] + "_baseline.csv" if args.out.endswith(".csv") else args.out + "_baseline")
    compiled = torch.compile(flex_attention, dynamic=False)
    for b, kv_len in ([(8, 4096)] if args.quick else [(1, 4096), (32, 4096), (1, 32768), (32, 32768)]):
        fn = paged_flex_call(compiled, PagedAttention, create_block_mask, b, kv_len, 32, 8, 128)
        record_flex(baseline, "flex_decoding_paged", fn, "decode", b, 1, kv_len, 32, 8, 128,
                    PAGED_FLEX_NOTE + "; baseline beside vllm_flex_attention", PAGED_FLEX_PAGE)
        del fn
        torch.cuda.empty_cache()
    print(f"vllm_flex: {baseline.count} baseline rows in {baseline.file.name}", flush=True)


def record_flex(rec, impl, fn, phase, b, q_len, kv_len, heads, kv_heads, d, note, page_size=0):
    try:
        fn()
        torch.cuda.synchronize()
    except Exception as e:
        print(f"skip {impl} {phase} b{b} q{q_len} kv{kv_len} h{heads}/{kv_heads}: {type(e).__name__}: {e}",
              file=sys.stderr)
        return
    flops, nbytes = attention_work(b, q_len, kv_len, heads, kv_heads, d, phase)
    med, p20, p80, runs, how = timed(fn)
    rec.add(kind="attention", impl=impl, phase=phase, batch=b, q_len=q_len, kv_len=kv_len, heads=heads,
            kv_heads=kv_heads, head_dim=d, causal=int(phase != "decode"), dtype="bf16", median_us=f"{med:.3f}",
            p20_us=f"{p20:.3f}", p80_us=f"{p80:.3f}", runs=runs, flops=f"{flops:.6g}", bytes=f"{nbytes:.6g}",
            page_size=page_size, note=f"{how}; {note}")


def measure_device(rec):
    # Copy bandwidth: bytes read plus bytes written.
    for mib in [64, 1024]:
        src = torch.empty(mib * 2 ** 20 // 2, dtype=torch.bfloat16, device="cuda").normal_()
        dst = torch.empty_like(src)
        med, p20, p80, runs, _ = timed(lambda: dst.copy_(src))
        rec.add(kind="copy", impl="copy", batch=1, q_len=mib, median_us=f"{med:.3f}", p20_us=f"{p20:.3f}",
                p80_us=f"{p80:.3f}", runs=runs, bytes=2 * src.numel() * 2, dtype="bf16", note="q_len = MiB copied")
    # GEMM: square and the skinny shapes of decode.
    for m, n, kdim in [(8192, 8192, 8192), (4096, 4096, 4096), (1, 4096, 4096), (16, 4096, 4096), (64, 4096, 4096),
                       (256, 4096, 4096), (1024, 14336, 4096), (1, 14336, 4096)]:
        a = torch.randn(m, kdim, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(kdim, n, device="cuda", dtype=torch.bfloat16)
        med, p20, p80, runs, _ = timed(lambda: a @ w)
        rec.add(kind="gemm", impl="torch_matmul", batch=m, q_len=n, kv_len=kdim, dtype="bf16", median_us=f"{med:.3f}",
                p20_us=f"{p20:.3f}", p80_us=f"{p80:.3f}", runs=runs, flops=2.0 * m * n * kdim,
                bytes=2.0 * (m * kdim + kdim * n + m * n), note="batch=M q_len=N kv_len=K")
    # Launch cost: back-to-back tiny kernels issued from the CPU, and the same work as one graph.
    x = torch.zeros(1, device="cuda")
    for n in [10, 100, 1000, 3000]:
        for _ in range(3):
            torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(n):
                x.add_(1.0)
            torch.cuda.synchronize()
        eager_us = (time.perf_counter() - start) * 1e6
        rec.add(kind="launch", impl="eager", batch=n, median_us=f"{eager_us:.3f}", runs=3,
                note="batch = kernels launched back to back; median_us = their total wall time")
        graph = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream()
        torch.cuda.synchronize()
        start = time.perf_counter()
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(n):
                x.add_(1.0)
        torch.cuda.synchronize()
        capture_us = (time.perf_counter() - start) * 1e6
        rec.add(kind="graph_capture", impl="cuda_graph", batch=n, median_us=f"{capture_us:.3f}", runs=1,
                note="batch = nodes; median_us = capture wall time")
        med, p20, p80, runs, _ = timed(graph.replay, graph=graph)
        rec.add(kind="graph_replay", impl="cuda_graph", batch=n, median_us=f"{med:.3f}", p20_us=f"{p20:.3f}",
                p80_us=f"{p80:.3f}", runs=runs, note="batch = nodes; device time of one replay")
        torch.cuda.synchronize()
        reps = 50
        start = time.perf_counter()
        for _ in range(reps):
            graph.replay()
        torch.cuda.synchronize()
        rec.add(kind="graph_launch", impl="cuda_graph", batch=n, median_us=f"{(time.perf_counter() - start) * 1e6 / reps:.3f}",
                runs=reps, note="batch = nodes; wall time per replay issued back to back")


def measure_graph_nodes(rec):
    """Per-node cost of a replayed graph: the idle gap between one node's end and the next node's
    start on the GPU, from the profiler's kernel trace (a graph of tiny kernels, replayed 5 times)."""
    x = torch.zeros(1, device="cuda")
    nodes = 200
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(nodes):
            x.add_(1.0)
    kernels = profiled_kernels(graph.replay, reps=5)
    gaps, intervals, durations = [], [], []
    for (_, s0, d0), (_, s1, _) in zip(kernels, kernels[1:]):
        if s1 - s0 < 50:  # consecutive nodes of one replay (replays are far apart)
            gaps.append(max(0.0, s1 - (s0 + d0)))
            intervals.append(s1 - s0)
            durations.append(d0)
    if len(gaps) < 20:
        print(f"skip graph_node: {len(kernels)} kernels traced", file=sys.stderr)
        return
    med, p20, p80 = quantiles(gaps, [0.5, 0.2, 0.8])
    rec.add(kind="graph_node", impl="cuda_graph", batch=nodes, median_us=f"{med:.3f}", p20_us=f"{p20:.3f}",
            p80_us=f"{p80:.3f}", runs=len(gaps),
            note=f"median_us = GPU idle gap between consecutive nodes (profiler); node duration median "
                 f"{quantiles(durations, [0.5])[0]:.3f} us, start-to-start {quantiles(intervals, [0.5])[0]:.3f} us")


def write_kernels(out, label, kernels):
    total = sum(d for _, _, d in kernels)
    out.write(f"{label}: {len(kernels)} kernels, {total:.1f} us\n")
    for name, _, dur in kernels:
        out.write(f"    {dur:9.1f} us  {name[:140]}\n")


def list_kernels(path, skip=()):
    """Which kernels each SDPA backend, compiled FlexAttention and vLLM's FlexAttention call run for
    a decode and a prefill shape (names, count, µs); a section named in `skip` is left out."""
    with open(path, "w") as out:
        for phase, b, q_len, kv_len in [("decode", 8, 1, 4096), ("prefill", 1, 2048, 2048), ("extend", 1, 512, 4096)]:
            if "attention" in skip:
                break
            for heads, kv_heads in [(32, 32), (32, 8)]:
                q, k, v = make_qkv(b, q_len, kv_len, heads, kv_heads, 128)
                for impl, backend in SDPA_BACKENDS.items():
                    try:
                        kernels = profiled_kernels(sdpa_call(backend, q, k, v, phase))
                    except Exception as e:
                        out.write(f"{impl} {phase} b{b} q{q_len} kv{kv_len} h{heads}/{kv_heads}: {type(e).__name__}\n")
                        continue
                    write_kernels(out, f"{impl} {phase} b{b} q{q_len} kv{kv_len} h{heads}/{kv_heads} d128", kernels)
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        compiled = torch.compile(flex_attention, dynamic=False)
        for b, q_len, kv_len in ([] if "flex" in skip else [(8, 1, 4096), (1, 2048, 2048)]):
            for heads, kv_heads in [(32, 32), (32, 8)]:
                q, k, v = make_qkv(b, q_len, kv_len, heads, kv_heads, 128)
                offset = kv_len - q_len
                mask = create_block_mask(lambda bi, h, qi, ki: qi + offset >= ki, None, None, q_len, kv_len,
                                         device="cuda")
                kernels = profiled_kernels(lambda: compiled(q, k, v, block_mask=mask, enable_gqa=heads != kv_heads))
                write_kernels(out, f"flex b{b} q{q_len} kv{kv_len} h{heads}/{kv_heads} d128", kernels)
        if "vllm_flex" not in skip:
            vllm_flex.list_kernels(out, profiled_kernels, write_kernels)


def measure_step(rec, quick):
    """A synthetic decoder (8 layers: norm, QKV, SDPA decode, O, norm, MLP) eager vs graph replay."""
    hidden, heads, kv_heads, d, inter, layers = 2048, 16, 4, 128, 5632, 8
    ctx = 2048
    weights = []
    for _ in range(layers):
        weights.append({
            "qkv": torch.randn(hidden, (heads + 2 * kv_heads) * d, device="cuda", dtype=torch.bfloat16) * 0.02,
            "o": torch.randn(heads * d, hidden, device="cuda", dtype=torch.bfloat16) * 0.02,
            "up": torch.randn(hidden, 2 * inter, device="cuda", dtype=torch.bfloat16) * 0.02,
            "down": torch.randn(inter, hidden, device="cuda", dtype=torch.bfloat16) * 0.02,
        })
    measured = []
    for b in ([1, 8, 32] if quick else [1, 2, 4, 8, 16, 32, 64]):
        x = torch.randn(b, hidden, device="cuda", dtype=torch.bfloat16)
        caches = [(torch.randn(b, kv_heads, ctx, d, device="cuda", dtype=torch.bfloat16),
                   torch.randn(b, kv_heads, ctx, d, device="cuda", dtype=torch.bfloat16)) for _ in range(layers)]

        def step(x=x, caches=caches, b=b):
            h = x
            for w, (kc, vc) in zip(weights, caches):
                n = torch.nn.functional.rms_norm(h, (hidden,))
                qkv = n @ w["qkv"]
                q = qkv[:, : heads * d].view(b, heads, 1, d)
                a = torch.nn.functional.scaled_dot_product_attention(q, kc, vc, enable_gqa=True)
                h = h + a.reshape(b, heads * d) @ w["o"]
                n = torch.nn.functional.rms_norm(h, (hidden,))
                gate, up = (n @ w["up"]).chunk(2, dim=-1)
                h = h + (torch.nn.functional.silu(gate) * up) @ w["down"]
            return h

        step()
        torch.cuda.synchronize()
        reps = 30
        start = time.perf_counter()
        for _ in range(reps):
            step()
        torch.cuda.synchronize()
        eager = (time.perf_counter() - start) * 1e6 / reps
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(reps):
            graph.replay()
        torch.cuda.synchronize()
        replay = (time.perf_counter() - start) * 1e6 / reps
        measured.append((b, step, eager, replay, reps))
    # Kernel counts last: once the profiler has run, CUPTI stays attached and slows every launch.
    for b, step, eager, replay, reps in measured:
        kernels = len(profiled_kernels(step))
        note = (f"synthetic decoder: {layers} layers, hidden {hidden}, heads {heads}/{kv_heads}, d {d}, mlp {inter}, "
                f"context {ctx}; {kernels} kernels per step")
        rec.add(kind="step", impl="eager", batch=b, kv_len=ctx, heads=heads, kv_heads=kv_heads, head_dim=d,
                median_us=f"{eager:.3f}", runs=reps, note=note)
        rec.add(kind="step", impl="cuda_graph", batch=b, kv_len=ctx, heads=heads, kv_heads=kv_heads, head_dim=d,
                median_us=f"{replay:.3f}", runs=reps, note=note)


def measure_engines(engines, rec, args):
    """The engines' kernels (none without --vllm-src / --sglang-src); mixed batches to OUT_mixed.csv."""
    if not engines:
        return
    mixed = Recorder(args.out[:-4] + "_mixed.csv" if args.out.endswith(".csv") else args.out + "_mixed")
    phases = set(filter(None, args.engine_phases.split(","))) or None
    engine_kernels.measure(engines, rec, mixed, args.quick, timed, attention_work, phases)
    print(f"engine: {mixed.count} mixed-batch rows in {mixed.file.name}", flush=True)
    for path in (args.out, mixed.file.name):
        with open(path) as f:
            rows = [r for r in csv.DictReader(f) if r["engine_commit"]]
        for r in rows:  # a short table: context 4096 for decode and mixed, 2048 new tokens otherwise
            if (r["kv_len"] == "4096" and r["phase"] in ("decode", "mixed")) or r["q_len"] == "2048":
                gbs = float(r["bytes"]) / float(r["median_us"]) / 1e3
                print(f"{r['impl']:24} {r['dtype']:8} {r['phase']:7} b{r['batch']:>3} q{r['q_len']:>5} "
                      f"kv{r['kv_len']:>6} h{r['heads']}/{r['kv_heads']} d{r['head_dim']:>3} "
                      f"{float(r['median_us']):9.1f} us {gbs:7.0f} GB/s")


def print_clocks(when):
    """The SM clock, its maximum and the power limit as nvidia-smi reads them (for the run's log)."""
    import subprocess
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm,power.limit,driver_version",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError) as e:
        out = f"nvidia-smi unavailable ({type(e).__name__})"
    print(f"clocks {when}: SM, max SM, power limit, driver = {out}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--quick", action="store_true", help="a small subset (for a smoke run)")
    parser.add_argument("--skip", default="",
                        help="comma list of: attention, flex, vllm_flex, engine, device, nodes, step, waves")
    parser.add_argument("--eager-timing", action="store_true", help="time eager calls, not CUDA-graph replays")
    parser.add_argument("--kernels", help="also write the kernels each SDPA backend and FlexAttention call runs "
                        "(of the sections not skipped) to this text file")
    parser.add_argument("--vllm-src", help="a vLLM source tree: measure its Triton attention kernels")
    parser.add_argument("--sglang-src", help="an SGLang source tree: measure its Triton attention kernels")
    parser.add_argument("--engine-phases", default="",
                        help="comma list of the engine kernels' phases to measure (decode, prefill, extend, mixed); "
                             "all by default; group1: SGLang's decode of one query head per KV head, run only when named")
    args = parser.parse_args()
    try:
        engines = engine_kernels.load(args.vllm_src, args.sglang_src)
    except (engine_kernels.EngineSourceError, ImportError, SyntaxError) as e:
        print(f"error: engine source: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(2)
    torch.manual_seed(0)
    global GRAPH_TIMING
    GRAPH_TIMING = not args.eager_timing
    warnings.filterwarnings("ignore", category=UserWarning)  # SDPA explains every backend it refuses
    rec = Recorder(args.out)
    skip = set(filter(None, args.skip.split(",")))
    props = torch.cuda.get_device_properties(0)
    print(f"{props.name}: {props.multi_processor_count} SMs, torch {torch.__version__}, triton {triton.__version__}, "
          f"CUDA {torch.version.cuda}, python {platform.python_version()}", flush=True)
    # The sections that use the profiler come last: after it has run, CUPTI stays attached and every
    # launch costs more, which would inflate the timings of short kernels and of launches.
    sections = [("device", lambda: measure_device(rec)), ("attention", lambda: measure_attention(rec, args.quick)),
                ("flex", lambda: measure_flex(rec, args.quick)),
                ("waves", lambda: measure_wave_edges(rec)),
                ("vllm_flex", lambda: measure_vllm_flex(rec, args)),
                ("engine", lambda: measure_engines(engines, rec, args)),
                ("step", lambda: measure_step(rec, args.quick)),
                ("nodes", lambda: measure_graph_nodes(rec))]
    if args.kernels:
        sections.append(("kernels", lambda: list_kernels(args.kernels, skip)))
    print_clocks("before")
    for name, fn in sections:
        if name in skip:
            continue
        start = time.perf_counter()
        before = rec.count
        try:
            fn()
        except Exception:  # keep what was measured; the other sections still run
            traceback.print_exc()
        print(f"{name}: {rec.count - before} rows in {time.perf_counter() - start:.0f} s", flush=True)
    print_clocks("after")
    print(f"wrote {rec.count} rows to {args.out}")


if __name__ == "__main__":
    main()
