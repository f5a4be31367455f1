"""Core values to ROS messages. Stamps are always sim time; frames follow REP 103/105."""
from __future__ import annotations

import sys

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point, Pose, PoseStamped, Quaternion, Vector3, WrenchStamped
from sensor_msgs.msg import CameraInfo, Image, JointState, PointCloud2, PointField
from std_msgs.msg import Header
from visualization_msgs.msg import Marker

from ...cell.objects import shapes
from ...cell.vision.camera import pack_cloud

from ...control.trajectory import Trajectory

WORLD_FRAME = "world"
OPTICAL_FRAME = "camera_optical_frame"

MARKER_TYPES = {shapes.MESH: Marker.MESH_RESOURCE, shapes.BOX: Marker.CUBE, shapes.SPHERE: Marker.SPHERE,
                shapes.CYLINDER: Marker.CYLINDER}


def marker_geometry(marker: Marker) -> shapes.Geometry:
    """The object geometry a world/objects marker describes."""
    kind = {v: k for k, v in MARKER_TYPES.items()}.get(marker.type, shapes.BOX)
    return shapes.Geometry(kind, (marker.scale.x, marker.scale.y, marker.scale.z),
                           marker.mesh_resource.removeprefix("file://"))


def stamp(seconds: float) -> Time:
    nanoseconds = int(round(seconds * 1e9))
    return Time(sec=nanoseconds // 1_000_000_000, nanosec=nanoseconds % 1_000_000_000)


def to_seconds(time) -> float:
    """A builtin_interfaces Time or Duration in seconds."""
    return time.sec + time.nanosec * 1e-9


def trajectory(msg, limits) -> Trajectory:
    """A trajectory_msgs/JointTrajectory as the core's Trajectory; BadTrajectory says what is wrong."""
    return Trajectory.parse(msg.joint_names, [to_seconds(p.time_from_start) for p in msg.points],
                            [p.positions for p in msg.points], [p.velocities for p in msg.points],
                            limits.lower, limits.upper, limits.velocity,
                            [p.accelerations for p in msg.points], limits.acceleration)


def header(seconds: float, frame_id: str = WORLD_FRAME) -> Header:
    return Header(stamp=stamp(seconds), frame_id=frame_id)


def pose(position, quaternion_xyzw) -> Pose:
    x, y, z = (float(v) for v in position)
    qx, qy, qz, qw = (float(v) for v in quaternion_xyzw)
    return Pose(position=Point(x=x, y=y, z=z), orientation=Quaternion(x=qx, y=qy, z=qz, w=qw))


def joint_state(seconds: float, names, position, velocity, effort) -> JointState:
    return JointState(header=header(seconds, ""), name=list(names), position=np.asarray(position, float).tolist(),
                      velocity=np.asarray(velocity, float).tolist(), effort=np.asarray(effort, float).tolist())


def pose_stamped(seconds: float, position, quaternion_xyzw) -> PoseStamped:
    return PoseStamped(header=header(seconds), pose=pose(position, quaternion_xyzw))


def wrench_stamped(seconds: float, frame_id: str, wrench) -> WrenchStamped:
    fx, fy, fz, tx, ty, tz = (float(v) for v in wrench)
    msg = WrenchStamped(header=header(seconds, frame_id))
    msg.wrench.force = Vector3(x=fx, y=fy, z=fz)
    msg.wrench.torque = Vector3(x=tx, y=ty, z=tz)
    return msg


# encoding -> (dtype, channels) of the arrays each image message is built from (REP 118 / sensor_msgs encodings)
ENCODINGS = {"rgb8": (np.dtype(np.uint8), 3), "32FC1": (np.dtype(np.float32), 1), "32SC1": (np.dtype(np.int32), 1)}


def image(seconds: float, pixels: np.ndarray, encoding: str, frame_id: str = OPTICAL_FRAME) -> Image:
    """An Image of `pixels` (H x W, or H x W x channels) with one copy: the array's buffer straight into the
    message's array.array('B') (`frombytes`, a memcpy), which rclpy takes as it is. cv_bridge's
    cv2_to_imgmsg made two (`tostring` to bytes, then array.array from them). A pixels array that is not
    C-contiguous is made so first (a copy that only a strided view needs). ValueError for an array that does
    not fit the encoding."""
    dtype, channels = ENCODINGS[encoding]
    if pixels.dtype != dtype or pixels.ndim not in (2, 3) or (pixels.shape[2] if pixels.ndim == 3 else 1) != channels:
        raise ValueError(f"{encoding} needs H x W{' x %d' % channels if channels > 1 else ''} {dtype}, got "
                         f"{' x '.join(map(str, pixels.shape))} {pixels.dtype}")
    pixels = np.ascontiguousarray(pixels)
    height, width = pixels.shape[:2]
    msg = Image(header=header(seconds, frame_id), height=height, width=width, encoding=encoding,
                is_bigendian=sys.byteorder == "big", step=width * channels * dtype.itemsize)
    msg.data.frombytes(_bytes_view(pixels))
    return msg


def _bytes_view(array: np.ndarray) -> np.ndarray:
    """A C-contiguous array's buffer as flat uint8, without a copy: array.frombytes takes only byte-format
    buffers (a float32 one is refused)."""
    return array.reshape(-1).view(np.uint8)


def rgb_image(seconds: float, rgb: np.ndarray, frame_id: str = OPTICAL_FRAME) -> Image:
    return image(seconds, rgb, "rgb8", frame_id)


def depth_image(seconds: float, depth: np.ndarray, frame_id: str = OPTICAL_FRAME) -> Image:
    return image(seconds, depth, "32FC1", frame_id)


def camera_info(seconds: float, width: int, height: int, k: np.ndarray, frame_id: str = OPTICAL_FRAME) -> CameraInfo:
    """An ideal pinhole: no distortion, P = [K | 0], identity rectification."""
    p = np.hstack([k, np.zeros((3, 1))])
    return CameraInfo(header=header(seconds, frame_id), width=width, height=height,
                      distortion_model="plumb_bob", d=[0.0] * 5, k=k.flatten().tolist(),
                      r=np.eye(3).flatten().tolist(), p=p.flatten().tolist())


def segmentation_image(seconds: float, labels: np.ndarray, frame_id: str = OPTICAL_FRAME) -> Image:
    """One int32 id per pixel (32SC1): cell/vision/labels.py says what the ids mean."""
    return image(seconds, np.asarray(labels, dtype=np.int32), "32SC1", frame_id)


CLOUD_FIELDS = [PointField(name=name, offset=4 * i, datatype=PointField.FLOAT32, count=1)
                for i, name in enumerate(("x", "y", "z", "rgb"))]


def point_cloud(seconds: float, xyz: np.ndarray, rgb: np.ndarray, frame_id: str = OPTICAL_FRAME) -> PointCloud2:
    """An organised XYZRGB cloud (H x W, as the image) in the optical frame; rgb packed as PCL and RViz
    expect (0x00RRGGBB in a float32's bits); NaN points where nothing was hit, so not dense."""
    return packed_point_cloud(seconds, pack_cloud(xyz, rgb), frame_id)


def packed_point_cloud(seconds: float, points: np.ndarray, frame_id: str = OPTICAL_FRAME) -> PointCloud2:
    """The cloud message of points packed as camera.pack_cloud packs them (H x W x 4 float32)."""
    height, width = points.shape[:2]
    msg = PointCloud2(header=header(seconds, frame_id), height=height, width=width, fields=CLOUD_FIELDS,
                      is_bigendian=False, point_step=16, row_step=16 * width, is_dense=False)
    msg.data.frombytes(_bytes_view(np.ascontiguousarray(points, dtype=np.float32)))  # one copy, as `image`
    return msg
