"""Camera: every figure beside raw getCameraImage with the same renderer, size and flags, measured in the same
run: per renderer (tiny, egl where it loads) the frames per second the camera node publishes (64x64 and
640x480, without and with segmentation; 640x480 again with one render worker only) and Camera.render in process
(five sizes, without and with segmentation); the cost of turning a frame into messages; FrankaDelta-v0's
image steps per second on both backends (over ROS also with step_channel=True, taking turns with it)
beside a bare step block plus one render at the observation's size; and the world's real-time factor
with the camera watched, rendered by the worker process or on the physics thread."""
from __future__ import annotations

import argparse
import json
import time

from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import Image

from binpick_sim.cell.rendering.frame_memory import keep_frame_buffers
from binpick_sim.nodes.common import convert
from binpick_sim.nodes.clients.client import TOPICS
from binpick_sim.nodes.servers.camera_node import FRAME_DEPTH

from .camera_in_process import (IMAGE_ROUNDS, IMAGE_TURN, RENDERER_SIZES, bare_image_step, frames_per_second,
                                image_env_figure, image_env_own_figure, raw_call, renderer_figures, renderers)
from .figures import Figure, machine, median, per_round, timed_turn
from .direct import direct_sim
from .session import sim_and_client

PUBLISHED_ROUNDS = 3  # the published rows' turns with the raw call
PUBLISHED_TURN = 2.0  # seconds of frames streamed per turn (the raw call: half as long)
PUBLISHED_SIZES = [(64, 64), (640, 480)]  # published rows: per renderer, each without and with segmentation
ONE_WORKER_SIZE = (640, 480)  # published again with the camera's render_workers:=1 (a second one never started)


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


def published_in_rounds(width: int, height: int, renderer: str = "tiny", realtime_factor: float = 1.0,
                        workers: int | None = None, rounds: int = PUBLISHED_ROUNDS,
                        turn: float = PUBLISHED_TURN) -> dict[bool, tuple[list[float], list[float]]]:
    """The camera node asked for a frame every physics step (240 Hz), the world at real time as a user runs it,
    taking turns with raw getCameraImage in this process: per round, without and then with the segmentation
    mask, the frames/s that arrive over `turn` seconds (rgb + depth watched, and camera/segmentation/image_raw
    too for the mask), then nothing watched (the camera draws nothing) and the raw call with the same flags for
    `turn` / 2 seconds. Returns, without and with the mask, the rounds' published and raw rates. In turns, as
    the other groups' ratios: one stream beside one raw run timed afterwards moved by 0.05-0.1 from run to run
    (the raw call alone moved by up to a quarter between runs on this 2-core machine).

    Real time, not as fast as possible: a physics thread stepping flat out takes a whole core of this 2-core
    machine away from the renderer, and the figure then measures that contention. On a machine with cores to
    spare (a GPU machine's 16) `realtime_factor` 0 lifts the cap that real time puts on the frames (240 per
    second: one per physics step), so that the camera node runs flat out. The bench subscribes with the
    publishers' depth, so every frame published is counted: with depth 1 a frame that arrived before the one
    before it was taken replaced it, and the bench's own lag was counted against the node (at egl 640x480
    here, 22.3 frames/s arrived of 25.6 drawn and published). `workers`: the camera's `render_workers` (None:
    its default, which starts a second worker where one falls behind the rate)."""
    keep_frame_buffers()  # as in the render worker whose frames the raw call stands beside (cell/rendering/frame_memory.py)
    raw_sim = direct_sim(width=width, height=height, renderer=renderer)
    frame_topics = {"camera/image_raw": Image, "camera/depth/image_raw": Image}
    counted = {False: "camera/image_raw", True: SEGMENTATION_TOPIC}
    results = {False: ([], []), True: ([], [])}
    try:
        with sim_and_client({"realtime_factor": realtime_factor, "camera:rate": 240.0, "world:renderer": renderer,
                             **({} if workers is None else {"camera:render_workers": workers})}, {},
                            {"camera.width": width, "camera.height": height}, depth=FRAME_DEPTH) as (_, client):
            for _ in range(rounds):
                for segmentation, (published, raw) in results.items():
                    watched = {**frame_topics, **({SEGMENTATION_TOPIC: Image} if segmentation else {})}
                    for topic, kind in watched.items():
                        client.watch(topic, kind)
                    client.wait_for_new(counted[segmentation], 2, timeout=60)
                    first, start = client.counts[counted[segmentation]], time.perf_counter()
                    client.spin_for(turn)
                    published.append((client.counts[counted[segmentation]] - first) / (time.perf_counter() - start))
                    for topic in watched:
                        client.node.destroy_subscription(client.subscriptions.pop(topic))
                    client.spin_for(0.3)  # the frames drawn meanwhile arrive to nobody; the worker goes idle
                    raw.append(frames_per_second(raw_call(raw_sim, segmentation), turn / 2))
    finally:
        raw_sim.close()
    return results


