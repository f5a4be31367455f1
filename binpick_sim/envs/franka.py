"""Gymnasium envs of the seed (Franka0/1/2): joint position, joint velocity and top-down delta actions.

Each `step` hands the arm one command and advances `task.steps_per_action` physics steps; the task
(seed rules) gives the reward, the termination and `info`; `task.max_episode_steps` truncates.
"""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import cv2
import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ..cell.arm import JOINT_NAMES
from ..cell.ik import clip
from ..config import load_config
from ..paths import default_config
from .backends import Observation, make_backend

OBSERVATIONS = ("image", "state")


class FrankaEnv(gym.Env):
    metadata = {"render_modes": ["rgb_array", "depth_array", "human"], "render_fps": 10}
    command = "position"

    def __init__(self, config_file: str | Path | None = None, backend: str = "direct", observation: str = "image",
                 render_mode: str | None = None, camera_size: tuple[int, int] | None = None,
                 renderer: str | None = None, render_depth: bool = False, until_reached: bool = False,
                 **backend_options):
        """`renderer`: the scene file's `simulation.renderer` replaced (auto | tiny | egl | gui).
        `render_depth`: with render_mode "rgb_array", `render()` returns (rgb, depth) as the seed's
        `render(get_depth_data=True)` does. `until_reached`: a step lasts until the arm reaches the
        commanded targets (at most `arm.max_steps` physics steps) instead of `task.steps_per_action`."""
        if observation not in OBSERVATIONS:
            raise ValueError(f"observation must be one of {OBSERVATIONS}, got {observation!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        if render_depth and render_mode != "rgb_array":
            raise ValueError(f"render_depth=True needs render_mode='rgb_array', got {render_mode!r}")
        if until_reached and self.command not in ("position", "delta"):
            raise ValueError(f"until_reached=True is for position and delta actions, not {self.command}")
        self.render_depth, self.until_reached = bool(render_depth), bool(until_reached)
        config = load_config(config_file or default_config())
        if camera_size is not None:
            width, height = camera_size
            config = dataclasses.replace(config, camera=dataclasses.replace(config.camera, width=width, height=height))
        if renderer is not None:  # the scene file's simulation.renderer otherwise (README: Renderers)
            config = dataclasses.replace(config, simulation=dataclasses.replace(config.simulation, renderer=renderer))
        self.config = config
        self.observation_mode = observation
        self.render_mode = render_mode
        images = observation == "image" or render_mode in ("rgb_array", "depth_array")
        # Made at the first reset: a vector env builds one env in the parent process just to read its
        # spaces, and a DDS participant in a parent that then forks would hang the children.
        self._make_backend = lambda: make_backend(backend, config, images, gui=render_mode == "human",
                                                  **backend_options)
        self._backend = None
        low, high, velocity = self._limits()
        self.joint_low, self.joint_high, self.joint_velocity = low, high, velocity
        self.action_space = self._action_space()
        self.observation_space = self._observation_space()
        self.reward_range = self._reward_range()
        self.last: Observation | None = None
        self.episode_start = 0.0
        self.steps = 0
        self.gripper_open = True

    # --- what differs between the envs --------------------------------------------------------
    def _action_space(self) -> spaces.Box:
        return spaces.Box(self.joint_low.astype(np.float32), self.joint_high.astype(np.float32), dtype=np.float32)

    def _command_values(self, action: np.ndarray) -> np.ndarray:
        return clip(action, self.action_space.low, self.action_space.high).astype(float)

    def _observation_space(self) -> spaces.Dict:
        if self.observation_mode == "image":
            h, w = self.config.camera.height, self.config.camera.width
            return spaces.Dict({"rgb": spaces.Box(0, 255, (h, w, 3), np.uint8),
                                "depth": spaces.Box(0.0, np.inf, (h, w), np.float32)})
        return self._state_space()

    def _observation(self, obs: Observation) -> dict:
        if self.observation_mode == "image":
            return {"rgb": obs.rgb, "depth": obs.depth}
        return self._state(obs)

    # --- shared -------------------------------------------------------------------------------
    def _state_space(self) -> spaces.Dict:
        big = np.full(3, 10.0, np.float32)
        return spaces.Dict({
            "joint_positions": spaces.Box(self.joint_low.astype(np.float32), self.joint_high.astype(np.float32),
                                          dtype=np.float32),
            "joint_velocities": spaces.Box(-np.inf, np.inf, (len(JOINT_NAMES),), np.float32),
            "ee_position": spaces.Box(-big, big, dtype=np.float32),
            "gripper_open": spaces.Discrete(2),
        })

    def _state(self, obs: Observation) -> dict:
        return {"joint_positions": clip(obs.joint_positions, self.joint_low, self.joint_high).astype(np.float32),
                "joint_velocities": obs.joint_velocities.astype(np.float32),
                "ee_position": obs.ee_position.astype(np.float32), "gripper_open": int(self.gripper_open)}

    @property
    def backend(self):
        if self._backend is None:
            self._backend = self._make_backend()
        return self._backend

    def _reward_range(self) -> tuple[float, float]:
        """The seed's `reward_range`: the least and most one step can earn (Gymnasium 1 dropped the
        attribute from Env; it stays here for the seed's users). A step grabs at most every object
        the pick bin can hold and touches a bin or not."""
        task, most = self.config.task, self.config.scene.pick_bin.max_objects
        grabs = (min(0.0, task.grab_reward) * most, max(0.0, task.grab_reward) * most)
        collision = (min(0.0, task.collision_reward), max(0.0, task.collision_reward))
        return (task.step_reward + grabs[0] + collision[0], task.step_reward + grabs[1] + collision[1])

    def _limits(self):
        """Joint limits from the URDF, read in a scratch world (the backend may not exist yet)."""
        from ..cell.sim import BinPickingSim

        tiny = dataclasses.replace(self.config.simulation, renderer="tiny", gui=False)  # no images needed here
        scratch = BinPickingSim(dataclasses.replace(self.config, simulation=tiny))
        try:
            limits = scratch.arm.limits
        finally:
            scratch.close()
        return limits.lower, limits.upper, limits.velocity

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        keep = bool((options or {}).get("keep_object_type", False))
        self.last = self.backend.reset(seed, keep)
        self.episode_start = self.last.stamp
        self.steps = 0
        self.gripper_open = True
        return self._observation(self.last), self._info(self.last)

    def step(self, action):
        action = np.asarray(action, dtype=float)
        if action.shape != self.action_space.shape or not all(map(math.isfinite, action.tolist())):
            raise ValueError(f"action must be {self.action_space.shape} finite numbers, got {action!r}")
        values = self._command_values(action)
        if self.until_reached:
            self.last = self.backend.step(self.command, values, self.config.arm.max_steps, until_reached=True)
        else:
            self.last = self.backend.step(self.command, values, self.config.task.steps_per_action)
        self.steps += 1
        status = self.last.status
        truncated = not status["terminated"] and self.steps >= self.config.task.max_episode_steps
        return (self._observation(self.last), float(status["reward"]), bool(status["terminated"]), truncated,
                self._info(self.last))

    def _info(self, obs: Observation) -> dict:
        status = obs.status
        return {"grabs": status["grabs"], "grabbed": status["grabbed"], "bin_collision": status["bin_collision"],
                "grab_limit_reached": status["grab_limit_reached"], "objects_left": status["objects_left"],
                "removed_outside": status["removed_outside"], "episode_time": self._episode_time(obs.stamp)}

    def _episode_time(self, stamp: float) -> float:
        """Sim seconds since the reset, as whole physics steps times the timestep: the world's clock runs
        on across episodes, and a plain difference of its stamps would carry last bits that depend on
        how long the world ran before."""
        timestep = self.config.simulation.timestep
        return round((stamp - self.episode_start) / timestep) * timestep

    def render(self):
        """The last camera frame: rgb (H×W×3 uint8) for "rgb_array", or (rgb, depth) when made with
        `render_depth=True`; depth (H×W float32, metres along the optical axis) for "depth_array"; None
        before the first reset and for "human" (PyBullet's window shows it)."""
        if self.last is None or self.render_mode not in ("rgb_array", "depth_array"):
            return None
        if self.render_mode == "depth_array":
            return self.last.depth
        return (self.last.rgb, self.last.depth) if self.render_depth else self.last.rgb

    def object_views(self):
        """Object poses and meshes, as the world/objects markers carry them (for scripted policies)."""
        return self.last.object_views() if self.last is not None else []

    def close(self) -> None:
        if getattr(self, "_backend", None) is not None:
            self._backend.close()
            self._backend = None


class FrankaPositionEnv(FrankaEnv):
    """Seed Franka0: 9 absolute joint targets within the joint limits [rad, m]. `gripper_open` is the
    fingers' command: open while their mean target is at least half the configured open width."""

    command = "position"

    def _command_values(self, action: np.ndarray) -> np.ndarray:
        values = super()._command_values(action)
        self.gripper_open = bool(values[7:].mean() >= self.config.arm.gripper_open / 2)
        return values


class FrankaVelocityEnv(FrankaEnv):
    """Seed Franka1: 9 joint velocities within the velocity limits [rad/s, m/s]. `gripper_open` is the
    fingers' command: opening (mean finger velocity > 0) makes it 1, closing 0, still fingers keep it."""

    command = "velocity"

    def _command_values(self, action: np.ndarray) -> np.ndarray:
        values = super()._command_values(action)
        fingers = values[7:].mean()
        if fingers != 0:
            self.gripper_open = bool(fingers > 0)
        return values

    def _action_space(self) -> spaces.Box:
        v = self.joint_velocity.astype(np.float32)
        return spaces.Box(-v, v, dtype=np.float32)


class FrankaDeltaEnv(FrankaEnv):
    """Seed Franka2: [dx, dy, dz, da, open/close] in [-1, 1], scaled by `dv` [m] and `da` [rad];
    observes the gripper position, a downsampled rgb image and whether the gripper is open."""

    command = "delta"

    def __init__(self, config_file=None, da: float = 0.25, dv: float = 0.016, downsample_height: int = 64,
                 downsample_width: int = 64, **kwargs):
        self.da, self.dv = da, dv
        self.downsample = (downsample_height, downsample_width)
        super().__init__(config_file, **kwargs)

    def _action_space(self) -> spaces.Box:
        return spaces.Box(-1.0, 1.0, (5,), dtype=np.float32)

    def _command_values(self, action: np.ndarray) -> np.ndarray:
        a = clip(action, -1.0, 1.0).tolist()  # plain floats: the same products, without numpy scalars
        gripper = 1.0 if a[4] > 0 else -1.0 if a[4] < 0 else 0.0
        if gripper:
            self.gripper_open = gripper > 0
        return np.array([a[0] * self.dv, a[1] * self.dv, a[2] * self.dv, a[3] * self.da, gripper])

    def _observation_space(self) -> spaces.Dict:
        big = np.full(3, 10.0, np.float32)
        if self.observation_mode == "state":
            return self._state_space()
        return spaces.Dict({"ee_position": spaces.Box(-big, big, dtype=np.float32),
                            "rgb": spaces.Box(0, 255, (*self.downsample, 3), np.uint8),
                            "gripper_open": spaces.Discrete(2)})

    def _observation(self, obs: Observation) -> dict:
        if self.observation_mode == "state":
            return self._state(obs)
        height, width = self.downsample
        rgb = cv2.resize(obs.rgb, (width, height), interpolation=cv2.INTER_AREA)
        return {"ee_position": obs.ee_position.astype(np.float32), "rgb": rgb, "gripper_open": int(self.gripper_open)}
