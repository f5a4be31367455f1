"""Where a published camera frame's time goes: the render worker's own time per frame beside a raw
getCameraImage, and the CPU of every process while frames stream.

    python -m bench.profile_published [--renderer egl] [--size 640x480] [--seconds 6] [--threads] [--workers 2]

A `sim` with its camera asked for a frame at every physics step (240 Hz, the world at real time, as the
`camera` group's published rows run it), rgb and depth watched with the publishers' depth; over
`--seconds`: the frames/s that arrive, the worker's medians from the camera's /diagnostics
(`render_worker_draw_ms`: its Camera.render; `render_worker_frame_ms`: all it does for a frame but send it),
and the CPU of the sim, its render worker and this subscribing process (/proc). Then, in this process
with nothing else running, the same Camera.render and the raw getCameraImage call it wraps (medians of
interleaved frames). On a 2-core machine where llvmpipe draws on both cores, the worker's draw beside the
other processes against Camera.render alone is what they cost the renderer; the worker's frame time less
its draw is ours (doc/benchmarks.md, "Where an egl published frame's time goes").

`--threads` also gives each thread's CPU (/proc/<pid>/task/*/stat), the stream's for every process and
the raw call's and Camera.render's in this one: the sim and its worker start with bench/trace on their
PYTHONPATH and BINPICK_THREAD_NAMES set, so their Python threads carry their names (`physics`,
`camera_frames`, ...); a process's first thread is marked `(main)`; native threads keep their own names
(Fast DDS's `dds.*`, llvmpipe's `llvmpipe-0`, ...) or their process's (`python`).
"""
from __future__ import annotations

import argparse
import glob
import os
import statistics
import time

from diagnostic_msgs.msg import DiagnosticArray

from binpick_sim.nodes.clients.client import TOPICS
from binpick_sim.nodes.servers.camera_node import FRAME_DEPTH

from .camera_in_process import raw_call
from .direct import direct_sim
from .physics import process_cpu
from .profile_ros import named_threads, thread_cpu
from .session import sim_and_client


def thread_rows(before: dict, after: dict, seconds: float, frames: int, least: float = 0.01) -> list[tuple]:
    """(thread name, cores, ms of CPU a frame) of the threads that used at least `least` cores, busiest first."""
    rows = [(name, (cpu - before.get((tid, name), 0.0)) / seconds) for (tid, name), cpu in after.items()]
    return [(name, cores, 1000 * cores * seconds / frames) for name, cores in sorted(rows, key=lambda r: -r[1])
            if cores >= least]


def children(pid: int) -> list[int]:
    return [int(child) for path in glob.glob(f"/proc/{pid}/task/*/children") for child in open(path).read().split()]


def published(renderer: str, width: int, height: int, seconds: float, threads: bool = False,
              workers: int = 1) -> dict:
    """Frames/s arriving, the worker's timings from /diagnostics and each process's cores while frames stream
    (and, with `threads`, each thread's)."""
    topics = {"camera/image_raw": TOPICS["camera/image_raw"], "camera/depth/image_raw": TOPICS["camera/image_raw"]}
    if threads:  # inherited by the sim (and its worker) that sim_and_client starts
        os.environ.update(named_threads(os.environ))
    with sim_and_client({"realtime_factor": 1.0, "camera:rate": 240.0, "world:renderer": renderer,
                         "camera:render_workers": workers}, topics,
                        {"camera.width": width, "camera.height": height}, depth=FRAME_DEPTH) as (process, client):
        arrays: list = []  # every node sends its own array: the camera's is looked for among them
        client.node.create_subscription(DiagnosticArray, "/diagnostics", arrays.append, 10)
        client.spin_for(2.0)
        sim = process.process.pid
        drawing = children(sim)  # the render worker processes
        pids = {"sim": sim, **{"render worker" if len(drawing) == 1 else f"render worker {i + 1}": pid
                               for i, pid in enumerate(drawing)},
                "subscriber (this process)": os.getpid()}
        before = {name: process_cpu(pid) for name, pid in pids.items()}
        threads_before = {name: thread_cpu(pid) for name, pid in pids.items()}
        first, start = client.counts["camera/image_raw"], time.perf_counter()
        client.spin_for(seconds)
        wall = time.perf_counter() - start
        frames = client.counts["camera/image_raw"] - first
        cores = {name: (process_cpu(pid) - before[name]) / wall for name, pid in pids.items()}
        by_thread = {name: thread_rows(threads_before[name], thread_cpu(pid), wall, max(frames, 1))
                     for name, pid in pids.items()}
        client.spin_for(1.5)  # a /diagnostics of the frames above (1 Hz)
        camera = [status for array in arrays for status in array.status if status.name == "/camera"]
        values = {kv.key: kv.value for kv in camera[-1].values} if camera else {}
        return {"fps": frames / wall, "cores": cores, "draw_ms": float(values.get("render_worker_draw_ms", "nan")),
                "frame_ms": float(values.get("render_worker_frame_ms", "nan")), "threads": by_thread}


