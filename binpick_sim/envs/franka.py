"""Gymnasium envs of the reference simulator (Franka0/1/2): joint position, joint velocity and top-down delta actions.

Each `step` hands the arm one command and advances `task.steps_per_action` physics steps; the task
(the reference simulator's rules) gives the reward, the termination and `info`. Truncation is Gymnasium's `TimeLimit`
under `gym.make` (the registered limit, or `max_episode_steps=`); an env made directly from its class
truncates at the scene file's `task.max_episode_steps` itself, as the reference simulator's envs did.

An env pickles (pickle, cloudpickle) as its constructor arguments and is made again from them when
loaded: a new env, to be reset before use (a PyBullet world or a ROS process cannot be copied).
"""
from __future__ import annotations

import inspect
import math
import os
from pathlib import Path

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ..cell.arm.panda import JOINT_NAMES, urdf_joint_limits
from ..cell.arm.ik import clip
from ..config import Config, SimulationConfig, checked_value, load_config, with_changes
from ..paths import default_config
from .backends import Observation, make_backend
from .cameras import SEGMENTATION_LOW, with_preset
from .privileged_observation import PrivilegedLayout, shaping
from .scene_changes import SceneChangeApi

OBSERVATIONS = ("image", "state", "privileged", "state_dict", "rgbd", "segmentation")
PRIVILEGED = ("privileged", "state_dict")  # robot, objects and bins (doc/gym.md "Learning")
CAMERA_OBSERVATIONS = ("image", "rgbd", "segmentation")  # rendered every step
REWARD_TYPES = ("sparse", "dense")
BACKENDS = ("direct", "ros")
RENDER_MODES = ("rgb_array", "depth_array", "human")
ROS_OPTIONS = ("namespace", "sim_parameters", "step_channel")


def have_display() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def render_modes() -> list[str]:
    """The render modes that work here: "human" (PyBullet's window) only where a display exists."""
    return [m for m in RENDER_MODES if m != "human" or have_display()]


def episode_limit(env) -> int | None:
    """The number of steps after which `env`'s episodes are truncated: its TimeLimit's under
    `gym.make` (None with `max_episode_steps=-1`), else the scene file's `task.max_episode_steps`."""
    if env.unwrapped.spec is not None:
        return env.spec.max_episode_steps if env.spec is not None else None
    return env.unwrapped.config.task.max_episode_steps


