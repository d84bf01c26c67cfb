#!/usr/bin/env python3
"""Writes the seed corpora of tests/fuzz/corpus/<target>/ (issue 5).

Seeds are small valid and nearly-valid inputs that reach deep into each
parser quickly; libFuzzer mutates from there. Deterministic: running it again
rewrites the same files. Inputs that once crashed a target are kept next to
the seeds under names starting with "regress-"; this script never touches them.

  tests/fuzz/make_corpus.py
"""
import gzip
import os
import random
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def put(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- IDX: 0, 0, type code, rank, big-endian u32 dims, big-endian data ----
def idx(code, dims, payload):
    return bytes([0, 0, code, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + payload


def gz(data):
    return gzip.compress(data, mtime=0)


put("idx_reader", "uint8-2x3", idx(0x08, [2, 3], bytes(range(6))))
put("idx_reader", "int8-4", idx(0x09, [4], bytes([0, 1, 0x7F, 0x80])))
put("idx_reader", "int16-2", idx(0x0B, [2], struct.pack(">hh", -2, 300)))
put("idx_reader", "int32-2x2", idx(0x0C, [2, 2], struct.pack(">iiii", 1, -1, 2**31 - 1, -(2**31))))
put("idx_reader", "float32-3", idx(0x0D, [3], struct.pack(">fff", 1.5, -0.0, float("inf"))))
put("idx_reader", "float64-1x1x2", idx(0x0E, [1, 1, 2], struct.pack(">dd", 3.25, float("nan"))))
put("idx_reader", "uint8-images-2x4x4", idx(0x08, [2, 4, 4], bytes(range(32))))
put("idx_reader", "gz-uint8-3x2", gz(idx(0x08, [3, 2], bytes(range(6)))))
put("idx_reader", "gz-float32-2", gz(idx(0x0D, [2], struct.pack(">ff", 1.0, 2.0))))
put("idx_reader", "bad-truncated", idx(0x08, [4, 4], bytes(5)))
put("idx_reader", "bad-trailing", idx(0x08, [2], bytes(3)))
put("idx_reader", "bad-type", idx(0x07, [2], bytes(2)))
put("idx_reader", "bad-rank0", bytes([0, 0, 0x08, 0]))
put("idx_reader", "bad-huge-dims", idx(0x08, [0xFFFFFFFF, 0xFFFFFFFF], bytes(8)))
put("idx_reader", "bad-gz-truncated", gz(idx(0x08, [8], bytes(8)))[:-6])

# ---- model files (ndgc/model.hpp, version 1), for Mlp(4 -> 2, hidden 3) ----
F32, F64, I32, I64, U8, BOOL = range(6)
WIDTH = {F32: 4, F64: 8, I32: 4, I64: 8, U8: 1, BOOL: 1}
MLP = [("1.weight", [4, 3]), ("1.bias", [3]), ("3.weight", [3, 2]), ("3.bias", [2])]


def model_file(params, version=1, crc=True):
    body = b"NDGCPARM" + struct.pack("<II", version, len(params))
    for name, dtype, dims, data in params:
        n = name.encode()
        body += struct.pack("<I", len(n)) + n + struct.pack("<BB", dtype, len(dims))
        body += b"".join(struct.pack("<q", d) for d in dims)
        body += struct.pack("<Q", len(data)) + data
    c = zlib.crc32(body) if crc else 0
    return body + struct.pack("<I", c)


def floats(dims, seed):
    rng = random.Random(seed)
    n = 1
    for d in dims:
        n *= d
    return b"".join(struct.pack("<f", rng.uniform(-1, 1)) for _ in range(n))


good = [(name, F32, dims, floats(dims, i)) for i, (name, dims) in enumerate(MLP)]
put("model_file", "mlp-4-3-2", model_file(good))
put("model_file", "mlp-wider-5-3-2", model_file([("1.weight", F32, [5, 3], floats([5, 3], 9))] + good[1:]))
put("model_file", "bad-crc", model_file(good, crc=False))
put("model_file", "bad-version", model_file(good, version=2))
put("model_file", "bad-missing-param", model_file(good[:3]))
put("model_file", "bad-extra-param", model_file(good + [("4.weight", F32, [1], floats([1], 5))]))
put("model_file", "bad-dtype-f64", model_file([("1.weight", F64, [4, 3], bytes(96))] + good[1:]))
put("model_file", "bad-shape", model_file([("1.weight", F32, [3, 4], floats([3, 4], 1))] + good[1:]))
put("model_file", "bad-truncated", model_file(good)[:70])
put("model_file", "bad-empty", b"")
put("model_file", "zero-params", model_file([]))

# ---- api_fuzz programs: a start byte (auto-close on if odd), then steps of 5
# bytes: op, handle h, handle g, manager m, argument. An op byte below 234 is
# op % 18; 234..239 (and on, modulo 6) are the workspace ops ----
ACTIVATE, LEAVE, DETACH, LEVERAGE, DESTROY, CREATE_OUT = range(234, 240)
def program(start_on, steps):
    return bytes([start_on]) + b"".join(bytes(s) for s in steps)


rng = random.Random(5)
put("api", "create-op-drop", program(1, [(0, 0, 0, 0, 3), (0, 1, 0, 0, 5), (1, 0, 1, 0, 0), (5, 0, 0, 0, 0),
                                        (16, 0, 0, 0, 1), (2, 1, 1, 0, 2)]))
put("api", "close-manager-then-use", program(0, [(0, 0, 0, 1, 7), (3, 0, 2, 1, 0), (11, 0, 0, 1, 0),
                                                (1, 0, 2, 0, 0), (12, 0, 0, 1, 0), (0, 3, 0, 1, 1)]))
put("api", "attach-detach-temp", program(1, [(0, 0, 0, 0, 4), (6, 0, 0, 1, 0), (8, 0, 0, 2, 0), (11, 0, 0, 2, 0),
                                            (7, 0, 0, 0, 0), (5, 0, 0, 0, 0), (16, 0, 0, 0, 0)]))
put("api", "ret-cap", program(0, [(12, 0, 0, 1, 0), (0, 0, 0, 1, 2), (9, 0, 0, 1, 0), (10, 0, 0, 0, 0),
                                 (0, 1, 0, 0, 1), (9, 0, 0, 1, 0)]))
put("api", "toggle-autoclose", program(0, [(0, 0, 0, 0, 1), (4, 0, 1, 0, 0), (15, 0, 0, 0, 1), (5, 0, 0, 0, 0),
                                          (5, 1, 0, 0, 0), (15, 0, 0, 0, 0), (0, 2, 0, 0, 9), (5, 2, 0, 0, 0),
                                          (16, 0, 0, 0, 0)]))
put("api", "ndlist-listing", program(1, [(0, 0, 0, 0, 2), (0, 1, 0, 0, 3), (14, 0, 1, 3, 1), (17, 0, 0, 3, 0),
                                        (14, 0, 1, 2, 0), (11, 0, 0, 2, 0), (13, 1, 0, 0, 0)]))
# Workspace "b" learns from its first cycle; an array of cycle 1 is closed when
# cycle 2 begins, its detached copy lives on; then "b" is destroyed.
put("api", "workspace-cycles", program(1, [(ACTIVATE, 0, 0, 0, 1), (0, 0, 0, 0, 3), (0, 1, 0, 0, 11),
                                          (1, 0, 1, 0, 0), (DETACH, 0, 2, 0, 0), (LEAVE, 0, 0, 0, 0),
                                          (ACTIVATE, 0, 0, 0, 1), (1, 2, 2, 0, 0), (1, 0, 2, 0, 0),
                                          (LEAVE, 0, 0, 0, 0),
                                          (DESTROY, 0, 0, 0, 1), (16, 0, 0, 0, 0)]))
# Nested: "a" (over_time) around "b" (512 B); an array of "b" leveraged to
# "a"; leaving out of order is an error; activating an open name is one too.
put("api", "workspace-nested-leverage", program(0, [(ACTIVATE, 0, 0, 0, 2), (ACTIVATE, 0, 0, 0, 7), (0, 0, 0, 1, 6),
                                                   (LEVERAGE, 0, 1, 0, 0), (LEAVE, 0, 0, 0, 0),
                                                   (ACTIVATE, 0, 0, 0, 2), (LEAVE, 0, 0, 0, 1),
                                                   (ACTIVATE, 0, 0, 0, 7), (3, 1, 2, 0, 0), (LEAVE, 0, 0, 0, 1),
                                                   (CREATE_OUT, 3, 0, 2, 4), (DESTROY, 0, 0, 0, 0), (LEAVE, 0, 0, 0, 0),
                                                   (DESTROY, 0, 0, 0, 0), (13, 3, 0, 0, 0)]))
for i in range(4):
    put("api", f"random-{i}", program(i % 2, [tuple(rng.randrange(256) for _ in range(5)) for _ in range(40)]))
