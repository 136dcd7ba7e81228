"""The engines' own Triton attention kernels, called as each engine calls them.

The kernels are loaded at run time from engine source trees the user points the harness at
(`--vllm-src DIR`, `--sglang-src DIR`); this repository holds none of their code. Their imports
of engine packages (platform, env, logger and utility modules) are answered by the small shims
below. The engine commit comes from a file DIR/COMMIT, or else from git where DIR is a checkout.

What is measured, and how each engine calls it (files and commits in measurements/README.md):
- vllm_triton_unified: vLLM TRITON_ATTN's unified attention (triton_unified_attention.py) over
  the paged cache (num_blocks, 2, 16, kv_heads, head_dim) unbound into K and V, block size 16,
  pages in random order; decode batches take the 3D split-softmax kernel (16 segments) up to
  the threshold of 128 // kv_heads sequences rounded to a CUDA-graph capture size, the 2D kernel
  above it and for every batch with a prefill (triton_attn.py). KV in bf16 or fp8_e4m3.
- vllm_triton_mla_decode: vLLM TRITON_MLA (triton_decode_attention.py via triton_mla.py): the
  latent cache (blocks, 16, 1, 576) of which the first 512 are V, 4 KV splits, softmax scale
  1/sqrt(192) (DeepSeek-V3: 128 nope + 64 rope).
- sglang_triton_decode / sglang_triton_extend: SGLang's triton backend (triton_backend.py):
  a per-token pool (page size 1) addressed through kv_indptr/kv_indices in random order;
  decode with max_kv_splits 8 and per-request splits from the backend's own
  get_num_kv_splits_triton (read from triton_backend.py in the source tree); prefill is the
  extend kernel with no prefix.
"""
import ast
import importlib
import importlib.util
import itertools
import logging
import os
import subprocess
import sys
import tempfile
import types

import torch
import triton
import triton.language as tl

VLLM_FILES = {"unified": "vllm/v1/attention/ops/triton_unified_attention.py",
              "mla": "vllm/v1/attention/ops/triton_decode_attention.py"}
SGLANG_DIR = "python/sglang/srt/layers/attention"
SGLANG_FILES = {"decode": SGLANG_DIR + "/triton_ops/decode_attention.py",
                "extend": SGLANG_DIR + "/triton_ops/extend_attention.py",
                "prefill": SGLANG_DIR + "/triton_ops/prefill_attention.py",
                "backend": SGLANG_DIR + "/triton_backend.py"}
FP8 = torch.float8_e4m3fn
VLLM_BLOCK = 16  # vLLM's default cache block size on CUDA
VLLM_SEGMENTS = 16  # NUM_PAR_SOFTMAX_SEGMENTS in triton_attn.py
VLLM_CAPTURE_SIZES = [1, 2, 4] + list(range(8, 256, 8)) + list(range(256, 513, 16))  # vLLM's default list
MLA_SPLITS = 4  # triton_mla.py: num_kv_splits unless batch-invariant
MLA_LORA, MLA_ROPE, MLA_NOPE = 512, 64, 128
SGLANG_MAX_SPLITS = 8  # server_args.triton_attention_num_kv_splits default (CUDA)


class EngineSourceError(Exception):
    pass


def engine_commit(src):
    """DIR/COMMIT, or HEAD where DIR is itself the root of a git checkout."""
    path = os.path.join(src, "COMMIT")
    if os.path.exists(path):
        with open(path) as f:
            return f.read().split()[0]
    try:
        top = subprocess.run(["git", "-C", src, "rev-parse", "--show-toplevel", "HEAD"], capture_output=True,
                             text=True, timeout=10).stdout.split()
        if len(top) == 2 and os.path.realpath(top[0]) == os.path.realpath(src):
            return top[1]
    except (OSError, subprocess.SubprocessError):
        pass
    raise EngineSourceError(f"{src}: no COMMIT file and not the root of a git checkout: "
                            "cannot say which engine commit it is")