class FrankaEnv(SceneChangeApi, gym.Env):
    # Every mode `gym.make` may pass on (so that "human" reaches the constructor, which says why it cannot
    # open a window headless); each instance lists the modes that work where it runs (`render_modes`), which
    # is what Gymnasium's checker tries.
    metadata = {"render_modes": list(RENDER_MODES), "render_fps": 10}
    command = "position"

    def __init__(self, config_file: str | Path | None = None, backend: str = "direct", observation: str = "image",
                 render_mode: str | None = None, camera_size: tuple[int, int] | None = None,
                 renderer: str | None = None, render_depth: bool = False, until_reached: bool = False,
                 namespace: str | None = None, sim_parameters: dict | None = None, reward_type: str = "sparse",
                 camera_preset: str | None = None, step_channel: bool | None = None, **unknown):
        """`renderer`: the scene file's `simulation.renderer` replaced (auto | tiny | egl | gui).
        `render_depth`: with render_mode "rgb_array", each frame `render()` returns shows the depth image
        beside the rgb one (one uint8 image, as RecordVideo records it); `render(get_depth_data=True)`
        returns (rgb, depth) as the reference simulator's does. `until_reached`: a step lasts until the arm reaches the
        commanded targets (at most `arm.max_steps` physics steps) instead of `task.steps_per_action`.
        `namespace`, `sim_parameters`, `step_channel`: the ROS backend's (RosBackend; `step_channel=True`
        exchanges each step, and an image env's frames, over a socket pair with the sim process instead of
        topics: faster).
        `reward_type`: "sparse", the task's reward, or "dense", that plus `privileged.shaping` toward the
        nearest object and the grab's height (doc/gym.md "Learning"). `camera_preset`: "pick_bin", the
        camera aimed at the pick bin for learning from pixels (envs/cameras.py; `camera_size` still sets its
        image size), or None, the scene file's camera. Any other keyword is refused with a TypeError naming
        the valid ones (a misspelled option would otherwise be silently ignored)."""
        if unknown:
            raise TypeError(f"{type(self).__name__} got unknown argument(s) {', '.join(map(repr, sorted(unknown)))}; "
                            f"valid arguments: {', '.join(self.argument_names())}")
        self._init_kwargs = dict(config_file=config_file, backend=backend, observation=observation,
                                 render_mode=render_mode, camera_size=camera_size, renderer=renderer,
                                 render_depth=render_depth, until_reached=until_reached, namespace=namespace,
                                 sim_parameters=sim_parameters, reward_type=reward_type, camera_preset=camera_preset,
                                 step_channel=step_channel)
        self.metadata = {**type(self).metadata, "render_modes": render_modes()}
        self._check_arguments(backend, observation, render_mode, render_depth, until_reached, reward_type,
                              (namespace, sim_parameters, step_channel))
        self.reward_type = reward_type
        self.render_depth, self.until_reached = bool(render_depth), bool(until_reached)
        config = self._scene(self._config(config_file, camera_preset, camera_size, renderer))
        self.config = config
        self.observation_mode = observation
        self.privileged_layout = PrivilegedLayout(config.scene.pick_bin.max_objects)
        self.render_mode = render_mode
        images = observation in CAMERA_OBSERVATIONS or render_mode in ("rgb_array", "depth_array")
        options = {k: v for k, v in (("namespace", namespace), ("sim_parameters", sim_parameters),
                                     ("step_channel", step_channel)) if v is not None}
        # Made at the first reset: a vector env builds one env in the parent process just to read its
        # spaces, and a DDS participant in a parent that then forks would hang the children.
        rendered = self._rendered(config)  # the camera as drawn: at the observation's size (FrankaDeltaEnv)
        options["privileged"] = self.needs_privileged()  # over ROS the task node sends it only when asked
        options["segmentation"] = observation == "segmentation"
        self._make_backend = lambda seed=None: make_backend(backend, rendered, images, gui=render_mode == "human",
                                                            first_seed=seed, **options)
        self._backend_args = (backend, images, render_mode == "human", options)  # load_scene's
        self._scene_base = config  # the scene file as given (with camera_size / renderer): load_scene's start
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

    def _check_arguments(self, backend, observation, render_mode, render_depth, until_reached, reward_type,
                         ros_options) -> None:
        """ValueError naming the argument for a value the env cannot use, before anything is built."""
        namespace, sim_parameters, step_channel = ros_options
        if observation not in OBSERVATIONS:
            raise ValueError(f"observation must be one of {OBSERVATIONS}, got {observation!r}")
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        if reward_type not in REWARD_TYPES:
            raise ValueError(f"reward_type must be one of {REWARD_TYPES}, got {reward_type!r}")
        if backend != "ros" and (namespace is not None or sim_parameters is not None or step_channel is not None):
            raise ValueError(f"{', '.join(ROS_OPTIONS)} are options of backend='ros', not {backend!r}")
        if render_mode == "human" and not have_display():
            raise ValueError("render_mode='human' opens PyBullet's window and needs a display, and neither DISPLAY "
                             "nor WAYLAND_DISPLAY is set: render headless with 'rgb_array' or 'depth_array', "
                             "or run under a display (e.g. xvfb-run)")
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ValueError(f"render_mode must be one of {list(RENDER_MODES)}, got {render_mode!r}")
        if render_depth and render_mode != "rgb_array":
            raise ValueError(f"render_depth=True needs render_mode='rgb_array', got {render_mode!r}")
        if until_reached and self.command not in ("position", "delta"):
            raise ValueError(f"until_reached=True is for position and delta actions, not {self.command}")

    @staticmethod
    def _config(config_file, camera_preset, camera_size, renderer) -> Config:
        """The scene file with the camera preset, size and renderer asked for, each change checked as the
        scene file's own values are (with_changes)."""
        config = with_preset(load_config(config_file or default_config()), camera_preset)
        if camera_size is not None:
            try:
                width, height = camera_size
            except (TypeError, ValueError):
                raise ValueError(f"camera_size must be (width, height) in pixels, got {camera_size!r}") from None
            config = with_changes(config, camera={"width": width, "height": height})
        if renderer is not None:  # the scene file's simulation.renderer otherwise (doc/cameras.md: Renderers)
            config = with_changes(config, simulation={"renderer": renderer})
        return config

    def needs_privileged(self) -> bool:
        """Whether this env reads the objects' and bins' state (its observation or its reward does)."""
        return self.observation_mode in PRIVILEGED or self.reward_type == "dense"

    @classmethod
    def argument_names(cls) -> list[str]:
        """Every keyword the constructor takes (this class's and its bases')."""
        names = []
        for klass in cls.__mro__:
            if klass is gym.Env or not issubclass(klass, FrankaEnv):
                continue
            for name, parameter in inspect.signature(klass.__init__).parameters.items():
                if name != "self" and parameter.kind is not parameter.VAR_KEYWORD and name not in names:
                    names.append(name)
        return names

    # --- pickling: the constructor's arguments -------------------------------------------------
    def __getstate__(self) -> dict:
        return {"kwargs": dict(self._init_kwargs), "spec": self.spec}

    def __setstate__(self, state: dict) -> None:
        fresh = type(self)(**state["kwargs"])
        self.__dict__.update(fresh.__dict__)
        self.spec = state["spec"]

    # --- what differs between the envs --------------------------------------------------------
    def _scene(self, config):
        """The scene file as this env runs it (both backends: the ROS one hands it to its sim): as given, but
        for the goal envs, whose task and start pose are their own (envs/goal.py)."""
        return config

    def _rendered(self, config):
        """The scene file as the backend runs it: as given, but for an env whose image observation has a
        size of its own (FrankaDeltaEnv)."""
        return config

    def _camera_changes(self, changes: dict) -> dict:
        """recompute_view_and_projection_matrix's camera changes as the backend's camera takes them."""
        return changes

    def _action_space(self) -> spaces.Box:
        return spaces.Box(self.joint_low.astype(np.float32), self.joint_high.astype(np.float32), dtype=np.float32)

    def _command_values(self, action: np.ndarray) -> np.ndarray:
        return clip(action, self.action_space.low, self.action_space.high).astype(float)

    def _observation_space(self) -> spaces.Dict:
        if self.observation_mode == "image":
            h, w = self.config.camera.height, self.config.camera.width
            return spaces.Dict({"rgb": spaces.Box(0, 255, (h, w, 3), np.uint8),
                                "depth": spaces.Box(0.0, np.inf, (h, w), np.float32)})
        if self.observation_mode in ("rgbd", "segmentation"):
            return self._camera_space()
        if self.observation_mode == "privileged":
            return self.privileged_layout.flat_space()
        if self.observation_mode == "state_dict":
            return self.privileged_layout.dict_space()
        return self._state_space()

    def _observation(self, obs: Observation) -> dict:
        if self.observation_mode == "image":
            return {"rgb": obs.rgb, "depth": obs.depth}
        if self.observation_mode in ("rgbd", "segmentation"):
            return self._camera_observation(obs)
        if self.observation_mode in PRIVILEGED:
            values = self.privileged_layout.values(obs, self.gripper_open)
            return values if self.observation_mode == "state_dict" else self.privileged_layout.flatten(values)
        return self._state(obs)

    def _camera_space(self) -> spaces.Space:
        """`rgbd`: one H×W×4 float32 array, rgb in [0, 1] and depth in metres along the optical axis, capped
        at the camera's far plane (where nothing was hit too). `segmentation`: the `image` mode's rgb and
        depth, plus H×W int32 ids as on camera/segmentation/image_raw: k for object_k (the privileged
        observation's slot k), -1 nothing, -2 the robot, -3 the cell (cell/vision/labels.py)."""
        h, w, far = self.config.camera.height, self.config.camera.width, self.config.camera.far
        if self.observation_mode == "rgbd":
            high = np.broadcast_to(np.float32([1, 1, 1, far]), (h, w, 4))
            return spaces.Box(np.zeros((h, w, 4), np.float32), high.copy(), dtype=np.float32)
        return spaces.Dict({"rgb": spaces.Box(0, 255, (h, w, 3), np.uint8),
                            "depth": spaces.Box(0.0, np.inf, (h, w), np.float32),
                            "segmentation": spaces.Box(SEGMENTATION_LOW, np.iinfo(np.int32).max, (h, w), np.int32)})

    def _camera_observation(self, obs: Observation):
        if self.observation_mode == "rgbd":
            depth = np.minimum(obs.depth, np.float32(self.config.camera.far))
            return np.concatenate([obs.rgb.astype(np.float32) / np.float32(255), depth[..., None]], axis=2)
        return {"rgb": obs.rgb, "depth": obs.depth, "segmentation": obs.segmentation}

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
        """The reference simulator's `reward_range`: the least and most one step can earn (Gymnasium 1 dropped the
        attribute from Env; it stays here for the reference simulator's users). A step grabs at most every object
        the pick bin can hold and touches a bin or not."""
        task, most = self.config.task, self.config.scene.pick_bin.max_objects
        grabs = (min(0.0, task.grab_reward) * most, max(0.0, task.grab_reward) * most)
        collision = (min(0.0, task.collision_reward), max(0.0, task.collision_reward))
        low = -math.inf if self.reward_type == "dense" else task.step_reward + grabs[0] + collision[0]
        return (low, task.step_reward + grabs[1] + collision[1])  # (dense: shaping is unbounded below, ≤ 0)

    def _limits(self):
        """Joint limits from the URDF file (the backend may not exist yet)."""
        limits = urdf_joint_limits()
        return limits.lower, limits.upper, limits.velocity

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:  # within the scene file's bounds (MAX_SEED), on either backend: ConfigError naming it
            checked_value(SimulationConfig, "seed", seed, "seed")
        super().reset(seed=seed)
        keep = bool((options or {}).get("keep_object_type", False))
        if self._backend is None and not keep:  # made for this reset: it starts on this seed's layout
            self._backend = self._make_backend(seed)
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
        # Under gym.make (a spec is set) TimeLimit truncates; made directly, the env does as the reference simulator's did.
        truncated = (self.spec is None and not status["terminated"]
                     and self.steps >= self.config.task.max_episode_steps)
        return (self._observation(self.last), self._reward(self.last), bool(status["terminated"]), truncated,
                self._info(self.last))

    def _reward(self, obs: Observation) -> float:
        """The task's reward ("sparse"), plus the shaping toward the next grab ("dense")."""
        reward = float(obs.status["reward"])
        if self.reward_type == "dense":
            reward += shaping(obs.ee_position, obs.privileged_state())
        return reward

    def _info(self, obs: Observation) -> dict:
        status = obs.status
        return {"grabs": status["grabs"], "grabbed": status["grabbed"], "bin_collision": status["bin_collision"],
                "grab_limit_reached": status["grab_limit_reached"], "objects_left": status["objects_left"],
                "removed_outside": status["removed_outside"], "episode_time": self._episode_time(obs.stamp),
                "is_success": bool(status["grab_limit_reached"])}

    def _episode_time(self, stamp: float) -> float:
        """Sim seconds since the reset, as whole physics steps times the timestep: the world's clock runs
        on across episodes, and a plain difference of its stamps would carry last bits that depend on
        how long the world ran before."""
        timestep = self.config.simulation.timestep
        return round((stamp - self.episode_start) / timestep) * timestep

    def render(self, get_depth_data: bool = False):
        """The last camera frame: rgb (H×W×3 uint8) for "rgb_array" (H×2W×3 with `render_depth=True`: the
        depth image beside it, see `depth_frame`: one frame, as RecordVideo records it); depth (H×W
        float32, metres along the optical axis) for "depth_array"; None before the first reset and for
        "human" (PyBullet's window shows it). `get_depth_data=True` in "rgb_array" mode: (rgb, depth),
        the raw arrays, as the reference simulator's `render(get_depth_data=True)` returns them."""
        if self.last is None or self.render_mode not in ("rgb_array", "depth_array"):
            return None
        if self.render_mode == "depth_array":
            return self.last.depth
        if get_depth_data:
            return self.last.rgb, self.last.depth
        if self.render_depth:
            return np.concatenate([self.last.rgb, self.depth_frame(self.last.depth)], axis=1)
        return self.last.rgb

    def depth_frame(self, depth: np.ndarray) -> np.ndarray:
        """Depth as a grey rgb image for viewing: white at the camera's near plane, black at its far plane
        and where nothing was hit."""
        camera = self.config.camera
        near = np.nan_to_num((camera.far - depth) / (camera.far - camera.near), nan=0.0, posinf=0.0, neginf=0.0)
        grey = np.round(np.clip(near, 0.0, 1.0) * 255).astype(np.uint8)
        return np.repeat(grey[..., None], 3, axis=2)

    def object_views(self):
        """Object poses and meshes, as the world/objects markers carry them (for scripted policies)."""
        return self.last.object_views() if self.last is not None else []

    def close(self) -> None:
        if getattr(self, "_backend", None) is not None:
            self._backend.close()
            self._backend = None


