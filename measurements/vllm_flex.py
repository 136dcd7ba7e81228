"""FlexAttention as vLLM's FLEX_ATTENTION backend drives it (impl `vllm_flex_attention`).

Written from the facts read in vLLM's vllm/v1/attention/backends/flex_attention.py at commit
VLLM_COMMIT (measurements/README.md lists them with their lines); no vLLM code is used or needed
at run time. What vLLM does, and so what this does:
- One query batch of every scheduled token, (1, heads, tokens, d), against the whole paged cache
  viewed as one sequence: the cache (2, pages, 16, kv_heads, d) unbound into K and V, each viewed
  as (pages * 16, kv_heads, d) and permuted to (1, kv_heads, pages * 16, d). Page 0 is vLLM's
  null block and holds no request's tokens; the batch's pages are handed out in random order.
- A BlockMask built directly from the block table (BlockMask.from_kv_blocks, no full blocks,
  block size 16 x 16, no q blocks): each run of 16 query tokens visits every page of every
  request that has a token in it, in the request's logical order, and a mask_mod maps a
  physical key index back to (request, logical position) and applies causality there.
- flex_attention compiled once with fullgraph=True and default (automatic) dynamic shapes, called
  with kernel_options FORCE_USE_FLEX_ATTENTION (the main template, never the decoding one) and
  BLOCK_M = BLOCK_N = 16, softmax scale d**-0.5, enable_gqa.
"""
import sys

import torch
import triton

VLLM_COMMIT = "dc6908ac6a188234c1480ed3e2bf3b2b8136642a"
IMPL = "vllm_flex_attention"
PAGE = 16  # vLLM's default cache block size; FLEX_ATTENTION's KV block size equals it (torch >= 2.9)
Q_BLOCK = 16  # the block mask's query block on torch >= 2.9
KERNEL_OPTIONS = {"FORCE_USE_FLEX_ATTENTION": True, "BLOCK_M": Q_BLOCK, "BLOCK_N": PAGE}
HEADS, KV_HEADS, HEAD_DIM = 32, 8, 128


