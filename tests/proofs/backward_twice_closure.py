"""backward_twice: an optimizer's closure that calls backward on a loss computed outside it."""
import torch

torch.manual_seed(0)
model = torch.nn.Linear(3, 1)
x, y = torch.randn(8, 3), torch.randn(8, 1)
opt = torch.optim.LBFGS(model.parameters(), lr=0.1, max_iter=3)
loss = torch.nn.functional.mse_loss(model(x), y)


def closure():
    opt.zero_grad()
    loss.backward()
    return loss


opt.step(closure)