class JointActions(FrankaEnv):
    """The joint envs' `normalized_actions`: False (the reference simulator's), actions in the joints' own units and limits;
    True, every action in [-1, 1], mapped linearly onto those limits (what SAC's tanh policy, PPO's
    Gaussian and Gymnasium's checker expect: it warns about the reference simulator's asymmetric, unnormalised box). The
    same as Gymnasium's `RescaleAction(env, -1, 1)`, made by `gym.make` alone (so it pickles and records)."""

    def __init__(self, config_file=None, normalized_actions: bool = False, **kwargs):
        self.normalized_actions = bool(normalized_actions)
        super().__init__(config_file, **kwargs)
        self._init_kwargs.update(normalized_actions=self.normalized_actions)

    def _joint_space(self) -> spaces.Box:
        """The action space in the joints' own units."""
        return super()._action_space()

    def _action_space(self) -> spaces.Box:
        if self.normalized_actions:
            return spaces.Box(-1.0, 1.0, self._joint_space().shape, dtype=np.float32)
        return self._joint_space()

    def _command_values(self, action: np.ndarray) -> np.ndarray:
        if not self.normalized_actions:
            return super()._command_values(action)
        joints = self._joint_space()
        low, high = joints.low.astype(float), joints.high.astype(float)
        unit = clip(action, -1.0, 1.0).astype(float)
        return clip(low + (unit + 1.0) * (high - low) / 2, low, high)


