"""The `camera` node: rgb, depth, point cloud and segmentation with their CameraInfo, rendered only while
watched; the segmentation mask is rendered only while its own topic is watched."""
from __future__ import annotations

import dataclasses

from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient
from sensor_msgs.msg import CameraInfo, Image, PointCloud2

from ...cell.vision.camera import back_project
from ...cell.vision.labels import label_image
from ...cell.vision.render_worker import RenderWorker, capture
from ...config import BOUNDS
from ...description import cell_description
from ...cell.loop import PhysicsLoop
from ...cell.sim import BinPickingSim
from ..common import convert
from ..common import dds
from ..common.diagnostics import NodeDiagnostics
from ..common.params import MAX_RATE, MIN_RATE, declare


class CameraNode(Node):
    """One camera of sim.cameras: node `camera` and topics `camera/...` for the scene file's `camera:`, node
    `camera_<name>` and topics `camera/<name>/...` for a named one of `cameras:`."""

    def __init__(self, sim: BinPickingSim, loop: PhysicsLoop, name: str = "", **kwargs):
        super().__init__(f"camera_{name}" if name else "camera", **kwargs)
        self.sim, self.camera, self.name, self.loop = sim, sim.cameras[name], name, loop
        self.frame_id = self.camera.optical_frame
        rate = declare(self, "rate", 10.0, "Frame rate in Hz of sim time (while anyone subscribes).", read_only=True,
                       low=MIN_RATE, high=MAX_RATE)
        prefix = f"camera/{name}" if name else "camera"
        self.rgb_publisher = self.create_publisher(Image, prefix + "/image_raw", 5)
        self.rgb_info_publisher = self.create_publisher(CameraInfo, prefix + "/camera_info", 5)
        self.depth_publisher = self.create_publisher(Image, prefix + "/depth/image_raw", 5)
        self.depth_info_publisher = self.create_publisher(CameraInfo, prefix + "/depth/camera_info", 5)
        self.points_publisher = self.create_publisher(PointCloud2, prefix + "/points", 5)
        self.segmentation_publisher = self.create_publisher(Image, prefix + "/segmentation/image_raw", 5)
        config = self.camera.config
        self.described = (config.parent, config.position, config.orientation_deg)  # as the description has it
        # robot_state_publisher of this namespace, or, with several arms, one per arm in the arm's namespace
        # (as sim.launch.py runs them), each holding the whole cell's description.
        publishers = ([f"{arm.name}/robot_state_publisher" for arm in sim.config.arms] if sim.config.several_arms
                      else ["robot_state_publisher"])
        self.description_clients = {name: AsyncParameterClient(self, name) for name in publishers}
        self.declare_camera_parameters()
        self.frames = 0
        self.segmented_frames = 0  # frames rendered with the segmentation mask
        self.frame_age = 0.0  # sim seconds the physics went on while the last frame was rendered
        renderer = sim.world.renderer.describe()
        self.diagnostics = NodeDiagnostics(self, lambda: self.sim.world.time,
                                           values=lambda: {"frames_published": self.frames,
                                                           "frames_with_segmentation": self.segmented_frames,
                                                           "last_frame_age_s": self.frame_age,
                                                           "renderer": renderer,
                                                           "dds_profile": dds.profile_in_use()})
        self.get_logger().info(f"{self.camera.width}x{self.camera.height} frames rendered by {renderer}")
        render_process = declare(self, "render_process", True, "Render in a process of its own from a mirror of "
                                 "the scene, so that frames do not stall physics (not in lock-step, where each "
                                 "observation carries its frame, nor with the GUI).", read_only=True)
        # The worker starts when the camera is first watched: a process and a second copy of the cell
        # cost a second or two of CPU and 150-250 MB, which a stack nobody watches the camera of never pays.
        self.use_worker = render_process and sim.world.renderer.name != "gui" and not loop.lockstep
        self.worker: RenderWorker | None = None
        loop.every(1.0 / rate, self.publish_frame)
        loop.when_settled(self.publish_frame)

    def declare_camera_parameters(self) -> None:
        """The camera's mount, lens and size, settable at run time (`ros2 param set /camera fov_deg 45`): each
        value is checked as the scene file's would be, and applied between two frames."""
        config = self.camera.config
        texts = {
            "parent": "Frame camera_link is fixed to: world or a link of the arm (e.g. panda_hand).",
            "position": "camera_link's position in the parent frame, x y z [m].",
            "orientation_deg": "camera_link's roll, pitch, yaw in the parent frame [deg].",
            "fov_deg": "Vertical field of view [deg], in (0, 180).",
            "near": "Near clipping plane [m], > 0.",
            "far": "Far clipping plane [m], > near; depth is +inf beyond it.",
            "width": "Image width [pixels].",
            "height": "Image height [pixels].",
        }
        ranges = {"fov_deg": (0.0, 180.0), "width": BOUNDS[("CameraConfig", "width")],
                  "height": BOUNDS[("CameraConfig", "height")], "near": BOUNDS[("CameraConfig", "near")],
                  "far": BOUNDS[("CameraConfig", "far")]}
        values = {}
        for name, text in texts.items():
            default = getattr(config, name)
            default = [float(v) for v in default] if isinstance(default, tuple) else default
            low, high = ranges.get(name, (None, None))
            value = declare(self, name, default, text + " Settable at run time.", low=low, high=high,
                            check=self._camera_problem(name), on_change=self._camera_setter(name))
            values[name] = _plain(value)
        changed = {name: value for name, value in values.items() if value != getattr(config, name)}
        if changed:  # start-up overrides (-p fov_deg:=45): applied together, checked as one config
            self.on_camera_change(self.loop.run(lambda: self.camera.reconfigure(**changed)))

    def _camera_problem(self, name: str):
        def problem(value) -> str | None:
            value = _plain(value)
            try:
                self.camera.checked(**{name: value})
            except (ValueError, TypeError) as exc:
                return str(exc)
            return None
        return problem

    def _camera_setter(self, name: str):
        def apply(value) -> None:
            value = _plain(value)
            config = self.loop.run(lambda: self.camera.reconfigure(**{name: value}))  # between two frames
            self.get_logger().info(f"camera {name} set to {value!r}")
            self.on_camera_change(config)
        return apply

    def on_camera_change(self, config) -> None:
        """The robot description follows a moved camera: robot_state_publisher (of this namespace, or each
        arm's with several arms, where they run) gets the cell's URDF with the new camera_joint as its
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

    def watched(self) -> bool:
        publishers = (self.rgb_publisher, self.rgb_info_publisher, self.depth_publisher, self.depth_info_publisher,
                      self.points_publisher, self.segmentation_publisher)
        return any(p.get_subscription_count() > 0 for p in publishers)

    def publish_frame(self) -> None:
        """Physics thread, at the camera's rate (or once per lock-step request). With a render worker: publish
        the frame it finished, and send it the current state if it is idle; otherwise (or in lock-step,
        where each observation must carry its own frame) render here."""
        if self.use_worker and not self.loop.lockstep:
            if self.worker is None:
                if not self.watched():
                    return
                self.worker = RenderWorker(self.sim.config, self.sim.world.renderer.name)
            try:
                done = self.worker.poll()
            except RuntimeError as exc:
                self.get_logger().error(f"{exc}; rendering in the physics thread from now on")
                self.worker, self.use_worker = None, False
                return
            if done is not None:
                self.publish(done.stamp, done.rgb, done.depth, done.labels, done.k)
            if not self.worker.busy and self.watched():
                self.worker.request(capture(self.sim, self.camera, self.wants_segmentation()))
            return
        if not self.watched():
            return
        segmentation = self.wants_segmentation()
        frame = self.camera.render(segmentation=segmentation)
        labels = label_image(self.sim, frame.segmentation) if segmentation else None
        self.publish(frame.stamp, frame.rgb, frame.depth, labels, self.camera.intrinsics())

    def wants_segmentation(self) -> bool:
        return self.segmentation_publisher.get_subscription_count() > 0

    def publish(self, stamp: float, rgb, depth, labels, k) -> None:
        """Every topic with the same stamp, the sim time of the state the frame shows. The images and their
        CameraInfo go out whenever anyone watches; the cloud and the segmentation only to their subscribers."""
        height, width = depth.shape
        info = convert.camera_info(stamp, width, height, k, self.frame_id)
        self.rgb_publisher.publish(convert.rgb_image(stamp, rgb, self.frame_id))
        self.depth_publisher.publish(convert.depth_image(stamp, depth, self.frame_id))
        self.rgb_info_publisher.publish(info)
        self.depth_info_publisher.publish(info)
        if self.points_publisher.get_subscription_count() > 0:
            self.points_publisher.publish(convert.point_cloud(stamp, back_project(depth, k), rgb, self.frame_id))
        if labels is not None:
            self.segmentation_publisher.publish(convert.segmentation_image(stamp, labels, self.frame_id))
            self.segmented_frames += 1
        self.frames += 1
        self.frame_age = self.sim.world.time - stamp

    def destroy_node(self):
        if self.worker is not None:
            self.worker.close()
            self.worker = None
        return super().destroy_node()

def _plain(value):
    """A parameter value as CameraConfig holds it: a number list (list, tuple or array) as a tuple of floats."""
    return value if isinstance(value, (str, int, float)) else tuple(float(v) for v in value)
