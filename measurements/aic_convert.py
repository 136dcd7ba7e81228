#!/usr/bin/env python3
"""Convert NVIDIA AIConfigurator's per-operation tables into attnsim measurement rows.

AIConfigurator (github.com/ai-dynamo/aiconfigurator, Apache-2.0) keeps kernels timed inside the
engines themselves under aic-core/src/aiconfigurator_core/systems/data/<gpu>/<op>/<engine>/<version>/.
What each table times is written up in docs/MEASUREMENTS.md ("AIConfigurator's kernel database");
this script only renames and re-derives columns, it changes no latency.

    python3 measurements/aic_convert.py --aic PATH/TO/aiconfigurator --out measurements/data/aic

PATH is a checkout of the repository (its commit is read with git) or the systems/data folder
itself (then pass --commit). Parquet is read with pyarrow; where pyarrow is missing, a CSV dump of
each table (same name, .csv, header row first) next to the parquet file is read instead.

The H200, GB200 and A100 tables are attnsim's independent check of transfer to GPUs its fit never
saw: the converter refuses them unless --include-held-out is given (docs/MEASUREMENTS.md).
"""
import argparse
import csv
import gzip
import functools
import hashlib
import math
import os
import subprocess
import sys
from collections import defaultdict

DATA_SUBDIR = os.path.join("aic-core", "src", "aiconfigurator_core", "systems", "data")
TRAINING_GPUS = ["h100_sxm", "b200_sxm"]
HELD_OUT_PREFIXES = ("h200", "gb200", "a100")
DEFAULT_VERSIONS = {"vllm": "0.24.0", "sglang": "0.5.14", "trtllm": "1.3.0rc20", "nccl": "2.29.2"}
# TensorRT-LLM's attention op stands for RTP-LLM's vendored TRT_V2 / XQA / MMHA kernels on the H100 only:
# on SM100 the op runs trtllm-gen cubins (fmhaDispatcher, XqaDispatcher), which RTP-LLM never runs
# (docs/engines/rtp-llm-trtllm-kernels.md). Its tables of other GPUs are not converted.
TRTLLM_PROXY_GPUS = ("h100_sxm",)
# SGLang's FlashInfer decode runs the tensor-core kernels (FlashInfer's prefill template over packed query
# heads) for an FP8 cache or a GQA group of at least 4, and FlashInfer's CUDA-core decode kernel otherwise
# (flashinfer_backend.py: should_use_tensor_core): those rows are imported as sglang_flashinfer_cuda_cores
# (kernel family flashinfer-decode).
FLASHINFER_TENSOR_CORE_MIN_GROUP = 4
# GPUs of SM 10.x (is_sm100_supported), where SGLang's FlashInfer prefill runs FlashInfer's CUTLASS FMHA.
SM100_GPUS = ("b200_sxm", "gb200")
TRTLLM_XQA_MAX_GROUP = 32  # kernelUtils.cpp supportConfigQGMMA / HMMA: head_grp_size * beam_width <= 32
RTP_LLM_XQA_MAX_GROUP = 16  # CudaXqa.cc supportXqa @ 44027b7e: group_size <= 16

COLUMNS = ["device", "date", "torch", "triton", "cuda", "kind", "impl", "phase", "batch", "q_len", "kv_len",
           "heads", "kv_heads", "head_dim", "causal", "dtype", "median_us", "p20_us", "p80_us", "runs", "flops",
           "bytes", "page_size", "note", "engine_commit", "engine", "engine_version", "window", "q_dtype",
           "kv_write", "l2_warm", "origin", "active_experts", "expert_matrices"]

# (engine, AIConfigurator kernel_source) -> attnsim impl (a kernel family's measured_as), KV page size
# in tokens, CUDA-graph replays per timing. vLLM's collector uses 64-token blocks for every backend;
# SGLang's uses 64 for trtllm_mha and trtllm_mla, 1 (a per-token pool) for the others
# (collector/vllm/collect_attn.py, collector/sglang/collect_attn.py and collect_mla.py).
ATTENTION_IMPLS = {
    ("vllm", "vllm_flash_attn_fa3"): ("vllm_fa3", 64, 6),
    ("vllm", "vllm_flash_attn_fa4"): ("vllm_fa4", 64, 6),
    ("vllm", "vllm_flashinfer_trtllmprefill"): ("vllm_flashinfer_trtllm", 64, 6),
    ("vllm", "vllm_flashinfer_trtllmdecode"): ("vllm_flashinfer_trtllm", 64, 6),
    ("vllm", "vllm_triton_attn"): ("vllm_triton_attn", 64, 6),
    ("sglang", "fa3"): ("sglang_fa3", 1, 20),
    ("sglang", "flashinfer"): ("sglang_flashinfer", 1, 20),
    ("sglang", "triton"): ("sglang_triton", 1, 20),
    ("sglang", "trtllm_mha"): ("sglang_trtllm_mha", 64, 20),
}
MLA_IMPLS = {
    ("sglang", "flash_attention"): ("sglang_fa3_mla", 1, 20),
    ("sglang", "trtllm_mla"): ("sglang_trtllm_mla", 64, 20),
}
DTYPES = {"bfloat16": "bf16", "float16": "fp16", "fp8": "fp8_e4m3", "float8_e4m3fn": "fp8_e4m3"}
# DeepSeek's MLA geometry, the only one SGLang's MLA collector accepts (collect_mla.py).
MLA_LATENT, MLA_ROPE, MLA_NOPE, MLA_V = 512, 64, 128, 128


