# Reference computations for the integration tests: numpy implementations of
# the example models, checked against mithril-run's outputs.
#   reference.py gen MODEL DIR [BATCH] write inputs and parameters into DIR
#   reference.py check MODEL DIR OUT  compare OUT (.npz from mithril-run)
import sys

import numpy as np


def gen(model, d, batch=None):
    rng = np.random.default_rng(7)
    if model == "mlp":
        x = rng.standard_normal((8, 784)).astype(np.float32)
        p = {"layer1.weight": rng.standard_normal((512, 784)) * 0.05,
             "layer1.bias": rng.standard_normal(512) * 0.1,
             "layer2.weight": rng.standard_normal((512, 512)) * 0.05,
             "layer2.bias": rng.standard_normal(512) * 0.1,
             "layer3.weight": rng.standard_normal((10, 512)) * 0.05,
             "layer3.bias": rng.standard_normal(10) * 0.1}
        p = {k: v.astype(np.float32) for k, v in p.items()}
    elif model == "cnn":
        x = rng.standard_normal((2, 1, 28, 28)).astype(np.float32)
        p = {"block1.weight": rng.standard_normal((32, 1, 3, 3)) * 0.3,
             "block1.bias": rng.standard_normal(32) * 0.1,
             "block2.weight": rng.standard_normal((64, 32, 3, 3)) * 0.06,
             "block2.bias": rng.standard_normal(64) * 0.1,
             "fc.weight": rng.standard_normal((10, 3136)) * 0.02,
             "fc.bias": rng.standard_normal(10) * 0.1}
        p = {k: v.astype(np.float32) for k, v in p.items()}
    elif model == "residual":
        x = rng.standard_normal((batch or 3, 16))
        p = {"fc1.weight": rng.standard_normal((32, 16)) * 0.3,
             "fc1.bias": rng.standard_normal(32) * 0.1,
             "fc2.weight": rng.standard_normal((16, 32)) * 0.3,
             "fc2.bias": rng.standard_normal(16) * 0.1}
    else:
        raise SystemExit(f"unknown model {model}")
    np.save(f"{d}/input.npy", x)
    np.savez(f"{d}/params.npz", **p)


def conv_relu_pool(x, w, b):
    n, c, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = np.stack([xp[:, :, i:i + h, j:j + wd] for i in range(3) for j in range(3)], axis=2)
    y = np.einsum("nckhw,fck->nfhw", cols, w.reshape(w.shape[0], c, 9)) + b[None, :, None, None]
    y = np.maximum(y, 0)
    return y.reshape(n, y.shape[1], h // 2, 2, wd // 2, 2).max(axis=(3, 5))


def check(model, d, out):
    x = np.load(f"{d}/input.npy").astype(np.float64)
    p = {k: v.astype(np.float64) for k, v in np.load(f"{d}/params.npz").items()}
    got = dict(np.load(out))
    lin = lambda h, k: h @ p[k + ".weight"].T + p[k + ".bias"]
    if model == "mlp":
        h = np.maximum(lin(x, "layer1"), 0)
        h = np.maximum(lin(h, "layer2"), 0)
        want, rtol = {"output": lin(h, "layer3")}, 1e-4
    elif model == "cnn":
        h = conv_relu_pool(x, p["block1.weight"], p["block1.bias"])
        h = conv_relu_pool(h, p["block2.weight"], p["block2.bias"])
        want, rtol = {"logits": lin(h.reshape(h.shape[0], -1), "fc")}, 1e-4
    else:
        hid = np.maximum(lin(x, "fc1"), 0)
        want, rtol = {"y": np.maximum(x + lin(hid, "fc2"), 0), "hidden": hid}, 1e-12
    assert sorted(got) == sorted(want), (sorted(got), sorted(want))
    for k in want:
        err = np.abs(got[k] - want[k]).max() / max(np.abs(want[k]).max(), 1e-30)
        assert err < rtol, f"{k}: relative error {err}"
        print(f"{k}: {list(got[k].shape)} matches numpy (relative error {err:.1e})")


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else None)
    else:
        check(sys.argv[2], sys.argv[3], sys.argv[4])
