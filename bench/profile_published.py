"""Where a published camera frame's time goes: the render worker's own time per frame beside a raw
getCameraImage, and the CPU of every process while frames stream.

    python -m bench.profile_published [--renderer egl] [--size 640x480] [--seconds 6]

A `sim` with its camera asked for a frame at every physics step (240 Hz, the world at real time, as the
`camera` group's published rows run it), rgb and depth watched with the publishers' depth; over
`--seconds`: the frames/s that arrive, the worker's medians from the camera's /diagnostics
(`render_worker_draw_ms`: its Camera.render; `render_worker_frame_ms`: all it does for a frame but send it),
and the CPU of the sim, its render worker and this subscribing process (/proc). Then, in this process
with nothing else running, the same Camera.render and the raw getCameraImage call it wraps (medians of
interleaved frames). On a 2-core machine where llvmpipe draws on both cores, the worker's draw beside the
other processes against Camera.render alone is what they cost the renderer; the worker's frame time less
its draw is ours (doc/benchmarks.md, "Where an egl published frame's time goes").
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
from .session import sim_and_client

def children(pid: int) -> list[int]:
    return [int(child) for path in glob.glob(f"/proc/{pid}/task/*/children") for child in open(path).read().split()]


def published(renderer: str, width: int, height: int, seconds: float) -> dict:
    """Frames/s arriving, the worker's timings from /diagnostics and each process's cores while frames stream."""
    topics = {"camera/image_raw": TOPICS["camera/image_raw"], "camera/depth/image_raw": TOPICS["camera/image_raw"]}
    with sim_and_client({"realtime_factor": 1.0, "camera:rate": 240.0, "world:renderer": renderer}, topics,
                        {"camera.width": width, "camera.height": height}, depth=FRAME_DEPTH) as (process, client):
        arrays: list = []  # every node sends its own array: the camera's is looked for among them
        client.node.create_subscription(DiagnosticArray, "/diagnostics", arrays.append, 10)
        client.spin_for(2.0)
        sim = process.process.pid
        pids = {"sim": sim, **{"render worker": child for child in children(sim)},
                "subscriber (this process)": os.getpid()}
        before = {name: process_cpu(pid) for name, pid in pids.items()}
        first, start = client.counts["camera/image_raw"], time.perf_counter()
        client.spin_for(seconds)
        wall = time.perf_counter() - start
        frames = client.counts["camera/image_raw"] - first
        cores = {name: (process_cpu(pid) - before[name]) / wall for name, pid in pids.items()}
        client.spin_for(1.5)  # a /diagnostics of the frames above (1 Hz)
        camera = [status for array in arrays for status in array.status if status.name == "/camera"]
        values = {kv.key: kv.value for kv in camera[-1].values} if camera else {}
        return {"fps": frames / wall, "cores": cores, "draw_ms": float(values.get("render_worker_draw_ms", "nan")),
                "frame_ms": float(values.get("render_worker_frame_ms", "nan"))}


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
        return {name: 1000 * statistics.median(values) for name, values in samples.items()}
    finally:
        sim.close()


def report(renderer: str, width: int, height: int, seconds: float) -> str:
    streamed = published(renderer, width, height, seconds)
    quiet = alone(renderer, width, height)
    fps = streamed["fps"]
    lines = [f"{renderer} {width}x{height}, rgb + depth published at up to 240 Hz (world at real time): "
             f"{fps:.1f} frames/s arriving ({1000 / fps:.1f} ms a frame)", "",
             "per frame, ms:",
             f"  {streamed['frame_ms']:8.2f}  render worker, all but the send (median of its last 100 frames)",
             f"  {streamed['draw_ms']:8.2f}    of it Camera.render, beside the other processes",
             f"  {quiet['render']:8.2f}  Camera.render in this process alone",
             f"  {quiet['raw']:8.2f}  raw getCameraImage in this process alone", "",
             "CPU while frames streamed (cores; ms a frame):"]
    lines += [f"  {cores:5.2f}  {1000 * cores / fps:7.1f}  {name}" for name, cores in streamed["cores"].items()]
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--renderer", default="egl")
    parser.add_argument("--size", default="640x480", help="WIDTHxHEIGHT")
    parser.add_argument("--seconds", type=float, default=6.0)
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.lower().split("x"))
    print(report(args.renderer, width, height, args.seconds))
