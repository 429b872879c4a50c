"""A failed backward explained from its evidence: the carriers of the old graph, the write that
changed a saved tensor, the scene, the situation, its page, and the edits the recording supports."""
