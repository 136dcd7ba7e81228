"""The group-1 rule of SGLang's Triton decode (backends/kernels/triton-sglang.yaml, performance.group1_decode)
from the harness's rows: SGLang runs a decode of one query head per KV head in its non-grouped kernel
(_fwd_kernel_stage1: one program per query head, 64-key blocks on CUDA cores) and every other group in the
grouped one (_fwd_grouped_kernel_stage1: up to 16 query heads packed into one tl.dot), and both launch one
program per request and KV head per split. Each group-1 row is paired with the grouped row of the same
programs (same batch and context at 2/1 or 8/1 heads; 32/32 heads at batch b with 32/8 at 4b), and
time(group 1) = factor x time(grouped) + fixed_us is fitted per head-dim bucket and KV width by least
squares on the relative error. fixed_us is held at 0 where the free fit makes it negative, and where no pair
is a short call (the grouped kernel under 20 µs), which alone shows a fixed time.

    python3 measurements/group1_fit.py measurements/data/h100/sglang_group1.csv measurements/data/h100/engine_kernels.csv
"""
import csv
import statistics
import sys


def rows_of(paths):
    out = {}
    for path in paths:
        with open(path) as f:
            for r in csv.DictReader(f):
                if r["impl"] != "sglang_triton_decode" or r["phase"] != "decode":
                    continue
                key = (int(r["heads"]), int(r["kv_heads"]), int(r["head_dim"]), r["dtype"], int(r["batch"]),
                       int(r["kv_len"]))
                out.setdefault(key, float(r["median_us"]))  # the first file's row wins
    return out


def pairs_of(t):
    """(bucket, KV width) -> [(grouped µs, group-1 µs)] at the same programs."""
    pairs = {}
    for (h, kh, d, dtype, b, c), us in t.items():
        if h != kh:
            continue
        width = "fp8" if dtype.startswith("fp8") else "bf16"
        if h == 1:
            grouped = [t[k] for k in ((g, 1, d, dtype, b, c) for g in (2, 4, 8)) if k in t]
        else:  # h query heads over h KV heads at batch b: h / 4 KV heads of 4 at batch 4b
            grouped = [t[k] for k in [(h, h // 4, d, dtype, 4 * b, c)] if k in t]
        if grouped:
            pairs.setdefault((d, width), []).append((grouped[0], us))
    return pairs


def fit(pairs):
    """factor, fixed_us minimising sum((factor x + fixed - y) / y)^2, fixed_us >= 0."""
    a11 = sum((x / y) ** 2 for x, y in pairs)
    a12 = sum(x / y ** 2 for x, y in pairs)
    a22 = sum(1 / y ** 2 for x, y in pairs)
    b1 = sum(x / y for x, y in pairs)
    b2 = sum(1 / y for x, y in pairs)
    det = a11 * a22 - a12 * a12
    factor, fixed = (b1 * a22 - b2 * a12) / det, (a11 * b2 - a12 * b1) / det
    if fixed < 0 or min(x for x, _ in pairs) >= 20:
        factor, fixed = b1 / a11, 0.0
    return factor, fixed


def main():
    t = rows_of(sys.argv[1:])
    for (d, width), pairs in sorted(pairs_of(t).items()):
        factor, fixed = fit(pairs)
        errors = [abs(factor * x + fixed - y) / y for x, y in pairs]
        ratios = [y / x for x, y in pairs]
        print(f"head_dim {d} kv {width}: {len(pairs)} pairs, median ratio {statistics.median(ratios):.3f}, "
              f"factor {factor:.3f} fixed_us {fixed:.2f} (MAPE {100 * statistics.mean(errors):.1f}%)")


if __name__ == "__main__":
    main()
