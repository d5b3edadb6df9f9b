# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Runs Mithril's directed test cases against this compiler.

    python3 -m mithril.conformance FILE.json... [--rtol 1e-10] [--min-pass-rate 0.9]

Each case names a model (or a composite of models), its inputs, the seed
gradients of its outputs, and the outputs and gradients Mithril's own
backends compute in float64. A case passes when the compiled model
reproduces them; a failure prints its reason. The last line is
`N passed, M failed`.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import traceback

import numpy as np

from . import MlirBackend, compile as ml_compile, float64
from .errors import MithrilError
from .utils import dict_to_model


class CaseFailure(Exception):
    pass


def _close(got, want, rtol: float, what: str) -> None:
    if isinstance(want, dict):
        # Backends that disagree (at a kink, say) each record their value;
        # matching any of them is conforming.
        errors = []
        for backend in ("numpy", "torch", "jax"):
            if backend in want:
                try:
                    return _close(got, want[backend], rtol, what)
                except CaseFailure as e:
                    errors.append(f"{backend}: {e}")
        raise CaseFailure("; ".join(errors) or f"{what}: no reference values")
    if isinstance(got, list):
        # A list terminal's gradient: one array per element.
        if not isinstance(want, list) or len(want) != len(got):
            raise CaseFailure(f"{what}: a list of {len(got)} arrays, expected {want!r:.80}")
        for i, (g, w) in enumerate(zip(got, want)):
            _close(g, w, rtol, f"{what}[{i}]")
        return
    want = np.asarray(want, dtype=np.float64)
    got = np.asarray(got, dtype=np.float64)
    if got.shape != want.shape:
        if got.size == want.size:
            got = got.reshape(want.shape)
        else:
            raise CaseFailure(f"{what}: shape {list(got.shape)}, expected {list(want.shape)}")
    if not np.allclose(got, want, rtol=rtol, atol=rtol * 1e-2, equal_nan=True):
        err = np.max(np.abs(got - want))
        raise CaseFailure(f"{what}: max abs error {err:.3g} exceeds rtol {rtol}")


# The primitive cases (a bare model name) were recorded with Mithril's
# backend functions, whose defaults differ from the models' here.
_PRIMITIVE_FUNCTION_DEFAULTS = {"LeakyRelu": {"slope": 0.2}}


def run_case(case: dict, rtol: float) -> None:
    if "static_input_shapes" in case or "static_shapes" in case:
        return _check_static_keys(case)
    if "train_context" in case:
        case = _from_train_context(case)
    spec = case["model"]
    if isinstance(spec, str) and spec in _PRIMITIVE_FUNCTION_DEFAULTS:
        spec = {"name": spec, "args": _PRIMITIVE_FUNCTION_DEFAULTS[spec]}
    model = dict_to_model(spec)
    train = "output_specs" in case
    if train:
        model = _train_model(model, case)
        model.finalize()  # final_cost exists, and can be discarded
    # "is_list": the (one) input is a list of tensors, as Concat's.
    raw_inputs = dict(case.get("inputs", {}))
    is_list = raw_inputs.pop("is_list", False)
    inputs = {k: [np.asarray(x, dtype=np.float64) for x in v] if is_list
              else np.asarray(v, dtype=np.float64) for k, v in raw_inputs.items()}
    statics = dict(case.get("static_keys", case.get("static_inputs", {})))
    for key in case.get("injected_static_keys", []):
        # Values Mithril injects into its own internal connections; the ones
        # we know are inputs of ours.
        # Keys read "Outer_0_..._Class_1_output": the class is third from the end.
        parts = key.split("_")
        ours = _INJECTED.get(parts[-3]) if len(parts) >= 3 else None
        if ours is None or key not in statics:
            raise CaseFailure(f"injected static key '{key}' is not supported")
        statics[ours] = statics.pop(key)
    constants = {k: np.asarray(v) for k, v in statics.items()}
    shapes = {k: [list(np.shape(x)) for x in v] if isinstance(v, list) else list(np.shape(v))
              for k, v in {**inputs, **constants}.items()}
    discard = case.get("discard_keys", [])
    expected_error = case.get("error_info")
    try:
        pm = ml_compile(model, MlirBackend(dtype=float64), shapes=shapes, constant_keys=constants,
                        trainable_keys=[k for k in inputs if k in model.input_keys],
                        discard_keys=[k for k in discard if k in model.output_keys])
        results = case["results"]
        if "output_keys" in results:
            return _check_discarded(pm, model, results)
        if train:
            seeds = {"final_cost": np.array(1.0)}
            want_eval = results.get("eval", {})
        elif "output_grad" in case or not isinstance(results.get("eval", {}), dict):
            seeds = ({"output": np.asarray(case["output_grad"], dtype=np.float64)}
                     if "output_grad" in case else {})
            want_eval = {"output": results["eval"]}
        else:
            seeds = {k: np.asarray(v, dtype=np.float64)
                     for k, v in case.get("output_grads", {}).items()}
            want_eval = results.get("eval", {})
        want_grad = results.get("grad", {})
        if want_grad:
            outputs, grads = pm.evaluate(inputs, {}, output_gradients=seeds)
        else:
            outputs, grads = pm.evaluate(inputs, {}), {}
    except (MithrilError, KeyError, ValueError, TypeError) as e:
        if expected_error:
            return
        raise CaseFailure(f"{type(e).__name__}: {str(e).splitlines()[0]}") from None
    if expected_error:
        raise CaseFailure(f"expected an error ({expected_error}), got none")
    for key, value in want_eval.items():
        if key not in outputs:
            raise CaseFailure(f"missing output '{key}' (outputs: {sorted(outputs)})")
        _close(outputs[key], value, rtol, f"output '{key}'")
    for key, value in want_grad.items():
        if key not in grads:
            raise CaseFailure(f"missing gradient of '{key}' (gradients: {sorted(grads)})")
        _close(grads[key], value, rtol, f"gradient of '{key}'")


