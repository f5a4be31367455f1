"""The envs' scene and camera changes (the reference simulator's API): `load_scene(mode)` (train / test objects, the two-arm cell) and
`recompute_view_and_projection_matrix` (move the camera until the next reset).

A mixin of FrankaEnv (franka.py): the reference simulator's way of changing an env's scene and camera after it was made,
kept apart from the env's own step, spaces and observations. It uses the env's `_scene_base`,
`_backend_args`, `_scene`, `_rendered`, `_camera_changes`, `backend` and `close`.
"""
from __future__ import annotations

import numpy as np

from ..config import load_config, with_changes
from ..paths import default_config
from .backends import make_backend


class SceneChangeApi:
    scene_modes = ("train", "test", "two_arms")  # reference: scene_modes; load_scene(mode) picks one
    scene_mode: str | None = None  # the last load_scene's mode (None: the scene file as given)

    def load_scene(self, mode: str) -> None:
        """Seed: the scene the next reset starts in. `train` / `test`: this env's scene file with the
        training / testing half of the objects (`scene.object_set`); `two_arms`: the two-arm cell
        (config/scene_two_arms.yaml; the env commands its first arm, grabs by either arm count). The
        camera keeps this env's image size and renderer, so the spaces stay as they are. The running
        simulation (or the ROS backend's sim process) is closed now and the new one made at the next reset."""
        if mode not in self.scene_modes:
            raise ValueError(f"unknown scene mode {mode!r} (scene_modes: {', '.join(self.scene_modes)})")
        base = self._scene_base
        if mode == "two_arms":
            config = load_config(default_config().parent / "scene_two_arms.yaml")
            config = with_changes(config, camera={"width": base.camera.width, "height": base.camera.height},
                                  simulation={"renderer": base.simulation.renderer})
            config = self._scene(config)  # as this env runs a scene file (the goal envs: their home and rules)
        else:
            config = with_changes(base, scene={"object_set": mode})
        name, images, gui, options = self._backend_args
        self.close()
        self.config, self.scene_mode = config, mode
        rendered = self._rendered(config)
        self._make_backend = lambda seed=None: make_backend(name, rendered, images, gui=gui, first_seed=seed, **options)
        self.last = None

    def recompute_view_and_projection_matrix(self, eye_position, target_position, fov, near_plane, far_plane,
                                             up_vector=None, render_width=None, render_height=None) -> None:
        """Seed: look from `eye_position` at `target_position` (world, m) with `up_vector` up (default
        +z), a vertical field of view `fov` [deg], clipping planes `near_plane` / `far_plane` [m], and
        optionally a new image size, from the next observation on. Until the next reset: `reset()` puts
        the scene file's camera back, so observations fit `observation_space` again (while it is
        changed, an image observation has the size asked for here). ValueError, nothing changed, if a
        value is wrong."""
        from scipy.spatial.transform import Rotation

        eye, target = np.asarray(eye_position, dtype=float), np.asarray(target_position, dtype=float)
        up = np.asarray([0.0, 0.0, 1.0] if up_vector is None else up_vector, dtype=float)
        forward = target - eye
        left = np.cross(up, forward)
        if (eye.shape, target.shape, up.shape) != ((3,), (3,), (3,)) or not np.all(np.isfinite([*eye, *target, *up])) \
                or np.linalg.norm(forward) < 1e-9 or np.linalg.norm(left) < 1e-9 * np.linalg.norm(forward):
            raise ValueError("eye_position, target_position and up_vector must be 3 finite numbers each, the "
                             "target apart from the eye and the up vector not along the line of sight")
        forward, left = forward / np.linalg.norm(forward), left / np.linalg.norm(left)
        rotation = np.column_stack([forward, left, np.cross(forward, left)])  # camera_link: x forward, z up
        changes = {"parent": "world", "position": tuple(eye.tolist()),
                   "orientation_deg": tuple(Rotation.from_matrix(rotation).as_euler("xyz", degrees=True).tolist()),
                   "fov_deg": float(fov), "near": float(near_plane), "far": float(far_plane)}
        if render_width is not None:
            changes["width"] = int(render_width)
        if render_height is not None:
            changes["height"] = int(render_height)
        self.backend.set_camera(self._camera_changes(changes))
