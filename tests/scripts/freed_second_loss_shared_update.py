"""A denoiser cleans a signal and a classifier is trained on the cleaned signal; one helper
zeroes, backwards and steps for each network in turn. The classifier's update comes first and
its backward goes through the denoiser's graph (the cleaned signal is not detached), so the
denoiser's own loss, computed before it from the same forward, fails in the same helper."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)


class Trainer:
    def __init__(self):
        self.denoiser = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16))
        self.classifier = nn.Sequential(nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 3))
        self.opt_d = torch.optim.Adam(self.denoiser.parameters(), lr=1e-2)
        self.opt_c = torch.optim.SGD(self.classifier.parameters(), lr=0.1)

    def update(self, optimizer, loss):
        optimizer.zero_grad()
        loss.backward()  # fails
        optimizer.step()

    def step(self, noisy, clean, labels):
        cleaned = self.denoiser(noisy)
        denoise_loss = F.mse_loss(cleaned, clean)
        logits = self.classifier(cleaned)  # joins
        class_loss = F.cross_entropy(logits, labels)
        self.update(self.opt_c, class_loss)
        self.update(self.opt_d, denoise_loss)


trainer = Trainer()
clean = torch.randn(24, 16)
noisy = clean + 0.3 * torch.randn(24, 16)
labels = torch.randint(0, 3, (24,))
for epoch in range(3):
    trainer.step(noisy, clean, labels)
print("TRAINED")
