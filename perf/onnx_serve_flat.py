#!/usr/bin/python3
"""ndgc-serve serving an ONNX graph for many requests: live arrays and bytes in
use after warm-up against after all of them, and the server's RSS.

    /usr/bin/python3 perf/onnx_serve_flat.py BUILD_DIR MODEL.onnx SHAPE [REQUESTS] [-- SERVER ARGS]

SHAPE is one request's input shape, e.g. 1,3,64,64. Prints one line per
checkpoint and exits 1 when arrays or bytes moved after warm-up or RSS grew
by more than 1 %.
"""
import http.client
import json
import re
import subprocess
import sys
import time


def metric(text, name):
    m = re.search(r"^" + name + r"(?:\{[^}]*\})? ([0-9.e+]+)$", text, re.M)
    return float(m.group(1))


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def main():
    build, model, shape = sys.argv[1], sys.argv[2], [int(d) for d in sys.argv[3].split(",")]
    requests = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[4] != "--" else 10000
    extra = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    server = subprocess.Popen([f"{build}/tools/ndgc-serve", "--model", f"m={model}", "--port", "0"] + extra,
                              stdout=subprocess.PIPE, text=True)
    port = int(server.stdout.readline().strip().rsplit(":", 1)[1])
    conn = http.client.HTTPConnection("127.0.0.1", port)
    meta = json.loads((conn.request("GET", "/v2/models/m"), conn.getresponse().read())[1])
    name = meta["inputs"][0]["name"]
    count = 1
    for d in shape:
        count *= d
    body = json.dumps({"inputs": [{"name": name, "shape": shape, "datatype": "FP32",
                                   "data": [((i * 37) % 101) / 101.0 for i in range(count)]}]})

    def run(n):
        for _ in range(n):
            conn.request("POST", "/v2/models/m/infer", body=body, headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            r.read()
            assert r.status == 200, r.status

    def checkpoint(label):
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
        arrays, used = metric(text, "ndgc_live_arrays"), metric(text, "ndgc_memory_bytes_in_use")
        rss = rss_kib(server.pid)
        print(f"{label}: live arrays {arrays:.0f}, bytes in use {used:.0f}, RSS {rss} KiB", flush=True)
        return arrays, used, rss

    run(500)
    warm = checkpoint("after 500 warm-up requests")
    start = time.time()
    run(requests)
    seconds = time.time() - start
    after = checkpoint(f"after {requests} more ({requests / seconds:.0f} requests/s)")
    server.terminate()
    code = server.wait()
    growth = (after[2] - warm[2]) / warm[2]
    print(f"RSS growth {100 * growth:.2f} %; server exit {code}")
    sys.exit(0 if after[0] == warm[0] and after[1] == warm[1] and growth <= 0.01 and code == 0 else 1)


if __name__ == "__main__":
    main()
