"""An encoder and a decoder trained together, healthy. A test edits it by hand to detach the
encoder's output where it is made: the edited program runs without an error, but the encoder
then gets no gradient, which the verification must see."""
import torch

torch.manual_seed(0)
encoder = torch.nn.Linear(3, 4)
decoder = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(list(encoder.parameters()) + list(decoder.parameters()), lr=0.1)
x = torch.randn(8, 3)
for step in range(4):
    code = encoder(x)
    loss = decoder(code).pow(2).mean() + code.pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
