"""Attention softmax(q k^T / 8 + mask) v of [2, 4, T, 32] heads (or [4, T,
32] with --one-head) whose mask [T, T] is a constant (as ScaledDotProduct's
causal mask, or an attn_mask in `constant_keys`, compile in).

  masked-attention.py KIND T [--one-head]              prints the model
  masked-attention.py KIND T [--one-head] --input F    writes inputs q, kt, v to F (.npz)
  masked-attention.py KIND T [--one-head] --check X Y  checks output Y against numpy

KIND: causal (-inf above the diagonal), padding (-inf in the last half of
the columns), finite (-1e9 above the diagonal), masked-row (causal, row 5
all -inf: NaN), after-softmax (causal, added to the softmax's result).
"""
import sys

import numpy as np

kind, length = sys.argv[1], int(sys.argv[2])
rest = sys.argv[3:]
one_head = "--one-head" in rest
rest = [arg for arg in rest if arg != "--one-head"]
lead = [4] if one_head else [2, 4]

above = np.triu(np.ones((length, length), dtype=bool), k=1)
mask = np.where(above, -np.inf, 0.0)
if kind == "padding":
    mask = np.zeros((length, length))
    mask[:, length // 2:] = -np.inf
elif kind == "finite":
    mask = np.where(above, -1e9, 0.0)
elif kind == "masked-row":
    mask[5, :] = -np.inf
mask = mask.astype(np.float32)


def tensor(*shape):
    return "tensor<" + "x".join(str(d) for d in lead + list(shape)) + "xf32>"


if not rest:
    scores, q, kt, v = tensor(length, length), tensor(length, 32), tensor(32, length), tensor(
        length, 32)
    hexdata = mask.astype("<f4").tobytes().hex().upper()
    masked = (f"  %u = mithril.add %t, %mask : ({scores}, tensor<{length}x{length}xf32>) -> {scores}\n"
              f"  %p = mithril.softmax %u {{axis = -1 : i64}} : ({scores}) -> {scores}\n")
    if kind == "after-softmax":
        masked = (f"  %r = mithril.softmax %t {{axis = -1 : i64}} : ({scores}) -> {scores}\n"
                  f"  %p = mithril.add %r, %mask : ({scores}, tensor<{length}x{length}xf32>) -> {scores}\n")
    print(f"""mithril.model @MaskedAttention(data %q: {q}, data %kt: {kt}, data %v: {v}) -> (y: {q}) {{
  %s = mithril.matmul %q, %kt : ({q}, {kt}) -> {scores}
  %c = mithril.constant dense<0.125> : tensor<1xf32>
  %t = mithril.multiply %s, %c : ({scores}, tensor<1xf32>) -> {scores}
  %mask = mithril.constant dense<"0x{hexdata}"> : tensor<{length}x{length}xf32>
{masked}  %y = mithril.matmul %p, %v : ({scores}, {q}) -> {q}
  mithril.output %y : {q}
}}""")
elif rest[0] == "--input":
    rng = np.random.default_rng(length)
    shapes = {"q": (length, 32), "kt": (32, length), "v": (length, 32)}
    np.savez(rest[1], **{name: (rng.standard_normal(lead + list(shape)) * 1.5).astype(np.float32)
                         for name, shape in shapes.items()})
else:
    data = np.load(rest[1])
    q, kt, v = (data[name].astype(np.float64) for name in ("q", "kt", "v"))
    t = q @ kt * 0.125
    if kind == "after-softmax":
        e = np.exp(t - t.max(-1, keepdims=True))
        p = e / e.sum(-1, keepdims=True) + mask
    else:
        with np.errstate(invalid="ignore"):
            u = t + mask
            e = np.exp(u - u.max(-1, keepdims=True))
            p = e / e.sum(-1, keepdims=True)
    want = p @ v
    got = np.load(rest[2])["y"]
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)
    print("ok")