def require(src, files):
    for rel in files.values():
        if not os.path.isfile(os.path.join(src, rel)):
            raise EngineSourceError(f"{src}: no {rel} (point the option at the engine's repository root)")


def shim(name, **attrs):
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent in sys.modules:
        setattr(sys.modules[parent], child, module)
    return module


def package(name, path):
    """A package whose submodules are read from `path` (the engine tree), without its __init__."""
    return shim(name, __path__=[path])


def load_vllm(src):
    """vLLM's kernel modules, with vllm.envs, logger, platforms and triton_utils shimmed."""
    require(src, VLLM_FILES)
    package("vllm", os.path.join(src, "vllm"))
    shim("vllm.envs", VLLM_BATCH_INVARIANT=False)
    shim("vllm.logger", init_logger=logging.getLogger)
    platform = types.SimpleNamespace(is_rocm=lambda: torch.version.hip is not None, fp8_dtype=lambda: FP8)
    shim("vllm.platforms", current_platform=platform)
    shim("vllm.triton_utils", tl=tl, triton=triton)
    return {k: importlib.import_module(v[:-3].replace("/", ".")) for k, v in VLLM_FILES.items()}


def load_sglang(src):
    """SGLang's kernel modules with sglang.srt.utils shimmed, and the backend's split heuristic."""
    require(src, SGLANG_FILES)
    package("sglang", os.path.join(src, "python/sglang"))
    shim("sglang.srt.utils", is_hip=lambda: torch.version.hip is not None,
         is_cuda=lambda: torch.version.cuda is not None)
    mods = {k: importlib.import_module(SGLANG_FILES[k][7:-3].replace("/", ".")) for k in ("decode", "extend")}
    mods["splits"] = backend_function(os.path.join(src, SGLANG_FILES["backend"]), "get_num_kv_splits_triton")
    return mods


def backend_function(path, name):
    """One @triton.jit function of a file whose imports need the whole engine: its source alone
    is written to a temporary module (Triton reads a kernel's source from its file)."""
    with open(path) as f:
        text = f.read()
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            start = min(d.lineno for d in node.decorator_list) if node.decorator_list else node.lineno
            body = "\n".join(text.splitlines()[start - 1:node.end_lineno])
            tmp = tempfile.NamedTemporaryFile("w", suffix=".py", prefix="engine_fn_", delete=False)
            tmp.write("import triton\nimport triton.language as tl\n\n\n" + body + "\n")
            tmp.close()
            spec = importlib.util.spec_from_file_location(os.path.basename(tmp.name)[:-3], tmp.name)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return getattr(module, name)
    raise EngineSourceError(f"{path}: no function {name}")


# ---- inputs ---------------------------------------------------------------------------------

def randn(*shape, dtype=torch.bfloat16):
    return torch.randn(*shape, device="cuda", dtype=torch.bfloat16).to(dtype)