def fail(message):
    print(f"aic_convert: {message}", file=sys.stderr)
    sys.exit(2)


def read_table(path):
    """Rows of one table as dicts of strings: the parquet file through pyarrow, else its CSV dump."""
    try:
        import pyarrow.parquet as pq  # noqa: PLC0415 (optional dependency)
    except ImportError:
        pq = None
    if pq is not None and os.path.exists(path):
        table = pq.read_table(path).to_pydict()
        names = list(table)
        return [{n: "" if table[n][i] is None else str(table[n][i]) for n in names}
                for i in range(len(table[names[0]]) if names else 0)]
    dump = path[: -len(".parquet")] + ".csv"
    if os.path.exists(dump):
        with open(dump, newline="") as f:
            return list(csv.DictReader(f))
    fail(f"{path}: cannot read it (no pyarrow here, and no CSV dump at {dump})")
    return []


def data_root_and_commit(path, commit):
    root = os.path.join(path, DATA_SUBDIR) if os.path.isdir(os.path.join(path, DATA_SUBDIR)) else path
    if not os.path.isdir(root):
        fail(f"--aic {path}: no such folder")
    if commit:
        return root, commit, ""
    try:
        out = subprocess.run(["git", "-C", path, "log", "-1", "--format=%H %cs"], check=True, capture_output=True,
                             text=True).stdout.split()
        return root, out[0], out[1]
    except (subprocess.CalledProcessError, FileNotFoundError, IndexError):
        fail(f"--aic {path}: not a git checkout; pass --commit with the AIConfigurator commit the tables are from")
    return root, "", ""


def attended_keys(q_len, kv_len, window):
    """Keys the q_len newest rows of a kv_len sequence attend, causal, each seeing at most `window`
    (0: all): c·P + c(c+1)/2 + (q − c)·W with P the cached prefix and c = clamp(W − P, 0, q)."""
    prefix = kv_len - q_len
    cap = window if window > 0 else kv_len
    c = max(0, min(cap - prefix, q_len))
    return c * prefix + c * (c + 1) // 2 + (q_len - c) * cap


def attention_work(batch, q_len, kv_len, heads, kv_heads, d_qk, d_v, window, kv_bytes, q_bytes):
    """FLOPs and DRAM bytes as the harness counts them: Q, distinct K/V and O once; keys exactly."""
    keys = attended_keys(q_len, kv_len, window)
    read_kv = min(kv_len, window + q_len - 1) if window > 0 else kv_len
    flops = 2.0 * batch * heads * keys * (d_qk + d_v)
    nbytes = batch * (q_len * heads * d_qk * q_bytes + read_kv * kv_heads * (d_qk + d_v) * kv_bytes +
                      q_len * heads * d_v * 2)
    return flops, nbytes


