"""Goal-conditioned envs in Gymnasium-Robotics' convention, a ladder for HER: Reach, Lift, PickPlace (issue 55).

Each observation is a Dict of `observation`, `achieved_goal` and `desired_goal`; `compute_reward(achieved_goal,
desired_goal, info)` takes batches (leading axes), as HER relabelling (SB3's HerReplayBuffer,
Gymnasium-Robotics' wrappers) calls it, and gives exactly the rewards the steps gave; `info["is_success"]` says
whether the achieved goal is within `distance_threshold` of the desired one.

- FrankaReach: the grasp point to a goal point in the workspace above both bins (no object).
- FrankaLift: the chosen object of the pick bin to a goal in the pick bin's free space, below the grab height.
- FrankaPickPlace: the chosen object from the pick bin to a goal inside the drop bin: the cell's own job.

Half the object goals (`floor_goals`) lie at the height the object rests at, as half of Gymnasium-Robotics'
FetchPickAndPlace goals lie on the table: a push reaches them before a grasp is learnt.

What makes them learnable where the reference simulator's rules were not (the issue's measurements: under random actions the
gripper never came near an object, and a bin contact ended episodes whose every reward was <= 0, so SAC learnt to
end them early):

- the episode starts with the grasp point above the pick bin (Lift, PickPlace: just above the pile; Reach: in the
  middle of its goal box), not 49 cm up at the reference simulator's home beside the bins: the arm's `home` is set to a pose high
  enough above the pick bin for the objects to be dropped in beneath it, and after the pile settles the reset
  lowers it to the start (a position command until reached, on either backend alike);
- actions move the grasp point by `dv` per unit (larger than FrankaDelta's 1.6 cm) inside a box around the task
  (the env clips the motion to it, as the arm clips FrankaDelta's to the pick bin), so that a random walk
  covers the box in an episode; yaw stays as it starts (the objects, 1-3 cm, fit the 4 cm opening any way);
- a bin contact does not end the episode (`terminate_on_bin_contact=True` keeps the reference simulator's rule), and nothing
  lifted is taken away (`task.count_grabs: false`): the success is the goal's;
- the observation is small by default (`observation="compact"`: the grasp point, its velocity and, with an
  object, the finger opening and the object's pose, velocities and size) instead of the privileged vector
  (`observation="privileged"`, 250 values with the scene's 10 slots) or images.

The object, the goal and everything else random come from the env's own RNG (`reset(seed=...)` seeds it as
every Gymnasium env's `np_random`), so a seed gives the same episode on both backends.
"""
from __future__ import annotations

import dataclasses
from functools import lru_cache

import numpy as np
from gymnasium import spaces

from ..cell.arm.franka import FrankaArm
from ..cell.arm.actions import FLOOR_CLEARANCE, TOP_DOWN_ROLL
from ..cell.world import World
from ..config import with_changes
from .backends import Observation
from .franka import FrankaEnv

DISTANCE_THRESHOLD = 0.02  # m: Lift's and PickPlace's success radius (panda-gym's 5 cm, halved: the objects are
#                            1-3 cm, not panda-gym's 4 cm cube)
REACH_THRESHOLD = 0.05  # m: Reach's, panda-gym's PandaReach-v3's (the like-for-like comparison of bench.her)
FLOOR_GOALS = 0.5  # Lift's and PickPlace's share of goals at the height the chosen object rests at, where a push
#                    can bring it (Gymnasium-Robotics' FetchPickAndPlace puts half its goals on the table)
GRASP_LIFT = 0.03  # m a grasped start raises the object above where it lay
START_OFFSET = 0.02  # m: a start over the object begins up to this far from above its centre, in x and in y
GOAL_MARGIN = 0.01  # m kept from the bin's walls, floor and the grab height when drawing a goal
SPAWN_CLEARANCE = 0.13  # m above the pick bin's underside: the arm's home, clear of the objects as they are
#                         dropped in (the spawn grid's third layer is 9.25 cm up, its objects 1.5 cm around it)
START_HEIGHT = 0.07  # m above the pick bin's underside: the grasp point at the start of Lift and PickPlace, 3 cm
#                      above the rim, the fingertips clear of the settled pile
START_YAW = np.pi / 2  # rad from the scene file's home, where the fingers close along the world's y axis: they
#                       close along the pick bin's x axis, so that both fit beside an object by a wall (the objects
#                       are dropped in rows 1.75 cm from the walls along y, at random places along x)
REACH_HEIGHT = (0.02, 0.22)  # m above the bins' rims: Reach's box, goals and motion
CARRY_HEIGHT = 0.10  # m above the rims: how high Lift and PickPlace may raise the grasp point
WORKSPACE_MARGIN = 0.015  # m kept from the walls (arm.workspace_margin's default: the fingers are 2.3 cm thick)
COMPACT_ROBOT = (("ee_position", 3), ("ee_velocity", 3))
COMPACT_OBJECT = (("finger_width", 1), ("object_position", 3), ("object_orientation", 4),
                  ("object_linear_velocity", 3), ("object_angular_velocity", 3), ("object_size", 3))
