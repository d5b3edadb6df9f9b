# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""`pip install .`: builds the project with CMake and Ninja (as `make build`
does, in ./build unless MITHRIL_BUILD_DIR names another directory; an
existing build is reused) and packages build/python_packages/mithril, the
_mithril extension and the optional CUDA and MPI runtime libraries beside
it. Needs what `make build` needs: LLVM/MLIR 22 and the tools from Debian
(scripts/install-deps.sh)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.dist import Distribution

ROOT = Path(__file__).resolve().parent


class BuildWithCMake(build_ext):
    """The native build: setuptools runs it as the extension build."""

    def run(self):
        build = Path(os.environ.get("MITHRIL_BUILD_DIR", ROOT / "build")).resolve()
        if not (build / "build.ninja").exists():
            for tool in ("cmake", "ninja"):
                if shutil.which(tool) is None:
                    sys.exit(f"pip install mithril-mlir: {tool} is missing; run "
                             "scripts/install-deps.sh (Debian 12) first")
            subprocess.check_call([
                "cmake", "-G", "Ninja", "-S", str(ROOT), "-B", str(build),
                "-DCMAKE_BUILD_TYPE=Release", f"-DPython3_EXECUTABLE={sys.executable}",
                "-DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit"])
        targets = ["_mithril", "mithril-python-sources"]
        listed = subprocess.run(["ninja", "-C", str(build), "-t", "targets", "all"],
                                capture_output=True, text=True, check=True).stdout
        runtimes = [t for t in ("mithril_cuda_runtime", "mithril_mpi_runtime")
                    if f"\n{t}:" in "\n" + listed]
        subprocess.check_call(["ninja", "-C", str(build)] + targets + runtimes)
        package = Path(self.build_lib) / "mithril"
        if package.exists():
            shutil.rmtree(package)
        shutil.copytree(build / "python_packages" / "mithril", package,
                        ignore=shutil.ignore_patterns("__pycache__"))
        for runtime in runtimes:
            shutil.copy2(build / "lib" / f"lib{runtime}.so", package)
        # The header of custom primitives' C functions (mithril.get_include()).
        headers = package / "include" / "mithril" / "Runtime"
        headers.mkdir(parents=True)
        shutil.copy2(ROOT / "include" / "mithril" / "Runtime" / "CustomCall.h", headers)


def _egg_base() -> str:
    base = ROOT / "build" / "setuptools"
    base.mkdir(parents=True, exist_ok=True)
    return str(base)


class BinaryDistribution(Distribution):
    """The wheel holds native code: it is for this platform and Python."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_ext": BuildWithCMake}, distclass=BinaryDistribution, packages=[],
      zip_safe=False,
      # setuptools' own staging and metadata, apart from the sources and the
      # CMake build's files.
      options={"build": {"build_base": "build/setuptools"},
               "egg_info": {"egg_base": _egg_base()}})
