"""Raises an error that has nothing to do with autograd."""
import torch


def load(config):
    return config["learning_rate"]


print("start", torch.ones(1).item())
load({})
