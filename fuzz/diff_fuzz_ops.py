# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""The op table and the graph generator of the differential fuzzer.

Every entry of SPECS maps a model of the Python library to
  - its constructor (source text, with the arguments the generator draws),
  - its terminals: graph inputs (`ins`), parameters (`params`) and outputs,
  - a torch reference (source text over the terminals, see diff_fuzz_ref.py),
  - a proposer that draws arguments and input tensors of valid shapes,
  - optionally a "kink" check: where the reference sits on a point where the
    function is not differentiable (or, for discrete outputs, not
    continuous), the trial cannot tell right from wrong.

The generator builds a graph one node at a time and evaluates the torch
reference as it goes: the shapes come from torch (a proposal torch rejects is
dropped), and so do the finiteness and magnitude checks. Graphs are plain
JSON-able dictionaries, which the runner turns into mithril models and torch
code (the same text the reproducers print).
"""

from __future__ import annotations

import math
import random

import numpy as np
import torch

import diff_fuzz_ref as R

F = torch.nn.functional

# --------------------------------------------------------------------------
# Data generators: numpy expressions over `rng` and `shape`. A reproducer
# prints the same expressions.

GENS = {
    "normal": "rng.standard_normal({shape})",
    "pos": "rng.uniform(0.5, 2.0, {shape})",
    "prob": "rng.uniform(0.05, 0.95, {shape})",
    "sign": "np.where(rng.random({shape}) < 0.5, -1.0, 1.0)",
    "nonzero": "rng.uniform(0.5, 2.0, {shape}) * np.where(rng.random({shape}) < 0.5, -1.0, 1.0)",
    "intval": "rng.integers(-2, 3, {shape}).astype(np.float64)",
    "small": "rng.uniform(-0.2, 0.2, {shape})",
    "param": "rng.uniform(-1.0, 1.0, {shape})",
    "bool": "rng.random({shape}) < 0.5",
    # int:LO:HI
}

DOMS = {"normal": set(), "pos": {"pos", "nonzero"}, "prob": {"pos", "prob", "nonzero"},
        "sign": {"sign", "nonzero"}, "nonzero": {"nonzero"}, "intval": {"intval"},
        "small": set(), "param": set()}


def gen_expr(gen: str, shape) -> str:
    shape = tuple(int(s) for s in shape)
    if gen.startswith("int:"):
        _, lo, hi = gen.split(":")
        return f"rng.integers({lo}, {hi}, {shape})"
    return GENS[gen].format(shape=shape)


def gen_value(gen: str, shape, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    value = eval(gen_expr(gen, shape), {"rng": rng, "np": np})
    return np.asarray(value)


def gen_dtype(gen: str) -> str:
    if gen.startswith("int:"):
        return "i"
    return "b" if gen == "bool" else "f"


# --------------------------------------------------------------------------
# Kink checks. `thr` is relative: values within thr * scale of a kink count.

def _scale(x):
    return float(x.abs().max()) if x.numel() else 0.0


def near(x, c, thr, scale=None):
    if x.numel() == 0:
        return False
    s = max(_scale(x) if scale is None else scale, 1e-300)
    return bool(((x - c).abs() <= thr * max(s, 1.0)).any())


def ties(x, dims, thr):
    """Do the top two values along `dims` (None: all) come within thr?"""
    if x.numel() == 0:
        return False
    if dims is None or x.dim() == 0:
        flat = x.reshape(1, -1)
    else:
        dims = sorted(set(d % x.dim() for d in dims))
        rest = [d for d in range(x.dim()) if d not in dims]
        flat = x.permute(rest + dims).reshape(-1, int(np.prod([x.shape[d] for d in dims])))
    if flat.shape[1] < 2:
        return False
    top = flat.topk(2, dim=1).values
    bottom = (-flat).topk(2, dim=1).values
    s = max(_scale(x), 1.0)
    return bool(((top[:, 0] - top[:, 1]) <= thr * s).any()
                or ((bottom[:, 0] - bottom[:, 1]) <= thr * s).any())


def near_int(x, thr):
    if x.numel() == 0:
        return False
    s = max(_scale(x), 1.0)
    return bool(((x - x.round()).abs() <= thr * s).any())


# --------------------------------------------------------------------------
# Tensors the generator knows about.

class T:
    def __init__(self, name, shape, dtype, dom, bdim, vals, node=None):
        self.name, self.shape, self.dtype = name, tuple(shape), dtype
        self.dom, self.bdim, self.vals, self.node = set(dom), bdim, vals, node

    @property
    def rank(self):
        return len(self.shape)

    def __repr__(self):
        return f"T({self.name}, {self.shape}, {self.dtype}, bdim={self.bdim})"


class Reject(Exception):
    pass


def rand_size(rng, big=False):
    r = rng.random()
    if r < 0.02:
        return 0
    if r < 0.25:
        return 1
    if big and r < 0.5:
        return rng.choice([16, 17, 31, 33, 64, 65, 128])
    if r < 0.96:
        return rng.randint(2, 6)
    return rng.choice([7, 8, 9, 16, 17])


def rand_rank(rng, lo=0, hi=4):
    weights = {0: 0.08, 1: 0.22, 2: 0.36, 3: 0.22, 4: 0.12}
    ranks = [r for r in range(lo, hi + 1)]
    return rng.choices(ranks, [weights.get(r, 0.1) for r in ranks])[0]


class Gen:
    """Builds one random graph. See generate()."""

    def __init__(self, rng: random.Random, dtype: str, dynamic: bool, big: bool,
                 workarounds: bool = True):
        self.rng = rng
        self.workarounds = workarounds
        self.dtype = dtype
        self.dynamic = dynamic
        self.big = big
        self.thr = 1e-4 if dtype == "f32" else 1e-10
        self.B0 = rng.choice([2, 3, 5, 6]) if dynamic else None
        self.Bp = self.B0 + 1 if dynamic else None
        self.inputs: list[dict] = []
        self.nodes: list[dict] = []
        self.pool: list[T] = []
        self.tentative: list[tuple[dict, T]] = []
        self.counter = 0

    # Batches the generator evaluates: B0 (and a probe size when dynamic).
    @property
    def batches(self):
        return [self.B0, self.Bp, 1] if self.dynamic else [None]

    def shape_at(self, shape, bdim, B):
        s = list(shape)
        if bdim is not None and B is not None:
            s[bdim] = B
        return tuple(s)

    # Fresh graph inputs -------------------------------------------------------
    def fresh(self, shape, gen="normal", bdim="auto") -> T:
        shape = tuple(int(s) for s in shape)
        if bdim == "auto":
            bdim = None
            if self.dynamic and shape and self.rng.random() < 0.7:
                bdim = 0
        if bdim is not None:
            shape = self.shape_at(shape, bdim, self.B0)
        name = f"x{self.counter}"
        self.counter += 1
        seed = self.rng.randrange(2**31)
        rec = {"name": name, "shape": list(shape), "gen": gen, "seed": seed, "bdim": bdim,
               "dtype": gen_dtype(gen)}
        vals = {B: _to_torch(gen_value(gen, self.shape_at(shape, bdim, B),
                                       seed + B if bdim is not None else seed))
                for B in self.batches}
        t = T(name, shape, rec["dtype"], DOMS.get(gen, set()), bdim, vals)
        self.tentative.append((rec, t))
        return t

    def rand_shape(self, lo=0, hi=4, rank=None):
        r = rand_rank(self.rng, lo, hi) if rank is None else rank
        return tuple(rand_size(self.rng, self.big) for _ in range(r))

    # Picking inputs ---------------------------------------------------------
    def candidates(self, dtype="f", dom=(), lo=0, hi=8, pred=None):
        out = []
        for t in self.pool:
            if t.dtype != dtype or not set(dom) <= t.dom or not lo <= t.rank <= hi:
                continue
            if pred is not None and not pred(t):
                continue
            out.append(t)
        return out

    def pick(self, cands, fresh_p=0.25):
        if not cands or self.rng.random() < fresh_p:
            return None
        # Chains: prefer the latest node's output.
        latest = [t for t in cands if t.node is not None and t.node == len(self.nodes) - 1]
        if latest and self.rng.random() < 0.6:
            return self.rng.choice(latest)
        return self.rng.choice(cands)

    def float_in(self, dom=(), lo=0, hi=4, pred=None, gen=None, shape=None, fresh_p=0.25):
        t = self.pick(self.candidates("f", dom, lo, hi, pred), fresh_p) if shape is None else None
        if t is not None:
            return t
        for _ in range(20):
            s = shape if shape is not None else self.rand_shape(lo, hi)
            if pred is None or pred(T("?", s, "f", set(), None, {})):
                break
        else:
            raise Reject("no shape")
        if gen is None:
            dom = set(dom)
            gen = ("prob" if "prob" in dom else "pos" if "pos" in dom else
                   "sign" if "sign" in dom else "nonzero" if "nonzero" in dom else
                   self.rng.choice(["normal", "normal", "normal", "intval", "nonzero"]))
        return self.fresh(s, gen)

    def partner(self, t: T, gen="normal", dom=(), fresh_p=0.6):
        """A tensor that broadcasts with t: from the pool, or fresh."""
        def compatible(u):
            try:
                torch.broadcast_shapes(u.shape, t.shape)
                return True
            except RuntimeError:
                return False
        if self.rng.random() > fresh_p:
            c = self.candidates("f", dom, 0, 8, compatible)
            c = [u for u in c if u is not t] or c
            if c:
                return self.rng.choice(c)
        s, b = list(t.shape), t.bdim
        r = self.rng.random()
        if r < 0.4:
            pass
        elif r < 0.55 and s:
            k = self.rng.randint(1, len(s))
            s = s[k:]
            b = b - k if b is not None and b >= k else None
        elif r < 0.75 and s:
            for i in range(len(s)):
                if self.rng.random() < 0.5:
                    s[i] = 1
                    if b == i:
                        b = None
        elif r < 0.85:
            s, b = [], None
        else:
            extra = [rand_size(self.rng) for _ in range(self.rng.randint(1, 2))]
            s = extra + s
            b = b + len(extra) if b is not None else None
        return self.fresh(s, gen, bdim=b)

    # Nodes ----------------------------------------------------------------
    def try_node(self, spec, args, ins: dict, pmode=None):
        k = len(self.nodes)
        outs = {o: (f"t{k}" if i == 0 else f"t{k}_{o}") for i, o in enumerate(spec.outs)}
        in_shapes = {term: t.shape for term, t in ins.items()}
        params = spec.params(args, in_shapes) if spec.params else {}
        if pmode is None:
            must_bind = spec.bind_params(args) if callable(spec.bind_params) else spec.bind_params
            must_bind = must_bind or (spec.gap_bind and self.workarounds)
            pmode = "bind" if must_bind or self.rng.random() < 0.3 else "path"
        node = {"op": spec.name, "args": args, "ins": {term: t.name for term, t in ins.items()},
                "outs": outs, "params": {}, "pmode": pmode, "expose": False, "style": "|="}
        pvals = {}
        for term, (shape, gen) in params.items():
            seed = self.rng.randrange(2**31)
            node["params"][term] = {"shape": list(shape), "gen": gen, "seed": seed,
                                    "kind": "data" if term in spec.consts else "param"}
            pvals[term] = _to_torch(gen_value(gen, shape, seed))
        results = {}
        for B in self.batches:
            env = {term: t.vals[B] for term, t in ins.items()}
            env.update(pvals)
            try:
                with torch.no_grad():
                    out = eval_ref(spec, args, env, self.dtype)
            except Exception as e:  # noqa: BLE001 - torch rejects the proposal
                raise Reject(f"torch: {e}") from None
            for term, v in out.items():
                if v.dtype.is_floating_point:
                    if not torch.isfinite(v).all():
                        raise Reject("non-finite")
                    if v.numel() and float(v.abs().max()) > 1e4:
                        raise Reject("too large")
                if v.numel() > 200000:
                    raise Reject("too big")
            if spec.kink is not None and spec.kink(env, args, out, self.thr):
                raise Reject("kink")
            results[B] = out
        # Output batch axes: the one axis whose size follows the batch.
        bdims = {}
        for term in spec.outs:
            if not self.dynamic:
                bdims[term] = None
                continue
            a, b = results[self.B0][term].shape, results[self.Bp][term].shape
            one = results[1][term].shape
            if len(a) != len(b) or len(a) != len(one):
                raise Reject("rank follows batch")
            diff = [i for i in range(len(a)) if a[i] != b[i]]
            if not diff:
                bdims[term] = None
                if tuple(one) != tuple(a):
                    raise Reject("batch 1 differs")
            elif len(diff) == 1 and a[diff[0]] == self.B0 and b[diff[0]] == self.Bp:
                bdims[term] = diff[0]
                if tuple(one) != tuple(1 if i == diff[0] else d for i, d in enumerate(a)):
                    raise Reject("batch 1 differs")
            else:
                raise Reject("batch does not map to one axis")
        # Commit.
        for rec, t in self.tentative:
            self.inputs.append(rec)
            self.pool.append(t)
        self.tentative = []
        for t in ins.values():
            t.consumed = True
        dom = spec.dom(args, ins) if spec.dom else set()
        for term, name in outs.items():
            v = results[self.batches[0]][term]
            dtype = "f" if v.dtype.is_floating_point else ("b" if v.dtype == torch.bool else "i")
            self.pool.append(T(name, tuple(v.shape), dtype, dom if term == spec.outs[0] else set(),
                               bdims[term], {B: results[B][term] for B in self.batches}, node=k))
        self.nodes.append(node)
        return node


def _to_torch(a: np.ndarray):
    t = torch.from_numpy(np.array(a))
    if t.dtype.is_floating_point:
        t = t.to(torch.float64)
    return t


# --------------------------------------------------------------------------
# References: spec.ref(i, p, a, dt) gives the source of an expression over the
# variable names in i (inputs) and p (parameters); a holds the arguments and
# dt the trial's float type ("f32"/"f64": the robust functions' default
# thresholds depend on it).

HELPER_NAMES = [n for n in dir(R) if n.startswith("ref_")]
REF_GLOBALS = {"torch": torch, "F": F, "math": math, "FD": torch.float64,
               **{n: getattr(R, n) for n in HELPER_NAMES}}


def eval_ref(spec, args, env: dict, dtype: str) -> dict:
    names = {term: f"_{term}" for term in env}
    src = spec.ref({k: names[k] for k in env if k in spec.ins_of(args)},
                   {k: names[k] for k in env if k not in spec.ins_of(args)}, args, dtype)
    scope = dict(REF_GLOBALS)
    scope.update({names[k]: v for k, v in env.items()})
    value = eval(src, scope)
    if len(spec.outs) == 1:
        value = (value,)
    return dict(zip(spec.outs, value))


class Spec:
    def __init__(self, name, ctor, ins, ref, propose, *, outs=("output",), params=None,
                 consts=(), kink=None, dom=None, weight=1.0, bind_params=False):
        self.name, self.ctor = name, ctor
        self._ins = ins
        self.ref, self.propose = ref, propose
        self.outs = list(outs)
        self.params = params
        self.consts = set(consts)
        self.kink, self.dom = kink, dom
        self.weight = weight
        self.bind_params = bind_params
        # Parameters whose shapes the package cannot infer (a known gap):
        # bound by name with their shapes unless --no-workarounds.
        self.gap_bind = False

    def ins_of(self, args):
        return self._ins(args) if callable(self._ins) else self._ins


SPECS: dict[str, Spec] = {}


def spec(name, *a, **kw):
    SPECS[name] = Spec(name, *a, **kw)


# ---- unary elementwise ----------------------------------------------------

def _unary(dom=(), lo=0):
    def propose(g):
        return {}, {"input": g.float_in(dom=dom, lo=lo)}
    return propose


def _kink_at(c, kind="grad"):
    def kink(env, a, out, thr):
        return near(env["input"], c, thr)
    return kink


def _dom_same(keep):
    def dom(a, ins):
        return set(ins["input"].dom) & set(keep)
    return dom


UNARY = [
    # name, ctor, torch source, input domain, kink, output domain
    ("Relu", "M.Relu", "torch.relu({x})", (), _kink_at(0.0), None),
    ("Sigmoid", "M.Sigmoid", "torch.sigmoid({x})", (), None, lambda a, i: {"pos", "prob", "nonzero"}),
    ("Tanh", "M.Tanh", "torch.tanh({x})", (), None, None),
    ("Softplus", "M.Softplus", "F.softplus({x})", (), None, lambda a, i: {"pos", "nonzero"}),
    ("Exponential", "M.Exponential", "torch.exp({x})", (), None,
     lambda a, i: {"pos", "nonzero"}),
    ("Log", "M.Log", "torch.log({x})", ("pos",), None, None),
    ("Sqrt", "M.Sqrt", "torch.sqrt({x})", ("pos",), None, lambda a, i: {"pos", "nonzero"}),
    ("Sine", "M.Sine", "torch.sin({x})", (), None, None),
    ("Cosine", "M.Cosine", "torch.cos({x})", (), None, None),
    ("Absolute", "M.Absolute", "torch.abs({x})", (), _kink_at(0.0),
     lambda a, i: {"pos", "nonzero"} if "nonzero" in i["input"].dom else set()),
    ("Negate", "M.Negate", "torch.neg({x})", (), None, _dom_same({"nonzero", "sign", "intval"})),
    ("Minus", "M.Minus", "-{x}", (), None, _dom_same({"nonzero", "sign", "intval"})),
    ("Square", "M.Square", "torch.square({x})", (), None,
     lambda a, i: {"pos", "nonzero"} if "nonzero" in i["input"].dom else set()),
    ("Sign", "M.Sign", "torch.sign({x})", (), None, None),
    ("Reciprocal", "M.Reciprocal", "torch.reciprocal({x})", ("nonzero",), None,
     _dom_same({"nonzero", "pos"})),
    ("StopGradient", "M.StopGradient", "{x}.detach()", (), None, _dom_same({"nonzero", "pos", "prob", "sign", "intval"})),
    ("Buffer", "M.Buffer", "{x}", (), None, _dom_same({"nonzero", "pos", "prob", "sign", "intval"})),
]

for _name, _ctor, _src, _dom, _kink, _odom in UNARY:
    spec(_name, _ctor, ["input"], (lambda s: lambda i, p, a, dt: s.format(x=i["input"]))(_src),
         _unary(_dom), kink=_kink, dom=_odom)


def _sign_kink(env, a, out, thr):
    return near(env["input"], 0.0, thr)


SPECS["Sign"].kink = _sign_kink


def _robust_propose(threshold_choices):
    def propose(g):
        args = {"robust": True}
        t = g.rng.choice(threshold_choices)
        if t is not None:
            args["threshold"] = t
        gen = g.rng.choice(["normal", "small", "nonzero"])
        return args, {"input": g.float_in(gen=gen) if g.rng.random() < 0.5 else g.float_in()}
    return propose


def _robust_kink(env, a, out, thr):
    x = env["input"]
    t = a.get("threshold")
    return near(x, 0.0, thr) or (t is not None and near(x.abs(), t, thr, scale=1.0))


def _tiny(dt):
    return float(np.finfo(np.float32 if dt == "f32" else np.float64).tiny)


spec("RobustLog", "M.Log", ["input"],
     lambda i, p, a, dt: f"ref_robust_log({i['input']}, {a.get('threshold', _tiny(dt))!r})",
     _robust_propose([None, None, 0.1, 0.5]), kink=_robust_kink)
spec("RobustSqrt", "M.Sqrt", ["input"],
     lambda i, p, a, dt: f"ref_robust_sqrt({i['input']}, {a.get('threshold', _tiny(dt))!r})",
     _robust_propose([None, None, 0.1, 0.5]), kink=_robust_kink)


def _stable_recip_threshold(a, dt):
    if "threshold" in a:
        return a["threshold"]
    return 1.0842021951e-19 if dt == "f32" else 1.4916681462400413e-153


def _stable_recip_propose(g):
    args = {}
    t = g.rng.choice([None, 0.1, 0.5, 1.0])
    if t is not None:
        args["threshold"] = t
    return args, {"input": g.float_in(gen=g.rng.choice(["normal", "small", "nonzero"]))
                  if g.rng.random() < 0.6 else g.float_in(dom=("nonzero",))}


def _stable_recip_kink(env, a, out, thr):
    x = env["input"]
    t = a.get("threshold")
    return near(x, 0.0, thr) or (t is not None and near(x.abs(), t, thr, scale=1.0))


spec("StableReciprocal", "M.StableReciprocal", ["input"],
     lambda i, p, a, dt: f"ref_stable_reciprocal({i['input']}, {_stable_recip_threshold(a, dt)!r})",
     _stable_recip_propose, kink=_stable_recip_kink)


def _leaky_propose(g):
    args = {} if g.rng.random() < 0.3 else {"slope": g.rng.choice([0.01, 0.05, 0.2, 1.5, -0.5])}
    return args, {"input": g.float_in()}


spec("LeakyRelu", "M.LeakyRelu", ["input"],
     lambda i, p, a, dt: f"F.leaky_relu({i['input']}, {a.get('slope', 0.01)!r})",
     _leaky_propose, kink=_kink_at(0.0))


def _gelu_propose(g):
    return ({} if g.rng.random() < 0.4 else {"approximate": g.rng.random() < 0.5},
            {"input": g.float_in()})


spec("Gelu", "M.Gelu", ["input"],
     lambda i, p, a, dt: (f"F.gelu({i['input']}, approximate='tanh')" if a.get("approximate")
                          else f"F.gelu({i['input']})"), _gelu_propose)


def _axis_propose(g):
    t = g.float_in(lo=1)
    args = {} if g.rng.random() < 0.2 else {"axis": g.rng.randrange(-t.rank, t.rank)}
    return args, {"input": t}


spec("Softmax", "M.Softmax", ["input"],
     lambda i, p, a, dt: f"torch.softmax({i['input']}, {a.get('axis', -1)})", _axis_propose,
     dom=lambda a, i: {"pos", "prob", "nonzero"})
spec("LogSoftmax", "M.LogSoftmax", ["input"],
     lambda i, p, a, dt: f"torch.log_softmax({i['input']}, {a.get('axis', -1)})", _axis_propose)


def _polyfeat_propose(g):
    t = g.float_in(lo=2, hi=2, pred=lambda u: u.shape[1] <= 4)
    degree = g.rng.choice([1, 2, 2, 3])
    if g.dynamic and t.bdim == 1:
        # A limitation: above degree 1, the number of monomials (of
        # products in the compiled code) needs a static column count.
        degree = 1
    return {"degree": degree}, {"input": t}


spec("PolynomialFeatures", "M.PolynomialFeatures", ["input"],
     lambda i, p, a, dt: f"ref_polynomial_features({i['input']}, {a['degree']})",
     _polyfeat_propose)
spec("EyeLike", "M.EyeLike", ["input"], lambda i, p, a, dt: f"ref_eye_like({i['input']})",
     lambda g: ({}, {"input": g.float_in(lo=2, hi=2)}))


FLOAT_NAME = {"f32": "float32", "f64": "float64"}


def _cast_propose(g):
    r = g.rng.random()
    if r < 0.4:
        c = g.candidates("b") + g.candidates("i")
        t = g.pick(c, 0.3) or g.fresh(g.rand_shape(), "int:-3:4" if g.workarounds else
                                      g.rng.choice(["bool", "int:-3:4"]))
        return {"dtype": FLOAT_NAME[g.dtype]}, {"input": t}
    if r < 0.8:
        return {"dtype": FLOAT_NAME[g.dtype]}, {"input": g.float_in()}
    return {"dtype": "int64"}, {"input": g.float_in()}


def _cast_ref(i, p, a, dt):
    if a["dtype"] == "int64":
        return f"{i['input']}.to(torch.int64)"
    return f"{i['input']}.to(FD)"


def _cast_kink(env, a, out, thr):
    x = env["input"]
    return a["dtype"] == "int64" and x.dtype.is_floating_point and near_int(x, thr)


spec("Cast", "M.Cast", ["input"], _cast_ref, _cast_propose, kink=_cast_kink)
spec("Shape", "M.Shape", ["input"],
     lambda i, p, a, dt: f"torch.tensor({i['input']}.shape, dtype=torch.int64)",
     lambda g: ({}, {"input": g.float_in()}))


def _arg_propose(g):
    t = g.float_in(lo=1, pred=lambda u: all(s > 0 for s in u.shape))
    if g.rng.random() < 0.25:
        return {}, {"input": t}
    args = {"axis": g.rng.randrange(-t.rank, t.rank)}
    if g.rng.random() < 0.4:
        args["keepdim"] = g.rng.random() < 0.6
    return args, {"input": t}


def _arg_kink(env, a, out, thr):
    ax = a.get("axis")
    return ties(env["input"], None if ax is None else [ax], thr)


for _n, _kind in (("ArgMax", "max"), ("ArgMin", "min")):
    spec(_n, f"M.{_n}", ["input"],
         (lambda k: lambda i, p, a, dt:
          f"ref_arg({k!r}, {i['input']}, {a.get('axis')!r}, {a.get('keepdim', False)!r})")(_kind),
         _arg_propose, kink=_arg_kink)


def _fresh_bool(g, shape, bdim="auto"):
    """A fresh boolean input. The logical primitives declare no boolean
    terminal type, so such an input becomes a float one (a known gap, see
    --no-workarounds): by default they only take booleans computed in the graph."""
    if g.workarounds:
        raise Reject("logical ops take computed booleans")
    return g.fresh(shape, "bool", bdim=bdim)


def _lnot_propose(g):
    t = g.pick(g.candidates("b"), 0.3 if not g.workarounds else 0.0) or _fresh_bool(g, g.rand_shape())
    return {}, {"input": t}


spec("LogicalNot", "M.LogicalNot", ["input"], lambda i, p, a, dt: f"torch.logical_not({i['input']})",
     _lnot_propose)

# ---- binary elementwise ---------------------------------------------------


def _binary_propose(ldom=(), rdom=(), terms=("left", "right"), gen_r=None):
    def propose(g):
        a = g.float_in(dom=ldom)
        b = g.partner(a, gen=gen_r or ("pos" if "pos" in rdom else "nonzero" if "nonzero" in rdom
                                       else g.rng.choice(["normal", "normal", "intval"])),
                      dom=rdom)
        if not ldom and not rdom and g.rng.random() < 0.5:
            a, b = b, a
        return {}, {terms[0]: a, terms[1]: b}
    return propose


def _both_dom(keep):
    def dom(a, ins):
        vs = list(ins.values())
        return set(vs[0].dom) & set(vs[1].dom) & set(keep)
    return dom


def _minmax_kink(env, a, out, thr):
    l, r = env["left"], env["right"]
    return near(l - r, 0.0, thr, scale=max(_scale(l), _scale(r)))


BINARY = [
    ("Add", "M.Add", "torch.add({l}, {r})", (), (), None, _both_dom({"pos", "nonzero"} - {"nonzero"})),
    ("Subtract", "M.Subtract", "torch.sub({l}, {r})", (), (), None, None),
    ("Multiply", "M.Multiply", "torch.mul({l}, {r})", (), (), None, _both_dom({"pos", "nonzero", "prob", "sign"})),
    ("Minimum", "M.Minimum", "torch.minimum({l}, {r})", (), (), _minmax_kink, _both_dom({"pos", "prob"})),
    ("Maximum", "M.Maximum", "torch.maximum({l}, {r})", (), (), _minmax_kink, _both_dom({"pos", "prob"})),
    ("MatrixMultiply", None, None, None, None, None, None),
]
for _name, _ctor, _src, _ld, _rd, _kink, _odom in BINARY:
    if _ctor is None:
        continue
    spec(_name, _ctor, ["left", "right"],
         (lambda s: lambda i, p, a, dt: s.format(l=i["left"], r=i["right"]))(_src),
         _binary_propose(_ld, _rd), kink=_kink, dom=_odom)


spec("Divide", "M.Divide", ["numerator", "denominator"],
     lambda i, p, a, dt: f"torch.div({i['numerator']}, {i['denominator']})",
     _binary_propose((), ("nonzero",), ("numerator", "denominator")),
     dom=lambda a, i: {"pos", "nonzero"} & i["numerator"].dom & i["denominator"].dom)


def _floordiv_kink(env, a, out, thr):
    q = env["numerator"] / env["denominator"]
    return near_int(q, thr * 10)


spec("FloorDivide", "M.FloorDivide", ["numerator", "denominator"],
     lambda i, p, a, dt: f"ref_floor_divide({i['numerator']}, {i['denominator']})",
     _binary_propose((), ("nonzero",), ("numerator", "denominator")), kink=_floordiv_kink)


def _cmp_kink(env, a, out, thr):
    l, r = env["left"], env["right"]
    d = (l - r).abs()
    s = max(_scale(l), _scale(r), 1.0)
    return bool(((d > 0) & (d <= thr * s)).any())


def _cmp_propose(g):
    gen = g.rng.choice(["intval", "normal"])
    a = g.float_in(gen=gen) if g.rng.random() < 0.4 else g.float_in()
    b = a if g.rng.random() < 0.1 else g.partner(a, gen=gen)
    if g.rng.random() < 0.5:
        a, b = b, a
    return {}, {"left": a, "right": b}


for _n, _f in (("Equal", "eq"), ("NotEqual", "ne"), ("Less", "lt"), ("LessEqual", "le"),
               ("Greater", "gt"), ("GreaterEqual", "ge")):
    spec(_n, f"M.{_n}", ["left", "right"],
         (lambda f: lambda i, p, a, dt: f"torch.{f}({i['left']}, {i['right']})")(_f),
         _cmp_propose, kink=_cmp_kink, weight=0.4)


def _bool_partner(g):
    fp = 0.0 if g.workarounds else 0.4
    a = g.pick(g.candidates("b"), fp) or _fresh_bool(g, g.rand_shape())
    c = [u for u in g.candidates("b") if _bcast_ok(u.shape, a.shape)]
    b = g.pick(c, 0.0 if g.workarounds else 0.5)
    if b is None:
        fake = g.partner(T("?", a.shape, "f", set(), a.bdim, {}), fresh_p=1.0)
        # Replace the float partner by a boolean one of its shape.
        g.tentative.pop()
        g.counter -= 1
        b = _fresh_bool(g, fake.shape, bdim=fake.bdim)
    return a, b


def _bcast_ok(s1, s2):
    try:
        torch.broadcast_shapes(tuple(s1), tuple(s2))
        return True
    except RuntimeError:
        return False


for _n, _f in (("LogicalAnd", "logical_and"), ("LogicalOr", "logical_or"),
               ("LogicalXOr", "logical_xor")):
    spec(_n, f"M.{_n}", ["left", "right"],
         (lambda f: lambda i, p, a, dt: f"torch.{f}({i['left']}, {i['right']})")(_f),
         (lambda g: (lambda ab: ({}, {"left": ab[0], "right": ab[1]}))(_bool_partner(g))),
         weight=0.3)


def _shift_propose(g):
    a = g.pick(g.candidates("i"), 0.5) or g.fresh(g.rand_shape(), "int:-50:50")
    fake = g.partner(T("?", a.shape, "f", set(), a.bdim, {}), fresh_p=1.0)
    g.tentative.pop()
    g.counter -= 1
    b = g.fresh(fake.shape, "int:0:6", bdim=fake.bdim)
    return {}, {"input": a, "shift": b}


spec("ShiftLeft", "M.ShiftLeft", ["input", "shift"],
     lambda i, p, a, dt: f"torch.bitwise_left_shift({i['input']}, {i['shift']})", _shift_propose,
     weight=0.2)
spec("ShiftRight", "M.ShiftRight", ["input", "shift"],
     lambda i, p, a, dt: f"torch.bitwise_right_shift({i['input']}, {i['shift']})", _shift_propose,
     weight=0.2)


def _power_propose(g, robust):
    args = {}
    if robust:
        args["robust"] = True
        if g.rng.random() < 0.3:
            args["threshold"] = g.rng.choice([0.01, 0.1])
        base = g.float_in()
    else:
        base = g.float_in(dom=("pos",))
    exp = g.partner(base, gen=g.rng.choice(["normal", "small", "intval"]))
    return args, {"base": base, "exponent": exp}


def _power_kink(env, a, out, thr):
    b = env["base"]
    t = a.get("threshold")
    return near(b, 0.0, thr) or (t is not None and near(b.abs(), t, thr * 10, scale=1.0))


spec("Power", "M.Power", ["base", "exponent"],
     lambda i, p, a, dt: f"torch.pow({i['base']}, {i['exponent']})",
     lambda g: _power_propose(g, False), dom=lambda a, i: {"pos", "nonzero"})
spec("RobustPower", "M.Power", ["base", "exponent"],
     lambda i, p, a, dt: f"ref_robust_power({i['base']}, {i['exponent']}, "
                         f"{a.get('threshold', _tiny(dt))!r})",
     lambda g: _power_propose(g, True), kink=_power_kink)


def _matmul_propose(g):
    left = g.float_in(lo=1, hi=4)
    L = list(left.shape)
    k = L[-1]
    m = rand_size(g.rng)
    r = g.rng.random()
    b = None
    if len(L) == 1:
        rs = [k] if r < 0.3 else [k, m] if r < 0.8 else [rand_size(g.rng), k, m]
    elif r < 0.15:
        rs = [k]
    elif r < 0.6:
        rs = [k, m]
    else:
        batch = L[:-2]
        # Broadcast the batch dims: drop some leading ones or set some to 1.
        drop = g.rng.randint(0, len(batch))
        nb = batch[drop:]
        nb = [1 if g.rng.random() < 0.3 else s for s in nb]
        rs = nb + [k, m]
        if left.bdim is not None and left.bdim < len(batch) and left.bdim >= drop \
                and nb[left.bdim - drop] != 1:
            b = left.bdim - drop
    if len(L) >= 2 and g.rng.random() < 0.1 and L[-1] == L[-2]:
        return {}, {"left": left, "right": left}  # x @ x
    c = [u for u in g.candidates("f", (), 1, 4) if list(u.shape) == rs]
    right = g.pick(c, 0.5) or g.fresh(rs, g.rng.choice(["normal", "param"]), bdim=b)
    return {}, {"left": left, "right": right}


spec("MatrixMultiply", "M.MatrixMultiply", ["left", "right"],
     lambda i, p, a, dt: f"torch.matmul({i['left']}, {i['right']})", _matmul_propose, weight=1.5)

# ---- reductions -----------------------------------------------------------


def _reduce_args(g, t, extra=None):
    args = {}
    r = g.rng.random()
    if t.rank and r < 0.45:
        args["axis"] = g.rng.randrange(-t.rank, t.rank)
    elif t.rank >= 2 and r < 0.7:
        args["axis"] = tuple(sorted(g.rng.sample(range(t.rank), g.rng.randint(1, t.rank))))
    if g.rng.random() < 0.4:
        args["keepdim"] = g.rng.random() < 0.6
    return args


def _axes(a):
    ax = a.get("axis")
    return None if ax is None else [ax] if isinstance(ax, int) else list(ax)


def _reduce_propose(dom=()):
    def propose(g):
        t = g.float_in(dom=dom)
        return _reduce_args(g, t), {"input": t}
    return propose


def _reduce_kink(env, a, out, thr):
    return ties(env["input"], _axes(a), thr)


for _n, _kind, _kink, _dom in (("Sum", "sum", None, ()), ("Mean", "mean", None, ()),
                               ("Max", "max", _reduce_kink, ()), ("Min", "min", _reduce_kink, ()),
                               ("Prod", "prod", None, ())):
    spec(_n, f"M.{_n}", ["input"],
         (lambda k: lambda i, p, a, dt:
          f"ref_reduce({k!r}, {i['input']}, {_axes(a)!r}, {a.get('keepdim', False)!r})")(_kind),
         _reduce_propose(_dom), kink=_kink,
         dom=lambda a, i: set(i["input"].dom) & {"pos", "nonzero"})
SPECS["Sum"].dom = lambda a, i: set(i["input"].dom) & {"pos"}
SPECS["Mean"].dom = lambda a, i: set(i["input"].dom) & {"pos", "prob"}
SPECS["Max"].dom = SPECS["Min"].dom = lambda a, i: set(i["input"].dom) & {"pos", "prob"}


def _var_propose(g):
    t = g.float_in()
    args = _reduce_args(g, t)
    if g.rng.random() < 0.6:
        args["correction"] = g.rng.choice([0.0, 1.0, 0.5])
    return args, {"input": t}


spec("Variance", "M.Variance", ["input"],
     lambda i, p, a, dt: f"ref_variance({i['input']}, {_axes(a)!r}, {a.get('keepdim', False)!r}, "
                         f"{a.get('correction', 0.0)!r})", _var_propose)

# ---- shapes ---------------------------------------------------------------


def _transpose_propose(g):
    t = g.float_in()
    if g.rng.random() < 0.3:
        return {}, {"input": t}
    perm = list(range(t.rank))
    g.rng.shuffle(perm)
    if t.rank and g.rng.random() < 0.2:
        perm = [p - t.rank if g.rng.random() < 0.5 else p for p in perm]
    return {"axes": tuple(perm)}, {"input": t}


spec("Transpose", "M.Transpose", ["input"],
     lambda i, p, a, dt: (f"{i['input']}.permute({tuple(x % len(a['axes']) for x in a['axes'])!r})"
                          if "axes" in a else
                          f"{i['input']}.permute(tuple(reversed(range({i['input']}.dim()))))"),
     _transpose_propose, dom=_dom_same({"pos", "prob", "nonzero", "sign", "intval"}))


def _factor(g, n, rank):
    dims = []
    for _ in range(rank - 1):
        divs = [d for d in range(1, n + 1) if n % d == 0] if n else [0, 1, 2]
        d = g.rng.choice(divs)
        dims.append(d)
        n = n // d if d else n
    dims.append(n)
    g.rng.shuffle(dims)
    return dims


def _reshape_propose(g):
    t = g.float_in()
    if g.dynamic and t.bdim == 0:
        rest = int(np.prod(t.shape[1:]))
        dims = [-1] + _factor(g, rest, g.rng.randint(1, 3)) if t.rank > 1 else [-1]
        return {"shape": tuple(dims)}, {"input": t}
    n = int(np.prod(t.shape))
    dims = _factor(g, n, rand_rank(g.rng, 0, 4)) if n or g.rng.random() < 0.5 else []
    if n == 0 and not dims:
        dims = [0]
    if dims and n and g.rng.random() < 0.5:
        dims[g.rng.randrange(len(dims))] = -1
    if dims and n and g.rng.random() < 0.1:
        dims[dims.index(-1) if -1 in dims else 0] = None
    return {"shape": tuple(dims)}, {"input": t}


spec("Reshape", "M.Reshape", ["input"],
     lambda i, p, a, dt: f"{i['input']}.reshape({tuple(-1 if d is None else d for d in a['shape'])!r})",
     _reshape_propose, dom=_dom_same({"pos", "prob", "nonzero", "sign", "intval"}))


def _flatten_propose(g):
    t = g.float_in(lo=1)
    args = {}
    if g.rng.random() < 0.7:
        s = g.rng.randrange(0, t.rank)
        e = g.rng.randrange(s, t.rank)
        if g.rng.random() < 0.3:
            s -= t.rank
        if g.rng.random() < 0.5:
            e -= t.rank
        args = {"start_dim": s, "end_dim": e}
        if g.rng.random() < 0.3:
            del args["end_dim"]
    return args, {"input": t}


spec("Flatten", "M.Flatten", ["input"],
     lambda i, p, a, dt: f"torch.flatten({i['input']}, {a.get('start_dim', 0)}, {a.get('end_dim', -1)})",
     _flatten_propose, dom=_dom_same({"pos", "prob", "nonzero", "sign", "intval"}))


def _squeeze_propose(g):
    t = g.float_in(pred=lambda u: 1 in u.shape) if g.rng.random() < 0.8 else g.float_in()
    # A limitation: in a dynamic graph a batch-sized axis is never squeezed,
    # nor is every size-1 axis (Squeeze() without axes): a size the compiled
    # code has as dynamic (any size computed from the batch, even one the
    # batches tried leave at 1) that is 1 at run time would change the rank
    # the code was compiled for, which is a clear error, not a wrong answer.
    dynamic_axis = t.bdim if g.dynamic else None
    ones = [i for i, s in enumerate(t.shape) if s == 1 and i != dynamic_axis]
    if not ones or g.rng.random() < 0.3:
        if g.dynamic:
            raise Reject("Squeeze() without axes in a dynamic graph")
        return {}, {"input": t}
    ax = g.rng.sample(ones, g.rng.randint(1, len(ones)))
    ax = [a - t.rank if g.rng.random() < 0.3 else a for a in ax]
    return {"axis": ax[0] if len(ax) == 1 and g.rng.random() < 0.5 else tuple(ax)}, {"input": t}


def _squeeze_ref(i, p, a, dt):
    ax = a.get("axis")
    if ax is None:
        return f"{i['input']}.squeeze()"
    return f"{i['input']}.squeeze({ax!r})"


spec("Squeeze", "M.Squeeze", ["input"], _squeeze_ref, _squeeze_propose,
     dom=_dom_same({"pos", "prob", "nonzero", "sign", "intval"}))


def _unsqueeze_propose(g):
    t = g.float_in(hi=3)
    return ({} if g.rng.random() < 0.2 else {"axis": g.rng.randint(-t.rank - 1, t.rank)},
            {"input": t})


spec("Unsqueeze", "M.Unsqueeze", ["input"],
     lambda i, p, a, dt: f"{i['input']}.unsqueeze({a.get('axis', 0)})", _unsqueeze_propose,
     dom=_dom_same({"pos", "prob", "nonzero", "sign", "intval"}))


def _broadcast_propose(g):
    t = g.float_in(hi=3)
    s = [rand_size(g.rng) if d == 1 and g.rng.random() < 0.7 else d for d in t.shape]
    s = [rand_size(g.rng) for _ in range(g.rng.randint(0, 2))] + s
    return {"shape": tuple(s)}, {"input": t}


spec("BroadcastTo", "M.BroadcastTo", ["input"],
     lambda i, p, a, dt: f"torch.broadcast_to({i['input']}, {tuple(a['shape'])!r})",
     _broadcast_propose, dom=_dom_same({"pos", "prob", "nonzero", "sign", "intval"}))


def _slice_propose(g):
    t = g.float_in(lo=1)
    axis = g.rng.randrange(-t.rank, t.rank)
    if g.dynamic and t.bdim is not None and axis % t.rank == t.bdim:
        axis = (axis + 1) % t.rank if t.rank > 1 else axis
    n = t.shape[axis]
    pick = lambda choices: g.rng.choice(choices)  # noqa: E731
    args = {"axis": axis}
    if g.rng.random() < 0.8:
        args["start"] = pick([None, 0, 1, 2, -1, -2, n, n + 3, -n - 2])
    if g.rng.random() < 0.8:
        args["stop"] = pick([None, 1, 2, n, n - 1, -1, -3, n + 5, 0])
    if g.rng.random() < 0.6:
        args["step"] = pick([None, 1, 2, 3])
    return args, {"input": t}


spec("Slice", "M.Slice", ["input"],
     lambda i, p, a, dt: f"ref_slice({i['input']}, {a.get('start')!r}, {a.get('stop')!r}, "
                         f"{a.get('step')!r}, {a['axis']})", _slice_propose,
     dom=_dom_same({"pos", "prob", "nonzero", "sign", "intval"}))


def _concat_propose(g):
    n = g.rng.choice([1, 2, 2, 3])
    first = g.float_in(lo=1)
    axis = g.rng.randrange(-first.rank, first.rank)
    if g.dynamic and first.bdim is not None and axis % first.rank == first.bdim and first.rank > 1:
        axis = (axis + 1) % first.rank
    ax = axis % first.rank
    ins = [first]
    for _ in range(n - 1):
        def ok(u):
            return u.rank == first.rank and all(u.shape[d] == first.shape[d]
                                                for d in range(first.rank) if d != ax)
        u = g.pick([c for c in g.candidates("f", (), first.rank, first.rank, ok)], 0.5)
        if u is None:
            s = list(first.shape)
            s[ax] = g.rng.choice([0, 1, 2, 3])
            u = g.fresh(s, g.rng.choice(["normal", "param"]),
                        bdim=first.bdim if first.bdim != ax else None)
        ins.append(u)
    g.rng.shuffle(ins)
    return {"n": n, "axis": axis}, {f"input{i + 1}": t for i, t in enumerate(ins)}


spec("Concat", "M.Concat", lambda a: [f"input{i + 1}" for i in range(a["n"])],
     lambda i, p, a, dt: f"torch.cat([{', '.join(i[f'input{k + 1}'] for k in range(a['n']))}], "
                         f"{a['axis']})", _concat_propose)


def _where_propose(g):
    a = g.float_in()
    b = g.partner(a)
    c = [u for u in g.candidates("b") if _bcast_ok(u.shape, torch.broadcast_shapes(a.shape, b.shape))]
    cond = g.pick(c, 0.4)
    if cond is None:
        fake = g.partner(T("?", a.shape, "f", set(), a.bdim, {}), fresh_p=1.0)
        g.tentative.pop()
        g.counter -= 1
        cond = g.fresh(fake.shape, "bool", bdim=fake.bdim)
    return {}, {"cond": cond, "input1": a, "input2": b}


spec("Where", "M.Where", ["cond", "input1", "input2"],
     lambda i, p, a, dt: f"torch.where({i['cond']}, {i['input1']}, {i['input2']})", _where_propose)


def _permute_tensor_propose(g):
    # Not along a batch axis: the indices would be out of range at batch 1.
    # A limitation: above rank 2, rows are gathered from a [rows, width]
    # view of the input, whose width must be static (a clear error).
    t = g.float_in(lo=1, pred=lambda u: u.shape[0] > 0 and u.bdim != 0 and
                   (u.rank <= 2 or u.bdim is None))
    if t.bdim == 0 or (t.rank > 2 and t.bdim is not None):
        raise Reject("PermuteTensor along the batch axis or of a dynamic row width")
    k = g.rng.choice([0, 1, 2, t.shape[0], t.shape[0] + 2])
    idx = g.fresh([k], f"int:0:{t.shape[0]}", bdim=None)
    return {}, {"input": t, "indices": idx}


spec("PermuteTensor", "M.PermuteTensor", ["input", "indices"],
     lambda i, p, a, dt: f"{i['input']}[{i['indices']}]", _permute_tensor_propose, weight=0.5)


def _embedding_propose(g):
    num, dim = g.rng.randint(1, 6), g.rng.randint(1, 5)
    idx = g.fresh(g.rand_shape(1, 3), f"int:0:{num}")
    args = {"num_embeddings": num, "dim": dim}
    if g.rng.random() < 0.3:
        args = {"_num": num, "_dim": dim}
    return args, {"input": idx}


def _embedding_params(a, s):
    return {"weight": ((a.get("num_embeddings", a.get("_num")), a.get("dim", a.get("_dim"))),
                       "normal")}


spec("Embedding", "M.Embedding", ["input"],
     lambda i, p, a, dt: f"F.embedding({i['input']}, {p['weight']})", _embedding_propose,
     params=_embedding_params, bind_params=True, weight=0.5)

# ---- losses ---------------------------------------------------------------


def _loss_propose(pdom=(), tdom=(), tgen=None, pgen=None):
    def propose(g):
        p = g.float_in(dom=pdom, gen=pgen) if pgen else g.float_in(dom=pdom)
        if g.rng.random() < 0.7:
            # Same shape: from the pool or fresh.
            c = [u for u in g.candidates("f", tdom) if u.shape == p.shape and u is not p]
            t = g.pick(c, 0.6) or g.fresh(p.shape, tgen or _gen_for(tdom), bdim=p.bdim)
        else:
            t = g.partner(p, gen=tgen or _gen_for(tdom), dom=tdom)
        return {}, {"input": p, "target": t}
    return propose


def _gen_for(dom):
    dom = set(dom)
    return ("prob" if "prob" in dom else "pos" if "pos" in dom else "sign" if "sign" in dom
            else "normal")


def _kink_diff(env, a, out, thr):
    return near(env["input"] - env["target"], 0.0, thr,
                scale=max(_scale(env["input"]), _scale(env["target"])))


def _kink_hinge(env, a, out, thr):
    return near(1 - env["input"] * env["target"], 0.0, thr)


spec("SquaredError", "M.SquaredError", ["input", "target"],
     lambda i, p, a, dt: f"({i['input']} - {i['target']}) ** 2", _loss_propose())
spec("AbsoluteError", "M.AbsoluteError", ["input", "target"],
     lambda i, p, a, dt: f"({i['input']} - {i['target']}).abs()", _loss_propose(), kink=_kink_diff)
spec("HingeLoss", "M.HingeLoss", ["input", "target"],
     lambda i, p, a, dt: f"torch.clamp(1 - {i['input']} * {i['target']}, min=0)",
     _loss_propose(tdom=("sign",)), kink=_kink_hinge)
spec("QuadHingeLoss", "M.QuadHingeLoss", ["input", "target"],
     lambda i, p, a, dt: f"torch.clamp(1 - {i['input']} * {i['target']}, min=0) ** 2",
     _loss_propose(tdom=("sign",)))


def _quantile_propose(g):
    args, ins = _loss_propose()(g)
    return ({"quantile": g.rng.choice([0.1, 0.3, 0.5, 0.9])} if g.rng.random() < 0.8 else {}), ins


spec("QuantileLoss", "M.QuantileLoss", ["input", "target"],
     lambda i, p, a, dt: (lambda q, x, t: f"torch.maximum({q!r} * ({t} - {x}), ({q!r} - 1) * ({t} - {x}))")(
         a.get("quantile", 0.5), i["input"], i["target"]), _quantile_propose, kink=_kink_diff)
spec("KLDivergence", "M.KLDivergence", ["input", "target"],
     lambda i, p, a, dt: f"{i['target']} * ({i['target']}.log() - {i['input']}.log())",
     _loss_propose(("prob",), ("prob",)))


def _bce_propose(g):
    itype = g.rng.choice(["logits", "probs", None])
    args = {} if itype is None else {"input_type": itype}
    itype = itype or "logits"
    if itype == "probs" and g.rng.random() < 0.4:
        args["robust"] = True
    pd = ("prob",) if itype == "probs" else ()
    _, ins = _loss_propose(pd, ("prob",))(g)
    return args, ins


spec("BinaryCrossEntropy", "M.BinaryCrossEntropy", ["input", "target"],
     lambda i, p, a, dt: f"ref_binary_cross_entropy({i['input']}, {i['target']}, "
                         f"{a.get('input_type', 'logits')!r}, {a.get('robust', False)!r})",
     _bce_propose)


def _ce_propose(g):
    itype = g.rng.choice(["logits", "probs", "log_probs", None])
    args = {} if itype is None else {"input_type": itype}
    itype = itype or "logits"
    if itype == "probs" and g.rng.random() < 0.3:
        args["robust"] = True
    categorical = g.rng.random() < 0.7
    if not categorical:
        args["categorical"] = False
    if itype == "probs":
        x = g.float_in(dom=("prob",), lo=2, hi=4, pred=lambda u: u.shape[1] > 0)
    elif itype == "log_probs":
        x = g.float_in(lo=2, hi=4, pred=lambda u: u.shape[1] > 0, gen="normal")
    else:
        x = g.float_in(lo=2, hi=4, pred=lambda u: u.shape[1] > 0)
    if categorical:
        s = [d for j, d in enumerate(x.shape) if j != 1]
        b = None if x.bdim is None else (x.bdim if x.bdim == 0 else x.bdim - 1 if x.bdim > 1 else None)
        t = g.fresh(s, f"int:0:{x.shape[1]}", bdim=b)
    else:
        c = [u for u in g.candidates("f", ("prob",)) if u.shape == x.shape and u is not x]
        t = g.pick(c, 0.5) or g.fresh(x.shape, "prob", bdim=x.bdim)
    return args, {"input": x, "target": t}


spec("CrossEntropy", "M.CrossEntropy", ["input", "target"],
     lambda i, p, a, dt: f"ref_cross_entropy({i['input']}, {i['target']}, "
                         f"{a.get('input_type', 'logits')!r}, {a.get('robust', False)!r})",
     _ce_propose)

# ---- layers ---------------------------------------------------------------


def _linear_propose(g):
    x = g.float_in(lo=1, hi=3)
    args = {"dimension": g.rng.randint(1, 6)}
    if g.rng.random() < 0.3:
        args["use_bias"] = False
    return args, {"input": x}


def _linear_params(a, s):
    p = {"weight": ((a["dimension"], s["input"][-1]), "param")}
    if a.get("use_bias", True):
        p["bias"] = ((a["dimension"],), "param")
    return p


spec("Linear", "M.Linear", ["input"],
     lambda i, p, a, dt: f"F.linear({i['input']}, {p['weight']}, {p.get('bias')})",
     _linear_propose, params=_linear_params, weight=1.5)


def _conv_propose(spatial):
    def propose(g):
        groups = g.rng.choice([1, 1, 1, 2, 3])
        cin = groups * g.rng.randint(1, 2)
        cout = groups * g.rng.randint(1, 3)
        k = [g.rng.randint(1, 3) for _ in range(spatial)]
        kernel = k[0] if (spatial == 1 or k[0] == k[1]) and g.rng.random() < 0.7 else tuple(k)
        args = {"kernel_size": kernel, "out_channels": cout}
        if g.rng.random() < 0.5:
            args["stride"] = g.rng.choice([1, 2, 3])
        r = g.rng.random()
        if r < 0.2 and all(x % 2 for x in k):
            args["padding"] = "same"
        elif r < 0.3:
            args["padding"] = "valid"
        elif r < 0.6:
            args["padding"] = g.rng.choice([0, 1, 2])
        elif r < 0.8:
            args["padding"] = tuple(g.rng.choice([0, 1, 2]) for _ in range(spatial))
        else:
            args["padding"] = (tuple(g.rng.choice([0, 1, 2]) for _ in range(2)) if spatial == 1
                               else tuple(tuple(g.rng.choice([0, 1, 2]) for _ in range(2))
                                          for _ in range(spatial)))
        if g.rng.random() < 0.3:
            args["dilation"] = g.rng.choice([1, 2])
        if groups > 1:
            args["groups"] = groups
        if g.rng.random() < 0.25:
            args["use_bias"] = False
        def ok(u):
            # A limitation: convolutions need static spatial sizes (a dynamic
            # one is a clear compile-time error).
            return (u.rank == spatial + 2 and u.shape[1] == cin and
                    not (g.dynamic and u.bdim not in (None, 0)))
        x = g.pick(g.candidates("f", (), spatial + 2, spatial + 2, ok), 0.4)
        if x is None:
            shape = [g.rng.randint(1, 3), cin] + [g.rng.randint(1, 9) for _ in range(spatial)]
            x = g.fresh(shape, "normal")
        return args, {"input": x}
    return propose


def _pads(padding, kernel, spatial):
    k = list(kernel) if isinstance(kernel, (list, tuple)) else [kernel] * spatial
    if padding == "same":
        return [x // 2 for x in k for _ in range(2)]
    if padding == "valid":
        return [0] * (2 * spatial)
    if isinstance(padding, int):
        return [padding] * (2 * spatial)
    items = list(padding)
    if spatial == 1 and len(items) == 2 and all(isinstance(p, int) for p in items):
        return items
    out = []
    for p in items:
        out += list(p) if isinstance(p, (list, tuple)) else [p, p]
    return out


def _tup(v, n):
    return list(v) if isinstance(v, (list, tuple)) else [v] * n


def _conv_params(spatial):
    def params(a, s):
        cin = s["input"][1]
        groups = a.get("groups", 1)
        k = _tup(a["kernel_size"], spatial)
        p = {"weight": ((a["out_channels"], cin // groups, *k), "param")}
        if a.get("use_bias", True):
            p["bias"] = ((a["out_channels"],), "param")
        return p
    return params


def _conv_ref(spatial):
    def ref(i, p, a, dt):
        pads = _pads(a.get("padding", 0), a["kernel_size"], spatial)
        return (f"ref_conv({i['input']}, {p['weight']}, {p.get('bias')}, "
                f"{_tup(a.get('stride', 1), spatial)}, {pads}, "
                f"{_tup(a.get('dilation', 1), spatial)}, {a.get('groups', 1)})")
    return ref


spec("Convolution1D", "M.Convolution1D", ["input"], _conv_ref(1), _conv_propose(1),
     params=_conv_params(1))
spec("Convolution2D", "M.Convolution2D", ["input"], _conv_ref(2), _conv_propose(2),
     params=_conv_params(2))


def _pool_propose(spatial, avg=False):
    def propose(g):
        k = [g.rng.randint(1, 3) for _ in range(spatial)]
        args = {"kernel_size": k[0] if (spatial == 1 or k[0] == k[1]) and g.rng.random() < 0.7
                else tuple(k)}
        if g.rng.random() < 0.6:
            args["stride"] = g.rng.choice([1, 2, 3])
        r = g.rng.random()
        if r < 0.4:
            args["padding"] = g.rng.choice([0, 1])
        elif r < 0.55:
            args["padding"] = tuple(g.rng.choice([0, 1]) for _ in range(spatial))
        elif r < 0.7 and spatial == 2:
            args["padding"] = tuple(tuple(g.rng.choice([0, 1]) for _ in range(2))
                                    for _ in range(spatial))
        if g.rng.random() < 0.25:
            args["dilation"] = 2
        rank = spatial + 2 if g.rng.random() < 0.9 else spatial + 1
        x = g.pick(g.candidates("f", (), rank, rank), 0.4)
        if x is None:
            lead = ([g.rng.randint(1, 3), g.rng.randint(1, 3)] if rank == spatial + 2
                    else [g.rng.randint(1, 3)])
            x = g.fresh(lead + [g.rng.randint(1, 9) for _ in range(spatial)], "normal")
        return args, {"input": x}
    return propose


def _pool_ref(kind, spatial):
    def ref(i, p, a, dt):
        k = _tup(a["kernel_size"], spatial)
        s = k if a.get("stride") is None else _tup(a["stride"], spatial)
        pads = _pads(a.get("padding", 0), k, spatial)
        return (f"ref_pool({kind!r}, {i['input']}, {k}, {s}, {pads}, "
                f"{_tup(a.get('dilation', 1), spatial)})")
    return ref


def _pool_kink(spatial):
    def kink(env, a, out, thr):
        x = env["input"]
        k = _tup(a["kernel_size"], spatial)
        s = k if a.get("stride") is None else _tup(a["stride"], spatial)
        pads = _pads(a.get("padding", 0), k, spatial)
        d = _tup(a.get("dilation", 1), spatial)
        if x.dim() == spatial + 1:
            x = x.unsqueeze(0)
        if spatial == 1:
            x, k, s, d, pads = x.unsqueeze(2), [1] + k, [1] + s, [1] + d, [0, 0] + pads
        xp = R.ref_pad(x, pads, float("-inf"))
        if xp.numel() == 0:
            return False
        cols = F.unfold(xp, k, dilation=d, stride=s)
        n, ck, L = cols.shape
        cols = cols.reshape(n, -1, k[0] * k[1], L).transpose(2, 3).reshape(-1, k[0] * k[1])
        if cols.shape[1] < 2 or cols.shape[0] == 0:
            return False
        top = cols.topk(2, dim=1).values
        finite = torch.isfinite(top[:, 1])
        return bool(((top[:, 0] - top[:, 1]).abs()[finite] <= thr * max(_scale(env["input"]), 1.0)).any())
    return kink


spec("MaxPool1D", "M.MaxPool1D", ["input"], _pool_ref("max", 1), _pool_propose(1),
     kink=_pool_kink(1))
spec("MaxPool2D", "M.MaxPool2D", ["input"], _pool_ref("max", 2), _pool_propose(2),
     kink=_pool_kink(2))
spec("AvgPool2D", "M.AvgPool2D", ["input"], _pool_ref("avg", 2), _pool_propose(2, True))


def _layernorm_propose(g):
    x = g.float_in(lo=1, pred=lambda u: u.shape[-1] > 0)
    args = {}
    if g.rng.random() < 0.3:
        args["use_scale"] = False
    if g.rng.random() < 0.3:
        args["use_bias"] = False
    if g.rng.random() < 0.3:
        args["eps"] = g.rng.choice([1e-3, 1e-6])
    return args, {"input": x}


def _layernorm_params(a, s):
    d = s["input"][-1]
    p = {}
    if a.get("use_scale", True):
        p["weight"] = ((d,), "normal")
    if a.get("use_bias", True):
        p["bias"] = ((d,), "normal")
    return p


spec("LayerNorm", "M.LayerNorm", ["input"],
     lambda i, p, a, dt: f"ref_layer_norm({i['input']}, {p.get('weight')}, {p.get('bias')}, "
                         f"{a.get('eps', 1e-5)!r})",
     _layernorm_propose, params=_layernorm_params)



def _batchnorm_propose(g):
    x = g.float_in(lo=4, hi=4, pred=lambda u: u.shape[1] > 0) if g.rng.random() < 0.85 else \
        g.float_in(lo=2, hi=3, pred=lambda u: u.shape[1] > 0)
    args = {}
    if g.rng.random() < 0.6:
        args["num_features"] = x.shape[1]
    if g.rng.random() < 0.3:
        args["eps"] = 1e-3
    return args, {"input": x}


def _batchnorm_params(a, s):
    c = s["input"][1]
    return {"running_mean": ((c,), "normal"), "running_var": ((c,), "pos"),
            "weight": ((c,), "normal"), "bias": ((c,), "normal")}


# Inference batch norm written out: torch 1.13's batch_norm backward gets a
# permuted (non-contiguous) output gradient wrong (seed 2026 trial 44794: a
# Transpose after it; the bias gradient came back as another permutation's).
spec("BatchNorm2D", "M.BatchNorm2D", ["input"],
     lambda i, p, a, dt: (lambda c: f"(({i['input']} - {p['running_mean']}{c}) / "
                          f"torch.sqrt({p['running_var']}{c} + {a.get('eps', 1e-5)!r})"
                          f" * {p['weight']}{c} + {p['bias']}{c})")(
         f".reshape([-1] + [1] * ({i['input']}.dim() - 2))"),
     _batchnorm_propose, params=_batchnorm_params, consts=("running_mean", "running_var"),
     # Without num_features the parameters' size is not known: give it.
     bind_params=lambda a: a.get("num_features") is None)

ACTS = ["relu", "tanh", "sigmoid", None, "softplus", "gelu"]


def _mlp_propose(g):
    x = g.float_in(lo=2, hi=2)
    n = g.rng.randint(1, 3)
    return ({"activations": [g.rng.choice(ACTS) for _ in range(n)],
             "dimensions": [g.rng.randint(1, 5) for _ in range(n)]}, {"input": x})


def _mlp_params(a, s):
    p, prev = {}, s["input"][-1]
    for i, d in enumerate(a["dimensions"]):
        p[f"weight{i}"] = ((d, prev), "param")
        p[f"bias{i}"] = ((d,), "param")
        prev = d
    return p


spec("MLP", "M.MLP", ["input"],
     lambda i, p, a, dt: "ref_mlp({}, [{}], [{}], {!r})".format(
         i["input"], ", ".join(p[f"weight{k}"] for k in range(len(a["dimensions"]))),
         ", ".join(p[f"bias{k}"] for k in range(len(a["dimensions"]))), a["activations"]),
     _mlp_propose, params=_mlp_params, weight=0.7)


def _layer_propose(g):
    return ({"activation": g.rng.choice(["relu", "tanh", "sigmoid", "softplus"]),
             "dimension": g.rng.randint(1, 5)}, {"input": g.float_in(lo=2, hi=2)})


spec("Layer", "M.Layer", ["input"],
     lambda i, p, a, dt: f"ref_act({a['activation']!r}, F.linear({i['input']}, {p['weight']}, {p['bias']}))",
     _layer_propose, params=lambda a, s: {"weight": ((a["dimension"], s["input"][-1]), "param"),
                                           "bias": ((a["dimension"],), "param")}, weight=0.5)


def _rnn_propose(g):
    x = g.float_in(lo=2, hi=2)
    n = x.shape[0]
    hsize = g.rng.randint(1, 4)
    c = [u for u in g.candidates("f", (), 2, 2) if u.shape[0] == n and u is not x]
    h = g.pick(c, 0.5) or g.fresh([n, hsize], "normal", bdim=x.bdim)
    g._rnn_out = g.rng.randint(1, 4)
    return {}, {"input": x, "prev_hidden": h}


def _rnn_params(a, s):
    i, h = s["input"][1], s["prev_hidden"][1]
    o = 1 + (i + h) % 3
    return {"w_ih": ((h, i), "param"), "w_hh": ((h, h), "param"), "w_ho": ((o, h), "param"),
            "bias_h": ((h,), "param"), "bias_o": ((o,), "param")}


spec("RNNCell", "M.RNNCell", ["input", "prev_hidden"],
     lambda i, p, a, dt: f"ref_rnn_cell({i['input']}, {i['prev_hidden']}, {p['w_ih']}, "
                         f"{p['w_hh']}, {p['w_ho']}, {p['bias_h']}, {p['bias_o']})[::-1]",
     _rnn_propose, outs=("output", "hidden"), params=_rnn_params, bind_params=True, weight=0.5)

spec("LogisticRegression", "M.LogisticRegression", ["input"],
     lambda i, p, a, dt: f"(lambda o: (o, torch.sigmoid(o)))(F.linear({i['input']}, {p['weight']}, {p['bias']}))",
     lambda g: ({}, {"input": g.float_in(lo=2, hi=2)}), outs=("output", "probs_output"),
     params=lambda a, s: {"weight": ((1, s["input"][-1]), "param"), "bias": ((1,), "param")},
     weight=0.4)


def _svm_kink(env, a, out, thr):
    return near(out["output"], 0.0, thr)


spec("LinearSVM", "M.LinearSVM", ["input"],
     lambda i, p, a, dt: f"(lambda o: (o, torch.sign(o)))(F.linear({i['input']}, {p['weight']}, {p['bias']}))",
     lambda g: ({}, {"input": g.float_in(lo=2, hi=2)}), outs=("output", "decision_output"),
     params=lambda a, s: {"weight": ((1, s["input"][-1]), "param"), "bias": ((1,), "param")},
     kink=_svm_kink, weight=0.4)


def _polyreg_propose(g):
    return ({"degree": g.rng.choice([1, 2, 3]), "dimension": g.rng.randint(1, 3)},
            {"input": g.float_in(lo=2, hi=2, pred=lambda u: u.shape[1] <= 3)})


def _polyreg_params(a, s):
    d = s["input"][1]
    f = math.comb(d + a["degree"], a["degree"]) - 1
    return {"weight": ((a["dimension"], f), "param"), "bias": ((a["dimension"],), "param")}


spec("PolynomialRegression", "M.PolynomialRegression", ["input"],
     lambda i, p, a, dt: f"F.linear(ref_polynomial_features({i['input']}, {a['degree']}), "
                         f"{p['weight']}, {p['bias']})",
     _polyreg_propose, params=_polyreg_params, weight=0.4)


def _pairs_propose(g, extra):
    x1 = g.float_in(lo=2, hi=2)
    d = x1.shape[1]
    c = [u for u in g.candidates("f", (), 2, 2) if u.shape[1] == d and u is not x1]
    x2 = g.pick(c, 0.5) or g.fresh([g.rng.randint(1, 4), d], "normal", bdim=None)
    ins = {"input1": x1, "input2": x2}
    for name, gen in extra:
        ins[name] = g.fresh([1] if g.rng.random() < 0.7 else [], gen, bdim=None)
    return {}, ins


spec("RBFKernel", "M.RBFKernel", ["input1", "input2", "l_scale", "sigma"],
     lambda i, p, a, dt: f"ref_rbf_kernel({i['input1']}, {i['input2']}, {i['l_scale']}, {i['sigma']})",
     lambda g: _pairs_propose(g, [("l_scale", "pos"), ("sigma", "pos")]), weight=0.4)


def _polyk_kink(env, a, out, thr):
    return near(env["input1"] @ env["input2"].T + env["poly_coef"], 0.0, thr)


spec("PolynomialKernel", "M.PolynomialKernel", ["input1", "input2", "poly_coef", "degree"],
     lambda i, p, a, dt: f"ref_polynomial_kernel({i['input1']}, {i['input2']}, {i['poly_coef']}, "
                         f"{i['degree']})",
     lambda g: _pairs_propose(g, [("poly_coef", "pos"), ("degree", "pos")]), kink=_polyk_kink,
     weight=0.4)


def _ksvm_propose(g):
    _, ins = _pairs_propose(g, [("l_scale", "pos"), ("sigma", "pos")])
    g._ksvm_dim = g.rng.randint(1, 3)
    return {"kernel": "RBFKernel", "_dim": g._ksvm_dim}, ins


spec("KernelizedSVM", "M.KernelizedSVM", ["input1", "input2", "l_scale", "sigma"],
     lambda i, p, a, dt: f"(lambda k: (F.linear(k, {p['weight']}, {p['bias']}), k))("
                         f"ref_rbf_kernel({i['input1']}, {i['input2']}, {i['l_scale']}, {i['sigma']}))",
     _ksvm_propose, outs=("output", "kernel"),
     params=lambda a, s: {"weight": ((a["_dim"], s["input2"][0]), "param"),
                          "bias": ((a["_dim"],), "param")}, bind_params=True, weight=0.3)


def _qf_propose(g):
    n = g.rng.randint(1, 5)
    c = [u for u in g.candidates("f", (), 2, 2) if u.shape[0] == 1]
    x = g.pick(c, 0.5) or g.fresh([1, n], "normal", bdim=None)
    n = x.shape[1]
    k = g.fresh([n, n], "normal", bdim=None)
    return {}, {"input": x, "kernel": k}


spec("QuadraticFormRegularizer", "M.QuadraticFormRegularizer", ["input", "kernel"],
     lambda i, p, a, dt: f"0.5 * ({i['input']} @ {i['kernel']} @ {i['input']}.T)", _qf_propose,
     weight=0.3)


def _normmod_kink(env, a, out, thr):
    x = env["input"]
    s = (x - 1.0) / 8.0
    inner = (s - torch.floor(s)) - 0.5
    return near_int(s, thr * 10) or near(inner, 0.0, thr * 10, scale=1.0)


spec("NormModifier", "M.NormModifier", ["input"], lambda i, p, a, dt: f"ref_norm_modifier({i['input']})",
     lambda g: ({}, {"input": g.float_in(gen=g.rng.choice(["normal", "pos"]))
                     if g.rng.random() < 0.5 else g.float_in()}),
     kink=_normmod_kink, weight=0.3)


def _dist_propose(g):
    left = g.float_in(lo=2, hi=2)
    d = left.shape[1]
    right = g.fresh([g.rng.randint(1, 4), d], "normal", bdim=None)
    norm = g.fresh([1] if g.rng.random() < 0.5 else [], "pos", bdim=None)
    return {}, {"left": left, "right": right, "norm": norm}


def _dist_kink(env, a, out, thr):
    return near(env["left"][:, None, :] - env["right"][None, :, :], 0.0, thr)


spec("DistanceMatrix", "M.DistanceMatrix", ["left", "right", "norm"],
     lambda i, p, a, dt: f"ref_distance_matrix({i['left']}, {i['right']}, {i['norm']})",
     _dist_propose, kink=_dist_kink, weight=0.3)


# --------------------------------------------------------------------------
# Graphs.

def choose_spec(rng, names=None):
    names = names or list(SPECS)
    return SPECS[rng.choices(names, [SPECS[n].weight for n in names])[0]]


def generate(seed: int, index: int, dtype_mode: str = "both", ops=None,
             workarounds: bool = True) -> dict:
    """The graph of trial (seed, index)."""
    rng = random.Random(f"{seed}:{index}")
    dtype = rng.choice(["f32", "f64"]) if dtype_mode == "both" else dtype_mode
    dynamic = rng.random() < 0.3
    big = rng.random() < 0.04
    threads = rng.choices([None, 1, 2], [0.5, 0.3, 0.2])[0]
    for attempt in range(40):
        g = Gen(random.Random(f"{seed}:{index}:{attempt}"), dtype, dynamic, big, workarounds)
        n_nodes = g.rng.choice([1, 1, 2, 2, 3, 3, 4, 5, 6])
        ok = True
        for _ in range(n_nodes):
            for _try in range(60):
                spec_ = choose_spec(g.rng, ops)
                g.tentative = []
                saved_counter = g.counter
                try:
                    args, ins = spec_.propose(g)
                    g.try_node(spec_, args, ins)
                    break
                except Reject:
                    g.tentative = []
                    g.counter = saved_counter
                    continue
            else:
                ok = False
                break
        if not ok or not g.nodes:
            continue
        graph = finish(g, seed, index, threads)
        if graph is not None:
            return graph
    raise RuntimeError(f"could not generate a graph for {seed}:{index}")


def finish(g: Gen, seed, index, threads):
    consumed = set()
    for n in g.nodes:
        consumed.update(n["ins"].values())
    # Inputs a proposal made and then did not use.
    g.inputs = [r for r in g.inputs if r["name"] in consumed]
    produced = [t for t in g.pool if t.node is not None]
    outputs = []
    for t in produced:
        if t.name not in consumed:
            outputs.append(t.name)
        elif g.rng.random() < 0.12:
            outputs.append(t.name)
            g.nodes[t.node]["expose"] = True
            g.nodes[t.node].setdefault("exposed", []).append(t.name)
    by_name = {t.name: t for t in g.pool}
    float_outs = [o for o in outputs if by_name[o].dtype == "f"]
    seeded = [o for o in float_outs if g.rng.random() < 0.85]
    if float_outs and not seeded:
        seeded = [g.rng.choice(float_outs)]
    trainable = [r["name"] for r in g.inputs if r["dtype"] == "f" and g.rng.random() < 0.85]
    # Chains: `+=` where the node's canonical input is the previous node's output.
    for k, n in enumerate(g.nodes):
        if k and g.rng.random() < 0.5:
            n["style"] = "+="
    batches = [None]
    if g.dynamic:
        extra = g.rng.choice([0, 2, 3, 4, 7])
        batches = [g.B0, 1] + ([extra] if extra not in (g.B0, 1) else [])
    graph = {"seed": seed, "index": index, "dtype": g.dtype, "dynamic": g.dynamic,
             "batches": batches, "threads": threads, "inputs": g.inputs, "nodes": g.nodes,
             "outputs": outputs, "seeded": seeded, "trainable": trainable,
             "shapes": {t.name: list(t.shape) for t in g.pool},
             "bdims": {t.name: t.bdim for t in g.pool},
             "doms": {t.name: sorted(t.dom) for t in g.pool},
             "dtypes": {t.name: t.dtype for t in g.pool}}
    return graph