def cdiv(a, b):
    return -(-a // b)


class Batch:
    """One scheduled batch: requests with (new tokens, tokens in the cache after this step)."""

    def __init__(self, q_lens, seq_lens, heads=HEADS, kv_heads=KV_HEADS, d=HEAD_DIM):
        from torch.nn.attention.flex_attention import BlockMask
        dev = "cuda"
        self.q_lens, self.seq_lens, self.d = q_lens, seq_lens, d
        counts = [cdiv(s, PAGE) for s in seq_lens]
        pages = sum(counts)
        # The batch's pages 1..pages in random order; page 0 is the null block.
        order = (torch.randperm(pages, device=dev) + 1).to(torch.int32)
        self.table = torch.zeros(len(seq_lens), max(counts), dtype=torch.int32, device=dev)
        at = 0
        for r, c in enumerate(counts):
            self.table[r, :c] = order[at:at + c]
            at += c
        cache = torch.randn(2, pages + 1, PAGE, kv_heads, d, device=dev, dtype=torch.bfloat16)
        self.k_pages, self.v_pages = cache.unbind(0)
        pool = (pages + 1) * PAGE
        self.key = self.k_pages.view(pool, kv_heads, d)[None].permute(0, 2, 1, 3)
        self.value = self.v_pages.view(pool, kv_heads, d)[None].permute(0, 2, 1, 3)
        tokens = sum(q_lens)
        self.q_flat = torch.randn(tokens, heads, d, device=dev, dtype=torch.bfloat16)
        self.query = self.q_flat[None].permute(0, 2, 1, 3)

        # What the mask_mod looks up: each query token's request, where the request's queries start,
        # how many tokens it had before this step, its length, and physical page -> logical page.
        reqs = torch.arange(len(q_lens), device=dev, dtype=torch.int32)
        q_lens_t = torch.tensor(q_lens, device=dev, dtype=torch.int32)
        seq_t = torch.tensor(seq_lens, device=dev, dtype=torch.int32)
        request_of = torch.repeat_interleave(reqs, q_lens_t)
        q_start = torch.cumsum(q_lens_t, 0) - q_lens_t
        before = seq_t - q_lens_t
        logical = torch.full((len(q_lens), pages + 1), -1, dtype=torch.int64, device=dev)
        for r, c in enumerate(counts):
            logical[r, self.table[r, :c].long()] = torch.arange(c, device=dev)

        def mask_mod(b, h, q_idx, kv_idx):
            r = request_of[q_idx]
            page = logical[r, kv_idx // PAGE]
            key_pos = page * PAGE + kv_idx % PAGE
            query_pos = q_idx - q_start[r] + before[r]
            return (page >= 0) & (key_pos < seq_t[r]) & (key_pos <= query_pos)

        # Per run of Q_BLOCK query tokens: the pages of each request present, in logical order.
        rows = []
        for start in range(0, tokens, Q_BLOCK):
            present = torch.unique_consecutive(request_of[start:start + Q_BLOCK]).tolist()
            rows.append(torch.cat([self.table[r, :counts[r]] for r in present]))
        width = max(len(x) for x in rows)
        kv_indices = torch.full((len(rows), width), -1, dtype=torch.int32, device=dev)
        for i, x in enumerate(rows):
            kv_indices[i, :len(x)] = x
        kv_num_blocks = torch.tensor([len(x) for x in rows], dtype=torch.int32, device=dev)
        self.visited = int(kv_num_blocks.sum())
        self.mask = BlockMask.from_kv_blocks(kv_num_blocks[None, None], kv_indices[None, None], None, None,
                                             BLOCK_SIZE=(Q_BLOCK, PAGE), mask_mod=mask_mod,
                                             seq_lengths=(tokens, pool), compute_q_blocks=False)
        self.scale = d ** -0.5
        self.request_of, self.q_start = request_of, q_start

    def call(self, compiled):
        return lambda: compiled(self.query, self.key, self.value, None, self.mask, self.scale, enable_gqa=True,
                                kernel_options=KERNEL_OPTIONS)

    def error(self, out, requests, rows_per_request=256):
        """Largest relative error of `out` (1, heads, tokens, d) against float32 attention over each
        listed request's gathered pages, at up to `rows_per_request` of its query positions."""
        worst = 0.0
        for r in requests:
            c = cdiv(self.seq_lens[r], PAGE)
            blocks = self.table[r, :c].long()
            k = self.k_pages[blocks].reshape(-1, *self.k_pages.shape[2:])[:self.seq_lens[r]].float()
            v = self.v_pages[blocks].reshape(-1, *self.v_pages.shape[2:])[:self.seq_lens[r]].float()
            ql = self.q_lens[r]
            pick = torch.arange(ql, device="cuda")
            if ql > rows_per_request:
                pick = torch.cat([pick[:8], pick[-8:], pick[torch.randperm(ql, device="cuda")[:rows_per_request - 16]]])
            rows = int(self.q_start[r]) + pick
            positions = self.seq_lens[r] - ql + pick
            q = self.q_flat[rows].float()
            group = q.shape[1] // k.shape[1]
            k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
            s = torch.einsum("qhd,khd->hqk", q, k) * self.scale
            s.masked_fill_(torch.arange(k.shape[0], device="cuda")[None, :] > positions[:, None], float("-inf"))
            ref = torch.einsum("hqk,khd->qhd", s.softmax(-1), v)
            got = out[0, :, rows, :].permute(1, 0, 2).float()
            worst = max(worst, ((got - ref).norm() / ref.norm()).item())
        return worst


_COMPILED = []


def compiled_flex():
    """flex_attention compiled as vLLM compiles it, brought to its steady state: vLLM calls it with
    a new query length and block mask every step, so after the first recompile dynamo's automatic
    dynamic shapes make the token count and the mask's sizes symbolic. Two warm-up batches (of 2
    and 3 requests) take it there before anything is timed; a batch of one token stays a graph of
    its own (dynamo specialises sizes of 1), as in vLLM."""
    if _COMPILED:
        return _COMPILED[0]
    from torch.nn.attention.flex_attention import flex_attention
    compiled = torch.compile(flex_attention, fullgraph=True)
    for n in (2, 3):
        batch = Batch([1] * n, [40 * n] * n)
        batch.call(compiled)()
    torch.cuda.synchronize()
    _COMPILED.append(compiled)
    return compiled


def graphs_compiled():
    from torch._dynamo.utils import counters
    return counters["stats"]["unique_graphs"]


def decode_grid(quick):
    if quick:
        return [(b, c) for b in (1, 32) for c in (4096,)]
    return [(b, c) for b in (1, 8, 32, 64) for c in (512, 1024, 2048, 4096, 8192, 16384, 32768)]


def prefill_grid(quick):
    return [1024] if quick else [512, 1024, 2048, 4096, 8192]


def eager_us(fn):
    """Median device time of eager calls (events; where the host's dispatch is longer than the
    kernel, that is what it measures). vLLM runs this backend outside CUDA graphs."""
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e3


def measure(rec, timed, attention_work, quick):
    """vLLM's FlexAttention calls for decode (batches of single-token requests) and prefill (one
    request of n tokens), checked against float32 attention before timing; one row each."""
    compiled = compiled_flex()
    cases = [("decode", [1] * b, [c] * b) for b, c in decode_grid(quick)]
    cases += [("prefill", [n], [n]) for n in prefill_grid(quick)]
    for phase, q_lens, seq_lens in cases:
        b, q_len, kv_len = len(q_lens), q_lens[0], seq_lens[0]
        label = f"{IMPL} {phase} b{b} q{q_len} kv{kv_len} h{HEADS}/{KV_HEADS} d{HEAD_DIM}"
        elements = (sum(cdiv(s, PAGE) for s in seq_lens) + 1) * PAGE * KV_HEADS * HEAD_DIM
        if elements >= 2 ** 31:  # seen on the H100: an illegal memory access (b64 over 32768)
            print(f"skip {label}: the K view holds {elements} elements, past int32 offsets", file=sys.stderr,
                  flush=True)
            continue
        try:
            batch = Batch(q_lens, seq_lens)
            fn = batch.call(compiled)
            graphs = graphs_compiled()
            out = fn()
            torch.cuda.synchronize()
            recompiled = graphs_compiled() - graphs
            requests = sorted({0, b // 2, b - 1})
            err = batch.error(out, requests)
            del out
            print(f"check {label}: relative error {err:.2e} against float32 (requests {requests})"
                  + (f"; {recompiled} graph(s) compiled for it" if recompiled else ""), flush=True)
            if not err < 2e-2:
                raise RuntimeError(f"relative error {err:.3g} over 2e-2")
            med, p20, p80, runs, how = timed(fn)
            eager = eager_us(fn)
        except Exception as e:
            print(f"skip {label}: {type(e).__name__}: {str(e)[:300]}", file=sys.stderr, flush=True)
            torch.cuda.empty_cache()
            continue
        flops, nbytes = attention_work(b, q_len, kv_len, HEADS, KV_HEADS, HEAD_DIM, phase)
        note = (f"{how}; page_size={PAGE}, block mask {Q_BLOCK}x{PAGE} built from the block table, "
                f"{batch.visited} KV blocks visited over {cdiv(sum(q_lens), Q_BLOCK)} query blocks; "
                f"FORCE_USE_FLEX_ATTENTION, BLOCK_M={Q_BLOCK}, BLOCK_N={PAGE}; eager call {eager:.1f} us")
        rec.add(kind="attention", impl=IMPL, phase=phase, batch=b, q_len=q_len, kv_len=kv_len, heads=HEADS,
                kv_heads=KV_HEADS, head_dim=HEAD_DIM, causal=int(phase != "decode"), dtype="bf16",
                median_us=f"{med:.3f}", p20_us=f"{p20:.3f}", p80_us=f"{p80:.3f}", runs=runs, flops=f"{flops:.6g}",
                bytes=f"{nbytes:.6g}", page_size=PAGE, note=note, engine_commit=VLLM_COMMIT)
        print(f"{label}: {med:9.1f} us graph, {eager:9.1f} us eager, {nbytes / med / 1e3:6.0f} GB/s", flush=True)
        del batch, fn
        torch.cuda.empty_cache()


def list_kernels(out, profiled_kernels, write_kernels):
    """The kernels one vLLM-style FlexAttention call launches (decode b8 over 4096, prefill 2048)."""
    compiled = compiled_flex()
    for label, q_lens, seq_lens in [("decode b8 q1 kv4096", [1] * 8, [4096] * 8), ("prefill b1 q2048", [2048], [2048])]:
        batch = Batch(q_lens, seq_lens)
        write_kernels(out, f"{IMPL} {label} h{HEADS}/{KV_HEADS} d{HEAD_DIM}", profiled_kernels(batch.call(compiled)))
