"""One GRU cell serves two speakers, each keeping its own state in a dict between turns: the
state is read by the loop's key (hidden[who]), and the dict starts with None for each."""
import torch
from torch import nn

torch.manual_seed(0)
speakers = ["ana", "ben"]
cell, head = nn.GRUCell(2, 4), nn.Linear(4, 1)
opt = torch.optim.SGD(list(cell.parameters()) + list(head.parameters()), lr=0.1)
turns = {who: torch.randn(3, 5, 2) for who in speakers}
hidden = dict.fromkeys(speakers)
for turn in range(3):
    for who in speakers:
        hidden[who] = cell(turns[who][turn], hidden[who])  # enters: hidden["ana"]
        loss = head(hidden[who]).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
# page: 05_rnn_hidden_state