def _check_discarded(pm, model, results) -> None:
    """A discard-keys case: the outputs left, and the terminals dropped.

    Mithril lists its internal connections too (`output_0`, `axes`), whose
    names are its own; of the model's terminals, every one it drops must be
    dropped here (we may drop more: an input nothing reads is dropped even
    where Mithril keeps it)."""
    got = sorted(pm.output_keys)
    if got != sorted(results["output_keys"]):
        raise CaseFailure(f"output keys {got}, expected {sorted(results['output_keys'])}")
    terminals = set(model.input_keys) | set(model.output_keys)
    missing = sorted(set(results.get("discard_keys", [])) & terminals - set(pm.discarded_keys))
    if missing:
        raise CaseFailure(f"{missing} are not discarded (discarded: {sorted(pm.discarded_keys)})")


def _check_static_keys(case: dict) -> None:
    """A static-keys case: compiled with some inputs fixed (random values of
    the given shapes), the keys whose values do not come from trainable
    parameters (pm.static_keys: data inputs, constants still read, outputs
    of constants alone) are the ones Mithril lists.

    Mithril names some keys its own way (`output_3`: a name with a numeric
    suffix that is no terminal of the model); each such name stands for one
    of our keys that the record does not name."""
    if "static_shapes" in case:
        raise CaseFailure("static shapes (without values) are not compile-time constants here")
    model = dict_to_model(case["model"])
    rng = np.random.default_rng(0)
    constants = {k: rng.standard_normal(v) for k, v in case["static_input_shapes"].items()}
    discard = [k for k in case.get("discard_keys", []) if k in model.output_keys]
    try:
        pm = ml_compile(model, MlirBackend(dtype=float64), constant_keys=constants,
                        discard_keys=discard, inference=True)
        got = set(pm.static_keys)
    except (MithrilError, KeyError, ValueError, TypeError) as e:
        raise CaseFailure(f"{type(e).__name__}: {str(e).splitlines()[0]}") from None
    want = set(case["results"].get("static_keys", []))
    terminals = set(model.input_keys) | set(model.output_keys)
    internal = {k for k in want - got
                if k not in terminals and re.fullmatch(r".+_\d+", k)}
    missing, extra = sorted(want - got - internal), sorted(got - want)
    if missing or len(extra) != len(internal):
        raise CaseFailure(f"static keys {sorted(got)}, expected {sorted(want)}")


