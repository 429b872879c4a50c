"""A classifier whose constructor, to save memory, turns on the in-place mode of every activation
and dropout after building them: the dropout then writes the rectified activations in place, which
the in-place ReLU's node saved as its result."""
import torch
from torch import nn

torch.manual_seed(0)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Dropout(0.25),
                                  nn.Linear(12, 3))
        for layer in self.body:
            if isinstance(layer, (nn.ReLU, nn.Dropout)):
                layer.inplace = True  # flag

    def forward(self, x):
        return self.body(x)  # write


model = Classifier()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    x, y = torch.randn(8, 6), torch.randint(0, 3, (8,))
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()  # fails
    opt.step()
print("TRAINED")
