"""Independent references for the in-place error's proof programs (tests/proofs/written_in_place_*.py,
modified_in_place_actor_critic.py): each gradient computed here with torch.func from the program's
seed and sizes, with no in-place write and no retained graph, to compare with what the edit of the
program leaves (see tests/command/fixes/test_pattern_proofs.py)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad


def _grads(module: nn.Module, loss_of) -> dict:
    params = {k: v.detach() for k, v in module.named_parameters()}
    return grad(lambda p: loss_of(lambda *a: functional_call(module, p, a)))(params)


def _state(**modules) -> dict:
    found = {}
    for name, (module, grads) in modules.items():
        for key, p in module.named_parameters():
            found[f"{name}.{key}"] = p.detach().clone()
            found[f"{name}.{key}.grad"] = grads[key] if grads is not None else None
    return found


def ref_written_add() -> dict:
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    x, target = torch.randn(8, 4), torch.rand(8, 3)
    grads = _grads(model, lambda f: -(target * (torch.sigmoid(f(x)) + 0.5).log()).mean())
    return _state(model=(model, grads))


def ref_written_relu() -> dict:
    torch.manual_seed(0)
    layer, head = nn.Linear(5, 8), nn.Linear(8, 1)
    x, y = torch.randn(10, 5), torch.randn(10, 1)
    both = nn.ModuleDict({"layer": layer, "head": head})
    params = {k: v.detach() for k, v in both.named_parameters()}

    def loss(p):
        hidden = F.relu(torch.tanh(x @ p["layer.weight"].T + p["layer.bias"]))
        return ((hidden @ p["head.weight"].T + p["head.bias"] - y) ** 2).mean()
    grads = grad(loss)(params)
    return {**_state(layer=(layer, {k[6:]: v for k, v in grads.items() if k.startswith("layer.")})),
            **_state(head=(head, {k[5:]: v for k, v in grads.items() if k.startswith("head.")}))}


def ref_written_buffer() -> dict:
    torch.manual_seed(0)
    encoder = nn.Linear(8, 4)
    queue = F.normalize(torch.randn(6, 4), dim=1)  # the buffer as the matrix product read it
    x = torch.randn(3, 8)
    grads = _grads(encoder, lambda f: torch.logsumexp(
        (F.normalize(f(x), dim=1) @ queue.t()) / 0.1, dim=1).mean())
    holder = nn.ModuleDict({"encoder": encoder})  # named as the program's model names it
    return _state(model=(holder, {f"encoder.{k}": v for k, v in grads.items()}))


def ref_actor_critic() -> dict:
    torch.manual_seed(0)
    actor = nn.Linear(3, 2)
    critic = nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 1))
    state, reward = torch.randn(6, 3), torch.randn(6, 1)
    action = torch.tanh(actor(state)).detach()
    first = _grads(critic, lambda f: ((f(torch.cat([state, action], 1)) - reward) ** 2).mean())
    with torch.no_grad():  # the critic's plain SGD step
        for key, p in critic.named_parameters():
            p -= 0.05 * first[key]
    # The actor's loss built again after the step: through the stepped critic.
    actor_grads = _grads(actor, lambda f: -critic(torch.cat([state, torch.tanh(f(state))], 1)).mean())
    second = _grads(critic, lambda f: -f(torch.cat([state, action], 1)).mean())
    critic_grads = {k: first[k] + second[k] for k in first}  # the actor's loss adds to them
    return {**_state(actor=(actor, actor_grads)), **_state(critic=(critic, critic_grads))}


INPLACE_REFERENCES = {
    "written_in_place_add": (["model"], [ref_written_add]),
    "written_in_place_relu": (["layer", "head"], [ref_written_relu]),
    "written_in_place_buffer": (["model"], [ref_written_buffer]),
    "modified_in_place_actor_critic": (["actor", "critic"], [ref_actor_critic]),
}


def ref_trunk_across_step() -> dict:
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    x, y = torch.randn(5, 4), torch.randn(5, 2)
    first = _grads(net, lambda f: f(x).pow(2).mean())
    with torch.no_grad():  # plain SGD's step
        for key, p in net.named_parameters():
            p -= 0.1 * first[key]
    # The second loss from a forward run again at the stepped weights (zero_grad before it).
    return _state(net=(net, _grads(net, lambda f: (f(x) - y).abs().mean())))


INPLACE_REFERENCES["shared_trunk_across_step"] = (["net"], [ref_trunk_across_step])
