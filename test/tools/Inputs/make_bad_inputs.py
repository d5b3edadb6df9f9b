"""Writes malformed and hostile inputs for bad-inputs.test into argv[1]."""
import os
import sys

import numpy as np

out = sys.argv[1]


def path(name):
    return os.path.join(out, name)


def write(name, data):
    with open(path(name), "wb") as f:
        f.write(data)


def npy_with_header(header):
    header = header + b" " * (118 - len(header)) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header


good = np.linspace(-1, 1, 64).reshape(4, 16)
np.save(path("good.npy"), good)
raw = open(path("good.npy"), "rb").read()
write("truncated-data.npy", raw[:-10])
write("truncated-header.npy", raw[:30])
write("bad-magic.npy", b"\x93NUMPX" + raw[6:])
write("huge.npy", npy_with_header(
    b"{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 8), }"))
write("negative.npy", npy_with_header(
    b"{'descr': '<f8', 'fortran_order': False, 'shape': (-4, 16), }"))
write("no-shape.npy", npy_with_header(b"{'descr': '<f8', 'fortran_order': False, }"))
np.save(path("int64.npy"), np.ones((4, 16), np.int64))
np.save(path("object.npy"), np.array([{"a": 1}] * 4, dtype=object), allow_pickle=True)
np.save(path("fortran.npy"), np.asfortranarray(good))
np.save(path("wrong-shape.npy"), np.ones((4, 15)))
special = good.copy()
special[0, :3] = [np.nan, np.inf, -np.inf]
np.save(path("special.npy"), special)

np.savez(path("params.npz"), **{"fc1.weight": np.ones((32, 16))})
npz = open(path("params.npz"), "rb").read()
write("truncated.npz", npz[: len(npz) // 2])
write("not-a-zip.npz", b"PK\x03\x04 this is not a zip archive")
