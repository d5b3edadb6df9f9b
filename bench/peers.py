# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Measures models compiled by this compiler against other ML compilers and
runtimes on this machine: ONNX Runtime, OpenVINO, JAX (XLA), IREE and torch
inductor. Writes bench/peers.md.

The orchestrator (this file, under Debian's python3) generates every case's
inputs and parameters once (numpy, fixed seeds) into a temporary folder as
.npy files, with a float64 reference result computed by numpy (for the GPT
of examples/gpt, by Debian's torch in float64, which also exports its ONNX
graph). Each
candidate then runs in its own fresh process (this file's worker mode),
pinned with taskset to the first N cores and with its own thread knob set to
N: ours under Debian's python3 with the build's package, peers under the
virtual environment that scripts/bench-peers.sh installs. A worker builds its
model, times the compile up to the first result, checks that result against
the reference (a float32 result more than 1e-4 away, relative, is reported as
wrong and not timed), then times blocks of calls, each between two timings
of the host's speed probe (bench/hostinfo.py), and reports each block's
median. Every (candidate, case) is launched several times, the candidates of a
case taking turns, and the table gives the median over launches of each
launch's median quiet block (probes within 15% of the run's fastest) and the
min-max spread across launches.

With --max-isa avx2 (output bench/peers-avx2.md) the table is measured as it
would run on a CPU without AVX-512 (AVX2 and FMA: Intel Haswell, AMD Zen 2):
each candidate is limited to that code as far as it allows (ISA_CAPS: ours
and IREE compile for haswell; XLA, inductor, oneDNN and MKL take their
settings; ONNX Runtime's MLAS, and OpenVINO's for some layers, have none),
and after its timing each launch checks the code it ran (ISA_CHECK). The
output says, per candidate, how it was capped and what its checks found.

    scripts/bench-peers.sh [VENV_DIR] [--quick] [--threads 1,2] [--max-isa avx2]
    python3 bench/peers.py --venv-python VENV/bin/python [--quick] [--threads 1,2]
        [--cases sgemm1024,mlp16] [--candidates ours,jax] [--launches 3] [--max-isa avx2]
        [-o bench/peers.md]
"""

import argparse
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from hostinfo import (AVX512_HWCAPS, LINK_FACTOR, LINK_LIBRARY, TORCH_AVX2_ENV, LinkProbe,
                      build_link_probe, cpu_isa, host_cpu, link_limit, quiet_limit, speed_probe,
                      within_limits)


HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CANDIDATES = ("ours", "ours-const", "ort", "openvino", "jax", "iree", "torch")
TITLES = {"ours": "ours", "ours-const": "ours, weights compiled in", "ort": "ONNX Runtime",
          "openvino": "OpenVINO", "jax": "JAX", "iree": "IREE", "torch": "torch inductor"}
# ours with the inference weights passed each call (--ours-weights), and
# compiled in (constant_keys: packed, and quantized in int8, when compiling).
OURS = ("ours", "ours-const")
PEERS = tuple(c for c in CANDIDATES if c not in OURS)
# Peers whose inference weights are constants of the compiled model (ONNX
# initializers, inductor's freezing): like for like, they compare with
# ours-const; JAX and IREE take them as arguments, as ours does.
CONSTANT_WEIGHT_PEERS = ("ort", "openvino", "torch")
OURS_CONST_ONLY = ("only the float inference cases with weights (int8 "
                   "compiles them in either way)")
LR = 0.01  # SGD learning rate of the training steps
INFERENCE_ONLY = "inference-only runtime: no training step"

# --max-isa avx2: the table as it would run on a CPU without AVX-512 (AVX2
# and FMA: Intel Haswell, AMD Zen 2), measured on this host. Per candidate:
# what its worker's environment gets ("env"; XLA_FLAGS and GLIBC_TUNABLES
# are added to what is there), its own compile option ("option": ours'
# cpu_options target_cpu, IREE's --iree-llvmcpu-target-cpu), and what the
# table says of the cap ("how"; "not_capped": why there is none). "common"
# is every candidate's. After its timing each launch checks the code it ran
# (ISA_CHECK). Found with the venv's pins, 2026-12-03:
# - glibc 2.36 picks its string functions' EVEX variants by CPUID, unless the
#   tunable takes the AVX-512 features away (ld.so --list-diagnostics).
# - jaxlib 0.10.2 hands these models' dots and convolutions to YNNPACK
#   fusions, whose kernels (dot_fp32_*_avx512 here) are picked by CPUID:
#   xla_cpu_max_isa caps only XLA's own LLVM code. Without the library fusions the dots and
#   convolutions run on XLA's Eigen runtime, built for AVX without FMA: JAX
#   then runs no AVX-512 instruction, but slower than on an AVX2 CPU (where
#   YNNPACK would pick its AVX2+FMA kernels).
# - torch: ATEN_CPU_CAPABILITY caps ATen's kernels and inductor's vector ISA
#   (cpu_vec_isa.pick_vec_isa), TORCHINDUCTOR_CPP_MARCH replaces inductor's
#   -march=native, ONEDNN_MAX_CPU_ISA its oneDNN (convolutions) and
#   MKL_ENABLE_INSTRUCTIONS its MKL (Linear layers, packed by freezing).
# - OpenVINO 2026.4.1 honours ONEDNN_MAX_CPU_ISA (brgemm_avx2_f32 for
#   brgemm_avx512_f32, brgconv_avx2_f32, jit_avx2_f32); its FullyConnected
#   layers without post-ops run on MLAS (gemm_mlas_f32), which, as ONNX
#   Runtime's, picks its kernels by CPUID with no setting to cap them.
XLA_NO_LIBRARIES = ("--xla_cpu_experimental_ynn_fusion_type= "
                    "--xla_cpu_experimental_xnn_fusion_type= --xla_cpu_use_onednn=false")
MLAS_UNCAPPED = ("MLAS picks its kernels by CPUID (AVX-512F ones on an AVX-512 host) and has "
                 "no setting to cap them")
ISA_CAPS = {"avx2": {
    "common": {"env": {"GLIBC_TUNABLES": AVX512_HWCAPS},
               "how": f"glibc's string functions: `GLIBC_TUNABLES={AVX512_HWCAPS}`"},
    "ours": {"option": "haswell",
             "how": "`cpu_options={\"target_cpu\": \"haswell\"}` in ml.compile"},
    "ort": {"not_capped": f"not capped (its AVX-512 kernels): {MLAS_UNCAPPED}"},
    "openvino": {"env": {"ONEDNN_MAX_CPU_ISA": "AVX2"},
                 "how": "`ONEDNN_MAX_CPU_ISA=AVX2` (oneDNN and the plugin's own JIT kernels); "
                        "its FullyConnected layers on MLAS (`gemm_mlas_*`) not capped: "
                        f"{MLAS_UNCAPPED}"},
    "jax": {"env": {"XLA_FLAGS": "--xla_cpu_max_isa=AVX2 " + XLA_NO_LIBRARIES},
            "how": "`XLA_FLAGS=--xla_cpu_max_isa=AVX2`, and no library fusions "
                   f"(`{XLA_NO_LIBRARIES}`): YNNPACK picks its kernels by CPUID, so dots and "
                   "convolutions run in jaxlib's runtime library instead, which picks its "
                   "kernels by CPUID (sgemm 1024 ran there at 143 GFLOP/s on one Emerald "
                   "Rapids core and at 273 on a Zen 5 core, beyond AVX2): not capped"},
    "iree": {"option": "haswell", "how": "`--iree-llvmcpu-target-cpu=haswell`"},
    "torch": {"env": {**TORCH_AVX2_ENV, "TORCHINDUCTOR_CPP_MARCH": "haswell"},
              "how": "`ATEN_CPU_CAPABILITY=avx2` (ATen, inductor's vector ISA), "
                     "`TORCHINDUCTOR_CPP_MARCH=haswell` (inductor's C++), "
                     "`ONEDNN_MAX_CPU_ISA=AVX2`, `MKL_ENABLE_INSTRUCTIONS=AVX2`"},
}}
ISA_TITLES = {"avx2": "AVX2 code"}
# Environment variables a cap adds to (with this separator) rather than sets.
ENV_JOIN = {"XLA_FLAGS": " ", "GLIBC_TUNABLES": ":"}
ISA = {"cap": None}  # the worker's --max-isa


def cap_option(cand):
    """The candidate's own option under the worker's --max-isa, or None."""
    return ISA_CAPS[ISA["cap"]].get(cand, {}).get("option") if ISA["cap"] else None


@dataclass(frozen=True)
class Case:
    id: str
    title: str
    kind: str               # "sgemm", "mlp" (784-512-512-10), "cnn" (bench.cnn) or "gpt"
    size: int               # n of an n x n sgemm, else the batch
    train: bool = False     # one SGD step on the mean cross entropy, not a forward
    precision: str = "f32"  # "f32", "int8" (dynamic: Linear and Conv weights) or "bf16"
    tol: float = 1e-4       # relative error against float64 beyond which a result is wrong
    skip: tuple = ()        # (candidate, reason) pairs not run for this case


_TRAIN_SKIP = (("ort", INFERENCE_ONLY), ("openvino", INFERENCE_ONLY), ("iree", INFERENCE_ONLY))
_INT8_SKIP = tuple((c, "not in the int8 comparison (ours against ONNX Runtime's "
                       "quantize_dynamic)") for c in ("openvino", "jax", "iree", "torch"))
_BF16_SKIP = tuple((c, "not in the bf16 comparison (ours against OpenVINO's bf16 hint and "
                       "torch autocast)") for c in ("ort", "jax", "iree"))
# int8 and bf16 errors are reported against the float64 reference; their
# tolerances only catch broken results.
CASES = {c.id: c for c in (
    Case("sgemm1024", "sgemm 1024", "sgemm", 1024),
    Case("sgemm2048", "sgemm 2048", "sgemm", 2048),
    Case("mlp1", "MLP b1", "mlp", 1),
    Case("mlp16", "MLP b16", "mlp", 16),
    Case("mlp256", "MLP b256", "mlp", 256),
    Case("mlptrain64", "MLP train step b64", "mlp", 64, train=True, skip=_TRAIN_SKIP),
    Case("cnn16", "CNN forward b16", "cnn", 16),
    Case("cnntrain16", "CNN train step b16", "cnn", 16, train=True, skip=_TRAIN_SKIP),
    Case("gpt1", "GPT forward b1", "gpt", 1),
    Case("gpt8", "GPT forward b8", "gpt", 8),
    Case("gpttrain8", "GPT train step b8", "gpt", 8, train=True, skip=_TRAIN_SKIP),
    Case("int8mlp16", "int8 MLP b16", "mlp", 16, precision="int8", tol=0.2, skip=_INT8_SKIP),
    Case("int8mlp256", "int8 MLP b256", "mlp", 256, precision="int8", tol=0.2,
         skip=_INT8_SKIP),
    Case("int8cnn16", "int8 CNN forward b16", "cnn", 16, precision="int8", tol=0.2,
         skip=_INT8_SKIP),
    Case("bf16mlp16", "bf16 MLP b16", "mlp", 16, precision="bf16", tol=5e-2,
         skip=_BF16_SKIP),
    Case("bf16mlp256", "bf16 MLP b256", "mlp", 256, precision="bf16", tol=5e-2,
         skip=_BF16_SKIP),
    Case("bf16cnn16", "bf16 CNN forward b16", "cnn", 16, precision="bf16", tol=5e-2,
         skip=_BF16_SKIP),
)}
QUICK_CASES = ("sgemm1024", "mlp16", "mlp256", "cnn16")

# Parameter names and shapes, as our models name them (Linear weights are
# [out, in] and convolution weights OIHW, as in torch).
MLP_PARAMS = {"linear_0.weight": (512, 784), "linear_0.bias": (512,),
              "linear_1.weight": (512, 512), "linear_1.bias": (512,),
              "linear_2.weight": (10, 512), "linear_2.bias": (10,)}
CNN_PARAMS = {"convolution2d_0.weight": (32, 1, 3, 3), "convolution2d_0.bias": (32,),
              "convolution2d_1.weight": (64, 32, 3, 3), "convolution2d_1.bias": (64,),
              "linear_0.weight": (10, 3136), "linear_0.bias": (10,)}


# The GPT of examples/gpt (nanoGPT's pre-LayerNorm blocks: causal attention,
# exact GELU) at a small transformer's size: 4 layers of 256 wide, 8 heads,
# 128 tokens of context, 1000 token ids; 3.5 M parameters. Its sequences are
# whole contexts of 128 token ids (a prompt's forward); training predicts
# each next token (cross entropy over all 128 positions).
GPT = dict(bias=True, block_size=128, dims=256, num_heads=8, num_layers=4, vocab_size=1000)
GPT_DIR = os.path.join(ROOT, "examples", "gpt")


def input_shape(case):
    if case.kind == "gpt":
        return [case.size, GPT["block_size"]]
    return [case.size, 784] if case.kind == "mlp" else [case.size, 1, 28, 28]


# float64 references (numpy only), with hand-written backward passes for the
# training steps.

def mlp64(p, x):
    """Logits and a function from their gradient to the parameters'."""
    acts = [x]
    for i in range(3):
        z = acts[-1] @ p[f"linear_{i}.weight"].T + p[f"linear_{i}.bias"]
        acts.append(np.maximum(z, 0) if i < 2 else z)

    def backward(g):
        grads = {}
        for i in reversed(range(3)):
            if i < 2:
                g = g * (acts[i + 1] > 0)
            grads[f"linear_{i}.weight"] = g.T @ acts[i]
            grads[f"linear_{i}.bias"] = g.sum(0)
            g = g @ p[f"linear_{i}.weight"]
        return grads
    return acts[-1], backward


def conv64(x, w, b):
    """3x3 convolution, stride 1, padding 1, by im2col."""
    n, c, hgt, wid = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))
    cols = cols.transpose(0, 2, 3, 1, 4, 5).reshape(n * hgt * wid, c * 9)
    wm = w.reshape(len(w), -1)
    out = (cols @ wm.T + b).reshape(n, hgt, wid, -1).transpose(0, 3, 1, 2)

    def backward(g):
        g2 = g.transpose(0, 2, 3, 1).reshape(-1, len(w))
        dcols = (g2 @ wm).reshape(n, hgt, wid, c, 3, 3)
        dxp = np.zeros_like(xp)
        for i in range(3):
            for j in range(3):
                dxp[:, :, i:i + hgt, j:j + wid] += dcols[..., i, j].transpose(0, 3, 1, 2)
        return dxp[:, :, 1:-1, 1:-1], (g2.T @ cols).reshape(w.shape), g2.sum(0)
    return out, backward


