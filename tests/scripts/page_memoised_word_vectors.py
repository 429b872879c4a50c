"""Word vectors memoised in a dict by word, so that a sentence seen again reuses them."""
import torch
from torch import nn

torch.manual_seed(8)
vocabulary = {w: torch.randn(5) for w in ("red", "green", "blue", "dark", "light")}
encode = nn.Linear(5, 4)
classify = nn.Linear(4, 2)
opt = torch.optim.SGD([*encode.parameters(), *classify.parameters()], lr=0.1)
vectors = {}


def vector(word):
    if word not in vectors:
        vectors[word] = torch.tanh(encode(vocabulary[word]))
    return vectors[word]


sentences = [(["dark", "red"], 0), (["light", "blue"], 1), (["dark", "green"], 0)]
for words, label in sentences:
    pooled = torch.stack([vector(w) for w in words]).mean(0)
    loss = nn.functional.cross_entropy(classify(pooled)[None], torch.tensor([label]))
    opt.zero_grad()
    loss.backward()  # page: 13_tensor_outside_loop
    opt.step()
