#!/usr/bin/env python3
"""PyTorch eager's forward passes on a GPU of the models bench_onnx's
ndgc_forward_gpu runs from their ONNX export (issue 39, item 7): the same
modules and seeds as tests/onnx/export_models.py --perf, in eval mode, under
torch.no_grad, at batch 1 and 16. Each pass ends by reading the output's sum
back, as ndgc's does. Prints one line a point: milliseconds per pass (the
median of ROUNDS rounds of passes for about MIN_TIME seconds each) and the
pass's peak device bytes above the input (torch.cuda.max_memory_allocated).

    python3 perf/torch_onnx_gpu_reference.py [--min-time 1] [--rounds 3]

PyTorch runs at its defaults (cuDNN's autotuner off, its TF32 convolutions
on, as shipped); --tf32 off turns TF32 off for convolutions too, as ndgc's
products run without it.
"""
import argparse
import importlib.util
import os
import statistics
import time

import torch


def perf_models():
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "tests", "onnx", "export_models.py")
    spec = importlib.util.spec_from_file_location("export_models", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    import torchvision.models as tv
    return [("resnet18", tv.resnet18, (3, 224, 224)),
            ("transformer", module.PerfTransformer, (64, 128)),
            ("volume", module.PerfVolume, (4, 16, 32, 32))]


def time_passes(model, x, min_time):
    def one():
        return float(model(x).sum().item())
    one()  # untimed, as ndgc's first pass
    passes, start = 0, time.perf_counter()
    while True:
        one()
        passes += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_time:
            return elapsed / passes * 1e3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--min-time", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tf32", choices=["default", "off"], default="default")
    args = parser.parse_args()
    if args.tf32 == "off":
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    device = torch.device("cuda")
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}; cudnn.allow_tf32="
          f"{torch.backends.cudnn.allow_tf32} matmul.allow_tf32={torch.backends.cuda.matmul.allow_tf32}", flush=True)
    for name, make, sample in perf_models():
        torch.manual_seed(0)
        model = make().eval().to(device)
        for batch in (1, 16):
            torch.manual_seed(1)
            with torch.no_grad():
                x = torch.randn(batch, *sample, device=device)
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
                base = torch.cuda.memory_allocated()
                times = [time_passes(model, x, args.min_time) for _ in range(args.rounds)]
                peak = (torch.cuda.max_memory_allocated() - base) / 2**20
            print(f"torch_eager_gpu/{name}/{batch}: {statistics.median(times):.3f} ms (rounds "
                  f"{', '.join(f'{t:.3f}' for t in times)}), peak {peak:.1f} MiB", flush=True)


if __name__ == "__main__":
    main()
