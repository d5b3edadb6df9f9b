# A model with named terminals, compiled through the MLIR pipeline, evaluated
# with gradients and summarized: Mithril's API on this compiler.
import numpy as np

import mithril as ml
from mithril.models import Add, LeakyRelu, Linear, Model, Relu

trunk = Model()
trunk |= Linear(dimension=32)
trunk += Relu()
trunk += Linear(dimension=16).connect(output="output")

head = Model()
head |= Linear(dimension=32)
head += LeakyRelu()
head += Linear(dimension=16).connect(output="output")

model = Model()
model |= trunk.connect(output="features")
model += head.connect(output="refined")          # head reads trunk's output
model |= Add().connect(left="features", right="refined", output="output")

backend = ml.MlirBackend(dtype=ml.float64)
pm = ml.compile(model, backend, shapes={"input": [4, 8]})
params = pm.randomize_params(seed=0)
outputs, grads = pm.evaluate(params, {"input": backend.ones(4, 8)},
                             output_gradients={"output": backend.ones(4, 16)})

pm.summary()
print()
print("output[0, :4] =", np.round(outputs["output"][0, :4], 6))
for name in sorted(grads)[:3]:
    print(f"|d output / d {name}| = {np.linalg.norm(grads[name]):.6f}")