# Mithril's internal connection (its model's class) -> our input terminal.
_INJECTED = {"TsnePJoint": "p_joint"}


def _from_train_context(case: dict) -> dict:
    """A case in the `train_context` form (a model, a list of losses with
    the terminals they read) in the `output_specs` form."""
    context = case["train_context"]
    specs = {}
    for loss in context.get("losses", []):
        output = loss.get("input", "output")
        if output in specs:
            raise CaseFailure(f"two losses on output '{output}' are not supported")
        specs[output] = {"loss": loss["model"], "reduce_steps": loss.get("reduces", []),
                         "target_key": loss.get("target", "target")}
    out = {k: v for k, v in case.items() if k != "train_context"}
    out.update(model=context["model"], output_specs=specs,
               regularizations=context.get("regularizations", []),
               final_loss_combiner=context.get("final_loss_combiner"))
    return out


def _train_model(model, case):
    """A TrainModel from a case's output_specs, regularizations and combiner."""
    from . import models as M

    train = M.TrainModel(model)
    for output, spec in case["output_specs"].items():
        if not spec:
            continue
        loss = spec["loss"]
        fn, params = (loss, {}) if isinstance(loss, str) else (loss["fn"], loss.get("params", {}))
        loss_model = dict_to_model({"name": fn, "args": params})
        steps = [getattr(M, s)() if isinstance(s, str) else dict_to_model(s)
                 for s in spec.get("reduce_steps", [])]
        connections = {loss_model.canonical_input: output}
        if "target_key" in spec:
            connections["target"] = spec["target_key"]
        train.add_loss(loss_model, reduce_steps=steps, **connections)
    for reg in case.get("regularizations", []):
        kind = {"l1": M.L1, "l2": M.L2,
                "quadraticformregularizer": M.QuadraticFormRegularizer}.get(reg["model"])
        if kind is None:
            raise CaseFailure(f"regularization '{reg['model']}' is not supported yet")
        coef = reg["coef"]["tensor"] if isinstance(reg["coef"], dict) else reg["coef"]
        # Other keys bind the regularizer's other terminals (a kernel, say);
        # "regex" only says that `input` is a pattern, which add_regularization
        # tries anyway.
        extra = {k: v for k, v in reg.items()
                 if k in kind().input_keys and k != "input"}
        train.add_regularization(kind(), coef=coef, input=reg["input"], **extra)
    if case.get("final_loss_combiner"):
        train.set_loss_combiner(case["final_loss_combiner"])
    return train


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m mithril.conformance",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--rtol", type=float, default=1e-10)
    parser.add_argument("--min-pass-rate", type=float, default=None,
                        help="exit non-zero if fewer than this share of the cases pass")
    parser.add_argument("-k", dest="select", default=None, help="only cases containing this")
    parser.add_argument("-v", "--verbose", action="store_true", help="print passing cases too")
    args = parser.parse_args(argv)

    passed = failed = 0
    reasons: dict[str, int] = {}
    for path in args.files:
        try:
            with open(path) as f:
                cases = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            print(f"{path}: cannot read: {e}")
            failed += 1
            continue
        if not isinstance(cases, dict):
            print(f"{path}: expected a JSON object of cases")
            failed += 1
            continue
        for name, case in cases.items():
            if args.select and args.select not in name:
                continue
            try:
                run_case(case, args.rtol)
                passed += 1
                if args.verbose:
                    print(f"PASS {path}::{name}")
            except CaseFailure as e:
                failed += 1
                reason = str(e)
                reasons[reason.split(":")[0]] = reasons.get(reason.split(":")[0], 0) + 1
                print(f"FAIL {path.split('/')[-1]}::{name}: {reason}")
            except Exception as e:  # a bug of ours: report, keep going
                failed += 1
                print(f"FAIL {path.split('/')[-1]}::{name}: internal error "
                      f"{type(e).__name__}: {e}")
                if args.verbose:
                    traceback.print_exc()
    total = passed + failed
    rate = passed / total if total else 0.0
    print(f"pass rate {rate:.1%} of {total} cases")
    print(f"{passed} passed, {failed} failed")
    if args.min_pass_rate is not None and rate < args.min_pass_rate:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