def message_conversion_ms(width: int, height: int) -> float:
    """A frame's rgb and depth Images and CameraInfo built (convert.py), ms per frame."""
    sim = direct_sim(width=width, height=height, renderer="tiny")
    try:
        camera = sim.camera
        frame = camera.render(segmentation=False)
        start = time.perf_counter()
        for _ in range(20):
            convert.rgb_image(frame.stamp, frame.rgb)
            convert.depth_image(frame.stamp, frame.depth)
            convert.camera_info(frame.stamp, width, height, camera.intrinsics())
        return (time.perf_counter() - start) / 20 * 1000
    finally:
        sim.close()


def published_figures(renderer: str, width: int, height: int, world_factor: float,
                      workers: int | None = None) -> list[Figure]:
    """published_in_rounds as figures: rgb + depth, and with the mask, each beside the raw call with the same
    flags taken in turns (the median of the rounds' ratios, their min-max beside it)."""
    world = "" if world_factor == 1.0 else f" (world at realtime_factor {world_factor:g})"
    kept = "" if workers is None else f", render_workers {workers}"
    figures = []
    rounds = published_in_rounds(width, height, renderer=renderer, realtime_factor=world_factor, workers=workers)
    for segmentation, (published, raw) in rounds.items():
        what = "rgb + depth + segmentation" if segmentation else "rgb + depth"
        flags = " with the mask (flags 0)" if segmentation else ""
        figures.append(Figure("camera", f"{renderer} {width}x{height} {what} published{kept}{world}", median(published),
                              "frames/s", median(raw), f"raw: getCameraImage alone{flags}, {renderer}, taking turns",
                              per_round(published, raw)))
    return figures


def ros_image_env_figures(renderer: str) -> list[Figure]:
    """FrankaDelta-v0 over ROS with image observations, over the topics and with step_channel=True, each beside
    the bare image step of image_env_figure, the two taking turns in IMAGE_ROUNDS rounds of IMAGE_TURN steps
    (the ratio: the median of the rounds', min-max beside it). The env's `sim` renders in its own process,
    so the bare step's world, in this one, can run between its turns (an egl world too). After each bare turn
    the floor takes a turn too: the same bare step served by another process with nothing of ours, over rclpy
    beside the topics (bench/echo.py, Echo(bare=)) and over a socket pair beside the channel (SocketEcho(bare=)),
    beside the same bare turns."""
    from .echo import Echo, SocketEcho
    from .gym import env_and_raw_rates  # here: bench.gym needs gymnasium, the renderer rows do not

    bare, sim = bare_image_step(renderer)
    figures = []
    echoes: dict = {}
    try:
        bare()  # warm up
        echoes = {False: Echo(bare=renderer), True: SocketEcho(bare=renderer)}
        bare_turn = timed_turn(bare)
        for channel, echo in echoes.items():
            floor: list[float] = []
            floor_turn = timed_turn(echo.exchange)

            def bare_then_floor(turn: int) -> float:  # the floor's turns in the same rounds, its rates in `floor`
                rate = bare_turn(turn)
                floor.append(floor_turn(turn))
                return rate

            rates, raw = env_and_raw_rates("binpick_sim/FrankaDelta-v0", "ros", "image", bare_then_floor,
                                           IMAGE_ROUNDS, IMAGE_TURN, renderer=renderer,
                                           **({"step_channel": True} if channel else {}))
            name = f"FrankaDelta-v0 ros, image 64x64, {renderer}" + ", step_channel=True" * channel
            figures.append(Figure("camera", name, median(rates), "steps/s", median(raw), "raw: 24 stepSimulation + "
                                  "one getCameraImage at 64x64, same view, taking turns", per_round(rates, raw)))
            over = "a socket pair" if channel else "rclpy"
            figures.append(Figure("camera", f"{name}: the floor, the bare step served over {over} (bench/echo.py)",
                                  median(floor), "steps/s", median(raw), "raw: the bare step, the same rounds",
                                  per_round(floor, raw)))
    finally:
        for echo in echoes.values():
            echo.close()
        sim.close()
    return figures


def measure(available: list[str] | None = None, world_factor: float = 1.0) -> list[Figure]:
    """`world_factor`: the world's realtime_factor for the published rows (published_in_rounds)."""
    figures = []
    available = available or renderers()
    for renderer in available:
        for width, height in PUBLISHED_SIZES:
            figures += published_figures(renderer, width, height, world_factor)
            if renderer == "tiny":
                figures.append(Figure("camera", f"{width}x{height} frame to Image/CameraInfo messages",
                                      message_conversion_ms(width, height), "ms"))
            if (width, height) == ONE_WORKER_SIZE:  # the camera's render_workers:=1
                figures += published_figures(renderer, width, height, world_factor, 1)
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
