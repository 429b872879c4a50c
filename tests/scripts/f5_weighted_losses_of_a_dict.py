"""A classifier and a regressor share a trunk; each task's loss, weighted, is backpropagated on its own."""
import torch
from torch import nn

torch.manual_seed(7)
trunk = nn.Sequential(nn.Linear(6, 16), nn.Tanh())
classify, regress = nn.Linear(16, 4), nn.Linear(16, 2)
params = [*trunk.parameters(), *classify.parameters(), *regress.parameters()]
opt = torch.optim.Adam(params, lr=0.01)
weight = {"cls": 1.0, "reg": 0.3}
data, kinds, targets = torch.randn(10, 6), torch.randint(0, 4, (10,)), torch.randn(10, 2)
for step in range(3):
    opt.zero_grad()
    features = trunk(data)
    per_task = {"cls": nn.functional.cross_entropy(classify(features), kinds),
                "reg": nn.functional.smooth_l1_loss(regress(features), targets)}
    for task, loss in per_task.items():
        (weight[task] * loss).backward()
    opt.step()
