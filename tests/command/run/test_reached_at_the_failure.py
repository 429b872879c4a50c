"""What the first run keeps at its failure for the runs of the edits to compare with
(``CallCounter.keep``): the parameters the failing call would reach, named by the modules alive,
and which of them an optimizer updates. The modules and optimizers alive are read in one pass
over the objects the collector tracks: each pass reads every object of the process (torch's own
are hundreds of thousands), and this runs in the first run while the replay starts beside it."""

from __future__ import annotations

import gc

import torch

from autograd_lens.run import reached
from autograd_lens.run.counting import CallCounter


def _failing_graph():
    """A model trained one step by Adam, and a loss on it whose graph an earlier backward
    freed; plus a linear layer no optimizer holds, and one the failing graph never reads."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    loose = torch.nn.Linear(1, 1)  # in the graph, held by no optimizer
    elsewhere = torch.nn.Linear(2, 2)  # trained by the optimizer, not in the graph
    optimizer = torch.optim.Adam([*model.parameters(), *elsewhere.parameters()], lr=0.1)
    elsewhere(torch.ones(1, 2)).sum().backward()
    optimizer.step()  # Adam keeps a state for `elsewhere`'s parameters: trained so far
    loss = loose(model(torch.ones(2, 3))).sum()
    loss.backward()
    return loss, (model, loose, elsewhere, optimizer)


def test_the_objects_alive_are_read_once_and_give_what_each_reading_alone_gives(monkeypatch):
    loss, kept = _failing_graph()
    found = [t for t in reached.leaves([loss]) if t.requires_grad]
    alone = (reached.names(found), reached.stepped(found),
             reached.names(reached.trained_so_far({id(t) for t in found})))

    passes = []
    every = gc.get_objects

    def counted(*args, **kwargs):
        passes.append(1)
        return every(*args, **kwargs)
    monkeypatch.setattr(gc, "get_objects", counted)
    counter = CallCounter()
    counter.keep([loss])
    assert len(passes) == 1

    modules, optimizers = reached.alive()
    assert {id(m) for m in kept[:3]} <= {id(m) for m in modules}
    assert id(kept[3]) in [id(o) for o in optimizers]  # (other tests' may be alive too)
    assert (reached.names(found, modules), reached.stepped(found, optimizers),
            reached.names(reached.trained_so_far({id(t) for t in found}, optimizers),
                          modules)) == alone
    # What the runs of the edits compare with: the model's four, which the optimizer updates,
    # and `elsewhere`'s two, trained so far; the loose layer's two, which no optimizer updates.
    assert counter.expected == {"Sequential.0.weight (4, 3)": 1, "Sequential.0.bias (4,)": 1,
                                "Sequential.2.weight (1, 4)": 1, "Sequential.2.bias (1,)": 1,
                                "Linear.weight (2, 2)": 1, "Linear.bias (2,)": 1}
    assert counter.unstepped == {"Linear.weight (1, 1)": 1, "Linear.bias (1,)": 1}


def test_a_weak_proxy_whose_object_is_gone_does_not_stop_the_reading():
    """Among the objects the collector tracks there can be a weak proxy whose object is gone
    (pytest and other libraries make them); reading its class raises ReferenceError, which
    once made every name unread (the whole reading is kept from raising, so it gave none)."""
    import weakref

    class Gone:
        pass

    kept = [weakref.proxy(Gone())]  # the object is gone at once: the proxy is dead
    assert gc.is_tracked(kept[0]) and any(found is kept[0] for found in gc.get_objects())
    loss, _ = _failing_graph()
    found = [t for t in reached.leaves([loss]) if t.requires_grad]
    assert "Sequential.0.weight (4, 3)" in reached.names(found)
    counter = CallCounter()
    counter.keep([loss])
    assert counter.expected and kept
