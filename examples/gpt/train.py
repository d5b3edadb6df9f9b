# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Trains the small GPT of model.py on a character-level text, on the CPU.

    PYTHONPATH=python PATH=build/bin:$PATH python3 examples/gpt/train.py [--steps 300] [--torch]

Builds the model with Mithril's API, compiles it (ml.compile, then the
training step, forward + backward + Adam in one native function, at the
first train_step), trains on random windows of lighthouse.txt, prints the
loss, the compile times and the training throughput, and ends with a short
greedy sample. --torch trains the same model in torch from the same initial
parameters on the same batches, checks that the first losses agree, and
prints both side by side.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import sys
import time

import numpy as np

import mithril as ml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import create_gpt, create_gpt_train_model  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def host_cpu() -> str:
    """The CPU's model name from /proc/cpuinfo, and the logical CPU count."""
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{name} ({os.cpu_count()} logical CPUs)"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=300, help="training steps (default 300)")
    p.add_argument("--torch", action="store_true",
                   help="also train the same model in torch, side by side")
    p.add_argument("--text", default=os.path.join(HERE, "lighthouse.txt"))
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--dims", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--block", type=int, default=32, help="context length (fixed at build time)")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--print-every", type=int, default=25)
    p.add_argument("--sample", type=int, default=200, help="characters of greedy sample")
    p.add_argument("--threads", type=int, default=None,
                   help="CPU threads for both (default: one per logical CPU)")
    return p.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    threads = args.threads or os.cpu_count() or 1
    print(f"host CPU: {host_cpu()}; {threads} thread(s)")

    # Data: characters -> ids; 90% to train on, the rest to validate.
    text = open(args.text, encoding="utf-8").read()
    chars = sorted(set(text))
    vocab = len(chars)
    stoi = {c: i for i, c in enumerate(chars)}
    data = np.array([stoi[c] for c in text], dtype=np.int64)
    split = int(0.9 * len(data))
    train_ids, val_ids = data[:split], data[split:]
    B, T = args.batch, args.block
    print(f"text: {os.path.basename(args.text)}, {len(text)} characters, vocabulary {vocab}; "
          f"GPT: {args.layers} layers, d_model {args.dims}, {args.heads} heads, "
          f"block {T}, batch {B}, float32, Adam lr {args.lr}")

    rng = np.random.default_rng(args.seed)

    def batch(ids):
        starts = rng.integers(0, len(ids) - T - 1, B)
        x = np.stack([ids[s:s + T] for s in starts])
        y = np.stack([ids[s + 1:s + T + 1] for s in starts]).reshape(-1)
        return {"input": x, "target": y}

    batches = [batch(train_ids) for _ in range(args.steps)]
    val_batches = [batch(val_ids) for _ in range(4)]

    config = dict(bias=True, block_size=T, dims=args.dims, num_heads=args.heads,
                  num_layers=args.layers, vocab_size=vocab)
    backend = ml.MlirBackend(dtype=ml.float32, num_threads=threads)
    t0 = time.perf_counter()
    train_model = create_gpt_train_model(create_gpt(**config), vocab)
    t1 = time.perf_counter()
    pm = ml.compile(train_model, backend, shapes={"input": [B, T], "target": [B * T]})
    t2 = time.perf_counter()
    params = pm.randomize_params(seed=args.seed)
    initial = {k: v.copy() for k, v in params.items()}
    n_params = sum(v.size for v in params.values())
    print(f"built the logical model in {t1 - t0:.2f} s; ml.compile (forward) {t2 - t1:.2f} s; "
          f"{len(params)} parameter arrays, {n_params} parameters")

    def val_loss(evaluate):
        return float(np.mean([evaluate(b) for b in val_batches]))

    ours_val = lambda b: float(pm.evaluate(params, b)["final_cost"])  # noqa: E731
    val_start = val_loss(ours_val)

    optimizer = ml.Adam(learning_rate=args.lr)
    losses = []
    t3 = time.perf_counter()
    losses.append(float(pm.train_step(params, batches[0], optimizer)["final_cost"]))
    t4 = time.perf_counter()
    print(f"first train_step (compiles forward + backward + Adam) {t4 - t3:.2f} s")
    print(f"step {1:4d}  loss {losses[0]:.4f}")
    for step in range(1, args.steps):
        losses.append(float(pm.train_step(params, batches[step], optimizer)["final_cost"]))
        if (step + 1) % args.print_every == 0 or step + 1 == args.steps:
            print(f"step {step + 1:4d}  loss {losses[-1]:.4f}")
    t5 = time.perf_counter()
    steps_timed = args.steps - 1
    tokens_per_s = steps_timed * B * T / (t5 - t4) if steps_timed else float("nan")
    val_end = val_loss(ours_val)
    print(f"ours: loss {losses[0]:.4f} -> {np.mean(losses[-10:]):.4f} (mean of the last 10 "
          f"steps); validation {val_start:.4f} -> {val_end:.4f}; "
          f"{tokens_per_s:,.0f} tokens/s over steps 2..{args.steps} "
          f"({(t5 - t4) / max(steps_timed, 1) * 1e3:.1f} ms/step)")

    # Greedy sampling with a batch-1 inference model of the same parameters:
    # the context is the last T characters; a shorter one sits at positions
    # 0..n-1 (the causal mask keeps the padding after it from mattering).
    t6 = time.perf_counter()
    sampler = ml.compile(create_gpt(**config), backend, shapes={"input": [1, T]}, inference=True)
    print(f"ml.compile (batch-1 inference model) {time.perf_counter() - t6:.2f} s")
    context = [stoi[c] for c in "The keeper "]
    for _ in range(args.sample):
        window = context[-T:]
        x = np.zeros((1, T), dtype=np.int64)
        x[0, :len(window)] = window
        logits = sampler.evaluate(params, {"input": x})["output"]
        context.append(int(np.argmax(logits[0, len(window) - 1])))
    print("greedy sample:\n" + "".join(chars[i] for i in context))

    result = {"loss_start": losses[0], "loss_end": float(np.mean(losses[-10:])),
              "val_start": val_start, "val_end": val_end, "tokens_per_s": tokens_per_s,
              "compile_s": t2 - t1, "train_step_compile_s": t4 - t3}
    if args.torch:
        result["torch"] = train_torch(args, config, initial, batches, val_batches, losses,
                                      threads, tokens_per_s)
    return result


