# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""The host CPU's name, as the benchmark tables state it."""

import os
import sys
import platform
import time

# Running AVX2 code on an AVX-512 host (bench.py and peers.py --max-isa
# avx2): glibc 2.36 picks its string functions' EVEX variants by CPUID unless
# this tunable takes the AVX-512 features away (ld.so --list-diagnostics).
AVX512_HWCAPS = "glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-AVX512CD"

# Settings an environment may carry that cap numpy's OpenBLAS below the host
# (a Haswell core type, a smaller L2): a run on the host's own ISA starts
# over without them, as scripts/bench-peers.sh does.
BLAS_CAPS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def restart_without_blas_caps():
    """Starts this script over without BLAS_CAPS in its environment, where
    any is set (before numpy loads OpenBLAS, which reads them)."""
    if any(k in os.environ for k in BLAS_CAPS):
        print("bench: starting over without " +
              ", ".join(f"{k}={os.environ[k]}" for k in BLAS_CAPS if k in os.environ),
              file=sys.stderr, flush=True)
        env = {k: v for k, v in os.environ.items() if k not in BLAS_CAPS}
        os.execve(sys.executable, [sys.executable] + sys.argv, env)
# torch's caps: ATen's kernels and inductor's vector ISA, oneDNN (its
# convolutions) and MKL (Linear layers, packed by freezing).
TORCH_AVX2_ENV = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2",
                  "MKL_ENABLE_INSTRUCTIONS": "AVX2"}


def host_cpu() -> str:
    """The CPU's model name from /proc/cpuinfo (or what platform knows)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def cpu_isa() -> list[str]:
    """The vector extensions the kernels care about that this CPU has."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f
                          if line.startswith("flags")), [])
    except OSError:
        flags = []
    wanted = ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "avx512_fp16", "avx_vnni",
              "amx_tile", "amx_bf16", "amx_int8")
    return [f for f in wanted if f in flags]


def host_description() -> str:
    """The CPU's name, LLVM's name for it (what our kernels are compiled
    for) and its vector extensions: "AMD EPYC (LLVM znver4; avx2, ...)"."""
    llvm = "unknown"
    try:
        from mithril import _mithril
        llvm = _mithril.cpu_target().get("cpu", llvm)
    except (ImportError, AttributeError):
        pass
    return f"{host_cpu()} (LLVM `{llvm}`; {', '.join(cpu_isa()) or 'no AVX2'})"


def speed_probe() -> float:
    """Seconds a fixed pure-Python loop takes now (the best of 3 runs).

    The VMs this project is measured on have periods, seconds long, in which
    every workload of a process runs 1.3-2x slower (numpy's sums as much as
    our kernels; measured 2026-11-27). Timing this probe beside each block of
    calls tells the quiet blocks from the slow ones. Pure Python, so that every
    interpreter started from the same binary (ours and the peers' venv) takes
    the same time for it."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        total = 0
        for i in range(60000):
            total += i * i
        best = min(best, time.perf_counter() - start)
    return best


def quiet_limit(probes) -> float:
    """The probe time up to which a block counts as quiet: 15% above the
    fastest probe of the whole run (the probe's times are bimodal on these
    VMs: within 10% of the fastest when quiet, 1.4-1.9x when slow)."""
    return 1.15 * min(probes)


# The cores-apart test (bench/corelink.c): a block run on more than one
# thread counts as quiet only if a cache line's round trip between its first
# two cores, timed before and after it, is within LINK_FACTOR of the run's
# usual (lower-decile) round trip.
LINK_FACTOR = 2.0
LINK_LIBRARY = "corelink.so"


def build_link_probe(directory: str):
    """Compiles bench/corelink.c into `directory`; its path, or None without
    a C compiler."""
    import shutil
    import subprocess
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return None
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corelink.c")
    out = os.path.join(directory, LINK_LIBRARY)
    done = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-pthread", src, "-o", out],
                          capture_output=True)
    return out if done.returncode == 0 else None


class LinkProbe:
    """Times a cache line's round trip between the first two cores this
    process may run on (None where it may run on one, or the probe is not
    built)."""

    def __init__(self, path):
        self._fn = None
        cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        if not path or not os.path.exists(path) or len(cpus) < 2:
            return
        import ctypes
        fn = ctypes.CDLL(path).corelink_round_trip_ns
        fn.argtypes, fn.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_double
        self._fn, self._cpus = fn, cpus[:2]

    def __call__(self):
        if self._fn is None:
            return None
        ns = self._fn(*self._cpus)
        return ns if ns > 0 else None


def within_limits(speed_probes, speed_limit, round_trips, round_trip_limit) -> bool:
    """Whether a block of timings ran in a quiet period: every speed probe
    taken beside it within speed_limit (quiet_limit) and every round trip
    between cores within round_trip_limit (link_limit; none are taken on one
    core). bench.py and peers.py both judge their blocks by it."""
    return (max(speed_probes) <= speed_limit
            and all(t <= round_trip_limit for t in round_trips if t))


def link_limit(round_trips) -> float:
    """The round trip up to which a block counts as quiet: LINK_FACTOR times
    the lower decile of the run's probes (a few probes land on cores closer
    than usual, 50-60 ns against 100-115 on these VMs; the cores-apart periods
    take 460-510 ns)."""
    times = sorted(t for t in round_trips if t)
    if not times:
        return float("inf")
    return LINK_FACTOR * times[len(times) // 10]
