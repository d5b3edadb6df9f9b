#!/usr/bin/env python3
"""Runs the cases of a bundle from prepare.py on the GPU and compares them
with the CPU pipeline's outputs; then times them against torch.

Needs torch with CUDA (for device buffers, and as the timing peer) and the
CUDA driver; no LLVM, MLIR or mithril build.

  python3 run.py BUNDLE_DIR [--time] [-v] [--only=CASE,CASE] [--profile=CASE,CASE]

`--cpu` runs a bundle built with `prepare.py --target=cpu` on the CPU (a
check of the harness without a GPU).
"""
import ctypes
import os
import re
import sys
import time

import numpy as np
import torch

TERMINAL = re.compile(r"^/// (input|output) '([^']*)': (\w+) \[([0-9, ]*)\]$")
ENTRY = re.compile(r"^void (_mlir_ciface_\w+)\(")
DEVICE = "cpu" if "--cpu" in sys.argv else "cuda"
TORCH_DTYPES = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64,
                "int32": torch.int32}


def descriptor_type(rank):
    fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
              ("offset", ctypes.c_int64)]
    if rank:
        fields += [("sizes", ctypes.c_int64 * rank), ("strides", ctypes.c_int64 * rank)]
    return type(f"Memref{rank}", (ctypes.Structure,), {"_fields_": fields})


def describe(t):
    d = descriptor_type(t.dim())()
    d.allocated = d.aligned = t.data_ptr()
    d.offset = 0
    for i, (size, stride) in enumerate(zip(t.shape, t.stride())):
        d.sizes[i], d.strides[i] = size, stride
    return d


class Case:
    def __init__(self, directory, runtime):
        self.name = os.path.basename(directory)
        header = open(f"{directory}/model.h").read()
        self.args = []
        for line in header.splitlines():
            m = TERMINAL.match(line)
            if m:
                shape = tuple(int(d) for d in m.group(4).split(",") if d.strip())
                self.args.append((m.group(1), m.group(2), m.group(3), shape))
            e = ENTRY.match(line)
            if e:
                entry = e.group(1)
        self.lib = ctypes.CDLL(f"{directory}/model.so")  # loads the kernels
        self.fn = getattr(self.lib, entry)
        self.runtime = runtime
        generator = torch.Generator(device=DEVICE).manual_seed(2026)
        on_device = not os.path.exists(f"{directory}/inputs.npz")
        if not on_device:
            inputs = np.load(f"{directory}/inputs.npz")
            self.expected = np.load(f"{directory}/expected.npz")
        self.tensors = []
        for kind, name, dtype, shape in self.args:
            if kind == "input" and on_device:
                t = torch.randn(shape, generator=generator, device=DEVICE,
                                dtype=TORCH_DTYPES[dtype])
            elif kind == "input":
                t = torch.from_numpy(np.array(inputs[name], order="C")).to(DEVICE)
            else:
                t = torch.full(shape, float("nan"), dtype=TORCH_DTYPES[dtype], device=DEVICE)
            assert tuple(t.shape) == shape, (name, t.shape, shape)
            self.tensors.append(t)
        if on_device:
            # The reference: torch in float64 on the same data.
            peer = torch_peer(self, torch.float64)
            outputs = [n for k, n, *_ in self.args if k == "output"]
            self.expected = {outputs[0]: peer().cpu().numpy()}
        synchronize()
        self.descriptors = [describe(t) for t in self.tensors]
        self.pointers = [ctypes.byref(d) for d in self.descriptors]
        self.check_error("loading")

    def check_error(self, what):
        error = self.runtime.mithrilCudaTakeError() if self.runtime else None
        if error:
            raise RuntimeError(f"{self.name}: {what}: {error.decode()}")

    def __call__(self):
        self.fn(*self.pointers)
        self.check_error("running")

    def compare(self):
        """The largest max|gpu - cpu| / rms(cpu) over the outputs, and whether
        each is within its type's tolerance: 1e-3 in float32 (the CPU's own
        float32 results are up to 4e-4 from float64 on softmax_ln: the two
        sum in different orders), 1e-10 in float64. Cases computed in bf16 or
        f16 between ops round each op's result: the GPU's and the CPU's sums
        in other orders may round a value one unit of the last place apart
        (2^-8 in bf16, 2^-11 in f16, of values up to a few times the RMS),
        while a lane loading the wrong fragment is off by the values
        themselves."""
        worst, ok = 0.0, True
        lines = []
        for (kind, name, dtype, shape), t in zip(self.args, self.tensors):
            if kind != "output":
                continue
            got = t.cpu().numpy().astype(np.float64)
            want = self.expected[name].astype(np.float64)
            rms = max(float(np.sqrt(np.mean(want ** 2))) if want.size else 0.0, 1e-30)
            err = float(np.max(np.abs(got - want))) / rms if want.size else 0.0
            if not np.all(np.isfinite(got)):
                err = float("inf")
            worst = max(worst, err)
            tolerance = 1e-10 if dtype == "float64" else 1e-3
            if "_bf16" in self.name:
                tolerance = 3e-2
            elif "_f16" in self.name:
                tolerance = 4e-3
            ok = ok and err <= tolerance
            lines.append(f"    {name:32s} {str(shape):22s} max|gpu-cpu|/rms {err:.2e}")
        return worst, ok, lines


