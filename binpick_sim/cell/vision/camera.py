"""A pinhole camera rendered by PyBullet: rgb, metric depth, segmentation and ROS-ready intrinsics.

The camera is placed like a URDF sensor: `camera_link` (x forward, z up; REP 103) sits at a fixed
offset from a parent frame, either `world` or a link of the arm, and `camera_optical_frame`
(z forward, x right, y down) is rigidly attached to it. Depth is the distance along the optical
axis in metres, recovered from OpenGL's non-linear depth buffer.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...config import CameraConfig, ConfigError, replaced
from ..rendering.renderers import upsampling_problem
from ..world import World

FAR_BUFFER = 1.0 - 1e-6  # depth-buffer values this close to 1 hit nothing before the far plane
# The smallest float32 at or above FAR_BUFFER: a float32 buffer value is >= it exactly when it is >= FAR_BUFFER
# in float64, so the far-plane test needs no float64 copy of the buffer (0.04 instead of 0.29 ms at 640 x 480).
FAR_BUFFER_32 = np.float32(FAR_BUFFER) if float(np.float32(FAR_BUFFER)) >= FAR_BUFFER else \
    np.nextafter(np.float32(FAR_BUFFER), np.float32(2))
# camera_link -> camera_optical_frame, the standard rpy (-pi/2, 0, -pi/2) as a rotation matrix
LINK_TO_OPTICAL = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
# RGBA -> RGB through OpenCV from this many pixels on: its SIMD copy takes 0.18 ms at 1024 x 768 where numpy's
# strided one takes 2.9 ms (measured here), a tenth of a frame on a GPU's EGL; below, numpy's copy costs
# tens of microseconds and a small camera's process is spared OpenCV's ~22 MB.
OPENCV_MIN_PIXELS = 320 * 240


@dataclass(frozen=True)
class Frame:
    rgb: np.ndarray  # H x W x 3 uint8
    depth: np.ndarray  # H x W float32, metres along the optical axis; +inf where nothing was hit
    segmentation: np.ndarray | None  # H x W int32, PyBullet body id per pixel, -1 for background; None unless asked
    stamp: float  # sim time of the render


class Camera:
    """Where the camera is and what it sees; both can change at run time (`mount`, `set_view`): the reference simulator's
    `mount_camera_on_robot` and `recompute_view_and_projection_matrix`."""

    def __init__(self, world: World, config: CameraConfig, arm=None, name: str = ""):
        self.world = world
        self.arm = arm
        self.name = name  # "" for the scene file's `camera:`, else its key under `cameras:`
        self.config = config
        self._apply(config)

    @property
    def link_frame(self) -> str:
        """camera_link, or camera_<name>_link for a named camera (the robot description has both frames)."""
        return f"camera_{self.name}_link" if self.name else "camera_link"

    @property
    def optical_frame(self) -> str:
        return f"camera_{self.name}_optical_frame" if self.name else "camera_optical_frame"

    def _parent(self, parent: str) -> tuple[int | None, int | None]:
        """Body and link of a parent frame name (None, None for world); ValueError naming the known ones."""
        if parent == "world":
            return None, None
        if self.arm is not None and parent in self.arm.link_index:
            return self.arm.body, self.arm.link_index[parent]
        known = ["world"] + (sorted(self.arm.link_index) if self.arm is not None else [])
        raise ValueError(f"camera.parent: unknown frame {parent!r} (known: {', '.join(known)})")

    def _apply(self, config: CameraConfig) -> None:
        """Make `config` current: parent frame, offset and projection."""
        c = self.world.client
        self.parent_body, self.parent_link = self._parent(config.parent)
        offset_quat = c.getQuaternionFromEuler(np.radians(config.orientation_deg))
        self.offset_position = np.array(config.position, dtype=float)
        self.offset_rotation = np.array(c.getMatrixFromQuaternion(offset_quat)).reshape(3, 3)
        # the view's aspect, not the grid's: a camera drawn at another size (`aspect`) keeps its field of view
        self.projection = c.computeProjectionMatrixFOV(config.fov_deg, config.view_aspect, config.near, config.far)
        self.renderer = self.world.renderer.flag  # PyBullet's getCameraImage argument (cell/rendering/renderers.py)
        self.config = config

    @property
    def key(self) -> str:
        """The scene file's key of this camera, which error messages name."""
        return f"cameras.{self.name}." if self.name else "camera."

    def checked(self, **changes) -> CameraConfig:
        """The config with `changes`, checked as a scene file's is: each value (type, number of values,
        finite, bounds) and the camera as a whole (near < far, the pixel budget, a known parent, a size the
        renderer draws); ConfigError / ValueError otherwise, and nothing changes. A position of two values
        once went through to the renderer and killed the render worker."""
        config = replaced(self.config, self.key, **changes)
        self._parent(config.parent)
        problem = upsampling_problem(self.world.renderer.name, [(config.width, config.height)])
        if problem:
            raise ConfigError(problem)
        return config

    def reconfigure(self, **changes) -> CameraConfig:
        """Change any CameraConfig fields at once, or nothing if one is wrong (`checked`); returns the new
        config. On the physics thread while it runs (`PhysicsLoop.run`)."""
        config = self.checked(**changes)
        self._apply(config)
        return config

    def mount(self, parent: str, position, orientation_deg) -> CameraConfig:
        """Put camera_link at `position` / `orientation_deg` (roll, pitch, yaw) in `parent` (world or a link)."""
        return self.reconfigure(parent=parent, position=tuple(float(v) for v in position),
                                orientation_deg=tuple(float(v) for v in orientation_deg))

    def set_view(self, **lens) -> CameraConfig:
        """New fov_deg, near, far, width or height (any of them): projection and intrinsics follow."""
        unknown = set(lens) - {"fov_deg", "near", "far", "width", "height"}
        if unknown:
            raise TypeError(f"set_view: unknown {sorted(unknown)}")
        return self.reconfigure(**lens)

    @property
    def width(self) -> int:
        return self.config.width

    @property
    def height(self) -> int:
        return self.config.height

    def link_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """World position and rotation matrix of camera_link (follows the parent link if mounted)."""
        if self.parent_body is None:
            return self.offset_position, self.offset_rotation
        state = self.world.client.getLinkState(self.parent_body, self.parent_link, computeForwardKinematics=True)
        parent_rotation = np.array(self.world.client.getMatrixFromQuaternion(state[5])).reshape(3, 3)
        return np.array(state[4]) + parent_rotation @ self.offset_position, parent_rotation @ self.offset_rotation

    def optical_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """World position and rotation matrix of camera_optical_frame."""
        position, rotation = self.link_pose()
        return position, rotation @ LINK_TO_OPTICAL

    def view_matrix(self) -> list[float]:
        position, rotation = self.optical_pose()
        forward, down = rotation[:, 2], rotation[:, 1]
        return self.world.client.computeViewMatrix(position.tolist(), (position + forward).tolist(), (-down).tolist())

    def intrinsics(self) -> np.ndarray:
        """3x3 K in ROS's convention (pixel centres at integer coordinates) matching the rendered images.

        The principal point depends on the renderer: OpenGL puts the optical axis at (w/2 - 0.5, h/2 - 0.5);
        TinyRenderer samples pixels at integer screen coordinates and flips rows, which moves it to
        (w/2, h/2 - 1). The camera test measures this against rendered markers. fx = fy unless the config's
        `aspect` draws a view of another shape on this grid (an observation at its own size): then
        fx = fy * (width / height) / aspect, the configured camera's K scaled to this size.
        """
        fy = (self.height / 2) / np.tan(np.radians(self.config.fov_deg) / 2)
        fx = fy * (self.width / self.height) / self.config.view_aspect
        if not self.world.renderer.opengl:
            cx, cy = self.width / 2, self.height / 2 - 1
        else:
            cx, cy = self.width / 2 - 0.5, self.height / 2 - 0.5
        return np.array([[fx, 0.0, cx], [0.0, fy, cy], [0.0, 0.0, 1.0]])

    def render(self, segmentation: bool = False) -> Frame:
        """One frame from one getCameraImage call, the segmentation mask from the same call when asked (flags 0:
        PyBullet's body id per pixel; otherwise ER_NO_SEGMENTATION_MASK). TinyRenderer fills the mask in the
        same raster pass, so it costs a copy; EGL draws the scene a second time for it inside that call
        (eglRendererVisualShapeConverter, PyBullet 3.2.7), which no flag avoids. PyBullet here is built with
        numpy, so the buffers come back as arrays: rgb is one copy of the RGBA buffer, depth one conversion."""
        c = self.world.client
        flags = 0 if segmentation else c.ER_NO_SEGMENTATION_MASK
        _, _, rgba, depth_buffer, seg = c.getCameraImage(
            self.width, self.height, self.view_matrix(), self.projection, renderer=self.renderer, flags=flags)
        shape = (self.height, self.width)
        rgba = np.asarray(rgba, dtype=np.uint8).reshape(*shape, 4)
        depth = self.linearize(np.asarray(depth_buffer, dtype=np.float32).reshape(shape))
        seg = np.asarray(seg, dtype=np.int32).reshape(shape) if segmentation else None
        return Frame(rgb=rgb_of(rgba), depth=depth, segmentation=seg, stamp=self.world.time)

    def points(self, depth: np.ndarray) -> np.ndarray:
        """Each pixel's point in the optical frame (H x W x 3 float32, metres); NaN where nothing was hit."""
        return back_project(depth, self.intrinsics())

    def linearize(self, depth_buffer: np.ndarray) -> np.ndarray:
        """OpenGL depth buffer [0, 1] to metres along the optical axis; the far plane becomes +inf.

        far * near / (far - (far - near) * d) in float64 (the buffer's 24 bits need it near the far plane),
        computed in one float64 array in place and rounded once to float32: the same bits as the plain
        expression, without its three temporaries."""
        near, far = self.config.near, self.config.far
        depth = np.multiply(depth_buffer, far - near, dtype=np.float64)
        np.subtract(far, depth, out=depth)
        np.divide(far * near, depth, out=depth)
        metres = depth.astype(np.float32)
        metres[depth_buffer >= FAR_BUFFER_32] = np.inf  # as if compared in float64 (FAR_BUFFER_32)
        return metres