def alone(renderer: str, width: int, height: int, frames: int = 30) -> dict:
    """Camera.render and the raw getCameraImage it wraps in this process, taking turns: medians in ms."""
    sim = direct_sim(width=width, height=height, renderer=renderer)
    try:
        runs = {"raw": raw_call(sim, False), "render": sim.camera.render}
        for run in runs.values():
            run()  # warm up
        samples = {name: [] for name in runs}
        for _ in range(frames):
            for name, run in runs.items():
                start = time.perf_counter()
                run()
                samples[name].append(time.perf_counter() - start)
        medians = {name: 1000 * statistics.median(values) for name, values in samples.items()}
        for name, run in runs.items():  # each thread's CPU, for each call in a block of its own
            before, start = thread_cpu(os.getpid()), time.perf_counter()
            for _ in range(frames):
                run()
            medians[f"{name} threads"] = thread_rows(before, thread_cpu(os.getpid()), time.perf_counter() - start,
                                                     frames)
        return medians
    finally:
        sim.close()


def report(renderer: str, width: int, height: int, seconds: float, threads: bool = False,
           workers: int = 1) -> str:
    streamed = published(renderer, width, height, seconds, threads, workers)
    quiet = alone(renderer, width, height)
    fps = streamed["fps"]
    lines = [f"{renderer} {width}x{height}, rgb + depth published at up to 240 Hz (world at real time), "
             f"{workers} render worker{'s' * (workers > 1)}: "
             f"{fps:.1f} frames/s arriving ({1000 / fps:.1f} ms a frame)", "",
             "per frame, ms:",
             f"  {streamed['frame_ms']:8.2f}  render worker, all but the send (median of its last 100 frames)",
             f"  {streamed['draw_ms']:8.2f}    of it Camera.render, beside the other processes",
             f"  {quiet['render']:8.2f}  Camera.render in this process alone",
             f"  {quiet['raw']:8.2f}  raw getCameraImage in this process alone", "",
             "CPU while frames streamed (cores; ms a frame):"]
    lines += [f"  {cores:5.2f}  {1000 * cores / fps:7.1f}  {name}" for name, cores in streamed["cores"].items()]
    if threads:
        lines += ["", "by thread (cores; ms of CPU a frame), threads of 0.01 cores or more:"]
        for process, rows in streamed["threads"].items():
            lines += [f"  {cores:5.2f}  {ms:7.2f}  {process}: {name}" for name, cores, ms in rows]
        for call, label in (("raw", "raw getCameraImage"), ("render", "Camera.render")):
            lines += [f"  {cores:5.2f}  {ms:7.2f}  {label} alone: {name}"
                      for name, cores, ms in quiet[f"{call} threads"]]
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--renderer", default="egl")
    parser.add_argument("--size", default="640x480", help="WIDTHxHEIGHT")
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--threads", action="store_true", help="each thread's CPU too, by name")
    parser.add_argument("--workers", type=int, default=1,
                        help="the camera's render_workers (1: one worker's profile; the camera's own default is 2)")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.lower().split("x"))
    print(report(args.renderer, width, height, args.seconds, args.threads, args.workers))
