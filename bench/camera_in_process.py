"""The camera figures that need no ROS: Camera.render beside raw getCameraImage per renderer and size, and
FrankaDelta-v0's image steps in process beside a bare step block plus one render at the observation's size.

bench/camera.py adds the published rows (a `sim` process, DDS) to these. Kept apart so that a machine with
PyBullet but no ROS 2 (a GPU machine lent for an hour, where NVIDIA's EGL replaces Mesa's llvmpipe) can run
them alone: `python -m bench.camera_in_process --json out.json`."""
from __future__ import annotations

import argparse
import json
import math
import statistics
import time

from binpick_sim.cell.rendering.renderers import RendererError, probe_egl
from binpick_sim.cell.rendering.frame_memory import keep_frame_buffers
from binpick_sim.cell.vision import camera as camera_module

from .direct import direct_sim
from .figures import Figure, machine, median, per_round, timed_turn

RENDERER_SIZES = [(64, 64), (160, 120), (320, 240), (640, 480), (1024, 768)]
OBSERVATION = (64, 64)  # FrankaDelta-v0's image observation


def renderers() -> list[str]:
    """tiny, and egl where PyBullet's EGL plugin loads here."""
    try:
        probe_egl()
    except RendererError:
        return ["tiny"]
    return ["tiny", "egl"]


def frames_per_second(render, seconds: float) -> float:
    render()  # warm up (EGL uploads the scene on its first frame)
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        render()
        count += 1
    return count / (time.perf_counter() - start)


def raw_call(sim, segmentation: bool):
    """One bare getCameraImage of `sim`'s camera as it stands, with or without the segmentation mask: the
    reference each camera figure is set beside."""
    camera, c = sim.camera, sim.world.client
    view, flags = camera.view_matrix(), 0 if segmentation else c.ER_NO_SEGMENTATION_MASK
    return lambda: c.getCameraImage(camera.width, camera.height, view, camera.projection, renderer=camera.renderer,
                                    flags=flags)


def renderer_figures(renderers: list[str], width: int, height: int, rounds: int = 3,
                     seconds: float = 1.0) -> list[Figure]:
    """Per renderer: Camera.render (rgb + metric depth), and with segmentation, each beside raw getCameraImage
    with the same renderer and the same flags. The renderers' sims live side by side and take turns (`rounds`
    of `seconds` each; medians), so a busy machine's load falls on all alike. Large frames' buffers are kept on
    this process's heap, as the render worker keeps them (cell/rendering/frame_memory.py), for the raw call and Camera.render
    alike: otherwise which of the two pays page faults depends on what the process freed before."""
    keep_frame_buffers()
    sims = {renderer: direct_sim(width=width, height=height, renderer=renderer) for renderer in renderers}
    samples: dict[tuple[str, str], list[float]] = {}
    try:
        for _ in range(rounds):
            for renderer, sim in sims.items():
                camera = sim.camera
                runs = {"raw": raw_call(sim, False), "render": lambda: camera.render(segmentation=False),
                        "raw segmented": raw_call(sim, True), "segmented": lambda: camera.render(segmentation=True)}
                for kind, run in runs.items():
                    samples.setdefault((renderer, kind), []).append(frames_per_second(run, seconds))
    finally:
        for sim in sims.values():
            sim.close()
    figures = []
    for renderer in renderers:
        median = {kind: statistics.median(samples[renderer, kind])
                  for kind in ("raw", "render", "raw segmented", "segmented")}
        figures += [Figure("camera", f"{renderer} {width}x{height} Camera.render rgb + depth", median["render"],
                           "frames/s", median["raw"], f"raw: getCameraImage alone, {renderer}"),
                    Figure("camera", f"{renderer} {width}x{height} Camera.render rgb + depth + segmentation",
                           median["segmented"], "frames/s", median["raw segmented"],
                           f"raw: getCameraImage alone with the mask (flags 0), {renderer}")]
    return figures


