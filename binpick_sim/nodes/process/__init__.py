"""The `sim` process: its entry point, the stack of nodes around one simulation, and running it as a child process."""
