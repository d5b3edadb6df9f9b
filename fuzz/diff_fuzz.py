#!/usr/bin/env python3
# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Differential fuzzing of the Python package against torch.

Builds random model graphs (chains and DAGs of 1-6 library models, see
diff_fuzz_ops.py) with mithril's Python API, compiles them with
ml.MlirBackend (float32 or float64, static or dynamic batch sizes) and
compares their outputs and their gradients with torch autograd in float64.

    PYTHONPATH=build/python_packages /usr/bin/python3 fuzz/diff_fuzz.py \
        --seed S --count N [--jobs J] [--dtype f32|f64|both] [--out DIR]

Each trial runs in a worker process (respawned after a crash) under a
timeout. Failures are classified:
  wrong-output, wrong-gradient  numbers differ from torch beyond tolerance
  crash, timeout                the worker died on a signal, or hung
  rejected, rejected-grad       a MithrilError on a model torch runs
  internal-error                an exception that is not a MithrilError
  accepted-invalid              a model torch rejects compiled and ran
  bad-message                   the error for an invalid model names none of
                                the terminals or models involved
and each distinct failure is reduced (ops removed, shapes shrunk) to a
standalone reproducer written to --out (default fuzz/findings/).

Tolerances: float64 rel 1e-9 of max|ref| (+1e-10), float32 1e-4 of max|ref|
(+1e-6), both widened by how far torch's own float32 result is from its
float64 one (x1e-6 for float64, x10 for float32: a kink crossed by rounding,
an ill-conditioned sum). Trials whose reference sits on a kink (relu at 0,
tied maxima, ...) skip the comparisons the kink makes ambiguous.
"""

from __future__ import annotations

import argparse
import copy
import inspect
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

CATEGORIES = ["wrong-output", "wrong-gradient", "crash", "timeout", "internal-error", "accepted-invalid",
              "rejected", "rejected-grad", "bad-message", "harness"]

TOL = {"f64": (1e-9, 1e-10, 1e-6), "f32": (1e-4, 1e-6, 10.0)}  # rel, abs, x torch-f32 error


# ==========================================================================
# Source text: the model, its compilation, its data and its torch reference.
# The runner executes exactly the text a reproducer prints.

def _ctor_args(node):
    return {k: v for k, v in node["args"].items() if not k.startswith("_")}


_CANONICAL: dict[str, str | None] = {}


def canonical_input(node):
    """The canonical input terminal of the node's model (for `+=`)."""
    from diff_fuzz_ops import SPECS
    key = node["op"] + repr(sorted(_ctor_args(node).items()))
    if key not in _CANONICAL:
        import mithril.models as M  # noqa: F401
        spec = SPECS[node["op"]]
        model = eval(f"{spec.ctor}(**args)", {"M": M, "args": _ctor_args(node)})
        _CANONICAL[key] = model.canonical_input
    return _CANONICAL[key]


def param_key(k, node, term):
    """The compiled model's name of a node's parameter or constant."""
    info = node["params"][term]
    if node["pmode"] == "path" and info["kind"] == "param":
        return f"n{k}.{term}"
    return f"n{k}_{term}"


def var(name):
    return re.sub(r"\W", "_", name)


def model_source(graph) -> list[str]:
    from diff_fuzz_ops import SPECS
    lines = ["model = Model()"]
    prev_out = None
    for k, node in enumerate(graph["nodes"]):
        spec = SPECS[node["op"]]
        args = ", ".join(f"{a}={v!r}" for a, v in _ctor_args(node).items())
        ctor = f"{spec.ctor}({args}{', ' if args else ''}name='n{k}')"
        conns = dict(node["ins"])
        for term, info in node["params"].items():
            if node["pmode"] == "bind" or info["kind"] != "param":
                conns[term] = param_key(k, node, term)
        op = "|="
        if node.get("style") == "+=" and k and prev_out is not None:
            cin = canonical_input(node)
            if cin is not None and conns.get(cin) == prev_out:
                del conns[cin]
                op = "+="
        parts = [f"{t}={v!r}" for t, v in conns.items()]
        exposed = set(node.get("exposed", ()))
        for term, net in node["outs"].items():
            parts.append(f"{term}=IOKey({net!r}, expose=True)" if net in exposed else
                         f"{term}={net!r}")
        lines.append(f"model {op} {ctor}.connect({', '.join(parts)})")
        prev_out = node["outs"][spec.outs[0]]
    return lines


def top_inputs(graph):
    """(mithril name, record, kind) of every top-level input: data inputs,
    and parameters and constants bound by name."""
    out = [(r["name"], r, "data") for r in graph["inputs"]]
    for k, node in enumerate(graph["nodes"]):
        for term, info in node["params"].items():
            if node["pmode"] == "bind" or info["kind"] != "param":
                out.append((param_key(k, node, term), info, info["kind"]))
    return out


def all_params(graph):
    """(mithril name, var name, info) of every node parameter/constant."""
    out = []
    for k, node in enumerate(graph["nodes"]):
        for term, info in node["params"].items():
            out.append((param_key(k, node, term), var(param_key(k, node, term)), info))
    return out


def compile_source(graph) -> list[str]:
    shapes = {}
    for name, rec, kind in top_inputs(graph):
        s = list(rec["shape"])
        if graph["dynamic"] and rec.get("bdim") is not None:
            s[rec["bdim"]] = None
        shapes[name] = s
    dt = "ml.float32" if graph["dtype"] == "f32" else "ml.float64"
    threads = f", num_threads={graph['threads']}" if graph.get("threads") else ""
    return [f"backend = ml.MlirBackend(dtype={dt}{threads})",
            f"pm = ml.compile(model, backend, shapes={shapes!r},",
            f"                trainable_keys={graph['trainable']!r})"]


def shape_at(rec, B):
    s = list(rec["shape"])
    if B is not None and rec.get("bdim") is not None:
        s[rec["bdim"]] = B
    return s


def data_items(graph, B):
    """(mithril name, var name, gen, shape, seed, is_param) for batch B."""
    items = []
    for r in graph["inputs"]:
        batched = graph["dynamic"] and r.get("bdim") is not None and B is not None
        shape = shape_at(r, B) if batched else list(r["shape"])
        items.append((r["name"], var(r["name"]), r["gen"], shape,
                      r["seed"] + B if batched else r["seed"], False))
    for name, v, info in all_params(graph):
        items.append((name, v, info["gen"], info["shape"], info["seed"], True))
    return items


