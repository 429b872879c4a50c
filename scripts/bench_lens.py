"""Benchmark autograd_lens against the backward pass it looks at: `make bench`.

Three measurements, each side by side in one run, medians over repeats:

1. saved_tensors on a 10,000-node graph of tiny tensors, against backward over the same graph;
2. diagnose on that graph, against the same backward;
3. diagnose on the loss of a small Transformer encoder, against one training step (forward,
   backward, optimizer step) of it on CPU; diagnose runs right after the forward, as it would
   in a training loop (its first look at a graph costs more than a repeated one).

Targets (see the design notes): ratios 1 and 2 below 1.0, ratio 3 below 0.05.
Prints one line per measurement, then one JSON line for tooling.
"""

from __future__ import annotations

import json
import statistics
import time

import torch
from torch import nn

import autograd_lens as al

REPEATS = 9
NODES = 10_000
# The small Transformer encoder: 2 layers, d_model 128, 4 heads, batch 32 x 64 tokens, Adam.
D_MODEL, BATCH, SEQ = 128, 32, 64


def tiny_graph(nodes: int = NODES) -> torch.Tensor:
    """A graph of about ``nodes`` nodes on 4-element tensors: a chain with side branches."""
    torch.manual_seed(0)
    w = torch.randn(4, requires_grad=True)
    v = torch.randn(4, requires_grad=True)
    y = w
    for i in range((nodes - 3) // 2):
        y = (y * v).sin() if i % 2 else (y + w).tanh()
    return y.sum()


def median_seconds(run, repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_tiny_graph() -> dict:
    """Each look runs on a fresh graph (its first look, the expensive one), then backward on it."""
    t_saved, t_diag, t_back, counts = [], [], [], None
    for _ in range(REPEATS):
        for look, times in ((al.saved_tensors, t_saved), (al.diagnose, t_diag)):
            root = tiny_graph()
            if counts is None:
                counts = len(al.walk(root))
                root = tiny_graph()
            start = time.perf_counter()
            result = look(root)
            times.append(time.perf_counter() - start)
            assert result.ok if look is al.diagnose else len(result) > 0
            start = time.perf_counter()
            root.backward()
            t_back.append(time.perf_counter() - start)
            del root, result
    saved, diag, back = map(statistics.median, (t_saved, t_diag, t_back))
    return dict(nodes=counts, saved_tensors_s=saved, diagnose_s=diag, backward_s=back,
                saved_tensors_over_backward=saved / back, diagnose_over_backward=diag / back)


def bench_transformer() -> dict:
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=D_MODEL, nhead=4, dim_feedforward=4 * D_MODEL,
                                       dropout=0.1, batch_first=True)
    model = nn.Sequential(nn.TransformerEncoder(layer, num_layers=2), nn.Linear(D_MODEL, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(BATCH, SEQ, D_MODEL), torch.randn(BATCH, SEQ, 1)

    def step(look: str | None) -> float:
        """One training step; returns the seconds spent in diagnose (right after the forward)."""
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        spent = 0.0
        if look is not None:
            start = time.perf_counter()
            report = al.diagnose(loss, suspects=model if look == "suspects" else None)
            spent = time.perf_counter() - start
            assert report.ok
        loss.backward()
        opt.step()
        return spent

    for _ in range(2):
        step(None)   # warm-up
    steps, diags, with_suspects = [], [], []
    for _ in range(REPEATS):
        start = time.perf_counter()
        step(None)
        steps.append(time.perf_counter() - start)
        diags.append(step("plain"))
        with_suspects.append(step("suspects"))
    loss = nn.functional.mse_loss(model(x), y)
    nodes = len(al.walk(loss))
    s, d, ds = map(statistics.median, (steps, diags, with_suspects))
    return dict(transformer_nodes=nodes, train_step_s=s, transformer_diagnose_s=d,
                transformer_diagnose_suspects_s=ds, diagnose_over_train_step=d / s,
                diagnose_suspects_over_train_step=ds / s)


def main() -> int:
    tiny = bench_tiny_graph()
    big = bench_transformer()
    print(f"tiny graph, {tiny['nodes']} nodes: backward {tiny['backward_s'] * 1e3:.1f} ms, "
          f"saved_tensors {tiny['saved_tensors_s'] * 1e3:.1f} ms "
          f"(ratio {tiny['saved_tensors_over_backward']:.2f}, target < 1)")
    print(f"tiny graph, {tiny['nodes']} nodes: backward {tiny['backward_s'] * 1e3:.1f} ms, "
          f"diagnose {tiny['diagnose_s'] * 1e3:.1f} ms "
          f"(ratio {tiny['diagnose_over_backward']:.2f}, target < 1)")
    print(f"transformer encoder (2 layers, d_model {D_MODEL}, batch {BATCH}x{SEQ}), "
          f"{big['transformer_nodes']} nodes: training step {big['train_step_s'] * 1e3:.1f} ms, "
          f"diagnose {big['transformer_diagnose_s'] * 1e3:.2f} ms "
          f"(ratio {big['diagnose_over_train_step']:.3f}, target < 0.05); with suspects=model "
          f"{big['transformer_diagnose_suspects_s'] * 1e3:.2f} ms "
          f"(ratio {big['diagnose_suspects_over_train_step']:.3f})")
    result = {"benchmark": "autograd_lens", **{k: round(v, 6) if isinstance(v, float) else v
                                               for k, v in {**tiny, **big}.items()}}
    result["targets_met"] = (tiny["saved_tensors_over_backward"] < 1
                             and tiny["diagnose_over_backward"] < 1
                             and big["diagnose_over_train_step"] < 0.05)
    print(json.dumps(result))
    return 0 if result["targets_met"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