def attention_row(r, engine, version, table, meta):
    impls = MLA_IMPLS if table.endswith("mla_perf") else ATTENTION_IMPLS
    key = (engine, r["kernel_source"])
    if key not in impls:
        fail(f"{meta['origin']}: kernel_source '{r['kernel_source']}' of {engine} is not mapped to an attnsim impl")
    impl, page, runs = impls[key]
    context = table.startswith("context")
    if impl == "sglang_flashinfer" and not context and r["kv_cache_dtype"] != "fp8" and \
            int(r["num_heads"]) // int(r["num_key_value_heads"]) < FLASHINFER_TENSOR_CORE_MIN_GROUP:
        impl = "sglang_flashinfer_cuda_cores"
    batch = int(r["batch_size"])
    isl, step = int(r["isl"]), int(r["step"])
    q_len, kv_len = (isl, isl) if context else (1, isl + step)
    kv_dtype = DTYPES[r["kv_cache_dtype"]]
    compute = DTYPES[r.get("attn_dtype") or r.get("mla_dtype")]
    window = int(r.get("window_size") or 0)
    if impl.endswith("_mla"):
        heads = int(r["num_heads"])
        if impl == "sglang_trtllm_mla" and context:
            # The MHA-form prefill through FlashInfer's trtllm-gen ragged kernel, over one K/V head:
            # q/k 192 (nope + rope), v 128 (collect_mla.py). The row's one head_dim is the 192.
            impl = "sglang_trtllm_mla_ragged"
            kv_heads, d_qk, d_v = 1, MLA_NOPE + MLA_ROPE, MLA_V
        else:
            kv_heads, d_qk, d_v = 1, MLA_LATENT + MLA_ROPE, MLA_LATENT
    else:
        heads, kv_heads = int(r["num_heads"]), int(r["num_key_value_heads"])
        d_qk = d_v = int(r["head_dim"])
    q_dtype = query_dtype(engine, impl, context, compute, kv_dtype)
    kv_bytes = 1 if kv_dtype == "fp8_e4m3" else 2
    q_bytes = 1 if q_dtype == "fp8_e4m3" else 2
    flops, nbytes = attention_work(batch, q_len, kv_len, heads, kv_heads, d_qk, d_v, window, kv_bytes, q_bytes)
    return {
        "kind": "attention", "impl": impl, "phase": "prefill" if context else "decode", "batch": batch,
        "q_len": q_len, "kv_len": kv_len, "heads": heads, "kv_heads": kv_heads, "head_dim": d_qk,
        "causal": 1 if context else 0, "dtype": kv_dtype, "median_us": latency_us(r), "runs": runs,
        "flops": f"{flops:.6g}", "bytes": f"{nbytes:.6g}", "page_size": page, "window": window,
        "q_dtype": q_dtype, "kv_write": 1, "l2_warm": 1,
        "note": f"{table} kernel_source={r['kernel_source']}; mean of {runs} CUDA-graph replays, no L2 flush; "
                f"includes writing the new tokens' K/V",
    }


def query_dtype(engine, impl, context, compute, kv_dtype):
    """The math dtype the table logs (attn_dtype / mla_dtype): FP8 only for SGLang's FP8 prefill rows.

    vLLM casts the query to FP8 for FA3 and trtllm-gen when the cache is FP8 but logs bfloat16, and its
    FP8-cache prefill runs no faster than bf16 (median time ratio 1.0 at head dim 64, 1.17 at 128,
    1.3 at 192, 1.63 at 256 on the H100), so those rows keep the logged dtype: the FP8 math rate
    the model gives an FP8 query would predict them twice too fast. SGLang's fa3 FP8 prefill (Q, K, V
    in FP8) runs at 0.73-0.89 of its bf16 time."""
    return "fp8_e4m3" if compute == "fp8_e4m3" else "bf16"


def as_sglang_cutlass_prefill(row, gpu):
    """SGLang's FlashInfer prefill on SM100 is FlashInfer's CUTLASS FMHA, not the FA2 kernels of its decode:
    FlashInferAttnBackend builds its ragged wrapper with backend "cutlass" when is_sm100_supported(), and a
    prefill without a prefix (every context row: no prefix) runs only that wrapper
    (python/sglang/srt/layers/attention/flashinfer_backend.py, index id 434888687: __init__ fmha_backend,
    forward_extend extend_no_prefix). Imported as sglang_flashinfer_cutlass (kernel family flashinfer-cutlass).
    Applied after the sample, so the rows kept do not change."""
    if gpu in SM100_GPUS and row["impl"] == "sglang_flashinfer" and row["phase"] == "prefill":
        row["impl"] = "sglang_flashinfer_cutlass"
        row["note"] += "; FlashInfer's CUTLASS SM100 FMHA (SGLang's ragged wrapper on SM100)"
    return row


def as_vllm_decode_call(row):
    """A vLLM context row of one-token prompts is a decode call over one key: the collector builds it
    exactly as a generation batch at step 0 (seq_lens and query_lens [1] per request,
    collector/vllm/collect_attn.py: run_attention_torch), and vLLM classifies requests by query length,
    not by the collector's label: FlashInfer runs its decode kernel (query_len <= reorder_batch_threshold 1,
    the table logs kernel_source vllm_flashinfer_trtllmdecode), FA3 and the Triton unified kernel are
    handed max_seqlen_q 1, as in decode. Applied after the sample, so the rows kept do not change."""
    if row["engine"] != "vllm" or row["phase"] != "prefill" or int(row["q_len"]) != 1:
        return row
    row.update(phase="decode", causal=0)
    row["note"] += "; a one-token context batch, the same call as a decode over one key"
    return row


