"""The scripted picker driving `FrankaDelta-v0`: the policy's waypoints turned into env actions.

It reads the gripper position from the env's last observation (any observation mode), the object poses and meshes from
`env.object_views()` (what `world/objects` carries), and tracks the gripper's yaw and open state
from its own actions. After a lift that did not count as a grab it opens and tries another object.

ScriptedPlacer does the cell's whole job (`make demo`): each object it holds after the lift is carried over the
rims and let go just above a free spot of the drop bin; it needs a scene whose task takes nothing away for
being lifted (`task.count_grabs: false`) and whose delta motions are not clipped to the pick bin
(`arm.clip_delta_to_workspace: false`): `placing_scene`.
"""
from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from ..cell.arm.actions import FLOOR_CLEARANCE
from .franka import episode_limit
from .goal import rim_height, tip_offset
from ..picking.policy import FINGER_REACH, WALL_CLEARANCE, BinInterior, Grasp, choose_grasp, yaw_step

REACHED = 0.002  # m
YAW_REACHED = 0.01  # rad
CLOSE_STEPS = 4  # env steps to let the fingers close
PHASE_STEPS = 40  # env steps before a phase gives up (blocked by something)
STALLED = 0.0005  # m: a step that moves the gripper less than this while it should move means it is
                  # as close as it gets (the target is below the workspace floor, or something is in the way)


class ScriptedPicker:
    def __init__(self, env):
        self.env = env.unwrapped
        self.interior = BinInterior.from_config(self.env.config.scene.pick_bin)
        self.reset()

    def reset(self) -> None:
        self.tried: set[str] = set()
        self.grasp: Grasp | None = None
        self.phase = 0
        self.phase_steps = 0
        self.attempts = 0
        self.previous: np.ndarray | None = None

    @property
    def phase_name(self) -> str:
        if self.grasp is None:
            return "choose"
        waypoints = self.waypoints()
        return waypoints[self.phase][0] if self.phase < len(waypoints) else "done"

    def waypoints(self) -> list:
        """(phase, target or None, gripper) of the grasp under way (picking.policy.Grasp.waypoints)."""
        return self.grasp.waypoints()

    def act(self, observation: dict) -> np.ndarray:
        if self.grasp is None:
            self.grasp = choose_grasp(self.env.object_views(), exclude=self.tried, interior=self.interior)
            if self.grasp is None:  # nothing left to try: stay put
                return np.zeros(5, np.float32)
            self.tried.add(self.grasp.name)
            self.attempts += 1
            self.phase, self.phase_steps = 0, 0
        waypoints = self.waypoints()
        if self.phase >= len(waypoints):  # lifted without a grab (or placed): open, start over with another object
            self.grasp = None
            return np.array([0, 0, 1, 0, 1], np.float32)
        _, target, gripper = waypoints[self.phase]
        self.phase_steps += 1
        if target is None:
            if self.phase_steps >= CLOSE_STEPS:
                self._next_phase()
            return np.array([0, 0, 0, 0, gripper], np.float32)
        # the gripper's position as the `state` observation has it (float32), whatever this env observes
        position = np.asarray(self.env.last.ee_position, np.float32).astype(float)
        error = target - position
        turn = yaw_step(self._yaw(), self.grasp.yaw)
        stalled = (self.previous is not None and self.phase_steps > 2
                   and np.linalg.norm(position - self.previous) < STALLED and abs(turn) < YAW_REACHED)
        self.previous = position
        if (np.linalg.norm(error) < REACHED and abs(turn) < YAW_REACHED) or stalled or self.phase_steps > PHASE_STEPS:
            self._next_phase()
        env = self.env
        action = np.concatenate([np.clip(error / env.dv, -1, 1), [np.clip(turn / env.da, -1, 1), gripper]])
        return action.astype(np.float32)

    def _next_phase(self) -> None:
        self.phase += 1
        self.phase_steps = 0

    def _yaw(self) -> float:
        return float(Rotation.from_quat(self.env.last.ee_orientation).as_euler("xyz")[2])


