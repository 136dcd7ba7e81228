"""measurements/aic_convert.py on a miniature AIConfigurator tree of CSV dumps (no pyarrow needed)."""
import csv
import gzip
import os
import subprocess
import sys

import pytest

CONVERTER = os.path.join(os.path.dirname(__file__), "..", "measurements", "aic_convert.py")
HEADER = ["framework", "version", "device", "op_name", "kernel_source", "batch_size", "isl", "num_heads",
          "num_key_value_heads", "head_dim", "beam_width", "attn_dtype", "kv_cache_dtype", "step", "window_size",
          "latency"]


def write_table(root, rel, rows, header=HEADER):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def run(*args):
    return subprocess.run([sys.executable, CONVERTER, *args], capture_output=True, text=True)


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "data"
    dev = "NVIDIA H100 80GB HBM3"
    write_table(root, "h100_sxm/attention/vllm/0.24.0/generation_attention_perf.csv", [
        ["VLLM", "0.24.0", dev, "generation_attention", "vllm_flash_attn_fa3", 8, 1, 32, 8, 128, 1, "bfloat16", "fp8",
         4095, 0, 0.0125],
        ["VLLM", "0.24.0", dev, "generation_attention", "vllm_flash_attn_fa3", 8, 1, 32, 8, 128, 1, "bfloat16",
         "bfloat16", 4095, 128, 0.0100],
    ])
    write_table(root, "h100_sxm/attention/sglang/0.5.14/context_attention_perf.csv", [
        ["SGLang", "0.5.14", dev, "context_attention", "fa3", 2, 1024, 32, 8, 128, 1, "fp8", "fp8", 0, 0, 0.050],
    ])
    return root


def rows_of(path):
    with gzip.open(path, "rt", newline="") as f:
        return list(csv.DictReader(f))


