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
    spun, a PyBullet client) is left to the OS, since tearing it down can block a process being stopped.
    The OS does not clean /dev/shm, though: the participant's own segment is deleted first (shm.py)."""
    print(INTERRUPTED, file=sys.stderr, flush=True)
    if "binpick_sim.nodes.common.shm" in sys.modules:  # loaded by the stack, before any participant
        for path in sys.modules["binpick_sim.nodes.common.shm"].participant_segments():
            try:
                path.unlink()
            except OSError:
                pass
    os._exit(130)
