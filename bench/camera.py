"""Camera: every figure beside raw getCameraImage with the same renderer, size and flags, measured in the same
run: per renderer (tiny, egl where it loads) the frames per second the camera node publishes (64x64 and
640x480, without and with segmentation; 640x480 again with two render workers) and Camera.render in process
(five sizes, without and with segmentation); the cost of turning a frame into messages; FrankaDelta-v0's
image steps per second on both backends (over ROS also with step_channel=True, taking turns with it)
beside a bare step block plus one render at the observation's size; and the world's real-time factor
with the camera watched, rendered by the worker process or on the physics thread."""
from __future__ import annotations

import argparse
import json
import statistics
import time

from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import Image

from binpick_sim.cell.heap import keep_frame_buffers
from binpick_sim.nodes.common import convert
from binpick_sim.nodes.clients.client import TOPICS
from binpick_sim.nodes.servers.camera_node import FRAME_DEPTH

from .camera_in_process import (IMAGE_ROUNDS, IMAGE_TURN, RENDERER_SIZES, bare_image_step, frames_per_second,
                                image_env_figure, image_env_own_figure, raw_call, renderer_figures, renderers)
from .figures import Figure, machine, median, per_round
from .direct import direct_sim
from .session import sim_and_client

SECONDS = 4.0
PUBLISHED_SIZES = [(64, 64), (640, 480)]  # published rows: per renderer, each without and with segmentation
TWO_WORKERS_SIZE = (640, 480)  # published again with the camera's render_workers:=2


def raw_frames_per_second(width: int, height: int, seconds: float = SECONDS / 2,
                          renderer: str = "tiny") -> tuple[dict[bool, float], float]:
    """getCameraImage alone on the same scene and view, without and with the segmentation mask (taking
    turns, medians); and the message conversion per frame [ms]. Large frames' buffers stay on the heap, as
    in the render worker whose frames this stands beside (cell/heap.py)."""
    keep_frame_buffers()
    sim = direct_sim(width=width, height=height, renderer=renderer)
    try:
        samples = {False: [], True: []}
        for _ in range(2):
            for segmentation in samples:
                samples[segmentation].append(frames_per_second(raw_call(sim, segmentation), seconds / 2))
        camera = sim.camera
        frame = camera.render(segmentation=False)
        start = time.perf_counter()
        for _ in range(20):
            convert.rgb_image(frame.stamp, frame.rgb)
            convert.depth_image(frame.stamp, frame.depth)
            convert.camera_info(frame.stamp, width, height, camera.intrinsics())
        return {k: statistics.median(v) for k, v in samples.items()}, (time.perf_counter() - start) / 20 * 1000
    finally:
        sim.close()


def realtime_factor(renderer: str, render_process: bool, seconds: float = 10.0) -> tuple[float, float]:
    """The world's real-time factor (sim seconds per wall second, asked for 1.0) and the frames/s that
    arrive, with camera/image_raw watched at the default 640x480 and 10 Hz."""
    topics = {"/clock": Clock, "camera/image_raw": TOPICS["camera/image_raw"]}
    with sim_and_client({"world:renderer": renderer, "camera:render_process": render_process}, topics) as (_, client):
        client.spin_for(2.0)

        def now() -> float:
            clock = client.latest["/clock"].clock
            return clock.sec + clock.nanosec * 1e-9

        sim_start, frames, start = now(), client.counts["camera/image_raw"], time.perf_counter()
        client.spin_for(seconds)
        wall = time.perf_counter() - start
        return (now() - sim_start) / wall, (client.counts["camera/image_raw"] - frames) / wall


SEGMENTATION_TOPIC = "camera/segmentation/image_raw"


def published_frames_per_second(width: int, height: int, seconds: float = SECONDS, renderer: str = "tiny",
                                realtime_factor: float = 1.0, workers: int = 1) -> dict[bool, float]:
    """The camera node asked for a frame every physics step (240 Hz), the world at real time as a user runs it:
    rgb + depth frames/s arriving; then, with camera/segmentation/image_raw watched too, segmented frames/s
    (one sim process). Real time, not as fast as possible: a physics thread stepping flat out takes a whole
    core of this 2-core machine away from the renderer, and the figure then measures that contention. On a
    machine with cores to spare (a GPU machine's 16) `realtime_factor` 0 lifts the cap that real time puts on
    the frames (240 per second: one per physics step), so that the camera node runs flat out. The bench
    subscribes with the publishers' depth, so every frame published is counted: with depth 1 a frame that
    arrived before the one before it was taken replaced it, and the bench's own lag was counted against
    the node (at egl 640x480 here, 22.3 frames/s arrived of 25.6 drawn and published). `workers`: the camera's
    `render_workers`."""
    topics = {"camera/image_raw": TOPICS["camera/image_raw"], "camera/depth/image_raw": TOPICS["camera/image_raw"]}
    with sim_and_client({"realtime_factor": realtime_factor, "camera:rate": 240.0, "world:renderer": renderer,
                         "camera:render_workers": workers}, topics,
                        {"camera.width": width, "camera.height": height}, depth=FRAME_DEPTH) as (process, client):
        client.spin_for(1.0)
        first, start = client.counts["camera/image_raw"], time.perf_counter()
        client.spin_for(seconds)
        rates = {False: (client.counts["camera/image_raw"] - first) / (time.perf_counter() - start)}
        client.watch(SEGMENTATION_TOPIC, Image)
        client.wait_for_new(SEGMENTATION_TOPIC, 2, timeout=60)
        first, start = client.counts[SEGMENTATION_TOPIC], time.perf_counter()
        client.spin_for(seconds)
        rates[True] = (client.counts[SEGMENTATION_TOPIC] - first) / (time.perf_counter() - start)
        return rates


