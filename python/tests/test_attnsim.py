"""The Python API: each call answers what the CLI's --json answers, and each error is the CLI's."""
import json
import os
import subprocess

import pytest

import attnsim

SOURCE_DIR = os.environ.get("ATTNSIM_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BINARY = os.environ.get("ATTNSIM_BINARY", os.path.join(SOURCE_DIR, "build", "attnsim"))


def cli_json(*args):
    out = subprocess.run([BINARY, "--json", *args], capture_output=True, text=True, check=False)
    return out.returncode, json.loads(out.stdout) if out.stdout.strip() else None


def test_select_answers_as_the_cli():
    answer = attnsim.select(engine="vllm", hardware="h100-sxm", model="llama-3.1-8b")
    assert answer["backend"] == "FLASH_ATTN"
    assert answer["prefill"]["variant"] == "FA3"
    code, cli = cli_json("select", "--engine", "vllm", "--hardware", "h100-sxm", "--model", "llama-3.1-8b")
    assert code == 0
    assert answer == cli


def test_select_takes_a_scenario_object():
    s = attnsim.Scenario(engine="rtp-llm", hardware="h100-sxm", model="llama-3.1-8b")
    assert s.engine == "rtp-llm" and s.phase == "decode"
    answer = attnsim.select(s)
    assert answer["prefill_backend"] == "TRT_V2"
    assert answer["decode_backend"] == "XQA"
    assert "rtp-llm" in repr(s)


def test_a_refused_selection_is_an_answer_not_an_exception():
    answer = attnsim.select(engine="vllm", hardware="a100-sxm-80g", model="deepseek-v3", backend="FLASHMLA")
    assert answer["backend"] is None
    assert answer["error"].startswith("Selected backend AttentionBackendEnum.FLASHMLA is not valid")


def test_predict_answers_as_the_cli():
    answer = attnsim.predict(hardware="h100-sxm", model="llama-3.1-8b", backend="vllm:FLASH_ATTN",
                             phase="decode", batch=32, context=4096)
    code, cli = cli_json("predict", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--backend",
                         "vllm:FLASH_ATTN", "--phase", "decode", "--batch", "32", "--context", "4096")
    assert code == 0
    assert answer == cli
    assert answer["step_us_graph"] < answer["step_us_eager"]
    assert answer["selection"]["backend"] == "FLASH_ATTN"


def test_predict_a_kernel_on_a_custom_geometry():
    answer = attnsim.predict(hardware="b200", kernel="fa4", phase="prefill", context=8192,
                             geometry={"num_heads": 40, "num_kv_heads": 8, "head_dim": 128})
    assert answer["selection"] is None
    assert answer["attention_layers"][0]["kernel"] == "fa4"
    assert answer["scenario"]["model"] == "custom"


def test_predict_a_mixed_batch():
    answer = attnsim.predict(hardware="h100-sxm", model="qwen3-8b", engine="sglang", mix="1x2048@2048,31x1@4096")
    assert answer["scenario"]["mixed"] is True
    assert len(answer["scenario"]["requests"]) == 2


def test_rank_orders_every_valid_backend():
    answer = attnsim.rank(hardware="h100-sxm", model="llama-3.1-8b", engines="vllm", batch=32, context=4096)
    steps = [r["step_us"] for r in answer["ranked"]]
    assert steps == sorted(steps)
    assert all(r["engine"] == "vllm" for r in answer["ranked"])
    assert "vllm" in answer["engine_defaults"]
    assert answer["invalid"]
    code, cli = cli_json("rank", "--engine", "vllm", "--hardware", "h100-sxm", "--model", "llama-3.1-8b",
                         "--batch", "32", "--context", "4096")
    assert answer == cli


def test_predict_and_rank_carry_the_memory_verdict():
    fits = attnsim.predict(hardware="h100-sxm", model="llama-3.1-8b", engine="vllm", batch=8, context=4096)
    assert fits["memory"]["fits"] is True
    assert 0 < fits["memory"]["need_mib"] < fits["memory"]["have_mib"]
    big = attnsim.predict(hardware="h100-sxm", model="llama-3.1-405b", engine="vllm", batch=8, context=4096)
    assert big["memory"]["fits"] is False
    assert big["memory"]["reason"] == "weights"
    assert big["memory"]["message"].startswith("does not fit")
    kernel = attnsim.predict(hardware="b200", kernel="fa4", phase="prefill", context=8192,
                             geometry={"num_heads": 40, "num_kv_heads": 8, "head_dim": 128})
    assert kernel["memory"]["fits"] is None
    ranked = attnsim.rank(hardware="h100-sxm", model="deepseek-v3", engines="vllm,sglang", batch=8, context=4096)
    assert ranked["memory"]["fits"] is False
    assert all(r["memory"]["fits"] is False for r in ranked["ranked"])


def test_check_runs_the_algorithm_against_golden():
    answer = attnsim.check(backend="vllm:FLASH_ATTN", model="llama-3.1-8b", phase="decode", flop_budget=1e6)
    assert answer["passed"] is True
    assert answer["max_rel_err"] <= answer["tolerance"]
    assert answer["hardware"] == "h100-sxm"


def test_catalog_lists_as_the_cli():
    catalog = attnsim.Catalog()
    hardware = catalog.list("hardware")
    assert "h100-sxm" in [h["id"] for h in hardware]
    assert len(catalog.hash) == 16
    code, cli = cli_json("list", "backends", "--engine", "sglang")
    assert attnsim.list("backends", engine="sglang") == cli


def test_catalog_overlay(tmp_path):
    (tmp_path / "model" / "configs").mkdir(parents=True)
    source = open(os.path.join(SOURCE_DIR, "model", "configs", "llama-3.1-8b.yaml")).read()
    (tmp_path / "model" / "configs" / "my-llama.yaml").write_text(source.replace("id: llama-3.1-8b", "id: my-llama"))
    catalog = attnsim.Catalog(str(tmp_path))
    assert "my-llama" in [m["id"] for m in catalog.list("models")]
    assert attnsim.select(engine="vllm", hardware="h100-sxm", model="my-llama", catalog=catalog)["backend"] == \
        "FLASH_ATTN"
    assert catalog.hash != attnsim.Catalog().hash


def test_unknown_id_is_a_usage_error_with_a_suggestion():
    with pytest.raises(attnsim.UsageError, match="did you mean 'llama-3.1-8b'"):
        attnsim.select(engine="vllm", hardware="h100-sxm", model="llama-3.1-8B")
    with pytest.raises(attnsim.InputError):
        attnsim.select(engine="vlm", hardware="h100-sxm", model="llama-3.1-8b")


def test_unknown_keyword_and_wrong_type_name_the_keyword():
    with pytest.raises(attnsim.UsageError, match="no scenario keyword 'contxt'.*did you mean 'context'"):
        attnsim.Scenario(hardware="h100-sxm", contxt=4096)
    with pytest.raises(attnsim.UsageError, match="batch: expected an integer"):
        attnsim.Scenario(hardware="h100-sxm", batch="many")
    with pytest.raises(attnsim.UsageError, match="--phase fill"):
        attnsim.Scenario(hardware="h100-sxm", phase="fill")
    with pytest.raises(attnsim.UsageError, match="not both"):
        attnsim.select(attnsim.Scenario(hardware="h100-sxm"), engine="vllm")


def test_q_len_that_agrees_with_the_phase_is_accepted_and_a_contradiction_refused():
    base = dict(hardware="h100-sxm", model="llama-3.1-8b", backend="vllm:FLASH_ATTN")
    assert attnsim.predict(**base, phase="decode", q_len=1, context=4096) == \
        attnsim.predict(**base, phase="decode", context=4096)
    assert attnsim.predict(**base, phase="prefill", q_len=2048, context=2048) == \
        attnsim.predict(**base, phase="prefill", context=2048)
    with pytest.raises(attnsim.UsageError, match="--q-len 4 contradicts --phase decode"):
        attnsim.Scenario(**base, phase="decode", q_len=4, context=4096)
    with pytest.raises(attnsim.UsageError, match="--q-len 100 contradicts --phase prefill with --context 2048"):
        attnsim.Scenario(**base, phase="prefill", q_len=100, context=2048)


def test_engine_refusal_is_its_own_exception():
    with pytest.raises(attnsim.EngineRefusal, match="FLASHMLA"):
        attnsim.predict(hardware="a100-sxm-80g", model="deepseek-v3", backend="vllm:FLASHMLA", batch=8)
    with pytest.raises(attnsim.EngineRefusal):
        attnsim.check(backend="vllm:FLASHMLA", model="deepseek-v3", hardware="a100-sxm-80g")
    assert issubclass(attnsim.EngineRefusal, RuntimeError)
    assert issubclass(attnsim.UsageError, ValueError)


def test_a_backend_of_another_engine_is_refused():
    with pytest.raises(attnsim.UsageError, match="names engine 'sglang' but the scenario's engine is 'vllm'"):
        attnsim.select(engine="vllm", hardware="h100-sxm", model="llama-3.1-8b", backend="sglang:fa3")


def test_catalog_error_carries_file_line_and_key(tmp_path):
    (tmp_path / "hardware" / "profiles").mkdir(parents=True)
    source = open(os.path.join(SOURCE_DIR, "hardware", "profiles", "h100-sxm.yaml")).read()
    (tmp_path / "hardware" / "profiles" / "h100-sxm.yaml").write_text(source + "memory_bandwith_gbps: 3\n")
    with pytest.raises(attnsim.CatalogError) as error:
        attnsim.Catalog(str(tmp_path))
    e = error.value
    assert e.file.endswith("hardware/profiles/h100-sxm.yaml")
    assert e.line == source.count("\n") + 1
    assert e.column == 1
    assert e.key == "memory_bandwith_gbps"
    assert "did you mean 'memory_bandwidth_gbps'" in str(e)


def test_a_study_database_that_does_not_exist_is_created_empty(tmp_path):
    db = str(tmp_path / "study.db")
    answer = attnsim.predict(hardware="h100-sxm", model="llama-3.1-8b", engine="vllm", db=db)
    assert answer == attnsim.predict(hardware="h100-sxm", model="llama-3.1-8b", engine="vllm")


def test_invalid_scenarios_raise_input_error():
    with pytest.raises(attnsim.InputError, match=r"--tp 3: .*32 query heads and 8 KV heads.*1, 2, 4, 8, 16, 32"):
        attnsim.predict(engine="vllm", hardware="h100-sxm", model="llama-3.1-8b", tp=3)
    with pytest.raises(attnsim.InputError, match="max_position_embeddings 40960"):
        attnsim.predict(engine="vllm", hardware="h100-sxm", model="qwen3-8b", context=40961)
    answer = attnsim.predict(engine="vllm", hardware="h100-sxm", model="qwen3-8b", context=40961,
                             allow_context_beyond_max_position=True)
    assert answer["step_us_graph"] > 0


# One scenario, every command: the module's dict is the CLI's --json (reports/Answers renders both).
SCENARIO = ["--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--engine", "vllm"]
TIMINGS = ("simulation_wall_s", "seconds", "points_per_second", "predictions_per_second")


def without_timings(answer):
    return {k: v for k, v in answer.items() if k not in TIMINGS}


def test_predict_at_tp_2_answers_as_the_cli_with_its_all_reduces():
    answer = attnsim.predict(hardware="h100-sxm", model="llama-3.1-8b", engine="vllm", tp=2, batch=16,
                             context=2048)
    code, cli = cli_json("predict", *SCENARIO, "--tp", "2", "--batch", "16", "--context", "2048")
    assert code == 0
    assert answer == cli
    assert answer["tp_comm_us"] > 0


def test_serve_sim_answers_as_the_cli():
    answer = attnsim.serve_sim(hardware="h100-sxm", model="llama-3.1-8b", engine="vllm", rate=4, requests=40,
                               prompt_len=512, output_len=32, warmup_requests=2, slo_ttft_ms=500)
    code, cli = cli_json("serve-sim", *SCENARIO, "--rate", "4", "--requests", "40", "--prompt-len", "512",
                         "--output-len", "32", "--warmup-requests", "2", "--slo-ttft-ms", "500")
    assert code == 0
    assert without_timings(answer) == without_timings(cli)
    assert answer["completed"] == 40 and answer["warmup_requests"] == 2
    assert isinstance(answer["meets_slo"], bool)


def test_serve_sim_speculative_decoding_answers_as_the_cli():
    spec = dict(spec_algorithm="eagle3", spec_num_steps=3, spec_accept_length=2.8)
    answer = attnsim.serve_sim(hardware="h100-sxm", model="llama-3.1-8b", engine="vllm", rate=4, requests=40,
                               prompt_len=512, output_len=32, **spec)
    code, cli = cli_json("serve-sim", *SCENARIO, "--rate", "4", "--requests", "40", "--prompt-len", "512",
                         "--output-len", "32", "--speculative-config",
                         '{"method": "eagle3", "num_speculative_tokens": 3}', "--spec-accept-length", "2.8")
    assert code == 0
    assert without_timings(answer) == without_timings(cli)
    plain = attnsim.serve_sim(hardware="h100-sxm", model="llama-3.1-8b", engine="vllm", rate=4, requests=40,
                              prompt_len=512, output_len=32)
    assert answer["total_output_tokens"] == plain["total_output_tokens"]
    assert answer["steps"] < plain["steps"]  # 2.8 tokens per verify step


def test_serve_sim_refuses_a_bad_serving_keyword_by_name():
    with pytest.raises(attnsim.UsageError, match="rate"):
        attnsim.serve_sim(hardware="h100-sxm", model="llama-3.1-8b", engine="vllm", rate=-1)
    with pytest.raises(attnsim.UsageError, match="no scenario keyword 'rates'"):
        attnsim.serve_sim(hardware="h100-sxm", model="llama-3.1-8b", engine="vllm", rates=1)


def stored_rows(db, sql):
    import sqlite3
    with sqlite3.connect(db) as connection:
        return connection.execute(sql).fetchall()


def test_serve_sim_replays_a_trace_with_goodput_as_the_cli(tmp_path):
    trace = tmp_path / "trace.csv"
    trace.write_text("arrival_s,prompt_tokens,output_tokens\n0.0,512,16\n0.1,1024,32\n0.25,256,8\n0.4,2048,24\n")
    answer = attnsim.serve_sim(hardware="h100-sxm", model="llama-3.1-8b", engine="vllm", trace=str(trace),
                               goodput="ttft:200 tpot:30", write_trace=str(tmp_path / "py.csv"))
    code, cli = cli_json("serve-sim", *SCENARIO, "--trace", str(trace), "--goodput", "ttft:200", "--goodput",
                         "tpot:30", "--write-trace", str(tmp_path / "cli.csv"))
    assert code == 0
    assert without_timings(answer) == without_timings(cli)
    assert answer["completed"] == 4
    assert (tmp_path / "py.csv").read_text() == (tmp_path / "cli.csv").read_text()
    with pytest.raises(attnsim.UsageError, match="goodput e2e:100"):
        attnsim.serve_sim(hardware="h100-sxm", model="llama-3.1-8b", engine="vllm", goodput="e2e:100")


def test_serve_sim_generates_the_shared_prefix_dataset_as_the_cli():
    keywords = dict(dataset_name="generated-shared-prefix", gsp_num_groups=2, gsp_prompts_per_group=3,
                    gsp_system_prompt_len=1024, gsp_question_len=64, gsp_output_len=16, gsp_range_ratio=0.5,
                    gsp_ordered=True, rate=8)
    answer = attnsim.serve_sim(hardware="h100-sxm", model="llama-3.1-8b", engine="sglang", **keywords)
    code, cli = cli_json("serve-sim", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--engine", "sglang",
                         "--dataset-name", "generated-shared-prefix", "--gsp-num-groups", "2",
                         "--gsp-prompts-per-group", "3", "--gsp-system-prompt-len", "1024", "--gsp-question-len",
                         "64", "--gsp-output-len", "16", "--gsp-range-ratio", "0.5", "--gsp-ordered", "--rate", "8")
    assert code == 0
    assert without_timings(answer) == without_timings(cli)
    assert answer["completed"] == 6
    with pytest.raises(attnsim.UsageError, match="dataset_name excludes lengths"):
        attnsim.serve_sim(hardware="h100-sxm", model="llama-3.1-8b", engine="vllm", dataset_name="random",
                          lengths="fixed")


def test_serve_sim_generates_the_sonnet_dataset_as_the_cli():
    answer = attnsim.serve_sim(hardware="h100-sxm", model="llama-3.1-8b", engine="vllm", dataset_name="sonnet",
                               sonnet_input_len=700, sonnet_output_len=20, sonnet_prefix_len=300, requests=6,
                               rate=8)
    code, cli = cli_json("serve-sim", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--engine", "vllm",
                         "--dataset-name", "sonnet", "--sonnet-input-len", "700", "--sonnet-output-len", "20",
                         "--sonnet-prefix-len", "300", "--num-prompts", "6", "--rate", "8")
    assert code == 0
    assert without_timings(answer) == without_timings(cli)
    assert answer["total_input_tokens"] == 6 * 700


def test_serve_sim_and_capacity_search_store_their_runs_as_the_cli(tmp_path):
    py_db, cli_db = str(tmp_path / "py.db"), str(tmp_path / "cli.db")
    attnsim.serve_sim(hardware="h100-sxm", model="llama-3.1-8b", engine="vllm", rate=4, requests=20,
                      prompt_len=512, output_len=16, db=py_db)
    code, _ = cli_json("serve-sim", *SCENARIO, "--rate", "4", "--requests", "20", "--prompt-len", "512",
                       "--output-len", "16", "--db", cli_db)
    assert code == 0
    search = dict(hardware="h100-sxm", model="llama-3.1-8b", engine="vllm", requests=40, prompt_len=512,
                  output_len=16)
    attnsim.capacity_search(db=py_db, **search)
    code, _ = cli_json("capacity", "search", *SCENARIO, "--requests", "40", "--prompt-len", "512", "--output-len",
                       "16", "--db", cli_db)
    assert code == 0
    for sql in ["SELECT hardware, model, engine, backend, tp, max_rate_rps, kv_tokens FROM capacity_configs ORDER BY id",
                "SELECT config, kind, arrivals, rate, meets_slo FROM serve_runs ORDER BY id",
                "SELECT COUNT(*) FROM serve_requests", "SELECT COUNT(*) FROM serve_timeline"]:
        assert stored_rows(py_db, sql) == stored_rows(cli_db, sql), sql
    assert len(stored_rows(py_db, "SELECT id FROM serve_runs")) > 1


def test_sweep_runs_one_shard_as_the_cli(tmp_path):
    spec = os.path.join(SOURCE_DIR, "tests", "data", "reports", "axis.yaml")
    answer = attnsim.sweep(spec, db=str(tmp_path / "py.db"), jobs=1, shard="2/3")
    code, cli = cli_json("sweep", spec, "--db", str(tmp_path / "cli.db"), "--jobs", "1", "--shard", "2/3")
    assert code == 0
    assert without_timings(answer) == {**without_timings(cli), "db": str(tmp_path / "py.db")}
    whole = attnsim.sweep(spec, db=str(tmp_path / "whole.db"), jobs=1)
    assert 0 < answer["written"] < whole["written"]
    with pytest.raises(attnsim.UsageError, match="shard"):
        attnsim.sweep(spec, db=str(tmp_path / "bad.db"), shard="4/3")


def test_capacity_memory_answers_as_the_cli():
    answer = attnsim.capacity_memory(hardware="h100-sxm", model="llama-3.1-8b", engine="vllm")
    code, cli = cli_json("capacity", "memory", *SCENARIO)
    assert code == 0
    assert answer == cli
    assert answer["weights_fit"] is True and answer["kv_tokens"] > 0
    big = attnsim.capacity_memory(hardware="h100-sxm", model="llama-3.1-405b", engine="vllm")
    assert big["weights_fit"] is False


def test_capacity_search_answers_as_the_cli_with_the_band():
    answer = attnsim.capacity_search(hardware="h100-sxm", model="llama-3.1-8b", engine=["vllm", "sglang"], tp=1,
                                     requests=60, prompt_len=1024, output_len=64, target_rate=10)
    code, cli = cli_json("capacity", "search", *SCENARIO[:4], "--engine", "vllm,sglang", "--requests", "60",
                         "--prompt-len", "1024", "--output-len", "64", "--target-rate", "10")
    assert code == 0
    assert answer == cli
    assert [row["engine"] for row in answer] == ["vllm", "sglang"]
    for row in answer:
        slow, fast = row["max_rate_band_rps"]
        assert slow <= row["max_rate_rps"] <= fast
        assert row["gpus_for_target"] >= 1


def test_sweep_and_its_reports_answer_as_the_cli(tmp_path):
    spec = os.path.join(SOURCE_DIR, "tests", "data", "reports", "axis.yaml")
    answer = attnsim.sweep(spec, db=str(tmp_path / "py.db"), jobs=1)
    code, cli = cli_json("sweep", spec, "--db", str(tmp_path / "cli.db"), "--jobs", "1")
    assert code == 0
    assert without_timings(answer) == {**without_timings(cli), "db": str(tmp_path / "py.db")}
    assert answer["written"] == answer["points"] > 0
    for what, flags, whatif in [("priorities", [], None), ("matrix", [], None),
                                ("whatif", ["--axis", "kv_dtype"], attnsim.WhatIf(axis="kv_dtype"))]:
        kwargs = {"whatif": whatif} if whatif else {}
        report = attnsim.report(what, db=str(tmp_path / "cli.db"), out=str(tmp_path / "py"), **kwargs)
        code, cli = cli_json("report", what, "--db", str(tmp_path / "cli.db"), "--out", str(tmp_path / "cli"),
                             *flags)
        assert code == 0, what
        assert report == cli, what
        assert (tmp_path / "py" / f"{what}.json").exists()
