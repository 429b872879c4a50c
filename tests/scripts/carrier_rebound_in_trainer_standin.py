"""A Trainer's shape (tests/scripts/standin_frameworks.py): the program's `compute_loss` adds a
term against the logits kept on `self` at the previous step, then keeps this step's logits
there, and the library calls backward after `compute_loss` returned. By then
`self.prev_logits` holds this step's logits: only the graph holds the old ones. The command must
name `self.prev_logits` where it was read, and say it was bound again."""
import torch

from standin_frameworks import Trainer


class SmoothTrainer(Trainer):
    prev_logits = None

    def compute_loss(self, model, inputs):
        x, y = inputs
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits, y)
        if self.prev_logits is not None:
            loss = loss + (logits - self.prev_logits).pow(2).mean()  # enters: self.prev_logits
        self.prev_logits = logits
        return loss


torch.manual_seed(0)
model = torch.nn.Linear(4, 3)
batches = [(torch.randn(8, 4), torch.randint(0, 3, (8,))) for _ in range(4)]
SmoothTrainer(model, torch.optim.SGD(model.parameters(), lr=0.1), batches).train()
# page: 16_module_state_with_history
print("trained")
