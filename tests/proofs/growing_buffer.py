"""growing_buffer: log-probabilities kept in a list across episodes."""
import torch
from torch import nn

torch.manual_seed(0)
policy = nn.Linear(2, 2)
observations = torch.randn(2, 3, 2)
log_probs = []
for episode in range(2):
    for obs in observations[episode]:
        log_probs.append(policy(obs).log_softmax(-1)[0])
    loss = -torch.stack(log_probs).sum()
    loss.backward()
