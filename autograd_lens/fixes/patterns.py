"""The catalogue: each known way to reach the freed-graph error, in one entry.

An entry keeps together, as a linter keeps a rule's code, message, fix and documentation, a
pattern's key, title, fix (said in words), the book's pages on it, its edit rule (the fix
computed as an edit of the program's own lines, :mod:`autograd_lens.fixes.rules`) and the names of
its proof programs (``tests/proofs/<name>.py``, or a notebook's failing script in
``tests/scripts/`` where that is the same program): failing programs of the pattern, which the
tests fix with the edit and whose gradients they compare with an independent reference.
Adding a pattern means adding one entry here and its proof programs.
"""

from __future__ import annotations

import importlib.metadata
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import accumulated, built_again, call_order, carried_state, detached_reads, inplace_writes, \
    kept_values, outside_loop
from ..source.edit_types import fits
from .state_objects import state_fix
from .rules import Case, Fix, Rule


def _documentation_url() -> str:
    """The book's address: the ``Documentation`` link of the package's metadata, or, in a
    source tree without metadata, of ``pyproject.toml`` beside the package."""
    try:
        links = importlib.metadata.metadata("autograd_lens").get_all("Project-URL") or []
    except importlib.metadata.PackageNotFoundError:
        links = []
    for link in links:
        label, _, url = link.partition(",")
        if label.strip() == "Documentation":
            return url.strip()
    with open(Path(__file__).resolve().parents[2] / "pyproject.toml", "rb") as file:
        return tomllib.load(file)["project"]["urls"]["Documentation"]


BOOK_URL = _documentation_url()
"""Where the book is published; the report links to its notebooks under ``notebooks/``."""


def link(name: str) -> str:
    """The address of a published page: a bare name is a notebook (``notebooks/<name>``), a
    name with a folder is that page (``chapters/debugging``)."""
    return f"{BOOK_URL}{name if '/' in name else 'notebooks/' + name}.html"


@dataclass(frozen=True)
class Pattern:
    """A known way to reach the freed-graph error, with its fix, pages, edit rule and proofs.

    ``suspect_fix`` is the same fix said of one named tensor (``"detach it at the start of
    each batch"``); without it a suspect gets ``fix``. ``rule`` computes the fix as an edit of
    the program (see :func:`fixes`); ``proofs`` names the programs that prove it.
    ``across_step`` is the fix said when an optimizer's ``step()`` runs between the two calls,
    where keeping the graph (``retain_graph=True``) would meet weights changed in place.
    ``on_weight`` is the fix said when the tensor the program wrote in place is a weight:
    written out of place, or into a copy, the weight would stay as it was.
    """

    key: str
    title: str
    fix: str
    notebooks: tuple[str, ...]
    suspect_fix: str = ""
    rule: Rule | None = None
    proofs: tuple[str, ...] = ()
    across_step: str = ""
    on_weight: str = ""

    def links(self) -> list[str]:
        """Addresses of the published pages about this pattern: a bare name is a notebook
        (``notebooks/<name>``), a name with a folder is that page (``chapters/debugging``)."""
        return [link(n) for n in self.notebooks]

    def fixes(self, carriers: list, failed: tuple[str, int] | None = None,
              write: Any = None) -> list[Fix]:
        """The fix as edits of the program, first choice first (empty when the source does not
        show the edit plainly). ``carriers``: most likely first; ``failed``: (file, line) of
        the backward (or autograd.grad) call that failed; ``write``: the in-place error's
        write."""
        if self.rule is None:
            return []
        try:
            fixes = self.rule(Case(tuple(carriers), failed, write))
        except (ValueError, IndexError, AttributeError, TypeError):
            return []  # a source the rule does not understand: no edit rather than a guess
        fixes = state_fix(carriers) or fixes  # the variable holds a library's state object
        return [fix for fix in fixes if fits(fix, carriers)]  # no call of a missing method


_NO_RETAIN = ("run the forward pass again after optimizer.step() and before the second backward; "
              "retain_graph=True would not do, since the step changes in place the weights the "
              "graph saved")

