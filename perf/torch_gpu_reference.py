#!/usr/bin/env python3
"""PyTorch's side of the GPU comparisons in perf/RESULTS.md (issues 12 and 14).

Runs on a machine with a CUDA GPU and PyTorch (the device machine's image has
both); ndgc is not involved. What it times mirrors an ndgc benchmark:

  small-op   c = a + a on a 64x64 float32 array, synchronised every 256
             ops: bench_gpu's BM_SmallOpOverhead.
  mlp-epoch  one epoch of ndgc-train's model (784-128-64-10, ReLU, softmax
             cross entropy, Adam 1e-3, batch 32, Fashion-MNIST, shuffled;
             `--model cnn|lstm` for `ndgc-train --model cnn|lstm`'s models,
             printed as cnn-epoch and lstm-epoch):
             the data stays on the host and each batch is copied over, as in
             `ndgc-train --device gpu`; the loss is read once per epoch, and
             each epoch ends with a pass over the 10,000 test images, as
             ndgc-train's epoch seconds do. Eager, and with the training step
             captured in one CUDA graph (the test pass stays eager).

  python3 perf/torch_gpu_reference.py --data-dir /usr/share/datasets/fashion-mnist --epochs 3

`--precision bf16|fp16` runs forward and loss under torch.autocast, as
`ndgc-train --precision` does (fp16 eager only, with a GradScaler);
`--modes eager` or `--modes cuda-graph` runs one of the two.

Prints one line per figure: `torch <name> <value> <unit>`.
"""
import argparse
import contextlib
import gzip
import os
import time

import numpy as np
import torch


def load_idx(path):
    with (gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")) as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def find(data_dir, stem):
    for name in (stem + ".gz", stem):
        if os.path.exists(os.path.join(data_dir, name)):
            return os.path.join(data_dir, name)
    raise FileNotFoundError(f"{stem}[.gz] not in {data_dir}")


def small_op(iterations):
    a = torch.ones(64, 64, device="cuda")
    for _ in range(1000):
        a + a
    torch.cuda.synchronize()
    start = time.perf_counter()
    for i in range(1, iterations + 1):
        a + a
        if i % 256 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / iterations * 1e9


class LastStep(torch.nn.Module):
    """Rows of 784 as 28 steps of 28 features, an LSTM, the last step's output."""

    def __init__(self, hidden):
        super().__init__()
        self.lstm = torch.nn.LSTM(28, hidden, batch_first=True)

    def forward(self, x):
        y, _ = self.lstm(x.reshape(-1, 28, 28))
        return y[:, -1, :]


def stage(cin, cout):
    return [torch.nn.Conv2d(cin, cout, 3, padding=1), torch.nn.BatchNorm2d(cout), torch.nn.ReLU(), torch.nn.MaxPool2d(2)]


def model(name):
    """The architectures of src/nn/architecture.cpp, on flat rows of 784."""
    if name == "mlp":
        layers = [torch.nn.Linear(784, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64), torch.nn.ReLU(),
                  torch.nn.Linear(64, 10)]
    elif name == "cnn":
        layers = [torch.nn.Unflatten(1, (1, 28, 28)), *stage(1, 32), *stage(32, 64), torch.nn.Flatten(),
                  torch.nn.Dropout(0.25), torch.nn.Linear(64 * 7 * 7, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)]
    else:
        layers = [LastStep(128), torch.nn.Linear(128, 10)]
    return torch.nn.Sequential(*layers).cuda()


def evaluate(net, tx, ty, batch):
    correct = torch.zeros((), dtype=torch.long, device="cuda")
    with torch.no_grad():
        for s in range(0, len(tx), batch):
            xb = tx[s:s + batch].pin_memory().cuda(non_blocking=True)
            yb = ty[s:s + batch].pin_memory().cuda(non_blocking=True)
            with autocast():
                correct += (net(xb).argmax(1) == yb).sum()
    return correct.item() / len(tx)


AUTOCAST = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}
PRECISION = "fp32"


def autocast():
    dtype = AUTOCAST[PRECISION]
    return torch.autocast("cuda", dtype=dtype) if dtype else contextlib.nullcontext()


