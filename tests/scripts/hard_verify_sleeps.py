"""Backward twice through one graph; a run from an edited copy sleeps for ten minutes between."""
import sys
import time

import torch

w = torch.ones(3, requires_grad=True)
loss = (w * w).sum()
loss.backward()
if "autograd_lens_verify_" in sys._getframe().f_code.co_filename:
    time.sleep(600)
loss.backward()