PATTERNS: dict[str, Pattern] = {p.key: p for p in (
    Pattern("backward_twice", "backward twice through the same graph",
            "run the forward pass again before the second backward (or pass retain_graph=True to "
            "the first backward or autograd.grad call if two passes through one graph are really "
            "wanted)",
            ("01_backward_twice", "14_grad_then_backward", "11_higher_order_gradients"),
            rule=call_order.rerun_or_retain, proofs=("backward_twice", "backward_twice_closure"),
            across_step=_NO_RETAIN),
    Pattern("modified_in_place", "a weight a node saved, changed by optimizer.step() before "
            "the backward through that node",
            "build the loss (and every value it is made from that went through the stepped "
            "model) again after optimizer.step(); do not reuse a loss built before the step, and "
            "do not retain a graph across a step",
            ("08_retain_step_backward", "16_module_state_with_history"),
            rule=built_again.after_the_step,
            proofs=("modified_in_place", "modified_in_place_actor_critic")),
    Pattern("written_in_place", "a tensor a node saved, then written in place by the program",
            "write out of place instead (y = y + 1, h = h.relu()), or write into a copy made "
            "just before the write (x = x.clone()), so the node keeps the tensor it saved",
            ("chapters/mental_model", "10_detach", "16_module_state_with_history",
             "08_retain_step_backward"),
            rule=inplace_writes.out_of_place,
            proofs=("written_in_place_add", "written_in_place_relu", "written_in_place_buffer"),
            on_weight="change the weight where no graph still needs its old value: right after "
            "optimizer.step() (or before the forward), not between the forward and the "
            "backward; written out of place or into a copy, the weight would stay as it was"),
    Pattern("accumulated_loss", "a loss accumulated as a tensor across steps",
            "call backward on each step's loss and keep a running total as a number "
            "(loss.item()); clear lists of log-probabilities or losses after each update",
            ("06_accumulating_loss", "15_rl_buffers"),
            "clear the list after each backward (or append .detach()ed values, or numbers "
            "from .item(), if they only need logging)",
            rule=accumulated.total_or_buffer, proofs=("accumulated_loss", "accumulated_loss_augmented")),
    Pattern("hidden_state", "hidden state carried from one batch into the next",
            "detach the state at the start of each batch (h = h.detach() for a tensor; "
            "state = tuple(s.detach() for s in state) for a tuple such as an LSTM's (h, c), "
            "and every tensor of nested tuples), which is truncated backpropagation through time",
            ("05_rnn_hidden_state",),
            "detach it at the start of each batch",
            rule=carried_state.detach_state,
            proofs=("hidden_state_tensor", "hidden_state_tuple", "hidden_state_nested",
                    "hidden_state_attribute", "hidden_state_dict")),
    Pattern("kept_value", "a value made from an earlier step's graph and kept for a later "
            "step (weights or targets computed from predictions or losses)",
            "store it .detach()ed (or compute it under torch.no_grad()) where it is made, so a "
            "later step takes its value as a constant; compute it again inside the step if the "
            "loss should train what made it",
            ("10_detach", "16_module_state_with_history"),
            "detach it where it is made (or compute it under torch.no_grad())",
            rule=kept_values.detach_kept, proofs=("kept_value",)),
    Pattern("module_state", "a module attribute or buffer updated with history",
            "update it under torch.no_grad() or store a .detach()ed value",
            ("16_module_state_with_history",),
            rule=kept_values.detach_stored, proofs=("module_state",)),
    Pattern("outside_loop", "a tensor computed outside the loop and reused every step",
            "compute it inside the loop, or under torch.no_grad() (or .detach() it) if it needs "
            "no gradient",
            ("13_tensor_outside_loop", "04_two_networks"),
            "compute it inside the loop, or detach it (or compute it under torch.no_grad()) "
            "if it needs no gradient",
            rule=outside_loop.recompute_inside, proofs=("outside_loop", "outside_loop_closure")),
    Pattern("shared_trunk", "a shared part of the graph that an earlier backward already went "
            "through (two losses over one forward, a GAN's fake batch, a tensor computed outside "
            "the loop)",
            "sum the losses and call backward once; detach what one step hands to another "
            "(D(fake.detach()) in a GAN's discriminator step); recompute what was computed "
            "outside the loop",
            ("02_two_losses_one_forward", "12_gan_discriminator", "13_tensor_outside_loop"),
            rule=call_order.sum_losses, proofs=("shared_trunk", "shared_trunk_across_step"),
            across_step="compute the shared part again after optimizer.step() for the second "
                        "loss; summing the losses would drop the first step, and "
                        "retain_graph=True would meet the weights the step changed in place"),
    Pattern("growing_buffer", "a list of tensors kept across updates (log-probabilities, losses)",
            "clear the list after each update (del buffer[:]), or store .detach()ed values or "
            "numbers (.item()) if they are only logged",
            ("15_rl_buffers", "06_accumulating_loss"),
            rule=accumulated.clear_buffer, proofs=("growing_buffer",)),
    Pattern("gan_discriminator", "a generated batch used again after the discriminator's "
            "backward went through the generator",
            "in the discriminator step use D(fake.detach()); then the generator step's "
            "D(fake) is the only backward through the generator",
            ("12_gan_discriminator",),
            rule=detached_reads.detach_reads_before, proofs=("gan_discriminator",)),
    Pattern("grad_then_backward", "autograd.grad, then backward, through the same graph",
            "pass retain_graph=True to autograd.grad (create_graph=True if the gradient is part "
            "of the loss), or compute the loss again before backward",
            ("14_grad_then_backward", "01_backward_twice"),
            rule=call_order.retain_on_grad, proofs=("grad_then_backward",),
            across_step="compute the loss again after optimizer.step() and before backward; "
                        "retain_graph=True on autograd.grad would not do, since the step changes "
                        "in place the weights the graph saved"),
    Pattern("higher_order", "a gradient taken without create_graph=True, then a loss "
            "through the same graph",
            "pass create_graph=True to autograd.grad when the loss uses the gradient (a gradient "
            "penalty); pass retain_graph=True when the loss only goes through the same graph "
            "again",
            ("11_higher_order_gradients", "14_grad_then_backward"),
            rule=call_order.grad_keeps_graph, proofs=("higher_order_penalty", "higher_order_again")),
    Pattern("meta_learning", "an inner gradient step on the weights without create_graph=True, "
            "then an outer loss through the inner graph",
            "pass create_graph=True to the inner autograd.grad (second-order); for first-order, "
            "keep the inner gradients as they are (without create_graph they carry no graph) "
            "and compute again, or drop, the inner-loss term that the outer loss reuses",
            ("20_meta_learning",),
            rule=call_order.second_order, proofs=("meta_learning",)),
    Pattern("checkpoint", "backward a second time through a checkpointed region",
            "run the forward again before the second backward, or pass retain_graph=True to the "
            "first one",
            ("18_checkpoint",),
            rule=call_order.rerun_or_retain, proofs=("checkpoint",), across_step=_NO_RETAIN),
    Pattern("custom_function", "backward a second time through a custom autograd.Function",
            "run the forward again before the second backward, or pass retain_graph=True to the "
            "first one; do not read ctx.saved_tensors after backward",
            ("17_custom_function",),
            rule=call_order.rerun_or_retain, proofs=("custom_function",),
            across_step=_NO_RETAIN + "; do not read ctx.saved_tensors after backward"),
    Pattern("two_networks", "one network's output fed to a second network after the first "
            "network's backward went through it",
            "detach the output before the second network if its loss should not train the first "
            "(net2(h.detach())), or sum the two losses and call backward once",
            ("04_two_networks", "02_two_losses_one_forward"),
            rule=detached_reads.detach_at_use, proofs=("two_networks",)),
    # Named when the evidence shows none of the patterns above: it has no edit rule and no proof
    # program (there is no fix to execute); the command prints no diff and says so.
    Pattern("unknown", "none that the evidence shows", "find the tensor that crosses from one "
            "step into the next and detach it, or compute it inside the step",
            ("chapters/debugging",)),
)}
"""The patterns :func:`~autograd_lens.diagnose` can name, by key."""
