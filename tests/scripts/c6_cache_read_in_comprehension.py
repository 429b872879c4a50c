"""Each sample's prediction of the last epoch, kept by sample id, is mixed into its target in the
next epoch; the stored predictions keep their graph."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Linear(6, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
inputs, labels = torch.randn(8, 6), torch.randint(0, 3, (8,))
last_epoch = {}
for epoch in range(2):
    for ids in torch.arange(8).split(4):
        probs = model(inputs[ids]).softmax(1)
        target = F.one_hot(labels[ids], 3).float()
        if epoch > 0:
            target = 0.5 * target + 0.5 * torch.stack([last_epoch[j] for j in ids.tolist()])  # carrier: last_epoch
        loss = -(target * probs.log()).sum(1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        for j, p in zip(ids.tolist(), probs):
            last_epoch[j] = p
