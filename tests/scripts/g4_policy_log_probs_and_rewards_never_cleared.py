"""REINFORCE whose two episode lists are never emptied: the log-probabilities (they carry each
step's graph) and, beside them, the rewards. The second episode's backward reaches the first
episode's freed graphs. Emptying only the log-probabilities leaves the rewards growing: the next
episode's returns no longer match its log-probabilities in size."""
import torch

torch.manual_seed(0)
policy = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
optimizer = torch.optim.Adam(policy.parameters(), lr=0.01)
saved_log_probs = []
rewards = []
for episode in range(4):
    for t in range(5):
        state = torch.randn(4)
        dist = torch.distributions.Categorical(logits=policy(state))
        action = dist.sample()
        saved_log_probs.append(dist.log_prob(action))
        rewards.append(float(action.item() == 0))
    returns = torch.tensor(rewards)
    returns = (returns - returns.mean()) / (returns.std() + 1e-6)
    loss = -(torch.stack(saved_log_probs) * returns).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
