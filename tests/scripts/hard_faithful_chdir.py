"""Changes its working folder, then works."""
import os

import torch

os.makedirs("elsewhere", exist_ok=True)
os.chdir("elsewhere")
print((torch.ones(2) * 2).tolist())
