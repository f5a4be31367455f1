"""Frames and the reasoner's masks drawn in a process of its own from a mirror of the scene: `worker` (the
process and its owner's side) and `shared_frames` (a frame's arrays brought back through shared memory)."""
