"""The edits for a value one step hands to another that must take it as data: read detached
where that step uses it.

A GAN's generated batch: the discriminator's step reads it detached (``netD(fake.detach())``),
so its loss trains D only and the generator step's backward is the only one through G; a
gradient penalty, which differentiates through the batch, keeps its read. With the generator's
steps first, the reads to detach are the critic's own, wherever they are
(:mod:`autograd_lens.fixes.critic_reads`); a score that both losses read (``d_fake = D(fake)``),
the generator's backward first: the critic's loss scores the batch again, taken as data. A score
of the discriminator kept from before its optimizer's step is computed again where the generator's
loss reads it. One network's output
fed to a second network: read detached there (in a ``for`` loop's header too, and so are the
values passed later in its place), or the two losses summed and backpropagated once. See
:mod:`autograd_lens.fixes.rules` for what a rule reads and returns.
"""

from __future__ import annotations

import ast

from ..source.edit_guards import differentiates
from ..source.edits import Plan
from ..source.source_file import Source, path_of
from .same_role import passed_later
from .critic_reads import critic_reads, optimized_networks
from .rules import Case, Fix, failed_call, one_fix, receiver, recompute, top_carrier
from .call_order import sum_losses


def detach_reads_before(case: Case) -> list[Fix]:
    """A GAN's fake batch: ``.detach()`` it at its uses in the discriminator step (the reads
    before the failing one; with the generator's steps first, the critic's own reads, see
    :mod:`autograd_lens.fixes.critic_reads`); a score of the discriminator kept from its own step,
    after its optimizer stepped: computed again where the generator's loss reads it."""
    carrier, source = top_carrier(case)
    statement = source.statement_at(carrier.line) if source else None
    if statement is None:
        return []
    scope = source.scope_at(statement.lineno)
    stores = [s for s in source.stores(scope, carrier.name) if s.end_lineno < statement.lineno]
    start = stores[-1].end_lineno if stores else 0
    critic = critic_reads(source, scope, carrier.name)
    if stores and _made_by_stepped(source, scope, stores[-1], statement) and not critic:
        return one_fix("the discriminator's score is computed again after its step, from the "
                       "weights as the step left them, as the generator's loss needs; the "
                       "discriminator's own loss still trains it through the first score",
                       recompute(source, carrier.name, statement))
    if critic and (stores and _made_by_stepped(source, scope, stores[-1], statement) or
                   not any(_undetached(source, s, carrier.name) for s in source.statements(scope)
                           if start < s.lineno and s.end_lineno < statement.lineno)):
        # the generator's steps first: the read to detach is the critic's own, wherever it is
        plan = Plan(source)
        for read in critic:
            plan.replace_span(read, f"{carrier.name}.detach()")
        return one_fix("the discriminator's loss treats the generated batch as data and "
                       "trains D only; the generator step's backward is the only one through G",
                       plan)
    plan, kept = Plan(source), False
    for node in source.statements(scope):
        if start < node.lineno and node.end_lineno < statement.lineno and \
                source.statement_at(node.lineno) is node:
            if differentiates(source, node):  # a gradient penalty differentiates through it
                kept = kept or bool(_undetached(source, node, carrier.name))
                continue
            for read in _undetached(source, node, carrier.name):
                plan.replace_span(read, f"{carrier.name}.detach()")
    return one_fix("the discriminator's loss treats the generated batch as data; the gradient "
                   "penalty, which differentiates through it, still goes through G once"
                   if kept else "the discriminator's loss treats the generated batch as data and "
                   "trains D only; the generator step's backward is the only one through G", plan) \
        + _score_again(case, source, scope, stores[-1] if stores else None)


