"""Checking what users pass in, with errors that say what to pass instead."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch


def _describe(value: object) -> str:
    if value is None:
        return "None"
    return f"a {type(value).__name__}"


def _explain_no_graph(tensor: torch.Tensor, what: str) -> ValueError:
    if tensor.requires_grad:
        why = (
            f"{what} is a leaf tensor: it requires grad but was created by you, not computed "
            "by an autograd operation, so no graph ends at it"
        )
    elif tensor.is_inference():
        why = f"{what} was created under torch.inference_mode(), which records no graph"
    else:
        why = (
            f"{what} does not require grad: it was created under torch.no_grad(), detached, "
            "turned into a plain number and back, or computed only from tensors that do not "
            "require grad"
        )
    return ValueError(
        f"{why}. Pass a tensor computed from tensors that require grad, such as the loss "
        "you would call .backward() on (its .grad_fn must not be None)."
    )


def graph_roots(root: object, *, argument: str = "root") -> list[torch.Tensor]:
    """Return ``root`` as a non-empty list of tensors that each end an autograd graph.

    Accepts one tensor or a list or tuple of tensors. Raises ``TypeError`` for anything that
    is not a tensor and ``ValueError`` for a tensor with no ``grad_fn``.
    """
    if isinstance(root, torch.Tensor):
        roots = [root]
        names = [argument]
    elif isinstance(root, Sequence) and not isinstance(root, (str, bytes)):
        roots = list(root)
        names = [f"{argument}[{i}]" for i in range(len(roots))]
        if not roots:
            raise ValueError(
                f"{argument} is an empty {type(root).__name__}. Pass a tensor, such as the loss, "
                "or a non-empty list of tensors."
            )
        for name, item in zip(names, roots):
            if not isinstance(item, torch.Tensor):
                raise TypeError(
                    f"{name} is {_describe(item)}, not a torch.Tensor. Pass a tensor, such as "
                    "the loss, or a list of tensors."
                )
    else:
        raise TypeError(
            f"{argument} must be a torch.Tensor (or a list of tensors), got {_describe(root)}. "
            "Pass the tensor you would call .backward() on, such as the loss."
        )
    for name, tensor in zip(names, roots):
        if tensor.grad_fn is None:
            raise _explain_no_graph(tensor, name)
    return roots


def backward_inputs(inputs: object) -> list[torch.Tensor]:
    """Return ``inputs`` (as in ``backward(inputs=...)``) as a non-empty list of tensors that
    require grad; ``TypeError`` or ``ValueError`` saying what to pass otherwise."""
    items = [inputs] if isinstance(inputs, torch.Tensor) else inputs
    if not isinstance(items, Sequence) or isinstance(items, (str, bytes)):
        raise TypeError(f"inputs must be a tensor or a list of tensors, as in "
                        f"backward(inputs=...), got a {type(inputs).__name__}.")
    items = list(items)
    if not items:
        raise ValueError("inputs is empty. Pass the tensors you want gradients for, as in "
                         "backward(inputs=[w]), or leave inputs out.")
    for i, item in enumerate(items):
        if not isinstance(item, torch.Tensor):
            raise TypeError(f"inputs[{i}] is a {type(item).__name__}, not a tensor. Pass the "
                            "tensors you want gradients for.")
        if not item.requires_grad:
            raise ValueError(f"inputs[{i}] does not require grad, so backward cannot compute a "
                             "gradient for it. Pass tensors that require grad.")
    return items


def leaf_names(params: object) -> dict[int, str]:
    """Names for leaf tensors, such as ``dict(model.named_parameters())``, by ``id`` of the tensor."""
    if params is not None and not isinstance(params, Mapping):
        raise TypeError(
            f"params must be a mapping of names to tensors, such as dict(model.named_parameters()),"
            f" got a {type(params).__name__}."
        )
    names = {}
    for key, value in (params or {}).items():
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"params[{key!r}] is a {type(value).__name__}, not a tensor.")
        names[id(value)] = key
    return names
