# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""The examples run as documented and reach their numbers."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_example(name, *args):
    env = dict(os.environ)
    return subprocess.run([sys.executable, os.path.join(ROOT, "examples", name), *args],
                          capture_output=True, text=True, env=env, timeout=600)


def test_python_example():
    result = run_example("python_example.py")
    assert result.returncode == 0, result.stderr
    assert "Trainable parameters: 1888" in result.stdout


def test_digits_trains_to_95_percent(tmp_path):
    pytest.importorskip("sklearn")
    result = run_example("train_digits.py", str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    final = [l for l in result.stdout.splitlines() if l.startswith("final test accuracy")][0]
    assert float(final.split()[3].rstrip("%;")) >= 95.0
    assert (tmp_path / "learning_curve.png").read_bytes()[:4] == b"\x89PNG"
