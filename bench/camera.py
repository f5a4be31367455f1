"""Camera: frames per second the camera node publishes vs raw getCameraImage, the cost of turning a
frame into messages, and per renderer (tiny, egl where it loads) and size, Camera.render beside raw
getCameraImage with the same renderer; the image env's steps per second per renderer; and the world's
real-time factor with the camera watched, rendered by the worker process or on the physics thread."""
from __future__ import annotations

import statistics
import time

from rosgraph_msgs.msg import Clock

from binpick_sim.cell.vision import rendering
from binpick_sim.nodes.common import convert
from binpick_sim.nodes.clients.client import TOPICS

from .figures import Figure
from .direct import direct_sim
from .gym import env_steps_per_second
from .session import sim_and_client

SECONDS = 6.0
SIZES = [(640, 480), (64, 64)]
RENDERER_SIZES = [(64, 64), (160, 120), (320, 240), (640, 480), (1024, 768)]


def renderers() -> list[str]:
    """tiny, and egl where PyBullet's EGL plugin loads here."""
    try:
        rendering.probe_egl()
    except rendering.RendererError:
        return ["tiny"]
    return ["tiny", "egl"]


def frames_per_second(render, seconds: float) -> float:
    render()  # warm up (EGL uploads the scene on its first frame)
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        render()
        count += 1
    return count / (time.perf_counter() - start)


def raw_frames_per_second(width: int, height: int, seconds: float = SECONDS / 2,
                          renderer: str = "tiny") -> tuple[float, float]:
    """getCameraImage alone on the same scene and view; and the message conversion per frame [ms]."""
    sim = direct_sim(width=width, height=height, renderer=renderer)
    try:
        camera, c = sim.camera, sim.world.client
        view = camera.view_matrix()
        raw = frames_per_second(lambda: c.getCameraImage(width, height, view, camera.projection,
                                                         renderer=camera.renderer, flags=c.ER_NO_SEGMENTATION_MASK),
                                seconds)
        frame = camera.render(segmentation=False)
        start = time.perf_counter()
        for _ in range(20):
            convert.rgb_image(frame.stamp, frame.rgb)
            convert.depth_image(frame.stamp, frame.depth)
            convert.camera_info(frame.stamp, width, height, camera.intrinsics())
        return raw, (time.perf_counter() - start) / 20 * 1000
    finally:
        sim.close()


def renderer_figures(renderers: list[str], width: int, height: int, rounds: int = 3,
                     seconds: float = 1.0) -> list[Figure]:
    """Per renderer: Camera.render (rgb + metric depth), and with segmentation, beside raw getCameraImage
    with the same renderer. The renderers' sims live side by side and take turns (`rounds` of `seconds`
    each; medians), so a busy machine's load falls on all alike."""
    sims = {renderer: direct_sim(width=width, height=height, renderer=renderer) for renderer in renderers}
    samples: dict[tuple[str, str], list[float]] = {}
    try:
        for _ in range(rounds):
            for renderer, sim in sims.items():
                camera, c = sim.camera, sim.world.client
                view = camera.view_matrix()
                runs = {"raw": lambda: c.getCameraImage(width, height, view, camera.projection,
                                                        renderer=camera.renderer, flags=c.ER_NO_SEGMENTATION_MASK),
                        "render": lambda: camera.render(segmentation=False),
                        "segmented": lambda: camera.render(segmentation=True)}
                for kind, run in runs.items():
                    samples.setdefault((renderer, kind), []).append(frames_per_second(run, seconds))
    finally:
        for sim in sims.values():
            sim.close()
    figures = []
    for renderer in renderers:
        raw = statistics.median(samples[renderer, "raw"])
        note = f"raw: getCameraImage alone, {renderer}"
        figures += [Figure("camera", f"{renderer} {width}x{height} Camera.render rgb + depth",
                           statistics.median(samples[renderer, "render"]), "frames/s", raw, note),
                    Figure("camera", f"{renderer} {width}x{height} Camera.render rgb + depth + segmentation",
                           statistics.median(samples[renderer, "segmented"]), "frames/s", raw, note)]
    return figures


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


def published_frames_per_second(width: int, height: int, seconds: float = SECONDS, renderer: str = "tiny") -> float:
    """The camera node asked for a frame every physics step, as fast as it can go."""
    topics = {"camera/image_raw": TOPICS["camera/image_raw"], "camera/depth/image_raw": TOPICS["camera/image_raw"]}
    with sim_and_client({"realtime_factor": 0.0, "camera:rate": 240.0, "world:renderer": renderer}, topics,
                        {"camera.width": width, "camera.height": height}) as (process, client):
        client.spin_for(1.0)
        first, start = client.counts["camera/image_raw"], time.perf_counter()
        client.spin_for(seconds)
        return (client.counts["camera/image_raw"] - first) / (time.perf_counter() - start)


def measure() -> list[Figure]:
    figures = []
    for width, height in SIZES:
        raw, conversion_ms = raw_frames_per_second(width, height)
        published = published_frames_per_second(width, height)
        figures.append(Figure("camera", f"{width}x{height} rgb + depth published", published, "frames/s", raw,
                              "raw: getCameraImage alone"))
        figures.append(Figure("camera", f"{width}x{height} frame to Image/CameraInfo messages", conversion_ms, "ms"))
    available = renderers()
    for width, height in RENDERER_SIZES:
        figures.extend(renderer_figures(available, width, height))
    for renderer in available:
        raw, _ = raw_frames_per_second(640, 480, renderer=renderer)
        figures.append(Figure("camera", f"{renderer} 640x480 rgb + depth published", published_frames_per_second(
            640, 480, renderer=renderer), "frames/s", raw, f"raw: getCameraImage alone, {renderer}"))
    for renderer in available:
        rate = env_steps_per_second("binpick_sim/FrankaDelta-v0", "direct", "image", renderer=renderer)
        figures.append(Figure("camera", f"FrankaDelta-v0 direct, image, {renderer}", rate, "steps/s", None,
                              "camera 640x480"))
    for renderer in available:
        for render_process, where in ((True, "render worker"), (False, "rendered on the physics thread")):
            factor, rate = realtime_factor(renderer, render_process)
            figures += [Figure("camera", f"{renderer} real-time factor, 640x480 watched at 10 Hz, {where}", factor,
                               "sim s / wall s", None, "asked for 1.0"),
                        Figure("camera", f"{renderer} frames arriving, 640x480 watched at 10 Hz, {where}", rate,
                               "frames/s", None, "asked for 10")]
    return figures


if __name__ == "__main__":
    for figure in measure():
        print(figure.as_dict())