GOAL_OBSERVATIONS = ("compact", "privileged")


class FrankaGoalEnv(FrankaEnv):
    """The ladder's common part: the goal Dict, `compute_reward`, the start pose, the clipped Cartesian motion.

    Subclasses say whether an object is involved (`objects`), whether the action has a gripper dimension
    (`gripper`), the box the grasp point moves in, where the episode starts and how a goal is drawn."""

    command = "delta"
    objects = True  # the goal is an object's position (Lift, PickPlace); else the grasp point's (Reach)
    gripper = True  # the action's fourth value opens (> 0) or closes (< 0) the gripper
    default_dv = 0.04  # m per unit of action and step (0.1 s): a random walk covers the pick bin in an episode
    default_threshold = DISTANCE_THRESHOLD

    def __init__(self, config_file=None, observation: str = "compact", dv: float | None = None,
                 distance_threshold: float | None = None, terminate_on_bin_contact: bool = False, **kwargs):
        """`observation`: "compact" (the default, see the module) or "privileged" (the whole privileged vector,
        envs/privileged_observation.py). `dv`: metres the grasp point moves per unit of action and step. `distance_threshold`:
        the success radius [m]. `terminate_on_bin_contact`: an arm-bin contact ends the episode (the reference simulator's rule;
        off by default). `reward_type` (FrankaEnv's): "sparse", -1 until within the threshold, then 0; "dense",
        minus the distance [m]. The other arguments are FrankaEnv's (backend, render_mode, camera_size, ...)."""
        if observation not in GOAL_OBSERVATIONS:
            raise ValueError(f"{type(self).__name__}'s observation must be one of {GOAL_OBSERVATIONS}, "
                             f"got {observation!r}")
        self.goal_observation = observation
        self.dv = float(self.default_dv if dv is None else dv)
        self.distance_threshold = float(self.default_threshold if distance_threshold is None else distance_threshold)
        if not (0 < self.dv <= 0.1 and 0 < self.distance_threshold < 1):
            raise ValueError(f"dv must be in (0, 0.1] m and distance_threshold in (0, 1) m, got {dv!r}, "
                             f"{distance_threshold!r}")
        self.terminate_on_bin_contact = bool(terminate_on_bin_contact)
        self.chosen = -1  # the chosen object's slot (object_k: k)
        self.goal = np.zeros(3)
        self.achieved = np.zeros(3)
        self._object = np.zeros(16)  # the chosen object's compact fields, as last seen
        self._previous: tuple[np.ndarray, float] | None = None  # the grasp point and the stamp one step before
        self._ee_velocity = np.zeros(3)
        self._seen: Observation | None = None  # the observation _see took in last
        state = "privileged" if self.objects or observation == "privileged" else "state"
        super().__init__(config_file, observation=state, **kwargs)
        self._init_kwargs.update(observation=observation, dv=dv, distance_threshold=distance_threshold,
                                 terminate_on_bin_contact=self.terminate_on_bin_contact)

    # --- the scene as this env runs it ---------------------------------------------------------
    def _scene(self, config):
        """The arm's home above the pick bin, clear of the objects as they are dropped in; delta motions not
        clipped by the arm (this env clips them to its own box); no grab rule; a bin contact ends the episode
        only if asked."""
        start_position = self._start_position(config)
        home_position = self._home_position(config, start_position)
        yaw = np.radians(config.scene.pick_bin.orientation_deg[2]) + START_YAW
        (home, start), tip_offset = _poses(config.arm, config.simulation, (home_position, start_position), yaw)
        self.start_joints = None if home_position == start_position else np.array(start)
        self.tip_offset = tip_offset
        config = with_changes(config, arm={"home": home, "clip_delta_to_workspace": False},
                              task={"count_grabs": False, "terminate_on_bin_collision": self.terminate_on_bin_contact})
        self.box = self._box(config)
        return config

    def _start_position(self, config) -> tuple[float, float, float]:
        """Where the grasp point is when an episode starts (world, m)."""
        return _pick_bin_point(config, START_HEIGHT)

    def _home_position(self, config, start: tuple[float, float, float]) -> tuple[float, float, float]:
        """Where the grasp point is while the objects are dropped into the pick bin and settle (the arm's
        `home`): above the pick bin, clear of them; the reset then lowers it to `start`."""
        return _pick_bin_point(config, SPAWN_CLEARANCE)

    def _box(self, config) -> tuple[np.ndarray, np.ndarray]:
        """The box (world, axis-aligned) the grasp point moves in: over both bins' insides, from just above the
        floors (the fingertips FLOOR_CLEARANCE above them, as the arm's own workspace) to CARRY_HEIGHT above
        the rims."""
        low, high = _inside(config, ("pick_bin", "drop_bin"))
        low[:2] += WORKSPACE_MARGIN
        high[:2] -= WORKSPACE_MARGIN
        low[2] += self.tip_offset + FLOOR_CLEARANCE
        high[2] = rim_height(config) + CARRY_HEIGHT
        return low, high

    # --- spaces ----------------------------------------------------------------------------------
    def _action_space(self) -> spaces.Box:
        return spaces.Box(-1.0, 1.0, (4 if self.gripper else 3,), dtype=np.float32)

    def _observation_space(self) -> spaces.Dict:
        point = spaces.Box(-np.inf, np.inf, (3,), np.float32)
        if self.goal_observation == "privileged":
            inner = self.privileged_layout.flat_space()
        else:
            inner = spaces.Box(-np.inf, np.inf, (self.compact_size(),), np.float32)
        return spaces.Dict({"observation": inner, "achieved_goal": point, "desired_goal": point})

    def compact_size(self) -> int:
        fields = COMPACT_ROBOT + (COMPACT_OBJECT if self.objects else ())
        return sum(width for _, width in fields)

    def _reward_range(self) -> tuple[float, float]:
        return (-np.inf, 0.0) if self.reward_type == "dense" else (-1.0, 0.0)

    def needs_privileged(self) -> bool:
        return self.objects or self.goal_observation == "privileged"

    # --- acting ----------------------------------------------------------------------------------
    def _command_values(self, action: np.ndarray) -> np.ndarray:
        """FrankaDelta's command [dx, dy, dz, dyaw, gripper]: the motion `dv` per unit, clipped so that the grasp
        point stays in the box (only the commanded motion: from outside the box, e.g. pushed out, it may move
        back or stay, never further out), no turn, the gripper's command if the action has one."""
        a = np.clip(np.asarray(action, float), -1.0, 1.0)
        here = np.asarray(self.last.ee_position, float)
        low, high = np.minimum(self.box[0], here), np.maximum(self.box[1], here)
        motion = np.clip(here + a[:3] * self.dv, low, high) - here
        gripper = (1.0 if a[3] > 0 else -1.0 if a[3] < 0 else 0.0) if self.gripper else 0.0
        if gripper:
            self.gripper_open = gripper > 0
        return np.array([*motion.tolist(), 0.0, gripper])

    # --- episodes --------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed, options=options)  # the world, then the RNG
        if self.start_joints is not None:  # to the start pose, now that the pile has settled below the home pose
            self.last = self.backend.step("position", self.start_joints, self.config.arm.max_steps, until_reached=True)
            self.episode_start = self.last.stamp
        self._previous, self._ee_velocity = None, np.zeros(3)
        self.chosen, self._object, self.achieved = -1, np.zeros(16), np.zeros(3)
        if self.objects:
            state = self.last.privileged_state()
            present = sorted(o[0] for o in state["objects"] if o[0] < self.privileged_layout.max_objects)
            self.chosen = int(self.np_random.choice(present)) if present else -1
        self._see(self.last)
        self.goal = np.asarray(self._sample_goal(), float)
        return self._observation(self.last), self._info(self.last)

    def _sample_goal(self) -> np.ndarray:
        raise NotImplementedError

    def step(self, action):
        observation, _, terminated, truncated, info = super().step(action)
        reward = float(self.compute_reward(observation["achieved_goal"], observation["desired_goal"], info))
        return observation, reward, terminated, truncated, info

    def _observation(self, obs: Observation) -> dict:
        if obs is not self._seen:
            self._see(obs)
        if self.goal_observation == "privileged":
            inner = self.privileged_layout.flatten(self.privileged_layout.values(obs, self.gripper_open))
        else:
            inner = self._compact(obs)
        return {"observation": inner, "achieved_goal": self.achieved.astype(np.float32),
                "desired_goal": self.goal.astype(np.float32)}

    def _see(self, obs: Observation) -> None:
        """Takes in what an observation says of the grasp point's velocity and of the chosen object (which keeps
        its last seen pose, at rest, once it is gone: dropped outside the bins)."""
        self._seen = obs
        ee = np.asarray(obs.ee_position, float)
        if self._previous is not None:
            timestep = self.config.simulation.timestep
            elapsed = round((obs.stamp - self._previous[1]) / timestep) * timestep  # whole physics steps
            self._ee_velocity = (ee - self._previous[0]) / elapsed if elapsed > 0 else np.zeros(3)
        self._previous = (ee, obs.stamp)
        if not self.objects:
            self.achieved = ee
            return
        for index, position, orientation, linear, angular, _kind, size in obs.privileged_state()["objects"]:
            if index == self.chosen:
                self._object = np.array([*position, *orientation, *linear, *angular, *size], float)
                self.achieved = np.asarray(position, float)
                return
        self._object[7:13] = 0.0  # gone (or none chosen): last seen, at rest

    def _compact(self, obs: Observation) -> np.ndarray:
        robot = [np.asarray(obs.ee_position, float), self._ee_velocity]
        if self.objects:
            robot += [[float(obs.joint_positions[7] + obs.joint_positions[8])], self._object]
        return np.concatenate(robot).astype(np.float32)

    def _info(self, obs: Observation) -> dict:
        info = super()._info(obs)
        distance = float(np.linalg.norm(self.achieved.astype(np.float32) - self.goal.astype(np.float32)))
        info["is_success"] = bool(distance < self.distance_threshold)
        if self.objects:
            info["chosen_object"] = f"object_{self.chosen}" if self.chosen >= 0 else None
        return info

    def _reward(self, obs: Observation) -> float:
        return 0.0  # step() replaces it with compute_reward's (the task's reward is not this env's)

    def compute_reward(self, achieved_goal, desired_goal, info) -> np.ndarray | float:
        """Vectorised over leading axes (HER relabels batches); the same numbers `step` returns."""
        distance = np.linalg.norm(np.asarray(achieved_goal, np.float32) - np.asarray(desired_goal, np.float32),
                                  axis=-1)
        if self.reward_type == "dense":
            return -distance.astype(np.float32)
        return -(distance >= self.distance_threshold).astype(np.float32)