def trtllm_attention_row(r, engine, version, table, meta):
    """One TensorRT-LLM attention op call (collector/trtllm/collect_attn.py: run_attention_torch) on the H100,
    named by the kernel it runs there (docs/engines/rtp-llm-trtllm-kernels.md):

    - context: FMHA v2's warp-specialized SM90 kernel over the paged KV cache (the pytorch backend forces
      paged context FMHA on SM90, nvbug 5624818). With an FP8 cache it runs the e4m3 kernels whatever the
      logged attn_dtype (bf16 with an FP8 cache times like fp8: 2.84 vs 3.00 ms at 1 x 16k, 32/8 heads,
      bf16 cache 4.34 ms), so the query dtype is FP8 there, and only the attn_dtype=fp8 row of a shape is kept.
    - generation, one K/V head per query head, or more than 32 query heads per K/V head: MMHA (XQA refuses
      vanilla MHA at beam 1, and groups above 32). RTP-LLM runs MMHA for groups above 16 too.
    - generation, GQA groups up to 16 with an FP8 cache: XQA's SM90 kernel (mha_sm90.cu, QGMMA), the kernel
      RTP-LLM compiles for every XQA config (groups 1-16). Groups 17-32 (XQA in TensorRT-LLM, not in RTP-LLM)
      and GQA with a bf16 cache (XQA's mha.cu or MMHA by grid size, neither RTP-LLM's XQA) are left out.
    The call includes the QKV preprocessing (RoPE and the KV-cache write of the new tokens)."""
    if r["kernel_source"] != "torch_flow":
        fail(f"{meta['origin']}: kernel_source '{r['kernel_source']}' of trtllm is not the TRTLLM backend")
    context = table.startswith("context")
    heads, kv_heads, head_dim = int(r["num_heads"]), int(r["num_key_value_heads"]), int(r["head_dim"])
    kv_dtype = DTYPES[r["kv_cache_dtype"]]
    if context and kv_dtype == "fp8_e4m3" and r["attn_dtype"] != "fp8":
        return None  # the same e4m3 kernel as the attn_dtype=fp8 row of the shape: one row per shape kept
    group = heads // kv_heads
    if context:
        impl = "trtllm_fmha_v2"
    elif group == 1 or group > TRTLLM_XQA_MAX_GROUP:
        impl = "trtllm_mmha"
    elif kv_dtype == "fp8_e4m3" and group <= RTP_LLM_XQA_MAX_GROUP:
        impl = "trtllm_xqa"
    else:
        return None
    batch, isl, step = int(r["batch_size"]), int(r["isl"]), int(r["step"])
    q_len, kv_len = (isl, isl) if context else (1, isl + step)
    window = int(r.get("window_size") or 0)
    fp8_math = context and (DTYPES[r["attn_dtype"]] == "fp8_e4m3" or kv_dtype == "fp8_e4m3")
    q_dtype = "fp8_e4m3" if fp8_math else "bf16"
    kv_bytes = 1 if kv_dtype == "fp8_e4m3" else 2
    flops, nbytes = attention_work(batch, q_len, kv_len, heads, kv_heads, head_dim, head_dim, window, kv_bytes,
                                   1 if fp8_math else 2)
    return {
        "kind": "attention", "impl": impl, "phase": "prefill" if context else "decode", "batch": batch,
        "q_len": q_len, "kv_len": kv_len, "heads": heads, "kv_heads": kv_heads, "head_dim": head_dim,
        "causal": 1 if context else 0, "dtype": kv_dtype, "median_us": latency_us(r), "runs": 6,
        "flops": f"{flops:.6g}", "bytes": f"{nbytes:.6g}", "page_size": 64, "window": window,
        "q_dtype": q_dtype, "kv_write": 1, "l2_warm": 1,
        "note": f"{table} kernel_source=torch_flow attn_dtype={r['attn_dtype']}; mean of 6 CUDA-graph replays, "
                "no L2 flush; includes the QKV preprocessing (RoPE, writing the new tokens' K/V); proxy for "
                "RTP-LLM's vendored copy",
    }


def latency_us(r):
    return f"{float(r['latency']) * 1000.0:.4f}"


GEMM_HELD_OUT_FACTOR = 4  # held-out GEMM rows per dtype: 4 × --per-class

GEMM_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "fp8": "fp8", "fp8_block": "fp8_block", "nvfp4": "nvfp4",
               "mxfp4": "mxfp4", "int4_wo": "int4_wo", "int8_wo": "int8_wo", "w4a8_awq": "w4a8_awq"}


def gemm_row(r, engine, version, table, meta):
    m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
    dtype = GEMM_DTYPES.get(r["gemm_dtype"], r["gemm_dtype"])
    # vLLM's collector times fp8_block without a CUDA graph (collect_gemm.py run_gemm,
    # use_cuda_graph=gemm_type != "fp8_block"): its small calls are the host's launch time.
    timing = "eager (no CUDA graph): host launch time included" if (engine, dtype) == ("vllm", "fp8_block") \
        else "CUDA-graph replay"
    return {
        "kind": "gemm", "impl": f"{engine}_gemm", "phase": "", "batch": m, "q_len": n, "kv_len": k, "dtype": dtype,
        "median_us": latency_us(r), "runs": 6, "flops": f"{2.0 * m * n * k:.6g}", "bytes": "", "l2_warm": 1,
        "note": f"{table} kernel_source={r['kernel_source']}; batch, q_len, kv_len = M, N, K; "
                f"activation quantization inside the timing; {timing}",
    }


