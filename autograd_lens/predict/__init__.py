"""Before backward runs: :func:`~autograd_lens.diagnose`, which predicts a stale saved tensor
and explains why, and its report."""
