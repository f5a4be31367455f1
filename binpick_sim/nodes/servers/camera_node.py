"""The `camera` node: rgb, depth, point cloud and segmentation with their CameraInfo, rendered only while
watched; the segmentation mask is rendered only while its own topic is watched."""
from __future__ import annotations

import dataclasses
import statistics
import threading
from collections import deque

import numpy as np
from rclpy.event_handler import PublisherEventCallbacks
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient
from sensor_msgs.msg import CameraInfo, Image, PointCloud2

from ...cell.vision.camera import organised_cloud
from ...cell.vision.labels import label_image
from ...cell.render_process.worker import RenderedFrame, RenderWorker, RenderWorkers, capture
from ...config import CameraConfig, checked_value
from ...description import cell_description
from ...cell.loop import PhysicsLoop
from ...cell.bin_picking_sim import BinPickingSim
from ..common import convert, dds
from ..common.diagnostics import NodeDiagnostics
from ...cell.rendering.frame_memory import KEEP_FROM, give_back_freed_memory, keep_frame_buffers
from ..common.params import declare, group
from .camera_frames import FrameThread

TIMED = 100  # worker frames whose timings /diagnostics summarises
FRAME_DEPTH = 5  # the frame topics' history: a subscriber with the same depth loses no frame it is slow to take