def rgb_of(rgba: np.ndarray) -> np.ndarray:
    """The H x W x 3 rgb of an H x W x 4 rgba frame, contiguous (see OPENCV_MIN_PIXELS)."""
    if rgba.shape[0] * rgba.shape[1] >= OPENCV_MIN_PIXELS:
        import cv2

        return cv2.cvtColor(rgba, cv2.COLOR_RGBA2RGB)
    return np.ascontiguousarray(rgba[:, :, :3])


def back_project(depth: np.ndarray, k: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Depth along the optical axis to points in the optical frame through K; NaN where depth is inf.
    Written into `out` (H x W x 3 or more float32: x y z in the first three) when given."""
    height, width = depth.shape
    u = (np.arange(width, dtype=np.float32) - k[0, 2]) / k[0, 0]
    v = (np.arange(height, dtype=np.float32) - k[1, 2]) / k[1, 1]
    points = np.empty((height, width, 3), dtype=np.float32) if out is None else out
    z = points[..., 2]
    z[...] = depth
    z[~np.isfinite(depth)] = np.nan
    np.multiply(z, u[None, :], out=points[..., 0])
    np.multiply(z, v[:, None], out=points[..., 1])
    return points


def organised_cloud(depth: np.ndarray, k: np.ndarray, rgb: np.ndarray) -> np.ndarray:
    """pack_cloud(back_project(depth, k), rgb), each value written once into the cloud (no H x W x 3
    temporaries: they were most of the cloud's cost)."""
    height, width = depth.shape
    points = np.empty((height, width, 4), dtype=np.float32)
    back_project(depth, k, out=points)
    _pack_colour(rgb, points)
    return points


def pack_cloud(xyz: np.ndarray, rgb: np.ndarray) -> np.ndarray:
    """An organised XYZRGB cloud as PointCloud2 carries it: H x W x 4 float32, x y z in the optical frame and
    the colour packed as PCL and RViz expect (0x00RRGGBB in a float32's bits); NaN points where nothing was
    hit. Built in the render worker for a watched cloud: on the physics thread it was most of a frame's cost."""
    height, width = xyz.shape[:2]
    points = np.empty((height, width, 4), dtype=np.float32)
    points[..., :3] = xyz
    _pack_colour(rgb, points)
    return points


def _pack_colour(rgb: np.ndarray, points: np.ndarray) -> None:
    """0x00RRGGBB into the bits of points[..., 3], computed in place."""
    packed = points[..., 3].view(np.uint32)
    np.left_shift(rgb[..., 0], 16, out=packed, dtype=np.uint32)
    np.bitwise_or(packed, np.left_shift(rgb[..., 1], 8, dtype=np.uint32), out=packed)
    np.bitwise_or(packed, rgb[..., 2], out=packed, dtype=np.uint32)
