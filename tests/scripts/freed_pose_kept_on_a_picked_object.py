"""Two camera rigs take turns: each step picks one (``rig = rigs[step % 2]``) and, when
adjusting is switched on, corrects its pose with a learned per-rig embedding, keeping the
adjusted pose and the view made from it on the rig, through that alias. The third step picks the
first rig again: its pose, made inside the loop two steps before (not once before the loop),
still holds the graph that step's backward freed. The view the loss reads was made in this step,
from the old pose: it is not the carrier. Named as the statement that made it writes it."""
import torch

torch.manual_seed(0)


class Rig:
    def __init__(self, index, pose, lens):
        self.index = index
        self.pose = pose
        self.lens = lens
        self.view = pose @ lens


def project(rig, points):
    return points @ rig.view


lens = torch.eye(3) * 0.5
rigs = [Rig(i, torch.eye(3) + 0.1 * torch.randn(3, 3), lens) for i in range(2)]
corrector = torch.nn.Embedding(2, 9)
torch.nn.init.normal_(corrector.weight, std=0.01)
optimizer = torch.optim.SGD(corrector.parameters(), lr=0.05)
points, observed = torch.randn(5, 3), torch.randn(5, 3)


class Options:
    adjust_rigs = True


options = Options()
for step in range(4):
    rig = rigs[step % 2]
    if options.adjust_rigs:
        start = rig.pose.inverse()
        adjusted = start + corrector(torch.tensor(rig.index)).view(3, 3)
        rig.pose = adjusted.inverse()  # made
        rig.view = adjusted.inverse() @ rig.lens
    loss = (observed - project(rig, points)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
print("TRAINED")