class FrankaReachEnv(FrankaGoalEnv):
    """The grasp point to a goal drawn uniformly in the box above both bins (from REACH_HEIGHT[0] to
    REACH_HEIGHT[1] above the rims, inside the walls in x and y), where it also moves; it starts in the box's
    middle. Actions [dx, dy, dz] (the gripper stays open); success within 5 cm, as panda-gym's PandaReach-v3,
    whose 5 cm per unit of action this takes too."""

    objects = False
    gripper = False
    default_dv = 0.05
    default_threshold = REACH_THRESHOLD

    def _start_position(self, config) -> tuple[float, float, float]:
        low, high = self._reach_box(config)
        return tuple(((low + high) / 2).tolist())

    def _home_position(self, config, start: tuple[float, float, float]) -> tuple[float, float, float]:
        return start  # above the objects' drop already: no lowering at the reset

    def _reach_box(self, config) -> tuple[np.ndarray, np.ndarray]:
        low, high = _inside(config, ("pick_bin", "drop_bin"))
        low[:2] += WORKSPACE_MARGIN
        high[:2] -= WORKSPACE_MARGIN
        rim = rim_height(config)
        low[2], high[2] = rim + REACH_HEIGHT[0], rim + REACH_HEIGHT[1]
        return low, high

    def _box(self, config) -> tuple[np.ndarray, np.ndarray]:
        return self._reach_box(config)

    def _sample_goal(self) -> np.ndarray:
        low, high = self.box
        return self.np_random.uniform(low, high)


