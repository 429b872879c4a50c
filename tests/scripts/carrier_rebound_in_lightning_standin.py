"""Lightning's shape with manual optimization (tests/scripts/standin_frameworks.py): the
training step reads the hidden state kept on `self`, computes this batch's state from it, keeps
that on `self` again, then calls `self.manual_backward(loss)`. When backward fails, `self.h` and
`h` hold this batch's state: the old one is found by the graph, and named where it was read."""
import torch

from standin_frameworks import LightningModule


class Model(LightningModule):
    def __init__(self):
        super().__init__()
        self.cell = torch.nn.GRUCell(3, 8)
        self.head = torch.nn.Linear(8, 1)
        self.h = None

    def training_step(self, batch, batch_idx):
        x, y = batch
        h = self.h if self.h is not None else torch.zeros(x.shape[0], 8)  # enters: self.h
        h = self.cell(x, h)
        self.h = h
        loss = torch.nn.functional.mse_loss(self.head(h), y)
        self.optimizer.zero_grad()
        self.manual_backward(loss)
        self.optimizer.step()


torch.manual_seed(0)
model = Model()
batches = [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(4)]
model.fit(batches, torch.optim.SGD(model.parameters(), lr=0.05))
# page: 05_rnn_hidden_state
print("trained")
