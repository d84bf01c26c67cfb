"""What perf/serve_device_check.py and perf/serve_device_load.py share: their
common options, ndgc-serve started as a child on a free port, and the body
of a one-row KServe request. Standard library only."""
import json
import subprocess
import sys


def add_server_arguments(parser):
    """--serve, --model, --device and --extra (more ndgc-serve options)."""
    parser.add_argument("--serve", required=True, help="the ndgc-serve program")
    parser.add_argument("--model", required=True, help="a model file (ndgc-train --save), served as 'm'")
    parser.add_argument("--device", default="gpu")
    parser.add_argument("--extra", default="", help="more ndgc-serve options, for every server started")


def start(serve, model, device, options):
    """Starts ndgc-serve serving `model` as 'm' on --port 0; returns (process, host, port) once it listens."""
    proc = subprocess.Popen([serve, "--model", "m=" + model, "--port", "0", "--device", device] + options,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line.startswith("listening on http://"):
        sys.exit(f"ndgc-serve --device {device} did not start: {line!r} {proc.stderr.read()}")
    host, port = line.strip().rsplit("/", 1)[1].rsplit(":", 1)
    return proc, host, int(port)


def infer_body(row):
    """A KServe v2 JSON request for one row of FP32 inputs."""
    return json.dumps({"inputs": [{"name": "input", "shape": [1, len(row)], "datatype": "FP32", "data": row}]})