def allreduce_row(r, engine, version, table, meta):
    if r.get("backend", "").endswith("eager") or "eager" in r["kernel_source"].lower():
        return None  # AIConfigurator keeps the graph rows only; the eager ones time the host
    elements = int(r["message_size"])
    return {
        "kind": "allreduce", "impl": f"{engine}_allreduce", "phase": "", "batch": int(r["num_gpus"]),
        "q_len": elements, "dtype": DTYPES.get(r["allreduce_dtype"], r["allreduce_dtype"]),
        "median_us": latency_us(r), "runs": 6, "bytes": f"{elements * 2:.6g}", "l2_warm": 1,
        "note": f"{table} kernel_source={r['kernel_source']}; batch = GPUs, q_len = elements; mean over "
                "5 all-reduces per CUDA-graph replay",
    }


# NCCL's collectives (collector/collect_nccl.py): nccl-tests' <op>_perf binary, one process with a thread per GPU
# (-t G), 40 warm-ups, then 100-1000 back-to-back calls in a stream without a CUDA graph (-n), the out-of-place
# time averaged over ranks (-a 1); the collector divides the byte size by the element width, so message_size
# counts elements (half: 2 bytes, int8: 1). For all-gather and reduce-scatter the size is the gathered (whole)
# buffer. Kept: half (the engines' bf16 activations are as wide); int8 and alltoall (EP, not in the step model)
# are left out.
NCCL_OPS = {"all_reduce": "allreduce", "all_gather": "allgather", "reduce_scatter": "reducescatter"}
NCCL_KINDS_KEPT = ("all_reduce",)  # the measurement kinds attnsim imports today


def nccl_row(r, engine, version, table, meta):
    if r["nccl_dtype"] != "half" or r["op_name"] not in NCCL_KINDS_KEPT:
        return None
    elements = int(r["message_size"])
    return {
        "kind": NCCL_OPS[r["op_name"]], "impl": f"nccl_{r['op_name']}", "phase": "", "batch": int(r["num_gpus"]),
        "q_len": elements, "dtype": "fp16", "median_us": latency_us(r), "runs": 100,
        "bytes": f"{elements * 2:.6g}", "l2_warm": 1,
        "note": f"{table} {r['op_name']} (nccl-tests, NCCL {version}); batch = GPUs, q_len = elements; "
                "eager calls back to back, no CUDA graph; out-of-place time averaged over ranks",
    }


# MoE: the dtypes attnsim models (kGemmDtypes); AIConfigurator's names for them.
MOE_DTYPES = {"bfloat16": "bf16", "fp8": "fp8", "fp8_block": "fp8_block", "nvfp4": "nvfp4", "w4a16_mxfp4": "mxfp4"}
# Timed runs per row: vLLM's collector replays its CUDA graph 6 times, SGLang's 10 (collect_moe.py).
MOE_RUNS = {"vllm": 6, "sglang": 10}
MOE_MAX_TP = 8  # one node's GPUs


# Grouped routing the collectors configure per model (collector/cases/models/*_cases.yaml): DeepSeek-V3's
# router keeps the best 4 of 8 expert groups per token (sglang_moe_num_expert_group 8, sglang_moe_topk_group 4;
# vLLM's collect_moe.py reads n_group/topk_group from the model config). (hidden, experts, top-k) names the
# shape: no other model of the collectors' cases has it. Cases with one group (GLM-5, Kimi-K2) route as
# ungrouped.
GROUPED_ROUTING = {(7168, 256, 8): (8, 4)}
# Experts without a gate: Nemotron-H's (relu², an up and a down projection, two matrices instead of three).
# The collectors' cases mark them (collector/cases/models/NemotronHForCausalLM_cases.yaml: sglang_moe_is_gated
# false; collector/vllm/collect_moe.py runs nemotron_h's activation as "<act>_no_mul") and time the rank's
# inter_size of each (collect_moe.py: expert_intermediate_size = shard_intermediate_size // (2 if is_gated
# else 1)). (hidden, experts, top-k) names the shape: Nemotron-3 Nano (2688, 128, 6), Super and Ultra (their
# latent widths 1024 and 2048, and 4096 and 8192, with 512 experts, top-22); no other model of the collectors'
# cases has these shapes.
NON_GATED_EXPERTS = {(2688, 128, 6), (1024, 512, 22), (2048, 512, 22), (4096, 512, 22), (8192, 512, 22)}


def balanced_choice(token, tokens, experts, topk):
    """The experts helper.balanced_logits marks for one token: a round-robin stride over the experts."""
    stride = math.ceil(experts / topk)
    if tokens >= stride:
        return [(token + j * stride) % experts for j in range(topk)]
    return [int((token * stride / tokens + j * stride) % experts) for j in range(topk)]


