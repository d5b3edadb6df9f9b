# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""The low-precision table (issue 19): bf16, f16 and int8 against our own
float32 on this machine, one thread, with the kernel variant the host gets
named, and torch's bf16 matmul as a peer. Writes bench/lowprecision.md.

Every case first checks its result against float64 (relative Frobenius
error, reported); the candidates then run alternately (bench.median_times).
Ratios are our float32 time over the variant's (above 1: the variant is
faster). Inputs are handed over in the variant's own storage type (float16
arrays; bfloat16 as uint16 bit patterns, which pass unconverted).

    PYTHONPATH=build/python_packages python3 bench/lowprecision.py [--quick]
"""

import argparse
import os
import time

import numpy as np

import mithril as ml
from mithril import _mithril
from mithril.models import MatrixMultiply, Model
from mithril.types import from_bfloat16_bits, to_bfloat16_bits

from bench import cnn, median_times, mlp
from hostinfo import host_cpu

try:
    import torch
except ImportError:  # optional peer
    torch = None


def variant(kind: str, rows: int | None = None) -> str:
    """The kernel a `kind` product of `rows` rows (a Linear layer's, or a
    large matmul's) runs on this host."""
    target = _mithril.cpu_target()
    few = rows is not None and rows <= 64
    if kind == "bf16":
        if target["bf16_tiles"] and few:
            return ("AMX tdpbf16ps tiles, swapped (C^T = W x^T): the weight's rows read in "
                    "place, x^T's pairs packed")
        if target["bf16_tiles"]:
            return "AMX tdpbf16ps tiles (matmul blocks), bf16 pairs packed"
        if rows is not None and rows <= 16:
            return "matrix-vector lane sums on the weight's rows, " + (
                "vdpbf16ps" if target["bf16_pair_products"] else "widened to f32 FMAs")
        if target["bf16_pair_products"] and rows is not None and rows % 32 == 0:
            return ("vdpbf16ps (AVX512-BF16), swapped (C^T = W x^T): the weight's rows "
                    "broadcast in place, x^T's pairs packed")
        return ("vdpbf16ps (AVX512-BF16), bf16 pairs packed" if target["bf16_pair_products"]
                else "widened to f32 when packed, f32 FMA kernel")
    if kind == "f16":
        return "widened to f32 when packed (F16C), f32 FMA kernel"
    if kind == "int8" and target["int8_dot_product"] and rows is not None and rows <= 16:
        return "vpdpbusd matrix-vector products on the weight's rows of levels"
    if kind == "int8" and target["int8_tiles"]:
        return "AMX tdpbusd tiles (matmul blocks), byte quads packed"
    if kind == "int8":
        return ("vpdpbusd (AVX512-VNNI), byte quads packed" if target["int8_dot_product"]
                else "bytes widened to 32-bit integer products")
    return f"f32 FMA kernel, {target['vector_bits']}-bit registers"


def bf16(values):
    return from_bfloat16_bits(to_bfloat16_bits(values)).astype(np.float32)


def stored(values, storage):
    """`values` in a variant's storage type ("bits": bfloat16 bit patterns)."""
    return to_bfloat16_bits(values) if storage == "bits" else values.astype(storage)


def gemm():
    model = Model()
    model |= MatrixMultiply()(left="a", right="b", output=ml.IOKey("out"))
    return model


def relerr(got, ref):
    got = np.asarray(got, np.float64)
    return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))


def compare_variants(make_model, x, cases, seed, repeats, calibration=None):
    """Each of `cases` ({kind: (backend, compile options, storage)}, float32
    first) compiled for input `x` and run on the same bfloat16-exact
    parameters: its median time and its output's error against the first's.
    `calibration(params)` gives the calibration data of a case whose options
    ask for it."""
    calls, errs, ref, params = {}, {}, None, None
    for kind, (backend, extra, storage) in cases.items():
        if extra.pop("calibration", False):
            extra = {"calibration_data": calibration(params)}
        pm = ml.compile(make_model(), backend, shapes={"input": list(x.shape)}, jit=True,
                        **extra)
        if params is None:
            params = {k: bf16(v) for k, v in pm.randomize_params(seed=seed).items()}
        p = {k: stored(v, storage) for k, v in params.items()}
        data = {"input": stored(x, storage)}
        out = np.asarray(pm.evaluate(p, data)["logits"], np.float64)
        if ref is None:
            ref = out
        errs[kind] = relerr(out, ref) if kind != "f32" else 0.0
        calls[kind] = (lambda pm=pm, p=p, data=data: pm.evaluate(p, data))
    return dict(zip(calls, median_times(list(calls.values()), repeats))), errs


