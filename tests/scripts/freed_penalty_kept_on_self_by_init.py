"""A small autoencoder whose weight-decay term on the decoder is computed once, when the object
is built, and kept as an attribute; its own training method adds it to every batch's loss.
The first backward frees the term's graph, and the second batch's backward fails."""
import torch
from torch import nn

torch.manual_seed(0)


class Compressor(nn.Module):
    def __init__(self, decay=0.01):
        super().__init__()
        self.enc, self.dec = nn.Linear(8, 3), nn.Linear(3, 8)
        self.decay = decay
        self.penalty = self.decoder_decay()  # made

    def decoder_decay(self):
        return self.decay * self.dec.weight.pow(2).sum()

    def train_on(self, batches):
        opt = torch.optim.SGD(self.parameters(), lr=0.05)
        for batch in batches:
            recon = self.dec(self.enc(batch).tanh())
            loss = (recon - batch).pow(2).mean() + self.penalty  # enters
            loss.backward()  # fails
            opt.step()
            opt.zero_grad()


net = Compressor()
net.train_on([torch.randn(16, 8) for _ in range(3)])
print("TRAINED")
