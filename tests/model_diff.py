#!/usr/bin/env python3
"""model_diff.py [--exact] A.tfm B.tfm: the largest difference between the weights of
two model files of one shape (docs/model-format.md, the TENS section):
prints "max_abs X max_rel Y" (rel: over the largest |weight| of the tensor).
The key biases (`.bk`) are left out: adding a constant to every score of a
softmax row changes nothing, so their true gradient is zero and what they
get is rounding noise, which Adam scales up to full-size steps; they differ
between any two summation orders and never change an output.
--exact: instead, exit 0 if every tensor (the key biases too) is the same
bit for bit, else print the first that differs and exit 1.
--changed: instead, print "NAME ROWS COLS" for each tensor that is not the
same bit for bit (the key biases too)."""
import struct
import sys
from array import array

SHAPES = {}     # name: (rows, cols), filled by tensors()


def tensors(path):
    data = open(path, "rb").read()
    assert data[:8] == b"TFMMODEL", path
    pos = 16
    while pos < len(data):
        tag, length = data[pos:pos + 4], struct.unpack_from("<Q", data, pos + 4)[0]
        body = pos + 12
        if tag == b"TENS":
            count = struct.unpack_from("<I", data, body)[0]
            p, out = body + 4, {}
            for _ in range(count):
                n = struct.unpack_from("<I", data, p)[0]
                name = data[p + 4:p + 4 + n].decode()
                rows, cols = struct.unpack_from("<II", data, p + 4 + n)
                p += 12 + n
                a = array("f")
                a.frombytes(data[p:p + 4 * rows * cols])
                out[name] = a
                SHAPES[name] = (rows, cols)
                p += 4 * rows * cols
            return out
        pos = body + length
    raise SystemExit(f"{path}: no TENS section")


args = sys.argv[1:]
mode = args[0] if args[:1] in (["--exact"], ["--changed"]) else ""
if mode:
    args = args[1:]
a, b = tensors(args[0]), tensors(args[1])
assert a.keys() == b.keys(), "the models differ in shape"
if mode == "--changed":
    for name in a:
        if a[name].tobytes() != b[name].tobytes():
            print(name, *SHAPES[name])
    sys.exit(0)
if mode == "--exact":
    for name in a:
        if a[name].tobytes() != b[name].tobytes():
            raise SystemExit(f"{name} differs")
    sys.exit(0)
max_abs = max_rel = 0.0
for name in a:
    if name.endswith(".bk"):
        continue
    scale = max(max(abs(x) for x in a[name]), 1e-30)
    d = max(abs(x - y) for x, y in zip(a[name], b[name]))
    max_abs, max_rel = max(max_abs, d), max(max_rel, d / scale)
print(f"max_abs {max_abs:.3g} max_rel {max_rel:.3g}")
