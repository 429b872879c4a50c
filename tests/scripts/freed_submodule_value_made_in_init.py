"""A temperature module inside a classifier computes its temperature once, in __init__, from its
own parameter, and divides by it in forward: the second step's backward goes back into the
graph the first step's freed. At the failure the kept value is held as the classifier's
``model.temperature.t``, not by the name the module reads it by."""
import torch
from torch import nn


class Temperature(nn.Module):
    def __init__(self):
        super().__init__()
        self.log_t = nn.Parameter(torch.zeros(1))
        self.t = self.log_t.exp()  # made

    def forward(self, logits):
        return logits / self.t  # read


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(5, 3)
        self.temperature = Temperature()

    def forward(self, x):
        return self.temperature(self.body(x))


torch.manual_seed(0)
model = Classifier()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x, y = torch.randn(8, 5), torch.randint(0, 3, (8,))
    loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
print("TRAINED")