def _score_again(case: Case, source: Source, scope: ast.AST, store: ast.stmt | None) -> list[Fix]:
    """A score both losses read (``d_fake = D(fake)``), the generator's backward first: the
    failing loss reads, in its place, the score of the batch taken as data (``D(fake.detach())``),
    which trains the discriminator only. Only for a network that an optimizer of its own trains,
    scoring a tensor that carries the old graph too."""
    value = store.value if isinstance(store, ast.Assign) else None
    network = path_of(value.func) if isinstance(value, ast.Call) else None
    batch = path_of(value.args[0]) if network and len(value.args) == 1 and not value.keywords \
        else None
    failed = failed_call(case)
    if batch is None or failed is None or network not in optimized_networks(source) or \
            batch not in {c.name for c in case.carriers} or failed[0].file != source.file or \
            source.scope_at(failed[1].lineno) is not scope:  # the failing loss built here
        return []
    loss = receiver(failed[2])
    built = [s for s in source.stores(scope, loss) if store.end_lineno < s.lineno
             and s.end_lineno < failed[1].lineno] if loss else []
    if not built:
        return []
    plan = Plan(source)
    shaped = {id(a) for n in ast.walk(built[-1]) if isinstance(n, ast.Call)
              and (path_of(n.func) or "").endswith("_like") for a in n.args}  # zeros_like(d_fake)
    for read in _undetached(source, built[-1], store.targets[0].id
                            if isinstance(store.targets[0], ast.Name) else ""):
        if id(read) not in shaped:  # a shape read stays as it is
            plan.replace_span(read, f"{network}({batch}.detach())")
    return one_fix("the discriminator's loss scores the generated batch again, taken as data: "
                   "it trains D only, and the generator's backward is the only one through G",
                   plan)


def _made_by_stepped(source: Source, scope: ast.AST, store: ast.stmt, entry: ast.stmt) -> bool:
    """Whether ``store`` assigns the output of a network (``pred_real = netD(real)``) whose
    optimizer (one made from ``netD.parameters()``) steps between ``store`` and ``entry``: the
    value is that network's score from before its step, not the generated batch, and the later
    loss wants the score of the network as it is now."""
    value = store.value if isinstance(store, ast.Assign) else None
    network = path_of(value.func) if isinstance(value, ast.Call) else None
    if not network:
        return False
    optimizers = {path_of(t) for n in ast.walk(source.tree) if isinstance(n, ast.Assign)
                  and isinstance(n.value, ast.Call)
                  and any(isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                          and c.func.attr == "parameters" and path_of(c.func.value) == network
                          for c in ast.walk(n.value)) for t in n.targets} - {None}
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr == "step" and path_of(n.func.value) in optimizers
               for s in source.statements(scope)
               if store.end_lineno < s.lineno and s.end_lineno < entry.lineno
               for n in ast.walk(s))


def _undetached(source: Source, node: ast.AST, path: str) -> list[ast.expr]:
    parents = {id(c): p for p in ast.walk(node) for c in ast.iter_child_nodes(p)}
    return [r for r in source.reads(node, path) if r.lineno == r.end_lineno and not (
        isinstance(parents.get(id(r)), ast.Attribute) and parents[id(r)].attr == "detach")]


def detach_at_use(case: Case) -> list[Fix]:
    """Two networks: the second network reads the first's output detached, or one backward;
    read in a ``for`` loop's header (``for a, b in zip(actions, baseline):``), detached there."""
    carrier, source = top_carrier(case)
    statement = source.statement_at(carrier.line) if source else None
    header = next((n.iter for n in ast.walk(source.tree) if isinstance(n, ast.For) and
                   n.lineno == carrier.line), None) if source and statement is None else None
    if statement is None and header is None:
        return []
    plan = Plan(source)
    for read in _undetached(source, statement or header, carrier.name):
        plan.replace_span(read, f"{carrier.name}.detach()")
    if statement is None:
        return one_fix("the second loss trains what comes after the detached tensor only; the "
                       "first loss alone trains what computed it", plan)
    for other, later in passed_later(source, statement, carrier.name):  # fake_A as fake_B
        for read in _undetached(source, later, other):
            plan.replace_span(read, f"{other}.detach()")
    return one_fix("the second loss trains what comes after the detached tensor only; the first "
                "loss alone trains what computed it", plan) + sum_losses(case)[:1]