def bare_image_step(renderer: str):
    """FrankaDelta-v0's image step done bare: (a callable making one block of steps_per_action stepSimulation
    and one getCameraImage of its observation camera (the default camera's view at 64 x 64), same scene;
    the sim it runs on, for the caller to close)."""
    steps, render, sim = bare_image_parts(renderer)

    def step():
        steps()
        render()
    return step, sim


def bare_image_parts(renderer: str):
    """bare_image_step's two parts: (the block of stepSimulation, the getCameraImage, the sim they run on)."""
    width, height = OBSERVATION
    sim = direct_sim(width=width, height=height, aspect=640 / 480, renderer=renderer)
    c, block = sim.world.client, sim.config.task.steps_per_action

    def steps():
        for _ in range(block):
            c.stepSimulation()
    return steps, raw_call(sim, False), sim


def image_env_figure(renderer: str) -> Figure:
    """FrankaDelta-v0 direct with image observations beside its bare reference (bare_image_step), the two
    taking turns in IMAGE_ROUNDS rounds of IMAGE_TURN steps (the ratio: the median of the rounds', min-max
    beside it). The bare steps run in a helper process, each turn timed there: an egl env's world and a second
    egl world cannot share a process (one EGL client each), and a tiny one is done the same way."""
    import multiprocessing

    from .gym import env_and_raw_rates  # here: bench.gym needs gymnasium, the renderer rows do not

    spawn = multiprocessing.get_context("spawn")
    ours, theirs = spawn.Pipe()
    helper = spawn.Process(target=bare_turns, args=(renderer, theirs), daemon=True)
    helper.start()
    theirs.close()  # the helper's now: should it die, recv below raises EOFError rather than waiting for good
    try:
        def raw_turn(turn: int) -> float:
            ours.send(turn)
            return ours.recv()
        rates, raw = env_and_raw_rates("binpick_sim/FrankaDelta-v0", "direct", "image", raw_turn, IMAGE_ROUNDS,
                                       IMAGE_TURN, renderer=renderer)
    finally:
        if helper.is_alive():
            ours.send(None)
        helper.join(30)
    return Figure("camera", f"FrankaDelta-v0 direct, image 64x64, {renderer}", median(rates), "steps/s", median(raw),
                  "raw: 24 stepSimulation + one getCameraImage at 64x64, same view, in a helper process, taking turns",
                  per_round(rates, raw))


def bare_turns(renderer: str, connection) -> None:
    """A helper process's loop (image_env_figure): for each turn asked for on `connection`, as many bare image
    steps, answering their rate; None ends it."""
    step = timed_turn(bare_image_step(renderer)[0])  # (its sim goes with the process)
    step(1)  # warm up
    while (turn := connection.recv()) is not None:
        connection.send(step(turn))


# The own-reference and the ROS image env figures: rounds of env steps (a ratio each). Eleven: with five the
# ROS rows' rounds spread 0.58-1.19 on 2 cores (egl's threads and two processes share them), and the median
# of five moved by 0.1 between two runs; the extra rounds cost the group about 20 s.
IMAGE_ROUNDS, IMAGE_TURN = 11, 12


def image_env_own_figure(renderer: str) -> Figure:
    """FrankaDelta-v0 direct with image observations beside its own stepping and its own getCameraImage
    calls, timed inside the same env steps (wall time: a renderer's threads or a GPU do part of the work).
    The bare reference of image_env_figure steps a resting arm; here the raw is the same physics steps
    (the random motions, their contacts) and the same renders made directly on PyBullet, so what the
    ratio leaves out is the env's own work alone (issue 33's definition, for an image env)."""
    timed = image_env_timed(renderer, IMAGE_ROUNDS, IMAGE_TURN)
    return Figure("camera", f"FrankaDelta-v0 direct, image 64x64, {renderer}, against its own stepping and renders",
                  timed.rate, "steps/s", timed.physics_render_rate,
                  "raw: the env's own stepSimulation and getCameraImage calls, timed in the same steps",
                  ratios=timed.per_round("rate", None, "physics_render_rate"))