class FrankaLiftEnv(FrankaGoalEnv):
    """Move the chosen object to the goal, drawn uniformly in the pick bin's free space (GOAL_MARGIN from its
    walls and floor) below the grab height; in a `floor_goals` share of episodes (FLOOR_GOALS) at the height the
    object rests at instead. The grasp point moves inside the pick bin, up to the grab height. `one_object=True`:
    one object in the bin (`scene.pick_bin.min_objects` and `max_objects` 1), dropped anywhere in it
    (`scene.spawn: anywhere`, not by a wall, where no push moves it away), the first step of a curriculum.
    Actions [dx, dy, dz, gripper]."""

    def __init__(self, config_file=None, one_object: bool = False, floor_goals: float = FLOOR_GOALS,
                 grasped_starts: float = 0.0, start_over_object: bool = False, object_set: str | None = None,
                 **kwargs):
        """`floor_goals`: the share of goals drawn at the height the chosen object rests at (with one object, on
        the bin's floor), where a push reaches them before a grasp is learnt: panda-gym's Pick-and-Place draws 30 %
        of its goals on the table, Gymnasium-Robotics' FetchPickAndPlace 50 %. `grasped_starts`: the share of
        episodes that start with the chosen object taken into the gripper (`_take_the_object`), a curriculum for
        training (the HER paper's pick-and-place started half its training episodes with the box grasped);
        evaluate with 0, the task's own start. `start_over_object`: the episode starts with the grasp point at its
        start height over the chosen object (up to START_OFFSET off in x and y, drawn by the env's RNG), not over
        the bin's centre, as robosuite's Lift starts its gripper over the cube. `object_set`: the scene's
        `object_set` for this env ("train", "test" or "cube": pybullet_data's small cube at the scene's sizes, a box
        as panda-gym's and robosuite's objects are); by default the scene file's."""
        self.object_set = object_set
        self.one_object, self.start_over_object = bool(one_object), bool(start_over_object)
        self.floor_goals, self.grasped_starts = float(floor_goals), float(grasped_starts)
        for name, share in (("floor_goals", floor_goals), ("grasped_starts", grasped_starts)):
            if not 0.0 <= float(share) <= 1.0:
                raise ValueError(f"{name} must be a share in [0, 1], got {share!r}")
        super().__init__(config_file, **kwargs)
        self._init_kwargs.update(one_object=self.one_object, floor_goals=self.floor_goals,
                                 grasped_starts=self.grasped_starts, start_over_object=self.start_over_object,
                                 object_set=self.object_set)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """The goal env's reset; then, with `start_over_object`, the grasp point moved over the chosen object (two
        draws of the env's RNG after the goal's); then, in a `grasped_starts` share of episodes (a draw after those,
        whatever the share), the object taken into the gripper; the episode starts from where these left it."""
        observation, info = super().reset(seed=seed, options=options)
        moved = False
        if self.start_over_object and self.chosen >= 0:
            x, y, _ = self.achieved.tolist()
            dx, dy = self.np_random.uniform(-START_OFFSET, START_OFFSET, 2).tolist()
            low, high = self.box
            over = np.clip([x + dx, y + dy, float(self.last.ee_position[2])], low, high)
            self._move(((tuple(over.tolist()), 1.0, 3),))
            moved = True
        if self.np_random.random() < self.grasped_starts and self.chosen >= 0:
            self._take_the_object()
            moved = True
        if moved:
            self.episode_start = self.last.stamp
            self._previous, self._ee_velocity = None, np.zeros(3)  # the episode's motion starts here
            self._see(self.last)
            observation, info = self._observation(self.last), self._info(self.last)
        return observation, info

    def _take_the_object(self) -> None:
        """Scripted, with the env's own delta commands (so on either backend alike): over the chosen object, down
        until the grasp point is at its centre (or as low as the box allows), the gripper closed, then GRASP_LIFT
        up. A grasp can miss (an object too wide for the 4 cm opening, or tipped over): the episode starts from
        wherever it left things."""
        x, y, z = self.achieved.tolist()
        low = max(z, float(self.box[0][2]))
        self._move((((x, y, float(self.last.ee_position[2])), 1.0, 3), ((x, y, low), 1.0, 3), ((x, y, low), -1.0, 3),
                    ((x, y, low + GRASP_LIFT), -1.0, 2)))
        self.gripper_open = False

    def _move(self, plan) -> None:
        """(target, gripper, steps) in turn: `steps` delta commands toward each target (world, m), each at most dv
        per axis as the agent's, the gripper opening (1) or closing (-1)."""
        for target, gripper, count in plan:
            for _ in range(count):
                motion = np.clip(np.asarray(target) - np.asarray(self.last.ee_position, float), -self.dv, self.dv)
                self.last = self.backend.step("delta", np.array([*motion.tolist(), 0.0, gripper]),
                                              self.config.task.steps_per_action)

    def _scene(self, config):
        scene = {} if self.object_set is None else {"object_set": self.object_set}
        if self.one_object:
            pick_bin = {**dataclasses.asdict(config.scene.pick_bin), "min_objects": 1, "max_objects": 1}
            scene.update(pick_bin=pick_bin, spawn="anywhere")
        return super()._scene(with_changes(config, scene=scene) if scene else config)

    def _box(self, config) -> tuple[np.ndarray, np.ndarray]:
        """Inside the pick bin, up to the grab height (the goals lie below it, less GOAL_MARGIN)."""
        low, high = super()._box(config)
        pick_low, pick_high = _inside(config, ("pick_bin",))
        low[:2], high[:2] = pick_low[:2] + WORKSPACE_MARGIN, pick_high[:2] - WORKSPACE_MARGIN
        high[2] = lift_height_of(config)
        return low, high

    def _sample_goal(self) -> np.ndarray:
        """Uniform in the pick bin's free space (inside its walls, above its floor, below the grab height),
        GOAL_MARGIN from every side of it."""
        low, high = _inside(self.config, ("pick_bin",))
        low += GOAL_MARGIN
        high[:2] -= GOAL_MARGIN
        high[2] = lift_height_of(self.config) - GOAL_MARGIN
        return self._on_the_floor(self.np_random.uniform(low, high), low, high, "pick_bin")

    def _on_the_floor(self, goal: np.ndarray, low: np.ndarray, high: np.ndarray, bin_name: str) -> np.ndarray:
        """`goal` (drawn in the box low..high inside `bin_name`), moved, for a `floor_goals` share of episodes, to
        the height above that bin's floor the chosen object rests at above the pick bin's, its centre kept half
        the object's largest size from the walls. One draw of the env's RNG whatever the share."""
        if self.np_random.random() >= self.floor_goals or self.chosen < 0:
            return goal
        half = float(np.max(self._object[13:16])) / 2  # the object's size: the last three compact fields
        goal[:2] = np.clip(goal[:2], low[:2] + half, np.maximum(high[:2] - half, low[:2] + half))
        resting = self.achieved[2] - _inside(self.config, ("pick_bin",))[0][2]
        goal[2] = _inside(self.config, (bin_name,))[0][2] + resting
        return goal


