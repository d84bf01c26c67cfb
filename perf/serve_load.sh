#!/usr/bin/env bash
# ndgc-serve's figures (issue 28), with wrk over loopback, side by side in one run:
#
#   perf/serve_load.sh [BUILD_DIR]      (default build/; wrk: tools/bootstrap --perf)
#
# 1. Latency of one 784-float row at concurrency 1 (wrk -t1 -c1 --latency):
#    p50 and p99, beside the in-process Predictor::predict of the same row
#    (perf/predict_latency.cpp), and the difference: the server's overhead.
# 2. Throughput at concurrency 64 (wrk -t2 -c64): dynamic batching on
#    (--max-batch-size 32) against off (--max-batch-size 1).
# 3. Memory across REQUESTS requests (default 100,000), in rounds of
#    ROUND_SECONDS (default 2) of wrk -t2 -c8: the server's RSS and /metrics'
#    ndgc_live_arrays and ndgc_memory_bytes_in_use after each round, with
#    --autoclose on, then --leak translator under --autoclose trace (the
#    tracing detector: ndgc-serve-trace, when built) and off.
#
# The model is ndgc-train --model MODEL (default mlp; cnn, lstm) trained for
# 200 batches and saved (ndgc-train --save). DURATION
# (default 10) is the seconds of each wrk run in 1 and 2. SERVE_ARGS: more
# ndgc-serve options for every run (e.g. "--max-queue-delay-us 1", which
# sends every request through a worker: Note [Inline batches] in
# src/serving/batcher.hpp). The server and wrk share the machine's cores, as
# a sidecar load generator would.
set -euo pipefail
cd "$(dirname "$0")/.."
b=${1:-build}
duration=${DURATION:-10}
requests=${REQUESTS:-100000}
round_seconds=${ROUND_SECONDS:-2}
model=${MODEL:-mlp}
command -v wrk >/dev/null || { echo "perf/serve_load.sh: wrk is not installed (tools/bootstrap --perf)" >&2; exit 2; }
for p in tools/ndgc-train tools/ndgc-serve perf/bench_predict_latency; do
  [[ -x $b/$p ]] || { echo "perf/serve_load.sh: $b/$p is not built" >&2; exit 2; }