def ros_image_env_figures(renderer: str) -> list[Figure]:
    """FrankaDelta-v0 over ROS with image observations, over the topics and with step_channel=True, each beside
    the bare image step of image_env_figure, the two taking turns in IMAGE_ROUNDS rounds of IMAGE_TURN steps
    (the ratio: the median of the rounds', min-max beside it). The env's `sim` renders in its own process,
    so the bare step's world, in this one, can run between its turns (an egl world too)."""
    from .gym import env_and_raw_rates  # here: bench.gym needs gymnasium, the renderer rows do not

    bare, sim = bare_image_step(renderer)
    figures = []
    try:
        bare()  # warm up
        for channel in (False, True):
            rates, raw = env_and_raw_rates("binpick_sim/FrankaDelta-v0", "ros", "image", bare, IMAGE_ROUNDS, IMAGE_TURN,
                                           renderer=renderer, **({"step_channel": True} if channel else {}))
            figures.append(Figure("camera", f"FrankaDelta-v0 ros, image 64x64, {renderer}" + ", step_channel=True" * channel,
                                  median(rates), "steps/s", median(raw),
                                  "raw: 24 stepSimulation + one getCameraImage at 64x64, same view, taking turns",
                                  per_round(rates, raw)))
    finally:
        sim.close()
    return figures


def measure(available: list[str] | None = None, world_factor: float = 1.0) -> list[Figure]:
    """`world_factor`: the world's realtime_factor for the published rows (published_frames_per_second)."""
    figures = []
    available = available or renderers()
    world = "" if world_factor == 1.0 else f" (world at realtime_factor {world_factor:g})"
    for renderer in available:
        for width, height in PUBLISHED_SIZES:
            raw, conversion_ms = raw_frames_per_second(width, height, renderer=renderer)
            published = published_frames_per_second(width, height, renderer=renderer, realtime_factor=world_factor)
            figures += [Figure("camera", f"{renderer} {width}x{height} rgb + depth published{world}", published[False],
                               "frames/s", raw[False], f"raw: getCameraImage alone, {renderer}"),
                        Figure("camera", f"{renderer} {width}x{height} rgb + depth + segmentation published{world}",
                               published[True], "frames/s", raw[True],
                               f"raw: getCameraImage alone with the mask (flags 0), {renderer}")]
            if renderer == "tiny":
                figures.append(Figure("camera", f"{width}x{height} frame to Image/CameraInfo messages",
                                      conversion_ms, "ms"))
            if (width, height) == TWO_WORKERS_SIZE:  # the camera's render_workers:=2, beside the same raw call
                two = published_frames_per_second(width, height, renderer=renderer, realtime_factor=world_factor,
                                                  workers=2)
                figures += [Figure("camera", f"{renderer} {width}x{height} rgb + depth published, 2 render workers"
                                   f"{world}", two[False], "frames/s", raw[False],
                                   f"raw: getCameraImage alone, {renderer}"),
                            Figure("camera", f"{renderer} {width}x{height} rgb + depth + segmentation published, "
                                   f"2 render workers{world}", two[True], "frames/s", raw[True],
                                   f"raw: getCameraImage alone with the mask (flags 0), {renderer}")]
    for width, height in RENDERER_SIZES:
        figures.extend(renderer_figures(available, width, height))
    for renderer in available:
        figures.append(image_env_figure(renderer))
        figures += ros_image_env_figures(renderer)
        figures.append(image_env_own_figure(renderer))
    for renderer in available:
        for render_process, where in ((True, "render worker"), (False, "rendered on the physics thread")):
            factor, rate = realtime_factor(renderer, render_process)
            figures += [Figure("camera", f"{renderer} real-time factor, 640x480 watched at 10 Hz, {where}", factor,
                               "sim s / wall s", None, "asked for 1.0"),
                        Figure("camera", f"{renderer} frames arriving, 640x480 watched at 10 Hz, {where}", rate,
                               "frames/s", None, "asked for 10")]
    return figures


def main(argv: list[str] | None = None) -> None:
    """The camera group alone, for one renderer where asked (a GPU machine's NVIDIA EGL, without tiny's rows).

    python -m bench.camera [--renderers egl] [--realtime-factor 0] [--json FILE]"""
    parser = argparse.ArgumentParser(description=main.__doc__.splitlines()[0])
    parser.add_argument("--renderers", default="", help="comma-separated (default: tiny, and egl where it loads)")
    parser.add_argument("--realtime-factor", type=float, default=1.0,
                        help="the world's, for the published rows (0: flat out, where cores are to spare)")
    parser.add_argument("--json", help="also write the figures and the machine here")
    args = parser.parse_args(argv)
    from .run import table

    chosen = args.renderers.split(",") if args.renderers else None
    figures = measure(chosen, args.realtime_factor)
    print(table(figures), flush=True)
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"machine": machine(), "figures": [f.as_dict() for f in figures]}, out, indent=1)


if __name__ == "__main__":
    main()
