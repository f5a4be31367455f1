"""The `camera` node: rgb, depth, point cloud and segmentation with their CameraInfo, rendered only while
watched; the segmentation mask is rendered only while its own topic is watched."""
from __future__ import annotations

from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image, PointCloud2

from ...cell.labels import label_image
from ...cell.loop import PhysicsLoop
from ...cell.sim import BinPickingSim
from ..common import convert
from ..common.diagnostics import NodeDiagnostics
from ..common.params import MAX_RATE, MIN_RATE, declare


class CameraNode(Node):
    def __init__(self, sim: BinPickingSim, loop: PhysicsLoop, **kwargs):
        super().__init__("camera", **kwargs)
        self.sim, self.camera = sim, sim.camera
        rate = declare(self, "rate", 10.0, "Frame rate in Hz of sim time (while anyone subscribes).", read_only=True,
                       low=MIN_RATE, high=MAX_RATE)
        self.rgb_publisher = self.create_publisher(Image, "camera/image_raw", 5)
        self.rgb_info_publisher = self.create_publisher(CameraInfo, "camera/camera_info", 5)
        self.depth_publisher = self.create_publisher(Image, "camera/depth/image_raw", 5)
        self.depth_info_publisher = self.create_publisher(CameraInfo, "camera/depth/camera_info", 5)
        self.points_publisher = self.create_publisher(PointCloud2, "camera/points", 5)
        self.segmentation_publisher = self.create_publisher(Image, "camera/segmentation/image_raw", 5)
        self.frames = 0
        self.segmented_frames = 0  # frames rendered with the segmentation mask
        renderer = sim.world.renderer.describe()
        self.diagnostics = NodeDiagnostics(self, lambda: self.sim.world.time,
                                           values=lambda: {"frames_published": self.frames,
                                                           "frames_with_segmentation": self.segmented_frames,
                                                           "renderer": renderer})
        self.get_logger().info(f"{self.camera.width}x{self.camera.height} frames rendered by {renderer}")
        loop.every(1.0 / rate, self.publish_frame)
        loop.when_settled(self.publish_frame)

    def watched(self) -> bool:
        publishers = (self.rgb_publisher, self.rgb_info_publisher, self.depth_publisher, self.depth_info_publisher,
                      self.points_publisher, self.segmentation_publisher)
        return any(p.get_subscription_count() > 0 for p in publishers)

    def publish_frame(self) -> None:
        """Render once and publish every topic with the same stamp (physics thread). The images and their
        CameraInfo go out whenever anyone watches; the cloud and the segmentation only to their subscribers."""
        if not self.watched():
            return
        segmentation = self.segmentation_publisher.get_subscription_count() > 0
        frame = self.camera.render(segmentation=segmentation)
        info = convert.camera_info(frame.stamp, self.camera.width, self.camera.height, self.camera.intrinsics())
        self.rgb_publisher.publish(convert.rgb_image(frame.stamp, frame.rgb))
        self.depth_publisher.publish(convert.depth_image(frame.stamp, frame.depth))
        self.rgb_info_publisher.publish(info)
        self.depth_info_publisher.publish(info)
        if self.points_publisher.get_subscription_count() > 0:
            self.points_publisher.publish(convert.point_cloud(frame.stamp, self.camera.points(frame.depth), frame.rgb))
        if segmentation:
            self.segmentation_publisher.publish(
                convert.segmentation_image(frame.stamp, label_image(self.sim, frame.segmentation)))
            self.segmented_frames += 1
        self.frames += 1