def routed_experts(token, tokens, experts, topk, groups, kept_groups):
    """The top-k the router picks from the balanced logits: marked experts score higher than the rest,
    groups rank by their best two scores (DeepSeek-V3's grouped top-k, its correction bias zero in both
    collectors), only the kept groups' experts compete, and equal scores go to the lower index."""
    marks = defaultdict(int)
    for e in balanced_choice(token, tokens, experts, topk):
        marks[e] += 1
    if groups == 1 and len(marks) == topk:
        return list(marks)  # ungrouped, no expert marked twice: the marked ones
    per_group = experts // groups
    def group_score(g):
        top = sorted((marks.get(e, 0) for e in range(g * per_group, (g + 1) * per_group)), reverse=True)
        return top[0] + top[1] if per_group > 1 else top[0]
    kept = sorted(range(groups), key=lambda g: (-group_score(g), g))[:kept_groups]
    candidates = [e for g in kept for e in range(g * per_group, (g + 1) * per_group)]
    return sorted(candidates, key=lambda e: (-marks.get(e, 0), e))[:topk]


@functools.lru_cache(maxsize=None)
def active_experts(tokens, hidden, experts, topk):
    """Distinct experts a balanced row's tokens reach: min(experts, tokens * top-k) ungrouped unless the stride
    wraps (512 experts, top-22: stride 24). DeepSeek-V3's
    grouped router leaves half the experts idle (the same 4 groups win every tie), which its rows show: at 32
    tokens and above, reading every expert's FP8 weights once would take longer than the rows measured."""
    grouping = GROUPED_ROUTING.get((hidden, experts, topk), (1, 1))
    reached = set()
    for token in range(min(tokens, experts)):  # the choice repeats with token mod experts
        reached.update(routed_experts(token, tokens, experts, topk, *grouping))
    return len(reached)


def moe_row(r, engine, version, table, meta):
    """One MoE layer call on one GPU: top-k selection from given router logits, the grouped expert GEMMs,
    their activation and the weighted combine; not the router GEMM, not shared experts, no all-to-all.

    Kept: balanced routing (each token's top-k spread round-robin over the experts, helper.py
    balanced_logits) without expert parallelism, in the dtypes attnsim models. EP rows are left out:
    SGLang's Triton path runs the assignments to remote experts on expert 0 with a zero weight
    (collect_moe.py run_op), so they time more than the rank's share; power-law rows time a skewed
    load the step model does not assume."""
    if r["distribution"] != "balanced" or int(r["moe_ep_size"]) != 1 or r["moe_dtype"] not in MOE_DTYPES:
        return None
    if int(r["moe_tp_size"]) > MOE_MAX_TP:
        return None  # TP 16 and 32 are left out to keep the committed rows small
    tokens, hidden, topk = int(r["num_tokens"]), int(r["hidden_size"]), int(r["topk"])
    tp, experts = int(r["moe_tp_size"]), int(r["num_experts"])
    inter = int(r["inter_size"]) // tp  # each rank holds every expert's 1/tp slice of the intermediate
    return {
        "kind": "moe", "impl": r["kernel_source"], "phase": "", "batch": tokens, "q_len": hidden, "kv_len": inter,
        "heads": experts, "kv_heads": topk, "head_dim": tp, "dtype": MOE_DTYPES[r["moe_dtype"]],
        "median_us": latency_us(r), "runs": MOE_RUNS[engine], "l2_warm": 1,
        "note": "moe_perf balanced EP1", "active_experts": active_experts(tokens, hidden, experts, topk),
        "expert_matrices": 2 if (hidden, experts, topk) in NON_GATED_EXPERTS else "",
    }


def moe_sample(rows):
    """Each (engine, dtype)'s kernel timed over the most shapes (the collector's main path for it), every row
    of it: the shape classes and token counts the fit holds out are chosen by attnsim calibrate."""
    count = defaultdict(int)
    for r in rows:
        count[(r["dtype"], r["impl"])] += 1
    main = {}
    for (dtype, impl), n in sorted(count.items()):
        if n > count.get((dtype, main.get(dtype, "")), 0):
            main[dtype] = impl
    return [r for r in rows if main.get(r["dtype"]) == r["impl"]]


