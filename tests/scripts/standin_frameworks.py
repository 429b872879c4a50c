"""Stand-ins of the frameworks' objects, in plain torch, whose code sits where an installed
library's does (its file name under site-packages): the command sees their frames as it sees
accelerate's or Lightning's. Each keeps the shape that matters to the command, not the
framework's features. The library is a module of its own (in sys.modules, its file
under site-packages), as an installed package's classes are."""
import os
import sys
import sysconfig
import types

_SOURCE = '''
class Accelerator:
    """accelerate's shape: backward(loss) runs loss.backward() inside the library."""

    def prepare(self, *objects):
        return objects

    def backward(self, loss, **kwargs):
        loss.backward(**kwargs)


class Trainer:
    """transformers' Trainer's shape: the program's compute_loss returns the loss, and the
    library runs backward on it afterwards, in its own frames."""

    def __init__(self, model, optimizer, batches):
        self.model, self.optimizer, self.batches = model, optimizer, batches

    def train(self):
        for inputs in self.batches:
            loss = self.compute_loss(self.model, inputs)
            self.optimizer.zero_grad()
            self.training_step_backward(loss)
            self.optimizer.step()

    def training_step_backward(self, loss):
        loss.backward()


class LightningModule(__import__("torch").nn.Module):
    """Lightning's shape with manual optimization: the library calls training_step for each
    batch, and manual_backward(loss) runs loss.backward() in the library's frames."""

    def fit(self, batches, optimizer):
        self.optimizer = optimizer
        for index, batch in enumerate(batches):
            self.training_step(batch, index)

    def manual_backward(self, loss):
        loss.backward()


class CacheLayer:
    """One layer's past keys and values (transformers' DynamicLayer's shape)."""

    def __init__(self):
        self.keys = self.values = None


class DynamicCache:
    """transformers' cache's shape: a list of layers, each growing by concatenation."""

    def __init__(self, layers):
        self.layers = [CacheLayer() for _ in range(layers)]

    def update(self, keys, values, index):
        import torch

        layer = self.layers[index]
        if layer.keys is not None:
            keys, values = torch.cat([layer.keys, keys], 1), torch.cat([layer.values, values], 1)
        layer.keys, layer.values = keys, values
        return keys, values
'''
_NAME = "standin_frameworks_library"
_FILE = os.path.join(sysconfig.get_paths()["purelib"], _NAME, "__init__.py")
_LIBRARY = sys.modules.setdefault(_NAME, types.ModuleType(_NAME))
_LIBRARY.__file__ = _FILE
exec(compile(_SOURCE, _FILE, "exec"), _LIBRARY.__dict__)
Accelerator, DynamicCache, Trainer = _LIBRARY.Accelerator, _LIBRARY.DynamicCache, _LIBRARY.Trainer
LightningModule = _LIBRARY.LightningModule