def reference_lines(graph, dtype="f64") -> list[str]:
    from diff_fuzz_ops import SPECS
    lines = []
    for k, node in enumerate(graph["nodes"]):
        spec = SPECS[node["op"]]
        i = {t: var(n) for t, n in node["ins"].items()}
        p = {t: var(param_key(k, node, t)) for t in node["params"]}
        src = spec.ref(i, p, node["args"], graph["dtype"])
        outs = [var(node["outs"][o]) for o in spec.outs]
        lines.append(f"{', '.join(outs)} = {src}")
    return lines


# ==========================================================================
# Running one graph (in a worker).

class Outcome(Exception):
    def __init__(self, category, detail, **extra):
        super().__init__(detail)
        self.category, self.detail, self.extra = category, detail, extra


def _mithril_error():
    import mithril as ml
    return ml.MithrilError


def classify_exception(e, phase):
    """A mithril exception during `phase` ('compile', 'forward', 'grad')."""
    msg = f"{type(e).__name__}: {e}"
    if isinstance(e, _mithril_error()):
        cat = "rejected-grad" if phase == "grad" else "rejected"
        return Outcome(cat, first_lines(msg), phase=phase, message=msg[:4000])
    tb = traceback.format_exc(limit=-4)
    return Outcome("internal-error", first_lines(msg), phase=phase, message=msg[:4000],
                   traceback=tb[-3000:])


def first_lines(msg, n=2, width=300):
    lines = [l for l in str(msg).splitlines() if l.strip()][:n]
    return " | ".join(lines)[:width]


def make_data(graph, B):
    import numpy as np
    from diff_fuzz_ops import gen_value
    f32 = graph["dtype"] == "f32"
    data = {}
    for name, v, gen, shape, seed, _ in data_items(graph, B):
        a = gen_value(gen, shape, seed)
        if a.dtype.kind == "f" and f32:
            a = a.astype(np.float32)
        data[name] = a
    return data


def leaves(graph):
    """Names (mithril) of the inputs gradients are taken for."""
    names = list(graph["trainable"])
    names += [name for name, _, info in all_params(graph) if info["kind"] == "param"]
    return names


def torch_reference(graph, data, dtype, check_kinks=True):
    """Outputs and gradients of the graph in torch. Returns (outs, grads,
    cotangents, ambiguous) where ambiguous is a set of 'grad'/'out'."""
    import numpy as np
    import torch
    from diff_fuzz_ops import REF_GLOBALS, SPECS
    td = torch.float64 if dtype == "f64" else torch.float32
    names = {name: v for name, v, *_ in data_items(graph, None)}
    want_grad = set(leaves(graph))
    env = {}
    for name, a in data.items():
        t = torch.from_numpy(np.array(a))
        if t.dtype.is_floating_point:
            t = t.to(td)
            if name in want_grad:
                t.requires_grad_(True)
        env[names[name]] = t
    scope = dict(REF_GLOBALS)
    scope["FD"] = td
    thr = 1e-4 if graph["dtype"] == "f32" else 1e-10
    ambiguous = set()
    lines = reference_lines(graph)
    for k, (node, line) in enumerate(zip(graph["nodes"], lines)):
        spec = SPECS[node["op"]]
        scope.update(env)
        exec(line, scope)
        for o in spec.outs:
            env[var(node["outs"][o])] = scope[var(node["outs"][o])]
        if check_kinks and spec.kink is not None:
            with torch.no_grad():
                vals = {t: env[var(n)].detach() for t, n in node["ins"].items()}
                for t in node["params"]:
                    vals[t] = env[var(param_key(k, node, t))].detach()
                outs = {o: env[var(node["outs"][o])].detach() for o in spec.outs}
                if spec.kink(vals, node["args"], outs, thr):
                    ambiguous.add("grad")
                    if spec.name in DISCRETE:
                        ambiguous.add("out")
    outs = {o: env[var(o)] for o in graph["outputs"]}
    rng = np.random.default_rng(graph["seed"] * 7919 + graph["index"])
    cot = {}
    for o in graph["seeded"]:
        cot[o] = rng.standard_normal(tuple(outs[o].shape))
    grads = {}
    leaf_names = [n for n in leaves(graph) if names[n] in env]
    leaf_tensors = [env[names[n]] for n in leaf_names]
    terms = [(outs[o] * torch.from_numpy(cot[o]).to(td)).sum() for o in graph["seeded"]
             if outs[o].requires_grad]
    if leaf_tensors and terms:
        gs = torch.autograd.grad(sum(terms), leaf_tensors, allow_unused=True)
        for n, t, gr in zip(leaf_names, leaf_tensors, gs):
            grads[n] = (torch.zeros_like(t) if gr is None else gr).detach().numpy()
    else:
        for n, t in zip(leaf_names, leaf_tensors):
            grads[n] = torch.zeros_like(t).detach().numpy()
    return ({o: v.detach().numpy() for o, v in outs.items()}, grads, cot, ambiguous)


# Ops whose output is discrete or discontinuous: near a jump, outputs are
# ambiguous too.
DISCRETE = {"Sign", "FloorDivide", "Cast", "ArgMax", "ArgMin", "Equal", "NotEqual", "Less",
            "LessEqual", "Greater", "GreaterEqual", "LinearSVM", "NormModifier"}


def compare(what, got, ref, ref32, dtype):
    """None, or a description of the mismatch with its error and tolerance."""
    import numpy as np
    got = np.asarray(got)
    if got.shape != ref.shape:
        return (f"{what}: shape {list(got.shape)} vs torch {list(ref.shape)}", float("inf"), 0.0)
    if ref.dtype.kind in "biu":
        if ref32 is not None and not np.array_equal(ref32, ref):
            return None
        if not np.array_equal(got.astype(ref.dtype), ref):
            bad = int(np.sum(got.astype(ref.dtype) != ref))
            return (f"{what}: {bad}/{ref.size} elements differ", float(bad), 0.0)
        return None
    rel, ab, cf = TOL[dtype]
    g = got.astype(np.float64)
    if ref.size == 0:
        return None
    scale = float(np.max(np.abs(ref)))
    err32 = 0.0
    if ref32 is not None:
        d = np.abs(ref32.astype(np.float64) - ref)
        err32 = float(np.max(d)) if np.all(np.isfinite(d)) else float("inf")
    tol = rel * scale + ab + cf * err32
    if not np.all(np.isfinite(g)):
        # Non-finite where torch's float64 result is finite is a finding,
        # unless torch's own float32 result overflows there too (a softmax
        # that underflows to 0 under a log, say): the dtype's limit.
        unexplained = np.isfinite(g) != np.isfinite(ref)
        if ref32 is not None:
            unexplained &= np.isfinite(g) | np.isfinite(ref32.astype(np.float64))
        if np.any(unexplained):
            return (f"{what}: non-finite values ({int(np.sum(~np.isfinite(g)))}/{g.size}) "
                    f"where torch is finite", float("inf"), tol)
    err = float(np.max(np.abs(g - ref)))
    if err > tol:
        at = np.unravel_index(int(np.argmax(np.abs(g - ref))), ref.shape)
        return (f"{what}: max error {err:.3g} (tol {tol:.3g}, max|ref| {scale:.3g}) at "
                f"{list(map(int, at))}: got {g[at]:.10g}, torch {ref[at]:.10g}", err, tol)
    return None


