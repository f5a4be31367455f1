"""How the `sim` process ends when it is interrupted while starting: one line, exit 130.

Both the entry point (an interrupt while importing) and the stack (one while building the nodes) end this
way; it lives here, below both, so that the stack need not import the entry point that imports it.
Nothing heavy is imported: the entry point reads this before rclpy and PyBullet are loaded.
"""
import os
import sys

INTERRUPTED = "binpick_sim: interrupted while starting"


def stop_interrupted() -> int:  # never returns
    """One line, exit 130, at once: whatever was half built (a DDS participant, an executor that never
    spun, a PyBullet client) is left to the OS, since tearing it down can block a process being stopped."""
    print(INTERRUPTED, file=sys.stderr, flush=True)
    os._exit(130)
