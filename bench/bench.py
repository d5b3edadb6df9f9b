# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Measures models compiled by this compiler against numpy (OpenBLAS) and
torch on this machine, side by side, and writes bench/results.md and
bench/results.png.

Every case first checks that our result equals the peer's; then the
candidates run alternately, and medians over the repeats are reported with
their ratios (peer time / our time: above 1 means we are faster). Thread
counts are pinned and stated.

    PYTHONPATH=build/python_packages python3 bench/bench.py [--quick] [--max-isa avx2]

With --max-isa avx2 (bench/results-avx2.md) every candidate runs the code it
would run on a CPU without AVX-512 (AVX2 and FMA: Intel Haswell, AMD Zen 2):
ours compiled for `haswell`, numpy's OpenBLAS on its Haswell kernels, torch's
ATen and oneDNN capped at AVX2, the FMA peak of 256-bit registers.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

from hostinfo import (AVX512_HWCAPS, LINK_FACTOR, TORCH_AVX2_ENV, LinkProbe, build_link_probe,
                      cpu_isa, host_description, link_limit, quiet_limit, restart_without_blas_caps,
                      speed_probe, within_limits)


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer cases and repeats")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--max-isa", choices=["avx2"],
                        help="every candidate on the code of a CPU without AVX-512, into "
                             "bench/results-avx2.md")
    return parser.parse_args()


# --max-isa avx2: the environment that caps numpy's OpenBLAS (and torch's
# products, which call it) and torch's own kernels.
AVX2_ENV = {"OPENBLAS_CORETYPE": "Haswell", **TORCH_AVX2_ENV, "GLIBC_TUNABLES": AVX512_HWCAPS}
# The libraries read their caps when they load: the run starts over with
# them in its environment before numpy and torch are imported. (Only when
# run, not when other scripts import this file for its models.)
if __name__ == "__main__" and parse_args().max_isa == "avx2" and \
        any(os.environ.get(k) != v for k, v in AVX2_ENV.items()):
    os.execve(sys.executable, [sys.executable] + sys.argv, {**os.environ, **AVX2_ENV})
if __name__ == "__main__" and parse_args().max_isa is None:
    restart_without_blas_caps()

import numpy as np

import mithril as ml
from mithril.models import (CrossEntropy, Convolution2D, Flatten, Linear, MatrixMultiply,
                            MaxPool2D, Mean, Model, Relu, TrainModel)
from mithril.utils.png import save_bar_plot


try:
    import torch
except ImportError:  # torch is optional for the benchmark
    torch = None
try:
    from threadpoolctl import threadpool_info, threadpool_limits
except ImportError:
    threadpool_info = threadpool_limits = None


WARM_S, BLOCK_S = 0.12, 0.2
# Ours' target CPU under --max-isa (none: the host).
TARGET = {"cpu": None}


def compile_ours(*args, **kwargs):
    """ml.compile, for the --max-isa target CPU where one is set."""
    if TARGET["cpu"]:
        kwargs["cpu_options"] = {"target_cpu": TARGET["cpu"]}
    return ml.compile(*args, **kwargs)


# The fastest speed probe seen in this process (bench/hostinfo.py).
_fastest_probe = [float("inf")]
# At more than one thread, the round trip between two cores
# (bench/corelink.c): its probe, and every round trip it timed.
_link = {"probe": None, "seen": []}
MAX_ROUNDS = 12