class FrankaPickPlaceEnv(FrankaLiftEnv):
    """Carry the chosen object from the pick bin into the drop bin: the goal is drawn uniformly inside the drop
    bin (GOAL_MARGIN from its walls and floor, up to its rim), in a `floor_goals` share of episodes at the height
    above the drop bin's floor the object rests at above the pick bin's (set down, not dropped). The grasp point
    moves over both bins, up to CARRY_HEIGHT above the rims; nothing lifted is taken away, and an object let go
    outside the bins' volume (over the gap, or above twice a bin's height) is removed as the task removes any,
    its `achieved_goal` staying where it was last seen. Actions [dx, dy, dz, gripper]; `one_object` and
    `grasped_starts` as FrankaLift's."""

    _box = FrankaGoalEnv._box

    def _sample_goal(self) -> np.ndarray:
        low, high = _inside(self.config, ("drop_bin",))
        low += GOAL_MARGIN
        high[:2] -= GOAL_MARGIN
        return self._on_the_floor(self.np_random.uniform(low, high), low, high, "drop_bin")


# --- the cell's geometry, from the scene file (the backend may not exist yet) ----------------------
def _bins(config, names):
    return [getattr(config.scene, name) for name in names]


def _corners(bin_config, lower, upper) -> np.ndarray:
    """The world positions of the corners of the box lower..upper in the bin's frame."""
    from scipy.spatial.transform import Rotation  # here: every env id's import paid for it (0.12 s)

    rotation = Rotation.from_euler("xyz", bin_config.orientation_deg, degrees=True)
    local = np.array([[x, y, z] for x in (lower[0], upper[0]) for y in (lower[1], upper[1]) for z in (lower[2], upper[2])])
    return rotation.apply(local) + np.asarray(bin_config.position, float)