class ScriptedPlacer(ScriptedPicker):
    """The picker, then the cell's job: the object carried at CARRY_HEIGHT above the rims to above a spot of the
    drop bin (one of its quarters in turn), lowered until its bottom is PLACE_CLEARANCE above the floor,
    let go, and the gripper raised again. If the object is not held after the lift (it is not above the rims),
    the gripper opens and the next object is tried, as the picker does."""

    CARRY_HEIGHT = 0.06  # m above the highest rim: the grasp point while carrying (an object hangs at most 1.5 cm)
    PLACE_CLEARANCE = 0.01  # m between the held object's lowest point and the drop bin's floor when let go

    def __init__(self, env):
        super().__init__(env)
        config = self.env.config.scene
        self.drop = BinInterior.from_config(config.drop_bin)
        self.drop_floor = config.drop_bin.position[2] + config.drop_bin.wall_thickness
        self.pick_floor = config.pick_bin.position[2] + config.pick_bin.wall_thickness
        self.rim = rim_height(self.env.config)
        self.placed: list[str] = []  # the objects let go above the drop bin, in order
        self._plan = None  # (grasp, its waypoints)

    def spot(self) -> np.ndarray:
        """The next spot of the drop bin (x, y, world): its quarters in turn, as far out as the opening fingers
        (FINGER_REACH from the grasp point, whichever way they close) stay WALL_CLEARANCE off the walls."""
        corners = [(-1, -1), (1, 1), (-1, 1), (1, -1)]
        u, v = corners[len(self.placed) % len(corners)]
        local = np.array([u, v]) * np.maximum(self.drop.half_extents - FINGER_REACH - WALL_CLEARANCE, 0.0)
        c, s = np.cos(self.drop.yaw), np.sin(self.drop.yaw)
        return self.drop.centre + np.array([[c, -s], [s, c]]) @ local

    def waypoints(self) -> list:
        """The picker's approach, descent and closing; then lift, carry, lower, open, rise: planned once per grasp
        (where the object reaches below the grasp point as it lies, which spot is next)."""
        grasp = self.grasp
        if self._plan is None or self._plan[0] is not grasp:
            view = next((v for v in self.env.object_views() if v.name == grasp.name), None)
            below = grasp.position[2] - (grasp.position[2] if view is None else float(view.world_vertices()[:, 2].min()))
            carry = self.rim + self.CARRY_HEIGHT
            spot = self.spot()
            above = np.array([*spot, carry])
            down = np.array([*spot, self.drop_floor + self.PLACE_CLEARANCE + below])
            # the arm does not clip these motions to the pick bin: the fingertips kept off its floor as it would
            lowest = self.pick_floor + tip_offset(self.env.config) + FLOOR_CLEARANCE
            picking = [(name, None if target is None else np.array([*target[:2], max(target[2], lowest)]), gripper)
                       for name, target, gripper in grasp.waypoints() if name != "lift"]
            self._plan = (grasp, picking + [("lift", np.array([*grasp.position[:2], carry]), -1.0),
                                            ("carry", above, -1.0), ("lower", down, -1.0), ("open", None, 1.0),
                                            ("rise", above, 1.0)])
        return self._plan[1]

    def _next_phase(self) -> None:
        if self.grasp is not None and self.phase_name == "lift" and not self._held():
            self.phase = len(self.waypoints())  # not held: open and try the next object
            self.phase_steps = 0
            return
        if self.grasp is not None and self.phase_name == "open":
            self.placed.append(self.grasp.name)
        super()._next_phase()

    def _held(self) -> bool:
        view = next((v for v in self.env.object_views() if v.name == self.grasp.name), None)
        return view is not None and float(view.world_vertices()[:, 2].min()) > self.rim


def placing_scene(config):
    """`config` as ScriptedPlacer needs it: nothing taken away for being lifted, delta motions not clipped to the
    pick bin (the placer's own targets keep it inside the bins), a bin contact still reported."""
    from ..config import with_changes

    return with_changes(config, task={"count_grabs": False}, arm={"clip_delta_to_workspace": False})


def run_episode(env, seed: int, max_steps: int | None = None, on_step=None) -> dict:
    """One scripted episode; returns the last info with `steps` and `attempts` added."""
    picker = ScriptedPicker(env)
    observation, info = env.reset(seed=seed)
    limit = max_steps or episode_limit(env) or env.unwrapped.config.task.max_episode_steps
    for step in range(1, limit + 1):
        observation, reward, terminated, truncated, info = env.step(picker.act(observation))
        if on_step is not None:
            on_step(step, picker, info)
        if terminated or truncated:
            break
    return {**info, "steps": step, "attempts": picker.attempts}
