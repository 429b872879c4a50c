"""outside_loop, in a closure: L-BFGS calls the closure several times in one step; the prediction
is computed once outside it, so the closure's second backward meets the freed graph."""
import torch
import torch.nn.functional as F

torch.manual_seed(0)
model = torch.nn.Linear(3, 1)
x, y = torch.randn(8, 3), torch.randn(8, 1)
opt = torch.optim.LBFGS(model.parameters(), lr=0.1, max_iter=3)
prediction = model(x)


def closure():
    opt.zero_grad()
    loss = F.mse_loss(prediction, y)
    loss.backward()
    return loss


opt.step(closure)
