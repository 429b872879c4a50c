"""Which tensor a backward call in the source starts from, also when a framework wraps the call.

The edit rules change the loss that a backward starts from. Besides ``loss.backward()``, training
code calls backward through its framework: ``accelerator.backward(loss)`` (accelerate),
``fabric.backward(loss)`` (Lightning Fabric), ``self.manual_backward(loss)`` (a Lightning module
with manual optimization), ``engine.backward(loss)`` (DeepSpeed), and
``scaler.scale(loss).backward()`` (mixed precision). Each runs ``loss.backward()`` on the loss
it is given, so for the rules the loss is what the call starts from.

>>> import ast
>>> call = lambda text: ast.parse(text).body[0].value
>>> [ast.unparse(backward_subject(call(t))) for t in ("loss.backward()",
...  "accelerator.backward(total)", "self.manual_backward(loss)", "scaler.scale(l).backward()",
...  "out.backward(grad)")]
['loss', 'total', 'loss', 'l', 'out']
"""

from __future__ import annotations

import ast

NAMES = ("backward", "manual_backward")
"""The method names of a backward call, the frameworks' included."""
# Objects whose ``backward(loss)`` method is a framework's wrapper around ``loss.backward()``
# (the last name of the receiver: ``self.accelerator``, ``model_engine``).
_WRAPPERS = ("accelerator", "fabric", "engine", "model_engine", "deepspeed_engine")


def _last_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None


def _loss_argument(call: ast.Call) -> ast.expr | None:
    if call.args:
        return call.args[0]
    return next((k.value for k in call.keywords if k.arg in ("loss", "tensor")), None)


def backward_subject(call: ast.Call) -> ast.expr | None:
    """The expression of the tensor a backward call starts from (None when ``call`` is not a
    backward call): the receiver of ``loss.backward()``, the loss given to a framework's
    wrapper, the loss inside ``scaler.scale(loss).backward()``."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in NAMES:
        return None
    if func.attr == "manual_backward" or _last_name(func.value) in _WRAPPERS:
        return _loss_argument(call)
    inner = func.value
    if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and \
            inner.func.attr == "scale" and inner.args:
        return inner.args[0]
    return inner


def scaled_target(loss: ast.expr, targets: set[str]) -> bool:
    """Whether a loss expression is one of ``targets`` itself, or a weighting of it by
    arithmetic (``weights[name] * loss``, ``-loss / len(losses)``); not a loss computed from it
    by a call (``model(x).sum()``).

    >>> [scaled_target(ast.parse(t).body[0].value, {"loss"}) for t in (
    ...  "loss", "w[k] * loss", "-loss / len(parts)", "model(loss).sum()", "w * other")]
    [True, True, True, False, False]
    """
    if isinstance(loss, ast.Name):
        return loss.id in targets
    if isinstance(loss, ast.UnaryOp):
        return scaled_target(loss.operand, targets)
    if isinstance(loss, ast.BinOp):
        return scaled_target(loss.left, targets) or scaled_target(loss.right, targets)
    return False
