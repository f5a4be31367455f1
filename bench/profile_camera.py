"""Where one camera frame's time goes, stage by stage, from getCameraImage to messages on DDS.

    python -m bench.profile_camera [--renderer tiny] [--size 640x480] [--frames 40] [--cprofile]

Each stage is what the camera node (or its render worker) does for a watched frame, run here on its own
in one process, on the default scene, and timed frame by frame (median over `--frames`; the stages take
turns, so a busy machine's load falls on all alike). The table gives each stage's share of the sum, and
the first line the raw getCameraImage call (with the mask: the segmented frame's reference). The stages:

- **getCameraImage**: PyBullet's call (with the segmentation mask: flags 0), as Camera.render makes it;
- **view matrix**: the camera's pose (a mounted camera asks PyBullet for its link) and computeViewMatrix;
- **rgba to rgb**: the one copy from PyBullet's RGBA array into the rgb image (camera.rgb_of, as Camera.render);
- **depth to metres**: Camera.linearize (float64, in place; numpy);
- **labels**: body ids to world/objects marker ids (cell/vision/labels.py: one table lookup, numpy);
- **cloud**: camera.organised_cloud (back_project and pack_cloud written once into the cloud; numpy), only
  for a watched camera/points;
- **messages**: rgb, depth, segmentation Image, the PointCloud2 and CameraInfo (convert.py: one copy each);
- **worker hop**: a RenderedFrame from the render worker to the node, as they send it (shared_frames'
  FrameWriter / FrameReader: the arrays through a shared file, the announcement over a socket pair, the
  receiving end on a thread of its own);
- **publish**: rclpy's publish of the five messages, each with a subscriber in this process (rclpy converts
  the Python message to C, a copy, then the rmw serialises it, another; neither is reachable from Python).

`--cprofile` prints cProfile's call counts and cumulative times for the same loop (relative cost; its own
overhead inflates small calls). Figures measured on a busy machine are not worth quoting; the shares are.
"""
from __future__ import annotations

import argparse
import os
import queue
import socket
import statistics
import threading
import time
from multiprocessing.connection import Connection

import numpy as np

STAGES = ("getCameraImage", "view matrix", "rgba to rgb", "depth to metres", "labels", "cloud", "messages",
          "worker hop", "publish")


def profile(renderer: str, width: int, height: int, frames: int, with_cprofile: bool = False) -> str:
    import rclpy
    from rclpy.context import Context
    from sensor_msgs.msg import CameraInfo, Image, PointCloud2

    from binpick_sim.cell.vision.camera import organised_cloud, rgb_of
    from binpick_sim.cell.vision.labels import label_image
    from binpick_sim.cell.render_process.shared_frames import FrameReader, FrameWriter, shared_file
    from binpick_sim.cell.render_process.worker import RenderedFrame
    from binpick_sim.nodes.common import convert

    from .direct import direct_sim

    sim = direct_sim(width=width, height=height, renderer=renderer)
    context = Context()
    rclpy.init(context=context)
    node = rclpy.create_node("profile_camera", context=context)
    listener = rclpy.create_node("profile_camera_listener", context=context)
    kinds = {"rgb": Image, "depth": Image, "segmentation": Image, "points": PointCloud2, "info": CameraInfo}
    publishers = {name: node.create_publisher(kind, f"profile_camera/{name}", 1) for name, kind in kinds.items()}
    keep = [listener.create_subscription(kind, f"profile_camera/{name}", lambda msg: None, 1)
            for name, kind in kinds.items()]
    camera, c = sim.camera, sim.world.client
    times = {stage: [] for stage in STAGES}
    ends = socket.socketpair()
    sender, receiver = (Connection(end.detach()) for end in ends)
    shared = shared_file()
    writer, reader = FrameWriter(os.dup(shared)), FrameReader(shared)
    arrived: queue.Queue = queue.Queue()

    def receive() -> None:  # the node's frame thread
        while True:
            try:
                arrived.put(reader.receive(receiver.recv()))
            except (EOFError, OSError):
                return
    receiving = threading.Thread(target=receive, daemon=True)
    receiving.start()

    def one_frame() -> None:
        t0 = time.perf_counter()
        view = camera.view_matrix()
        t1 = time.perf_counter()
        _, _, rgba, buffer, seg = c.getCameraImage(width, height, view, camera.projection, renderer=camera.renderer,
                                                   flags=0)
        t2 = time.perf_counter()
        rgb = rgb_of(np.asarray(rgba).reshape(height, width, 4))  # as Camera.render: OpenCV from 320x240
        t3 = time.perf_counter()
        depth = camera.linearize(np.asarray(buffer, dtype=np.float32).reshape(height, width))
        t4 = time.perf_counter()
        labels = label_image(sim, np.asarray(seg, dtype=np.int32).reshape(height, width))
        t5 = time.perf_counter()
        k = camera.intrinsics()
        cloud = organised_cloud(depth, k, rgb)
        t6 = time.perf_counter()
        stamp = sim.world.time
        messages = {"rgb": convert.rgb_image(stamp, rgb), "depth": convert.depth_image(stamp, depth),
                    "segmentation": convert.segmentation_image(stamp, labels),
                    "points": convert.packed_point_cloud(stamp, cloud), "info": convert.camera_info(
                        stamp, width, height, k)}
        t7 = time.perf_counter()
        writer.send(sender, RenderedFrame(stamp, rgb, depth, labels, k, cloud))
        arrived.get(timeout=60)
        t8 = time.perf_counter()
        for name, msg in messages.items():
            publishers[name].publish(msg)
        t9 = time.perf_counter()
        for stage, (a, b) in zip(STAGES, [(t1, t2), (t0, t1), (t2, t3), (t3, t4), (t4, t5), (t5, t6), (t6, t7),
                                          (t7, t8), (t8, t9)]):
            times[stage].append(b - a)

    try:
        for _ in range(3):  # warm up (EGL uploads the scene on its first frame; DDS matches)
            one_frame()
        for stage in times:
            times[stage].clear()
        report = ""
        if with_cprofile:
            import cProfile
            import io
            import pstats

            profiler = cProfile.Profile()
            profiler.enable()
        for _ in range(frames):
            one_frame()
        if with_cprofile:
            profiler.disable()
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(25)
            report = "\n" + out.getvalue()
    finally:
        for end in (sender, receiver):
            end.close()
        receiving.join(5.0)
        writer.close()
        reader.close()
        node.destroy_node()
        listener.destroy_node()
        rclpy.try_shutdown(context=context)
        sim.close()
    medians = {stage: statistics.median(samples) for stage, samples in times.items()}
    total = sum(medians.values())
    lines = [f"{renderer} {width}x{height}, {frames} frames with segmentation and cloud: {1000 * total:.2f} ms per "
             f"frame, of which getCameraImage {100 * medians['getCameraImage'] / total:.0f} %", "",
             "median per frame, share of the sum:"]
    lines += [f"  {1000 * medians[stage]:8.3f} ms  {100 * medians[stage] / total:5.1f} %  {stage}" for stage in STAGES]
    return "\n".join(lines) + report


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--renderer", default="tiny", choices=("tiny", "egl"))
    parser.add_argument("--size", default="640x480", help="WIDTHxHEIGHT")
    parser.add_argument("--frames", type=int, default=40)
    parser.add_argument("--cprofile", action="store_true", help="also cProfile's call counts for the same frames")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.lower().split("x"))
    print(profile(args.renderer, width, height, args.frames, args.cprofile))
