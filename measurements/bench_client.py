"""What the benchmark client itself costs per request and per streamed chunk (issue 28, docs/CAPACITY.md
"The front end and the client as serial resources").

    python3 measurements/bench_client.py --request-func PATH --out bench_client.csv

`vllm bench serve` reads every stream in one Python asyncio loop: its request function
(vllm/benchmarks/lib/endpoint_request_func.py async_request_openai_chat_completions) splits the SSE bytes
into messages, parses each chunk's JSON and timestamps it. This script runs that very function (its file
passed with --request-func; it is vLLM's code, not in this repository) against a local aiohttp server that
streams OpenAI chat-completion chunks, and times the client's process:

- cost rows (`kind` cost): S streams of M chunks each, the server writing as fast as it can (several server
  processes on their own cores, so the client is the bottleneck). client_cpu_us is the client process's
  CPU time (time.process_time) over the run; per-request and per-chunk costs are the least-squares fit of
  client_cpu_us = a x requests + b x chunks over these rows (printed last).
- rhythm rows (`kind` rhythm): S streams whose chunks the server writes together every `interval_ms`, as an
  engine's steps emit one token to every running stream; mean_itl_ms is the client's own ITL (as the
  benchmark computes it), which grows past the interval once S x b exceeds it.

The client runs plain asyncio, one process, one aiohttp session with a connector of no limit, as the
benchmark's `benchmark()` does with --request-rate inf and no --max-concurrency.
"""
import argparse
import asyncio
import csv
import datetime
import importlib.util
import json
import multiprocessing as mp
import os
import platform
import socket
import statistics
import sys
import time

import aiohttp
from aiohttp import web

PORT = 18431
COLUMNS = ["date", "host_cpu", "python", "aiohttp", "kind", "streams", "chunks_per_stream", "interval_ms",
           "requests", "chunks", "wall_s", "client_cpu_s", "client_cpu_us_per_chunk", "mean_ttft_ms",
           "mean_itl_ms", "p99_itl_ms", "failed"]


def chunk_json(i, text):
    return json.dumps({"id": "chatcmpl-0123456789abcdef", "object": "chat.completion.chunk", "created": 1764200000,
                       "model": "model", "choices": [{"index": 0, "delta": {"content": text}, "logprobs": None,
                                                      "finish_reason": None}]})


async def handle(request):
    body = await request.json()
    m = int(body["max_completion_tokens"])
    interval = float(body.get("interval_ms", 0)) / 1000
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    t0 = float(body.get("t0", 0))
    for i in range(m):
        if interval > 0:  # every stream writes on the same clock: one "step" every interval
            now = time.time()
            await asyncio.sleep(interval - (now - t0) % interval)
        await resp.write(f"data: {chunk_json(i, ' word')}\n\n".encode())
    usage = {"id": "chatcmpl-0123456789abcdef", "object": "chat.completion.chunk", "choices": [],
             "usage": {"prompt_tokens": 128, "completion_tokens": m, "total_tokens": 128 + m}}
    await resp.write(f"data: {json.dumps(usage)}\n\n".encode())
    await resp.write(b"data: [DONE]\n\n")
    await resp.write_eof()
    return resp


def serve(core):
    os.sched_setaffinity(0, {core})
    app = web.Application(client_max_size=1 << 24)
    app.router.add_post("/v1/chat/completions", handle)
    web.run_app(app, host="127.0.0.1", port=PORT, reuse_port=True, print=None, access_log=None, backlog=4096)


