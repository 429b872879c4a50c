"""What the command and the IPython extension say about a failed backward, and when."""
