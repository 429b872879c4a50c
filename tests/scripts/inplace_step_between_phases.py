"""Two training phases share one forward: the supervised phase backwards with retain_graph=True
and steps its optimizer, the first of a list (the encoder among its weights), before the self-supervised phase
backwards its loss, built before that step from the same forward."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)

encoder = nn.Sequential(nn.Linear(6, 10), nn.Tanh(), nn.Linear(10, 10), nn.Tanh())
classify, rebuild = nn.Linear(10, 2), nn.Linear(10, 6)
phases = [torch.optim.SGD([*encoder.parameters(), *classify.parameters()], lr=0.1),
          torch.optim.SGD([*encoder.parameters(), *rebuild.parameters()], lr=0.1)]
for it in range(3):
    x, y = torch.randn(8, 6), torch.randint(0, 2, (8,))
    code = encoder(x)  # forward
    class_loss = F.cross_entropy(classify(code), y)
    rebuild_loss = F.mse_loss(rebuild(code), x)
    for optimizer in phases:
        optimizer.zero_grad()
    class_loss.backward(retain_graph=True)
    phases[0].step()  # steps
    rebuild_loss.backward()  # fails
    phases[1].step()
print("TRAINED")
