"""Stopped by KeyboardInterrupt (as by Ctrl-C), in a function."""
import torch


def train():
    print("training")
    raise KeyboardInterrupt


train()
