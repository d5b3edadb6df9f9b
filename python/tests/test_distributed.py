# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Data parallelism (device_mesh): the same model in several MPI ranks equals
one process. The multi-rank runs go through mpirun (Open MPI or MPICH) and are
skipped, saying why, where MPI or the runtime's MPI library is missing."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mithril as ml
from mithril import _mithril
from mithril.errors import MithrilError
from mithril.models import Linear, Model, Relu, Softmax

HERE = Path(__file__).parent
CHECK = HERE / "distributed" / "dp_check.py"


def _mpi_runtime() -> Path | None:
    build = Path(_mithril.__file__).resolve().parents[2] / "lib" / "libmithril_mpi_runtime.so"
    env = os.environ.get("MITHRIL_MPI_RUNTIME")
    return Path(env) if env else (build if build.exists() else None)


needs_mpi = pytest.mark.skipif(
    shutil.which("mpirun") is None or _mpi_runtime() is None,
    reason="needs mpirun and libmithril_mpi_runtime (apt-get install openmpi-bin "
           "libopenmpi-dev, then rebuild)")


def _mpirun(ranks: int, *args: str, **extra_env: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, **extra_env)
    # Open MPI refuses root without these; CI runs as root.
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    command = ["mpirun", "-n", str(ranks), sys.executable, *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)


@needs_mpi
@pytest.mark.parametrize("mesh,dtype,batch", [((2,), "float64", 12), ((2,), "float32", 13),
                                              ((4,), "float64", 13), ((1, 2), "float64", 12),
                                              ((2, 2), "float64", 13), ((2, 2), "float32", 12)])
def test_parallel_equals_one_process(mesh, dtype, batch):
    ranks = int(np.prod(mesh))
    result = _mpirun(ranks, str(CHECK), dtype, str(batch), "x".join(map(str, mesh)))
    assert result.returncode == 0, result.stdout + result.stderr
    for rank in range(ranks):
        assert f"rank {rank}/{ranks}: mesh {mesh} {dtype} batch {batch} equals one " \
               "process" in result.stdout


@needs_mpi
@pytest.mark.parametrize("options", [{"optimizations": {"fusion": False}},
                                     {"cpu_options": {"target_cpu": "x86-64"}}],
                         ids=["no-fusion", "x86-64"])
def test_tensor_parallel_without_the_schedule(options):
    # The all-reduce windows' operands computed in place without the
    # schedule's tiles (fusion off), and with SSE2's (the x86-64 baseline),
    # both in the parallel run and in the one-process reference.
    result = _mpirun(2, str(CHECK), "float64", "12", "1x2",
                     DP_CHECK_COMPILE=json.dumps(options))
    assert result.returncode == 0, result.stdout + result.stderr
    for rank in range(2):
        assert f"rank {rank}/2: mesh (1, 2) float64 batch 12 equals one process" in result.stdout


@needs_mpi
@pytest.mark.parametrize("mesh,dtype,batch", [((2,), "float32", 13), ((2, 2), "float64", 12)])
def test_parallel_without_shared_memory(mesh, dtype, batch):
    # The windows of the compiled sums are private memory, summed by
    # MPI_Allreduce, as on ranks of several machines.
    ranks = int(np.prod(mesh))
    result = _mpirun(ranks, str(CHECK), dtype, str(batch), "x".join(map(str, mesh)),
                     MITHRIL_MPI_SHARED_SUM="0")
    assert result.returncode == 0, result.stdout + result.stderr
    for rank in range(ranks):
        assert f"rank {rank}/{ranks}: mesh {mesh} {dtype} batch {batch} equals one " \
               "process" in result.stdout


@needs_mpi
@pytest.mark.parametrize("bucket_bytes,sums", [("0", 6), (None, 1), ("100000", None)])
def test_gradient_sums_started_in_buckets(bucket_bytes, sums):
    # Ranks of several machines (no shared memory): each gradient's sum is
    # started as the backward pass computes it and waited for by the update;
    # gradients side by side go to MPI together up to MITHRIL_MPI_BUCKET_BYTES
    # (default 1 MiB: the six gradients here, 330 KB, in one sum; 0: one
    # sum each).
    env = {"MITHRIL_MPI_SHARED_SUM": "0"}
    if bucket_bytes is not None:
        env["MITHRIL_MPI_BUCKET_BYTES"] = bucket_bytes
    result = _mpirun(2, str(HERE / "distributed" / "bucket_check.py"), **env)
    assert result.returncode == 0, result.stdout + result.stderr
    for rank in range(2):
        found = re.search(rf"rank {rank}/2: 6 parameters, sums per step \[([0-9, ]+)\], "
                          "equals one process", result.stdout)
        assert found, result.stdout
        per_step = {int(n) for n in found.group(1).split(",")}
        assert len(per_step) == 1, found.group(0)
        if sums is not None:
            assert per_step == {sums}, found.group(0)
        else:
            assert 1 < per_step.pop() < 6, found.group(0)


@needs_mpi
@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("shared", ["1", "0"])
def test_all_reduce_sums_in_rank_order(ranks, shared):
    # Ranks of one machine sum through shared memory, in rank order; with it
    # turned off, MPI_Allreduce. Every rank gets the same bits either way.
    result = _mpirun(ranks, str(HERE / "distributed" / "allreduce_check.py"), str(ranks),
                     MITHRIL_MPI_SHARED_SUM=shared)
    assert result.returncode == 0, result.stdout + result.stderr
    for rank in range(ranks):
        assert f"rank {rank}/{ranks}: all-reduce sums agree" in result.stdout, result.stdout


