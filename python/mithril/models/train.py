# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""TrainModel: a model plus its losses, regularizations and their combination
into one scalar `final_cost`, whose gradient seed is 1."""

from __future__ import annotations

import re

from ..errors import KeyNotFoundError, MithrilError
from ..framework import BaseModel, IOKey, Model
from .primitives import (Absolute, Add, Cast, Divide, Mean, Multiply, Power, Prod, Shape,
                         Square, Sum)


def _terminal_dependencies(model: BaseModel) -> dict[str, set[str]]:
    """For each input terminal of `model`, the output terminals computed from
    it (a primitive's outputs depend on all its inputs)."""
    if not isinstance(model, Model):
        return {i: set(model.output_keys) for i in model.input_keys}
    sources = _net_sources(model)
    deps = {i: set() for i in model.input_keys}
    for net in model._output_nets():
        for source in sources.get(id(net), ()):
            deps.setdefault(source, set()).add(net.name)
    return deps


def _net_sources(model: Model) -> dict[int, set[str]]:
    """For each net of `model` (by id), the input terminals it is computed from."""
    from ..emit import Emitter
    sources = {id(net): {net.name} for net in model._input_nets()}
    for index in Emitter._topological_order(model):
        sub, bindings = model.submodels[index]
        deps = _terminal_dependencies(sub)
        for terminal, net in bindings.items():
            if terminal in sub.input_specs:
                continue
            found = sources.setdefault(id(net), set())
            for i, outs in deps.items():
                if terminal in outs and i in bindings:
                    found |= sources.get(id(bindings[i]), set())
    return sources


class TrainModel(Model):
    """Wraps `model`: its inputs and outputs stay, and `final_cost` is added."""

    def __init__(self, model: BaseModel, name=None) -> None:
        super().__init__(name)
        self.model = model
        # The wrapped model's parameters keep their own names.
        model.transparent = True
        connections = {k: IOKey(k, expose=True) for k in model.output_keys}
        connections.update({k: k for k in model.input_keys})
        self |= model.connect(**connections)
        self._losses: list[tuple[str, str]] = []   # (reduced loss net, unreduced loss net)
        self._regularizations: list[str] = []
        self._combiner = "Sum"
        self._finalized = False
        self._count = 0
        # The calls that built it, for model_to_dict.
        self.recorded_losses: list[dict] = []
        self.recorded_regularizations: list[dict] = []

    def _key(self, prefix: str) -> str:
        self._count += 1
        return f"__{prefix}{self._count}"

    def add_loss(self, loss_model: BaseModel, reduce_steps=None, key_name: str | None = None,
                 coef: float | None = None, **connections) -> None:
        """Adds `loss_model`, its terminals bound by `connections` (for example
        input="output", target="target"), reduced by `reduce_steps` (default: mean)."""
        if self._finalized:
            raise MithrilError("the TrainModel is already compiled")
        if not connections and loss_model.canonical_input is not None:
            connections = {loss_model.canonical_input: self.model.canonical_output}
        self.recorded_losses.append({"model": loss_model, "reduce_steps": reduce_steps,
                                     "key_name": key_name, "coef": coef,
                                     "args": dict(connections)})
        unreduced = self._key("loss")
        self |= loss_model.connect(**connections, output=unreduced)
        current = unreduced
        steps = [Mean()] if reduce_steps is None else list(reduce_steps)
        means = []
        for step in steps:
            nxt = self._key("reduced")
            self |= step.connect(input=current, output=nxt)
            if isinstance(step, Mean):
                means.append((current, nxt))
            current = nxt
        if coef is not None:
            scaled = self._key("scaled")
            self |= Multiply().connect(left=current, right=float(coef), output=scaled)
            current = scaled
        if key_name is not None:
            self |= _Identity().connect(input=current, output=IOKey(key_name, expose=True))
        # (reduced loss, unreduced loss, the (input, output) nets of its Mean
        # steps, which say how much it is divided by).
        self._losses.append((current, unreduced, means))

    def add_regularization(self, model: BaseModel, coef: float, reg_key=None,
                           key_name: str | None = None, **connections) -> None:
        """Adds `coef * model(input)` for the parameter `input` (a name, or a
        regular expression matched against every input key); the model's
        other terminals bind the connections named in `connections`."""
        if self._finalized:
            raise MithrilError("the TrainModel is already compiled")
        self.recorded_regularizations.append({"model": model, "coef": coef, "reg_key": reg_key,
                                              "key_name": key_name, "args": dict(connections)})
        target = connections.pop("input", reg_key)
        keys = self._match(target)
        for key in keys:
            out = self._key("reg")
            # Other terminals of the regularizer (a QuadraticFormRegularizer's
            # kernel, say) bind connections of this model by name.
            self |= type(model)().connect(input=key, output=out, **connections)
            # A term is a scalar (a quadratic form gives [1, 1]).
            total = self._key("reg_total")
            self |= Sum().connect(input=out, output=total)
            scaled = self._key("reg_scaled")
            self |= Multiply().connect(left=total, right=float(coef), output=scaled)
            self._regularizations.append((scaled, key))

    def _element_count(self, net: str) -> str:
        """A net holding the number of elements of `net`, as a float."""
        shape, count, fcount = self._key("shape"), self._key("count"), self._key("n")
        self |= Shape().connect(input=net, output=shape)
        self |= Prod().connect(input=shape, output=count)
        self |= Cast(dtype="float_like").connect(input=count, output=fcount)
        return fcount

    def _fold(self, nets: list, binary, prefix: str) -> str | None:
        """A net holding `binary` (Add, Multiply) over `nets`, left to right;
        None for none."""
        result = None
        for net in nets:
            if result is None:
                result = net
                continue
            nxt = self._key(prefix)
            self |= binary().connect(left=result, right=net, output=nxt)
            result = nxt
        return result

    def _mean_factor(self, means: list) -> str | None:
        """A net holding how much a loss's Mean steps divide by: the product
        of their input's over their output's element counts; None for none."""
        ratios = []
        for before, after in means:
            ratio = self._key("meanfactor")
            self |= Divide().connect(numerator=self._element_count(before),
                                     denominator=self._element_count(after), output=ratio)
            ratios.append(ratio)
        return self._fold(ratios, Multiply, "meanfactors")

    def _match(self, pattern) -> list[str]:
        if hasattr(pattern, "key"):
            pattern = pattern.key
        names = self.model.input_keys
        if isinstance(pattern, str) and pattern in names:
            return [pattern]
        if isinstance(pattern, re.Pattern) or isinstance(pattern, str):
            regex = re.compile(pattern) if isinstance(pattern, str) else pattern
            matches = [n for n in names if regex.fullmatch(n)]
            if matches:
                return matches
        raise KeyNotFoundError(f"regularization input '{pattern}' matches no input of the model")

    def set_loss_combiner(self, combiner) -> None:
        name = combiner if isinstance(combiner, str) else type(combiner).__name__
        if name not in ("Sum", "Mean"):
            raise MithrilError(f"unsupported loss combiner {name} (expected Sum or Mean)")
        self._combiner = name

    def finalize(self) -> None:
        """Builds `final_cost`; ml.compile calls it."""
        if self._finalized:
            return
        if not self._losses:
            raise MithrilError("a TrainModel needs at least one loss (add_loss)")
        self._finalized = True
        total = self._fold([loss for loss, _, _ in self._losses], Add, "sum")
        if self._combiner == "Mean" and len(self._losses) > 1:
            nxt = self._key("mean")
            self |= Divide().connect(numerator=total, denominator=float(len(self._losses)),
                                     output=nxt)
            total = nxt
        if self._regularizations:
            # As Mithril's: each term is divided by the geometric mean, over
            # the losses computed from its parameter, of how much their Mean
            # steps divide (the elements they average; 1 for a sum), so that
            # it weighs as much as a per-sample loss term.
            sources = _net_sources(self)
            terms = []
            for scaled, key in self._regularizations:
                dependent = [means for _, unreduced, means in self._losses
                             if key in sources.get(id(self.nets[unreduced]), ())]
                # A loss without Mean steps counts with a factor of 1.
                factors = [f for f in map(self._mean_factor, dependent) if f is not None]
                term = scaled
                if factors:
                    product = self._fold(factors, Multiply, "regfactor")
                    if len(dependent) > 1:
                        nxt = self._key("reggeomean")
                        self |= Power().connect(base=product, exponent=1.0 / len(dependent),
                                                output=nxt)
                        product = nxt
                    nxt = self._key("regmean")
                    self |= Divide().connect(numerator=scaled, denominator=product, output=nxt)
                    term = nxt
                terms.append(term)
            reg = self._fold(terms, Add, "regsum")
            nxt = self._key("total")
            self |= Add().connect(left=total, right=reg, output=nxt)
            total = nxt
        self |= _Identity().connect(input=total, output=IOKey("final_cost", expose=True))
        for net in self.nets.values():
            if net.name.startswith("__"):
                net.auto = True


class _Identity(Model):
    """Names a value: its output is its input."""

    def __init__(self) -> None:
        super().__init__()
        from .primitives import Buffer
        self |= Buffer().connect(input="input", output=IOKey("output", expose=True))


class L1(Model):
    """sum(|input|)"""

    def __init__(self, name=None) -> None:
        super().__init__(name)
        self |= Absolute().connect(input="input", output="__abs")
        self |= Sum().connect(input="__abs", output=IOKey("output", expose=True))
        self.nets["__abs"].auto = True


class L2(Model):
    """0.5 * sum(input ** 2)"""

    def __init__(self, name=None) -> None:
        super().__init__(name)
        self |= Square().connect(input="input", output="__sq")
        self |= Sum().connect(input="__sq", output="__sum")
        self |= Multiply().connect(left="__sum", right=0.5, output=IOKey("output", expose=True))
        self.nets["__sq"].auto = True
        self.nets["__sum"].auto = True
