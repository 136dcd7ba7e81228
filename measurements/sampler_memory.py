"""GPU memory that vLLM V1's memory-profiling sampler run takes (issue 28, docs/CAPACITY.md "vLLM's KV pool").

    python3 measurements/sampler_memory.py --out sampler_memory.csv

vLLM sizes its KV pool from the peak of torch allocations during a profiling run (Worker.
determine_available_memory); the run ends with a dummy sampler call over min(max_num_seqs,
max_num_batched_tokens) rows of logits with temperature, top-k and top-p set (GPUModelRunner.
_dummy_sampler_run). This replays that call's tensor operations, as vLLM v0.10.2/v0.11.0 order them, on
random logits and records the peak of torch.cuda.max_memory_allocated above the bf16 logits the model
hands over, per row x vocab element:

- `torch_native`: TopKTopPSampler.forward_native, the path without FlashInfer: the logits cast to fp32
  (Sampler.forward), divided by the temperature in place, sorted (values and int64 indices), the top-k
  threshold gathered and masked, softmax and an in-place cumsum for top-p, the mask, the scatter back,
  softmax to fp32 probabilities and the exponential race (q = Exp(1), probs / q, argmax).
- `flashinfer_ops`: the tensors vLLM's flashinfer_sample path allocates around FlashInfer's kernels: the
  fp32 cast and, for top-k and top-p together, FlashInfer's top_k_mask_logits output and its softmax
  (flashinfer.sampling.top_k_top_p_sampling_from_logits, filter order top_k_first). FlashInfer itself
  is not installed here: its two outputs are allocated as torch tensors of the same shape and dtype,
  and its kernels' own workspace (per-row, small) is not counted.

Also records the device's total memory as torch reports it (torch.cuda.mem_get_info), the number
vLLM multiplies by gpu_memory_utilization.
"""
import argparse
import csv
import datetime
import sys

import torch

VOCABS = [128256, 151936, 201088]
ROWS = [256, 1024]
COLUMNS = ["device", "date", "torch", "cuda", "impl", "rows", "vocab", "peak_bytes", "bytes_per_logit",
           "total_memory_bytes", "note"]


def native(logits_bf16, k, p, temperature):
    logits = logits_bf16.to(torch.float32)
    logits.div_(temperature.unsqueeze(1))
    logits_sort, logits_idx = logits.sort(dim=-1, descending=False)
    top_k_mask = logits_sort.size(1) - k.to(torch.long)
    top_k_mask = logits_sort.gather(1, top_k_mask.unsqueeze(dim=1))
    top_k_mask = logits_sort < top_k_mask
    logits_sort.masked_fill_(top_k_mask, -float("inf"))
    probs_sort = logits_sort.softmax(dim=-1)
    probs_sum = torch.cumsum(probs_sort, dim=-1, out=probs_sort)
    top_p_mask = probs_sum <= 1 - p.unsqueeze(dim=1)
    top_p_mask[:, -1] = False
    logits_sort.masked_fill_(top_p_mask, -float("inf"))
    logits = logits_sort.scatter(dim=-1, index=logits_idx, src=logits_sort)
    probs = logits.softmax(dim=-1, dtype=torch.float32)
    q = torch.empty_like(probs)
    q.exponential_()
    return probs.div_(q).argmax(dim=-1).view(-1)


def flashinfer_ops(logits_bf16, k, p, temperature):
    logits = logits_bf16.to(torch.float32)
    logits.div_(temperature.unsqueeze(1))
    masked = torch.empty_like(logits)  # top_k_mask_logits output
    masked.copy_(logits)
    probs = torch.softmax(masked, dim=-1)
    return probs.argmax(dim=-1).view(-1)


def measure(fn, rows, vocab):
    dev = "cuda"
    logits = torch.randn(rows, vocab, device=dev, dtype=torch.bfloat16)
    k = torch.full((rows,), vocab - 1, device=dev, dtype=torch.int32)
    p = torch.full((rows,), 0.9, device=dev)
    t = torch.full((rows,), 0.5, device=dev)
    fn(logits, k, p, t)  # warm: the sort's and kernels' one-time allocations
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    out = fn(logits, k, p, t)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    del out
    return peak


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.manual_seed(0)
    _, total = torch.cuda.mem_get_info()
    name = torch.cuda.get_device_name()
    date = datetime.date.today().isoformat()
    rows_out = []
    for impl, fn in [("torch_native", native), ("flashinfer_ops", flashinfer_ops)]:
        for vocab in VOCABS:
            for rows in ROWS:
                peak = measure(fn, rows, vocab)
                rows_out.append([name, date, torch.__version__, torch.version.cuda, impl, rows, vocab, peak,
                                 f"{peak / (rows * vocab):.2f}", total, "above the bf16 logits"])
                print(impl, rows, vocab, peak, f"{peak / (rows * vocab):.2f} B/logit", file=sys.stderr)
    with open(args.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        w.writerows(rows_out)


if __name__ == "__main__":
    main()
