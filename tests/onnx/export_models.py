#!/usr/bin/python3
"""Exports the PyTorch models of ndgc's ONNX tests (Debian's python3-torch and
python3-torchvision, test-only dependencies), randomly initialised, with
PyTorch's outputs and its gradients of a scalar loss for a few initializers.

    /usr/bin/python3 tests/onnx/export_models.py OUT_DIR [NAME ...]

    /usr/bin/python3 tests/onnx/export_models.py --check NAME VALUES_JSON
    /usr/bin/python3 tests/onnx/export_models.py --perf OUT_DIR

For each NAME (default: all) writes OUT_DIR/NAME.onnx, OUT_DIR/NAME.input.bin
(the input, float32, row-major), OUT_DIR/NAME.output.bin (PyTorch's eval-mode
output) and OUT_DIR/NAME.grads.json ({initializer: [gradient values]} of
loss = output.square().sum() / 2, in eval mode as the output). Seeded:
the same files every run.

--check loads {"parameters": {name: values}, "input": [...], "output": [...]}
(what ndgc fine-tuned, saved and ran) into NAME's PyTorch module and exits 0
when PyTorch's eval-mode output for the input is within rtol 1e-3, atol 1e-5
of ndgc's, else 1.
"""
import json
import sys

import torch
import torch.nn as nn


class FashionCnn(nn.Module):
    """The small CNN that ndgc-train fine-tunes (--model cnn.onnx). No BatchNorm:
    an eval-mode export folds it into the convolutions, and the fine-tuned
    graph's initializers then would not load back into this module."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 10))

    def forward(self, x):
        return self.net(x)


class RecurrentClassifier(nn.Module):
    """The 28 rows of an image as 28 steps, the last step's state into 10 logits."""

    def __init__(self, cell):
        super().__init__()
        self.rnn = cell(28, 32, batch_first=True)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.fc(y[:, -1])


class Transformer(nn.Module):
    """Two encoder layers over 10 tokens of 32 features, mean-pooled into 10 logits."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        return self.fc(self.encoder(x).mean(dim=1))


class Autoencoder(nn.Module):
    """A strided convolution and its transpose (ConvTranspose, output_padding)."""

    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(1, 8, 3, stride=2, padding=1)
        self.up = nn.ConvTranspose2d(8, 2, 3, stride=2, padding=1, output_padding=1, groups=2)

    def forward(self, x):
        return self.up(torch.relu(self.down(x)))


def models():
    import torchvision.models as tv
    return {
        "fashion_cnn": (FashionCnn, (4, 1, 28, 28)),
        "fashion_mlp": (Mlp, (4, 784)),
        "resnet18": (lambda: tv.resnet18(num_classes=10), (2, 3, 64, 64)),
        "squeezenet1_1": (lambda: tv.squeezenet1_1(num_classes=10), (2, 3, 64, 64)),
        "mobilenet_v2": (lambda: tv.mobilenet_v2(num_classes=10), (2, 3, 64, 64)),
        "gru_classifier": (lambda: RecurrentClassifier(nn.GRU), (3, 28, 28)),
        "lstm_classifier": (lambda: RecurrentClassifier(nn.LSTM), (3, 28, 28)),
        "transformer": (Transformer, (2, 10, 32)),
        "autoencoder": (Autoencoder, (2, 1, 28, 28)),
    }


def onnx_export(model, x, path, **options):
    """torch.onnx.export through the TorchScript exporter, which wrote the
    files these tests were made with: PyTorch 2.9 and later default to the
    dynamo exporter (dynamo=True), whose graphs use other ops and opsets."""
    import inspect
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        options["dynamo"] = False
    torch.onnx.export(model, x, path, input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "N"}, "output": {0: "N"}}, opset_version=13, **options)


def export(name, make, shape, out):
    torch.manual_seed(0)
    model = make()
    model.eval()
    x = torch.randn(*shape)
    path = f"{out}/{name}.onnx"
    onnx_export(model, x, path, do_constant_folding=False)
    with torch.no_grad():
        y = model(x)
    x.numpy().astype("float32").tofile(f"{out}/{name}.input.bin")
    y.numpy().astype("float32").tofile(f"{out}/{name}.output.bin")
    model.zero_grad()
    loss = model(x).square().sum() / 2
    loss.backward()
    grads = {n: p.grad.flatten().tolist() for n, p in model.named_parameters() if p.grad is not None}
    with open(f"{out}/{name}.grads.json", "w") as f:
        json.dump({"shape": list(shape), "grads": grads}, f)


class PerfTransformer(nn.Module):
    """The benchmark's TransformerEncoder: 2 layers of d_model 128, 4 heads,
    feed-forward 512, over 64 tokens; its output is the encoded tokens."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=512, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)

    def forward(self, x):
        return self.encoder(x)


class PerfVolume(nn.Module):
    """A small 3-D CNN over 16x32x32 volumes of 4 channels (video clips,
    medical scans): two Conv3d + ReLU, a MaxPool3d and an AvgPool3d."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv3d(4, 16, 3, padding=1), nn.ReLU(), nn.MaxPool3d(2),
                                  nn.Conv3d(16, 32, 3, padding=1), nn.ReLU(), nn.AvgPool3d(2))

    def forward(self, x):
        return self.body(x)


def export_perf(out):
    """--perf: resnet18 (224x224, 1000 classes), PerfTransformer and PerfVolume
    as NAME.onnx (for ndgc) and NAME.pt (traced, for LibTorch's torch::jit::load)."""
    import torchvision.models as tv
    for name, make, shape in [("resnet18", tv.resnet18, (1, 3, 224, 224)),
                              ("transformer", PerfTransformer, (1, 64, 128)),
                              ("volume", PerfVolume, (1, 4, 16, 32, 32))]:
        torch.manual_seed(0)
        model = make().eval()
        x = torch.randn(*shape)
        onnx_export(model, x, f"{out}/{name}.onnx")
        try:  # TorchScript is deprecated in PyTorch 2; the GPU runs need only the .onnx
            with torch.no_grad():
                torch.jit.trace(model, x).save(f"{out}/{name}.pt")
        except Exception as e:  # noqa: BLE001 (any failure of the deprecated tracer)
            print(f"{name}: no {name}.pt for LibTorch: {e}", file=sys.stderr)


def check(name, values_file):
    make, shape = models()[name]
    model = make()
    with open(values_file) as f:
        values = json.load(f)
    state = model.state_dict()
    for key, tensor in state.items():
        if key in values["parameters"]:
            state[key] = torch.tensor(values["parameters"][key], dtype=tensor.dtype).reshape(tensor.shape)
    model.load_state_dict(state)
    model.eval()
    x = torch.tensor(values["input"], dtype=torch.float32).reshape(values["input_shape"])
    with torch.no_grad():
        y = model(x).flatten()
    want = torch.tensor(values["output"], dtype=torch.float32)
    ok = torch.allclose(y, want, rtol=1e-3, atol=1e-5)
    print(f"{name}: PyTorch against ndgc, max |difference| {float((y - want).abs().max()):.3g}")
    return 0 if ok else 1


def main():
    if sys.argv[1] == "--check":
        sys.exit(check(sys.argv[2], sys.argv[3]))
    if sys.argv[1] == "--perf":
        export_perf(sys.argv[2])
        return
    out = sys.argv[1]
    wanted = sys.argv[2:]
    for name, (make, shape) in models().items():
        if not wanted or name in wanted:
            export(name, make, shape, out)


if __name__ == "__main__":
    main()