class CameraNode(Node):
    """One camera of sim.cameras: node `camera` and topics `camera/...` for the scene file's `camera:`, node
    `camera_<name>` and topics `camera/<name>/...` for a named one of `cameras:`."""
    parameter_table = "camera"  # config/parameters.py

    def __init__(self, sim: BinPickingSim, loop: PhysicsLoop, name: str = "", **kwargs):
        super().__init__(f"camera_{name}" if name else "camera", **kwargs)
        self.sim, self.camera, self.name, self.loop = sim, sim.cameras[name], name, loop
        self.frame_id = self.camera.optical_frame
        rate = declare(self, "rate", "Frame rate in Hz of sim time (while anyone subscribes).", read_only=True)
        self.prefix = f"camera/{name}" if name else "camera"
        self._renew = False  # the frame thread asks the physics thread to make the frame publishers anew
        self.make_publishers()
        config = self.camera.config
        self.described = (config.parent, config.position, config.orientation_deg)  # as the description has it
        # robot_state_publisher of this namespace (as sim.launch.py runs it, one for the cell, arms and all)
        self.description_clients = {name: AsyncParameterClient(self, name) for name in ["robot_state_publisher"]}
        self.declare_camera_parameters()
        self.frames = 0
        self.segmented_frames = 0  # frames rendered with the segmentation mask
        self.frame_age = 0.0  # sim seconds the physics went on while the last frame was rendered
        renderer = sim.world.renderer.describe()
        self.frame_thread: FrameThread | None = None
        self.channel: tuple | None = None  # (send, parts): a gym env's step channel (`frames_to`)
        self._info: tuple | None = None  # (size, K and frame, the CameraInfo): see `publish`
        self._info_lock = threading.Lock()
        self._timings: deque = deque(maxlen=TIMED)  # (draw, work) seconds of the latest worker frames
        self.diagnostics = NodeDiagnostics(self, lambda: self.sim.world.time,
                                           values=lambda: {"frames_published": self.frames,
                                                           "frames_with_segmentation": self.segmented_frames,
                                                           "last_frame_age_s": self.frame_age,
                                                           "renderer": renderer,
                                                           "render_worker": self.worker_state(),
                                                           "render_worker_restarts": self._thread_count("restarts"),
                                                           **self.worker_timings(),
                                                           "render_errors": self._thread_count("errors"),
                                                           "dds_profile": dds.profile_in_use()})
        self.get_logger().info(f"{self.camera.width}x{self.camera.height} frames rendered by {renderer}")
        render_process = declare(self, "render_process", "Render in a process of its own from a mirror of "
                                 "the scene, so that frames do not stall physics (not in lock-step, where each "
                                 "observation carries its frame, nor with the GUI).", read_only=True)
        # The worker starts when the camera is first watched: a process and a second copy of the cell
        # cost a second or two of CPU and 150-250 MB, which a stack nobody watches the camera of never pays.
        self.use_worker = render_process and sim.world.renderer.name != "gui" and not loop.lockstep
        self.render_workers = declare(self, "render_workers", "Render worker processes "
                                      "drawing frames in turn, at most (with render_process): one is started, and "
                                      "one more each time they fall behind the rate. A frame is drawn on one "
                                      "thread, so two or more raise the frame rate where cores are free, each with "
                                      "a copy of the cell (150-250 MB).", read_only=True)
        loop.every(1.0 / rate, self.publish_frame)
        loop.when_settled(self.publish_frame)

    def declare_camera_parameters(self) -> None:
        """The camera's mount, lens and size, settable at run time (`ros2 param set /camera fov_deg 45`): each
        value is checked as the scene file's would be, and applied between two frames."""
        config = self.camera.config
        texts = {
            "parent": "Frame camera_link is fixed to: world or a link of the arm (e.g. panda_hand).",
            "position": "camera_link's position in the parent frame, x y z [m]: 3 values, each within +-100.",
            "orientation_deg": "camera_link's roll, pitch, yaw in the parent frame [deg]: 3 values, each within "
                               "+-360.",
            "fov_deg": "Vertical field of view [deg].",
            "near": "Near clipping plane [m].",
            "far": "Far clipping plane [m], > near; depth is +inf beyond it.",
            "width": "Image width [pixels]; width x height at most 2048 x 2048.",
            "height": "Image height [pixels]; width x height at most 2048 x 2048.",
            "aspect": "The view's width / height, 0 for width / height (square pixels); another value draws that "
                      "view on the width x height grid (an observation at its own size; fx != fy in K).",
        }
        values = {}
        for name, text in texts.items():
            value = declare(self, name, text + " Settable at run time.", check=self._camera_problem(name),
                            scene=config)
            values[name] = _plain(value)
        group(self, texts, self._camera_change_problem, self._apply_camera_change)
        changed = {name: value for name, value in values.items() if value != getattr(config, name)}
        if changed:  # start-up overrides (-p fov_deg:=45): applied together, checked as one config
            self.on_camera_change(self.loop.run(lambda: self.camera.reconfigure(**changed)))

    def _camera_problem(self, name: str):
        """One value on its own, as the scene file's would be read: type, number of values, finite, range,
        and, for `parent`, a frame that exists."""
        def problem(value) -> str | None:
            try:
                value = checked_value(CameraConfig, name, _plain(value), name)
                if name == "parent":  # a frame that exists (alone, a parent cannot make the camera wrong)
                    self.camera.checked(parent=value)
            except (ValueError, TypeError) as exc:
                text = str(exc)
                return text[len(name) + 2:] if text.startswith(f"{name}: ") else text
            return None
        return problem

    def _camera_change_problem(self, values: dict) -> str | None:
        """The camera with every value of one request, checked as a whole (near < far, the pixel budget, the
        renderer's largest frame) before anything reaches the renderer."""
        try:
            self.camera.checked(**{name: _plain(value) for name, value in values.items()})
        except (ValueError, TypeError) as exc:
            return str(exc)
        return None

    def _apply_camera_change(self, values: dict) -> None:
        values = {name: _plain(value) for name, value in values.items()}
        config = self.loop.run(lambda: self.camera.reconfigure(**values))  # between two frames
        self.get_logger().info(f"camera {', '.join(f'{k} set to {v!r}' for k, v in values.items())}")
        self.on_camera_change(config)

    def on_camera_change(self, config) -> None:
        """The robot description follows a moved camera: robot_state_publisher (of this namespace, where it
        runs) gets the cell's URDF with the new camera_joint as its
        robot_description, which it re-parses, republishing the camera frames and the description topic,
        so RViz shows where the camera now is."""
        if (config.parent, config.position, config.orientation_deg) == self.described:
            return
        self.described = (config.parent, config.position, config.orientation_deg)
        if self.name:
            cameras = {**self.sim.config.cameras, self.name: config}
            self.sim.config = dataclasses.replace(self.sim.config, cameras=cameras)
        else:
            self.sim.config = dataclasses.replace(self.sim.config, camera=config)
        ready = {name: client for name, client in self.description_clients.items() if client.services_are_ready()}
        if ready:
            urdf = cell_description(self.sim.config)
            for client in ready.values():
                client.set_parameters([Parameter("robot_description", value=urdf)])
        missing = [name for name in self.description_clients if name not in ready]
        if missing:
            self.get_logger().warning(f"{', '.join(missing)} not running here: its robot description still "
                                      "has the camera where the scene file put it")

    def make_publishers(self) -> None:
        """The frame topics' publishers. Fast DDS keeps, per publisher, buffers as large as the largest frame
        it sent, for as long as the publisher lives (about one frame of each topic: 110 MB at 2048 x 2048
        with the cloud): when nobody has watched for a while, they are destroyed and made again
        (`_release_memory`), which no subscriber can notice, there being none.

        They have no QoS event handlers (rclpy's default ones log an incompatible QoS; the subscriber's side
        logs it too). An event handler waits in the executor, and rclpy ends a publisher whose handler is in
        use only once the executor's wait is over, after the new publisher of the same topic was made; Fast
        DDS shares a topic's payload pool between its writers, so the new one kept the old one's frame
        buffers for good (80-125 MB at 2048 x 2048, in 4 of 5 runs of a fresh clone). Without handlers the
        old writer and its pool are gone before the new one is made."""
        prefix = self.prefix
        if getattr(self, "rgb_publisher", None) is not None:
            for publisher in self._frame_publishers():
                self.destroy_publisher(publisher)
        events = PublisherEventCallbacks(use_default_callbacks=False)  # no handlers: see the docstring

        def make(kind, topic):
            return self.create_publisher(kind, prefix + topic, FRAME_DEPTH, event_callbacks=events)

        self.rgb_publisher = make(Image, "/image_raw")
        self.rgb_info_publisher = make(CameraInfo, "/camera_info")
        self.depth_publisher = make(Image, "/depth/image_raw")
        self.depth_info_publisher = make(CameraInfo, "/depth/camera_info")
        self.points_publisher = make(PointCloud2, "/points")
        self.segmentation_publisher = make(Image, "/segmentation/image_raw")

    def _frame_publishers(self):
        return (self.rgb_publisher, self.rgb_info_publisher, self.depth_publisher, self.depth_info_publisher,
                self.points_publisher, self.segmentation_publisher)

    def frames_to(self, send, parts: tuple[str, ...]) -> None:
        """Lock-step: hand each frame's `parts` (rgb, depth and maybe segmentation) to `send(stamp, {name:
        array})` too, before the topics get theirs: a gym env's step channel (common/step_channel.py), for
        which the camera renders every step (with the mask if asked) whoever watches its topics."""
        self.channel = (send, parts)

    def watched(self) -> bool:
        return self.channel is not None or any(p.get_subscription_count() > 0 for p in self._frame_publishers())

    @property
    def worker(self) -> RenderWorkers | None:
        """The render workers now running, if any."""
        return self.frame_thread.worker if self.frame_thread is not None else None

    def worker_state(self) -> str:
        if not self.use_worker:
            return "not used (rendering in the physics thread)"
        if self.frame_thread is not None and self.frame_thread.failed:
            return "failed (rendering in the physics thread)"
        worker = self.worker
        return f"running (pid {', '.join(map(str, worker.pids))})" if worker is not None else "stopped (nobody watches)"

    def worker_timings(self) -> dict:
        """Medians over the last TIMED frames from the render worker, in ms: its Camera.render
        (`render_worker_draw_ms`) and all it did for a frame but send it (`render_worker_frame_ms`: mirroring
        the scene, drawing, labels, cloud). Beside a raw getCameraImage of the same size they say how much
        of a published frame is the renderer's (bench/profile_published.py). Empty before a worker frame."""
        timings = list(self._timings)
        if not timings:
            return {}
        return {"render_worker_draw_ms": round(1000 * statistics.median(t[0] for t in timings), 3),
                "render_worker_frame_ms": round(1000 * statistics.median(t[1] for t in timings), 3)}

    def _thread_count(self, name: str) -> int:
        return getattr(self.frame_thread, name) if self.frame_thread is not None else 0

    def publish_frame(self) -> None:
        """Physics thread, at the camera's rate (or once per lock-step request). With a render worker: hand
        the current state to the frame thread unless one captured earlier still waits there (it renders,
        converts and publishes off this thread); otherwise (or in lock-step, where each observation must carry
        its own frame) render here."""
        if self._renew:  # here, not in the frame thread: this thread asks the publishers for subscribers
            self._renew = False
            if not self.watched():
                self.make_publishers()
                give_back_freed_memory()
        if not self.watched():
            return
        if self.use_worker and not self.loop.lockstep:
            if self.frame_thread is None:
                self.frame_thread = FrameThread(self.get_name(), self._start_worker, self._publish_rendered,
                                                self.watched, self._release_memory, self.get_logger())
            if not self.frame_thread.failed:
                self.frame_thread.offer(lambda: capture(self.sim, self.camera, self.wants_segmentation(),
                                                        self.wants_points()))
                return
        segmentation = self.wants_segmentation()
        frame = self.camera.render(segmentation=segmentation)
        labels = label_image(self.sim, frame.segmentation) if segmentation else None
        if self.channel is not None:
            send, parts = self.channel
            arrays = {"rgb": frame.rgb, "depth": frame.depth, "segmentation": labels}
            send(frame.stamp, {name: arrays[name] for name in parts})
        self.publish(frame.stamp, frame.rgb, frame.depth, labels, self.camera.intrinsics())

    def _start_worker(self) -> RenderWorkers:
        config, renderer = self.sim.config, self.sim.world.renderer.name
        return RenderWorkers(lambda: RenderWorker(config, renderer), self.render_workers)

    def _publish_rendered(self, done: RenderedFrame) -> None:
        self._timings.append((done.draw_seconds, done.work_seconds))
        if done.rgb.shape[0] * done.rgb.shape[1] >= KEEP_FROM:
            keep_frame_buffers()  # the frame's arrays and messages, received and built anew each frame (rendering/frame_memory.py)
        self.publish(done.stamp, done.rgb, done.depth, done.labels, done.k, done.cloud)

    def _release_memory(self) -> None:
        """Nobody watches any more (frame thread): the worker is gone; the publishers' buffers and freed frame
        buffers are handed back at the next camera tick (make_publishers)."""
        give_back_freed_memory()
        self._renew = True

    def wants_segmentation(self) -> bool:
        return (self.channel is not None and "segmentation" in self.channel[1]) or \
            self.segmentation_publisher.get_subscription_count() > 0

    def wants_points(self) -> bool:
        return self.points_publisher.get_subscription_count() > 0

    def publish(self, stamp: float, rgb, depth, labels, k, cloud=None) -> None:
        """Every topic with the same stamp, the sim time of the state the frame shows, each to its subscribers
        only (the cloud as the worker built it, or built here when rendered in place): the topics are volatile,
        so a message nobody reads is dropped anyway, and a gym env's lock-step frame, which reads rgb and depth
        only, costs no CameraInfo. The CameraInfo is built once per size and K (rosidl checks every element
        of its arrays as it is built), only its stamp set per frame."""
        height, width = depth.shape
        if self.rgb_publisher.get_subscription_count():
            self.rgb_publisher.publish(convert.rgb_image(stamp, rgb, self.frame_id))
        if self.depth_publisher.get_subscription_count():
            self.depth_publisher.publish(convert.depth_image(stamp, depth, self.frame_id))
        info_publishers = [p for p in (self.rgb_info_publisher, self.depth_info_publisher) if p.get_subscription_count()]
        if info_publishers:
            with self._info_lock:  # (the frame thread publishes, or the physics thread where it renders)
                info = self._camera_info(stamp, width, height, k)
                for publisher in info_publishers:
                    publisher.publish(info)
        if self.wants_points():
            cloud = cloud if cloud is not None else organised_cloud(depth, k, rgb)
            self.points_publisher.publish(convert.packed_point_cloud(stamp, cloud, self.frame_id))
        if labels is not None:
            self.segmentation_publisher.publish(convert.segmentation_image(stamp, labels, self.frame_id))
            self.segmented_frames += 1
        self.frames += 1
        self.frame_age = self.sim.world.time - stamp

    def _camera_info(self, stamp: float, width: int, height: int, k) -> CameraInfo:
        key = (width, height, np.asarray(k, dtype=float).tobytes(), self.frame_id)
        if self._info is None or self._info[0] != key:
            self._info = (key, convert.camera_info(stamp, width, height, k, self.frame_id))
        else:
            self._info[1].header.stamp = convert.stamp(stamp)
        return self._info[1]

    def destroy_node(self):
        if self.frame_thread is not None:
            self.frame_thread.close()
        return super().destroy_node()

def _plain(value):
    """A parameter value as CameraConfig holds it: a number list (list, tuple or array) as a tuple of floats."""
    return value if isinstance(value, (str, int, float)) else tuple(float(v) for v in value)