def train_torch(args, config, initial, batches, val_batches, ours, threads, ours_tps) -> dict:
    import torch

    from torch_model import TorchGPT

    torch.set_num_threads(threads)
    model = TorchGPT(**config)
    model.load_mithril(initial)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    tensors = [{k: torch.from_numpy(v) for k, v in b.items()} for b in batches]

    def val_loss():
        with torch.no_grad():
            return float(np.mean([model.loss(torch.from_numpy(b["input"]),
                                             torch.from_numpy(b["target"])).item()
                                  for b in val_batches]))

    val_start = val_loss()
    losses = []
    t0 = t1 = time.perf_counter()
    for step, b in enumerate(tensors):
        loss = model.loss(b["input"], b["target"])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if step == 0:
            t1 = time.perf_counter()
    t2 = time.perf_counter()
    steps_timed = len(tensors) - 1
    tps = steps_timed * args.batch * args.block / (t2 - t1) if steps_timed else float("nan")
    diff = abs(losses[0] - ours[0])
    blas = re.search(r"BLAS_INFO=([^,\s]+)", torch.__config__.show())
    print(f"\ntorch {torch.__version__} ({torch.get_num_threads()} thread(s), BLAS "
          f"{blas.group(1) if blas else 'unknown'}), the same model, initial parameters and "
          f"batches:")
    print(f"first-step loss: ours {ours[0]:.7f}, torch {losses[0]:.7f}, |difference| {diff:.1e}"
          f" ({'agrees' if diff < 1e-5 else 'DISAGREES'} to 1e-5)")
    print(" step      ours     torch")
    for step in range(len(losses)):
        if step == 0 or (step + 1) % args.print_every == 0 or step + 1 == len(losses):
            print(f"{step + 1:5d}  {ours[step]:8.4f}  {losses[step]:8.4f}")
    val_end = val_loss()
    print(f"torch: loss {losses[0]:.4f} -> {np.mean(losses[-10:]):.4f}; validation "
          f"{val_start:.4f} -> {val_end:.4f}; {tps:,.0f} tokens/s "
          f"({(t2 - t1) / max(steps_timed, 1) * 1e3:.1f} ms/step; first step {t1 - t0:.2f} s)")
    print(f"training throughput: ours {ours_tps:,.0f} tokens/s, torch {tps:,.0f} tokens/s "
          f"(ours / torch = {ours_tps / tps:.2f})")
    return {"loss_start": losses[0], "loss_end": float(np.mean(losses[-10:])),
            "first_step_diff": diff, "tokens_per_s": tps, "val_end": val_end}


if __name__ == "__main__":
    outcome = main()
    if "torch" in outcome and not outcome["torch"]["first_step_diff"] < 1e-5:
        sys.exit("the first-step losses of ours and torch differ by more than 1e-5")
