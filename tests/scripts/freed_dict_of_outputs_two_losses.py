"""A renderer returns a dict of its outputs; a helper backpropagates a loss over one entry itself,
then the step's own loss reads another entry of the same dict, whose graph that backward freed.
The dict holds this forward's outputs only, made in the step that fails: no list of tensors grew
across updates; two losses over one forward."""
import torch
import torch.nn.functional as F

torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(3, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)


def render(x):
    h = net(x)
    return {"color": torch.sigmoid(h[:, 0]), "density": F.softplus(h[:, 1])}


def guide(color):
    (color - 0.5).pow(2).mean().backward()


for step in range(3):
    x = torch.randn(32, 3)
    optimizer.zero_grad()
    out = render(x)  # got
    guide(out["color"])
    reg = out["density"].mean()
    reg.backward()  # fails
    optimizer.step()
print("TRAINED")