def pool64(x):
    """2x2 max pooling, stride 2. Ties (zeros after a ReLU) all get the
    gradient, which the ReLU before then drops."""
    n, c, hgt, wid = x.shape
    blocks = x.reshape(n, c, hgt // 2, 2, wid // 2, 2)
    out = blocks.max(axis=(3, 5))

    def backward(g):
        mask = blocks == out[:, :, :, None, :, None]
        return (mask * g[:, :, :, None, :, None]).reshape(x.shape)
    return out, backward


def cnn64(p, x):
    """bench.cnn: conv 32, ReLU, pool, conv 64, ReLU, pool, flatten, Linear 10."""
    z1, conv1_back = conv64(x, p["convolution2d_0.weight"], p["convolution2d_0.bias"])
    h1, pool1_back = pool64(np.maximum(z1, 0))
    z2, conv2_back = conv64(h1, p["convolution2d_1.weight"], p["convolution2d_1.bias"])
    h2, pool2_back = pool64(np.maximum(z2, 0))
    flat = h2.reshape(len(x), -1)
    logits = flat @ p["linear_0.weight"].T + p["linear_0.bias"]

    def backward(g):
        grads = {"linear_0.weight": g.T @ flat, "linear_0.bias": g.sum(0)}
        g = pool2_back((g @ p["linear_0.weight"]).reshape(h2.shape)) * (z2 > 0)
        g, grads["convolution2d_1.weight"], grads["convolution2d_1.bias"] = conv2_back(g)
        g = pool1_back(g) * (z1 > 0)
        _, grads["convolution2d_0.weight"], grads["convolution2d_0.bias"] = conv1_back(g)
        return grads
    return logits, backward


def cross_entropy64(z, y):
    """Mean cross entropy of logits `z` on integer targets, and its gradient."""
    m = z.max(1, keepdims=True)
    e = np.exp(z - m)
    s = e.sum(1, keepdims=True)
    rows = np.arange(len(y))
    loss = float(np.mean(np.log(s[:, 0]) + m[:, 0] - z[rows, y]))
    g = e / s
    g[rows, y] -= 1
    return loss, g / len(y)


def make_gpt_data(case, folder, rng, save):
    """The GPT's parameters (torch's initialization of examples/gpt's
    torch_model.py, under our names), token ids, its float64 reference
    (torch, Debian's: the test oracle, in float64 from the float32
    parameters), and its ONNX graph for ONNX Runtime and OpenVINO (torch's
    exporter, opset 17, the weights as initializers, written here: their
    compile time counts from reading it). Returns the parameter names."""
    import torch
    sys.path.insert(0, GPT_DIR)
    from torch_model import TorchGPT
    torch.manual_seed(zlib.crc32(case.id.encode()))
    net = TorchGPT(**GPT)
    params = net.mithril_params()
    x = rng.integers(0, GPT["vocab_size"], input_shape(case))
    for name, value in params.items():
        save("p_" + name, value)
    save("x", x)
    tokens = torch.from_numpy(x)
    if not case.train:
        torch.onnx.export(net.eval(), (tokens,), os.path.join(folder, "model.onnx"),
                          opset_version=17, input_names=["x"], output_names=["logits"])
    net64 = TorchGPT(**GPT).double()
    net64.load_mithril({k: v.astype(np.float64) for k, v in params.items()})
    if case.train:
        y = rng.integers(0, GPT["vocab_size"], case.size * GPT["block_size"])
        save("y", y)
        loss = net64.loss(tokens, torch.from_numpy(y))
        loss.backward()
        save("ref_loss", np.array(loss.item()))
        for name, grad in net64.mithril_grads().items():
            save("ref_p_" + name, params[name].astype(np.float64) - LR * grad)
    else:
        save("ref", net64(tokens).detach().numpy())
    return list(params)


def make_data(case, folder):
    """Writes the case's inputs, parameters and float64 reference as .npy."""
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(zlib.crc32(case.id.encode()))
    save = lambda name, value: np.save(os.path.join(folder, name + ".npy"), value)
    if case.kind == "gpt":
        names = make_gpt_data(case, folder, rng, save)
    elif case.kind == "sgemm":
        a, b = (rng.standard_normal((case.size, case.size)).astype(np.float32) for _ in "ab")
        save("a", a)
        save("b", b)
        save("ref", a.astype(np.float64) @ b.astype(np.float64))
        names = []
    else:
        shapes = MLP_PARAMS if case.kind == "mlp" else CNN_PARAMS
        params = {}
        for name, shape in shapes.items():  # torch's default initialization
            weight = shapes[name.rsplit(".", 1)[0] + ".weight"]
            bound = 1 / np.sqrt(np.prod(weight[1:]))
            params[name] = rng.uniform(-bound, bound, shape).astype(np.float32)
        x = rng.standard_normal(input_shape(case)).astype(np.float32)
        for name, value in params.items():
            save("p_" + name, value)
        save("x", x)
        p64 = {k: v.astype(np.float64) for k, v in params.items()}
        logits, backward = (mlp64 if case.kind == "mlp" else cnn64)(p64, x.astype(np.float64))
        if case.train:
            y = rng.integers(0, 10, case.size)
            save("y", y)
            loss, g = cross_entropy64(logits, y)
            save("ref_loss", np.array(loss))
            for name, grad in backward(g).items():
                save("ref_p_" + name, p64[name] - LR * grad)
        else:
            save("ref", logits)
        names = list(params)
    with open(os.path.join(folder, "meta.json"), "w") as f:
        json.dump({"params": names}, f)


def load_data(folder):
    load = lambda name: np.load(os.path.join(folder, name + ".npy"))
    with open(os.path.join(folder, "meta.json")) as f:
        names = json.load(f)["params"]
    d = {"params": {k: load("p_" + k) for k in names}, "folder": folder}
    for name in ("a", "b", "x", "y", "ref", "ref_loss"):
        if os.path.exists(os.path.join(folder, name + ".npy")):
            d[name] = load(name)
    d["ref_params"] = {k: load("ref_p_" + k) for k in names
                       if os.path.exists(os.path.join(folder, f"ref_p_{k}.npy"))}
    return d


# The worker: one candidate, one case, in its own process. setup_* imports
# and sets thread knobs (not timed); build_* makes the model and returns
# (run, params): run() computes one result (a training step returns its
# loss), params() the parameters after the steps run so far (training only).

def setup_ours(threads):
    # bench.py imports torch when it can: Debian's torch stays out of our process.
    sys.modules.setdefault("torch", None)
    sys.path.insert(0, HERE)
    import mithril as ml
    from mithril import models
    from mithril.types import to_bfloat16_bits
    import bench
    return SimpleNamespace(ml=ml, models=models, bench=bench, to_bf16=to_bfloat16_bits)


# How ours gets the weights of an inference case (--ours-weights): as
# arguments of each call ("args"), or compiled in ("compiled"). int8 always
# compiles them in (quantized when compiling).
OURS_WEIGHTS = {"mode": "args"}
# The models build_ours compiled in this worker (check_ours reads their code).
OURS_COMPILED = []


def ours_compile(ml, *args, **kwargs):
    """ml.compile, for the --max-isa cap's target CPU where the worker has one."""
    target = cap_option("ours")
    if target:
        kwargs["cpu_options"] = {"target_cpu": target}
    pm = ml.compile(*args, **kwargs)
    OURS_COMPILED.append(pm)
    return pm


def build_ours(lib, case, d, threads, scratch):
    ml, models = lib.ml, lib.models
    options = {"num_threads": threads}
    if case.precision == "int8":
        options["quantize"] = "int8"
    elif case.precision == "bf16":
        options["dtype"] = ml.bfloat16
    backend = ml.MlirBackend(**options)
    if case.kind == "sgemm":
        model = models.Model()
        model |= models.MatrixMultiply().connect(left="a", right="b", output=ml.IOKey("c"))
        n = case.size
        pm = ours_compile(ml, model, backend, shapes={"a": [n, n], "b": [n, n]}, inference=True)
        data = {"a": d["a"], "b": d["b"]}
        return (lambda: pm.evaluate({}, data)["c"]), None
    if case.kind == "gpt":
        sys.path.insert(0, GPT_DIR)
        from model import create_gpt, create_gpt_train_model
        net, output = create_gpt(**GPT), "output"
    else:
        net, output = (lib.bench.mlp() if case.kind == "mlp" else lib.bench.cnn()), "logits"
    params = dict(d["params"])
    if case.train:
        # train_step updates the parameters in place: the data's own arrays
        # stay the starting point the result is checked from.
        params = {k: v.copy() for k, v in params.items()}
        if case.kind == "gpt":  # next-token cross entropy over [B*T, V]
            train = create_gpt_train_model(net, GPT["vocab_size"])
        else:
            train = models.TrainModel(net)
            train.add_loss(models.CrossEntropy(), reduce_steps=[models.Mean()], input="logits",
                           target="target")
        pm = ours_compile(ml, train, backend, shapes={"input": input_shape(case),
                                                      "target": [len(d["y"])]})
        data, opt = {"input": d["x"], "target": d["y"]}, ml.SGD(lr=LR)
        # train_step updates `params` (in place, or replacing entries).
        return (lambda: pm.train_step(params, data, opt)["final_cost"]), (lambda: params)
    if case.precision == "int8":
        # As ONNX Runtime's initializers: the weights compiled in, quantized
        # when compiling (per call, only the activations are).
        pm = ours_compile(ml, net, backend, shapes={"input": input_shape(case)}, inference=True,
                          constant_keys=params)
        return (lambda: pm.evaluate({}, {"input": d["x"]})[output]), None
    x = d["x"]
    if case.precision == "bf16":  # bfloat16 bit patterns pass unconverted
        params = {k: lib.to_bf16(v) for k, v in params.items()}
        x = lib.to_bf16(x)
    if OURS_WEIGHTS["mode"] == "compiled":
        # As the inference runtimes' initializers (and torch's freezing): the
        # weights compiled in, packed when compiling.
        pm = ours_compile(ml, net, backend, shapes={"input": input_shape(case)}, inference=True,
                          constant_keys=params)
        return (lambda: pm.evaluate({}, {"input": x})[output]), None
    pm = ours_compile(ml, net, backend, shapes={"input": input_shape(case)}, inference=True)
    return (lambda: pm.evaluate(params, {"input": x})[output]), None


def write_onnx(case, d, path):
    """The case's model as an ONNX graph (opset 17), weights as initializers.
    Linear layers are MatMul + Add, which quantize_dynamic turns to int8 (and
    Conv to ConvInteger)."""
    if case.kind == "gpt":  # torch's export, written with the data (make_gpt_data)
        return os.path.join(d["folder"], "model.onnx")
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    nodes, inits = [], []

    def const(name, value):
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(op, inputs, **attrs):
        out = f"t{len(nodes)}"
        nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def linear(h, p, name):
        h = node("MatMul", [h, const(name + ".wt", p[name + ".weight"].T)])
        return node("Add", [h, const(name + ".b", p[name + ".bias"])])

    value = lambda name, shape: helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
    if case.kind == "sgemm":
        n = case.size
        inputs, out, out_shape = [value("a", [n, n]), value("b", [n, n])], None, [n, n]
        out = node("MatMul", ["a", "b"])
    else:
        p, h = d["params"], "x"
        inputs, out_shape = [value("x", input_shape(case))], [case.size, 10]
        if case.kind == "mlp":
            for i in range(3):
                h = linear(h, p, f"linear_{i}")
                h = node("Relu", [h]) if i < 2 else h
        else:
            for i in range(2):
                name = f"convolution2d_{i}"
                h = node("Conv", [h, const(name + ".w", p[name + ".weight"]),
                                  const(name + ".b", p[name + ".bias"])],
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1])
                h = node("MaxPool", [node("Relu", [h])], kernel_shape=[2, 2], strides=[2, 2])
            h = linear(node("Flatten", [h], axis=1), p, "linear_0")
        out = h
    graph = helper.make_graph(nodes, case.id, inputs, [value(out, out_shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def onnx_feeds(case, d):
    return {"a": d["a"], "b": d["b"]} if case.kind == "sgemm" else {"x": d["x"]}


def setup_ort(threads):
    import onnx  # write_onnx's, imported before the clock starts
    import onnxruntime
    return SimpleNamespace(onnx=onnx, ort=onnxruntime)


def build_ort(lib, case, d, threads, scratch):
    ort = lib.ort
    path = write_onnx(case, d, os.path.join(scratch, "model.onnx"))
    if case.precision == "int8":
        from onnxruntime.quantization import QuantType, quantize_dynamic
        quantized = os.path.join(scratch, "model.int8.onnx")
        quantize_dynamic(path, quantized, weight_type=QuantType.QInt8, per_channel=True)
        path = quantized
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    feeds = onnx_feeds(case, d)
    return (lambda: session.run(None, feeds)[0]), None


def setup_openvino(threads):
    import onnx  # write_onnx's, imported before the clock starts
    import openvino
    return SimpleNamespace(onnx=onnx, ov=openvino)


def build_openvino(lib, case, d, threads, scratch):
    core = lib.ov.Core()
    model = core.read_model(write_onnx(case, d, os.path.join(scratch, "model.onnx")))
    # f32 is asked for explicitly: the CPU plugin defaults to bf16 where the
    # CPU has it. Under --max-isa, bf16 cases too: the plugin reads bf16
    # support from CPUID, and the capped oneDNN has no bf16 inner product
    # (compiling fails); on a CPU without bf16 instructions it computes in f32.
    bf16 = case.precision == "bf16" and not ISA["cap"]
    config = {"INFERENCE_NUM_THREADS": threads, "NUM_STREAMS": 1,
              "PERFORMANCE_HINT": "LATENCY",
              "INFERENCE_PRECISION_HINT": "bf16" if bf16 else "f32"}
    compiled = core.compile_model(model, "CPU", config)
    request = compiled.create_infer_request()
    feeds = dict(enumerate(onnx_feeds(case, d).values()))

    def run():
        request.infer(feeds, share_inputs=True)
        return request.get_output_tensor(0).data
    run.compiled = compiled  # check_openvino reads its runtime model
    if case.precision == "bf16":  # the CPU plugin falls back to f32 without bf16 support
        precision = compiled.get_property("INFERENCE_PRECISION_HINT")
        run.note = f"computes in {getattr(precision, 'to_string', precision.__str__)()}"
        if ISA["cap"]:
            run.note += (" (asked for under the cap: the bf16 hint's fallback on a CPU "
                         "without bf16 support)")
    return run, None


def setup_jax(threads):
    import jax
    import jax.numpy as jnp
    from jax import lax
    return SimpleNamespace(jax=jax, jnp=jnp, lax=lax)


def jax_forward(lib, kind):
    """The model as a jnp function of (params, x), x in NCHW as for everyone.
    The convolutions run in NHWC with HWIO weights (jax_params), the layout
    XLA and IREE compile best on CPUs (IREE's NCHW convolution is some 25x
    slower here); the result is back in NCHW before the flatten."""
    jnp, lax = lib.jnp, lib.lax
    if kind == "gpt":
        return jax_gpt(lib)
    relu = lambda h: jnp.maximum(h, 0)
    linear = lambda h, p, name: h @ p[name + ".weight"].T + p[name + ".bias"]
    if kind == "mlp":
        return lambda p, x: linear(relu(linear(relu(linear(x, p, "linear_0")), p, "linear_1")),
                                   p, "linear_2")

    def conv(h, p, name):
        h = lax.conv_general_dilated(h, p[name + ".weight"], (1, 1), ((1, 1), (1, 1)),
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return h + p[name + ".bias"]

    pool = lambda h: lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

    def forward(p, x):
        h = pool(relu(conv(x.transpose(0, 2, 3, 1), p, "convolution2d_0")))
        h = pool(relu(conv(h, p, "convolution2d_1"))).transpose(0, 3, 1, 2)
        return linear(h.reshape(h.shape[0], -1), p, "linear_0")
    return forward


def jax_gpt(lib):
    """examples/gpt's GPT as a jnp function of (params, token ids)."""
    jax, jnp = lib.jax, lib.jnp
    heads, layers, t = GPT["num_heads"], GPT["num_layers"], GPT["block_size"]

    def norm(h, p, name):
        mean = h.mean(-1, keepdims=True)
        var = ((h - mean) ** 2).mean(-1, keepdims=True)
        return (h - mean) / jnp.sqrt(var + 1e-5) * p[name + ".weight"] + p[name + ".bias"]

    linear = lambda h, p, name: h @ p[name + ".weight"].T + p[name + ".bias"]
    above = jnp.triu(jnp.ones((t, t), bool), 1)

    def forward(p, x):
        b = x.shape[0]
        h = p["transformer.wte_weight"][x] + p["transformer.wpe_weight"][jnp.arange(t)]
        for i in range(layers):
            pre = f"transformer.h.{i}."
            q, k, v = jnp.split(linear(norm(h, p, pre + "ln_1"), p, pre + "attn.c_attn"), 3, -1)
            q, k, v = (z.reshape(b, t, heads, -1).transpose(0, 2, 1, 3) for z in (q, k, v))
            scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
            y = jax.nn.softmax(jnp.where(above, -jnp.inf, scores), -1) @ v
            h = h + linear(y.transpose(0, 2, 1, 3).reshape(h.shape), p, pre + "attn.c_proj")
            m = jax.nn.gelu(linear(norm(h, p, pre + "ln_2"), p, pre + "mlp.c_fc"),
                            approximate=False)
            h = h + linear(m, p, pre + "mlp.c_proj")
        return norm(h, p, "transformer.ln_f") @ p["lm_head.weight"].T
    return forward


def jax_tokens(case, d):
    """The token ids as int32 (JAX's default integers), other inputs as they are."""
    return d["x"].astype(np.int32) if case.kind == "gpt" else d["x"]


def jax_params(params, inverse=False):
    """Our parameters with convolution weights OIHW -> HWIO (or back)."""
    axes = (3, 2, 0, 1) if inverse else (2, 3, 1, 0)
    return {k: np.ascontiguousarray(v.transpose(axes)) if v.ndim == 4 else v
            for k, v in params.items()}


def build_jax(lib, case, d, threads, scratch):
    jax, jnp = lib.jax, lib.jnp
    if case.kind == "sgemm":
        matmul = jax.jit(lambda a, b: a @ b)
        a, b = jax.device_put(d["a"]), jax.device_put(d["b"])
        run = lambda: matmul(a, b).block_until_ready()
        run.lower = lambda: matmul.lower(a, b)  # check_jax compiles it again, dumping
        return run, None
    forward = jax_forward(lib, case.kind)
    params = {k: jax.device_put(v) for k, v in jax_params(d["params"]).items()}
    x = jax.device_put(jax_tokens(case, d))
    if not case.train:
        f = jax.jit(forward)
        run = lambda: f(params, x).block_until_ready()
        run.lower = lambda: f.lower(params, x)
        return run, None
    y = jax.device_put(d["y"].astype(np.int32))

    def loss_fn(p, x, y):
        z = forward(p, x)
        z = z.reshape(-1, z.shape[-1])  # a GPT's [B, T, V] logits: one row per token
        return jnp.mean(jax.nn.logsumexp(z, axis=1) - jnp.take_along_axis(z, y[:, None], 1)[:, 0])

    def step(p, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(p, x, y)
        return jax.tree_util.tree_map(lambda w, g: w - LR * g, p, grads), loss
    step = jax.jit(step, donate_argnums=0)  # parameters updated in place
    state = {"p": params}

    def run():
        state["p"], loss = step(state["p"], x, y)
        return loss.block_until_ready()
    run.lower = lambda: step.lower(state["p"], x, y)
    return run, (lambda: jax_params({k: np.asarray(v) for k, v in state["p"].items()},
                                    inverse=True))


def setup_iree(threads):
    import iree.compiler
    import iree.runtime
    # Before the first device: N task executors' worth of threads.
    iree.runtime.flags.parse_flags(f"--task_topology_max_group_count={threads}")
    lib = setup_jax(threads)
    lib.compiler, lib.rt = iree.compiler, iree.runtime
    return lib


def build_iree(lib, case, d, threads, scratch):
    """JAX's StableHLO export of the model (parameters as arguments, as for
    JAX), compiled by IREE for this CPU and run on its local-task driver (local-sync
    on one thread)."""
    jax, rt = lib.jax, lib.rt
    if case.kind == "sgemm":
        fn, args = (lambda a, b: a @ b), [d["a"], d["b"]]
    else:
        params, forward = jax_params(d["params"]), jax_forward(lib, case.kind)
        fn = lambda x, *weights: forward(dict(zip(params, weights)), x)
        args = [jax_tokens(case, d)] + list(params.values())
    exported = jax.export.export(jax.jit(fn))(
        *[jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args])
    flags = [f"--iree-llvmcpu-target-cpu={cap_option('iree') or 'host'}"]
    compile_vmfb = lambda extra=(): lib.compiler.compile_str(
        exported.mlir_module(), target_backends=["llvm-cpu"], input_type="stablehlo",
        extra_args=flags + list(extra))
    vmfb = compile_vmfb()
    # One thread: local-sync runs the dispatches on the calling thread. On
    # local-task the caller's wait for its one worker ended on the kernel's
    # 4 ms ticks (every call took a multiple of 4 ms: sgemm 1024 32.0 ms,
    # 29.5 on local-sync; Zen 4, 2026-12-01).
    config = rt.Config("local-sync" if threads == 1 else "local-task")
    context = rt.SystemContext(config=config)
    module = rt.VmModule.copy_buffer(context.instance, vmfb)
    context.add_vm_module(module)
    main = context.modules[module.name]["main"]
    device_args = [rt.asdevicearray(config.device, a) for a in args]
    run = lambda: main(*device_args).to_host()
    run.dump = lambda folder: compile_vmfb([f"--iree-hal-dump-executable-binaries-to={folder}"])
    return run, None


def setup_torch(threads):
    import torch
    import torch._inductor.config
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    return SimpleNamespace(torch=torch)


def torch_net(torch, kind, params):
    """The model as an nn.Sequential holding `params`, and the index of each
    parameterized layer to its name in ours."""
    nn = torch.nn
    if kind == "mlp":
        layers = [nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                  nn.Linear(512, 10)]
        names = {0: "linear_0", 2: "linear_1", 4: "linear_2"}
    else:
        layers = [nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                  nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                  nn.Linear(3136, 10)]
        names = {0: "convolution2d_0", 3: "convolution2d_1", 7: "linear_0"}
    net = nn.Sequential(*layers)
    with torch.no_grad():
        for i, name in names.items():
            net[i].weight.copy_(torch.from_numpy(params[name + ".weight"]))
            net[i].bias.copy_(torch.from_numpy(params[name + ".bias"]))
    return net, names


def build_torch(lib, case, d, threads, scratch):
    """torch.compile with the inductor backend; inference with autograd off
    and inductor's freezing (weights folded as constants and prepacked)."""
    torch = lib.torch
    if not case.train:
        torch.set_grad_enabled(False)
        torch._inductor.config.freezing = True
    if case.kind == "sgemm":
        matmul = torch.compile(lambda a, b: a @ b, backend="inductor")
        a, b = torch.from_numpy(d["a"]), torch.from_numpy(d["b"])
        return (lambda: matmul(a, b)), None
    if case.kind == "gpt":
        sys.path.insert(0, GPT_DIR)
        from torch_model import TorchGPT
        net = TorchGPT(**GPT)
        net.load_mithril(d["params"])
        names = None
    else:
        net, names = torch_net(torch, case.kind, d["params"])
    x = torch.from_numpy(d["x"])
    if not case.train:
        net.eval()
        f = torch.compile(net, backend="inductor")
        if case.precision != "bf16":
            return (lambda: f(x)), None

        def autocast_run():
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return f(x).float()
        return autocast_run, None
    y = torch.from_numpy(d["y"])
    loss_fn = torch.compile(  # forward and backward graphs compiled
        lambda x, y: torch.nn.functional.cross_entropy(net(x).reshape(len(y), -1), y),
        backend="inductor")
    opt = torch.optim.SGD(net.parameters(), lr=LR)

    def run():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(x, y)
        loss.backward()
        opt.step()
        return loss.detach()

    def params():
        if names is None:  # the GPT's, under our names
            return net.mithril_params()
        return {f"{name}.{kind}": getattr(net[i], kind).detach().numpy().copy()
                for i, name in names.items() for kind in ("weight", "bias")}
    return run, params


SETUP = {"ours": setup_ours, "ort": setup_ort, "openvino": setup_openvino, "jax": setup_jax,
         "iree": setup_iree, "torch": setup_torch}
BUILD = {"ours": build_ours, "ort": build_ort, "openvino": build_openvino, "jax": build_jax,
         "iree": build_iree, "torch": build_torch}


# --max-isa's checks, after the timing: what code the candidate ran. Each
# returns (verdict, evidence): "verified" (none of its code is AVX-512),
# "partly" (some of it is not capped), "failed" (AVX-512 code found) or
# "unverified", and a dict of what was seen, values that the report merges
# over every launch.

def avx512_instructions(paths, skip=None):
    """How many of the instructions in the code of `paths` (object files,
    archives, shared libraries) are AVX-512 (EVEX-encoded: in 64-bit mode
    the 0x62 byte after any address-size or segment prefix), and how many
    there are, per objdump; functions whose name holds `skip` are left out.
    None without objdump."""
    objdump = shutil.which("objdump")
    if objdump is None or not paths:
        return None
    evex = total = 0
    for path in paths:
        out = subprocess.run([objdump, "-d", "--insn-width=16", path], capture_output=True,
                             text=True).stdout
        counted = True
        for line in out.splitlines():
            if line.endswith(">:"):
                counted = skip is None or skip not in line
                continue
            fields = line.split("\t")
            if not counted or len(fields) < 3 or not fields[0].strip().endswith(":"):
                continue
            code = fields[1].split()
            while code and code[0] in ("67", "26", "2e", "36", "3e", "64", "65"):
                code.pop(0)
            total += 1
            evex += bool(code) and code[0] == "62"
    return evex, total


def code_verdict(counted, what):
    """The verdict and evidence for avx512_instructions' count of `what`."""
    if counted is None:
        return "unverified", {what: ["not read (no objdump, or no code found)"]}
    evex, total = counted
    if evex:
        return "failed", {what: [f"{evex} AVX-512 instructions"]}
    return "verified", {what: ["no AVX-512 instruction (objdump)"]}


def captured_stdout(fn):
    """What `fn` writes on file descriptor 1 (C libraries' verbose output)."""
    sys.stdout.flush()
    with tempfile.TemporaryFile("w+") as tmp:
        saved = os.dup(1)
        os.dup2(tmp.fileno(), 1)
        try:
            fn()
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)
        tmp.seek(0)
        return tmp.read()


def check_ours(lib, run, scratch):
    """The object code of every model this worker compiled."""
    paths = []
    for pm in OURS_COMPILED:
        models = [getattr(pm, "_forward_model", None)]
        # A training step's entry: (compiled model, inputs, outputs, states).
        models += [m[0] if isinstance(m, tuple) else m
                   for m in getattr(pm, "_gradient_models", {}).values()]
        for m in models:
            if m is not None:
                paths.append(os.path.join(scratch, f"ours-{len(paths)}.o"))
                with open(paths[-1], "wb") as f:
                    f.write(m.object_code)
    return code_verdict(avx512_instructions(paths), "object code")


def check_ort(lib, run, scratch):
    return "not capped", {}


def check_openvino(lib, run, scratch):
    """The primitive types of the runtime model's compute layers."""
    types = set()
    for op in run.compiled.get_runtime_model().get_ordered_ops():
        rt = op.get_rt_info()
        kind = rt["primitiveType"].astype(str) if "primitiveType" in rt else "unknown"
        if not kind.startswith("unknown"):
            types.add(kind)
    evidence = {"primitive types": sorted(types)}
    if any("avx512" in t or "amx" in t for t in types):
        return "failed", evidence
    return ("partly" if any("mlas" in t for t in types) else "verified"), evidence


def check_jax(lib, run, scratch):
    """The same function compiled again with XLA's dump: its object code,
    and the library fusions of its optimized HLO."""
    dump = os.path.join(scratch, "xla-dump")
    hlo = run.lower().compile(compiler_options={"xla_dump_to": dump}).as_text()
    fusions = sorted(set(re.findall(r"__(?:ynn|xnn|onednn)\w*", hlo)))
    objects = [os.path.join(dump, n) for n in os.listdir(dump) if n.endswith(".o")]
    if objects:
        verdict, evidence = code_verdict(avx512_instructions(objects), "XLA's object code")
    else:  # a lone dot: XLA compiles no kernel, its runtime library runs it (below)
        verdict, evidence = "verified", {"XLA's object code": ["none compiled"]}
    # The libraries pick their kernels by CPUID: AVX-512 ones on this host.
    evidence["library fusions (YNNPACK, XNNPACK, oneDNN)"] = fusions or ["none"]
    if fusions:
        return "failed", evidence
    # Dots and convolutions left to jaxlib's runtime library are not in the
    # dump; that library picks its kernels by CPUID: the MLP at batch 256 ran
    # at 122 GFLOP/s on one core so capped (Emerald Rapids), beyond AVX
    # without FMA, and sgemm 1024 at 273 on a Zen 5 core, our AVX-512 code's
    # rate and twice our AVX2 code's. Those are the work of every case: not
    # capped, out of the ratios.
    if verdict == "verified" and re.search(r"\b(dot|convolution)\(", hlo):
        verdict = "not capped"
        evidence["runtime library dots and convolutions"] = ["by CPUID: not capped"]
    return verdict, evidence


def check_iree(lib, run, scratch):
    """The module compiled again, dumping its executables."""
    dump = os.path.join(scratch, "iree-dump")
    run.dump(dump)
    objects = [os.path.join(dump, n) for n in os.listdir(dump) if n.endswith(".so")]
    return code_verdict(avx512_instructions(objects), "executables' code")


def check_torch(lib, run, scratch):
    """ATen's capability, inductor's vector ISA and the code of its kernels
    (not the ISA probes it compiles), and one more call with oneDNN's and
    MKL's verbose output: the ISA they report and the implementations run."""
    torch = lib.torch
    from torch._inductor import cpu_vec_isa
    cache = os.environ.get("TORCHINDUCTOR_CACHE_DIR", "")
    kernels = [os.path.join(folder, n) for folder, _, names in os.walk(cache)
               for n in names if n.endswith(".so")]
    verdict, evidence = code_verdict(avx512_instructions(kernels, skip="chk_kernel"),
                                     "inductor's kernels")
    evidence["ATen capability"] = [torch.backends.cpu.get_cpu_capability()]
    evidence["inductor vector ISA"] = [str(cpu_vec_isa.pick_vec_isa())]

    def verbose_call():
        with torch.backends.mkl.verbose(torch.backends.mkl.VERBOSE_ON), \
             torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
            run()
    text = captured_stdout(verbose_call)
    onednn = sorted({f"{f[5]} {f[6]}" for f in (line.split(",") for line in text.splitlines())
                     if f[0] == "onednn_verbose" and len(f) > 6 and f[3] == "exec"})
    onednn += re.findall(r"onednn_verbose,v1,info,cpu,(isa:[^,\n]+)", text)
    mkl = re.findall(r"MKL_VERBOSE oneMKL.*?\((Intel\(R\) [^)]+)\)", text)
    evidence["oneDNN"] = onednn or ["not called"]
    evidence["MKL"] = mkl or ["not called"]
    seen = " ".join(evidence["ATen capability"] + evidence["inductor vector ISA"] + onednn + mkl)
    if re.search(r"avx512|amx|AVX-?512|AVX 10", seen, re.I):
        verdict = "failed"
    return verdict, evidence


ISA_CHECK = {"ours": check_ours, "ort": check_ort, "openvino": check_openvino,
             "jax": check_jax, "iree": check_iree, "torch": check_torch}


def relerr(got, ref):
    """Relative Frobenius error; inf where the result is not finite."""
    got = np.asarray(got, np.float64).reshape(np.shape(ref))
    err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
    return err if np.isfinite(err) else float("inf")


def train_error(loss, params, d):
    """The larger of the loss's relative error and the parameter update's.
    The update is lr * gradient, thousands of times smaller than the weights:
    storing the updated weights in float32 rounds them by up to an ulp, which
    alone is some 1e-4 of the update. So differences within one float32 ulp
    of the reference's updated weight are not counted, and the rest is
    relative to the reference's update (a gradient 1e-3 off still shows)."""
    ref_loss = float(d["ref_loss"])
    loss_err = abs(float(np.asarray(loss, np.float64)) - ref_loss) / abs(ref_loss)
    names = sorted(d["params"])
    got = np.concatenate([np.ravel(np.asarray(params[k], np.float64)) for k in names])
    want = np.concatenate([np.ravel(d["ref_params"][k]) for k in names])
    start = np.concatenate([np.ravel(d["params"][k]) for k in names]).astype(np.float64)
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    beyond = np.maximum(np.abs(got - want) - ulp, 0)
    err = max(loss_err, float(np.linalg.norm(beyond) / np.linalg.norm(want - start)))
    return err if np.isfinite(err) else float("inf")


def block_median(run, blocks, block_s, link=None):
    """The median seconds of a call over `blocks` blocks of calls (each at
    least block_s and 4 calls; a block's first call is not counted), after one
    warm-up call; and each block's median call with the host's speed probe
    before and after it (hostinfo.speed_probe) and, on more than one core, the
    round trip between two of them before and after it (hostinfo.LinkProbe),
    to tell quiet blocks from slow."""
    run()
    times, per_block = [], []
    for _ in range(blocks):
        link_before = link() if link else None
        probe_before = speed_probe()
        start, calls, block = time.perf_counter(), 0, []
        while True:
            t0 = time.perf_counter()
            run()
            t1 = time.perf_counter()
            calls += 1
            if calls > 1:
                block.append(t1 - t0)
            if calls >= 4 and t1 - start >= block_s:
                break
        times += block
        probe_after = speed_probe()
        per_block.append([statistics.median(block), probe_before, probe_after,
                          link_before, link() if link else None])
    return statistics.median(times), len(times), per_block


def worker(args):
    case = CASES[args.case]
    OURS_WEIGHTS["mode"] = args.ours_weights
    ISA["cap"] = args.max_isa
    try:
        # Imports first, then the data, as a user's script has them (arrays
        # made after `import mithril` are 64-byte aligned).
        lib = SETUP[args.worker](args.threads)
        d = load_data(os.path.join(args.data, case.id))
        start = time.perf_counter()
        run, params = BUILD[args.worker](lib, case, d, args.threads, args.scratch)
        first = run()
        compile_s = time.perf_counter() - start
        err = train_error(first, params(), d) if case.train else relerr(first, d["ref"])
        result = {"status": "ok", "compile_s": compile_s, "error": err,
                  "note": getattr(run, "note", None)}
        if not err <= case.tol:
            result["status"] = "wrong"
        else:
            (result["median_s"], result["calls"],
             result["blocks"]) = block_median(
                 run, args.blocks, args.block_s,
                 LinkProbe(os.path.join(args.data, LINK_LIBRARY)) if args.threads > 1 else None)
    except Exception as e:  # reported, not raised: the orchestrator footnotes it
        result = {"status": "error", "reason": f"{type(e).__name__}: {e}"}
    if ISA["cap"] and result["status"] != "error":
        try:
            result["isa"] = ISA_CHECK[args.worker](lib, run, args.scratch)
        except Exception as e:
            result["isa"] = ("unverified", {"check": [f"{type(e).__name__}: {e}"[:200]]})
    print("RESULT " + json.dumps(result), flush=True)


def info_worker():
    """Versions and the host's target, as this interpreter sees them."""
    from importlib import metadata
    out = {"python": platform.python_version(), "versions": {}}
    for pkg in ("numpy", "onnx", "onnxruntime", "openvino", "jax", "jaxlib",
                "iree-base-compiler", "iree-base-runtime", "iree-compiler", "iree-runtime",
                "torch"):
        try:
            out["versions"][pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    try:
        from mithril import _mithril
        out["cpu_target"] = _mithril.cpu_target()
    except ImportError:
        pass
    print("RESULT " + json.dumps(out), flush=True)


# The orchestrator.

def worker_env(cand, threads, scratch, build, max_isa=None):
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(threads)
    env.pop("PYTHONPATH", None)
    if cand in OURS:
        env["PYTHONPATH"] = os.path.join(build, "python_packages")
        # An empty compile cache (bench/compile_cache.py measures a warm one):
        # every launch compiles from scratch, like the others.
        env["MITHRIL_CACHE_DIR"] = os.path.join(scratch, "mithril-cache")
        env.pop("MITHRIL_CACHE", None)
    if cand in ("jax", "iree"):
        env["JAX_PLATFORMS"] = "cpu"
        env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    if cand == "jax" and threads == 1:
        # XLA sizes its intra-op thread pool from the affinity mask (taskset's
        # N cores); it has no flag for the count (TensorFlow's
        # intra_op_parallelism_threads is not one: XLA_FLAGS without a leading
        # one of its own flags aborts). At one thread Eigen's pool is off too.
        env["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false"
    if cand == "torch":
        # A fresh inductor cache, and a fresh temporary folder for its
        # precompiled headers: every launch compiles from scratch, like the others.
        env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(scratch, "inductor")
        env["TMPDIR"] = scratch
    if max_isa:
        caps = ISA_CAPS[max_isa]
        own = caps.get("ours" if cand in OURS else cand, {})
        for var, value in {**caps["common"].get("env", {}), **own.get("env", {})}.items():
            env[var] = (env[var] + ENV_JOIN[var] + value if env.get(var) and var in ENV_JOIN
                        else value)
    return env


def launch(cand, case, threads, data, args):
    """Runs one worker in a fresh process; its result dict."""
    scratch = tempfile.mkdtemp(prefix=f"{cand}-", dir=data)
    python = "/usr/bin/python3" if cand in OURS else args.venv_python
    cmd = [python, os.path.abspath(__file__), "--worker", "ours" if cand in OURS else cand,
           "--case", case.id, "--threads", str(threads), "--data", data, "--scratch", scratch,
           "--blocks", str(args.blocks), "--block-s", str(args.block_s),
           "--ours-weights", "compiled" if cand == "ours-const" else args.ours_weights]
    if args.max_isa:
        cmd += ["--max-isa", args.max_isa]
    if shutil.which("taskset"):
        cmd = ["taskset", "-c", ",".join(str(i) for i in range(threads))] + cmd
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=HERE, env=worker_env(cand, threads, scratch, args.build,
                                                     args.max_isa),
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the worker's own group: its compiler jobs too
        proc.communicate()
        return {"status": "error", "reason": f"timed out after {args.timeout} s"}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for line in reversed(out.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    tail = [line for line in err.splitlines() if line.strip()][-1:] or ["no output"]
    tail = re.sub(r"^[FEW]\d{4} [\d:.]+ +\d+ \S+\] ", "", tail[0])  # a glog prefix
    return {"status": "error", "reason": f"exit {proc.returncode}: {tail[:300]}"}


def query(python, env_extra):
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # only ours' interpreter gets the build's package
    env.update(env_extra)
    try:
        out = subprocess.run([python, os.path.abspath(__file__), "--worker-info"], env=env,
                             capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    return json.loads(lines[-1][len("RESULT "):]) if lines else {}


def peer_missing(peer, versions):
    """Why `peer` cannot run with these installed packages, or None."""
    need = {"ort": [("onnx",), ("onnxruntime",)], "openvino": [("onnx",), ("openvino",)],
            "jax": [("jax",), ("jaxlib",)],
            "iree": [("jax",), ("jaxlib",), ("iree-base-compiler", "iree-compiler"),
                     ("iree-base-runtime", "iree-runtime")],
            "torch": [("torch",)]}[peer]
    missing = [alts[0] for alts in need if not any(a in versions for a in alts)]
    return f"not installed ({', '.join(missing)}): run scripts/bench-peers.sh" if missing else None


def run_all(args, cases, candidates):
    data = tempfile.mkdtemp(prefix="mithril-peers-")
    try:
        for case in cases:
            make_data(case, os.path.join(data, case.id))
        build_link_probe(data)  # workers find it there (hostinfo.LINK_LIBRARY)
        ours_info = query("/usr/bin/python3",
                          {"PYTHONPATH": os.path.join(args.build, "python_packages")})
        peer_info = query(args.venv_python, {}) if args.venv_python else {}
        versions = peer_info.get("versions", {})
        missing = {p: (peer_missing(p, versions) if args.venv_python else
                       "no --venv-python given: run scripts/bench-peers.sh") for p in PEERS}
        if "cpu_target" not in ours_info:
            missing["ours"] = missing["ours-const"] = (
                f"mithril not importable from {args.build}/python_packages")
        results = {}  # (threads, case id, candidate) -> {"runs": [...]} or {"skip": reason}
        load_before = os.getloadavg()
        for threads in args.threads:
            for case in cases:
                skips = dict(case.skip)
                if case.train or case.kind == "sgemm" or case.precision == "int8":
                    skips["ours-const"] = OURS_CONST_ONLY
                active = []
                for cand in candidates:
                    reason = skips.get(cand) or missing.get(cand)
                    results[threads, case.id, cand] = {"skip": reason} if reason else {"runs": []}
                    if not reason:
                        active.append(cand)
                # The candidates take turns, launch after launch; one that
                # fails or is wrong is not launched again.
                for i in range(args.launches):
                    for cand in list(active):
                        r = launch(cand, case, threads, data, args)
                        results[threads, case.id, cand]["runs"].append(r)
                        shown = (f"{r['median_s'] * 1e3:.3f} ms, compile {r['compile_s']:.2f} s, "
                                 f"error {r['error']:.1e}" if "median_s" in r else
                                 f"{r['status']}: {r.get('reason') or r.get('error')}")
                        if "isa" in r:
                            shown += f"; {args.max_isa} check: {r['isa'][0]} {r['isa'][1]}"
                        print(f"[{threads}t] {case.title}: {TITLES[cand]} launch {i + 1}/"
                              f"{args.launches}: {shown}", file=sys.stderr, flush=True)
                        if r["status"] != "ok":
                            active.remove(cand)
        load_after = os.getloadavg()
    finally:
        shutil.rmtree(data, ignore_errors=True)
    return results, ours_info, peer_info, (load_before, load_after)


def block_quiet(block, limit):
    """Whether a block ([median, speed probes before and after, round trips
    before and after]) ran in a quiet period: both speed probes within the
    run's limit and, on more than one core, both round trips within theirs."""
    return within_limits(block[1:3], limit.speed, block[3:5], limit.link)


def quiet_time(run, limit):
    """A launch's time: the median over its quiet blocks (block_quiet) of
    their median call, or None when no block was quiet."""
    quiet = [b[0] for b in run.get("blocks", []) if block_quiet(b, limit)]
    return statistics.median(quiet) if quiet else None


def summarize(entry, limit):
    """A cell's numbers, or its reason for being empty. Launches with no quiet
    block count only when no launch of the cell had one (marked `noisy`)."""
    if "skip" in entry:
        return {"reason": entry["skip"]}
    runs = entry["runs"]
    bad = next((r for r in runs if r["status"] != "ok"), None)
    if bad is not None and bad["status"] == "wrong":
        return {"wrong": bad["error"]}
    if bad is not None:
        return {"reason": bad["reason"]}
    medians = [t for t in (quiet_time(r, limit) for r in runs) if t is not None]
    noisy = not medians
    if noisy:
        medians = [r["median_s"] for r in runs]
    return {"time": statistics.median(medians), "lo": min(medians), "hi": max(medians),
            "compile": statistics.median(r["compile_s"] for r in runs),
            "error": max(r["error"] for r in runs), "launches": len(medians), "noisy": noisy,
            "notes": sorted({r["note"] for r in runs if r.get("note")})}


def probe_stats(results):
    """The quiet limits over every block's probes (speed, and round trip
    between cores), how many blocks were within them, and how many blocks
    of more than one thread ran with their cores apart, with the typical and
    the cores-apart round trips (medians, ns)."""
    blocks = [b for entry in results.values() for r in entry.get("runs", [])
              for b in r.get("blocks", [])]
    if not blocks:
        return SimpleNamespace(speed=float("inf"), link=float("inf")), 0, 0, None
    links = [t for b in blocks for t in b[3:5] if t]
    limit = SimpleNamespace(speed=quiet_limit([p for b in blocks for p in b[1:3]]),
                            link=link_limit(links))
    near = [t for t in links if t <= limit.link]
    far = [t for t in links if t > limit.link]
    apart = sum(any(t and t > limit.link for t in b[3:5]) for b in blocks)
    link = (apart, sum(any(b[3:5]) for b in blocks),
            statistics.median(near) if near else None, statistics.median(far) if far else None)
    return limit, sum(block_quiet(b, limit) for b in blocks), len(blocks), link


def link_text(link, limit):
    """The round-trip figures of the quiet test, for the table's text."""
    if link is None or not link[1]:
        return " (not measured: one thread only, or no C compiler)"
    apart, measured, near, far = link
    text = f" ({limit.link:.0f} ns; usually {near:.0f} ns" if near else f" ({limit.link:.0f} ns"
    if apart:
        text += f"; cores apart in {apart} of {measured} blocks, {far:.0f} ns"
    return text + ")"


def fmt_ms(seconds):
    ms = seconds * 1e3
    return f"{ms:.3f}" if ms < 10 else f"{ms:.2f}" if ms < 100 else f"{ms:.1f}"


def fmt_s(seconds):
    return f"{seconds:.2f}" if seconds < 10 else f"{seconds:.1f}"


ISA_VERDICTS = ("verified", "partly", "not capped", "unverified", "failed")
# How a table marks a peer by its worst verdict; the ratio columns leave out
# the peers whose code was not capped (RATIO_LEFT_OUT).
ISA_MARKS = {"partly": "partly capped", "not capped": "not capped",
             "unverified": "cap unverified", "failed": "cap failed"}
RATIO_LEFT_OUT = ("not capped", "failed")


def isa_verdict(results, cand):
    """The --max-isa checks of every launch of `cand`: the worst verdict,
    how many launches had each, and their evidence merged (None: no
    launch)."""
    checks = [r["isa"] for (_, _, c), entry in results.items() if c == cand
              for r in entry.get("runs", []) if "isa" in r]
    if not checks:
        return None
    counts = {v: sum(c[0] == v for c in checks) for v in ISA_VERDICTS}
    worst = max((v for v in counts if counts[v]), key=ISA_VERDICTS.index)
    merged = {}
    for _, evidence in checks:
        for key, values in evidence.items():
            seen = merged.setdefault(key, [])
            seen += [v for v in values if v not in seen]
    for key, values in merged.items():  # "not called" only where nothing was
        if len(values) > 1 and "not called" in values:
            values.remove("not called")
    return worst, {v: n for v, n in counts.items() if n}, merged


def isa_summary(args, candidates, results):
    """The --max-isa section: how each candidate was capped, and what the
    checks after its launches found."""
    caps = ISA_CAPS[args.max_isa]
    lines = ["", f"## {ISA_TITLES[args.max_isa]}: how each candidate was capped", "",
             f"`--max-isa {args.max_isa}`: every candidate limited, as far as it allows, to the "
             "code it would run on a CPU without AVX-512 (AVX2 and FMA: Intel Haswell, AMD "
             f"Zen 2), on this host. Every worker: {caps['common']['how']}. After its timing "
             "each launch checks the code it ran: the object code ours compiled, XLA's (compiled "
             "again with `xla_dump_to`) and IREE's executables (compiled again, dumped), "
             "inductor's kernels, read by objdump for AVX-512 (EVEX-encoded) instructions; "
             "torch's ATen capability, inductor's vector ISA and oneDNN's and MKL's verbose "
             "output of one more call; OpenVINO's runtime model's primitive types. `verified`: "
             "none of that code is AVX-512; `partly`: some of it is not capped (named); "
             "`failed`: AVX-512 code found. The tables mark a peer by its worst verdict, and "
             "`best peer / ours` and `like for like` leave out the peers marked not capped or "
             "cap failed.", "",
             "| candidate | how capped | check after each launch |", "| --- | --- | --- |"]
    for cand in candidates:
        cap = caps.get("ours" if cand in OURS else cand, {})
        how = cap.get("how") or cap.get("not_capped", "-")
        found = isa_verdict(results, cand)
        if found is None:
            lines.append(f"| {TITLES[cand]} | {how} | not run |")
            continue
        worst, counts, merged = found
        total = sum(counts.values())
        verdict = (f"{worst} in {'its launch' if total == 1 else f'all {total} launches'}"
                   if len(counts) == 1 else
                   ", ".join(f"{v} in {n}" for v, n in counts.items()) + f" of {total} launches")
        shown = "; ".join(f"{k}: {', '.join(v)}" for k, v in merged.items())
        lines.append(f"| {TITLES[cand]} | {how} | **{verdict}**{': ' + shown if shown else ''} |")
    return lines


def report(args, cases, candidates, results, ours_info, peer_info, loads):
    footnotes = {}  # text -> (number, the candidates or cells it is about)

    def note(text, who):
        number, whom = footnotes.setdefault(text, (len(footnotes) + 1, []))
        if who not in whom:
            whom.append(who)
        return number

    v = peer_info.get("versions", {})
    ver = lambda *pkgs: next((v[p] for p in pkgs if p in v), "absent")
    try:
        ours_rev = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                                  capture_output=True, text=True).stdout.strip() or "unknown"
    except OSError:
        ours_rev = "unknown"
    target = ours_info.get("cpu_target", {})
    limit, quiet_blocks, all_blocks, link = probe_stats(results)
    titled = f" ({ISA_TITLES[args.max_isa]})" if args.max_isa else ""
    # Under --max-isa, each candidate's worst check verdict.
    marks = {c: verdict[0] for c in candidates
             if args.max_isa and (verdict := isa_verdict(results, c)) is not None}
    iree_cpu = ISA_CAPS[args.max_isa]["iree"]["option"] if args.max_isa else "host"
    lines = [
        "# Peer benchmarks" + titled, "",
        f"Measured by `scripts/bench-peers.sh{' --quick' if args.quick else ''}"
        f"{f' --max-isa {args.max_isa}' if args.max_isa else ''}` "
        f"(bench/peers.py) on {host_cpu()}, {os.cpu_count()} cores; LLVM CPU "
        f"`{target.get('cpu', 'unknown')}`; ISA: {', '.join(cpu_isa()) or 'unknown'}; "
        f"{time.strftime('%Y-%m-%d %H:%M %Z')}. Load average "
        f"{loads[0][0]:.2f} before and {loads[1][0]:.2f} after the runs"
        f"{' (quick mode: fewer cases, shorter timing)' if args.quick else ''}.", "",
        f"Versions: ours {ours_rev} (Python {ours_info.get('python', '?')}, numpy "
        f"{ours_info.get('versions', {}).get('numpy', '?')}); peers under Python "
        f"{peer_info.get('python', '?')} with numpy {ver('numpy')}: ONNX Runtime "
        f"{ver('onnxruntime')} (onnx {ver('onnx')}), OpenVINO {ver('openvino')}, JAX "
        f"{ver('jax')} (jaxlib {ver('jaxlib')}), IREE "
        f"{ver('iree-base-compiler', 'iree-compiler')} (compiler) / "
        f"{ver('iree-base-runtime', 'iree-runtime')} (runtime), torch {ver('torch')} "
        "(inductor).", "",
        "Each candidate runs in a fresh process pinned by taskset to the first N cores, with "
        "its own thread knob at N (ours: MlirBackend(num_threads=N); ONNX Runtime: "
        "intra_op_num_threads=N, inter_op 1; OpenVINO: INFERENCE_NUM_THREADS=N, one stream; "
        "JAX: XLA's pool sized by the affinity mask, OMP_NUM_THREADS=N, and "
        "--xla_cpu_multi_thread_eigen=false at 1 thread; IREE: local-sync at 1 thread, "
        "local-task with --task_topology_max_group_count=N at more; torch: "
        "set_num_threads(N), one inter-op thread; "
        "torch's inductor cache and precompiled headers, and our compile cache, start empty in "
        "every launch). "
        "ONNX Runtime and OpenVINO load one ONNX graph (opset 17, weights as "
        "initializers); JAX jits a jnp function (convolutions in NHWC, their best layout); "
        "IREE compiles the same function's StableHLO export "
        f"(`--iree-llvmcpu-target-cpu={iree_cpu}`); torch compiles an nn.Module with inductor "
        "(inference: autograd off, freezing on; training: forward, loss and backward "
        "compiled, SGD eager); " + (
            "JAX/IREE take the parameters as arguments of each call, and ours compiles "
            "the inference cases' weights in (`--ours-weights compiled`: `constant_keys`, "
            "packed, and in int8 quantized, when compiling, as ONNX Runtime's and "
            "OpenVINO's initializers and torch's freezing); training steps take them as "
            "arguments. " if args.ours_weights == "compiled" else
            "ours and JAX/IREE take the parameters as "
            "arguments of each call, except ours in int8, which compiles the weights in "
            "(`constant_keys`, quantized when compiling, as ONNX Runtime's initializers). ") +
        "Every result is first checked against a float64 "
        "reference computed by numpy from the same float32 data (training: the loss and "
        "the parameter update of one SGD step, lr 0.01, where differences within a float32 "
        "ulp of the updated weights are not counted); a float32 result more than 1e-4 "
        "away (relative Frobenius error) is marked wrong and not timed. int8 (dynamic, "
        "per-channel weights) and bf16 report their error against the same reference "
        "instead (bound only for broken results: 0.2 int8, 5e-2 bf16).", "",
        f"Times: the median over {args.launches} launches of each launch's median call "
        f"({args.blocks} blocks of at least {args.block_s} s and 4 calls, after one warm-up "
        "call), in ms, counting only quiet blocks: the host's speed probe (a fixed "
        "pure-Python loop, bench/hostinfo.py) timed before and after each block within 15% "
        f"of its fastest time in the whole run ({limit.speed * 1e3:.2f} ms), and at more "
        "than one thread a cache line's round trip between the first two cores "
        f"(bench/corelink.c) timed before and after within {LINK_FACTOR:g}x of the run's "
        f"usual one{link_text(link, limit)}; {quiet_blocks} of {all_blocks} blocks were "
        "quiet. These VMs have periods, seconds long, in which "
        "every workload of a process runs 1.3-2x slower, peers and numpy alike, and periods "
        "in which the host runs the two vCPUs on cores far apart, where one thread runs as "
        "fast as ever and every candidate's split ops pay for their data crossing between "
        "the cores (the MLP training step on 2 threads 1.7-1.9x slower, ours and JAX "
        "alike); a launch "
        "with no quiet block is left out, and a cell with none at all shows every block, "
        "marked `noisy`. The candidates of a case take turns, launch after launch. "
        "`best peer / ours` is the fastest peer's time over ours (above 1: we are faster); "
        "`like for like` (with `ours, weights compiled in` among the candidates) is the "
        "lowest of each peer's time over ours in the peer's own way of holding the weights: "
        "ONNX Runtime, OpenVINO and torch (frozen) against ours with the weights compiled in, "
        "JAX and IREE against ours with them passed each call; "
        "`compile ours / best peer` is our compile-to-first-result time over that peer's "
        "(below 1: we compile faster).",
    ]
    if args.max_isa:
        lines += isa_summary(args, candidates, results)
    for threads in args.threads:
        cells = {(c.id, cand): summarize(results[threads, c.id, cand], limit)
                 for c in cases for cand in candidates}
        peers = [p for p in candidates if p not in OURS and marks.get(p) not in RATIO_LEFT_OUT]
        head = ["case"] + [TITLES[c] + (f" ({ISA_MARKS[marks[c]]})" if marks.get(c) in ISA_MARKS
                                        else "") for c in candidates]
        matched = "ours-const" in candidates
        extra = ["best peer / ours"] + (["like for like"] if matched else []) + [
            "compile ours / best peer"]
        table = ["| " + " | ".join(head + extra) + " |", "|" + " --- |" * (len(head) + len(extra))]
        spread = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
        compile_t = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
        for case in cases:
            row, srow, crow = [case.title], [case.title], [case.title]
            for cand in candidates:
                s = cells[case.id, cand]
                where = f"{TITLES[cand]} on {case.title} ({threads}t)"
                if "time" in s:
                    row.append(fmt_ms(s["time"]) + (" noisy" if s["noisy"] else ""))
                    # A noisy cell's launches had no quiet block: every block counts.
                    counted = (f"no quiet block, {s['launches']} launches" if s["noisy"]
                               else f"{s['launches']} quiet")
                    srow.append(f"{fmt_ms(s['lo'])}-{fmt_ms(s['hi'])} ({counted}), "
                                f"err {s['error']:.1e}")
                    crow.append(fmt_s(s["compile"]))
                    for text in s["notes"]:
                        note(text, where)
                elif "wrong" in s:
                    n = note(f"wrong: relative error {s['wrong']:.1e} > {case.tol:g}", where)
                    row.append(f"wrong [{n}]")
                    srow.append(f"err {s['wrong']:.1e}")
                    crow.append("-")
                else:
                    n = note(s["reason"], TITLES[cand])
                    row.append(f"- [{n}]")
                    srow.append("-")
                    crow.append("-")
            ours = cells[case.id, "ours"] if "ours" in candidates else {}
            timed = [p for p in peers if "time" in cells[case.id, p]]
            best = min(timed, key=lambda p: cells[case.id, p]["time"]) if timed else None
            if best and "time" in ours:
                b = cells[case.id, best]
                row.append(f"{b['time'] / ours['time']:.2f}x ({TITLES[best]})")
                if matched:
                    # Each peer against ours in its own weights' mode: the
                    # lowest of those ratios.
                    const = cells[case.id, "ours-const"]
                    ratios = [(cells[case.id, p]["time"] / (
                        const if p in CONSTANT_WEIGHT_PEERS and "time" in const else ours)["time"],
                        p) for p in timed]
                    ratio, peer = min(ratios)
                    mode = ("weights compiled in" if peer in CONSTANT_WEIGHT_PEERS
                            and "time" in const else "weights each call")
                    row.append(f"{ratio:.2f}x ({TITLES[peer]}, ours {mode})")
                row.append(f"{ours['compile'] / b['compile']:.2f}x ({fmt_s(ours['compile'])} s / "
                           f"{fmt_s(b['compile'])} s)")
            else:
                row += ["-"] * len(extra)
            table.append("| " + " | ".join(row) + " |")
            spread.append("| " + " | ".join(srow) + " |")
            compile_t.append("| " + " | ".join(crow) + " |")
        lines += ["", f"## {threads} thread{'s' if threads > 1 else ''} "
                      f"(taskset -c {','.join(str(i) for i in range(threads))}){titled}",
                  ""] + table
        lines += ["", "Launch spread (min-max of the launch medians, ms; launches with a quiet "
                      "block) and relative error "
                      "against the float64 reference:", ""] + spread
        lines += ["", "Compile to first result (s, median over launches; imports not "
                      "counted):", ""] + compile_t
    if footnotes:
        lines += ["", "## Notes", ""] + [f"{n}. {', '.join(whom)}: {text}"
                                         for text, (n, whom) in footnotes.items()]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv-python", help="the python of the peers' virtual environment")
    parser.add_argument("--threads", default="1,2", help="thread counts, e.g. 1,2")
    parser.add_argument("--quick", action="store_true",
                        help=f"only {', '.join(QUICK_CASES)}, shorter timing")
    parser.add_argument("--cases", help=f"case ids, from {', '.join(CASES)}")
    parser.add_argument("--candidates", help=f"from {', '.join(CANDIDATES)} (default: all)")
    parser.add_argument("--launches", type=int, default=3, help="fresh processes per cell")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per worker")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--ours-weights", choices=["args", "compiled"], default="args",
                        help="ours' inference weights: arguments of each call (as JAX and IREE "
                        "take them), or compiled in (constant_keys, as the inference runtimes' "
                        "initializers and torch's freezing); int8 always compiles them in")
    parser.add_argument("--max-isa", choices=list(ISA_CAPS),
                        help="limit every candidate to this ISA's code, as on a CPU without "
                        "AVX-512 (avx2: AVX2 and FMA, Intel Haswell, AMD Zen 2), as far as each "
                        "allows; the output says how each was capped and what its check found "
                        "(default output: bench/peers-avx2.md)")
    parser.add_argument("-o", help="the markdown output (default: bench/peers.md)")
    # Worker mode (started by the orchestrator).
    parser.add_argument("--worker", choices=CANDIDATES, help=argparse.SUPPRESS)
    parser.add_argument("--worker-info", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--case", choices=list(CASES), help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--scratch", help=argparse.SUPPRESS)
    parser.add_argument("--blocks", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--block-s", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker_info:
        return info_worker()
    if args.worker:
        args.threads = int(args.threads)
        return worker(args)

    args.threads = [int(t) for t in args.threads.split(",")]
    if args.o is None:
        args.o = os.path.join(HERE, f"peers-{args.max_isa}.md" if args.max_isa else "peers.md")
    args.build = os.path.abspath(args.build)
    if args.blocks is None:
        args.blocks = 3 if args.quick else 8
    if args.block_s is None:
        args.block_s = 0.1 if args.quick else 0.25
    if args.launches < 1:
        parser.error("--launches must be at least 1")
    if args.venv_python and not os.access(args.venv_python, os.X_OK):
        print(f"peers: {args.venv_python} is not executable; peers are skipped", file=sys.stderr)
        args.venv_python = None
    ids = (args.cases.split(",") if args.cases else
           list(QUICK_CASES) if args.quick else list(CASES))
    unknown = [i for i in ids if i not in CASES]
    if unknown:
        parser.error(f"unknown cases {unknown}; known: {', '.join(CASES)}")
    candidates = args.candidates.split(",") if args.candidates else list(CANDIDATES)
    if any(c not in CANDIDATES for c in candidates):
        parser.error(f"candidates are {', '.join(CANDIDATES)}")
    cases = [CASES[i] for i in ids]
    results, ours_info, peer_info, loads = run_all(args, cases, candidates)
    text = report(args, cases, candidates, results, ours_info, peer_info, loads)
    with open(args.o, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