TABLES = [  # (op folder, engine, table, converter)
    ("attention", "vllm", "context_attention_perf", attention_row),
    ("attention", "vllm", "generation_attention_perf", attention_row),
    ("attention", "sglang", "context_attention_perf", attention_row),
    ("attention", "sglang", "generation_attention_perf", attention_row),
    ("attention", "trtllm", "context_attention_perf", trtllm_attention_row),
    ("attention", "trtllm", "generation_attention_perf", trtllm_attention_row),
    ("mla", "sglang", "context_mla_perf", attention_row),
    ("mla", "sglang", "generation_mla_perf", attention_row),
    ("gemm", "vllm", "gemm_perf", gemm_row),
    ("gemm", "sglang", "gemm_perf", gemm_row),
    ("comm", "vllm", "custom_allreduce_perf", allreduce_row),
    ("comm", "sglang", "custom_allreduce_perf", allreduce_row),
    ("comm", "nccl", "nccl_perf", nccl_row),
    ("moe", "vllm", "moe_perf", moe_row),
    ("moe", "sglang", "moe_perf", moe_row),
]


def shape_class(row):
    """Rows of one class share everything but batch and lengths; the sample keeps every class."""
    return (row["kind"], row["impl"], row["phase"], row["dtype"], row.get("q_dtype", ""), row.get("head_dim", ""),
            row.get("window", ""), row.get("heads", "") if row["kind"] != "attention" else "")


def stable_order(row):
    key = "|".join(str(row.get(c, "")) for c in ("impl", "phase", "batch", "q_len", "kv_len", "heads",
                                                    "kv_heads", "head_dim", "dtype", "q_dtype", "window"))
    return hashlib.sha1(key.encode()).hexdigest()


def sample(rows, per_class):
    """At most per_class rows of each shape class, picked by a hash of the shape (stable across runs)."""
    if per_class <= 0:
        return rows
    classes = defaultdict(list)
    for row in rows:
        classes[shape_class(row)].append(row)
    kept = []
    for members in classes.values():
        kept.extend(sorted(members, key=stable_order)[:per_class])
    return kept


# The shapes whose whole (batch, length) grid is kept per attention class: the slices attnsim calibrate
# fits its measured surface on (docs/MEASUREMENTS.md). Per class, the slice nearest each seed in
# (log2 heads, log2 KV heads): a Llama-3.1-8B-like 32/8 at TP 1 and 8/1 (Llama-3.1-70B at TP 8); for
# MLA (one latent KV head), DeepSeek's 128 heads at TP 1 and 16 at TP 8.
ANCHOR_SEEDS = [(32, 8), (8, 1)]
MLA_ANCHOR_SEEDS = [(128, 1), (16, 1)]
# TensorRT-LLM's MMHA rows (one K/V head per query head, or groups above 32): Llama-2-7B's 32 at TP 1 and 8 at
# TP 4, and a 64-head MQA for the groups MMHA serves when XQA refuses them.
MHA_ANCHOR_SEEDS = [(32, 32), (8, 8), (64, 1)]


def attention_anchor_rows(rows):
    """Every row of each attention class's anchor slices (the seeds' nearest (heads, KV heads))."""
    slices = defaultdict(lambda: defaultdict(list))
    for row in rows:
        if row["kind"] != "attention":
            continue
        slices[shape_class(row)][(int(row["heads"]), int(row["kv_heads"]))].append(row)
    kept = []
    for members in slices.values():
        shapes = sorted(members)
        impl = next(iter(members.values()))[0]["impl"]
        seeds = MHA_ANCHOR_SEEDS if impl == "trtllm_mmha" else \
            MLA_ANCHOR_SEEDS if all(kv == 1 for _, kv in shapes) else ANCHOR_SEEDS
        chosen = []
        for sh, skv in seeds:
            free = [s for s in shapes if s not in chosen]
            if free:
                chosen.append(min(free, key=lambda s: (math.log2(s[0] / sh)) ** 2 + (math.log2(s[1] / skv)) ** 2))
        for s in chosen:
            kept.extend(members[s])
    return kept


def attention_sample(rows, per_class):
    """The anchor slices whole, and a hash sample of each class's rows: the sample's other shapes are held
    out by attnsim calibrate, they check how the surface carries over to shapes it did not measure."""
    if per_class <= 0:
        return rows
    anchors = attention_anchor_rows(rows)
    seen = {id(r) for r in anchors}
    return anchors + [r for r in sample(rows, per_class) if id(r) not in seen]


def on_gemm_grid(row):
    """A node of the GEMM efficiency surface: M, N and K all powers of two (the grid attnsim calibrate fits)."""
    return all(v > 0 and v & (v - 1) == 0 for v in (int(row["batch"]), int(row["q_len"]), int(row["kv_len"])))


def gemm_sample(rows, engine, per_class):
    """SGLang's GEMM rows on the power-of-two grid, every one (CUDA-graph timed for every dtype, they are the
    surface's nodes), and a hash sample of each engine's other shapes: those are held out, they check the
    interpolation between nodes (and vLLM's check the surface against the other engine's calls)."""
    grid = [r for r in rows if engine == "sglang" and on_gemm_grid(r)]
    off_grid = [r for r in rows if not on_gemm_grid(r)]
    return grid + sample(off_grid, per_class * GEMM_HELD_OUT_FACTOR)


