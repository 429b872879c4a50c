"""The lens the book uses: walking a graph, the states of its saved tensors, drawing it, replaying a
backward pass, the memory it keeps, and remembering which graphs backward calls went through."""
