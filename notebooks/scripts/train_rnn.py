"""Train a small character-level LSTM on a toy corpus, chunk by chunk (truncated BPTT).

    python train_rnn.py [--epochs N] [--lr LR] [--detach]

Without --detach, the hidden state of one chunk goes into the next with its graph attached.
"""
import argparse

import torch
import torch.nn.functional as F
from torch import nn

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--lr", type=float, default=0.05)
parser.add_argument("--detach", action="store_true", help="detach the state between chunks")
args = parser.parse_args()

torch.manual_seed(0)
corpus = "the graph is freed after backward; detach what crosses into the next step. " * 4
vocab = sorted(set(corpus))
data = torch.tensor([vocab.index(ch) for ch in corpus])
CHUNK = 16


class CharLSTM(nn.Module):
    def __init__(self, n_chars, width=32):
        super().__init__()
        self.embed = nn.Embedding(n_chars, width)
        self.lstm = nn.LSTM(width, width, batch_first=True)
        self.head = nn.Linear(width, n_chars)

    def forward(self, x, state, detach=False):
        if detach and state is not None:  # truncated BPTT: cut the graph between chunks
            state = tuple(s.detach() for s in state)
        out, state = self.lstm(self.embed(x), state)
        return self.head(out), state


model = CharLSTM(len(vocab))
opt = torch.optim.Adam(model.parameters(), lr=args.lr)
for epoch in range(args.epochs):
    state, total = None, 0.0
    for start in range(0, len(data) - CHUNK - 1, CHUNK):
        x = data[start:start + CHUNK].unsqueeze(0)
        y = data[start + 1:start + CHUNK + 1].unsqueeze(0)
        logits, state = model(x, state, detach=args.detach)
        loss = F.cross_entropy(logits.squeeze(0), y.squeeze(0))
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
    print(f"epoch {epoch + 1}: mean loss {total / (len(data) // CHUNK):.3f}")
