"""Two sensors take turns: each step picks one (``sensor = sensors[step % 2]``), corrects its
offset with a small learned network and writes the corrected offset back into the sensor object,
through that alias; the loss reads the correction. The third step picks the first sensor again,
and its offset, written two steps before, still holds the graph that step's backward freed.
Named as the statement that keeps it writes it, and detached as each step picks its sensor."""
import torch

torch.manual_seed(0)


class Sensor:
    def __init__(self, offset):
        self.offset = offset


sensors = [Sensor(torch.randn(4)) for _ in range(2)]
adjuster = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(adjuster.parameters(), lr=0.05)
reading = torch.randn(4)
for step in range(4):
    sensor = sensors[step % 2]
    corrected = adjuster(sensor.offset)
    sensor.offset = corrected  # kept
    loss = (reading - corrected).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
print("TRAINED")
