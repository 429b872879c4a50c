"""Edits that must run and train what the program meant, on programs of tests/scripts/e7_*.py:
for the in-place error, a buffer refilled with copy_() after zero_() (the copy made before both:
copy_ has no out-of-place form), products chained through the rows of one table (every product
reads copies of the rows, not the last one alone), and a weight that an embedding's max_norm
renormalises in place after a tied projection saved it (the projection reads a copy; the
forward's list of logits, named as the caller's tensor, is not held against the edit); and, for
the freed-graph error, a critic's score of the real batch from its own step reused in the
generator's loss after the critic stepped (scored again there, not detached in the critic's
loss, which needs its gradient); and an encoder's step between its retained backward and a
critic's loss of the same name (built again after the step: the name's second loss is another
loss, not a second gradient of the first one, so the step is not moved after it).
Each edit, applied and run, gives the weights of an independent reference written here.
"""

from __future__ import annotations


import pytest
import torch
from torch import nn
from torch.nn import functional as F

from command_runs import command_reports, trains_as
from places import TESTS

SCRIPTS = TESTS / "scripts"
PROGRAMS = sorted(p.name for p in SCRIPTS.glob("e7_*.py"))


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    return command_reports(PROGRAMS, tmp_path_factory.mktemp("e7"))


def ref_features() -> dict:
    torch.manual_seed(0)
    encoder, head = nn.Linear(4, 3), nn.Linear(3, 1)
    opt = torch.optim.SGD(list(encoder.parameters()) + list(head.parameters()), lr=0.1)
    frames, goals = torch.randn(3, 6, 4), torch.randn(3, 6, 1)
    for _ in range(2):
        loss = sum((head(torch.relu(encoder(f))) - g).pow(2).mean() for f, g in zip(frames, goals))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"encoder.weight": encoder.weight, "head.weight": head.weight}


def ref_gates() -> dict:
    torch.manual_seed(0)
    gates = nn.ModuleList([nn.Linear(5, 1) for _ in range(3)])
    opt = torch.optim.SGD(gates.parameters(), lr=0.1)
    for _ in range(3):
        x, y = torch.randn(8, 5), torch.rand(8)
        out = torch.ones(8)
        for gate in gates:
            out = out * torch.sigmoid(gate(x)).squeeze(1)
        loss = (out - y).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {f"gates.{i}.weight": g.weight for i, g in enumerate(gates)}


def ref_tied() -> dict:
    """The renormalisation done by hand (rows longer than 0.5 scaled to 0.5, as torch's
    embedding_renorm_ does), the lookup and the scores out of place, with no max_norm."""
    torch.manual_seed(0)
    words = nn.Embedding(9, 4)
    opt = torch.optim.SGD(words.parameters(), lr=0.5)
    centres = [torch.tensor([0, 3]), torch.tensor([5, 7]), torch.tensor([1, 8])]
    context = torch.tensor([[2, 4], [6, 1], [3, 0]])
    for _ in range(2):
        weight, logits = words.weight, []
        for centre in centres:
            with torch.no_grad():
                norms = weight[centre].norm(dim=1, keepdim=True)
                scale = torch.where(norms > 0.5, 0.5 / (norms + 1e-7), torch.ones_like(norms))
                weight[centre] *= scale
            now = weight * 1.0
            logits.append(F.linear(now[centre], now))
        loss = F.cross_entropy(torch.stack(logits).reshape(-1, 9), context.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"model.words.weight": words.weight}


