"""Where one ROS env step's wall time and CPU go, against the direct backend's step in the same run.

    python -m bench.profile_ros [--steps 300] [--env binpick_sim/FrankaDelta-v0] [--cprofile]
    python -m bench.profile_ros --observation image --renderer egl     # image observations, drawn with egl
    python -m bench.profile_ros --step-channel     # the steps over the ROS backend's step channel

Two views of the same steps (FrankaDelta-v0 by default, state observations, seed 0, random actions):

- **wall time, by stage**: the client marks when a gym step starts, when it sends its request and when
  it has the reply; the `sim` process marks (through `bench/trace/sitecustomize.py`, which this script
  puts on its PYTHONPATH) when it takes the request, when the steps begin, when they are done and when
  the reply is sent. All marks are CLOCK_MONOTONIC, shared by the two processes; the table gives each
  stage's median over the steps;
- **CPU, by thread**: each thread's user + system time from /proc over the same steps, per step.

With `--cprofile`, the sim's physics thread also runs under cProfile (its own CPU clock: waiting for a
request is not booked) and the script prints its calls per request and their CPU per request, by
function (the profiler's cost inflates the stages above then; compare runs with the same flag).

Both are measured, not sampled: a sampling profiler (py-spy) books a thread blocked in DDS or rclpy's
C++ executor as running and put a 40 us publish at 0.8 ms here. The script imports only what every
checkout since 2026-11-23 has, so `PYTHONPATH=/other/checkout python bench/profile_ros.py` profiles
another version the same way (doc/benchmarks.md's before/after).
"""
from __future__ import annotations

import argparse
import glob
import os
import statistics
import tempfile
import time
from pathlib import Path

TRACE = Path(__file__).resolve().parent / "trace"


def named_threads(environ) -> dict[str, str]:
    """A copy of `environ` for a process whose Python threads name themselves for the OS (`physics`, `slow
    callbacks`, ...: in /proc/<pid>/task/*/comm and `top -H`): bench/trace on its PYTHONPATH and
    BINPICK_THREAD_NAMES set."""
    return {**environ, "BINPICK_THREAD_NAMES": "1",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(TRACE), environ.get("PYTHONPATH")]))}


STAGES = [  # (from mark, to mark, what happens in between)
    ("gym step", "request sent", "client: gym step to request (action checks, message built, publish)"),
    ("request sent", "taken", "request transport: DDS, sim wake-up, take (and the GIL)"),
    ("taken", "stepping", "command checked, handed to the physics thread, applied (IK for deltas)"),
    ("stepping", "settled", "physics: stepSimulation x steps"),
    ("settled", "replied", "task rules, observation, JSON, reply published"),
    ("replied", "reply in hand", "reply transport: DDS, client wake-up, take, JSON parse (image mode: and the "
                                 "images, rendered after the reply)"),
    ("reply in hand", "step returned", "client: observation and info built, gym wrappers"),
]


def thread_cpu(pid: int) -> dict[tuple[int, str], float]:
    """CPU seconds (user + system) of each thread of `pid` alive now, by (thread id, name), the process's
    first thread named with " (main)" after it. (bench.physics.stat_cpu reads the same fields: this script
    imports nothing of its checkout's, see the module.)"""
    ticks = os.sysconf("SC_CLK_TCK")
    threads = {}
    for stat in glob.glob(f"/proc/{pid}/task/*/stat"):
        try:
            text = Path(stat).read_text()
        except OSError:  # the thread ended meanwhile
            continue
        name, fields = text[text.index("(") + 1:text.rindex(")")], text.rsplit(")", 1)[1].split()
        tid = int(stat.split("/")[-2])
        threads[(tid, f"{name} (main)" if tid == pid else name)] = (int(fields[11]) + int(fields[12])) / ticks
    return threads


