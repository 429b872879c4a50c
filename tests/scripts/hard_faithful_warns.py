"""A warning torch gives with stacklevel=2 from torch.autograd.backward (the deprecated
grad_variables argument): it must point at the line below, as under plain python."""
import torch

w = torch.ones(3, requires_grad=True)
torch.autograd.backward((w * w).sum(), grad_variables=torch.ones(()))
print(w.grad.tolist())
