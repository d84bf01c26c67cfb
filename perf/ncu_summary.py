#!/usr/bin/env python3
"""Sums `ncu --metrics gpu__time_duration.sum --print-summary per-kernel` output
by kernel: the GPU time each kernel took over the profiled run, largest first.

    ncu --metrics gpu__time_duration.sum --print-summary per-kernel PROGRAM ... > ncu.txt
    python3 perf/ncu_summary.py ncu.txt [--top 25]

Prints `total_us` (every kernel's time added), then one line per kernel:
total microseconds, invocations, mean microseconds, name (shortened).
Standard library only: it runs on a GPU machine."""
import argparse
import re


def rows(text):
    name, calls = None, 1
    for line in text.splitlines():
        m = re.match(r"^  (\S.*?)\s+\(\d+, \d+, \d+\)x\(\d+, \d+, \d+\)", line)
        if m:
            n = re.search(r"Invocations (\d+)", line)
            name, calls = m.group(1), int(n.group(1)) if n else 1
            continue
        if "gpu__time_duration.sum" in line and name:
            parts = line.split()
            unit, mean = parts[1], float(parts[3].replace(",", ""))
            us = mean * {"ms": 1000.0, "us": 1.0, "ns": 0.001, "s": 1e6}.get(unit, 1.0)
            yield us * calls, calls, us, name
            name = None


def main():
    a = argparse.ArgumentParser()
    a.add_argument("file")
    a.add_argument("--top", type=int, default=25)
    o = a.parse_args()
    found = sorted(rows(open(o.file).read()), reverse=True)
    print(f"total_us {sum(r[0] for r in found):.0f}")
    for total, calls, mean, name in found[: o.top]:
        print(f"{total:9.0f} {calls:5d} {mean:9.1f}  {name[:110]}")


if __name__ == "__main__":
    main()