def run_graph(graph) -> dict:
    """One trial. Returns {"status": pass|fail|skip, ...}."""
    try:
        return _run_graph(graph)
    except Outcome as o:
        return {"status": "fail", "category": o.category, "detail": o.detail, **o.extra}


def _build(graph):
    import mithril as ml
    from mithril import models as M
    from mithril.models import IOKey, Model
    scope = {"ml": ml, "M": M, "IOKey": IOKey, "Model": Model}
    exec("\n".join(model_source(graph)), scope)
    return scope


def _compile(graph, scope):
    exec("\n".join(compile_source(graph)), scope)
    return scope["pm"]


def _run_graph(graph):
    import numpy as np
    stats = {"batches": 0, "skipped_batches": 0, "ambiguous": 0, "outputs_checked": 0,
             "grads_checked": 0}
    try:
        scope = _build(graph)
    except Exception as e:  # noqa: BLE001
        if graph.get("invalid"):
            return _check_invalid_error(graph, e, "build")
        raise classify_exception(e, "build")
    try:
        pm = _compile(graph, scope)
    except Exception as e:  # noqa: BLE001
        if graph.get("invalid"):
            return _check_invalid_error(graph, e, "compile")
        raise classify_exception(e, "compile")

    if graph.get("invalid"):
        try:
            data = make_data(graph, None)
            out = pm.evaluate({}, data)
        except Exception as e:  # noqa: BLE001
            return _check_invalid_error(graph, e, "forward")
        shapes = {k: list(np.shape(v)) for k, v in out.items()}
        raise Outcome("accepted-invalid",
                      f"{graph['invalid']['input']} reshaped to {graph['invalid']['shape']} "
                      f"(torch rejects it) compiled and ran: outputs {shapes}")

    expected_in = {name for name, _, _ in top_inputs(graph)} | \
        {name for name, _, info in all_params(graph) if info["kind"] == "param"}
    if set(pm.input_keys) != expected_in:
        raise Outcome("harness", f"inputs {sorted(pm.input_keys)} != expected {sorted(expected_in)}")
    if set(pm.output_keys) != set(graph["outputs"]):
        raise Outcome("harness", f"outputs {pm.output_keys} != expected {graph['outputs']}")
    trainable = set(leaves(graph))
    if set(pm.trainable_keys) != trainable:
        raise Outcome("harness", f"trainable {sorted(pm.trainable_keys)} != {sorted(trainable)}")

    batches = graph["batches"] if graph["dynamic"] else [None]
    for B in batches:
        data = make_data(graph, B)
        try:
            ref, rgrads, cot, amb = torch_reference(graph, data, "f64")
            ref32, rgrads32, _, _ = torch_reference(graph, data, "f32", check_kinks=False)
        except Exception as e:  # noqa: BLE001 - torch rejects this batch size
            if B is None or B == batches[0]:
                raise Outcome("harness", f"torch failed at the generated shapes: {e}")
            stats["skipped_batches"] += 1
            continue
        if not all(np.all(np.isfinite(v)) for v in list(ref.values()) + list(rgrads.values())
                   if v.dtype.kind == "f"):
            stats["skipped_batches"] += 1
            continue
        if amb:
            stats["ambiguous"] += 1
        where = f" (batch {B})" if B is not None else ""
        params = {k: v for k, v in data.items() if k in trainable}
        rest = {k: v for k, v in data.items() if k not in trainable}
        try:
            out = pm.evaluate(params, rest)
        except Exception as e:  # noqa: BLE001
            raise classify_exception(e, "forward")
        for o in graph["outputs"]:
            if "out" in amb:
                break
            bad = compare(f"output {o}{where}", out[o], ref[o], ref32[o], graph["dtype"])
            if bad:
                raise Outcome("wrong-output", bad[0], err=bad[1], tol=bad[2])
            stats["outputs_checked"] += 1
        if graph["seeded"] and pm.trainable_keys:
            seeds = {o: cot[o].astype(out[o].dtype) for o in graph["seeded"]}
            try:
                gout, grads = pm.evaluate(params, rest, output_gradients=seeds)
            except Exception as e:  # noqa: BLE001
                raise classify_exception(e, "grad")
            for o in graph["outputs"]:
                if "out" in amb:
                    break
                bad = compare(f"output {o} of the gradient model{where}", gout[o], ref[o],
                              ref32[o], graph["dtype"])
                if bad:
                    raise Outcome("wrong-output", bad[0], err=bad[1], tol=bad[2])
            if "grad" not in amb:
                for k in sorted(trainable):
                    if k not in grads:
                        raise Outcome("wrong-gradient", f"no gradient returned for {k}")
                    bad = compare(f"gradient of {k}{where}", grads[k], rgrads[k], rgrads32[k],
                                  graph["dtype"])
                    if bad:
                        raise Outcome("wrong-gradient", bad[0], err=bad[1], tol=bad[2])
                    stats["grads_checked"] += 1
        stats["batches"] += 1
    if stats["batches"] == 0:
        return {"status": "skip", "detail": "no batch size could be checked", **stats}
    return {"status": "pass", **stats}


def downstream_names(graph, name):
    """Names of the nets and models downstream of input `name`."""
    names, nets = {name}, {name}
    for k, node in enumerate(graph["nodes"]):
        if set(node["ins"].values()) & nets:
            nets.update(node["outs"].values())
            names.update(node["outs"].values())
            names.add(f"n{k}")
    return names


def _check_invalid_error(graph, e, phase):
    msg = str(e)
    if not isinstance(e, _mithril_error()):
        tb = traceback.format_exc(limit=-4)
        raise Outcome("internal-error", first_lines(f"{type(e).__name__}: {msg}"),
                      phase=phase, message=msg[:4000], traceback=tb[-3000:])
    names = downstream_names(graph, graph["invalid"]["input"])
    if not any(re.search(rf"(?<![\w.]){re.escape(n)}(?![\w])", msg) for n in names):
        raise Outcome("bad-message",
                      f"{type(e).__name__} names none of {sorted(names)}: {first_lines(msg, 3)}",
                      phase=phase, message=msg[:4000])
    return {"status": "pass", "invalid": True}


# ==========================================================================
# Generation, invalid models and validation (worker side).

class GenerationFailed(Exception):
    pass