def median_times(funcs, repeats):
    """Runs the callables alternately, in blocks of at least BLOCK_S and 4
    calls of one callable, and returns their median seconds over the calls
    that start WARM_S or more into a block (and never the first): the threads
    a candidate leaves spinning after its calls take the cores of the next
    candidate for a while (OpenBLAS's pthreads spin for about 0.1 s, libgomp's
    behind torch for milliseconds, ours for 0.1 ms), which measures nobody's
    own speed. At least three quiet rounds (the host's speed probe before and
    after within quiet_limit: this VM has seconds-long slow periods), and
    `repeats` samples per callable; after MAX_ROUNDS, the slow rounds count
    too for a callable with no quiet sample. (A Timings: `judged()` judges
    its rounds again against the run's limits later on.)"""
    if _fastest_probe[0] == float("inf"):
        _fastest_probe[0] = min(speed_probe() for _ in range(10))
    link = _link["probe"]
    if link and not _link["seen"]:
        _link["seen"] += [t for t in (link() for _ in range(10)) if t]
    quiet_samples = [0] * len(funcs)
    log = []
    for f in funcs:  # warm up
        f()
    rounds = quiet_rounds = 0
    while (quiet_rounds < 3 or min(quiet_samples) < repeats) and rounds < MAX_ROUNDS:
        link_before = link() if link else None
        before = speed_probe()
        samples = [[] for _ in funcs]
        for i, f in enumerate(funcs):
            start, calls = time.perf_counter(), 0
            while True:
                t0 = time.perf_counter()
                f()
                t1 = time.perf_counter()
                calls += 1
                if calls > 1 and t0 - start >= WARM_S:
                    samples[i].append(t1 - t0)
                if calls >= 4 and t1 - start >= BLOCK_S:
                    break
        after = speed_probe()
        links = [t for t in (link_before, link() if link else None) if t]
        _fastest_probe[0] = min(_fastest_probe[0], before, after)
        _link["seen"] += links
        quiet = within_limits((before, after), quiet_limit(_fastest_probe), links,
                              link_limit(_link["seen"]))
        if quiet:
            quiet_samples = [n + len(sample) for n, sample in zip(quiet_samples, samples)]
        log.append(((before, after), links, samples))
        rounds += 1
        quiet_rounds += quiet
    return Timings(log)


class Timings(list):
    """median_times' medians, with the rounds they came from, judged quiet
    against the fastest speed probe seen by the end of those rounds. A run
    that starts in one of the host's slow periods takes that period's probes
    for quiet ones until it sees a faster one: `judged()` judges the rounds
    again against the limits as they stand later in the run (peers.py judges
    every block at the end of its run)."""

    def __init__(self, rounds):
        self.rounds = rounds
        super().__init__(self.judged())

    def judged(self) -> list:
        count = len(self.rounds[0][2])
        quiet = [[] for _ in range(count)]
        slow = [[] for _ in range(count)]
        limit, round_trip_limit = quiet_limit(_fastest_probe), link_limit(_link["seen"])
        for probes, links, samples in self.rounds:
            target = quiet if within_limits(probes, limit, links, round_trip_limit) else slow
            for i, sample in enumerate(samples):
                target[i].extend(sample)
        return [statistics.median(q or s) for q, s in zip(quiet, slow)]


