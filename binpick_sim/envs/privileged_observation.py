"""The privileged observation's fixed layout and the dense reward's shaping (doc/gym.md "Learning").

`picking.privileged_state` gives the objects in play as a list; a learner needs one fixed shape. Object
object_k fills slot k (k < the pick bin's `max_objects`, the most an episode starts with; the slots are
the objects' name order object_0, object_1, ...); a slot whose object is not in play (fewer objects this
episode, or grabbed or dropped out) is all zeros, its `present` flag 0. Bins are in name order
(drop_bin, pick_bin).
"""
from __future__ import annotations

import numpy as np
from gymnasium import spaces

from ..picking.privileged_state import KINDS

# (name, width) in the flat vector's order; the robot's first, then each object slot's, then each bin's
ROBOT_FIELDS = (("joint_positions", 9), ("joint_velocities", 9), ("ee_position", 3), ("ee_orientation", 4),
                ("gripper_open", 1))
OBJECT_FIELDS = (("position", 3), ("orientation", 4), ("linear_velocity", 3), ("angular_velocity", 3),
                 ("size", 3), ("type", len(KINDS)), ("present", 1))
BIN_FIELDS = (("position", 3), ("orientation", 4))
BIN_NAMES = ("drop_bin", "pick_bin")
UNIT = ("gripper_open", "object_type", "object_present")  # the fields within [0, 1]


class PrivilegedLayout:
    """Builds `state_dict` (named arrays) and `privileged` (their flat float32 concatenation) observations."""

    def __init__(self, max_objects: int):
        self.max_objects = max_objects
        self.shapes = {name: (width,) for name, width in ROBOT_FIELDS}
        self.shapes.update({f"object_{name}": (max_objects, width) if name != "present" else (max_objects,)
                            for name, width in OBJECT_FIELDS})
        self.shapes.update({f"bin_{name}": (len(BIN_NAMES), width) for name, width in BIN_FIELDS})
        self.size = sum(int(np.prod(shape)) for shape in self.shapes.values())

    def dict_space(self) -> spaces.Dict:
        return spaces.Dict({name: spaces.Box(0.0 if name in UNIT else -np.inf, 1.0 if name in UNIT else np.inf,
                                             shape, np.float32) for name, shape in self.shapes.items()})

    def flat_space(self) -> spaces.Box:
        boxes = self.dict_space().spaces
        return spaces.Box(self.flatten({n: b.low for n, b in boxes.items()}),
                          self.flatten({n: b.high for n, b in boxes.items()}), dtype=np.float32)

    def values(self, obs, gripper_open: bool) -> dict[str, np.ndarray]:
        """The named arrays of an Observation (backends.Observation) and the gripper's command."""
        state = obs.privileged_state()
        out = {"joint_positions": obs.joint_positions, "joint_velocities": obs.joint_velocities,
               "ee_position": obs.ee_position, "ee_orientation": obs.ee_orientation,
               "gripper_open": [float(gripper_open)]}
        out.update({name: np.zeros(shape) for name, shape in self.shapes.items() if name.startswith("object_")})
        for index, position, orientation, linear, angular, kind, size in state["objects"]:
            if not 0 <= index < self.max_objects:
                continue
            out["object_position"][index] = position
            out["object_orientation"][index] = orientation
            out["object_linear_velocity"][index] = linear
            out["object_angular_velocity"][index] = angular
            out["object_size"][index] = size
            out["object_type"][index][KINDS.index(kind)] = 1.0
            out["object_present"][index] = 1.0
        bins = {name: (position, orientation) for name, position, orientation in state["bins"]}
        out["bin_position"] = [bins[name][0] for name in BIN_NAMES]
        out["bin_orientation"] = [bins[name][1] for name in BIN_NAMES]
        return {name: np.asarray(out[name], np.float64).astype(np.float32).reshape(shape)
                for name, shape in self.shapes.items()}

    def flatten(self, values: dict) -> np.ndarray:
        """Robot fields; then per object slot its fields in OBJECT_FIELDS order; then per bin its pose."""
        robot = [np.ravel(values[name]) for name, _ in ROBOT_FIELDS]
        n = self.max_objects
        objects = np.concatenate([np.reshape(values[f"object_{name}"], (n, -1)) for name, _ in OBJECT_FIELDS], axis=1)
        bins = np.concatenate([np.asarray(values[f"bin_{name}"]) for name, _ in BIN_FIELDS], axis=1)
        return np.concatenate([*robot, objects.ravel(), bins.ravel()]).astype(np.float32)


def shaping(ee_position, state: dict) -> float:
    """The dense reward's shaping term (≤ 0): minus the distance from the grasp point to the nearest object
    in play, minus how far that object still is below the height a grab needs (task.lift_height); 0 when
    no object is left. Computed in float64 from the values both backends give exactly."""
    positions = [np.asarray(o[1], float) for o in state["objects"]]
    if not positions:
        return 0.0
    ee = np.asarray(ee_position, float)
    distances = [float(np.linalg.norm(p - ee)) for p in positions]
    nearest = int(np.argmin(distances))
    return -distances[nearest] - max(0.0, state["lift_height"] - float(positions[nearest][2]))
