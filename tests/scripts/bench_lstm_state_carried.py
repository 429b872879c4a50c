"""A small LSTM language model whose hidden state is carried from one batch into the next (a
graph of a few thousand nodes by the second backward, which fails): the program bench_cli.py
times the command on (diagnosis and the runs of the edits)."""
import torch

torch.set_num_threads(1)
torch.manual_seed(0)
embed, lstm = torch.nn.Embedding(100, 64), torch.nn.LSTM(64, 128, num_layers=2)
head = torch.nn.Linear(128, 100)
params = list(embed.parameters()) + list(lstm.parameters()) + list(head.parameters())
optimizer = torch.optim.SGD(params, lr=0.1)
tokens = torch.randint(0, 100, (160, 8))
state = None
for step in range(4):
    x = embed(tokens[:-1])
    for t in range(x.shape[0]):  # one step at a time: a graph of a few thousand nodes
        out, state = lstm(x[t:t + 1], state)
        loss = torch.nn.functional.cross_entropy(head(out[0]), tokens[t + 1])
        total = loss if t == 0 else total + loss
    optimizer.zero_grad()
    total.backward()
    optimizer.step()