def measure_peak(threads: int) -> dict:
    """GFLOP/s of an FMA loop (bench/peak.c) on `threads` threads, per
    dtype; empty without a C compiler."""
    import ctypes
    import shutil
    import subprocess
    import tempfile
    import threading
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return {}
    out = os.path.join(tempfile.mkdtemp(), "peak.so")
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peak.c")
    # Under --max-isa avx2, or on a host without AVX-512, 256-bit registers
    # (AVX-512 hosts that split 512-bit FMAs, as Zen 4 does, reach the same
    # peak both ways); 64-byte vectors do not fit an AVX2 host's registers.
    vector_bytes = 32 if TARGET["cpu"] or "avx512f" not in cpu_isa() else 64
    march = ["-march=haswell"] if TARGET["cpu"] else ["-march=native"]
    march.append(f"-DVECTOR_BYTES={vector_bytes}")
    if subprocess.run([cc, "-O2", *march, "-ffp-contract=fast", "-shared", "-fPIC",
                       src, "-o", out], capture_output=True).returncode != 0:
        return {}
    lib = ctypes.CDLL(out)
    peaks = {}
    for name, lanes in (("f32", vector_bytes // 4), ("f64", vector_bytes // 8)):
        fn = getattr(lib, f"peak_{name}")
        fn.argtypes, fn.restype = [ctypes.c_int64], ctypes.c_double
        iterations = 20_000_000
        best = 0.0
        for _ in range(7):  # the best of several: the VM's speed moves
            workers = [threading.Thread(target=fn, args=(iterations,)) for _ in range(threads)]
            start = time.perf_counter()
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            seconds = time.perf_counter() - start
            best = max(best, threads * iterations * 12 * lanes * 2 / seconds / 1e9)
        peaks[name] = best
    return peaks


def mlp():
    model = Model()
    model |= Linear(512).connect(input="input")
    model += Relu()
    model += Linear(512)
    model += Relu()
    model += Linear(10).connect(output="logits")
    return model


def cnn():
    model = Model()
    model |= Convolution2D(kernel_size=3, out_channels=32, padding=1).connect(input="input")
    model += Relu()
    model += MaxPool2D(kernel_size=2)
    model += Convolution2D(kernel_size=3, out_channels=64, padding=1)
    model += Relu()
    model += MaxPool2D(kernel_size=2)
    model += Flatten(start_dim=1)
    model += Linear(10).connect(output="logits")
    return model


def torch_mlp(params, names):
    layers = []
    for i, (w, b) in enumerate(names):
        lin = torch.nn.Linear(params[w].shape[1], params[w].shape[0])
        with torch.no_grad():
            lin.weight.copy_(torch.tensor(params[w]))
            lin.bias.copy_(torch.tensor(params[b]))
        layers += [lin] + ([torch.nn.ReLU()] if i < len(names) - 1 else [])
    return torch.nn.Sequential(*layers)


def run(quick: bool, threads_list):
    rng = np.random.default_rng(0)
    repeats = 5 if quick else 30
    rows = []

    def add(case, times, no_numpy=False, flops=None, note="", peak=None):
        # Timed now, judged at the end of the thread count's cases (Timings).
        rows.append((case, times, no_numpy, flops, note, peak))

    link_path = build_link_probe(tempfile.mkdtemp())
    for threads in threads_list:
        peaks = measure_peak(threads)
        _link.update(probe=LinkProbe(link_path) if threads > 1 else None, seen=[])
        first_row = len(rows)
        # Ours is pinned like the peers: large ops split across `threads`.
        backend = ml.MlirBackend(dtype=ml.float32, num_threads=threads)
        if torch is not None:
            torch.set_num_threads(threads)
        limit = threadpool_limits(threads) if threadpool_limits else None
        # Matrix products, single and double precision.
        for prefix, dtype, peak in (("s", np.float32, "f32"), ("d", np.float64, "f64")):
            gemm_backend = backend if dtype == np.float32 else ml.MlirBackend(
                dtype=ml.float64, num_threads=threads)
            for n in ([256, 512] if quick else [256, 512, 1024, 2048]):
                a = rng.standard_normal((n, n)).astype(dtype)
                b = rng.standard_normal((n, n)).astype(dtype)
                model = Model()
                model |= MatrixMultiply().connect(left="a", right="b", output=ml.IOKey("c"))
                # To the first result: the product compiles at its first call.
                start = time.perf_counter()
                pm = compile_ours(model, gemm_backend, shapes={"a": [n, n], "b": [n, n]})
                ours = lambda: pm.evaluate({}, {"a": a, "b": b})
                first = ours()
                compile_s = time.perf_counter() - start
                np.testing.assert_allclose(first["c"], a @ b, rtol=1e-3, atol=1e-2)
                funcs = [ours, lambda: a @ b]
                if torch is not None:
                    ta, tb = torch.tensor(a), torch.tensor(b)
                    funcs.append(lambda: ta @ tb)
                t = median_times(funcs, max(3, repeats // (n // 256)))
                add(f"{prefix}gemm {n} ({threads}t)", t, False, 2 * n ** 3,
                    note=f"compile {compile_s * 1e3:.0f} ms", peak=peak)
        # MLP inference.
        for batch in ([1, 16, 64] if quick else [1, 16, 64, 256]):
            start = time.perf_counter()
            pm = compile_ours(mlp(), backend, shapes={"input": [batch, 784]}, inference=True)
            compile_s = time.perf_counter() - start
            params = pm.randomize_params(seed=0)
            names = [(f"linear_{i}.weight", f"linear_{i}.bias") for i in range(3)]
            x = rng.standard_normal((batch, 784)).astype(np.float32)
            ours = lambda: pm.evaluate(params, {"input": x})
            funcs = [ours]
            if torch is not None:
                net = torch_mlp(params, names)
                tx = torch.tensor(x)
                with torch.no_grad():
                    ref = net(tx).numpy()
                np.testing.assert_allclose(ours()["logits"], ref, rtol=1e-3, atol=1e-4)
                funcs.append(lambda: net(tx))

            def numpy_mlp():
                h = np.maximum(x @ params[names[0][0]].T + params[names[0][1]], 0)
                h = np.maximum(h @ params[names[1][0]].T + params[names[1][1]], 0)
                return h @ params[names[2][0]].T + params[names[2][1]]
            np.testing.assert_allclose(ours()["logits"], numpy_mlp(), rtol=1e-3, atol=1e-4)
            funcs.insert(1, numpy_mlp)
            with (torch.no_grad() if torch is not None else _null()):
                t = median_times(funcs, repeats)
            add(f"MLP inference b{batch} ({threads}t)", t,
                note=f"compile {compile_s * 1e3:.0f} ms")
        # MLP training step.
        for batch in ([64] if quick else [64, 256]):
            train = TrainModel(mlp())
            train.add_loss(CrossEntropy(), reduce_steps=[Mean()], input="logits", target="target")
            start = time.perf_counter()
            pm = compile_ours(train, backend, shapes={"input": [batch, 784], "target": [batch]})
            params = pm.randomize_params(seed=0)
            x = rng.standard_normal((batch, 784)).astype(np.float32)
            y = rng.integers(0, 10, batch)
            opt = ml.SGD(lr=0.01)
            ours = lambda: pm.train_step(params, {"input": x, "target": y}, opt)
            ours()  # the training step compiles on first use
            compile_s = time.perf_counter() - start
            funcs = [ours]
            if torch is not None:
                net = torch_mlp(params, [(f"linear_{i}.weight", f"linear_{i}.bias")
                                         for i in range(3)])
                topt = torch.optim.SGD(net.parameters(), lr=0.01)
                tx, ty = torch.tensor(x), torch.tensor(y)

                def torch_step():
                    topt.zero_grad()
                    loss = torch.nn.functional.cross_entropy(net(tx), ty)
                    loss.backward()
                    topt.step()
                funcs.append(torch_step)
            t = median_times(funcs, repeats)
            add(f"MLP train step b{batch} ({threads}t)", t, True,
                note=f"compile {compile_s * 1e3:.0f} ms")
        # CNN forward.
        start = time.perf_counter()
        pm = compile_ours(cnn(), backend, shapes={"input": [16, 1, 28, 28]}, inference=True)
        cnn_compile_s = time.perf_counter() - start
        params = pm.randomize_params(seed=0)
        x = rng.standard_normal((16, 1, 28, 28)).astype(np.float32)
        ours = lambda: pm.evaluate(params, {"input": x})
        funcs = [ours]
        if torch is not None:
            F = torch.nn.functional
            tp = {k: torch.tensor(v) for k, v in params.items()}
            names = sorted(k for k in params if k.endswith("weight"))
            conv1, conv2 = [k for k in names if tp[k].dim() == 4]
            lin = [k for k in names if tp[k].dim() == 2][0]

            def torch_cnn():
                h = F.max_pool2d(F.relu(F.conv2d(torch.tensor(x), tp[conv1], tp[conv1[:-6] + "bias"],
                                                 padding=1)), 2)
                h = F.max_pool2d(F.relu(F.conv2d(h, tp[conv2], tp[conv2[:-6] + "bias"],
                                                 padding=1)), 2)
                return F.linear(h.flatten(1), tp[lin], tp[lin[:-6] + "bias"])
            with torch.no_grad():
                np.testing.assert_allclose(ours()["logits"], torch_cnn().numpy(), rtol=1e-3,
                                           atol=1e-3)
                funcs.append(torch_cnn)
                t = median_times(funcs, max(3, repeats // 5))
        else:
            t = median_times(funcs, max(3, repeats // 5))
        add(f"CNN forward b16 ({threads}t)", t, True,
            note=f"compile {cnn_compile_s * 1e3:.0f} ms")
        # CNN training step (cross entropy, backward, SGD), checked against
        # torch on one step from the same parameters.
        train = TrainModel(cnn())
        train.add_loss(CrossEntropy(), reduce_steps=[Mean()], input="logits", target="target")
        start = time.perf_counter()
        pm = compile_ours(train, backend, shapes={"input": [16, 1, 28, 28], "target": [16]})
        params = pm.randomize_params(seed=0)
        y = rng.integers(0, 10, 16)
        opt = ml.SGD(lr=0.01)
        funcs = [lambda: pm.train_step(params, {"input": x, "target": y}, opt)]
        cnn_train_params = {k: v.copy() for k, v in params.items()}
        funcs[0]()  # the training step compiles on first use
        cnn_train_compile_s = time.perf_counter() - start
        params.update(cnn_train_params)  # torch starts from the same parameters
        opt = ml.SGD(lr=0.01)
        if torch is not None:
            tp = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
            topt = torch.optim.SGD(list(tp.values()), lr=0.01)
            tx, ty = torch.tensor(x), torch.tensor(y)

            def torch_logits():
                h = F.max_pool2d(F.relu(F.conv2d(tx, tp[conv1], tp[conv1[:-6] + "bias"],
                                                 padding=1)), 2)
                h = F.max_pool2d(F.relu(F.conv2d(h, tp[conv2], tp[conv2[:-6] + "bias"],
                                                 padding=1)), 2)
                return F.linear(h.flatten(1), tp[lin], tp[lin[:-6] + "bias"])

            def torch_cnn_step():
                topt.zero_grad()
                loss = F.cross_entropy(torch_logits(), ty)
                loss.backward()
                topt.step()
                return loss
            ours_loss = float(funcs[0]()["final_cost"])
            torch_loss = float(torch_cnn_step())
            np.testing.assert_allclose(ours_loss, torch_loss, rtol=1e-3)
            funcs.append(torch_cnn_step)
        t = median_times(funcs, max(3, repeats // 5))
        add(f"CNN train step b16 ({threads}t)", t, True,
            note=f"compile {cnn_train_compile_s * 1e3:.0f} ms")
        # The peak again after the cases: a VM lends its second core unevenly,
        # and the better of the two measurements is the machine's.
        for key, value in measure_peak(threads).items():
            peaks[key] = max(peaks.get(key, 0.0), value)
        for i in range(first_row, len(rows)):
            case, times, no_numpy, flops, note, peak = rows[i]
            times = times.judged()
            rows[i] = (case, times[0], [None] * no_numpy + times[1:], flops, note,
                       peaks.get(peak) if peak else None)
        if limit is not None:
            limit.unregister() if hasattr(limit, "unregister") else None
    return rows


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def write(rows, path_md, path_png, max_isa=None):
    blas = "unknown"
    if threadpool_info:
        info = [i for i in threadpool_info() if i.get("user_api") == "blas"]
        if info:
            blas = f"{info[0].get('internal_api')} {info[0].get('version')} " \
                   f"({info[0].get('architecture')})"
    capped = ""
    if max_isa:
        capped = (f" Every candidate on AVX2 code (`--max-isa {max_isa}`, as on a CPU without "
                  "AVX-512): ours compiled for `haswell` (cpu_options target_cpu), numpy's "
                  "OpenBLAS and torch with "
                  + ", ".join(f"`{k}={v}`" for k, v in AVX2_ENV.items())
                  + "; the peak is of 256-bit FMAs.")
    lines = [f"# Benchmarks{' (AVX2 code)' if max_isa else ''}", "",
             f"Measured by `make bench{' BENCH_ARGS=--max-isa=' + max_isa if max_isa else ''}` "
             f"on {host_description()}, {os.cpu_count()} cores, "
             f"{time.strftime('%Y-%m-%d %H:%M')}. numpy's BLAS: {blas}; torch "
             f"{torch.__version__ if torch else 'absent'}. Every candidate, ours included, is pinned "
             f"to the thread count in the case's name (ours: MlirBackend(num_threads=N), which "
             f"splits large ops across N threads of the MLIR async runtime). "
             "Times are medians of alternating blocks of runs (at least 0.2 s each; runs in "
             "a block's first 0.12 s, while the previous candidate's threads still spin, are "
             "not counted), from rounds in which the host's speed probe (bench/hostinfo.py) "
             "stayed within 15% of its fastest and, at more than one thread, a cache line's "
             "round trip between two cores (bench/corelink.c) within "
             f"{LINK_FACTOR:g}x of its usual time (these VMs have periods in which the host "
             "runs the two vCPUs on cores far apart: 460-510 ns instead of 100-115); a ratio is the peer's time over ours (above 1: "
             "we are faster)." + capped, "",
             "GFLOP/s is ours; % of peak is of an FMA loop (bench/peak.c) measured on the same "
             "thread count just before.", "",
             "| case | ours | numpy | torch | vs numpy | vs torch | GFLOP/s | % of peak | note |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    ratios, labels = [], []
    for case, ours, peers, flops, note, peak in rows:
        peers = list(peers) + [None] * (2 - len(peers))
        fmt = lambda t: f"{t * 1e3:.3f} ms" if t is not None else "-"
        r = [f"{p / ours:.2f}x" if p is not None else "-" for p in peers]
        gf = f"{flops / ours / 1e9:.1f}" if flops else "-"
        pct = f"{100 * flops / ours / 1e9 / peak:.0f}% of {peak:.0f}" if flops and peak else "-"
        lines.append(f"| {case} | {fmt(ours)} | {fmt(peers[0])} | {fmt(peers[1])} | {r[0]} | "
                     f"{r[1]} | {gf} | {pct} | {note} |")
        best = [p for p in peers if p is not None]
        if best:
            ratios.append(min(best) / ours)
            labels.append(case)
    lines += ["", "`results.png`: one bar per case, the best peer's time over ours; the "
              "line marks parity (blue bars: we are faster)."]
    # The file's other sections (memory controls, data parallelism: written by
    # hand from their own benchmarks) stay.
    kept = ""
    if os.path.exists(path_md):
        with open(path_md) as f:
            previous = f.read()
        at = previous.find("\n## ")
        kept = previous[at:] if at >= 0 else ""
    with open(path_md, "w") as f:
        f.write("\n".join(lines) + "\n" + kept)
    save_bar_plot(path_png, labels, ratios)
    print("\n".join(lines))


def numpy_blas_is_openblas() -> bool:
    """Whether numpy multiplies through OpenBLAS: without it (Debian's
    reference libblas, 30x slower) the table would compare against nothing."""
    return bool(threadpool_info) and any(
        i.get("internal_api") == "openblas" for i in threadpool_info())


def main():
    args = parse_args()
    if args.max_isa:
        TARGET["cpu"] = "haswell"
    if not numpy_blas_is_openblas():
        sys.exit("bench: numpy does not run on OpenBLAS here (threadpoolctl or libopenblas0 "
                 "missing): run `make bench`, which installs them "
                 "(MITHRIL_WITH_BENCH=1 scripts/install-deps.sh)")
    threads = [int(t) for t in args.threads.split(",")]
    # Cold compiles, as bench/peers.py measures them: the persistent compile
    # cache would answer the table's "compile" notes from disk after the
    # first run. Set here, not when this file is imported: the scripts that
    # take its models (bench/compile_cache.py measures the warm cache) keep
    # their own cache settings.
    os.environ["MITHRIL_CACHE"] = "0"
    here = os.path.dirname(os.path.abspath(__file__))
    rows = run(args.quick, threads)
    name = f"results-{args.max_isa}" if args.max_isa else "results"
    write(rows, os.path.join(here, name + ".md"), os.path.join(here, name + ".png"),
          args.max_isa)


if __name__ == "__main__":
    main()
