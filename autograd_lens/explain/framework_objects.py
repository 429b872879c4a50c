"""Tensors that a library keeps in its own objects, reached from the program's variables.

A framework copies what the program's modules hold into containers of its own: DDP lists the
module's buffers in ``modules_buffers`` at every forward (to broadcast them), hooks keep
references, wrappers keep state. Such a container is not a line of the program, and an edit of it
is undone by the library at its next call. When the program's own variable holds the same tensor,
or one computed from it (``self.center`` is updated from the old center DDP listed), the
library's copy is not named; otherwise it comes after every variable of the program, and says
where it sits.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from ..source.candidates import Candidate
from ..source.library_objects import library_class
from .rebound import rebound_carriers
from ..fixes.state_objects import held_by_variable


def library_internal(candidate: Candidate) -> bool:
    """Whether the candidate sits in a library module's own attribute (or an entry of one), as
    DDP's list of copied buffers: not a buffer the module registered (a BatchNorm's running mean
    is the model's), not a library's state object that the program holds and hands back to it
    (a transformers cache), not a variable or an attribute of the program's own classes."""
    owner = candidate.owner  # its __class__, not type(): a weakref.proxy's type is weakref's
    if not isinstance(owner, torch.nn.Module) or not library_class(owner.__class__):
        return False  # a library's state object the program holds (a cache) is its own state
    if _parametrized(owner, candidate.path.rsplit(".", 1)[-1]):
        return False  # the weight a parametrization computed (and caches) is the module's own
    return not any(buffer is candidate.tensor for buffer in owner._buffers.values())


def _parametrized(module: torch.nn.Module, name: str) -> bool:
    """Whether ``name`` is a parametrized tensor of ``module`` (``orthogonal(lin)``'s weight)."""
    names = getattr(module, "parametrizations", None)
    return names is not None and name in names


def _copied_by_user(item: tuple, users: list[tuple], view: Any) -> bool:
    """Whether a variable of the program holds the same tensor, or one computed from it."""
    node = item[1].tensor.grad_fn
    return any(user[1].tensor is item[1].tensor or view.below(user[1].tensor.grad_fn, node)
               for user in users)


def _true_why(carrier: Any, owner: Any, graph: str) -> Any:
    return dataclasses.replace(
        carrier, outside_loop=False,
        why=f"is kept by the library inside {owner.__class__.__name__}'s own state (no line of "
            f"your program assigns it there) and holds {graph}")


def set_aside_copies(ranked: list[tuple], view: Any, graph: str) -> list[tuple]:
    """``ranked`` (score, candidate, carrier) without the library's copies of what a variable of
    the program holds; the library's other tensors after every variable of the program, each
    saying where it sits."""
    users = [item for item in ranked if not library_internal(item[1])]
    if len(users) == len(ranked):
        return ranked
    kept = [(score, found, _true_why(carrier, found.owner, graph))
            for score, found, carrier in ranked
            if library_internal(found) and not _copied_by_user((score, found, carrier), users,
                                                               view)]
    return users + kept


def library_pass(ranked: list[tuple], view: Any, graph: str, frames: list[Any],
                 carrier: type, least: float) -> list[tuple]:
    """The ranked candidates as the libraries' objects change them: the library's copies set
    aside, a state object's tensors named as the variable that holds it; when none scores
    ``least`` (none that the source brings into the step), an attribute of the program's bound
    again before the backward comes first (``carrier``: the class of the carriers)."""
    ranked = held_by_variable(set_aside_copies(ranked, view, graph))
    if ranked and ranked[0][0] >= least:
        return ranked
    return rebound_carriers(view, frames, carrier) + ranked