def profile(steps: int, env_id: str, observation: str = "state", cprofile: bool = False, top: int = 25,
            renderer: str | None = None, step_channel: bool = False) -> str:
    """`renderer`: the scene's renderer for image observations (default: the scene file's). `step_channel`:
    the ROS backend exchanges its steps over its step channel."""
    import gymnasium as gym

    import binpick_sim.envs  # noqa: F401

    trace = Path(tempfile.mkdtemp(prefix="binpick_trace_")) / "sim"
    os.environ["BINPICK_TRACE"] = str(trace)
    if cprofile:
        os.environ["BINPICK_TRACE_CPROFILE"] = "1"
    os.environ.update(named_threads(os.environ))  # the trace's marks, and the CPU table's thread names
    options = {"renderer": renderer} if renderer else {}
    env = gym.make(env_id, backend="ros", observation=observation, **options,
                   **({"step_channel": True} if step_channel else {}))
    backend = env.unwrapped.backend  # the sim process starts here, with the variables above
    del os.environ["BINPICK_TRACE"]  # this process keeps its own marks
    os.environ.pop("BINPICK_TRACE_CPROFILE", None)
    os.environ.pop("BINPICK_THREAD_NAMES")
    marks: list[tuple[str, float]] = []
    sender = backend.channel if step_channel else backend.requester
    send_name = "send" if step_channel else "publish"
    publish, exchange = getattr(sender, send_name), backend._exchange

    def traced_publish(msg):
        marks.append(("request sent", time.monotonic()))
        publish(msg)

    def traced_exchange(*args, **kwargs):
        result = exchange(*args, **kwargs)
        marks.append(("reply in hand", time.monotonic()))
        return result

    setattr(sender, send_name, traced_publish)
    backend._exchange = traced_exchange
    try:
        env.reset(seed=0)
        env.action_space.seed(0)
        for _ in range(20):  # warm up
            env.step(env.action_space.sample())
        sim_pid = backend.process.process.pid
        cpu_before, mine_before = thread_cpu(sim_pid), thread_cpu(os.getpid())
        marks.clear()
        start = time.perf_counter()
        for _ in range(steps):
            marks.append(("gym step", time.monotonic()))
            env.step(env.action_space.sample())
            marks.append(("step returned", time.monotonic()))
        wall = (time.perf_counter() - start) / steps
        cpu_after, mine_after = thread_cpu(sim_pid), thread_cpu(os.getpid())
    finally:
        env.close()
    direct_wall, direct_cpu = direct_step(env_id, steps, observation, options)
    sim_marks = [(label, float(t)) for path in trace.parent.glob("sim.[0-9]*")
                 for label, t in (line.split() for line in path.read_text().splitlines())]
    stages = stage_times(marks, sim_marks)
    lines = [f"{env_id}, {observation}, {steps} steps: ROS backend{' (step channel)' * step_channel} "
             f"{1000 * wall:.2f} ms per env step "
             f"({1 / wall:.0f}/s); direct backend {1000 * direct_wall:.2f} ms ({1 / direct_wall:.0f}/s), "
             f"ratio {direct_wall / wall:.2f}", "", "wall time, median per env step:"]
    for (_, _, what), samples in zip(STAGES, stages):
        lines.append(f"  {1000 * statistics.median(samples):6.3f} ms  {what}" if samples else f"  (no marks)  {what}")
    lines += ["", f"CPU per env step (direct backend, all of it: {1000 * direct_cpu:.2f} ms):"]
    for process, before, after in (("sim", cpu_before, cpu_after), ("client", mine_before, mine_after)):
        for thread in sorted(after, key=lambda t: before.get(t, 0.0) - after[t]):
            used = (after[thread] - before.get(thread, 0.0)) / steps
            if used >= 0.005e-3:
                lines.append(f"  {1000 * used:6.3f} ms  {process} thread {thread[1]}")
    if cprofile:
        lines += ["", physics_thread_profile(trace, top)]
    return "\n".join(lines)


def physics_thread_profile(trace: Path, top: int) -> str:
    """The sim's physics thread under cProfile, per lock-step request (TaskNode.on_step calls, the
    warm-up's and the reset's included): calls and CPU ms by function, by own time."""
    import io
    import pstats

    files = list(trace.parent.glob("sim.prof.*"))
    if not files:
        return "(no cProfile stats from the sim process)"
    stats = pstats.Stats(str(files[0]))
    taken = {function: entry[1] for (filename, _, function), entry in stats.stats.items()
             if filename.endswith("task_node.py")}
    requests = taken.get("take", taken.get("on_step", 0)) or 1  # (`take`: since the step channel)
    rows = sorted(stats.stats.items(), key=lambda item: -item[1][2])[:top]
    text = io.StringIO()
    text.write(f"sim physics thread (cProfile, thread CPU), per request over {requests} requests: "
               f"{stats.total_calls / requests:.0f} function calls\n")
    text.write("   calls   own ms   cum ms  function\n")
    for (filename, line, function), (_, calls, own, cumulative, _) in rows:
        where = f"{Path(filename).name}:{line}" if line else filename
        text.write(f"  {calls / requests:6.1f} {1000 * own / requests:8.4f} {1000 * cumulative / requests:8.4f}  "
                   f"{function} ({where})\n")
    return text.getvalue()


def stage_times(client: list, sim: list) -> list[list[float]]:
    """Each stage's durations, over the steps whose marks are all there, in order."""
    order = [STAGES[0][0]] + [to for _, to, _ in STAGES]
    durations: list[list[float]] = [[] for _ in STAGES]
    current: dict[str, float] = {}
    for label, t in sorted(client + sim, key=lambda mark: mark[1]):
        if label == order[0]:
            current = {}
        current.setdefault(label, t)
        if label == order[-1] and all(k in current for k in order):
            times = [current[k] for k in order]
            if times == sorted(times):
                for stage, (a, b) in enumerate(zip(times, times[1:])):
                    durations[stage].append(b - a)
    return durations


def direct_step(env_id: str, steps: int, observation: str = "state",
                options: dict | None = None) -> tuple[float, float]:
    """(wall s, CPU s) per env step of the direct backend, same env, seed and kind of actions (`options`: more
    env arguments, e.g. the renderer)."""
    import gymnasium as gym

    env = gym.make(env_id, backend="direct", observation=observation, **(options or {}))
    try:
        env.reset(seed=0)
        env.action_space.seed(0)
        for _ in range(20):
            env.step(env.action_space.sample())
        start, cpu = time.perf_counter(), time.process_time()
        for _ in range(steps):
            env.step(env.action_space.sample())
        return (time.perf_counter() - start) / steps, (time.process_time() - cpu) / steps
    finally:
        env.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--env", default="binpick_sim/FrankaDelta-v0")
    parser.add_argument("--observation", default="state", choices=("state", "image"))
    parser.add_argument("--cprofile", action="store_true", help="also cProfile the sim's physics thread")
    parser.add_argument("--top", type=int, default=25, help="rows of that profile (by own time)")
    parser.add_argument("--renderer", help="tiny, egl, ... for image observations (default: the scene file's)")
    parser.add_argument("--step-channel", action="store_true", help="the steps over the ROS backend's step channel")
    args = parser.parse_args()
    print(profile(args.steps, args.env, args.observation, args.cprofile, args.top, args.renderer, args.step_channel))