def _inside(config, names) -> tuple[np.ndarray, np.ndarray]:
    """The axis-aligned box (world) around the free space inside the named bins' walls, floor to rim (for bins
    turned about z, the box around it)."""
    corners = []
    for b in _bins(config, names):
        length, width, height = b.size
        t = b.wall_thickness
        corners.append(_corners(b, (-length / 2 + t, -width / 2 + t, t), (length / 2 - t, width / 2 - t, height)))
    corners = np.concatenate(corners)
    return corners.min(axis=0), corners.max(axis=0)


def rim_height(config) -> float:
    """The highest bin's rim (world z)."""
    return float(max(_corners(b, (0, 0, b.size[2]), (0, 0, b.size[2]))[:, 2].max()
                     for b in _bins(config, ("pick_bin", "drop_bin"))))


def lift_height_of(config) -> float:
    """The height a grab needs (picking.task.lift_height): a bin's height above the highest rim."""
    return rim_height(config) + max(b.size[2] for b in _bins(config, ("pick_bin", "drop_bin")))


def _pick_bin_point(config, height: float) -> tuple[float, float, float]:
    """The point `height` above the pick bin's underside, over its centre (world)."""
    b = config.scene.pick_bin
    return tuple(_corners(b, (0, 0, height), (0, 0, height))[0].tolist())