def run(quick: bool):
    rows = []
    repeats = 5 if quick else 15
    rng = np.random.default_rng(0)
    sizes = [1024] if quick else [1024, 2048]
    backends = {"f32": (ml.MlirBackend(num_threads=1), {}, np.float32),
                "bf16": (ml.MlirBackend(dtype=ml.bfloat16, num_threads=1), {}, "bits"),
                "f16": (ml.MlirBackend(dtype=ml.float16, num_threads=1), {}, np.float16)}
    for n in sizes:
        a, b = bf16(rng.standard_normal((n, n))), bf16(rng.standard_normal((n, n)))
        ref = a.astype(np.float64) @ b
        calls, errs = {}, {}
        for kind, (backend, extra, storage) in backends.items():
            pm = ml.compile(gemm(), backend, shapes={"a": [n, n], "b": [n, n]}, jit=True, **extra)
            data = {"a": stored(a, storage), "b": stored(b, storage)}
            errs[kind] = relerr(pm.evaluate({}, data)["out"], ref)
            calls[kind] = (lambda pm=pm, data=data: pm.evaluate({}, data))
        peers = {}
        if torch is not None:
            torch.set_num_threads(1)
            ta, tb = torch.from_numpy(a), torch.from_numpy(b)
            ta16, tb16 = ta.to(torch.bfloat16), tb.to(torch.bfloat16)
            peers["torch bf16"] = lambda: torch.matmul(ta16, tb16)
        names = list(calls) + list(peers)
        times = dict(zip(names, median_times(list(calls.values()) + list(peers.values()),
                                             repeats)))
        flops = 2 * n ** 3
        for kind in calls:
            rows.append((f"sgemm {n} ({kind})", times[kind], times["f32"] / times[kind],
                         flops / times[kind] / 1e9, errs[kind], variant(kind)))
        for name in peers:
            rows.append((f"sgemm {n} ({name})", times[name], times["f32"] / times[name],
                         flops / times[name] / 1e9, None, "torch.matmul on bfloat16 tensors"))

    for batch in ([256] if quick else [16, 256]):
        x = rng.standard_normal((batch, 784)).astype(np.float32)
        cases = {"f32": (ml.MlirBackend(num_threads=1), {}, np.float32),
                 "bf16": (ml.MlirBackend(dtype=ml.bfloat16, num_threads=1), {}, "bits"),
                 "mixed bf16": (ml.MlirBackend(precision="bfloat16", num_threads=1),
                                {"mixed_precision": True}, np.float32),
                 "f16": (ml.MlirBackend(dtype=ml.float16, num_threads=1), {}, np.float16),
                 "int8": (ml.MlirBackend(quantize="int8", num_threads=1), {}, np.float32),
                 "int8 static": (ml.MlirBackend(quantize="int8", num_threads=1),
                                 {"calibration": True}, np.float32)}
        # Static activation scales from four calibration batches.
        calibration = (lambda params, batch=batch: [
            {**params, "input": rng.standard_normal((batch, 784)).astype(np.float32)}
            for _ in range(4)])
        times, errs = compare_variants(mlp, x, cases, 2, repeats, calibration)
        for kind in times:
            name = {"mixed bf16": "mixed-precision bf16",
                    "int8 static": "int8, calibrated scales"}.get(kind, kind)
            rows.append((f"MLP 784-512-512-10 b{batch} ({name})", times[kind],
                         times["f32"] / times[kind], None, errs[kind],
                         variant(kind.split()[0] if kind.startswith("int8") else
                                 kind.split()[-1], batch)))

    # The bench CNN (3x3 convolutions of 32 and 64 channels, 2x2 poolings):
    # in bf16 the second convolution runs as a product of its windows, read
    # in place, on AMX tiles where the CPU has them, else by Winograd's transforms, its 16
    # products on bf16 dot products where the CPU has them; in int8 as the
    # product of its windows (the first, of 9-input windows, stays float32).
    batch = 16
    x = rng.standard_normal((batch, 1, 28, 28)).astype(np.float32)
    cases = {"f32": (ml.MlirBackend(num_threads=1), {}, np.float32),
             "bf16": (ml.MlirBackend(dtype=ml.bfloat16, num_threads=1), {}, "bits"),
             "mixed bf16": (ml.MlirBackend(precision="bfloat16", num_threads=1),
                            {"mixed_precision": True}, np.float32),
             "int8": (ml.MlirBackend(quantize="int8", num_threads=1), {}, np.float32),
             "int8 static": (ml.MlirBackend(quantize="int8", num_threads=1),
                             {"calibration": True}, np.float32)}
    calibration = (lambda params: [
        {**params, "input": rng.standard_normal((batch, 1, 28, 28)).astype(np.float32)}
        for _ in range(4)])
    times, errs = compare_variants(cnn, x, cases, 4, repeats, calibration)
    target = _mithril.cpu_target()
    # What the Winograd convolution's bf16 products run on.
    bf16_products = ("AMX tdpbf16ps tiles" if target["bf16_tiles"]
                     else "vdpbf16ps (AVX512-BF16)")
    for kind in times:
        name = {"mixed bf16": "mixed-precision bf16",
                "int8 static": "int8, calibrated scales"}.get(kind, kind)
        kernel = variant("f32")
        if kind.startswith("int8"):
            kernel = ("second convolution as rows of its windows, " + variant("int8") +
                      "; the first (9-input windows) in f32")
        elif kind != "f32" and target["bf16_tiles"]:
            kernel = ("second convolution as a product of its windows read in place "
                      "(channels last) on AMX tdpbf16ps tiles; the first channels-last in f32")
        elif kind != "f32":
            kernel = (f"Winograd products on {bf16_products}, transformed operands rounded "
                      "to bf16" if target["bf16_pair_products"]
                      else "bf16 storage, Winograd and every product in f32")
        rows.append((f"CNN forward b{batch} ({name})", times[kind], times["f32"] / times[kind],
                     None, errs[kind], kernel))

    batch = 256
    x = rng.standard_normal((batch, 784)).astype(np.float32)
    cases = {"f32": (ml.MlirBackend(num_threads=1), {}),
             "mixed bf16": (ml.MlirBackend(precision="bfloat16", num_threads=1),
                            {"mixed_precision": True}),
             "mixed f16": (ml.MlirBackend(precision="float16", num_threads=1),
                           {"mixed_precision": True})}
    for kind, seconds, ratio, err in gradient_rows(mlp, x, cases, repeats):
        rows.append((f"MLP gradients b{batch} ({kind})", seconds, ratio, None, err,
                     variant(kind.split()[-1])))

    # The bench CNN's gradients (its training step without the update): in
    # mixed bf16 the Winograd products and both weight gradients of the
    # convolutions (images in pairs) run on bf16 dot products.
    batch = 16
    x = rng.standard_normal((batch, 1, 28, 28)).astype(np.float32)
    cases = {"f32": (ml.MlirBackend(num_threads=1), {}),
             "mixed bf16": (ml.MlirBackend(precision="bfloat16", num_threads=1),
                            {"mixed_precision": True})}
    for kind, seconds, ratio, err in gradient_rows(cnn, x, cases, repeats):
        kernel = variant("f32")
        if kind != "f32" and target["bf16_tiles"]:
            kernel = ("forward convolution as a product of its windows read in place on AMX "
                      "tdpbf16ps tiles, weight gradients on vdpbf16ps")
        elif kind != "f32":
            kernel = (f"Winograd products on {bf16_products}, weight gradients on vdpbf16ps"
                      if target["bf16_pair_products"] else "bf16 storage, every product in f32")
        rows.append((f"CNN gradients b{batch} ({kind})", seconds, ratio, None, err, kernel))
    return rows


