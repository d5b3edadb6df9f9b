# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Torch references for the differential fuzzer (fuzz/diff_fuzz.py).

Each helper is self-contained (torch, F and math only): a reproducer copies
the source of the helpers it uses, so that it runs without this file. They
keep the dtype of their inputs: the fuzzer runs them in float64 for the
reference and in float32 to measure how well conditioned a trial is."""

import math

import torch

F = torch.nn.functional


def ref_reduce(kind, x, axes, keepdim):
    """Mithril's reductions: axes None reduces all axes."""
    dims = list(range(x.dim())) if axes is None else [a % max(x.dim(), 1) for a in axes]
    if kind == "prod":
        for d in sorted(set(dims), reverse=True):
            x = x.prod(d, keepdim=keepdim)
        return x
    if not dims:
        return x.clone()
    if kind == "sum":
        return x.sum(dim=dims, keepdim=keepdim)
    if kind == "mean":
        return x.mean(dim=dims, keepdim=keepdim)
    if kind == "max":
        return x.amax(dim=dims, keepdim=keepdim)
    if kind == "min":
        return x.amin(dim=dims, keepdim=keepdim)
    raise ValueError(kind)


def ref_variance(x, axes, keepdim, correction):
    dims = list(range(x.dim())) if axes is None else [a % max(x.dim(), 1) for a in axes]
    n = math.prod(x.shape[d] for d in dims) if x.dim() else 1
    if not dims:
        return (x - x) / (n - correction)
    m = x.mean(dim=dims, keepdim=True)
    return ((x - m) ** 2).sum(dim=dims, keepdim=keepdim) / (n - correction)


def ref_arg(kind, x, axis, keepdim):
    fn = torch.argmax if kind == "max" else torch.argmin
    if axis is None:
        return fn(x.reshape(-1))
    return fn(x, dim=axis, keepdim=keepdim)


def ref_slice(x, start, stop, step, axis):
    index = [slice(None)] * x.dim()
    index[axis] = slice(start, stop, step)
    return x[tuple(index)]


def ref_robust_log(x, t=None):
    """log|x| above the threshold, its tangent at t below."""
    t = torch.finfo(x.dtype).tiny if t is None else t
    a = x.abs()
    return torch.where(a >= t, torch.log(torch.where(a >= t, a, 1.0)), math.log(t) + a / t - 1)


def ref_robust_sqrt(x, t=None):
    t = torch.finfo(x.dtype).tiny if t is None else t
    a = x.abs()
    return torch.where(a >= t, torch.sqrt(torch.where(a >= t, a, 1.0)), a / math.sqrt(t))


def ref_stable_reciprocal(x, t):
    s = torch.where(x < 0, -1.0, 1.0).to(x.dtype)
    big = x.abs() >= t
    return torch.where(big, 1.0 / torch.where(big, x, 1.0), 2 * s / t - x / (t * t))


def ref_robust_power(b, e, t=None):
    """|b| ** e, and |b| / t where |b| < t and e < 1 - log(t) / log|b|."""
    t = torch.finfo(b.dtype).tiny if t is None else t
    a = b.abs()
    small = (a < t) & (a > 0)
    safe = torch.where(small, a, 0.5)
    cond = (a == 0) | (small & (e < 1 - math.log(t) / torch.log(safe)))
    return torch.where(cond, a / t, torch.where(cond, 1.0, a) ** e)


def ref_polynomial_features(x, degree):
    """The monomials of degree 1..degree of the columns of [N, d] x, in
    scikit-learn's order (combinations with replacement of [1, x0, ...])."""
    import itertools
    ones = torch.ones_like(x[:, :1])
    cols = [ones] + [x[:, i:i + 1] for i in range(x.shape[1])]
    out = []
    for combo in itertools.combinations_with_replacement(range(len(cols)), degree):
        if all(c == 0 for c in combo):
            continue
        term = cols[combo[0]]
        for c in combo[1:]:
            term = term * cols[c]
        out.append(term)
    return torch.cat(out, 1) if out else x[:, :0]


def ref_eye_like(x):
    return torch.eye(x.shape[0], x.shape[1], dtype=x.dtype)


def ref_floor_divide(a, b):
    # floor has a zero derivative in torch, as floor_divide has in mithril.
    return torch.floor(a / b)