def convert_gpu(root, gpu, versions, commit, date, per_class):
    rows = []
    for op, engine, table, convert in TABLES:
        if engine == "trtllm" and gpu not in TRTLLM_PROXY_GPUS:
            continue  # the op runs trtllm-gen kernels there, no stand-in for RTP-LLM's (TRTLLM_PROXY_GPUS)
        rel = os.path.join(gpu, op, engine, versions[engine], table + ".parquet")
        path = os.path.join(root, rel)
        if not os.path.exists(path) and not os.path.exists(path[:-8] + ".csv"):
            print(f"aic_convert: {gpu}: no {rel}, skipped", file=sys.stderr)
            continue
        origin = f"ai-dynamo/aiconfigurator@{commit[:12]}:{DATA_SUBDIR}/{rel}"
        meta = {"origin": origin}
        table_rows = []
        for r in read_table(path):
            out = convert(r, engine, versions[engine], table, meta)
            if out is None:
                continue
            out.update(device=r["device"], date=date, engine=engine, engine_version=versions[engine],
                       origin=origin, engine_commit="")
            table_rows.append(out)
        if op == "gemm":
            kept = gemm_sample(table_rows, engine, per_class)
        elif op in ("attention", "mla"):
            kept = [as_sglang_cutlass_prefill(as_vllm_decode_call(r), gpu)
                    for r in attention_sample(table_rows, per_class)]
        elif op == "moe":
            kept = moe_sample(table_rows)
        else:
            kept = sample(table_rows, per_class)
        print(f"aic_convert: {rel}: {len(kept)} of {len(table_rows)} rows", file=sys.stderr)
        rows.extend(kept)
    return rows


def write_rows(rows, path):
    rows.sort(key=lambda r: (r["kind"], r["impl"], r["phase"], r["dtype"], str(r.get("q_dtype", "")),
                             int(r.get("head_dim") or 0), int(r.get("window") or 0), int(r.get("heads") or 0),
                             int(r.get("kv_heads") or 0), int(r["batch"] or 0), int(r.get("q_len") or 0),
                             int(r.get("kv_len") or 0)))
    tmp = path + ".tmp"
    with gzip.open(tmp, "wt", newline="", compresslevel=9) as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, "") for c in COLUMNS})
    os.replace(tmp, path)  # nothing half-written is left behind


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--aic", required=True, help="AIConfigurator checkout, or its systems/data folder")
    ap.add_argument("--commit", help="the AIConfigurator commit (read with git when --aic is a checkout)")
    ap.add_argument("--date", help="the commit's date, YYYY-MM-DD (read with git when --aic is a checkout)")
    ap.add_argument("--gpu", action="append", help=f"GPU folder to convert (default: {', '.join(TRAINING_GPUS)})")
    ap.add_argument("--version", action="append", default=[], metavar="ENGINE=VERSION",
                    help="engine version folder (default: vllm=0.24.0, sglang=0.5.14, trtllm=1.3.0rc20, "
                         "nccl=2.29.2)")
    ap.add_argument("--per-class", type=int, default=120,
                    help="rows kept per shape class (0 keeps every row; default 120)")
    ap.add_argument("--include-held-out", action="store_true",
                    help="allow the H200, GB200 and A100 tables (attnsim's transfer check: do not fit them)")
    ap.add_argument("--out", required=True, help="output folder; writes <gpu>.csv.gz")
    args = ap.parse_args()

    versions = dict(DEFAULT_VERSIONS)
    for v in args.version:
        engine, _, version = v.partition("=")
        if engine not in versions or not version:
            fail(f"--version {v}: expected vllm=X, sglang=X, trtllm=X or nccl=X")
        versions[engine] = version
    gpus = args.gpu or TRAINING_GPUS
    for gpu in gpus:
        if gpu.startswith(HELD_OUT_PREFIXES) and not args.include_held_out:
            fail(f"--gpu {gpu}: held out as attnsim's check of transfer to unseen GPUs (docs/MEASUREMENTS.md); "
                 "pass --include-held-out only to build that check, never to fit")
    root, commit, date = data_root_and_commit(args.aic, args.commit)
    date = args.date or date
    if not date:
        fail("--date: needed with --commit (the tables' commit date, YYYY-MM-DD)")
    os.makedirs(args.out, exist_ok=True)
    for gpu in gpus:
        if not os.path.isdir(os.path.join(root, gpu)):
            fail(f"--gpu {gpu}: no folder {os.path.join(root, gpu)}")
        rows = convert_gpu(root, gpu, versions, commit, date, args.per_class)
        path = os.path.join(args.out, f"{gpu}.csv.gz")
        write_rows(rows, path)
        print(f"aic_convert: wrote {len(rows)} rows to {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
