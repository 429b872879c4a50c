"""A text encoder inside a segmentation model caches its class embeddings per dataset in a dict
(``self.cache[self.dataset] = embeds``), the key computed; the embeddings carry the graph of the
encoder's learned prompt, and every later step reads them back: the second step goes back into
the graph the first one freed. The entry is named as the line that stores it writes it."""
import torch
from torch import nn


class TextEncoder(nn.Module):
    def __init__(self, dataset):
        super().__init__()
        self.prompt = nn.Parameter(torch.randn(3, 4))
        self.dataset = dataset
        self.cache = {}

    def encode(self):
        return torch.tanh(self.prompt)

    def forward(self):
        if self.dataset not in self.cache:
            embeds = self.encode()
            self.cache[self.dataset] = embeds  # stored
        return self.cache[self.dataset]


class Segmenter(nn.Module):
    def __init__(self):
        super().__init__()
        self.pixels = nn.Linear(5, 4)
        self.text = TextEncoder("ade")

    def forward(self, x):
        return self.pixels(x) @ self.text().t()


torch.manual_seed(0)
model = Segmenter()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x, y = torch.randn(6, 5), torch.randint(0, 3, (6,))
    loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
print("TRAINED")
