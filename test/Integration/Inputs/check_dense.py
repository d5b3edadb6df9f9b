# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""gen DIR: writes x.npy and params.npz for Inputs/dense-256x512.mlir;
check DIR OUT.npz...: compares each output with numpy."""
import sys

import numpy as np

mode, root = sys.argv[1], sys.argv[2]
if mode == "gen":
    rng = np.random.default_rng(0)
    np.save(f"{root}/x.npy", rng.standard_normal((256, 512)).astype(np.float32))
    np.savez(f"{root}/params.npz", w=rng.standard_normal((512, 512)).astype(np.float32) / 20,
             b=rng.standard_normal(512).astype(np.float32))
else:
    x = np.load(f"{root}/x.npy").astype(np.float64)
    p = np.load(f"{root}/params.npz")
    want = np.maximum(x @ p["w"].astype(np.float64) + p["b"], 0.0)
    for out in sys.argv[3:]:
        got = np.load(out)["y"]
        err = np.max(np.abs(got - want)) / np.max(np.abs(want))
        print(f"{out.split('/')[-1]}: {'matches' if err < 1e-5 else 'DIFFERS FROM'} numpy "
              f"(relative error {err:.1e})")
