"""Recognising the freed-graph error in every wording PyTorch has used.

The error has changed its words over the years. Each older wording below is quoted from a dated
public record (the book's chapter on versions lists the same ones); a record's date shows only
that the wording was in use by then, not which release introduced or dropped it:

* ``Trying to backward through the graph second time, but the buffers have already been freed.
  Please specify retain_variables=True ...``: quoted in pytorch/pytorch issue 1288 (April 2017).
* ``Trying to backward through the graph a second time, but the buffers have already been freed.
  Specify retain_graph=True ...``: quoted in KupynOrest/DeblurGAN pull request 91 (July 2018).
* ``... but the saved intermediate results have already been freed ...``: quoted in
  3d-hand-shape/hand-graph-cnn issue 55 (November 2022).
* ``Trying to backward through the graph a second time (or directly access saved tensors after
  they have already been freed). ...``: raised by PyTorch 2.13, the version the book runs.

They share one stable core, matched by :data:`FREED_GRAPH_PATTERN`.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

FREED_GRAPH_PATTERN = re.compile(r"backward through the graph (a )?second time")
"""Matches every wording of the freed-graph error listed above, the oldest record to today's."""

INPLACE_PATTERN = re.compile(r"modified by an inplace operation")
"""Matches the in-place modification error, the freed-graph error's frequent look-alike."""

EXPLANATION = (
    "Backward reached a node whose saved tensors an earlier backward (or autograd.grad) had "
    "already freed. Find the tensor that carries the old graph into this backward: run the "
    "forward again, detach what crosses from one step to the next, or sum the losses and call "
    "backward once. retain_graph=True on the first call is the fix only when two backward "
    "passes through one graph are really wanted."
)


def _check_exception(error: object, function: str) -> None:
    if not isinstance(error, BaseException):
        raise TypeError(
            f"{function} expects an exception, got {type(error).__name__}. Pass the exception "
            f"you caught, as in `except RuntimeError as err: {function}(err)`."
        )


def is_freed_graph_error(error: BaseException) -> bool:
    """True when ``error`` is PyTorch's freed-graph error, in any of its wordings.

    >>> import torch
    >>> x = torch.ones(2, requires_grad=True)
    >>> y = (x * x).sum()
    >>> y.backward()
    >>> try:
    ...     y.backward()
    ... except RuntimeError as err:
    ...     is_freed_graph_error(err)
    True
    """
    _check_exception(error, "is_freed_graph_error")
    return isinstance(error, RuntimeError) and bool(FREED_GRAPH_PATTERN.search(str(error)))


def is_inplace_error(error: BaseException) -> bool:
    """True when ``error`` is autograd's in-place modification error.

    >>> is_inplace_error(RuntimeError("one of the variables needed for gradient computation "
    ...                               "has been modified by an inplace operation"))
    True
    """
    _check_exception(error, "is_inplace_error")
    return isinstance(error, RuntimeError) and bool(INPLACE_PATTERN.search(str(error)))


def error_kind(error: BaseException) -> Literal["freed", "modified"] | None:
    """``"freed"`` for the freed-graph error, ``"modified"`` for the in-place error, else None.

    The two ways backward fails on a stale saved tensor: freed by an earlier backward, or
    modified in place since it was saved.

    >>> error_kind(RuntimeError("Trying to backward through the graph a second time"))
    'freed'
    >>> error_kind(RuntimeError("a leaf Variable that requires grad is being used in an in-place "
    ...                         "operation.")) is None
    True
    """
    _check_exception(error, "error_kind")
    if is_freed_graph_error(error):
        return "freed"
    if is_inplace_error(error):
        return "modified"
    return None


class NoFreedGraphError(AssertionError):
    """Raised by :func:`expect_freed_graph_error` when the block did not raise the freed-graph error."""


@dataclass
class CaughtError:
    """What :func:`~autograd_lens.expect_freed_graph_error` caught: the error, its first line, and what it means."""

    error: BaseException | None = None
    message: str = ""
    explanation: str = field(default=EXPLANATION)

    def __str__(self) -> str:
        return f"Caught as expected: RuntimeError: {self.message}\nWhat it means: {self.explanation}"


@contextmanager
def expect_freed_graph_error(*, quiet: bool = False):
    """Pass only if the block raises the freed-graph error; fail loudly otherwise.

    Prints the first line of the error and a short explanation (unless ``quiet``), and yields a
    :class:`~autograd_lens.lens.errors.CaughtError` that holds the error afterwards. Any other exception propagates
    unchanged; no exception at all raises :class:`NoFreedGraphError`.

    >>> import torch
    >>> x = torch.ones(2, requires_grad=True)
    >>> loss = (x * x).sum()
    >>> loss.backward()
    >>> with expect_freed_graph_error(quiet=True) as caught:
    ...     loss.backward()
    >>> caught.message[:45]
    'Trying to backward through the graph a second'
    """
    caught = CaughtError()
    try:
        yield caught
    except RuntimeError as error:
        if not is_freed_graph_error(error):
            raise
        caught.error = error
        caught.message = str(error).splitlines()[0].split(". ")[0] + "."
        if not quiet:
            print(caught)
        return
    raise NoFreedGraphError(
        "expected PyTorch's freed-graph error ('Trying to backward through the graph a second "
        "time'), but the block finished without raising it: every saved tensor it needed was "
        "still alive (or retained)."
    )
