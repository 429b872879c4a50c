"""A small trainer: its batch method already backpropagates the loss and steps, and a callback
registered on it backpropagates the same stored loss again at the batch's end."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class StepCallback:
    def batch_end(self, trainer):
        trainer.metrics["loss"].backward()  # failing
        trainer.opt.step()
        trainer.opt.zero_grad()


class Trainer:
    def __init__(self, model, callbacks):
        self.model, self.callbacks, self.metrics = model, callbacks, {}
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def batch(self, x, y):
        loss = F.mse_loss(self.model(x), y)
        self.metrics["loss"] = loss
        loss.backward()  # freeing
        self.opt.step()
        self.opt.zero_grad()

    def fit(self, batches):
        for x, y in batches:
            self.batch(x, y)
            for callback in self.callbacks:
                callback.batch_end(self)


trainer = Trainer(nn.Linear(3, 1), [StepCallback()])
trainer.fit([(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(3)])
print("TRAINED")
