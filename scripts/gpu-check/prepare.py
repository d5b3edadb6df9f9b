#!/usr/bin/python3
"""Builds a bundle that checks the GPU path on a machine with an NVIDIA GPU
but without LLVM, MLIR or this project's build.

For each case, here (no GPU needed):
  - `mithril-run --target=cuda --emit=obj` compiles the model ahead of time
    (host code with the PTX kernels embedded) and `--emit=h` writes its C
    header (the order, names, types and shapes of the arguments);
  - the object is linked into case.so against libmithril_cuda_runtime;
  - inputs are drawn (fixed seed) and the CPU pipeline, which the test suites
    check against numpy and torch, writes the expected outputs.
run.py then runs each case.so on the GPU and compares.

  /usr/bin/python3 scripts/gpu-check/prepare.py BUILD_DIR BUNDLE_DIR [--target=cpu]

--target=cpu builds the same bundle for the CPU, which `run.py --cpu` runs
here: a check of the bundle and of run.py itself without a GPU.
"""
import os
import re
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS = os.path.join(ROOT, "examples", "models")

# name, model file, shapes, extra mithril-run flags
CASES = [
    ("mlp_b16", f"{MODELS}/mlp.mlir", ["input:16x784"], []),
    ("mlp_b256", f"{MODELS}/mlp.mlir", ["input:256x784"], []),
    ("cnn_b16", f"{MODELS}/cnn.mlir", ["input:16x1x28x28"], []),
    ("residual", f"{MODELS}/residual.mlir", ["x:2x16"], []),
    ("sgemm_1024", f"{HERE}/sgemm.mlir", ["a:1024x1024", "b:1024x1024"], []),
    ("sgemm_2048", f"{HERE}/sgemm.mlir", ["a:2048x2048", "b:2048x2048"], []),
    ("softmax_ln", f"{HERE}/softmax_ln.mlir", ["x:64x384"], ["--gradients"]),
    ("mlp_grad_b64", f"{MODELS}/mlp.mlir", ["input:64x784"], ["--gradients"]),
    ("mlp_adam_b64", f"{MODELS}/mlp.mlir", ["input:64x784"],
     ["--gradients", "--optimizer=adam"]),
    ("cnn_grad_b16", f"{MODELS}/cnn.mlir", ["input:16x1x28x28"], ["--gradients"]),
    ("cnn_sgd_b16", f"{MODELS}/cnn.mlir", ["input:16x1x28x28"],
     ["--gradients", "--optimizer=sgd", "--momentum=0.9"]),
    # bf16 and f16 between the ops (float32 terminals): their products run on
    # tensor cores (mma.sync) from sm_80 on.
    ("mlp_bf16_b256", f"{MODELS}/mlp.mlir", ["input:256x784"], ["--precision=bf16"]),
    ("mlp_f16_b256", f"{MODELS}/mlp.mlir", ["input:256x784"], ["--precision=f16"]),
    ("mlp_bf16_grad_b64", f"{MODELS}/mlp.mlir", ["input:64x784"],
     ["--precision=bf16", "--gradients"]),
    ("cnn_bf16_b16", f"{MODELS}/cnn.mlir", ["input:16x1x28x28"], ["--precision=bf16"]),
    # Written by the Python package (generated() below): a TrainModel with
    # CrossEntropy and integer targets, and the GPT example's training step.
    ("classifier_adam", "classifier.mlir", [], ["--gradients", "--optimizer=adam"]),
    ("gpt_adam", "gpt.mlir", [], ["--gradients", "--optimizer=adam"]),
]
# Integer terminals are drawn in [0, INT_RANGE[case]).
INT_RANGE = {"classifier_adam": 4, "gpt_adam": 65}


