"""autograd_lens: make PyTorch autograd's saved tensors, their freeing, and stale graphs visible.

>>> import torch, autograd_lens as al
>>> x = torch.ones(3, requires_grad=True)
>>> loss = (x * x).sum()
>>> loss.backward()
>>> [slot.state for slot in al.saved_tensors(loss)]
['freed', 'freed']
"""

import importlib
import sys
from typing import Any

_API = {
    "predict.diagnose": ["diagnose"],
    "predict.report": ["PATTERNS", "FrontierNode", "Pattern", "Report", "SourceLine", "Suspect"],
    "lens.describe": ["describe"],
    "lens.draw": ["draw"],
    "lens.replay": ["BackwardFrames", "Frame", "backward_frames"],
    "lens.errors": ["FREED_GRAPH_PATTERN", "INPLACE_PATTERN", "NoFreedGraphError", "error_kind",
                    "expect_freed_graph_error", "is_freed_graph_error", "is_inplace_error"],
    "lens.graph": ["SavedSlot", "node_name", "node_slots", "saved_tensors", "walk"],
    "lens.memory": ["saved_memory"],
    "text.on_error": ["diagnose_on_error", "load_ipython_extension", "unload_ipython_extension"],
}
"""Where each public name lives (``autograd_lens.NAME``)."""


def _load_api() -> None:
    """Import the public names (and with them torch)."""
    for module, names in _API.items():
        loaded = importlib.import_module(f".{module}", __name__)
        globals().update({name: getattr(loaded, name) for name in names})


def __getattr__(name: str) -> Any:
    if any(name in names for names in _API.values()):
        _load_api()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _command() -> bool:
    """Whether this import is `python -m autograd_lens` starting: the command imports torch only
    when the program it runs does (which may set torch's environment first)."""
    argv = getattr(sys, "orig_argv", [])
    return any(a == "-m" and b == "autograd_lens" for a, b in zip(argv, argv[1:]))


__version__ = "0.1.0"

__all__ = [
    "BackwardFrames",
    "FREED_GRAPH_PATTERN",
    "Frame",
    "FrontierNode",
    "INPLACE_PATTERN",
    "NoFreedGraphError",
    "PATTERNS",
    "Pattern",
    "Report",
    "SavedSlot",
    "SourceLine",
    "Suspect",
    "backward_frames",
    "diagnose",
    "describe",
    "diagnose_on_error",
    "draw",
    "error_kind",
    "expect_freed_graph_error",
    "is_freed_graph_error",
    "is_inplace_error",
    "node_name",
    "node_slots",
    "saved_memory",
    "saved_tensors",
    "walk",
]

if not _command():
    _load_api()

# `%load_ext autograd_lens` in IPython: freed-graph errors carry a diagnosis
# (load_ipython_extension and unload_ipython_extension are among the names above).
