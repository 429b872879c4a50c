"""A coarse head and a fine head that reads the coarse one's output, each with its own
optimizer, trained by one loop over (optimizer, loss) pairs: the coarse head's step changes in
place weights the fine loss's graph saved, and the fine loss's backward meets them."""
import torch
from torch import nn

torch.manual_seed(0)
coarse = nn.Sequential(nn.Linear(5, 6), nn.Tanh(), nn.Linear(6, 3))
fine = nn.Linear(8, 2)
optimizers = [torch.optim.SGD(coarse.parameters(), lr=0.1),
              torch.optim.SGD(fine.parameters(), lr=0.1)]
for epoch in range(3):
    x, y_coarse, y_fine = torch.randn(16, 5), torch.randn(16, 3), torch.randn(16, 2)
    guess = coarse(x)
    refined = fine(torch.cat([x, guess], dim=1))
    losses = [(guess - y_coarse).pow(2).mean(), (refined - y_fine).pow(2).mean()]
    for optimizer, loss in zip(optimizers, losses):
        optimizer.zero_grad()
        loss.backward(retain_graph=True)  # fails
        optimizer.step()  # step
print("TRAINED")