def generate_trial(seed, index, dtype_mode, ops=None, invalid_p=0.05, workarounds=True):
    import random
    from diff_fuzz_ops import generate
    try:
        graph = generate(seed, index, dtype_mode, ops, workarounds)
    except RuntimeError as e:
        raise GenerationFailed(str(e)) from None
    rng = random.Random(f"invalid:{seed}:{index}")
    if not graph["dynamic"] and rng.random() < invalid_p:
        make_invalid(graph, rng)
    return graph


def make_invalid(graph, rng):
    """Changes one size of a data input so that torch rejects the graph."""
    cands = [r for r in graph["inputs"] if r["shape"]]
    for _ in range(6):
        if not cands:
            return
        rec = rng.choice(cands)
        axis = rng.randrange(len(rec["shape"]))
        old = rec["shape"][axis]
        new = rng.choice([s for s in (2, 3, 4, 5, 7) if s != old])
        trial = copy.deepcopy(graph)
        r2 = next(r for r in trial["inputs"] if r["name"] == rec["name"])
        r2["shape"][axis] = new
        try:
            torch_reference(trial, make_data(trial, None), "f64", check_kinks=False)
        except Exception:  # noqa: BLE001 - torch rejects it: an invalid model
            r2_shape = list(r2["shape"])
            graph["inputs"] = trial["inputs"]
            graph["invalid"] = {"input": rec["name"], "axis": axis, "shape": r2_shape}
            return


def validate(graph):
    """Re-derives parameter shapes after a reduction step and checks the
    graph runs in torch with finite, unambiguous values. Returns the graph
    or None."""
    import numpy as np
    from diff_fuzz_ops import SPECS
    g = copy.deepcopy(graph)
    if g.get("invalid"):
        # Still invalid: torch must reject it.
        if not any(r["name"] == g["invalid"]["input"] for r in g["inputs"]) or not g["outputs"]:
            return None
        try:
            torch_reference(g, make_data(g, None), "f64", check_kinks=False)
        except Exception:  # noqa: BLE001
            return g
        return None
    shapes = {r["name"]: list(r["shape"]) for r in g["inputs"]}
    for node in g["nodes"]:
        spec = SPECS[node["op"]]
        in_shapes = {t: tuple(shapes[n]) for t, n in node["ins"].items() if n in shapes}
        if len(in_shapes) != len(node["ins"]):
            return None
        if spec.params:
            try:
                new = spec.params(node["args"], in_shapes)
            except Exception:  # noqa: BLE001
                return None
            for term, (shape, _) in new.items():
                if term in node["params"]:
                    node["params"][term]["shape"] = list(shape)
        # Output shapes come from torch, below, one node at a time.
        try:
            sub = dict(g, nodes=g["nodes"][:g["nodes"].index(node) + 1],
                       outputs=list(node["outs"].values()), seeded=[])
            outs, _, _, amb = torch_reference(sub, make_data(sub, None), "f64")
        except Exception:  # noqa: BLE001
            return None
        if amb:
            return None
        for o, v in outs.items():
            if v.dtype.kind == "f" and (not np.all(np.isfinite(v)) or
                                        (v.size and np.max(np.abs(v)) > 1e6)):
                return None
            shapes[o] = list(v.shape)
    g["seeded"] = [o for o in g["seeded"] if o in g["outputs"]]
    if not g["outputs"]:
        return None
    try:
        _, grads, _, _ = torch_reference(g, make_data(g, None), "f64")
    except Exception:  # noqa: BLE001
        return None
    if not all(np.all(np.isfinite(v)) for v in grads.values()):
        return None
    return g