@needs_mpi
@pytest.mark.parametrize("ranks", [2, 3])
def test_outputs_combined_natively_as_numpy_does(ranks):
    # gather_outputs (split rows concatenated, partial values added up in
    # rank order) gives the numpy combine's bits on every rank.
    result = _mpirun(ranks, str(HERE / "distributed" / "combine_check.py"), str(ranks))
    assert result.returncode == 0, result.stdout + result.stderr
    for rank in range(ranks):
        assert f"rank {rank}/{ranks}: combined outputs agree" in result.stdout, result.stdout


@needs_mpi
@pytest.mark.parametrize("mesh", [(2,), (1, 2)])
def test_gpt_parallel_equals_one_process(mesh):
    # The GPT example reads the batch size from its input's shape: each rank
    # compiles its share statically, and the batch is traced at twice it.
    # On a tensor axis its attention heads and MLP are split.
    ranks = int(np.prod(mesh))
    result = _mpirun(ranks, str(HERE / "distributed" / "gpt_check.py"), "x".join(map(str, mesh)))
    assert result.returncode == 0, result.stdout + result.stderr
    for rank in range(ranks):
        assert f"rank {rank}/{ranks}: GPT on mesh {mesh} equals one process" in result.stdout


@needs_mpi
def test_example_prints_the_one_process_losses():
    # examples/data_parallel.py: the same script, one process or two ranks.
    example = HERE.parents[1] / "examples" / "data_parallel.py"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    single = subprocess.run([sys.executable, str(example)], env=env, capture_output=True,
                            text=True, timeout=600)
    assert single.returncode == 0, single.stderr
    ranks = _mpirun(2, str(example))
    assert ranks.returncode == 0, ranks.stdout + ranks.stderr

    def losses(text, mesh):
        return [line.split(": ", 1)[1] for line in text.splitlines()
                if line.startswith(f"mesh {mesh}: epoch")]
    assert len(losses(single.stdout, "(1,)")) == 5
    assert losses(ranks.stdout, "(2,)") == losses(single.stdout, "(1,)")


@needs_mpi
def test_mesh_must_match_the_ranks(tmp_path):
    script = tmp_path / "mismatch.py"
    script.write_text("import mithril as ml\n"
                      "try:\n    ml.MlirBackend(device_mesh=(3,))\n"
                      "except ml.MithrilError as e:\n    print('ERROR', e)\n")
    result = _mpirun(2, str(script))
    assert result.returncode == 0, result.stderr
    assert "device_mesh=(3,) asks for 3 ranks, but this run has 2" in result.stdout
    assert "mpirun -n 3" in result.stdout


def test_all_reduce_seconds_before_mpi():
    # Nothing summed (and MPI not started) in a fresh process: no time.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    result = subprocess.run([sys.executable, "-c", "from mithril import _mithril; "
                             "print(_mithril.all_reduce_seconds())"],
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "0.0"


def test_mesh_of_one_needs_no_mpi():
    backend = ml.MlirBackend(device_mesh=(1,))
    assert backend.rank == 0 and backend.world_size == 1
    model = Model()
    model |= Linear(3).connect(input="input", output="output")
    pm = ml.compile(model, backend, shapes={"input": [4, 2]})
    one = ml.compile(model, ml.MlirBackend(), shapes={"input": [4, 2]})
    params = pm.randomize_params(seed=0)
    x = np.random.default_rng(0).standard_normal((4, 2)).astype(np.float32)
    np.testing.assert_array_equal(pm.evaluate(params, {"input": x})["output"],
                                  one.evaluate(params, {"input": x})["output"])


def test_mesh_errors():
    with pytest.raises(ValueError, match="device_mesh must be"):
        ml.MlirBackend(device_mesh=(0,))
    with pytest.raises(ValueError, match="device_mesh must be"):
        ml.MlirBackend(device_mesh="2")
    with pytest.raises(ValueError, match="device_mesh must be"):
        ml.MlirBackend(device_mesh=(2, 2, 2))


def test_all_gather_into_checks_its_buffers():
    from mithril import _mithril
    local = np.ones(3, np.float32)
    with pytest.raises(ValueError, match="not a whole number"):
        _mithril.all_gather_into(local, np.empty(5, np.float32), "tensor")
    with pytest.raises(TypeError, match="writable"):
        _mithril.all_gather_into(local, np.empty(6, np.float32)[::2], "tensor")
    # Sizes that fit, in a process that never started MPI: an error, no crash.
    with pytest.raises(ml.MithrilError, match="MPI has not been started"):
        _mithril.all_gather_into(local, np.empty(6, np.float32), "tensor")


def _source(model, shapes):
    from mithril.emit import Emitter
    emitter = Emitter("float32")
    entry, _ = emitter.emit_top(model, shapes, {"input": "data"}, {}, {})
    return emitter.module.text(), entry


def test_analysis_names_the_op_that_mixes_the_batch():
    # A softmax along the batch axis needs every rank's rows: refused at
    # compile time, naming the op (no MPI needed to analyse).
    model = Model()
    model |= Linear(4).connect(input="input")
    model += Softmax(axis=0).connect(output="output")
    source, entry = _source(model, {"input": [None, 3]})
    with pytest.raises(MithrilError, match=r"(?s)'mithril.softmax' cannot run on batch shards: it "
                                           r"works across axis 0.*mithril-batch-sharding"):
        _mithril.batch_sharding(source, entry, ["input:?x3"], [], [])


def test_analysis_of_a_classifier():
    model = Model()
    model |= Linear(4).connect(input="input")
    model += Relu().connect(output="output")
    source, entry = _source(model, {"input": [None, 3]})
    batched, outputs = _mithril.batch_sharding(source, entry, ["input:?x3"], [], [])
    assert batched == ["input"]
    assert outputs == [("output", "sharded", 0)]
