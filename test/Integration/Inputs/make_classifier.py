# Writes a small classification problem (two Gaussian blobs per class, four
# classes) as data.npz and a TrainModel for it as model.mlir.
import sys

import numpy as np

import mithril as ml
from mithril.models import CrossEntropy, Linear, Mean, Model, Relu, TrainModel

out = sys.argv[1]
rng = np.random.default_rng(0)
centers = rng.standard_normal((4, 8)) * 3
labels = rng.integers(0, 4, 512)
x = (centers[labels] + rng.standard_normal((512, 8))).astype(np.float32)
np.savez(f"{out}/data.npz", input=x, target=labels.astype(np.int64))

model = Model()
model |= Linear(16).connect(input="input")
model += Relu()
model += Linear(4).connect(output="logits")
train = TrainModel(model)
train.add_loss(CrossEntropy(), reduce_steps=[Mean()], input="logits", target="target")
ml.compile(train, ml.MlirBackend(dtype=ml.float32),
           shapes={"input": [32, 8], "target": [32]}, file_path=f"{out}/model.mlir")