def worker_main():
    """Reads JSON requests on stdin, answers on the original stdout; C-level
    output of the compiler goes to stderr."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    import torch
    torch.set_num_threads(1)
    import diff_fuzz_ops  # noqa: F401 - imported before the first request
    import mithril  # noqa: F401
    proto.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        req = json.loads(line)
        t0 = time.time()
        graph = None
        try:
            if "graph" in req:
                graph = req["graph"]
                if req.get("validate"):
                    graph = validate(graph)
                    if graph is None:
                        proto.write(json.dumps({"status": "invalid-candidate"}) + "\n")
                        continue
            else:
                try:
                    graph = generate_trial(req["seed"], req["index"], req["dtype"],
                                           req.get("ops"), req.get("invalid_p", 0.05),
                                           req.get("workarounds", True))
                except GenerationFailed as e:
                    proto.write(json.dumps({"status": "skip", "detail": str(e)}) + "\n")
                    continue
                if req.get("generate_only"):
                    proto.write(json.dumps({"status": "generated", "graph": graph},
                                           default=_json_default) + "\n")
                    continue
            print(f"== trial {graph['seed']}:{graph['index']}", file=sys.stderr, flush=True)
            res = run_graph(graph)
        except Exception as e:  # noqa: BLE001 - a fuzzer bug
            res = {"status": "fail", "category": "harness",
                   "detail": first_lines(f"{type(e).__name__}: {e}"),
                   "traceback": traceback.format_exc()[-3000:]}
        res["graph"] = graph
        res["time"] = time.time() - t0
        proto.write(json.dumps(res, default=_json_default) + "\n")


def _json_default(o):
    import numpy as np
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, tuple):
        return list(o)
    raise TypeError(type(o))


# ==========================================================================
# The pool (parent side): workers are fresh processes, respawned after a
# crash or a timeout.

class Worker:
    def __init__(self, env, log_dir):
        self.log = tempfile.NamedTemporaryFile(prefix="diff-fuzz-worker-", suffix=".log",
                                               dir=log_dir, delete=False)
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, env=env, start_new_session=True,
                                     text=True, bufsize=1)
        self.ready = False
        self.count = 0
        self.task = None
        self.deadline = None
        self.log_offset = 0
        self.buf = ""

    def fileno(self):
        return self.proc.stdout.fileno()

    def send(self, task, timeout):
        self.task = task
        self.count += 1
        self.log.flush()
        self.log_offset = os.path.getsize(self.log.name)
        self.deadline = time.time() + timeout
        self.proc.stdin.write(json.dumps(task["req"]) + "\n")
        self.proc.stdin.flush()

    def read_line(self):
        """A complete line, '' at EOF, or None if more is to come."""
        chunk = os.read(self.fileno(), 1 << 20).decode()
        if not chunk:
            return ""
        self.buf += chunk
        if "\n" in self.buf:
            line, self.buf = self.buf.split("\n", 1)
            return line
        return None

    def log_tail(self, n=4000):
        try:
            with open(self.log.name, errors="replace") as f:
                f.seek(self.log_offset)
                return f.read()[-n:]
        except OSError:
            return ""

    def kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
        self.log.close()
        os.unlink(self.log.name)


class Pool:
    def __init__(self, jobs, timeout):
        self.jobs, self.timeout = jobs, timeout
        self.env = dict(os.environ)
        self.env.setdefault("OMP_NUM_THREADS", "1")
        # The IR verified after every compiler pass: a pass that breaks it is
        # named rather than crashing a later one.
        self.env.setdefault("MITHRIL_VERIFY_EACH", "1")
        self.log_dir = tempfile.mkdtemp(prefix="diff-fuzz-")
        self.workers = [Worker(self.env, self.log_dir) for _ in range(jobs)]
        self.spawn_failures = 0

    RECYCLE = 400  # trials per worker process: bounds what compiled models leak

    def run(self, reqs, deadline=None):
        """Runs requests; yields (index, result) as they finish. After
        `deadline` (a time.time()), no new request starts."""
        queue = list(enumerate(reqs))
        queue.reverse()
        pending = len(queue)
        while pending:
            if deadline is not None and time.time() > deadline and queue:
                pending -= len(queue)
                queue = []
                if not pending:
                    break
            for w in list(self.workers):
                if w.ready and w.task is None and w.count >= self.RECYCLE:
                    self._replace(w, graceful=True)
            for w in self.workers:
                if w.ready and w.task is None and queue:
                    i, req = queue.pop()
                    w.send({"i": i, "req": req}, self.timeout)
            fds = [w for w in self.workers if not w.ready or w.task is not None]
            now = time.time()
            deadlines = [w.deadline for w in fds if w.task is not None]
            wait = max(0.0, min(deadlines) - now) if deadlines else 60.0
            readable, _, _ = select.select(fds, [], [], min(wait, 60.0))
            for w in readable:
                line = w.read_line()
                if line is None:
                    continue
                if line == "":
                    result = self._crashed(w)
                    if result is not None:
                        pending -= 1
                        yield result
                    continue
                msg = json.loads(line)
                if msg.get("ready"):
                    w.ready = True
                    self.spawn_failures = 0
                    continue
                i, req = w.task["i"], w.task["req"]
                w.task = None
                pending -= 1
                yield i, msg
            now = time.time()
            for w in list(self.workers):
                if w.task is not None and now > w.deadline:
                    i, req = w.task["i"], w.task["req"]
                    tail = w.log_tail()
                    self._replace(w)
                    pending -= 1
                    yield i, {"status": "fail", "category": "timeout",
                              "detail": f"no answer in {self.timeout:.0f} s", "log": tail,
                              "req": req}

    def _crashed(self, w):
        w.proc.wait()
        rc = w.proc.returncode
        tail = w.log_tail()
        task = w.task
        self._replace(w)
        if task is None:
            # The extension may be being relinked: wait and try again.
            self.spawn_failures += 1
            if self.spawn_failures > 5:
                raise RuntimeError(f"a worker exited (status {rc}) before taking work:\n{tail}")
            time.sleep(10 * self.spawn_failures)
            return None
        sig = -rc if rc is not None and rc < 0 else None
        name = signal.Signals(sig).name if sig else f"exit status {rc}"
        last = [l for l in tail.splitlines() if l.strip() and not l.startswith("== trial")]
        why = f" ({' | '.join(last[:2])[:200]})" if last else ""
        return task["i"], {"status": "fail", "category": "crash",
                           "detail": f"worker died: {name}{why}", "signal": name, "log": tail,
                           "req": task["req"]}

    def _replace(self, w, graceful=False):
        if graceful:
            w.close()
        else:
            w.kill()
            try:
                w.log.close()
                os.unlink(w.log.name)
            except OSError:
                pass
        self.workers[self.workers.index(w)] = Worker(self.env, self.log_dir)

    def close(self):
        for w in self.workers:
            w.close()
        try:
            os.rmdir(self.log_dir)
        except OSError:
            pass



# ==========================================================================
# Reduction.

def ops_of(graph):
    return sorted({n["op"] for n in graph["nodes"]})


def normalize_message(msg):
    msg = re.sub(r"\b[xtn]\d+(_\w+)?\b", "N", msg or "")
    msg = re.sub(r"\d+", "#", msg)
    msg = re.sub(r"\s+", " ", msg)
    return msg[:120]


def symptom(res):
    cat = res["category"]
    if cat in ("crash", "timeout"):
        return normalize_message(res.get("detail", ""))
    if cat in ("rejected", "rejected-grad", "internal-error", "bad-message"):
        return normalize_message(first_lines(res.get("message") or res.get("detail", "")))
    if cat == "harness":
        return normalize_message(res.get("detail", ""))
    return ""


def same_failure(a, b):
    if b.get("status") != "fail" or a["category"] != b["category"]:
        return False
    if a["category"] in ("rejected", "rejected-grad", "internal-error", "bad-message"):
        return symptom(a)[:60] == symptom(b)[:60]
    if a["category"] == "crash":
        return a.get("signal") == b.get("signal")
    return True


def blamed_op(res):
    """The op of the node a message names first (`n3: ...`, `n3.linear_0: ...`)."""
    g = res.get("graph")
    m = re.search(r"(?<![\w.'])n(\d+)[.:_]", res.get("message") or res.get("detail", ""))
    if g and m and int(m.group(1)) < len(g["nodes"]):
        return g["nodes"][int(m.group(1))]["op"]
    return None


def failure_key(res):
    """Failures with the same key are likely one bug: only the first few are
    reduced (the reduced ones that coincide are merged afterwards)."""
    cat = res["category"]
    msg = res.get("message") or res.get("detail", "")
    if cat in ("wrong-output", "wrong-gradient"):
        d = res.get("detail", "")
        kind = ("non-finite" if "non-finite" in d else "shape" if ": shape" in d else
                "elements" if "elements differ" in d else "error")
        return (cat, kind)
    if cat == "bad-message":
        # The op the error is about, and what it says, without names or numbers.
        m = re.search(r"'mithril\.(\w+)'[^:]*?(cannot \w+|\w+ dimensions? \w+|"
                      r"must be|has \d+ \w+|is larger)?", msg)
        return (cat, m.group(0)[:60] if m else normalize_message(msg)[:40])
    op = blamed_op(res)
    if op is not None:
        return (cat, symptom(res)[:60], op)
    return (cat, symptom(res)[:60])


def candidates(graph):
    """Smaller variants of a graph, roughly the most promising first."""
    out = []
    nodes = graph["nodes"]
    consumers = {}
    for k, n in enumerate(nodes):
        for name in n["ins"].values():
            consumers.setdefault(name, []).append(k)

    def gen_for(name):
        dt = graph["dtypes"].get(name, "f")
        if dt == "b":
            return "bool"
        if dt == "i":
            return "int:-3:4"
        dom = set(graph["doms"].get(name, ()))
        return ("prob" if "prob" in dom else "pos" if "pos" in dom else
                "sign" if "sign" in dom else "nonzero" if "nonzero" in dom else "normal")

    def cleanup(g):
        used = set()
        for n in g["nodes"]:
            used.update(n["ins"].values())
        g["inputs"] = [r for r in g["inputs"] if r["name"] in used]
        g["trainable"] = [t for t in g["trainable"] if t in used]
        produced = {o for n in g["nodes"] for o in n["outs"].values()}
        g["outputs"] = [o for o in g["outputs"] if o in produced]
        for n in g["nodes"]:
            for o in n["outs"].values():
                if o not in used and o not in g["outputs"]:
                    g["outputs"].append(o)
                    if g["dtypes"].get(o) == "f":
                        g["seeded"].append(o)
        g["seeded"] = [o for o in g["seeded"] if o in g["outputs"]]
        for k, n in enumerate(g["nodes"]):
            n["exposed"] = [o for o in n.get("exposed", []) if o in g["outputs"]]
        return g

    # Remove a node, feeding its consumers from fresh inputs.
    for k in reversed(range(len(nodes))):
        g = copy.deepcopy(graph)
        node = g["nodes"].pop(k)
        for o in node["outs"].values():
            if o in consumers:
                g["inputs"].append({"name": o, "shape": list(graph["shapes"][o]),
                                    "gen": gen_for(o), "seed": 1000 + k,
                                    "bdim": graph["bdims"].get(o), "dtype": graph["dtypes"][o]})
                if graph["dtypes"][o] == "f":
                    g["trainable"].append(o)
        g["outputs"] = [o for o in g["outputs"] if o not in node["outs"].values()]
        # Later nodes move down one index: their model and parameter names
        # (n{k}) follow, their nets keep their names.
        out.append(cleanup(g))
    # Fewer batch sizes, static shapes.
    if graph["dynamic"]:
        # Static shapes, at each batch size with its data.
        for B in graph["batches"]:
            g = copy.deepcopy(graph)
            g["dynamic"] = False
            g["batches"] = [None]
            for r in g["inputs"]:
                if r.get("bdim") is not None:
                    r["shape"] = shape_at(r, B)
                    r["seed"] += B
                r["bdim"] = None
            out.append(g)
        for B in graph["batches"][1:]:
            g = copy.deepcopy(graph)
            g["batches"] = [b for b in g["batches"] if b != B]
            out.append(g)
    # Fewer outputs seeded, fewer trainable inputs, no exposed intermediates.
    for o in graph["seeded"]:
        if len(graph["seeded"]) > 1:
            g = copy.deepcopy(graph)
            g["seeded"].remove(o)
            out.append(g)
    for t in graph["trainable"]:
        g = copy.deepcopy(graph)
        g["trainable"].remove(t)
        out.append(g)
    for k, n in enumerate(nodes):
        if n.get("exposed"):
            g = copy.deepcopy(graph)
            for o in g["nodes"][k]["exposed"]:
                g["outputs"].remove(o)
                if o in g["seeded"]:
                    g["seeded"].remove(o)
            g["nodes"][k]["exposed"] = []
            out.append(g)
        if n.get("style") == "+=":
            g = copy.deepcopy(graph)
            g["nodes"][k]["style"] = "|="
            out.append(g)
        if n.get("pmode") == "bind" and n["params"]:
            from diff_fuzz_ops import SPECS
            bp = SPECS[n["op"]].bind_params
            if not (bp(n["args"]) if callable(bp) else bp):
                g = copy.deepcopy(graph)
                g["nodes"][k]["pmode"] = "path"
                out.append(g)
    if graph.get("threads") not in (None, 1):
        g = copy.deepcopy(graph)
        g["threads"] = 1
        out.append(g)
    # Smaller sizes: every occurrence of a size in the inputs at once.
    if graph.get("invalid"):
        return out
    sizes = sorted({s for r in graph["inputs"] for i, s in enumerate(r["shape"])
                    if s > 1 and not (graph["dynamic"] and r.get("bdim") == i)}, reverse=True)
    for s in sizes:
        for new in sorted({1, 2, s // 2, s - 1}):
            if new >= s or new < 1:
                continue
            g = copy.deepcopy(graph)
            for r in g["inputs"]:
                r["shape"] = [new if (d == s and not (g["dynamic"] and r.get("bdim") == i))
                              else d for i, d in enumerate(r["shape"])]
            out.append(g)
    return out


def reduce_failure(pool, graph, res, budget_s=120.0, max_runs=150):
    """Greedy reduction: take the first smaller variant that fails the same
    way, until none does."""
    start = time.time()
    best, best_res = graph, res
    runs = 0
    improved = True
    while improved and time.time() - start < budget_s and runs < max_runs:
        improved = False
        cands = candidates(best)
        # Run candidates in batches of the pool size; take the first hit.
        step = max(1, pool.jobs)
        for i in range(0, len(cands), step):
            batch = cands[i:i + step]
            results = dict(pool.run([{"graph": c, "validate": True} for c in batch]))
            runs += len(batch)
            for j in range(len(batch)):
                r = results[j]
                if r.get("status") == "invalid-candidate":
                    continue
                if same_failure(best_res, r):
                    best, best_res = r.get("graph") or r.get("req", {}).get("graph"), r
                    improved = True
                    break
            if improved or time.time() - start > budget_s or runs >= max_runs:
                break
    if best is not graph and best_res.get("category") in ("crash", "timeout"):
        # The crashing candidate came back as sent: settle its parameter shapes.
        best = validate(best) or best
    return best, best_res, runs


# ==========================================================================
# Reproducers.

def helpers_for(source):
    import diff_fuzz_ref as R
    names = set()
    todo = set(re.findall(r"\b(ref_\w+)\(", source))
    while todo:
        n = todo.pop()
        if n in names or not hasattr(R, n):
            continue
        names.add(n)
        todo |= set(re.findall(r"\b(ref_\w+)\(", inspect.getsource(getattr(R, n))))
    return [inspect.getsource(getattr(R, n)) for n in sorted(names)]


def repro_source(graph, res) -> str:
    batches = graph["batches"] if graph["dynamic"] else [None]
    ref = reference_lines(graph)
    L = [f"# diff-fuzz reproducer: seed {graph['seed']}, trial {graph['index']}",
         f"# {res['category']}: {res.get('detail', '')}"[:400],
         "# PYTHONPATH=build/python_packages /usr/bin/python3 THIS_FILE",
         "import math", "", "import numpy as np", "import torch", "", "import mithril as ml",
         "from mithril import models as M", "from mithril.models import IOKey, Model", "",
         "F = torch.nn.functional", ""]
    for h in helpers_for("\n".join(ref)):
        L += h.rstrip().splitlines() + [""]
    L += model_source(graph)
    L += compile_source(graph)
    L.append("")
    dt = "np.float32" if graph["dtype"] == "f32" else "np.float64"
    L.append("def data(B):")
    L.append("    d = {}")
    from diff_fuzz_ops import gen_expr
    for name, v, gen, shape, seed, _ in data_items(graph, 0):
        rec = next((r for r in graph["inputs"] if r["name"] == name), None)
        bdim = rec.get("bdim") if (rec and graph["dynamic"]) else None
        shp = list(shape)
        expr = gen_expr(gen, [0 if i == bdim else s for i, s in enumerate(shp)])
        seed_expr = f"{seed} + B" if bdim is not None else f"{seed}"
        if bdim is not None:
            shape_txt = "(" + ", ".join("B" if i == bdim else str(s) for i, s in enumerate(shp)) \
                + ("," if len(shp) == 1 else "") + ")"
            expr = re.sub(r"\(\d+(, \d+)*,?\)", shape_txt, expr)
        L.append(f"    rng = np.random.default_rng({seed_expr})")
        L.append(f"    d[{name!r}] = np.asarray({expr})")
    L.append(f"    return {{k: v.astype({dt}) if v.dtype.kind == 'f' else v "
             f"for k, v in d.items()}}")
    L.append("")
    L.append("def reference(d):")
    L.append("    FD = torch.float64")
    L.append(f"    LEAVES = {leaves(graph)!r}")
    L.append("    env = {k: torch.tensor(np.asarray(v, dtype=np.float64) if v.dtype.kind == 'f' "
             "else v, requires_grad=k in LEAVES and v.dtype.kind == 'f') for k, v in d.items()}")
    for name, v, *_ in data_items(graph, None):
        L.append(f"    {v} = env[{name!r}]")
    for line in ref:
        L.append(f"    {line}")
    L.append(f"    return env, {{{', '.join(f'{o!r}: {var(o)}' for o in graph['outputs'])}}}")
    L.append("")
    seeded = graph["seeded"]
    rel, ab, _ = TOL[graph["dtype"]]
    if graph.get("invalid"):
        inv = graph["invalid"]
        L += [f"# {inv['input']} has shape {inv['shape']}: torch rejects the model "
              "(reference() raises), mithril should too, naming what is wrong.",
              "d = data(0)",
              "out = pm.evaluate({}, d)",
              "print('mithril accepted it:', {k: v.shape for k, v in out.items()})",
              "reference(d)"]
        return "\n".join(L) + "\n"
    L += [
        "bad = []",
        "",
        "def check(what, got, ref):",
        "    got, ref = np.asarray(got, dtype=np.float64), np.asarray(ref, dtype=np.float64)",
        "    if got.shape != ref.shape:",
        "        bad.append(f'{what}: shape {got.shape} vs torch {ref.shape}')",
        "        return",
        "    err = float(np.max(np.abs(got - ref))) if ref.size else 0.0",
        "    scale = float(np.max(np.abs(ref))) if ref.size else 0.0",
        "    print(f'{what}: max|torch| {scale:.3g}, max error {err:.3g}')",
        f"    if not err <= {rel!r} * scale + {ab!r}:",
        "        bad.append(f'{what}: max error {err:.3g}, max|torch| {scale:.3g}')",
        "",
        f"for B in {[b if b is not None else 0 for b in batches]!r}:",
        "    d = data(B)",
        "    params = {k: v for k, v in d.items() if k in pm.trainable_keys}",
        "    rest = {k: v for k, v in d.items() if k not in params}",
        "    out = pm.evaluate(params, rest)",
        "    env, ref = reference(d)",
        "    for k in ref:",
        "        check(f'B={B} output {k}', out[k], ref[k].detach().numpy())",
    ]
    if seeded:
        L += [
            "    if not pm.trainable_keys:",
            "        continue",
            "    rng = np.random.default_rng(0)",
            f"    cot = {{k: rng.standard_normal(out[k].shape) for k in {seeded!r}}}",
            "    outs, grads = pm.evaluate(params, rest, output_gradients="
            "{k: v.astype(out[k].dtype) for k, v in cot.items()})",
            "    terms = [(ref[k] * torch.tensor(cot[k])).sum() for k in cot if ref[k].requires_grad]",
            "    leaves = [k for k in pm.trainable_keys]",
            "    tg = torch.autograd.grad(sum(terms), [env[k] for k in leaves], allow_unused=True) "
            "if terms else [None] * len(leaves)",
            "    for k, g in zip(leaves, tg):",
            "        check(f'B={B} gradient of {k}', grads[k],",
            "              np.zeros(env[k].shape) if g is None else g.numpy())",
        ]
    L += ["", "if bad:", "    raise SystemExit('MISMATCH: ' + '; '.join(bad))",
          "print('no mismatch')"]
    return "\n".join(L) + "\n"


# ==========================================================================
# CLI.

def describe(res):
    g = res.get("graph") or {}
    key = f"{g.get('seed', '?')}:{g.get('index', '?')}"
    mode = (f"{g.get('dtype', '?')}{' dynamic' if g.get('dynamic') else ''}"
            f"{' invalid' if g.get('invalid') else ''}")
    return (f"FAIL {key} [{res['category']}] {'+'.join(ops_of(g)) if g else '?'} ({mode}): "
            f"{res.get('detail', '')}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--start", type=int, default=0, help="first trial index")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--dtype", choices=["f32", "f64", "both"], default="both")
    ap.add_argument("--out", default=os.path.join(HERE, "findings"))
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per trial")
    ap.add_argument("--ops", help="comma-separated op names to draw from (default: all)")
    ap.add_argument("--reduce", type=int, default=10,
                    help="how many distinct failures to reduce (0: none)")
    ap.add_argument("--reduce-budget", type=float, default=60.0, help="seconds per reduction")
    ap.add_argument("--per-key", type=int, default=3,
                    help="failures reduced per group of likely-equal failures")
    ap.add_argument("--reduce-from", metavar="JSONL",
                    help="run no trials: reduce the failures of an earlier --json file")
    ap.add_argument("--invalid-p", type=float, default=0.05,
                    help="share of trials with a deliberately invalid model")
    ap.add_argument("--no-workarounds", action="store_true",
                    help="also feed boolean graph inputs to the logical primitives (which "
                         "declare float terminals: every such model is rejected)")
    ap.add_argument("--max-time", type=float, default=0,
                    help="stop starting trials after this many seconds (0: no limit)")
    ap.add_argument("--json", help="write every result to this JSON-lines file")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker_main()
        return 0
    if args.reduce_from:
        return reduce_from(args)
    ops = args.ops.split(",") if args.ops else None
    t0 = time.time()
    pool = Pool(args.jobs, args.timeout)
    reqs = [{"seed": args.seed, "index": i, "dtype": args.dtype, "ops": ops,
             "invalid_p": args.invalid_p, "workarounds": not args.no_workarounds}
            for i in range(args.start, args.start + args.count)]
    results = {}
    counts = {"pass": 0, "fail": 0, "skip": 0}
    jsonf = open(args.json, "w") if args.json else None
    try:
        deadline = t0 + args.max_time if args.max_time else None
        for i, res in pool.run(reqs, deadline):
            if res.get("graph") is None and res["status"] == "fail":
                res["graph"] = None
                res["req"] = reqs[i]
            counts[res["status"]] = counts.get(res["status"], 0) + 1
            if jsonf:
                jsonf.write(json.dumps(res, default=_json_default) + "\n")
            if res["status"] != "fail":
                res = {"status": res["status"]}  # keep memory flat over long runs
            results[i] = res
            if res["status"] == "fail" and not args.quiet:
                print(describe_with_req(res, reqs[i]), flush=True)
        failures = [(i, r) for i, r in sorted(results.items()) if r["status"] == "fail"]
        # Crashed and hung trials: regenerate their graphs to reduce them.
        need = [i for i, r in failures if r.get("graph") is None]
        if need:
            for i in need:
                results[i]["graph"] = regenerate(pool, reqs[i])
        elapsed = time.time() - t0
        by_cat = {}
        for _, r in failures:
            by_cat[r["category"]] = by_cat.get(r["category"], 0) + 1
        findings = reduce_and_write(pool, failures, args)
    finally:
        pool.close()
        if jsonf:
            jsonf.close()
    n = len(results)
    print(f"diff-fuzz: {counts['pass']} passed, {counts['fail']} failed"
          f"{', %d skipped' % counts['skip'] if counts.get('skip') else ''}"
          f" ({n} trials, seed {args.seed}, {elapsed:.0f} s, {elapsed / max(n, 1):.2f} s/trial"
          f" with {args.jobs} job{'s' if args.jobs > 1 else ''})")
    if by_cat:
        print("  by category: " + ", ".join(f"{k} {v}" for k, v in sorted(by_cat.items())))
    for f in findings:
        print(f"  finding: {f}")
    return 1 if counts["fail"] else 0


def reduce_from(args):
    """Reduces the failures recorded in an earlier --json file."""
    failures = []
    with open(args.reduce_from) as f:
        for n, line in enumerate(f):
            r = json.loads(line)
            if r.get("status") == "fail":
                failures.append((n, r))
    pool = Pool(args.jobs, args.timeout)
    try:
        for _, r in failures:
            if r.get("graph") is None and r.get("req") and "graph" not in r["req"]:
                r["graph"] = regenerate(pool, r["req"])
        findings = reduce_and_write(pool, failures, args)
    finally:
        pool.close()
    print(f"diff-fuzz: {len(failures)} failures of {args.reduce_from} reduced")
    for f in findings:
        print(f"  finding: {f}")
    return 1 if failures else 0


def describe_with_req(res, req):
    if res.get("graph") is None:
        return (f"FAIL {req['seed']}:{req['index']} [{res['category']}] "
                f"{res.get('detail', '')}")
    return describe(res)


def regenerate(pool, req):
    """The graph of a trial, from a worker that generates without running."""
    # A worker answers a request with its graph; a crash during the run is
    # reproduced by running it again, so ask for generation only.
    r = dict(req, generate_only=True)
    for _, res in pool.run([r]):
        return res.get("graph")
    return None


def reduce_and_write(pool, failures, args):
    """Reduces the first failure of each kind and writes its reproducer;
    returns one line per distinct finding."""
    os.makedirs(args.out, exist_ok=True)
    groups, order = {}, []
    for i, res in failures:
        key = failure_key(res)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(res)
    # The budget goes to wrong answers and crashes first.
    order.sort(key=lambda k: CATEGORIES.index(k[0]) if k[0] in CATEGORIES else 99)
    findings, reduced, merged = [], 0, {}
    for key in order:
        members = groups[key]
        # The smallest graphs reduce fastest; reduce a few members of a group
        # (one key may hide several bugs), list the rest with the first.
        members.sort(key=lambda r: len(r["graph"]["nodes"]) if r.get("graph") else 99)
        trials = [f"{r['graph']['seed']}:{r['graph']['index']}" if r.get("graph") else "?"
                  for r in members]
        firsts = members[:args.per_key]
        for n_member, res in enumerate(firsts):
            g = res.get("graph")
            mine = trials if n_member == 0 else [trials[n_member]]
            if n_member == 0 and len(firsts) > 1:
                mine = [trials[0]] + trials[len(firsts):]
            if g is None:
                findings.append({"line": f"{res['category']} (no graph): "
                                         f"{res.get('detail', '')}", "trials": mine})
                continue
            red_g, red_res, runs = g, res, 0
            if reduced < args.reduce and res["category"] != "harness":
                red_g, red_res, runs = reduce_failure(pool, g, res, args.reduce_budget)
                reduced += 1
            _write_finding(args, res, red_g, red_res, runs, mine, findings, merged)
    lines = [f"{f['line']} [{len(f['trials'])} trial{'s' if len(f['trials']) > 1 else ''}: "
             f"{' '.join(f['trials'][:6])}{' ...' if len(f['trials']) > 6 else ''}]"
             for f in findings]
    with open(os.path.join(args.out, "findings.txt"), "w") as f:
        f.write("\n".join(lines) + ("\n" if lines else ""))
    return lines


def _write_finding(args, res, red_g, red_res, runs, trials, findings, merged):
    g = res["graph"]
    if True:
        # Reduced failures that coincide are one finding.
        after = (res["category"], tuple(ops_of(red_g)), symptom(red_res)[:60])
        if after in merged:
            merged[after]["trials"] += trials
            return
        name = f"{res['category']}-{g['seed']}-{g['index']}"
        path = os.path.join(args.out, name + ".py")
        with open(path, "w") as f:
            f.write(repro_source(red_g, red_res))
        with open(os.path.join(args.out, name + ".json"), "w") as f:
            json.dump({"original": res, "reduced": red_res, "trials": trials}, f, indent=1,
                      default=_json_default)
        item = {"line": f"{res['category']} {'+'.join(ops_of(red_g))} "
                        f"({len(red_g['nodes'])} node{'s' if len(red_g['nodes']) > 1 else ''}"
                        f"{', reduced in %d runs' % runs if runs else ''}): "
                        f"{red_res.get('detail', '')[:240]} -> {os.path.relpath(path)}",
                "trials": trials}
        merged[after] = item
        findings.append(item)


if __name__ == "__main__":
    sys.exit(main())
