"""What a serving step costs beside the model's layers: the sampler, the logits GEMM and the copies of
the step's inputs to the GPU (issue 28, docs/CAPACITY.md "Per-step host work").

    python3 measurements/host_step.py --out host_step.csv

Rows (one per kind, implementation and batch):
- sampling: fp32 logits [batch, vocab] to one token per row, eagerly as the engines run their samplers
  after the model's graph: `greedy` (argmax), `topk_topp` (temperature, a sort-based top-k and top-p
  mask, softmax, and a draw by the exponential race: probs / Exp(1), argmax; the torch path vLLM V1
  takes without FlashInfer), `multinomial` (softmax and torch.multinomial).
- logits_gemm: bf16 hidden [batch, hidden] x lm_head [vocab, hidden]^T.
- h2d: the step's inputs (input ids int32, positions int64, sequence lengths int32, slot mapping int64,
  a block table int32 [batch, 128] of 16-token pages: 2048 tokens of context) copied host to device,
  from pinned memory (non_blocking, one synchronize) or from pageable memory.
- prepare: a Python loop per request filling lists, torch.tensor of each and the pinned copies: a
  stand-in for an engine's Python input preparation (not an engine's code).
median_us/p20_us/p80_us: CUDA events around the call; host_median_us: the host clock from before the
call to after a synchronize. Inputs are random (never zeros) and rotate among several sets.
"""
import argparse
import csv
import datetime
import statistics
import sys
import time

import torch

BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256]
VOCABS = [128256, 151936]
HIDDENS = [4096, 8192]
BLOCKS = 128
COLUMNS = ["device", "date", "torch", "cuda", "kind", "impl", "batch", "vocab", "hidden", "bytes", "median_us",
           "p20_us", "p80_us", "host_median_us", "runs", "note"]


def pct(xs, q):
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def timed(fn, sets, reps, warmup=5):
    for i in range(warmup):
        fn(sets[i % len(sets)])
    torch.cuda.synchronize()
    dev, host = [], []
    for i in range(reps):
        s = sets[i % len(sets)]
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        a.record()
        fn(s)
        b.record()
        b.synchronize()
        host.append((time.perf_counter() - t0) * 1e6)
        dev.append(a.elapsed_time(b) * 1e3)
    return statistics.median(dev), pct(dev, 0.2), pct(dev, 0.8), statistics.median(host), reps


def greedy(logits):
    return logits.argmax(dim=-1)


def topk_topp(args):
    logits, k, p = args
    logits = logits / 0.7
    srt, idx = logits.sort(dim=-1, descending=False)
    kth = srt.gather(1, (srt.size(1) - k).unsqueeze(1).long())
    srt = srt.masked_fill(srt < kth, float("-inf"))
    cum = srt.softmax(dim=-1).cumsum(dim=-1)
    drop = cum <= 1 - p.unsqueeze(1)
    drop[:, -1] = False
    srt = srt.masked_fill(drop, float("-inf"))
    probs = srt.scatter(-1, idx, srt).softmax(dim=-1)
    q = torch.empty_like(probs).exponential_()
    return probs.div_(q).argmax(dim=-1)


def multinomial(logits):
    return torch.multinomial((logits / 0.7).softmax(dim=-1), 1)


def sampling_rows(emit):
    for vocab in VOCABS:
        for b in BATCHES:
            sets = [torch.randn(b, vocab, device="cuda") * 4 for _ in range(4)]
            k = torch.full((b,), 50, device="cuda", dtype=torch.int32)
            p = torch.full((b,), 0.9, device="cuda")
            emit("sampling", "greedy", b, vocab, "", b * vocab * 4, timed(greedy, sets, 200), "")
            emit("sampling", "topk_topp", b, vocab, "", b * vocab * 4, timed(topk_topp, [(s, k, p) for s in sets], 100),
                 "temperature 0.7, top_k 50, top_p 0.9")
            emit("sampling", "multinomial", b, vocab, "", b * vocab * 4, timed(multinomial, sets, 100),
                 "temperature 0.7")
            del sets