def time_epochs(net, x, tx, ty, batch, epochs, seed, train_batch, loss_total):
    """Seconds per epoch: shuffled batches through train_batch(indices), the
    loss total read once, then the test pass."""
    rng = np.random.default_rng(seed)
    times = []
    for _ in range(epochs):
        torch.cuda.synchronize()
        start = time.perf_counter()
        order = torch.from_numpy(rng.permutation(len(x)))
        loss_total.zero_()
        for s in range(len(x) // batch):
            train_batch(order[s * batch:(s + 1) * batch])
        loss_total.item()
        net.eval()
        accuracy = evaluate(net, tx, ty, batch)
        net.train()
        times.append(time.perf_counter() - start)
    print(f"torch accuracy {accuracy:.4f}", flush=True)
    return times


def epochs_eager(name, x, y, tx, ty, batch, epochs, seed):
    torch.manual_seed(seed)
    net, loss_fn = model(name), torch.nn.CrossEntropyLoss()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    total = torch.zeros((), device="cuda")
    scaler = torch.amp.GradScaler("cuda", enabled=PRECISION == "fp16")

    def train_batch(idx):
        xb = x[idx].pin_memory().cuda(non_blocking=True)
        yb = y[idx].pin_memory().cuda(non_blocking=True)
        with autocast():
            loss = loss_fn(net(xb), yb)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        total.add_(loss.detach().float())

    return time_epochs(net, x, tx, ty, batch, epochs, seed, train_batch, total)


def epochs_graph(name, x, y, tx, ty, batch, epochs, seed):
    torch.manual_seed(seed)
    net, loss_fn = model(name), torch.nn.CrossEntropyLoss()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3, capturable=True)
    static_x = torch.zeros(batch, 784, device="cuda")
    static_y = torch.zeros(batch, dtype=torch.long, device="cuda")
    total = torch.zeros((), device="cuda")

    def step():
        with autocast():
            loss = loss_fn(net(static_x), static_y)
        opt.zero_grad(set_to_none=False)
        loss.backward()
        opt.step()
        total.add_(loss.detach().float())

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()

    def train_batch(idx):
        static_x.copy_(x[idx].pin_memory(), non_blocking=True)
        static_y.copy_(y[idx].pin_memory(), non_blocking=True)
        graph.replay()

    return time_epochs(net, x, tx, ty, batch, epochs, seed, train_batch, total)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--small-op-iterations", type=int, default=200000)
    p.add_argument("--model", choices=("mlp", "cnn", "lstm"), default="mlp")
    p.add_argument("--precision", choices=tuple(AUTOCAST), default="fp32")
    p.add_argument("--modes", default="eager,cuda-graph")
    args = p.parse_args()
    global PRECISION
    PRECISION = args.precision
    print(f"torch version {torch.__version__} device {torch.cuda.get_device_name(0)}", flush=True)
    if args.small_op_iterations > 0:
        print(f"torch small-op {small_op(args.small_op_iterations):.0f} ns/op", flush=True)
    images = load_idx(find(args.data_dir, "train-images-idx3-ubyte")).reshape(-1, 784)
    labels = load_idx(find(args.data_dir, "train-labels-idx1-ubyte"))
    x = torch.from_numpy(images.astype(np.float32) / 255.0)
    y = torch.from_numpy(labels.astype(np.int64))
    tx = torch.from_numpy(load_idx(find(args.data_dir, "t10k-images-idx3-ubyte")).reshape(-1, 784).astype(np.float32) / 255.0)
    ty = torch.from_numpy(load_idx(find(args.data_dir, "t10k-labels-idx1-ubyte")).astype(np.int64))
    modes = args.modes.split(",")
    if args.precision == "fp16" and "cuda-graph" in modes:
        p.error("--precision fp16 runs eager only (GradScaler reads the gradients on the host)")
    for name, run in (("eager", epochs_eager), ("cuda-graph", epochs_graph)):
        if name not in modes:
            continue
        times = run(args.model, x, y, tx, ty, args.batch_size, args.epochs, 1)
        print(f"torch {args.model}-epoch-{name} {args.precision} batch {args.batch_size} "
              + " ".join(f"{t:.3f}" for t in times) + " s", flush=True)


if __name__ == "__main__":
    main()
