"""A model keeps its LSTM cell's state (h, c) on itself: one method reads it and stores the new
state, and the step calls that method twice, one loss and one optimizer step each. The second
call reads the state the first loss's backward went through."""
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.LSTMCell(3, 5)
        self.value = nn.Linear(5, 1)
        self.policy = nn.Linear(5, 2)
        self.hidden = (torch.zeros(4, 5), torch.zeros(4, 5))

    def encode(self, x):
        self.hidden = self.cell(x, self.hidden)  # got
        return self.hidden[0]


torch.manual_seed(0)
model = Model()
opt_value = torch.optim.SGD([*model.cell.parameters(), *model.value.parameters()], lr=0.1)
opt_policy = torch.optim.SGD(model.policy.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(4, 3)
    value_loss = model.value(model.encode(x)).pow(2).mean()
    opt_value.zero_grad()
    value_loss.backward()
    opt_value.step()
    policy_loss = model.policy(model.encode(x)).pow(2).mean()  # enters
    opt_policy.zero_grad()
    policy_loss.backward()
    opt_policy.step()
print("TRAINED")
