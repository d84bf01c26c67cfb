#!/usr/bin/env python3
"""ndgc-serve on a device against ndgc-serve on the CPU (issue 28): the same
model file served twice, the same rows posted to both over keep-alive HTTP.

    perf/serve_device_check.py --serve build/tools/ndgc-serve --model mlp.model [--device gpu] [--requests 2000]
        [--extra "--precision bf16" --tolerance 0.05]

Checks, each printed as PASS or FAIL (exit 1 on any FAIL):
- every answer of the device server equals the CPU server's within
  --tolerance (default 1e-4; 16-bit servers round each layer's output on
  both devices, so their answers are a few 16-bit units apart);
- the device's bytes in use (/metrics, ndgc_memory_bytes_in_use{device=...})
  and ndgc_live_arrays after the requests equal those after warm-up;
- SIGTERM: both exit 0 (no array left).
Prints the p50 and p99 latency of each server at concurrency 1.
Standard library only: it runs where only Python is (a GPU machine)."""
import argparse
import http.client
import json
import random
import re
import signal
import sys
import time

import serve_process

failures = 0


def check(ok, what):
    global failures
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures += 1


class Server:
    def __init__(self, serve, model, device, extra):
        self.proc, host, port = serve_process.start(serve, model, device, extra)
        self.conn = http.client.HTTPConnection(host, port)
        self.device = device

    def infer(self, row):
        self.conn.request("POST", "/v2/models/m/infer", serve_process.infer_body(row), {"Content-Type": "application/json"})
        r = self.conn.getresponse()
        data = r.read()
        if r.status != 200:
            sys.exit(f"--device {self.device}: status {r.status}: {data[:200]!r}")
        return json.loads(data)["outputs"][0]["data"]

    def metric(self, series):
        self.conn.request("GET", "/metrics")
        text = self.conn.getresponse().read().decode()
        m = re.search("^" + re.escape(series) + r" (\S+)$", text, re.M)
        return float(m.group(1)) if m else None

    def stop(self):
        self.conn.close()
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=60)
        check(code == 0, f"--device {self.device}: SIGTERM, exit {code}" + ("" if code == 0 else ": " + self.proc.stderr.read()[-2000:]))


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p / 100))]


def main():
    a = argparse.ArgumentParser()
    serve_process.add_server_arguments(a)
    a.add_argument("--requests", type=int, default=2000)
    a.add_argument("--features", type=int, default=784)
    a.add_argument("--tolerance", type=float, default=1e-4, help="largest relative difference allowed")
    o = a.parse_args()
    extra = o.extra.split()
    rng = random.Random(5)
    rows = [[round(rng.random(), 4) for _ in range(o.features)] for _ in range(64)]
    servers = [Server(o.serve, o.model, "cpu", extra), Server(o.serve, o.model, o.device, extra)]
    cpu, dev = servers
    for s in servers:
        s.infer(rows[0])  # warm-up
    label = "gpu:0" if o.device == "gpu" else o.device  # as ndgc-serve's --device spells it (device_argument)
    bytes_series = f'ndgc_memory_bytes_in_use{{device="{label}"}}'
    before = (dev.metric(bytes_series), dev.metric("ndgc_live_arrays"))
    check(before[0] is not None, f"/metrics has {bytes_series}")
    worst = 0.0
    latency = {s.device: [] for s in servers}
    for i in range(o.requests):
        row = rows[i % len(rows)]
        answers = []
        for s in servers:
            t = time.perf_counter()
            answers.append(s.infer(row))
            latency[s.device].append(time.perf_counter() - t)
        worst = max(worst, max(abs(x - y) / (1 + abs(x)) for x, y in zip(*answers)))
    check(worst <= o.tolerance, f"{o.requests} answers: --device {o.device} equals --device cpu, largest relative difference {worst:.2e}")
    after = (dev.metric(bytes_series), dev.metric("ndgc_live_arrays"))
    check(after == before, f"device bytes in use and live arrays after warm-up {before}, after {o.requests} requests {after}")
    for d, v in latency.items():
        print(f"--device {d}: p50 {percentile(v, 50) * 1e6:.0f} us, p99 {percentile(v, 99) * 1e6:.0f} us per request (HTTP, one row, concurrency 1)")
    for s in servers:
        s.stop()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
