"""An agent encodes the next observation at the end of each pass, before the optimizer steps
(``state = encoder(next_obs)``), and the next pass builds its policy output from that state.
The step changed in place the encoder weight that the state's graph saved: the policy output is
built after the step, from a value made before it."""
import torch

torch.manual_seed(0)
encoder = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 8))
policy = torch.nn.Linear(8, 2)
optimizer = torch.optim.SGD(list(encoder.parameters()) + list(policy.parameters()), lr=0.1)
obs = torch.randn(1, 4)
state = encoder(obs)
for step in range(3):
    logits = policy(state)  # read
    next_obs = torch.randn(1, 4)
    state = encoder(next_obs)  # made
    loss = -torch.log_softmax(logits, -1)[0, 0]
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
    obs = next_obs
print("TRAINED")