def image_env_timed(renderer: str, rounds: int, turn: int):
    """A like_for_like.Timed of FrankaDelta-v0 direct, image observations, after `rounds` of `turn` steps."""
    import gymnasium as gym

    import binpick_sim.envs  # noqa: F401  (registers the ids)

    from .like_for_like import Timed

    env = gym.make("binpick_sim/FrankaDelta-v0", backend="direct", observation="image", renderer=renderer)
    try:
        sim = env.unwrapped.backend.sim  # its world and client outlive resets; Timed resets it (seed 0)
        timed = Timed(env, sim.world, lambda n=1: n, render_clients=(sim.world.client,), clock=time.perf_counter)
        for _ in range(rounds):
            timed.run(turn)
            timed.end_round()
        return timed
    finally:
        env.close()


def stage_times(renderer: str, width: int, height: int, frames: int = 40) -> dict[str, float]:
    """Median ms per frame of Camera.render's stages, taking turns: getCameraImage (no mask), RGBA to RGB by
    numpy's strided copy and by rgb_of (what render uses at this size), and depth to metres."""
    import numpy as np

    from binpick_sim.cell.vision.camera import rgb_of

    sim = direct_sim(width=width, height=height, renderer=renderer)
    try:
        camera, call = sim.camera, raw_call(sim, False)
        _, _, rgba, depth_buffer, _ = call()
        rgba, depth_buffer = rgba.reshape(height, width, 4), depth_buffer.reshape(height, width)
        stages = {"getCameraImage": call, "rgb numpy slice": lambda: np.ascontiguousarray(rgba[:, :, :3]),
                  "rgb_of": lambda: rgb_of(rgba), "depth to metres": lambda: camera.linearize(depth_buffer)}
        if camera_module.OPENCV_MIN_PIXELS == math.inf:
            del stages["rgb_of"]
        samples: dict[str, list[float]] = {name: [] for name in stages}
        for _ in range(frames):
            for name, run in stages.items():
                start = time.perf_counter()
                run()
                samples[name].append((time.perf_counter() - start) * 1000)
        return {name: statistics.median(values) for name, values in samples.items()}
    finally:
        sim.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--renderers", default="", help="comma-separated (default: tiny, and egl where it loads)")
    parser.add_argument("--sizes", default="", help="e.g. 64x64,640x480 (default: the five of make bench)")
    parser.add_argument("--numpy-rgb", action="store_true",
                        help="RGBA to RGB by numpy's copy at every size (where OpenCV is not installed)")
    parser.add_argument("--stages", action="store_true", help="also time Camera.render's stages per renderer and size")
    parser.add_argument("--json", help="also write the figures and the machine here")
    args = parser.parse_args(argv)
    from .run import table

    if args.numpy_rgb:
        camera_module.OPENCV_MIN_PIXELS = math.inf
    chosen = args.renderers.split(",") if args.renderers else renderers()
    gl = probe_egl() if "egl" in chosen else ""
    print(f"renderers {chosen}; EGL: {gl or '-'}", flush=True)
    figures, stages = [], {}
    sizes = [tuple(map(int, size.split("x"))) for size in args.sizes.split(",")] if args.sizes else RENDERER_SIZES
    for width, height in sizes:
        figures += renderer_figures(chosen, width, height)
    figures += [image_env_figure(renderer) for renderer in chosen]
    figures += [image_env_own_figure(renderer) for renderer in chosen]
    print(table(figures), flush=True)
    if args.stages:
        for renderer in chosen:
            for width, height in sizes:
                stages[f"{renderer} {width}x{height}"] = times = stage_times(renderer, width, height)
                print(f"stages ms, {renderer} {width}x{height}: " + ", ".join(f"{k} {v:.2f}" for k, v in times.items()),
                      flush=True)
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"machine": machine(), "egl": gl, "figures": [f.as_dict() for f in figures], "stages_ms": stages},
                      out, indent=1)


if __name__ == "__main__":
    main()