def generated(name, path):
    """Writes the models that the Python package builds (shapes included)."""
    sys.path.insert(0, os.path.join(ROOT, "python"))
    sys.path.insert(0, os.path.join(ROOT, "examples", "gpt"))
    import mithril as ml
    from mithril.models import CrossEntropy, Linear, Mean, Model, Relu, TrainModel
    backend = ml.MlirBackend(dtype=ml.float32)
    if name == "classifier_adam":
        model = Model()
        model |= Linear(64).connect(input="input")
        model += Relu()
        model += Linear(4).connect(output="logits")
        train = TrainModel(model)
        train.add_loss(CrossEntropy(), reduce_steps=[Mean()], input="logits", target="target")
        ml.compile(train, backend, shapes={"input": [32, 8], "target": [32]}, file_path=path)
    else:
        from model import create_gpt, create_gpt_train_model
        B, T, V = 8, 32, 65
        gpt = create_gpt(bias=True, block_size=T, dims=64, num_heads=4, num_layers=2,
                         vocab_size=V)
        ml.compile(create_gpt_train_model(gpt, V), backend,
                   shapes={"input": [B, T], "target": [B * T]}, file_path=path)

TERMINAL = re.compile(r"^/// (input|output) '([^']*)': (\w+) \[([0-9, ]*)\]$")


def terminals(header):
    """The arguments of the entry in order: (kind, name, dtype, shape)."""
    out = []
    for line in header.splitlines():
        m = TERMINAL.match(line)
        if m:
            shape = tuple(int(d) for d in m.group(4).split(",") if d.strip())
            out.append((m.group(1), m.group(2), m.group(3), shape))
    return out


def draw(name, dtype, shape, rng, int_range):
    if dtype.startswith("int"):
        return rng.integers(0, int_range, shape).astype(dtype)
    if name == "optimizer.lr":
        return np.array(0.01, dtype)
    if name == "optimizer.step":
        return np.array(3, dtype)
    if name.startswith("state:") and name.endswith(".v"):
        # Adam's second moment: positive, so that its square root is too.
        return (rng.random(shape) * 1e-3 + 1e-4).astype(dtype)
    scale = 0.05 if "weight" in name else 1.0
    return (rng.standard_normal(shape) * scale).astype(dtype)


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{result.stdout}{result.stderr}")
    return result.stdout


def main():
    build, bundle = sys.argv[1], sys.argv[2]
    target = "cpu" if "--target=cpu" in sys.argv else "cuda"
    mithril_run = os.path.join(build, "bin", "mithril-run")
    llvm_lib = "/usr/lib/llvm-22/lib"
    os.makedirs(bundle, exist_ok=True)
    for lib in (os.path.join(build, "lib", "libmithril_cuda_runtime.so"),
                os.path.join(llvm_lib, "libmlir_c_runner_utils.so")):
        shutil.copy(os.path.realpath(lib), os.path.join(bundle, os.path.basename(lib)))
    shutil.copy(os.path.join(HERE, "run.py"), bundle)
    rng = np.random.default_rng(2026)
    for name, model, shapes, flags in CASES:
        d = os.path.join(bundle, name)
        os.makedirs(d, exist_ok=True)
        if not os.path.isabs(model):
            model = os.path.join(d, model)
            generated(name, model)
        base = [mithril_run, model] + [f"--shape={s}" for s in shapes] + flags
        header = run(base + [f"--target={target}", "--emit=h", "-o", "-"])
        with open(f"{d}/model.h", "w") as f:
            f.write(header)
        if target == "cpu":
            base.append("--num-threads=1")
        run(base + [f"--target={target}", "--emit=obj", "-o", f"{d}/model.o"])
        run(["cc", "-shared", "-o", f"{d}/model.so", f"{d}/model.o", f"-L{bundle}",
             "-lmithril_cuda_runtime", "-lmlir_c_runner_utils", "-Wl,-rpath,$ORIGIN/..",
             "-Wl,-z,notext"])
        os.remove(f"{d}/model.o")
        args = terminals(header)
        if name.startswith("sgemm"):
            # 48 MiB of data at 2048: run.py draws it on the GPU, and torch
            # computes the reference in float64 there.
            continue
        inputs = {n: draw(n, t, s, rng, INT_RANGE.get(name, 2))
                  for k, n, t, s in args if k == "input"}
        np.savez(f"{d}/inputs.npz", **inputs)
        run([mithril_run, model] + flags + [f"--params={d}/inputs.npz", "-o",
                                            f"{d}/expected.npz"])
        print(f"{name}: {sum(k == 'input' for k, *_ in args)} inputs, "
              f"{sum(k == 'output' for k, *_ in args)} outputs")


if __name__ == "__main__":
    main()
