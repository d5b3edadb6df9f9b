# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Row reductions and the ops that read them back along the rows (softmax,
log-softmax, layer norm), against torch's CPU kernels, float32, on one
thread (or --threads N). Since the fifty-ninth session each reduction runs
in the row blocks of its reader (Scheduler::fuseRowReductions), rows that are
not whole vectors split into whole vectors and a rest, and reduction loops
carry their tile's lanes; before, a 256 x 1000 softmax took four passes over
its rows on 25-lane vectors (0.96x of torch, layer norm 0.56x). Writes
bench/rows.md (bench/rows-avx2.md with --max-isa avx2: ours compiled for
haswell, torch's ATen capped at AVX2).

    python3 bench/rows.py [--max-isa avx2] [--threads N] [-o FILE]
"""

import argparse
import os
import sys
import time


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-isa", choices=["avx2"],
                        help="ours and torch on AVX2 code, into bench/rows-avx2.md")
    parser.add_argument("--threads", type=int, default=1, help="threads of both (default 1)")
    parser.add_argument("-o", help="the markdown output")
    return parser.parse_args()


HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from hostinfo import host_description  # noqa: E402

# ATen picks its kernels when it loads: the run starts over with the cap set.
AVX2_ENV = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
if __name__ == "__main__" and parse_args().max_isa == "avx2" and \
        any(os.environ.get(k) != v for k, v in AVX2_ENV.items()):
    os.execve(sys.executable, [sys.executable] + sys.argv, {**os.environ, **AVX2_ENV})

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import mithril as ml  # noqa: E402
from mithril.models import LayerNorm, LogSoftmax, Model, Softmax  # noqa: E402

from bench import median_times  # noqa: E402

SHAPES = [(256, 1000), (64, 4096), (1024, 128), (4096, 768), (16, 10)]
OPS = {
    "softmax": (Softmax, lambda x, w, b: torch.softmax(x, -1)),
    "log_softmax": (LogSoftmax, lambda x, w, b: torch.log_softmax(x, -1)),
    "layer norm": (LayerNorm, lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b, 1e-5)),
}


def main():
    args = parse_args()
    target = "haswell" if args.max_isa else None
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    rows = []
    for op_name, (block, torch_fn) in OPS.items():
        for shape in SHAPES:
            x = (rng.standard_normal(shape) * 3).astype(np.float32)
            w = rng.standard_normal(shape[-1]).astype(np.float32)
            b = rng.standard_normal(shape[-1]).astype(np.float32)
            model = Model()
            model |= block().connect(input="x", output=ml.IOKey("y"))
            pm = ml.compile(model, ml.MlirBackend(num_threads=args.threads),
                            shapes={"x": list(shape)}, inference=True,
                            cpu_options={"target_cpu": target} if target else None)
            params = {}
            for key in pm.randomize_params():
                params[key] = w if key.endswith("weight") else b
            ours = lambda: pm.evaluate(params, {"x": x})  # noqa: E731
            tx, tw, tb = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b)
            reference = torch_fn(tx.double(), tw.double(), tb.double()).numpy()
            err = np.abs(ours()["y"] - reference).max() / max(np.abs(reference).max(), 1e-30)
            if not err < 1e-5:
                sys.exit(f"rows: {op_name} {shape}: our result is {err:.1e} off torch's float64 one")
            with torch.no_grad():
                t_ours, t_torch = median_times([ours, lambda: torch_fn(tx, tw, tb)], 15)
            name = f"{op_name} {shape[0]} x {shape[1]}"
            rows.append((name, t_ours, t_torch))
            print(f"{name}: ours {t_ours * 1e6:.1f} us, torch {t_torch * 1e6:.1f} us, "
                  f"{t_torch / t_ours:.2f}x", flush=True)
    suffix = "-avx2" if args.max_isa else ""
    path = args.o or os.path.join(HERE, f"rows{suffix}.md")
    threads = f"{args.threads} thread{'s' if args.threads > 1 else ''}"
    lines = [f"# Row reductions{' (AVX2 code)' if args.max_isa else ''}", "",
             f"Measured by `python3 bench/rows.py"
             f"{' --max-isa avx2' if args.max_isa else ''}"
             f"{f' --threads {args.threads}' if args.threads > 1 else ''}` on "
             f"{host_description()}, {threads}, {time.strftime('%Y-%m-%d %H:%M')}: ours "
             f"(MlirBackend(num_threads={args.threads})"
             f"{', compiled for haswell' if args.max_isa else ''}, the call through "
             f"`evaluate`) against torch {torch.__version__}'s CPU kernels"
             f"{' capped at AVX2 (ATEN_CPU_CAPABILITY=avx2)' if args.max_isa else ''} "
             "(torch.softmax, torch.log_softmax, F.layer_norm), float32, medians of "
             "alternating blocks in quiet periods (bench/bench.py's median_times); a ratio "
             "is torch's time over ours (above 1: we are faster).", "",
             "| case | ours | torch | torch / ours |", "| --- | --- | --- | --- |"]
    lines += [f"| {name} | {t_ours * 1e6:.1f} us | {t_torch * 1e6:.1f} us | "
              f"{t_torch / t_ours:.2f}x |" for name, t_ours, t_torch in rows]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
