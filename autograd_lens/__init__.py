"""autograd_lens: make PyTorch autograd's saved tensors, their freeing, and stale graphs visible.

>>> import torch, autograd_lens as al
>>> x = torch.ones(3, requires_grad=True)
>>> loss = (x * x).sum()
>>> loss.backward()
>>> [slot.state for slot in al.saved_tensors(loss)]
['freed', 'freed']
"""

from .diagnose import (
    PATTERNS,
    FrontierNode,
    Pattern,
    Report,
    SourceLine,
    Suspect,
    diagnose,
)
from .describe import describe
from .draw import draw
from .replay import BackwardFrames, Frame, backward_frames
from .errors import (
    FREED_GRAPH_PATTERN,
    INPLACE_PATTERN,
    NoFreedGraphError,
    error_kind,
    expect_freed_graph_error,
    is_freed_graph_error,
    is_inplace_error,
)
from .graph import SavedSlot, node_name, node_slots, saved_tensors, walk
from .memory import saved_memory
from .on_error import diagnose_on_error, load_ipython_extension, unload_ipython_extension

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

# `%load_ext autograd_lens` in IPython: freed-graph errors carry a diagnosis.
# (load_ipython_extension / unload_ipython_extension are imported above.)