def test_rows_carry_kv_length_query_dtype_window_and_origin(tree, tmp_path):
    out = tmp_path / "out"
    r = run("--aic", str(tree), "--commit", "abc123", "--date", "2026-08-21", "--gpu", "h100_sxm", "--out", str(out))
    assert r.returncode == 0, r.stderr
    rows = rows_of(out / "h100_sxm.csv.gz")
    assert len(rows) == 3
    decode = [x for x in rows if x["phase"] == "decode"]
    # Generation rows attend isl + step keys; the query keeps the dtype the table logs (bfloat16).
    assert {x["kv_len"] for x in decode} == {"4096"}
    fp8 = next(x for x in decode if x["dtype"] == "fp8_e4m3")
    assert fp8["q_dtype"] == "bf16" and fp8["impl"] == "vllm_fa3" and fp8["page_size"] == "64"
    assert fp8["median_us"] == "12.5000" and fp8["kv_write"] == "1" and fp8["l2_warm"] == "1"
    assert next(x for x in decode if x["dtype"] == "bf16")["window"] == "128"
    prefill = next(x for x in rows if x["phase"] == "prefill")
    assert prefill["impl"] == "sglang_fa3" and prefill["q_dtype"] == "fp8_e4m3" and prefill["page_size"] == "1"
    assert prefill["q_len"] == prefill["kv_len"] == "1024" and prefill["causal"] == "1"
    # Causal keys of a 1024-token prefill: 1024 · 1025 / 2 per head, K and V of 128.
    assert float(prefill["flops"]) == pytest.approx(2 * 2 * 32 * (1024 * 1025 // 2) * 256, rel=1e-5)
    assert all(x["origin"].startswith("ai-dynamo/aiconfigurator@abc123:") for x in rows)


def test_held_out_gpus_are_refused(tree, tmp_path):
    r = run("--aic", str(tree), "--commit", "abc", "--date", "2026-08-21", "--gpu", "h200_sxm", "--out",
            str(tmp_path / "o"))
    assert r.returncode == 2 and "held out" in r.stderr
    assert not (tmp_path / "o").exists()


def test_an_unknown_kernel_source_is_an_error_naming_the_table(tree, tmp_path):
    write_table(tree, "h100_sxm/attention/vllm/0.24.0/context_attention_perf.csv", [
        ["VLLM", "0.24.0", "NVIDIA H100 80GB HBM3", "context_attention", "vllm_new_backend", 1, 16, 8, 8, 64, 1,
         "bfloat16", "bfloat16", 0, 0, 0.01]])
    out = tmp_path / "out"
    r = run("--aic", str(tree), "--commit", "abc", "--date", "2026-08-21", "--gpu", "h100_sxm", "--out", str(out))
    assert r.returncode == 2
    assert "vllm_new_backend" in r.stderr and "context_attention_perf" in r.stderr
    assert not (out / "h100_sxm.csv.gz").exists(), "nothing half-written"


def test_rows_are_named_by_the_call_the_engine_makes(tmp_path):
    root = tmp_path / "data"
    dev = "NVIDIA B200"
    write_table(root, "b200_sxm/attention/vllm/0.24.0/context_attention_perf.csv", [
        ["VLLM", "0.24.0", dev, "context_attention", "vllm_flashinfer_trtllmdecode", 256, 1, 48, 1, 64, 1, "bfloat16",
         "fp8", 0, 0, 0.0129],
        ["VLLM", "0.24.0", dev, "context_attention", "vllm_flashinfer_trtllmprefill", 2, 512, 48, 1, 64, 1, "bfloat16",
         "fp8", 0, 0, 0.0300],
    ])
    write_table(root, "b200_sxm/attention/sglang/0.5.14/context_attention_perf.csv", [
        ["SGLang", "0.5.14", dev, "context_attention", "flashinfer", 128, 1, 1, 1, 128, 1, "bfloat16", "bfloat16", 0, 0,
         0.0146],
    ])
    write_table(root, "b200_sxm/attention/sglang/0.5.14/generation_attention_perf.csv", [
        ["SGLang", "0.5.14", dev, "generation_attention", "flashinfer", 8, 1, 2, 1, 128, 1, "bfloat16", "bfloat16", 63,
         0, 0.0085],
        ["SGLang", "0.5.14", dev, "generation_attention", "flashinfer", 8, 1, 2, 1, 128, 1, "bfloat16", "fp8", 63, 0,
         0.0085],
        ["SGLang", "0.5.14", dev, "generation_attention", "flashinfer", 8, 1, 8, 1, 128, 1, "bfloat16", "bfloat16", 63,
         0, 0.0085],
    ])
    out = tmp_path / "out"
    r = run("--aic", str(root), "--commit", "abc", "--date", "2026-08-21", "--gpu", "b200_sxm", "--out", str(out))
    assert r.returncode == 0, r.stderr
    rows = rows_of(out / "b200_sxm.csv.gz")
    vllm = {x["q_len"]: x for x in rows if x["engine"] == "vllm"}
    # vLLM runs a batch of one-token prompts as decodes (FlashInfer logs its decode kernel): a decode over one key.
    assert vllm["1"]["phase"] == "decode" and vllm["1"]["kv_len"] == "1" and vllm["1"]["causal"] == "0"
    assert vllm["512"]["phase"] == "prefill"
    sglang = [(x["impl"], x["phase"], x["heads"], x["dtype"]) for x in rows if x["engine"] == "sglang"]
    # SGLang's decode of a 16-bit cache under a GQA group of 4 runs the CUDA-core decode kernel, the tensor-core
    # kernels otherwise; its prefill on SM 10.x runs FlashInfer's CUTLASS FMHA.
    assert sorted(sglang) == [("sglang_flashinfer", "decode", "2", "fp8_e4m3"),
                              ("sglang_flashinfer", "decode", "8", "bf16"),
                              ("sglang_flashinfer_cuda_cores", "decode", "2", "bf16"),
                              ("sglang_flashinfer_cutlass", "prefill", "1", "bf16")]


MOE_HEADER = ["framework", "version", "device", "op_name", "kernel_source", "moe_dtype", "num_tokens", "hidden_size",
              "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size", "distribution", "latency"]


def test_moe_rows_keep_balanced_single_rank_calls_of_the_main_kernel(tree, tmp_path):
    dev = "NVIDIA H100 80GB HBM3"
    triton, cutlass = "sglang_fused_moe_triton", "sglang_flashinfer_cutlass_moe"

    def row(kernel, dtype, tokens, tp=2, ep=1, dist="balanced", latency=0.5):
        return ["SGLang", "0.5.14", dev, "moe", kernel, dtype, tokens, 7168, 2048, 8, 256, tp, ep, dist, latency]

    write_table(tree, "h100_sxm/moe/sglang/0.5.14/moe_perf.csv", [
        row(triton, "fp8_block", 16), row(triton, "fp8_block", 32), row(cutlass, "fp8_block", 16),
        row(triton, "fp8_block", 64, ep=2), row(triton, "fp8_block", 64, dist="power_law_1.2"),
        row(triton, "fp8_block", 64, tp=16), row(triton, "int4_wo", 64),
    ], header=MOE_HEADER)
    out = tmp_path / "out"
    r = run("--aic", str(tree), "--commit", "abc", "--date", "2026-08-21", "--gpu", "h100_sxm", "--out", str(out))
    assert r.returncode == 0, r.stderr
    moe = [x for x in rows_of(out / "h100_sxm.csv.gz") if x["kind"] == "moe"]
    # EP, power-law, TP above 8, a dtype attnsim does not model and the less-timed kernel are left out.
    assert sorted(int(x["batch"]) for x in moe) == [16, 32]
    first = next(x for x in moe if x["batch"] == "16")
    assert first["impl"] == triton and first["dtype"] == "fp8_block" and first["engine"] == "sglang"
    # hidden, the rank's slice of the expert width, experts, top-k and TP.
    assert (first["q_len"], first["kv_len"], first["heads"], first["kv_heads"], first["head_dim"]) == \
        ("7168", "1024", "256", "8", "2")
    assert first["median_us"] == "500.0000" and first["runs"] == "10"
    assert first["origin"].endswith("h100_sxm/moe/sglang/0.5.14/moe_perf.parquet")
