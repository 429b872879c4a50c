"""Models trained in turn on each batch, each loss appended to one history list that nothing
empties, and backwarded through the list by the model's index: from the second batch on, the
index reads the first batch's entry, whose graph that batch's backward freed."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)
models = [nn.Sequential(nn.Linear(5, 6), nn.Tanh(), nn.Linear(6, 1)) for _ in range(2)]
optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in models]
history = []
for batch in range(3):
    x, y = torch.randn(7, 5), torch.randn(7, 1)
    for k, (model, optimizer) in enumerate(zip(models, optimizers)):
        err = F.mse_loss(model(x), y)  # made
        history.append(err)  # kept
        optimizer.zero_grad()
        history[k].backward()  # fails
        optimizer.step()
print("TRAINED")
