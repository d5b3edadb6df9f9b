# low-precision.test: float16 .npy files, and bfloat16 as raw 2-byte ('V2')
# data holding the bit patterns; the outputs against numpy.
#   low_precision.py gen DIR      write x.npy, w.npy (float16), b.npy (bfloat16)
#   low_precision.py check DIR OUT
#   low_precision.py check-mlp DIR OUT   reference.py's mlp, run with --precision=bf16 or --quantize=int8
#   low_precision.py scales DIR OUT      a --quantize-observe run's maxima, as --activation-scales
import sys

import numpy as np


def bf16_bits(values):
    bits = np.asarray(values, dtype=np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_values(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


if sys.argv[1] == "check-mlp":
    d, out = sys.argv[2], np.load(sys.argv[3])
    x = np.load(f"{d}/input.npy").astype(np.float64)
    p = {k: v.astype(np.float64) for k, v in np.load(f"{d}/params.npz").items()}
    h = x
    for i, layer in enumerate(("layer1", "layer2", "layer3")):
        h = h @ p[layer + ".weight"].T + p[layer + ".bias"]
        h = np.maximum(h, 0) if i < 2 else h
    got = out["output"]
    assert got.dtype == np.float32
    err = np.max(np.abs(got - h)) / np.sqrt(np.mean(h * h))
    # bf16 keeps 8 bits, int8 7 and a sign: a few parts in a hundred of the RMS
    # after 3 layers.
    assert 1e-4 < err < 6e-2, err
    print("low-precision mlp within tolerance")
elif sys.argv[1] in ("ranges", "scales"):
    # The calibration run's outputs: each product's activation range [min x,
    # max x], checked against numpy's float32 run; as --activation-ranges
    # (lo,hi pairs) or --activation-scales (max(|lo|, |hi|) / 127).
    d, out = sys.argv[2], np.load(sys.argv[3])
    x = np.load(f"{d}/input.npy")
    p = dict(np.load(f"{d}/params.npz"))
    want, h = [], x
    for i, layer in enumerate(("layer1", "layer2", "layer3")):
        want.append((h.min(), h.max()))
        h = h @ p[layer + ".weight"].T + p[layer + ".bias"]
        h = np.maximum(h, 0) if i < 2 else h
    got = [tuple(float(v) for v in out[f"calibration:{i}"]) for i in range(3)]
    assert np.allclose(got, want, rtol=1e-5), (got, want)
    if sys.argv[1] == "ranges":
        print(",".join(f"{v:.9e}" for pair in got for v in pair))
    else:
        print(",".join(f"{max(abs(lo), abs(hi)) / 127:.9e}" for lo, hi in got))
elif sys.argv[1] == "gen":
    d = sys.argv[2]
    rng = np.random.default_rng(3)
    np.save(f"{d}/x.npy", rng.standard_normal((4, 8)).astype(np.float16))
    np.save(f"{d}/w.npy", (rng.standard_normal((8, 3)) * 0.3).astype(np.float16))
    np.save(f"{d}/b.npy", bf16_bits(rng.standard_normal(5)).view("V2"))
else:
    d, out = sys.argv[2], np.load(sys.argv[3])
    x, w = np.load(f"{d}/x.npy"), np.load(f"{d}/w.npy")
    b = bf16_values(np.load(f"{d}/b.npy").view(np.uint16))
    y, z = out["y"], out["z"]
    assert y.dtype == np.float16 and z.dtype == np.dtype("V2"), (y.dtype, z.dtype)
    want_y = np.tanh(x.astype(np.float32) @ w.astype(np.float32))
    assert np.max(np.abs(y - want_y)) <= 2e-3, np.max(np.abs(y - want_y))
    # One rounding of the float32 product: bit-exact.
    assert (z.view(np.uint16) == bf16_bits(b * b)).all()
    print("low precision matches numpy")
