"""A meter for the memory autograd keeps for backward: bytes saved, and bytes still held.

Built on ``torch.autograd.graph.saved_tensors_hooks``: while the meter is active, every tensor a
node saves is wrapped in a small holder. The graph owns the holder; the meter keeps only a weak
reference to it. When backward frees the saved tensors, or the graph is dropped, the holder
goes and the meter sees the bytes released, deterministically (no clocks, no allocator stats).

Two rules keep the meter from changing what autograd does:

* the holder keeps ``tensor.detach()`` (same storage and version counter, no ``grad_fn``), so a
  saved output does not form a reference cycle that would keep its graph alive;
* saved-tensor hooks switch off autograd's own in-place check, so the unpack hook does it:
  a saved tensor changed in place since it was saved raises the same
  ``modified by an inplace operation`` error that backward raises without the meter.
"""

from __future__ import annotations

import weakref

import torch


class _Held:
    """What the graph stores instead of the tensor while a meter is active."""

    __slots__ = ("tensor", "version", "nbytes", "__weakref__")

    def __init__(self, tensor: torch.Tensor):
        self.tensor = tensor.detach()
        self.version = tensor._version
        self.nbytes = tensor.numel() * tensor.element_size()


def _unpack(held: _Held) -> torch.Tensor:
    tensor = held.tensor
    if tensor._version != held.version:
        raise RuntimeError(
            "one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: [{tensor.type()} {list(tensor.shape)}] is at version "
            f"{tensor._version}; expected version {held.version} instead. (Checked by "
            "autograd_lens.saved_memory, standing in for autograd's own check.)"
        )
    return tensor


class saved_memory:  # noqa: N801 - lowercase, like torch.no_grad: it reads as a block
    """Count the bytes autograd saves for backward, and how many of them are still held.

    Use it around a forward pass, as ``with saved_memory() as meter: ...``; read ``meter`` any
    time later. It never keeps a tensor alive.

    Attributes:
        saved_bytes: bytes saved for backward while the meter was active (every slot counted).
        saved_count: number of tensors saved while the meter was active.
        alive_bytes: bytes saved under this meter that some graph still holds right now.
        alive_count: number of those tensors still held right now.

    >>> import torch
    >>> x = torch.ones(1000, requires_grad=True)
    >>> with saved_memory() as meter:
    ...     loss = (x * x).sin().sum()
    >>> meter.saved_bytes, meter.alive_bytes
    (12000, 12000)
    >>> loss.backward()
    >>> meter.alive_bytes
    0
    """

    def __init__(self) -> None:
        self.saved_bytes = 0
        self.saved_count = 0
        self._held: list[tuple[weakref.ref, int]] = []
        self._hooks: torch.autograd.graph.saved_tensors_hooks | None = None

    def _pack(self, tensor: torch.Tensor) -> _Held:
        held = _Held(tensor)
        self.saved_bytes += held.nbytes
        self.saved_count += 1
        self._held.append((weakref.ref(held), held.nbytes))
        return held

    def __enter__(self) -> "saved_memory":
        if self._hooks is not None:
            raise RuntimeError("this saved_memory meter is already active; use a new one to nest.")
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, _unpack)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc_info) -> None:
        hooks, self._hooks = self._hooks, None
        hooks.__exit__(*exc_info)

    @property
    def alive_bytes(self) -> int:
        """Bytes saved under this meter that some graph still holds right now."""
        return sum(nbytes for ref, nbytes in self._held if ref() is not None)

    @property
    def alive_count(self) -> int:
        """Number of tensors saved under this meter that some graph still holds right now."""
        return sum(1 for ref, _ in self._held if ref() is not None)

    def __repr__(self) -> str:
        return (f"<saved_memory saved={self.saved_bytes} bytes in {self.saved_count} tensors, "
                f"alive={self.alive_bytes} bytes>")
