"""Two losses share a network's output and each gets its own backward; the gradients of the
first are clipped before the second's backward, which finds the graph freed. Merging the two
into one backward of the sum would move the second loss's gradients below the clip (the clip
would then run on no gradient at all, after zero_grad), so the only edit offered keeps the graph,
and its words say that the clip still sees the first loss's gradients only."""
import torch

torch.manual_seed(0)
net = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(3):
    out = net(torch.randn(16, 4))
    loss_a = out[:, 0].pow(2).mean()
    loss_b = out[:, 1].abs().mean()
    optimizer.zero_grad()
    loss_a.backward()
    torch.nn.utils.clip_grad_norm_(net.parameters(), 0.5)
    loss_b.backward()
    optimizer.step()
