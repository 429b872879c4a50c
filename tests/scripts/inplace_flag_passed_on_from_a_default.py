"""A builder of hidden blocks whose layers take their in-place mode from the builder's own
parameter, on by default: the block's dropout then writes the ELU's output in place, which the
in-place ELU's node saved as its result."""
import torch
from torch import nn

torch.manual_seed(0)


def hidden_block(width_in, width_out, p=0.3, inplace=True):  # default
    return nn.Sequential(nn.Linear(width_in, width_out), nn.ELU(inplace=inplace),
                         nn.Dropout(p, inplace=inplace))


encoder = nn.Sequential(hidden_block(6, 10), hidden_block(10, 10), nn.Linear(10, 1))
opt = torch.optim.Adam(encoder.parameters(), lr=1e-2)
for step in range(2):
    x, y = torch.randn(12, 6), torch.randn(12, 1)
    loss = nn.functional.mse_loss(encoder(x), y)  # write
    opt.zero_grad()
    loss.backward()  # fails
    opt.step()
print("TRAINED")
