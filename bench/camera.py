"""Camera: frames per second the camera node publishes vs raw getCameraImage, and the cost of turning
a frame into messages."""
from __future__ import annotations

import time

from binpick_sim.nodes.common import convert
from binpick_sim.nodes.clients.client import TOPICS

from .figures import Figure
from .direct import direct_sim
from .session import sim_and_client

SECONDS = 6.0
SIZES = [(640, 480), (64, 64)]


def raw_frames_per_second(width: int, height: int, seconds: float = SECONDS / 2) -> tuple[float, float]:
    """getCameraImage alone on the same scene and view; and the message conversion per frame [ms]."""
    sim = direct_sim(width=width, height=height)
    try:
        camera, c = sim.camera, sim.world.client
        view, count, start = camera.view_matrix(), 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            c.getCameraImage(width, height, view, camera.projection, renderer=camera.renderer,
                             flags=c.ER_NO_SEGMENTATION_MASK)
            count += 1
        raw = count / (time.perf_counter() - start)
        frame = camera.render(segmentation=False)
        start = time.perf_counter()
        for _ in range(20):
            convert.rgb_image(frame.stamp, frame.rgb)
            convert.depth_image(frame.stamp, frame.depth)
            convert.camera_info(frame.stamp, width, height, camera.intrinsics())
        return raw, (time.perf_counter() - start) / 20 * 1000
    finally:
        sim.close()


def published_frames_per_second(width: int, height: int, seconds: float = SECONDS) -> float:
    """The camera node asked for a frame every physics step, as fast as it can go."""
    topics = {"camera/image_raw": TOPICS["camera/image_raw"], "camera/depth/image_raw": TOPICS["camera/image_raw"]}
    with sim_and_client({"realtime_factor": 0.0, "camera:rate": 240.0}, topics,
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
    return figures


if __name__ == "__main__":
    for figure in measure():
        print(figure.as_dict())
