"""Slow weights for tests/scripts/u5_weight_averaged_by_another_module.py: each slow weight
moves a step towards its fast twin, in place."""
import torch


def pull_towards(slow, fast, rate):
    with torch.no_grad():
        for s, f in zip(slow.parameters(), fast.parameters()):
            s.lerp_(f, rate)  # write: slow[2].weight (the loop's s, named as the program holds it)
