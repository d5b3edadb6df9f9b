# -*- Python -*-
# lit configuration of the mithril test suites.

import os

import lit.formats
from lit.llvm import llvm_config

config.name = "MITHRIL"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.mithril_obj_root, "test")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.mithril_tools_dir, append_path=True)

python = config.python_executable or "python3"
config.substitutions.append(("%python", python))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Integration", "Inputs")))
config.substitutions.append(("%checknpz", python + " " + os.path.join(config.test_source_root, "Integration", "Inputs", "check_npz.py")))

# mithril-opt chooses kernels for a Zen 4 wherever no target-cpu is named
# (AVX-512 with bf16 and VNNI dot products, no AMX, 1 MiB of L2): the IR tests
# check the same output on every machine. mithril-run runs code, so it keeps
# the real host.
from lit.llvm.subst import ToolSubst
llvm_config.add_tool_substitutions(
    [ToolSubst("mithril-opt", extra_args=["--host-cpu=znver4"]), "mithril-run",
     "mithril-lsp-server"], [config.mithril_tools_dir])

config.substitutions.append(("%llvm_lib_dir", os.path.join(os.path.dirname(config.llvm_tools_dir), "lib")))

# Optional features: a CUDA toolkit's ptxas, and a CUDA GPU.
if config.ptxas_executable and os.path.exists(config.ptxas_executable):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", config.ptxas_executable))
if config.cuda_runtime and os.path.exists(config.cuda_runtime):
    config.available_features.add("cuda-runtime")
    config.substitutions.append(("%cuda_runtime", config.cuda_runtime))
if config.cuda_driver_stub and os.path.exists(config.cuda_driver_stub):
    config.available_features.add("cuda-driver-stub")
    config.substitutions.append(("%cuda_driver_stub", config.cuda_driver_stub))
if os.path.exists("/dev/nvidia0"):
    config.available_features.add("cuda-gpu")
# A CPU with AMX tiles (bf16), for tests that run tile code.
try:
    with open("/proc/cpuinfo") as cpuinfo:
        flags = cpuinfo.read().split()
    if "amx_tile" in flags and "amx_bf16" in flags:
        config.available_features.add("amx")
except OSError:
    pass
try:
    import numpy  # noqa: F401
    config.available_features.add("numpy")
except ImportError:
    pass

# The Python package, for tests that write models through Mithril's API. A
# build without bindings, or a run with --param python_bindings=0 (the
# sanitizer build: its extension needs a preloaded runtime), skips them.
python_packages = os.path.join(config.mithril_obj_root, "python_packages")
config.environment["PYTHONPATH"] = python_packages
# Every test compiles: no code from the persistent compile cache.
config.environment["MITHRIL_CACHE"] = "0"
if lit_config.params.get("python_bindings", "1") != "0" and os.path.isdir(
        os.path.join(python_packages, "mithril")):
    config.available_features.add("python-bindings")
