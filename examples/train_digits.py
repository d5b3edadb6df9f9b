# Train an MLP on scikit-learn's digits (8x8 images of 0-9) with a compiled
# Adam training step, report test accuracy per epoch, save the data as .npz,
# the trained parameters as .npz and the learning curve as a PNG.
#
#   PYTHONPATH=build/python_packages python3 examples/train_digits.py [OUT_DIR]
import os
import sys
import time

import numpy as np
from sklearn.datasets import load_digits

import mithril as ml
from mithril.models import CrossEntropy, Linear, Mean, Model, Relu, TrainModel

from mithril.utils.png import save_line_plot

out_dir = sys.argv[1] if len(sys.argv) > 1 else "digits_out"
os.makedirs(out_dir, exist_ok=True)

# The data set, split 80/20 with a fixed seed and written out as .npz.
digits = load_digits()
x = (digits.data / 16.0).astype(np.float32)
y = digits.target.astype(np.int64)
order = np.random.default_rng(0).permutation(len(x))
split = int(0.8 * len(x))
train_idx, test_idx = order[:split], order[split:]
np.savez(os.path.join(out_dir, "digits.npz"), x_train=x[train_idx], y_train=y[train_idx],
         x_test=x[test_idx], y_test=y[test_idx])


def mlp():
    model = Model()
    model |= Linear(128).connect(input="input")
    model += Relu()
    model += Linear(64)
    model += Relu()
    model += Linear(10).connect(output="logits")
    return model


batch = 64
backend = ml.MlirBackend(dtype=ml.float32)
train = TrainModel(mlp())
train.add_loss(CrossEntropy(), reduce_steps=[Mean()], input="logits", target="target")
start = time.perf_counter()
trainer = ml.compile(train, backend, shapes={"input": [batch, 64], "target": [batch]})
tester = ml.compile(mlp(), backend, shapes={"input": [len(test_idx), 64]}, inference=True)
print(f"compiled the training step and the test model in {time.perf_counter() - start:.2f} s")

params = trainer.randomize_params(seed=0)
optimizer = ml.Adam(lr=2e-3)
rng = np.random.default_rng(1)
losses, accuracies = [], []
epochs = 30
for epoch in range(1, epochs + 1):
    perm = rng.permutation(train_idx)
    epoch_loss, steps = 0.0, 0
    t0 = time.perf_counter()
    for i in range(0, len(perm) - batch + 1, batch):
        idx = perm[i:i + batch]
        out = trainer.train_step(params, {"input": x[idx], "target": y[idx]}, optimizer)
        epoch_loss += float(out["final_cost"])
        steps += 1
    logits = tester.evaluate({k: v for k, v in params.items()}, {"input": x[test_idx]})["logits"]
    accuracy = float((logits.argmax(1) == y[test_idx]).mean())
    losses.append(epoch_loss / steps)
    accuracies.append(accuracy)
    bar = "#" * int(30 * epoch / epochs)
    print(f"epoch {epoch:2d}/{epochs} [{bar:<30}] loss {losses[-1]:.4f}  "
          f"test accuracy {accuracy:.2%}  ({(time.perf_counter() - t0) * 1e3:.0f} ms)")

np.savez(os.path.join(out_dir, "params.npz"), **params)
save_line_plot(os.path.join(out_dir, "learning_curve.png"),
               [("training loss", losses, (200, 60, 40)),
                ("test accuracy", accuracies, (40, 90, 200))],
               title="digits: loss (red) and test accuracy (blue) per epoch")
print(f"final test accuracy {accuracies[-1]:.2%}; wrote {out_dir}/learning_curve.png, "
      f"{out_dir}/params.npz, {out_dir}/digits.npz")
if accuracies[-1] < 0.95:
    sys.exit("test accuracy below 95%")
