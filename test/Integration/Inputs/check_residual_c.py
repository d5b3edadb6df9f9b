# Recomputes examples/deploy/residual_main.c's model in numpy and compares
# with the program's output (one value per line).
import sys

import numpy as np

rows, inp, hid = 2, 16, 32
i, j = np.meshgrid(np.arange(rows), np.arange(inp), indexing="ij")
x = np.sin(0.1 * (i * inp + j))
i, j = np.meshgrid(np.arange(hid), np.arange(inp), indexing="ij")
w1 = np.cos(0.05 * (i + 2 * j)) * 0.3
b1 = 0.01 * np.arange(hid)
i, j = np.meshgrid(np.arange(inp), np.arange(hid), indexing="ij")
w2 = np.sin(0.07 * (3 * i + j)) * 0.3
b2 = -0.02 * np.arange(inp)
h = np.maximum(x @ w1.T + b1, 0)
y = np.maximum(x + h @ w2.T + b2, 0)
got = np.array([float(l) for l in open(sys.argv[1])]).reshape(rows, inp)
err = np.abs(got - y).max()
assert err < 1e-12, err
print(f"the C program matches numpy (max error {err:.1e})")
