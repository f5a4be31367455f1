"""Loaded by every Python process started with this folder on PYTHONPATH (`bench.profile_ros` puts it
there for the `sim` process it starts). With BINPICK_TRACE=<file> set, it wraps four methods of the sim's
nodes so that each lock-step request leaves wall-clock marks (CLOCK_MONOTONIC, which every process on
the machine shares), written to <file>.<pid> at exit. Without the variable it does nothing.

With BINPICK_THREAD_NAMES set, every Python thread started after it (the sim's `physics`, `camera_frames`,
`executor`, ...) also names itself for the OS (Linux's /proc/<pid>/task/<tid>/comm, `top -H`), which
Python 3.11 does not do: `bench.profile_published --threads` reads each thread's CPU by that name.

The marks, in the order a request meets them (method names as on main since 2026-11-23, so an older
checkout can be profiled the same way):
  taken     TaskNode.take (before the step channel: on_step) entered: the request is in the sim's hands
            (transport, wake-up, take done)
  stepping  PhysicsLoop._add_budget: the command is checked and applied (IK included), steps begin
  settled   TaskNode.update entered: the steps are taken
  replied   TaskNode.update returns: task rules, observation, JSON and the reply's publish done

With BINPICK_TRACE_CPROFILE set too, the physics thread (PhysicsLoop._run: the steps, and in lock-step
the requests it serves itself) runs under cProfile with the thread's own CPU clock, so time spent
waiting for a request is not booked; its stats go to <file>.prof.<pid> when the thread ends.
"""
import os
import sys

if os.environ.get("BINPICK_THREAD_NAMES") and sys.platform.startswith("linux"):
    import ctypes
    import threading

    _prctl = ctypes.CDLL(None, use_errno=True).prctl
    _PR_SET_NAME = 15  # linux/prctl.h: the calling thread's name, 15 bytes and a NUL
    _run = threading.Thread.run

    def _named_run(self):
        _prctl(_PR_SET_NAME, self.name.encode()[:15], 0, 0, 0)
        return _run(self)

    threading.Thread.run = _named_run

if os.environ.get("BINPICK_TRACE"):
    import atexit
    import time

    _marks: list = []

    def _marked(cls, name: str, label: str, after: bool = False):
        original = getattr(cls, name)

        def wrapper(*args, **kwargs):
            if not after:
                _marks.append((label, time.monotonic()))
            result = original(*args, **kwargs)
            if after:
                _marks.append((label, time.monotonic()))
            return result

        setattr(cls, name, wrapper)

    def _install() -> None:
        from binpick_sim.cell.loop import PhysicsLoop
        from binpick_sim.nodes.servers.task_node import TaskNode

        _marked(TaskNode, "take" if hasattr(TaskNode, "take") else "on_step", "taken")  # take: both transports
        _marked(PhysicsLoop, "_add_budget", "stepping")
        _marked(TaskNode, "update", "settled")
        _marked(TaskNode, "update", "replied", after=True)  # wraps the wrapper: marks after the publish
        if os.environ.get("BINPICK_TRACE_CPROFILE"):
            _profiled(PhysicsLoop, "_run")

    def _profiled(cls, name: str) -> None:
        import cProfile

        original = getattr(cls, name)

        def wrapper(*args, **kwargs):
            profiler = cProfile.Profile(time.thread_time)
            profiler.enable()
            try:
                return original(*args, **kwargs)
            finally:
                profiler.disable()
                profiler.dump_stats(f"{os.environ['BINPICK_TRACE']}.prof.{os.getpid()}")

        setattr(cls, name, wrapper)

    class _AfterStackImport:
        """Installs the wrappers once the sim's stack module is imported (the nodes exist by then)."""

        def find_spec(self, name, path=None, target=None):
            if name == "binpick_sim.nodes.process.stack":
                sys.meta_path.remove(self)
                _install()
            return None

    sys.meta_path.insert(0, _AfterStackImport())

    def _dump() -> None:
        with open(f"{os.environ['BINPICK_TRACE']}.{os.getpid()}", "w") as out:
            out.writelines(f"{label} {t!r}\n" for label, t in _marks)

    atexit.register(_dump)
