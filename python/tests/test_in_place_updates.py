# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Training steps that overwrite the parameters and optimizer state they
update (mithril-mark-in-place-updates proves where the compiled step may;
the runtime names those outputs `in_place_of`), and the runtime's guard:
an output that shares memory with an input in any other way is written
apart and copied."""

import numpy as np
import pytest

import mithril as ml
from mithril import models


def mlp_train_step(dtype, threads, batch=32):
    net = models.Model()
    net |= models.Linear(48)(input="input", output="h0")
    net += models.Relu()(input="h0", output="a0")
    net += models.Linear(24)(input="a0", output="h1")
    net += models.Relu()(input="h1", output="a1")
    net += models.Linear(10)(input="a1", output=ml.IOKey("logits"))
    train = models.TrainModel(net)
    train.add_loss(models.CrossEntropy(), reduce_steps=[models.Mean()], input="logits",
                   target="target")
    backend = ml.MlirBackend(dtype=dtype, num_threads=threads)
    return ml.compile(train, backend, shapes={"input": [batch, 40], "target": [batch]})


def square_train_step():
    """The training step of two 16 x 16 linear layers: parameters of one shape."""
    net = models.Model()
    net |= models.Linear(16)(input="input", output="h")
    net += models.Relu()(input="h", output="a")
    net += models.Linear(16)(input="a", output=ml.IOKey("logits"))
    train = models.TrainModel(net)
    train.add_loss(models.CrossEntropy(), reduce_steps=[models.Mean()], input="logits",
                   target="target")
    return ml.compile(train, ml.MlirBackend(dtype=ml.float32, num_threads=1),
                      shapes={"input": [8, 16], "target": [8]})


def steps(pm, optimizer, read_only, count=3, batch=32):
    params = pm.randomize_params(seed=3)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, 40)).astype(np.float32)
    y = rng.integers(0, 10, batch)
    first = dict(params)
    for _ in range(count):
        if read_only:
            # Read-only parameters cannot be written over: separate buffers.
            for value in params.values():
                value.flags.writeable = False
        pm.train_step(params, {"input": x, "target": y}, optimizer)
    return first, params


def in_place_outputs(pm):
    return {t["name"]: t["in_place_of"] for _, _, outputs, *_ in pm._gradient_models.values()
            for t in outputs if "in_place_of" in t}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [ml.float32, ml.float64])
@pytest.mark.parametrize("make_optimizer", [lambda: ml.SGD(lr=0.05),
                                            lambda: ml.SGD(lr=0.05, momentum=0.9),
                                            lambda: ml.Adam(lr=0.01)],
                         ids=["sgd", "momentum", "adam"])
def test_updates_in_place_equal_updates_apart(dtype, threads, make_optimizer):
    pm = mlp_train_step(dtype, threads)
    first, updated = steps(pm, make_optimizer(), read_only=False)
    shared = in_place_outputs(pm)
    assert shared, "no parameter or state was proved updatable in place"
    for output, source in shared.items():
        assert output == "new:" + source
    # Every parameter and optimizer state is updated element by element
    # after its last read: each may be written over (on any target CPU).
    updates = [t["name"] for _, _, outputs, *_ in pm._gradient_models.values() for t in outputs
               if t["name"].startswith("new:")]
    assert updates and sorted(shared) == sorted(updates)
    # A parameter updated in place is the caller's own array, overwritten.
    kept = [name for name in updated if updated[name] is first[name]]
    assert sorted(kept) == sorted(updated) and all("new:" + name in shared for name in kept)

    apart_pm = mlp_train_step(dtype, threads)
    _, apart = steps(apart_pm, make_optimizer(), read_only=True)
    assert all(apart[name] is not first[name] for name in apart)
    for name in updated:
        np.testing.assert_array_equal(updated[name], apart[name], err_msg=name)


def test_output_sharing_an_input_is_written_apart():
    # A transpose written over its own input would overwrite elements before
    # reading them; the runtime runs it into a buffer of its own and copies.
    model = models.Model()
    model |= models.Transpose()(input="x", output=ml.IOKey("y"))
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float32), shapes={"x": [64, 64]},
                    inference=True)
    native = pm._forward
    x = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    expected = x.T.copy()
    native.run([x], [x])
    np.testing.assert_array_equal(x, expected)
    # Two outputs on one buffer (each written apart, then copied in order).
    both = models.Model()
    both |= models.Transpose()(input="x", output=ml.IOKey("y"))
    both |= models.Negate()(input="x", output=ml.IOKey("z"))
    pm2 = ml.compile(both, ml.MlirBackend(dtype=ml.float32), shapes={"x": [32, 32]},
                     inference=True)
    x = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    out = np.zeros((32, 32), np.float32)
    names = [t["name"] for t in pm2._forward.outputs]
    pm2._forward.run([x], [out, out])
    last = -x if names[-1] == "z" else x.T
    np.testing.assert_array_equal(out, last)


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_bench_models_update_in_place(kind):
    # The bench's MLP (784 columns: three tiles of 256 and a rest of 16) and
    # CNN, one thread and two: every parameter the compiler proves writable
    # in place is, with the same bits as separate buffers.
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
    import bench
    shape = [16, 784] if kind == "mlp" else [4, 1, 28, 28]
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    y = rng.integers(0, 10, shape[0])
    for threads in (1, 2):
        results = []
        for read_only in (False, True):
            train = models.TrainModel(bench.mlp() if kind == "mlp" else bench.cnn())
            train.add_loss(models.CrossEntropy(), reduce_steps=[models.Mean()], input="logits",
                           target="target")
            pm = ml.compile(train, ml.MlirBackend(num_threads=threads),
                            shapes={"input": shape, "target": [shape[0]]})
            params = pm.randomize_params(seed=1)
            optimizer = ml.SGD(lr=0.05, momentum=0.5)
            for _ in range(3):
                if read_only:
                    for value in params.values():
                        value.flags.writeable = False
                pm.train_step(params, {"input": x, "target": y}, optimizer)
            results.append(params)
            if not read_only:
                assert any(t.startswith("new:") and "weight" in t for t in in_place_outputs(pm))
        for name in results[0]:
            np.testing.assert_array_equal(results[0][name], results[1][name], err_msg=name)


def test_output_overlapping_an_input_in_part_is_written_apart():
    # The output's buffer starts halfway into the input's: neither the same
    # buffer nor apart.
    model = models.Model()
    model |= models.Transpose()(input="x", output=ml.IOKey("y"))
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float32), shapes={"x": [64, 64]},
                    inference=True)
    memory = np.arange(96 * 64, dtype=np.float32)
    x = memory[:64 * 64].reshape(64, 64)
    y = memory[32 * 64:].reshape(64, 64)
    expected = x.T.copy()
    pm._forward.run([x], [y])
    np.testing.assert_array_equal(y, expected)
    # One array passed for two parameters of the same shape: neither update
    # may overwrite it, both read it whole.
    step = square_train_step()
    params = step.randomize_params(seed=3)
    tied = params["linear_0.weight"]
    params["linear_1.weight"] = tied
    separate = {k: v.copy() for k, v in params.items()}
    rng = np.random.default_rng(0)
    data = {"input": rng.standard_normal((8, 16)).astype(np.float32),
            "target": rng.integers(0, 16, 8)}
    step.train_step(separate, data, ml.SGD(lr=0.05))
    step.train_step(params, data, ml.SGD(lr=0.05))
    for name in params:
        np.testing.assert_array_equal(params[name], separate[name], err_msg=name)


@pytest.mark.parametrize("make_optimizer", [lambda: ml.SGD(lr=0.05), lambda: ml.Adam(lr=0.01)],
                         ids=["sgd", "adam"])
@pytest.mark.parametrize("overlap", ["same", "part"])
def test_parameters_sharing_memory_are_updated_apart(make_optimizer, overlap):
    # Two parameters whose updates may each overwrite their input, given one
    # array or views overlapping in part: neither update may write over
    # them (the other reads them), over several steps, whatever the state.
    step = square_train_step()
    params = step.randomize_params(seed=5)
    memory = np.random.default_rng(1).standard_normal(384).astype(np.float32) * 0.2
    params["linear_0.weight"] = memory[:256].reshape(16, 16)
    params["linear_1.weight"] = (memory[:256] if overlap == "same"
                                 else memory[128:]).reshape(16, 16)
    separate = {k: v.copy() for k, v in params.items()}
    rng = np.random.default_rng(0)
    data = {"input": rng.standard_normal((8, 16)).astype(np.float32),
            "target": rng.integers(0, 16, 8)}
    shared_opt, separate_opt = make_optimizer(), make_optimizer()
    for _ in range(3):
        step.train_step(separate, data, separate_opt)
        step.train_step(params, data, shared_opt)
        for name in params:
            np.testing.assert_array_equal(params[name], separate[name], err_msg=name)
    assert in_place_outputs(step)


@pytest.mark.parametrize("overlap", ["same", "part", "one array"])
def test_spare_buffers_never_alias_shared_parameters(overlap):
    # Updates the compiler did not prove in place go to spare buffers: the
    # arrays they replace, written by the next step. Arrays that share memory
    # (one array for two parameters, or views of one) must not become two
    # spares, or the next step's two updates land in one array. (The
    # haswell code of this step once kept no weight in place.) Here no
    # update is taken in place, as where the compiler cannot prove it.
    step = square_train_step()
    memory = np.random.default_rng(1).standard_normal(384).astype(np.float32) * 0.2
    params = step.randomize_params(seed=5)
    if overlap == "one array":
        params["linear_0.weight"] = params["linear_1.weight"] = memory[:256].reshape(16, 16).copy()
    else:
        params["linear_0.weight"] = memory[:256].reshape(16, 16)
        params["linear_1.weight"] = (memory[:256] if overlap == "same"
                                     else memory[128:]).reshape(16, 16)
    user_arrays = {k: v.copy() for k, v in params.items()}
    separate = {k: v.copy() for k, v in params.items()}
    rng = np.random.default_rng(0)
    data = {"input": rng.standard_normal((8, 16)).astype(np.float32),
            "target": rng.integers(0, 16, 8)}
    shared_opt, separate_opt = ml.SGD(lr=0.05), ml.SGD(lr=0.05)
    step.train_step(separate, data, separate_opt)
    for _, _, outputs, _ in step._gradient_models.values():
        for t in outputs:
            t.pop("_in_place_input", None)
    kept = dict(params)
    step.train_step(params, data, shared_opt)
    for _ in range(3):
        step.train_step(separate, data, separate_opt)
        step.train_step(params, data, shared_opt)
        for name in params:
            np.testing.assert_array_equal(params[name], separate[name], err_msg=name)
    # Views of the caller's buffer were never a spare: not written. (One
    # array for both is a spare once, for one of them.)
    if overlap != "one array":
        for name in ("linear_0.weight", "linear_1.weight"):
            np.testing.assert_array_equal(kept[name], user_arrays[name], err_msg=name)
