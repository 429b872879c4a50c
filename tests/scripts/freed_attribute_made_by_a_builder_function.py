"""A builder function computes a camera scale from an aligner's learned parameter and hands it
to a scene object, which keeps it as ``scene.scale``; the optimisation of the scene's points
then reads it in every step: the second step goes back into the graph the first one freed. No
method of the scene made it: it is named where the builder made it, by the name it has there."""
import torch


class Scene:
    def __init__(self, points, scale):
        self.points = torch.nn.Parameter(points)
        self.scale = scale


def build_scene(aligner_log_scale, points):
    scale = aligner_log_scale.exp() * torch.ones(3)  # made
    return Scene(points, scale)


torch.manual_seed(0)
aligner_log_scale = torch.zeros((), requires_grad=True)
scene = build_scene(aligner_log_scale, torch.randn(8, 3))
optimizer = torch.optim.SGD([scene.points], lr=0.1)
target = torch.randn(8, 3)
for step in range(3):
    loss = (scene.points * scene.scale - target).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
print("TRAINED")