def synchronize():
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def median_ms(fn, repeats=30, warmup=3):
    for _ in range(warmup):
        fn()
    synchronize()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        synchronize()
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times))


def print_kernel_profile(case, calls=5, top=12):
    """The kernels that take the most GPU time over `calls` calls (CUPTI,
    through torch's profiler: it sees every kernel of the process)."""
    from torch.profiler import ProfilerActivity, profile
    case()
    synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            case()
        synchronize()
    events = [e for e in prof.key_averages() if e.device_type.name == "CUDA"]
    total = sum(e.device_time_total for e in events) or 1.0
    print(f"     kernels of {case.name}: {len(events)} kinds, "
          f"{total / calls / 1e3:.3f} ms per call on the GPU")
    for e in sorted(events, key=lambda e: -e.device_time_total)[:top]:
        print(f"       {e.device_time_total / calls / 1e3:8.3f} ms {e.count // calls:4d}x "
              f"{100 * e.device_time_total / total:5.1f}%  {e.key[:60]}")


def torch_peer(case, dtype=None):
    """The same computation in torch (float32, TF32 off; or in `dtype`), or
    None."""
    x = {name: (t.to(dtype) if dtype else t)
         for (kind, name, *_), t in zip(case.args, case.tensors) if kind == "input"}
    if case.name.startswith("sgemm"):
        return lambda: torch.matmul(x["a"], x["b"])
    if case.name.startswith("mlp_b"):
        def mlp():
            h = torch.relu(x["input"] @ x["layer1.weight"].T + x["layer1.bias"])
            h = torch.relu(h @ x["layer2.weight"].T + x["layer2.bias"])
            return h @ x["layer3.weight"].T + x["layer3.bias"]
        return mlp
    if case.name.startswith("cnn_b"):
        f = torch.nn.functional

        def cnn():
            h = f.max_pool2d(torch.relu(f.conv2d(x["input"], x["block1.weight"], padding=1)), 2)
            h = f.max_pool2d(torch.relu(f.conv2d(h, x["block2.weight"], padding=1)), 2)
            return h.flatten(1) @ x["fc.weight"].T + x["fc.bias"]
        return cnn
    return None


def main():
    bundle = sys.argv[1]
    timing = "--time" in sys.argv
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if DEVICE == "cuda":
        torch.cuda.init()
        runtime = ctypes.CDLL(os.path.join(bundle, "libmithril_cuda_runtime.so"))
        runtime.mithrilCudaTakeError.restype = ctypes.c_char_p
        print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    else:
        runtime = None
        print(f"CPU run of the harness, torch {torch.__version__}")
    failures = 0
    only = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--only=")]
    profiled = [c for a in sys.argv if a.startswith("--profile=")
                for c in a.split("=", 1)[1].split(",")]
    for name in sorted(os.listdir(bundle)):
        if only and name not in only[0].split(","):
            continue
        directory = os.path.join(bundle, name)
        if not os.path.isfile(os.path.join(directory, "model.so")):
            continue
        try:
            case = Case(directory, runtime)
            case()
            synchronize()
            worst, ok, lines = case.compare()
        except Exception as e:  # report every case, then fail
            print(f"FAIL {name}: {e}")
            failures += 1
            continue
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}: worst {worst:.2e}")
        if not ok or "-v" in sys.argv:
            print("\n".join(lines))
        if name in profiled:
            print_kernel_profile(case)
        if timing:
            ours = median_ms(case)
            peer = torch_peer(case)
            text = f"     time: ours {ours:.3f} ms"
            if peer:
                theirs = median_ms(peer)
                text += f", torch {theirs:.3f} ms, torch/ours {theirs / ours:.2f}x"
            print(text)
    print(f"{failures} case(s) failed" if failures else "all cases match the CPU pipeline")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