class FrankaPositionEnv(JointActions):
    """Seed Franka0: 9 absolute joint targets within the joint limits [rad, m] (`normalized_actions=True`:
    -1 and 1 are each joint's lower and upper limit). `gripper_open` is the fingers' command: open while
    their mean target is at least half the configured open width."""

    command = "position"

    def _command_values(self, action: np.ndarray) -> np.ndarray:
        values = super()._command_values(action)
        self.gripper_open = bool(values[7:].mean() >= self.config.arm.gripper_open / 2)
        return values


class FrankaVelocityEnv(JointActions):
    """Seed Franka1: 9 joint velocities within the velocity limits [rad/s, m/s] (`normalized_actions=True`:
    a fraction of each joint's limit, 0 still). `gripper_open` is the fingers' command: opening (mean
    finger velocity > 0) makes it 1, closing 0, still fingers keep it."""

    command = "velocity"

    def _command_values(self, action: np.ndarray) -> np.ndarray:
        values = super()._command_values(action)
        fingers = values[7:].mean()
        if fingers != 0:
            self.gripper_open = bool(fingers > 0)
        return values

    def _joint_space(self) -> spaces.Box:
        v = self.joint_velocity.astype(np.float32)
        return spaces.Box(-v, v, dtype=np.float32)


class FrankaDeltaEnv(FrankaEnv):
    """Seed Franka2: [dx, dy, dz, da, open/close] in [-1, 1], scaled by `dv` [m] and `da` [rad];
    observes the gripper position, an rgb image at downsample_height x _width (the camera drawn at that size)
    and whether the gripper is open."""

    command = "delta"

    def __init__(self, config_file=None, da: float = 0.25, dv: float = 0.016, downsample_height: int = 64,
                 downsample_width: int = 64, **kwargs):
        self.da, self.dv = da, dv
        self.downsample = (downsample_height, downsample_width)
        super().__init__(config_file, **kwargs)
        self._init_kwargs.update(da=da, dv=dv, downsample_height=downsample_height, downsample_width=downsample_width)

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
        if self.observation_mode != "image":
            return super()._observation_space()
        return spaces.Dict({"ee_position": spaces.Box(-big, big, dtype=np.float32),
                            "rgb": spaces.Box(0, 255, (*self.downsample, 3), np.uint8),
                            "gripper_open": spaces.Discrete(2)})

    def _rendered(self, config):
        """Image observations: the camera drawn at the observation's size (downsample_width x _height) rather
        than drawn at its own and shrunk: the same view (`CameraConfig.aspect` keeps the camera's field of
        view, so a 4:3 camera's view fills a square observation as the shrunk image did) and K scaled to that
        size; the renderer draws a tenth of the pixels or fewer. Both backends run this camera, so over ROS
        the lock-step frame itself comes at the observation's size, and `render()` shows it too."""
        if self.observation_mode != "image":
            return config
        height, width = self.downsample
        return with_changes(config, camera={"width": width, "height": height, "aspect": config.camera.view_aspect})

    def _camera_changes(self, changes: dict) -> dict:
        """A new image size asked for (render_width / render_height) becomes the view's shape: the observation
        keeps its size."""
        if self.observation_mode != "image":
            return changes
        changes = dict(changes)
        width = changes.get("width", self.config.camera.width)
        height = changes.get("height", self.config.camera.height)
        if ("width" in changes or "height" in changes) and width > 0 and height > 0:  # else refused as they are
            changes.pop("width", None)
            changes.pop("height", None)
            changes["aspect"] = width / height
        return changes

    def _observation(self, obs: Observation) -> dict:
        if self.observation_mode != "image":
            return super()._observation(obs)
        height, width = self.downsample
        rgb = obs.rgb
        if rgb.shape[:2] != (height, width):  # the backend's camera resized by hand (backend.set_camera)
            import cv2  # here: OpenCV costs a state env ~22 MB it never uses

            rgb = cv2.resize(rgb, (width, height), interpolation=cv2.INTER_AREA)
        return {"ee_position": obs.ee_position.astype(np.float32), "rgb": rgb, "gripper_open": int(self.gripper_open)}
