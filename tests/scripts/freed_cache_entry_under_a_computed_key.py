"""A relative-position bias is looked up once per sequence length and cached in a dict under a
key the method computes (``self.cache[key]``, guarded by ``if key not in self.cache:``), with
the graph of the lookup from the learned table; the second step reads the cached entry and goes
back into the graph the first step's backward freed. Named as the store writes it; the guard
fills the entry again whenever a graph is recorded."""
import torch

torch.manual_seed(0)


class RelativeBias(torch.nn.Module):
    def __init__(self, span):
        super().__init__()
        self.table = torch.nn.Parameter(torch.zeros(span))
        self.cache = {}

    def bias(self, n):
        key = f"len{n}"
        if key not in self.cache:
            offsets = (torch.arange(n)[:, None] - torch.arange(n)[None, :]).abs()
            self.cache[key] = self.table[offsets]  # made
        return self.cache[key]

    def forward(self, scores):
        return scores + self.bias(scores.shape[-1])


layer = RelativeBias(6)
readout = torch.nn.Linear(5, 1)
optimizer = torch.optim.SGD(list(layer.parameters()) + list(readout.parameters()), lr=0.1)
for step in range(3):
    scores = torch.randn(5, 5)
    loss = readout(layer(scores).softmax(-1)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
print("TRAINED")
