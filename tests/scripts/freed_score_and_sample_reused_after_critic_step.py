"""A planner proposes actions and a critic scores them; the critic's loss goes back through the
proposal (not detached) and the critic steps. The planner's loss then reuses both the score and
the proposal made before that step, whose graphs the critic's backward freed. Computing the
score again after the step is not enough: it would be computed from the old proposal, which
still holds the freed graph; the proposal is computed again first."""
import torch

torch.manual_seed(0)
planner = torch.nn.Linear(4, 2)
critic = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
opt_planner = torch.optim.SGD(planner.parameters(), lr=0.05)
opt_critic = torch.optim.SGD(critic.parameters(), lr=0.05)

for step in range(3):
    state, reward = torch.randn(16, 4), torch.randn(16, 1)
    proposal = torch.tanh(planner(state))  # proposed
    score = critic(proposal)  # scored
    critic_loss = (score - reward).pow(2).mean()
    opt_critic.zero_grad()
    critic_loss.backward()
    opt_critic.step()
    opt_planner.zero_grad()
    planner_loss = -score.mean() + 0.1 * proposal.pow(2).mean()  # reused
    planner_loss.backward()  # fails
    opt_planner.step()
print("TRAINED")