def load_request_func(path):
    spec = importlib.util.spec_from_file_location("endpoint_request_func", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


async def run_client(mod, streams, m, interval_ms):
    url = f"http://127.0.0.1:{PORT}/v1/chat/completions"
    connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300, keepalive_timeout=60)
    t0 = time.time() + 0.05
    async with aiohttp.ClientSession(connector=connector, timeout=mod.AIOHTTP_TIMEOUT) as session:
        inputs = [mod.RequestFuncInput(prompt="hello " * 100, api_url=url, prompt_len=128, output_len=m,
                                       model="model", extra_body={"interval_ms": interval_ms, "t0": t0})
                  for _ in range(streams)]
        c0, w0 = time.process_time(), time.perf_counter()
        outs = await asyncio.gather(*[mod.async_request_openai_chat_completions(x, session) for x in inputs])
        c1, w1 = time.process_time(), time.perf_counter()
    itl = [v for o in outs for v in o.itl]
    ttft = [o.ttft for o in outs if o.success]
    failed = sum(1 for o in outs if not o.success)
    return c1 - c0, w1 - w0, ttft, itl, failed


def row(kind, streams, m, interval_ms, result):
    cpu, wall, ttft, itl, failed = result
    chunks = streams * m
    itl_sorted = sorted(itl)
    return {"date": datetime.date.today().isoformat(), "host_cpu": platform.processor() or platform.machine(),
            "python": platform.python_version(), "aiohttp": aiohttp.__version__, "kind": kind, "streams": streams,
            "chunks_per_stream": m, "interval_ms": interval_ms, "requests": streams, "chunks": chunks,
            "wall_s": f"{wall:.4f}", "client_cpu_s": f"{cpu:.4f}", "client_cpu_us_per_chunk": f"{cpu / chunks * 1e6:.2f}",
            "mean_ttft_ms": f"{statistics.mean(ttft) * 1e3:.3f}" if ttft else "",
            "mean_itl_ms": f"{statistics.mean(itl) * 1e3:.3f}" if itl else "",
            "p99_itl_ms": f"{itl_sorted[int(0.99 * (len(itl_sorted) - 1))] * 1e3:.3f}" if itl else "", "failed": failed}


def fit(rows):
    # least squares of cpu_us = a * requests + b * chunks (no intercept)
    xs = [(float(r["requests"]), float(r["chunks"]), float(r["client_cpu_s"]) * 1e6) for r in rows]
    s11 = sum(x * x for x, _, _ in xs)
    s12 = sum(x * y for x, y, _ in xs)
    s22 = sum(y * y for _, y, _ in xs)
    t1 = sum(x * c for x, _, c in xs)
    t2 = sum(y * c for _, y, c in xs)
    det = s11 * s22 - s12 * s12
    return (t1 * s22 - t2 * s12) / det, (s11 * t2 - s12 * t1) / det


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--request-func", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--servers", type=int, default=6)
    args = ap.parse_args()
    mod = load_request_func(args.request_func)
    cores = sorted(os.sched_getaffinity(0))
    servers = [mp.Process(target=serve, args=(cores[1 + i % (len(cores) - 1)],), daemon=True)
               for i in range(args.servers)]
    for p in servers:
        p.start()
    os.sched_setaffinity(0, {cores[0]})
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", PORT), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    rows = []
    asyncio.run(run_client(mod, 8, 8, 0))  # warm-up: imports, connections
    for streams, m in [(1, 1), (1, 256), (64, 1), (64, 64), (256, 1), (256, 64), (1024, 1), (1024, 32)]:
        for _ in range(2):
            rows.append(row("cost", streams, m, 0, asyncio.run(run_client(mod, streams, m, 0))))
            print(rows[-1], flush=True)
    for streams in [16, 128, 256, 512, 1024]:
        rows.append(row("rhythm", streams, 40, 20, asyncio.run(run_client(mod, streams, 40, 20))))
        print(rows[-1], flush=True)
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    a, b = fit([r for r in rows if r["kind"] == "cost"])
    print(f"fit: per request {a:.1f} us, per chunk {b:.2f} us (client CPU, {platform.python_version()}, aiohttp "
          f"{aiohttp.__version__})")
    for p in servers:
        p.terminate()


if __name__ == "__main__":
    sys.exit(main())
