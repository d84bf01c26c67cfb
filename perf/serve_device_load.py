#!/usr/bin/env python3
"""Throughput of ndgc-serve with dynamic batching off and on, where wrk is not
installed (a GPU machine): PROCESSES client processes, each with THREADS
keep-alive connections, post one 784-float row per request for SECONDS.

    perf/serve_device_load.py --serve build/tools/ndgc-serve --model cnn.model [--device gpu]
                              [--processes 8] [--threads 8] [--seconds 5] [--delay-us 200]

Runs the server twice, --max-batch-size 1 then 32 (both with
--max-queue-delay-us DELAY), and prints requests/s, the mean rows per batch
(/metrics) and the ratio. Standard library only."""
import argparse
import http.client
import multiprocessing
import re
import signal
import threading
import time

import serve_process


def client(host, port, body, seconds, threads, out):
    count = [0] * threads
    stop = time.monotonic() + seconds

    def run(i):
        conn = http.client.HTTPConnection(host, port)
        while time.monotonic() < stop:
            conn.request("POST", "/v2/models/m/infer", body, {"Content-Type": "application/json"})
            r = conn.getresponse()
            r.read()
            if r.status == 200:
                count[i] += 1
        conn.close()

    ts = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    out.put(sum(count))


def metrics(host, port):
    conn = http.client.HTTPConnection(host, port)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    total = sum(float(v) for v in re.findall(r"^ndgc_batch_size_sum\{[^}]*\} (\S+)$", text, re.M))
    count = sum(float(v) for v in re.findall(r"^ndgc_batch_size_count\{[^}]*\} (\S+)$", text, re.M))
    return total / count if count else float("nan")


def measure(o, batch):
    options = ["--max-batch-size", str(batch), "--max-queue-delay-us", str(o.delay_us)] + o.extra.split()
    proc, host, port = serve_process.start(o.serve, o.model, o.device, options)
    body = serve_process.infer_body([0.5] * 784)
    out = multiprocessing.Queue()
    ps = [multiprocessing.Process(target=client, args=(host, port, body, o.seconds, o.threads, out))
          for _ in range(o.processes)]
    start = time.monotonic()
    for p in ps:
        p.start()
    done = sum(out.get() for _ in ps)
    for p in ps:
        p.join()
    elapsed = time.monotonic() - start
    rows = metrics(host, port)
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=60)
    return done / elapsed, rows, code


def main():
    a = argparse.ArgumentParser()
    serve_process.add_server_arguments(a)
    a.add_argument("--processes", type=int, default=8)
    a.add_argument("--threads", type=int, default=8)
    a.add_argument("--seconds", type=float, default=5)
    a.add_argument("--delay-us", type=int, default=200)
    o = a.parse_args()
    results = {}
    print(f"--device {o.device}, {o.processes * o.threads} connections, {o.seconds} s each, --max-queue-delay-us {o.delay_us}")
    print("| dynamic batching | requests/s | mean rows per batch | exit |")
    print("|---|---|---|---|")
    for batch in (1, 32):
        rps, rows, code = measure(o, batch)
        results[batch] = rps
        print(f"| --max-batch-size {batch} | {rps:.0f} | {rows:.1f} | {code} |", flush=True)
    print(f"on / off: {results[32] / results[1]:.2f}x")


if __name__ == "__main__":
    main()
