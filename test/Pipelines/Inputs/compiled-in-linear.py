"""A Linear layer y = x * w^T whose weight w [512, 8] is compiled in (a
non-splat constant, as `constant_keys` makes it), for batch ROWS.

  compiled-in-linear.py ROWS               prints the model
  compiled-in-linear.py ROWS --input F     writes an input x to F (.npz)
  compiled-in-linear.py ROWS --check X Y   checks output Y against numpy's x * w^T
"""
import struct
import sys

import numpy as np

rows = int(sys.argv[1])
weight = np.array([((i * 37) % 101 - 50) / 64.0 for i in range(512 * 8)],
                  dtype=np.float32).reshape(512, 8)

if len(sys.argv) == 2:
    hexdata = struct.pack(f"<{weight.size}f", *weight.ravel()).hex().upper()
    print(f"""mithril.model @CompiledIn(data %x: tensor<{rows}x8xf32>) -> (y: tensor<{rows}x512xf32>) {{
  %w = mithril.constant dense<"0x{hexdata}"> : tensor<512x8xf32>
  %wt = mithril.transpose %w : (tensor<512x8xf32>) -> tensor<8x512xf32>
  %y = mithril.matmul %x, %wt : (tensor<{rows}x8xf32>, tensor<8x512xf32>) -> tensor<{rows}x512xf32>
  mithril.output %y : tensor<{rows}x512xf32>
}}""")
elif sys.argv[2] == "--input":
    x = np.random.default_rng(3).standard_normal((rows, 8)).astype(np.float32)
    np.savez(sys.argv[3], x=x)
else:
    x = np.load(sys.argv[3])["x"].astype(np.float64)
    y = np.load(sys.argv[4])["y"]
    expected = x @ weight.astype(np.float64).T
    error = np.abs(y - expected).max() / np.abs(expected).max()
    if y.shape != expected.shape or not error < 1e-6:
        sys.exit(f"y differs from x * w^T: shape {y.shape}, relative error {error}")
    print("ok")