def ref_gan() -> dict:
    torch.manual_seed(0)
    gen = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))
    critic = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1))
    opt_gen = torch.optim.SGD(gen.parameters(), lr=0.05)
    opt_critic = torch.optim.SGD(critic.parameters(), lr=0.05)
    for _ in range(3):
        real = torch.randn(16, 2) * 0.5 + 1.0
        noise = torch.randn(16, 3)
        fake = gen(noise)
        with torch.no_grad():
            fake_now = fake.clone()
        before_real, before_fake = critic(real), critic(fake_now)
        critic_loss = ((before_real - before_fake.mean() - 1) ** 2).mean() + \
            ((before_fake - before_real.mean() + 1) ** 2).mean()
        opt_critic.zero_grad()
        critic_loss.backward()
        opt_critic.step()
        gen_loss = ((critic(fake) - critic(real).mean() - 1) ** 2).mean()
        opt_gen.zero_grad()
        gen_loss.backward()
        opt_gen.step()
    return {"gen.0.weight": gen[0].weight, "critic.0.weight": critic[0].weight}


def ref_encoder_critic() -> dict:
    """The critic's loss from codes made after the encoder's step, detached: the encoder's
    gradients that loss would add are cleared before they are used."""
    torch.manual_seed(0)
    enc = nn.Sequential(nn.Linear(6, 4), nn.Tanh(), nn.Linear(4, 2))
    critic = nn.Sequential(nn.Linear(2, 6), nn.ReLU(), nn.Linear(6, 1))
    dec = nn.Linear(2, 6)
    opt_enc = torch.optim.Adam(list(enc.parameters()) + list(dec.parameters()), lr=1e-2)
    opt_critic = torch.optim.Adam(critic.parameters(), lr=1e-2)
    bce = F.binary_cross_entropy_with_logits
    for _ in range(3):
        x, prior = torch.randn(10, 6), torch.randn(10, 2)
        codes = enc(x)
        scores = critic(torch.tanh(codes))
        opt_enc.zero_grad()
        (F.mse_loss(dec(codes), x) + bce(scores, torch.ones_like(scores))).backward()
        opt_enc.step()
        opt_critic.zero_grad()
        after = critic(torch.tanh(enc(x).detach()))
        (bce(after, torch.zeros_like(after)) + bce(critic(prior), torch.ones(10, 1))).backward()
        opt_critic.step()
    return {"enc.0.weight": enc[0].weight, "dec.weight": dec.weight,
            "critic.0.weight": critic[0].weight}


CASES = {
    "e7_encoder_stepped_before_critic_loss.py": ref_encoder_critic,
    "e7_features_refilled_by_copy.py": ref_features,
    "e7_gan_real_scores_reused.py": ref_gan,
    "e7_gates_chained_in_a_buffer.py": ref_gates,
    "e7_tied_scores_with_max_norm.py": ref_tied,
}


def test_every_program_has_its_reference():
    assert sorted(CASES) == PROGRAMS


@pytest.mark.parametrize("name", PROGRAMS)
def test_the_edit_trains_as_the_reference(name, reports, tmp_path):
    found = reports[name]
    assert found["code"] == 1, found["text"]
    assert found["report"]["pattern"] == ("gan_discriminator" if "gan" in name else
                                          "modified_in_place" if "stepped" in name else
                                          "written_in_place"), found["text"]
    trains_as(name, found["report"], CASES[name](), tmp_path)


def test_the_copy_goes_before_the_run_of_in_place_calls(reports):
    edits = reports["e7_features_refilled_by_copy.py"]["report"]["edits"]
    assert [(e["old"].strip(), [n.strip() for n in e["new"]]) for e in edits] == [
        ("feats.zero_()", ["feats = feats.detach().clone()", "feats.zero_()"])]


def test_the_critic_scores_again_and_its_own_loss_is_untouched(reports):
    report = reports["e7_gan_real_scores_reused.py"]["report"]
    assert [[n.strip() for n in e["new"]][0] for e in report["edits"]] == \
        ["real_scores = critic(real)"] and report["alternatives"] == [], report["edits"]


def test_every_product_of_the_chain_reads_copies(reports):
    edits = reports["e7_gates_chained_in_a_buffer.py"]["report"]["edits"]
    assert len(edits) == 3 and all("].clone() *" in e["new"][0] for e in edits), edits
