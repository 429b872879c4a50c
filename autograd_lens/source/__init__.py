"""The user's program as its source shows it: reading its statements, naming its places and the
tensors its names reach, finding its in-place writes, and editing its own lines."""