@lru_cache(maxsize=32)
def _poses(arm, simulation, positions: tuple, yaw: float) -> tuple[tuple[tuple[float, ...], ...], float]:
    """Joint positions (9, fingers open) putting the grasp point at each of `positions` (world), pointing down,
    turned by `yaw` from the scene file's home, each solved from the one before; and the arm's tip offset (the
    grasp point's height above the fingertips). Solved on an arm of its own in a world of its own (cached:
    the same arm and points give the same answer)."""
    world = World(simulation, gui=False)
    panda = None
    try:
        panda = FrankaArm(world, arm, drawn=False)
        orientation = world.client.getQuaternionFromEuler([TOP_DOWN_ROLL, 0.0, panda.ee_yaw() + yaw])
        start, answers = panda.home, []
        for position in positions:
            q, error = panda.solver.solve(start, position, orientation, rounds=100)
            if error > 1e-3:
                raise ValueError(f"the arm cannot put its grasp point at {np.round(position, 3).tolist()} m "
                                 f"({1000 * error:.0f} mm short): a goal env needs it above the pick bin")
            q[7:] = arm.gripper_open
            answers.append(tuple(q.tolist()))
            start = q
        return tuple(answers), float(panda.tip_offset)
    finally:
        if panda is not None:
            panda.solver.close()
        world.close()


def tip_offset(config) -> float:
    """How far the scene's arm's grasp point lies above its fingertips, pointing down [m] (FrankaArm.tip_offset,
    measured once on an arm of its own): what keeps a grasp target clear of a floor."""
    return _poses(config.arm, config.simulation, (), 0.0)[1]