def gradient_rows(make_model, x, cases, repeats):
    """(kind, median seconds, f32 time over it, relative error of all the
    parameters' gradients against the f32 case's) for each of `cases`
    ({kind: (backend, compile options)}, float32 first), the output's
    gradient seeded with ones."""
    calls, errs, ref = {}, {}, None
    for kind, (backend, extra) in cases.items():
        pm = ml.compile(make_model(), backend, shapes={"input": list(x.shape)}, jit=True,
                        **extra)
        seeds = {"logits": np.ones(pm.shapes["logits"], np.float32)}
        p = pm.randomize_params(seed=3)
        _, grads = pm.evaluate(p, {"input": x}, output_gradients=seeds)
        flat = np.concatenate([np.ravel(grads[k]) for k in sorted(grads)]).astype(np.float64)
        if ref is None:
            ref = flat
        errs[kind] = relerr(flat, ref) if kind != "f32" else 0.0
        calls[kind] = (lambda pm=pm, p=p, seeds=seeds:
                       pm.evaluate(p, {"input": x}, output_gradients=seeds))
    times = dict(zip(calls, median_times(list(calls.values()), repeats)))
    return [(kind, times[kind], times["f32"] / times[kind], errs[kind]) for kind in calls]


def write(rows, path):
    target = _mithril.cpu_target()
    lines = ["# Low precision", "",
             f"Measured by `make bench-lowprecision` on {host_cpu()} (LLVM: {target['cpu']}; "
             f"{target['vector_bits']}-bit vectors, AVX512-BF16 "
             f"{'yes' if target['bf16_dot_product'] else 'no'}, AVX512-VNNI "
             f"{'yes' if target['int8_dot_product'] else 'no'}, AMX tiles "
             f"{'yes' if target['bf16_tiles'] else 'no'}), one thread, "
             f"{time.strftime('%Y-%m-%d %H:%M')}; torch "
             f"{torch.__version__ if torch else 'absent'}. Times are medians of alternating "
             "blocks; `vs f32` is our float32 time over the row's (above 1: faster than f32). "
             "Error: relative Frobenius error of the result against float64 on the same "
             "(bfloat16-exact) inputs for matmuls, against our float32 for the MLP and the "
             "CNN.", "",
             "| case | time | vs f32 | GFLOP/s | error | kernel |",
             "| --- | --- | --- | --- | --- | --- |"]
    for case, seconds, ratio, gflops, err, kernel in rows:
        lines.append(f"| {case} | {seconds * 1e3:.3f} ms | {ratio:.2f}x | "
                     f"{f'{gflops:.1f}' if gflops else '-'} | "
                     f"{f'{err:.1e}' if err is not None else '-'} | {kernel} |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("-o", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                   "lowprecision.md"))
    args = parser.parse_args()
    write(run(args.quick), args.o)


if __name__ == "__main__":
    main()