def gemm_rows(emit):
    for hidden in HIDDENS:
        for vocab in VOCABS:
            w = torch.randn(vocab, hidden, device="cuda", dtype=torch.bfloat16) * 0.02
            for b in BATCHES:
                sets = [torch.randn(b, hidden, device="cuda", dtype=torch.bfloat16) for _ in range(4)]
                res = timed(lambda x: torch.nn.functional.linear(x, w), sets, 100)
                emit("logits_gemm", "torch_linear_bf16", b, vocab, hidden, (vocab * hidden + b * (hidden + vocab)) * 2,
                     res, f"{2 * b * hidden * vocab} flop")
            del w


def step_inputs(b, pinned):
    g = torch.Generator().manual_seed(b)
    ts = [torch.randint(1, 100000, (b,), dtype=torch.int32, generator=g),
          torch.randint(1, 2048, (b,), dtype=torch.int64, generator=g),
          torch.randint(1, 2048, (b,), dtype=torch.int32, generator=g),
          torch.randint(1, 1 << 20, (b,), dtype=torch.int64, generator=g),
          torch.randint(1, 1 << 16, (b, BLOCKS), dtype=torch.int32, generator=g)]
    return [t.pin_memory() for t in ts] if pinned else ts


def h2d_rows(emit):
    for b in BATCHES:
        for pinned in (True, False):
            sets = [step_inputs(b, pinned) for _ in range(4)]
            nbytes = sum(t.numel() * t.element_size() for t in sets[0])

            def copy(ts, nb=pinned):
                return [t.to("cuda", non_blocking=nb) for t in ts]

            emit("h2d", "pinned" if pinned else "pageable", b, "", "", nbytes, timed(copy, sets, 200),
                 f"5 tensors, block table {BLOCKS} pages")


def prepare_rows(emit):
    for b in BATCHES:
        reqs = [{"tok": 1000 + i, "pos": 500 + i, "blocks": list(range(i, i + BLOCKS))} for i in range(b)]
        bufs = [torch.empty(b, dtype=torch.int32).pin_memory(), torch.empty(b, dtype=torch.int64).pin_memory(),
                torch.empty(b, BLOCKS, dtype=torch.int32).pin_memory()]

        def prep(rs):
            ids, pos, table = [], [], []
            for r in rs:
                ids.append(r["tok"])
                pos.append(r["pos"])
                table.append(r["blocks"])
            bufs[0].copy_(torch.tensor(ids, dtype=torch.int32))
            bufs[1].copy_(torch.tensor(pos, dtype=torch.int64))
            bufs[2].copy_(torch.tensor(table, dtype=torch.int32))
            return [t.to("cuda", non_blocking=True) for t in bufs]

        emit("prepare", "python_lists", b, "", "", sum(t.numel() * t.element_size() for t in bufs),
             timed(prep, [reqs], 100), "Python loop per request, torch.tensor, pinned staging, 3 copies")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--skip", default="")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    torch.manual_seed(0)
    dev = torch.cuda.get_device_name()
    meta = [dev, datetime.date.today().isoformat(), torch.__version__, torch.version.cuda or ""]
    with open(args.out, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(COLUMNS)

        def emit(kind, impl, b, vocab, hidden, nbytes, res, note):
            med, p20, p80, host, runs = res
            out.writerow(meta + [kind, impl, b, vocab, hidden, nbytes, f"{med:.3f}", f"{p20:.3f}", f"{p80:.3f}",
                                 f"{host:.3f}", runs, note])
            f.flush()
            print(f"{kind:12s} {impl:18s} b={b:4d} V={vocab!s:7s} H={hidden!s:5s} {med:10.1f} us (host {host:9.1f})")

        for name, fn in (("sampling", sampling_rows), ("gemm", gemm_rows), ("h2d", h2d_rows),
                         ("prepare", prepare_rows)):
            if name in skip:
                continue
            t0 = time.time()
            try:
                fn(emit)
            except Exception as e:  # keep the other sections' rows
                print(f"{name}: failed: {e!r}", file=sys.stderr)
            print(f"{name}: {time.time() - t0:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