def paged_table(seq_lens, page):
    """A block table (int32, one row a sequence) over pages handed out in random order."""
    counts = [(s + page - 1) // page for s in seq_lens]
    order = torch.randperm(sum(counts), device="cuda", dtype=torch.int64).to(torch.int32)
    table = torch.zeros(len(seq_lens), max(counts), dtype=torch.int32, device="cuda")
    at = 0
    for i, c in enumerate(counts):
        table[i, :c] = order[at:at + c]
        at += c
    return table, sum(counts)


def gather_pages(cache, table, i, seq_len):
    """Sequence i's rows of a (blocks, page, ...) cache, in order."""
    page = cache.shape[1]
    blocks = table[i, :(seq_len + page - 1) // page].long()
    return cache[blocks].reshape(-1, *cache.shape[2:])[:seq_len]


def reference(q, k, v, scale):
    """Causal attention aligned to the end, in float32: q (ql, H, d), k (kv, Hk, d), v (kv, Hk, dv)."""
    group = q.shape[1] // k.shape[1]
    k = k.float().repeat_interleave(group, dim=1)
    v = v.float().repeat_interleave(group, dim=1)
    s = torch.einsum("qhd,khd->hqk", q.float(), k) * scale
    ql, kv = q.shape[0], k.shape[0]
    mask = torch.arange(kv, device="cuda")[None, :] > (kv - ql + torch.arange(ql, device="cuda"))[:, None]
    s.masked_fill_(mask, float("-inf"))
    return torch.einsum("hqk,khd->qhd", s.softmax(-1), v)


def rel_error(out, ref):
    return (out.float() - ref).norm().item() / ref.norm().item()


# ---- vLLM -------------------------------------------------------------------------------------

def vllm_unified_call(mod, seqs, heads, kv_heads, d, kv_dtype):
    """unified_attention as TritonAttentionImpl.forward calls it; seqs = [(q_len, seq_len)]."""
    q_lens = [q for q, _ in seqs]
    seq_lens = [s for _, s in seqs]
    table, blocks = paged_table(seq_lens, VLLM_BLOCK)
    kv_cache = randn(blocks, 2, VLLM_BLOCK, kv_heads, d, dtype=kv_dtype)
    key_cache, value_cache = kv_cache.unbind(1)
    q = randn(sum(q_lens), heads, d)
    out = torch.empty_like(q)
    cu = torch.tensor([0, *itertools.accumulate(q_lens)], dtype=torch.int32, device="cuda")
    used = torch.tensor(seq_lens, dtype=torch.int32, device="cuda")
    threshold = min(VLLM_CAPTURE_SIZES, key=lambda x: abs(x - 128 // kv_heads))
    pad = triton.next_power_of_2(d)
    segm_out = torch.empty(threshold, heads, VLLM_SEGMENTS, pad, dtype=torch.float32, device="cuda")
    segm_max = torch.empty(threshold, heads, VLLM_SEGMENTS, dtype=torch.float32, device="cuda")
    segm_sum = torch.empty_like(segm_max)
    one = torch.ones((), dtype=torch.float32, device="cuda")
    descale = one.expand(len(seqs), kv_heads)

    def run():
        mod.unified_attention(q=q, k=key_cache, v=value_cache, out=out, cu_seqlens_q=cu, max_seqlen_q=max(q_lens),
                              seqused_k=used, max_seqlen_k=max(seq_lens), softmax_scale=d ** -0.5, causal=True,
                              window_size=(-1, -1), block_table=table, softcap=0, q_descale=None, k_descale=descale,
                              v_descale=descale, seq_threshold_3D=threshold, num_par_softmax_segments=VLLM_SEGMENTS,
                              softmax_segm_output=segm_out, softmax_segm_max=segm_max, softmax_segm_expsum=segm_sum)

    def check():
        errs, at = [], 0
        for i, (ql, sl) in enumerate(seqs):
            ref = reference(q[at:at + ql], gather_pages(key_cache, table, i, sl).to(torch.bfloat16),
                            gather_pages(value_cache, table, i, sl).to(torch.bfloat16), d ** -0.5)
            errs.append(rel_error(out[at:at + ql], ref))
            at += ql
        return max(errs)

    kernel = "3D split-softmax" if max(q_lens) == 1 and len(seqs) <= threshold else "2D"
    return run, check, f"{kernel} kernel, 3D up to {threshold} sequences"


def vllm_mla_call(mod, batch, kv_len, heads, kv_dtype):
    """decode_attention_fwd as TritonMLAImpl.forward_mqa calls it (latent cache, 4 splits)."""
    dk = MLA_LORA + MLA_ROPE
    table, blocks = paged_table([kv_len] * batch, VLLM_BLOCK)
    cache = randn(blocks, VLLM_BLOCK, dk, dtype=kv_dtype).unsqueeze(2)
    latent = cache[..., :MLA_LORA]
    q = randn(batch, heads, dk)
    o = torch.zeros(batch, heads, MLA_LORA, dtype=q.dtype, device="cuda")
    lse = torch.zeros(batch, heads, dtype=q.dtype, device="cuda")
    logits = torch.empty(batch, heads, MLA_SPLITS, MLA_LORA + 1, dtype=torch.float32, device="cuda")
    seq_lens = torch.full((batch,), kv_len, dtype=torch.int32, device="cuda")
    one = torch.ones((), dtype=torch.float32, device="cuda")
    scale = (MLA_NOPE + MLA_ROPE) ** -0.5

    def run():
        mod.decode_attention_fwd(q, cache, latent, o, lse, table, seq_lens, logits, MLA_SPLITS, scale, VLLM_BLOCK,
                                 k_scale=one, v_scale=one)

    def check():
        k = gather_pages(cache, table, 0, kv_len).to(torch.bfloat16)
        return rel_error(o[0:1], reference(q[0:1], k, k[..., :MLA_LORA], scale))

    return run, check, f"latent {MLA_LORA}+{MLA_ROPE}, {MLA_SPLITS} KV splits"


# ---- SGLang -----------------------------------------------------------------------------------

def sglang_pool(seq_lens, kv_heads, d, kv_dtype=torch.bfloat16):
    """A per-token K/V pool and each sequence's slots in random order (kv_indptr int32, kv_indices int64)."""
    total = sum(seq_lens)
    k_buf, v_buf = randn(total + 1, kv_heads, d, dtype=kv_dtype), randn(total + 1, kv_heads, d, dtype=kv_dtype)
    indices = torch.randperm(total, device="cuda") + 1  # slot 0 is the pool's padding slot
    indptr = torch.tensor([0, *itertools.accumulate(seq_lens)], dtype=torch.int32, device="cuda")
    return k_buf, v_buf, indptr, indices


def sglang_decode_call(mods, batch, kv_len, heads, kv_heads, d, kv_dtype=torch.bfloat16):
    k_buf, v_buf, indptr, indices = sglang_pool([kv_len] * batch, kv_heads, d, kv_dtype)
    q = randn(batch, heads, d)
    o = torch.empty_like(q)
    logits = torch.empty(batch, heads, SGLANG_MAX_SPLITS, d, dtype=torch.float32, device="cuda")
    lse = torch.empty(batch, heads, SGLANG_MAX_SPLITS, dtype=torch.float32, device="cuda")
    seq_lens = torch.full((batch,), kv_len, dtype=torch.int32, device="cuda")
    splits = torch.empty(batch, dtype=torch.int32, device="cuda")
    cores = torch.cuda.get_device_properties(0).multi_processor_count
    mods["splits"][(1,)](splits, seq_lens, batch, 1, heads, kv_heads, SGLANG_MAX_SPLITS, cores,
                         MAX_NUM_SEQ=max(256, triton.next_power_of_2(batch)))

    def run():
        mods["decode"].decode_attention_fwd(q, k_buf, v_buf, o, indptr, indices, logits, lse, splits,
                                            SGLANG_MAX_SPLITS, d ** -0.5, 1.0, 1.0)

    def check():
        slots = indices[:kv_len]
        keys, values = k_buf[slots].to(torch.bfloat16), v_buf[slots].to(torch.bfloat16)
        return rel_error(o[0:1], reference(q[0:1], keys, values, d ** -0.5))

    kernel = "_fwd_kernel_stage1 (group 1)" if heads == kv_heads else "_fwd_grouped_kernel_stage1"
    return run, check, f"{kernel}, page_size=1, max_kv_splits {SGLANG_MAX_SPLITS}, splits {splits[0].item()}"


def sglang_extend_call(mods, batch, q_len, kv_len, heads, kv_heads, d):
    prefix = kv_len - q_len
    k_buf, v_buf, indptr, indices = sglang_pool([prefix] * batch, kv_heads, d)
    q, k, v = randn(batch * q_len, heads, d), randn(batch * q_len, kv_heads, d), randn(batch * q_len, kv_heads, d)
    o = torch.empty_like(q)
    qo = torch.arange(0, batch + 1, dtype=torch.int32, device="cuda") * q_len

    def run():
        mods["extend"].extend_attention_fwd(q, k, v, o, k_buf, v_buf, qo, indptr, indices, None, True, None, q_len,
                                            1.0, 1.0, d ** -0.5)

    def check():
        slots = indices[:prefix]
        keys, values = torch.cat([k_buf[slots], k[:q_len]]), torch.cat([v_buf[slots], v[:q_len]])
        return rel_error(o[:q_len], reference(q[:q_len], keys, values, d ** -0.5))

    return run, check, f"page_size=1, prefix {prefix} through kv_indices"


# ---- shapes and rows --------------------------------------------------------------------------

def decode_shapes(quick):
    if quick:
        return [(b, c, 32, 8, 128) for b in (1, 32) for c in (4096,)]
    shapes = [(b, c, h, 8, 128) for h in (32, 64) for b in (1, 8, 32, 64)
              for c in (512, 1024, 2048, 4096, 8192, 16384, 32768)]
    return shapes + [(b, c, 32, 8, 64) for b in (1, 32) for c in (1024, 4096, 16384)]


def group1_shapes(quick):
    """SGLang's decode with one query head per KV head runs its non-grouped kernel (decode_attention_fwd:
    kv_group_num == 1 -> decode_attention_fwd_normal). (batch, context, heads, KV heads, head dim, KV dtype):
    32/32 heads of 128 (Llama-2-7B) over the decode grid; 1/1 heads of 256 and 512 (the head sizes of
    AIConfigurator's group-1 rows) beside the grouped kernel at the same programs (2/1 and 8/1: one
    program per request either way), bf16 and fp8 caches; a few 32/8 rows to compare with the committed set."""
    if quick:
        return [(b, 4096, h, h // g, 128, "bf16") for b in (1, 32) for h, g in ((32, 1), (32, 4))]
    shapes = [(b, c, 32, 32, 128, "bf16") for b in (1, 8, 32, 64) for c in (512, 1024, 2048, 4096, 8192, 16384, 32768)]
    shapes += [(b, c, 32, 8, 128, "bf16") for b in (1, 8, 32, 64) for c in (4096, 16384)]
    for d, grouped in ((256, 2), (512, 8)):
        for h in (1, grouped):
            for dtype in ("bf16", "fp8_e4m3"):
                shapes += [(b, c, h, 1, d, dtype) for b in (1, 4, 16, 64, 256, 1024)
                           for c in (16, 256, 1024, 4096, 16384) if b * c <= 1 << 22]
    return shapes


def prefill_shapes(quick):
    if quick:
        return [(2048, 32, 8, 128)]
    return [(n, h, 8, 128) for h in (32, 64) for n in (512, 1024, 2048, 4096, 8192)] + \
           [(n, 32, 8, 64) for n in (512, 1024, 2048, 4096, 8192)]


def extend_shapes(quick):
    if quick:
        return [(512, 4096, 32, 8, 128)]
    pairs = [(512, c) for c in (1024, 2048, 4096, 8192, 16384)] + [(2048, c) for c in (4096, 8192, 16384)]
    return [(q, c, h, 8, 128) for h in (32, 64) for q, c in pairs]


class Runner:
    """Times each call with the harness's `timed` (graph replay, L2 flushed) and writes its row;
    checks each kernel (implementation, KV dtype, phase, launch) against a float32 reference
    before its first timing, and times no kernel that fails the check."""

    def __init__(self, rec, mixed_rec, timed, attention_work, phases=None):
        self.rec, self.mixed_rec, self.timed, self.attention_work = rec, mixed_rec, timed, attention_work
        self.phases = phases  # None: every phase
        self.checked = set()

    def measure(self, impl, phase, made, shape, work, dtype="bf16", commit="", page=0, rec=None, section=None):
        if self.phases and (section or phase) not in self.phases:
            return
        b, q_len, kv_len, heads, kv_heads, d = shape
        try:
            run, check, note = made()
            run()
            torch.cuda.synchronize()
            key = (impl, dtype, phase, note.split(",")[0])
            if key not in self.checked:
                err = check()
                print(f"check {impl} {dtype} {phase} b{b} q{q_len} kv{kv_len} h{heads}/{kv_heads} d{d}: "
                      f"relative error {err:.2e} against float32", flush=True)
                if not err < 2e-2:
                    raise RuntimeError(f"relative error {err:.3g} over 2e-2")
                self.checked.add(key)
            med, p20, p80, runs, how = self.timed(run)
        except Exception as e:
            print(f"skip {impl} {dtype} {phase} b{b} q{q_len} kv{kv_len} h{heads}/{kv_heads} d{d}: "
                  f"{type(e).__name__}: {str(e)[:300]}", file=sys.stderr)
            return
        finally:
            torch.cuda.empty_cache()
        flops, nbytes = work(self.attention_work) if callable(work) else work
        (rec or self.rec).add(kind="attention", impl=impl, phase=phase, batch=b, q_len=q_len, kv_len=kv_len,
                              heads=heads, kv_heads=kv_heads, head_dim=d, causal=int(phase != "decode"), dtype=dtype,
                              median_us=f"{med:.3f}", p20_us=f"{p20:.3f}", p80_us=f"{p80:.3f}", runs=runs,
                              flops=f"{flops:.6g}", bytes=f"{nbytes:.6g}", page_size=page, engine_commit=commit,
                              note=f"{how}; {note}")


def kv_work(b, q_len, kv_len, heads, kv_heads, d, phase, kv_bytes=2):
    """The harness's FLOPs, and Q and O in bf16 plus K and V at the cache's element size, each once."""
    def work(attention_work):
        flops, _ = attention_work(b, q_len, kv_len, heads, kv_heads, d, phase)
        return flops, b * (2 * q_len * heads * d * 2 + 2 * kv_len * kv_heads * d * kv_bytes)
    return work


def mixed_shapes(quick):
    """(prefill chunk, decodes, decodes' context, query heads) of the mixed batches: the first set
    (chunks of 512 and 2048 beside 8 or 32 decodes at 4096) and, at other contexts, batches that
    give the held-out split (contexts 1024 and 8192) mixed points of its own."""
    if quick:
        return [(512, 8, 4096, 32)]
    first = [(ck, n, 4096, h) for ck in (512, 2048) for n in (8, 32) for h in (32, 64)]
    more = [(ck, n, c, 32) for c in (1024, 8192, 16384) for ck in (256, 2048) for n in (4, 64)]
    return first + more


def measure_vllm(runner, mods, commit, quick):
    uni = "vllm_triton_unified"
    for b, c, h, kh, d in decode_shapes(quick):
        for dtype, kv_dtype in (("bf16", torch.bfloat16), ("fp8_e4m3", FP8)):
            if dtype == "fp8_e4m3" and (h, d) != (32, 128):
                continue
            runner.measure(uni, "decode", lambda: vllm_unified_call(mods["unified"], [(1, c)] * b, h, kh, d, kv_dtype),
                           (b, 1, c, h, kh, d), kv_work(b, 1, c, h, kh, d, "decode", kv_dtype.itemsize), dtype,
                           commit, VLLM_BLOCK)
    for n, h, kh, d in prefill_shapes(quick):
        runner.measure(uni, "prefill", lambda: vllm_unified_call(mods["unified"], [(n, n)], h, kh, d, torch.bfloat16),
                       (1, n, n, h, kh, d), kv_work(1, n, n, h, kh, d, "prefill"), "bf16", commit, VLLM_BLOCK)
    for ql, c, h, kh, d in extend_shapes(quick):
        runner.measure(uni, "extend", lambda: vllm_unified_call(mods["unified"], [(ql, c)], h, kh, d, torch.bfloat16),
                       (1, ql, c, h, kh, d), kv_work(1, ql, c, h, kh, d, "extend"), "bf16", commit, VLLM_BLOCK)
    for chunk, n, c, h in mixed_shapes(quick):
        seqs = [(1, c)] * n + [(chunk, chunk)]
        parts = [kv_work(n, 1, c, h, 8, 128, "decode"), kv_work(1, chunk, chunk, h, 8, 128, "prefill")]
        work = lambda aw, parts=parts: tuple(map(sum, zip(*(p(aw) for p in parts))))
        runner.measure(uni, "mixed", lambda: vllm_unified_call(mods["unified"], seqs, h, 8, 128, torch.bfloat16),
                       (n + 1, chunk, c, h, 8, 128), work, "bf16", commit, VLLM_BLOCK, rec=runner.mixed_rec)
    mla = "vllm_triton_mla_decode"
    for b, c, h, _, d in decode_shapes(quick):
        if (h, d) != (32, 128):  # one pass over the batches and contexts
            continue
        for heads in (16, 128):  # DeepSeek-V3's 128 heads at TP 8 and TP 1
            for dtype, kv_dtype in (("bf16", torch.bfloat16), ("fp8_e4m3", FP8)):
                if dtype == "fp8_e4m3" and heads != 16:
                    continue
                dk = MLA_LORA + MLA_ROPE
                work = (2.0 * b * heads * c * (dk + MLA_LORA),
                        b * (c * dk * kv_dtype.itemsize + heads * dk * 2 + heads * MLA_LORA * 2))
                runner.measure(mla, "decode", lambda: vllm_mla_call(mods["mla"], b, c, heads, kv_dtype),
                               (b, 1, c, heads, 1, dk), work, dtype, commit, VLLM_BLOCK)


def measure_sglang(runner, mods, commit, quick):
    for b, c, h, kh, d in decode_shapes(quick):
        runner.measure("sglang_triton_decode", "decode", lambda: sglang_decode_call(mods, b, c, h, kh, d),
                       (b, 1, c, h, kh, d), kv_work(b, 1, c, h, kh, d, "decode"), "bf16", commit, 1)
    if runner.phases and "group1" in runner.phases:  # only when asked for (--engine-phases group1)
        for b, c, h, kh, d, dtype in group1_shapes(quick):
            kv_dtype = FP8 if dtype == "fp8_e4m3" else torch.bfloat16
            runner.measure("sglang_triton_decode", "decode",
                           lambda: sglang_decode_call(mods, b, c, h, kh, d, kv_dtype), (b, 1, c, h, kh, d),
                           kv_work(b, 1, c, h, kh, d, "decode", kv_dtype.itemsize), dtype, commit, 1,
                           section="group1")
    for n, h, kh, d in prefill_shapes(quick):
        runner.measure("sglang_triton_extend", "prefill", lambda: sglang_extend_call(mods, 1, n, n, h, kh, d),
                       (1, n, n, h, kh, d), kv_work(1, n, n, h, kh, d, "prefill"), "bf16", commit, 1)
    for ql, c, h, kh, d in extend_shapes(quick):
        runner.measure("sglang_triton_extend", "extend", lambda: sglang_extend_call(mods, 1, ql, c, h, kh, d),
                       (1, ql, c, h, kh, d), kv_work(1, ql, c, h, kh, d, "extend"), "bf16", commit, 1)


def load(vllm_src=None, sglang_src=None):
    """The kernels of each source tree given, with the tree's commit; EngineSourceError if one
    cannot be loaded."""
    loaded = []
    if vllm_src:
        loaded.append((measure_vllm, load_vllm(vllm_src), engine_commit(vllm_src)))
    if sglang_src:
        loaded.append((measure_sglang, load_sglang(sglang_src), engine_commit(sglang_src)))
    return loaded


def measure(loaded, rec, mixed_rec, quick, timed, attention_work, phases=None):
    """Every loaded engine's kernels (of `phases` only, when given); mixed batches go to `mixed_rec`
    (the importer takes one shape a row)."""
    runner = Runner(rec, mixed_rec, timed, attention_work, phases)
    for fn, mods, commit in loaded:
        fn(runner, mods, commit, quick)