done
tmp=$(mktemp -d)
pid=
stop_server() {
  if [[ -n $pid ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  pid=
}
trap 'stop_server; rm -rf "$tmp"' EXIT

"$b/tools/ndgc-train" --model "$model" --epochs 1 --limit-batches 200 --save "$tmp/model.ndgc" --out "$tmp/train" >/dev/null
# The request (every input 0.5) and a wrk script that posts it.
python3 - "$tmp" <<'PY'
import json, sys
body = json.dumps({"inputs": [{"name": "input", "shape": [1, 784], "datatype": "FP32", "data": [0.5] * 784}]})
with open(sys.argv[1] + "/post.lua", "w") as f:
    f.write("wrk.method = 'POST'\n")
    f.write("wrk.headers['Content-Type'] = 'application/json'\n")
    f.write("wrk.body = '" + body + "'\n")
PY

# start_server ARGS...: ndgc-serve on a free port; sets pid and url.
start_server() {
  # shellcheck disable=SC2086 # SERVE_ARGS: words
  "$b/tools/ndgc-serve" --model "$model=$tmp/model.ndgc" --port 0 ${SERVE_ARGS:-} "$@" >"$tmp/serve.out" 2>"$tmp/serve.err" &
  pid=$!
  for _ in $(seq 100); do
    url=$(sed -n 's/^listening on //p' "$tmp/serve.out")
    [[ -n $url ]] && return 0
    sleep 0.1
  done
  cat "$tmp/serve.err" >&2
  echo "perf/serve_load.sh: ndgc-serve did not start" >&2
  exit 1
}
infer() { echo "$url/v2/models/$model/infer"; }
# The figures from wrk's report: requests/s, and latency percentiles in µs.
wrk_rps() { awk '/^Requests\/sec/ {print $2}' "$1"; }
wrk_pct() { awk -v p="$2" '$1 == p {v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v);
  f = (u == "us") ? 1 : (u == "ms") ? 1000 : 1e6; printf "%.0f", v * f}' "$1"; }
metric() { curl -s "$url/metrics" | awk -v m="$1" '$1 == m {printf "%.0f", $2}'; }
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$pid/status"; }
# The server's context switches (every thread) and CPU milliseconds so far.
switches() { cat /proc/"$pid"/task/*/status | awk '/ctxt_switches/ {n += $2} END {print n}'; }
cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{print int(($14 + $15) * 1000 / hz)}' "/proc/$pid/stat"; }

echo "model: $model; machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
echo
echo "## 1. latency, one row, concurrency 1 ($duration s)"
"$b/perf/bench_predict_latency" "$tmp/model.ndgc" >"$tmp/predict.txt"
start_server
sw0=$(switches) cpu0=$(cpu_ms)
wrk -t1 -c1 -d"${duration}s" --latency -s "$tmp/post.lua" "$(infer)" >"$tmp/c1.txt"
n=$(awk '/requests in/ {print $1}' "$tmp/c1.txt")
per_request=$(awk -v s=$(($(switches) - sw0)) -v c=$(($(cpu_ms) - cpu0)) -v n="$n" \
  'BEGIN {printf "%.1f context switches and %.0f µs of CPU", s / n, c * 1000 / n}')
stop_server
p50=$(wrk_pct "$tmp/c1.txt" 50%)
p99=$(wrk_pct "$tmp/c1.txt" 99%)
in50=$(awk '$1 == "predict_p50_us" {printf "%.0f", $2}' "$tmp/predict.txt")
in99=$(awk '$1 == "predict_p99_us" {printf "%.0f", $2}' "$tmp/predict.txt")
echo "| | p50 µs | p99 µs |"
echo "|---|---|---|"
echo "| ndgc-serve, HTTP over loopback | $p50 | $p99 |"
echo "| Predictor::predict in process | $in50 | $in99 |"
echo "| server overhead | $((p50 - in50)) | $((p99 - in99)) |"
echo "requests/s at concurrency 1: $(wrk_rps "$tmp/c1.txt"); the server spent $per_request per request"
echo
echo "## 2. throughput, concurrency 64 ($duration s each)"
echo "| dynamic batching | requests/s | p50 µs | p99 µs | mean rows per batch |"
echo "|---|---|---|---|---|"
for size in 1 32; do
  start_server --max-batch-size "$size"
  wrk -t2 -c64 -d"${duration}s" --latency -s "$tmp/post.lua" "$(infer)" >"$tmp/c64-$size.txt"
  rows=$(curl -s "$url/metrics" | awk '$1 ~ /^ndgc_batch_size_sum/ {s = $2} $1 ~ /^ndgc_batch_size_count/ {c = $2}
    END {if (c > 0) printf "%.1f", s / c; else print "?"}')
  stop_server
  echo "| $([[ $size == 1 ]] && echo "off (--max-batch-size 1)" || echo "on (--max-batch-size 32)") |" \
    "$(wrk_rps "$tmp/c64-$size.txt") | $(wrk_pct "$tmp/c64-$size.txt" 50%) | $(wrk_pct "$tmp/c64-$size.txt" 99%) | $rows |"
done
off=$(wrk_rps "$tmp/c64-1.txt")
on=$(wrk_rps "$tmp/c64-32.txt")
echo "on / off: $(awk -v a="$on" -v b="$off" 'BEGIN {printf "%.2f", a / b}')x"
echo
echo "## 3. memory across $requests requests (wrk -t2 -c8, rounds of $round_seconds s)"
modes=("on")
[[ -x $b/tools/ndgc-serve-trace ]] && modes+=("trace --leak translator")
modes+=("off --leak translator")
for mode in "${modes[@]}"; do
  # shellcheck disable=SC2086
  start_server --autoclose $mode
  echo "### --autoclose $mode"
  echo "| requests | RSS KiB | ndgc_live_arrays | ndgc_memory_bytes_in_use | non-200 |"
  echo "|---|---|---|---|---|"
  done_requests=0
  row() { echo "| $done_requests | $(rss_kib) | $(metric ndgc_live_arrays) | $(metric 'ndgc_memory_bytes_in_use{device="cpu"}') | ${1:-} |"; }
  row
  while ((done_requests < requests)); do
    wrk -t2 -c8 -d"${round_seconds}s" -s "$tmp/post.lua" "$(infer)" >"$tmp/mem.txt"
    done_requests=$((done_requests + $(awk '/requests in/ {print $1}' "$tmp/mem.txt")))
    row "$(awk '/Non-2xx/ {print $NF}' "$tmp/mem.txt")"
  done
  stop_server
done
