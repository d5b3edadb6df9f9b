# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Parallelism: the MLP 784-512-512-10 training step (SGD, cross-entropy,
batch 256) in one process with one thread against device_mesh=(2,) (data)
and (1, 2) (tensor: the 784-512-512 pair split) over `mpirun -n 2` with one
thread per rank, and the share of the step the gradients' sums take (waits for
the other rank included). Each configuration runs in its own processes,
alternately, ROUNDS times; the table gives medians.

    /usr/bin/python3 bench/distributed.py [--rounds 3] [--steps 30]

Writes the table to stdout (bench/results.md keeps a copy per host)."""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

BATCH = 256
STEPS_PER_BLOCK = 5


def run_case(mesh: tuple, steps: int) -> dict:
    """In a launched process: time `steps` training steps; rank 0 prints JSON."""
    # The compile figure is a cold one (the persistent cache off, as in
    # bench/bench.py's table).
    os.environ["MITHRIL_CACHE"] = "0"
    import mithril as ml
    from mithril import _mithril
    from mithril.models import CrossEntropy, Mean, TrainModel

    from bench import mlp
    ranks = int(np.prod(mesh))
    backend = ml.MlirBackend(dtype=ml.float32, num_threads=1,
                             device_mesh=mesh if ranks > 1 else None)
    train = TrainModel(mlp())
    train.add_loss(CrossEntropy(), reduce_steps=[Mean()], input="logits", target="target")
    start = time.perf_counter()
    pm = ml.compile(train, backend, shapes={"input": [BATCH, 784], "target": [BATCH]})
    params = pm.randomize_params(seed=0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, 784)).astype(np.float32)
    y = rng.integers(0, 10, BATCH)
    optimizer = ml.SGD(lr=0.01)
    pm.train_step(params, {"input": x, "target": y}, optimizer)  # compiles the step
    compile_s = time.perf_counter() - start
    # Blocks of steps between two timings of the host's speed probe (every
    # rank probes, so the ranks stay in step); the parent keeps quiet blocks.
    from hostinfo import speed_probe
    blocks = []
    summing = _mithril.all_reduce_seconds()
    for _ in range(max(1, steps // STEPS_PER_BLOCK)):
        probe_before = speed_probe()
        times = []
        for _ in range(STEPS_PER_BLOCK):
            t0 = time.perf_counter()
            pm.train_step(params, {"input": x, "target": y}, optimizer)
            times.append(time.perf_counter() - t0)
        blocks.append([float(np.median(times) * 1e3), probe_before, speed_probe()])
    # The step's time at its sums of the gradients: the barriers before each
    # rank adds the gradients where they lie (in the update's loops), with
    # the waits for the other rank.
    summed_ms = (_mithril.all_reduce_seconds() - summing) * 1e3
    timed_steps = max(1, steps // STEPS_PER_BLOCK) * STEPS_PER_BLOCK
    if ranks > 1:
        # A slow period may hit one rank's core and not the other's, and the
        # step waits for the slower rank: a block's probes are the slowest
        # rank's.
        probes = np.ascontiguousarray([b[1:] for b in blocks], dtype=np.float64)
        every = np.empty((ranks,) + probes.shape)
        _mithril.all_gather_into(probes, every, "world")
        for b, slowest in zip(blocks, every.max(axis=0)):
            b[1:] = slowest.tolist()
    result = {"mesh": list(mesh), "blocks": blocks, "compile_s": compile_s,
              "step_sums_ms": summed_ms / timed_steps}
    if mesh[0] > 1:
        # The all-reduce alone: one buffer the size of all the gradients,
        # copied into the shared window (the step's code computes each
        # gradient in it and sums them one parameter at a time).
        total = sum(int(np.prod(v.shape)) for v in params.values())
        buffer = np.ones(total, np.float32)
        reduce_times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            _mithril.all_reduce_sum(buffer)
            reduce_times.append(time.perf_counter() - t0)
        result["allreduce_ms"] = float(np.median(reduce_times) * 1e3)
        result["gradient_floats"] = total
    if backend.rank == 0:
        print("RESULT " + json.dumps(result), flush=True)
    return result


def launch(mesh: tuple, steps: int) -> dict:
    ranks = int(np.prod(mesh))
    env = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    command = [sys.executable, __file__, "--case", "x".join(map(str, mesh)), "--steps",
               str(steps)]
    if ranks > 1:
        # One core per rank.
        command = ["mpirun", "-n", str(ranks), "--bind-to", "core"] + command
    else:
        command = ["taskset", "-c", "0"] + command
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
    line = next(l for l in out.splitlines() if l.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case is not None:
        run_case(tuple(int(d) for d in args.case.split("x")), args.steps)
        return
    if shutil.which("mpirun") is None:
        sys.exit("bench/distributed.py needs mpirun (apt-get install openmpi-bin libopenmpi-dev)")
    from hostinfo import host_cpu, quiet_limit
    one, two, tensor = [], [], []
    for _ in range(args.rounds):
        one.append(launch((1,), args.steps))
        two.append(launch((2,), args.steps))
        tensor.append(launch((1, 2), args.steps))
    # Only blocks whose speed probes were quiet count (bench/hostinfo.py).
    limit = quiet_limit([p for r in one + two + tensor for b in r["blocks"] for p in b[1:]])

    def step_ms(runs):
        quiet = [b[0] for r in runs for b in r["blocks"] if max(b[1:]) <= limit]
        return float(np.median(quiet or [b[0] for r in runs for b in r["blocks"]])), len(quiet)

    (step1, quiet1), (step2, quiet2), (step_t, quiet_t) = step_ms(one), step_ms(two), step_ms(tensor)
    reduce2 = float(np.median([r["allreduce_ms"] for r in two]))
    in_step2 = float(np.median([r["step_sums_ms"] for r in two]))
    print(f"Host: {host_cpu()}, {os.cpu_count()} cores; Open MPI via mpirun, one thread per rank")
    print(f"MLP 784-512-512-10 training step (SGD), batch {BATCH}, float32, "
          f"{args.rounds} launches x {args.steps} steps, the median of the quiet blocks of "
          f"{STEPS_PER_BLOCK} steps (the host's speed probe within 15% of its fastest, "
          f"{limit * 1e3:.2f} ms; quiet blocks: {quiet1}, {quiet2} and {quiet_t} of "
          f"{len(one[0]['blocks']) * args.rounds} per configuration)\n")
    print("| configuration | step (ms) | speed-up | at the gradients' sums in a step (ms) | share |")
    print("|---|---:|---:|---:|---:|")
    print(f"| 1 process x 1 thread | {step1:.2f} | 1.00x | - | - |")
    print(f"| device_mesh=(2,): 2 ranks x 1 thread | {step2:.2f} | {step1 / step2:.2f}x | "
          f"{in_step2:.2f} ({two[0]['gradient_floats'] * 4 / 2**20:.1f} MiB) | "
          f"{in_step2 / step2:.0%} |")
    print(f"| device_mesh=(1, 2): tensor-parallel pair, 2 ranks x 1 thread | {step_t:.2f} | "
          f"{step1 / step_t:.2f}x | - | - |")
    print(f"\ncompile (first step included): 1 process {np.median([r['compile_s'] for r in one]):.2f} s, "
          f"2 ranks {np.median([r['compile_s'] for r in two]):.2f} s, tensor-parallel "
          f"{np.median([r['compile_s'] for r in tensor]):.2f} s")
    print(f"at the sums: the barriers before each rank adds the gradients where they lie (in the "
          f"loops of the SGD update: window-ranks), the waits for the other rank included; one "
          f"sum of a buffer of all the gradients by the runtime (`all_reduce_sum`, copied into "
          f"the window): {reduce2:.2f} ms")


if __name__ == "__main__":
    main()