def ref_pad(x, pads, value=0.0):
    """pads: [before, after] per spatial axis of x's trailing axes, first axis first."""
    torch_pads = []
    for i in reversed(range(len(pads) // 2)):
        torch_pads += [pads[2 * i], pads[2 * i + 1]]
    return F.pad(x, torch_pads, value=value)


def ref_conv(x, w, b, stride, pads, dilation, groups):
    xp = ref_pad(x, pads)
    fn = F.conv1d if w.dim() == 3 else F.conv2d
    return fn(xp, w, b, stride, 0, dilation, groups)


def ref_pool(kind, x, kernel, stride, pads, dilation):
    """Max pooling pads with -inf, average pooling counts the padding as zeros."""
    spatial = len(kernel)
    unbatched = x.dim() == spatial + 1
    if unbatched:
        x = x.unsqueeze(0)
    if spatial == 1:
        x = x.unsqueeze(2)
        kernel, stride, dilation, pads = [1] + kernel, [1] + stride, [1] + dilation, [0, 0] + pads
    xp = ref_pad(x, pads, float("-inf") if kind == "max" else 0.0)
    n, c, h, w = xp.shape
    oh = (h - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    ow = (w - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1
    cols = F.unfold(xp, kernel, dilation=dilation, stride=stride)
    cols = cols.reshape(n, c, kernel[0] * kernel[1], oh, ow)
    y = cols.amax(2) if kind == "max" else cols.mean(2)
    if spatial == 1:
        y = y.squeeze(2)
    return y.squeeze(0) if unbatched else y


def ref_layer_norm(x, w, b, eps):
    return F.layer_norm(x, (x.shape[-1],), w, b, eps)


def ref_cross_entropy(x, t, input_type, robust):
    if input_type == "logits":
        logp = torch.log_softmax(x, 1)
    elif input_type == "log_probs":
        logp = x
    else:
        logp = ref_robust_log(x) if robust else torch.log(x)
    if t.dtype == torch.int64:
        return -logp.gather(1, t.unsqueeze(1)).squeeze(1)
    return -(t * logp).sum(1)


def ref_binary_cross_entropy(p, t, input_type, robust):
    if input_type == "logits":
        # F.binary_cross_entropy_with_logits, with numpy broadcasting.
        # log(1 + e^p) exactly: F.softplus is linear above its threshold of
        # 20, so its gradient there is 1 where sigmoid(p) is 1 - 2e-9, past
        # the float64 tolerance (seed 4242, trial 732).
        return torch.logaddexp(torch.zeros_like(p), p) - p * t
    log = ref_robust_log if robust else torch.log
    return -(t * log(p) + (1 - t) * log(1 - p))


def ref_act(name, x):
    """The activations MLP and Layer take by name."""
    if name is None:
        return x
    return {"relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid,
            "softplus": F.softplus, "gelu": F.gelu, "leakyrelu": lambda v: F.leaky_relu(v, 0.01),
            "sine": torch.sin, "absolute": torch.abs}[name.lower()](x)


def ref_mlp(x, weights, biases, activations):
    for w, b, a in zip(weights, biases, activations):
        x = ref_act(a, F.linear(x, w, b))
    return x


def ref_rnn_cell(x, h, w_ih, w_hh, w_ho, bias_h, bias_o):
    # Mithril's cell advances the first N rows of the state (N: x's rows).
    hidden = torch.tanh(x @ w_ih.T + h[:x.shape[0]] @ w_hh.T + bias_h)
    return hidden, hidden @ w_ho.T + bias_o


def ref_rbf_kernel(x1, x2, l_scale, sigma):
    d = ((x1[:, None, :] - x2[None, :, :]) ** 2).sum(2)
    return l_scale * l_scale * torch.exp(d * -0.5 / sigma ** 2)


def ref_polynomial_kernel(x1, x2, coef, degree):
    return (x1 @ x2.T + coef).abs() ** degree


def ref_distance_matrix(left, right, norm):
    return ((left[:, None, :] - right[None, :, :]).abs() ** norm).sum(2)


def ref_norm_modifier(x):
    shifted = x - 1.0
    wrapped = shifted - torch.floor(shifted / 8.0) * 8.0
    tri = 1.0 - (wrapped / 8.0 - 0.5).abs() * 2.0
    return tri * 4.0 + 1.0

