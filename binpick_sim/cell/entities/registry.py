"""The cell as named entities, for a simulator-control standard (ROS 2 `simulation_interfaces`).

Names: `panda` (robot), `ground`, `pick_bin`, `drop_bin` (fixed environment), and every object in
play: the bin's `object_k` and objects spawned from a URDF, which join `scene.objects` and so count
for the markers, the reasoning queries and the task exactly like the bin's own. Poses are those of an
entity's link frame (its URDF origin, not its centre of mass) in `world`, or in another entity's frame.

Core code: no ROS here. A refused request raises `EntityError` with a code the node maps onto the
standard's result codes, and nothing in the world has changed. Call everything on the physics thread.

The error and its codes are errors.py's, reading a spawned URDF from a client's URI urdf_resources.py's.
"""
from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pybullet_data

from .. import finite_world
from .errors import (INVALID_POSE, NAME_INVALID, NAME_NOT_UNIQUE, NO_RESOURCE, NOT_FOUND, OPERATION_FAILED,
                     RESOURCE_PARSE_ERROR, EntityError)
from .name_filter import FilterError, compile_filter
from ..arm.panda import ROBOT_NAME
from ..scene import SceneObject, object_files
from ..bin_picking_sim import BinPickingSim
from .spawn_folder import SpawnFolder
from .spawn_sources import OutsideRoots, SpawnRoots, Walk, source_path
from ..rendering.renderers import spelled
from .urdf_limits import body_problem
from .urdf_resources import package_path, parse_urdf, path_of_package, read_urdf, resolve_uri

ROBOT, STATIC, OBJECT = "robot", "static", "object"
WORLD_FRAME = "world"
WORLD_LIMIT = 100.0  # m: a position farther out on any axis is not a pose in this cell
MAX_LINEAR_SPEED = 100.0  # m/s
MAX_ANGULAR_SPEED = 1000.0  # rad/s
QUATERNION_TOLERANCE = 0.01  # |q| may be this far from 1 (typed-in values); it is then normalised
NAME_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
RESERVED_NAME = re.compile(r"object_[0-9]+")  # the bin's objects; a spawned one must not take a future name
ABOVE_BIN = 0.75  # a bin's named spawn pose: this many bin heights above its rim, still inside the reference simulator's
                  # "in the bin" region (up to twice the height), so the task does not remove what drops from it


@dataclass(frozen=True)
class Entity:
    name: str
    category: str  # ROBOT, STATIC or OBJECT
    body: int
    description: str
    tags: tuple[str, ...]


@dataclass
class State:
    """Pose of the link frame and velocity of the centre of mass, both in `world`."""

    position: np.ndarray
    orientation: np.ndarray  # xyzw
    linear: np.ndarray = field(default_factory=lambda: np.zeros(3))
    angular: np.ndarray = field(default_factory=lambda: np.zeros(3))


@dataclass(frozen=True)
class NamedPose:
    name: str
    description: str
    tags: tuple[str, ...]
    position: np.ndarray
    orientation: np.ndarray


def check_pose(position, orientation) -> tuple[np.ndarray, np.ndarray]:
    """A finite position inside the cell's limits and a (nearly) unit quaternion, normalised."""
    position, orientation = np.asarray(position, float), np.asarray(orientation, float)
    if not np.all(np.isfinite(position)) or np.any(np.abs(position) > WORLD_LIMIT):
        raise EntityError(INVALID_POSE, f"position {position.tolist()} is not finite or lies beyond "
                                        f"{WORLD_LIMIT} m of the origin")
    norm = float(np.linalg.norm(orientation)) if np.all(np.isfinite(orientation)) else math.nan
    if not abs(norm - 1.0) <= QUATERNION_TOLERANCE:
        raise EntityError(INVALID_POSE, f"orientation {orientation.tolist()} is not a unit quaternion (norm {norm})")
    return position, orientation / norm


def check_twist(linear, angular) -> tuple[np.ndarray, np.ndarray]:
    linear, angular = np.asarray(linear, float), np.asarray(angular, float)
    for what, value, limit in (("linear", linear, MAX_LINEAR_SPEED), ("angular", angular, MAX_ANGULAR_SPEED)):
        if not np.all(np.isfinite(value)) or np.linalg.norm(value) > limit:
            raise EntityError(INVALID_POSE, f"{what} velocity {value.tolist()} is not finite or exceeds {limit}")
    return linear, angular


class Entities:
    def __init__(self, sim: BinPickingSim, spawnable_folders=()):
        """`spawnable_folders`: absolute folders whose URDFs and meshes may be spawned besides the package's
        own (see spawn_sources); ValueError for one that is not an existing folder."""
        self.sim = sim
        self.client = sim.world.client
        self.roots = SpawnRoots(spawnable_folders)
        self._folder = SpawnFolder()  # URDFs as loaded (stale folders of killed processes removed first)
        self._files = 0

    def close(self) -> None:
        self._folder.close()

    # --- names --------------------------------------------------------------------------------
    def all(self) -> list[Entity]:
        scene = self.sim.scene
        several = self.sim.config.several_arms  # then each arm by its own name, as reasoning names them
        entities = [Entity(arm.config.name if several else ROBOT_NAME, ROBOT, arm.body,
                           "Franka Emika Panda arm with its gripper", ("robot", "arm")) for arm in self.sim.arms]
        entities.append(Entity("ground", STATIC, scene.ground, "the ground plane", ("environment",)))
        for b in scene.bins:
            entities.append(Entity(b.name, STATIC, b.body, f"{b.name.replace('_', ' ')}, fixed (from the scene file)",
                                   ("environment", "bin")))
        for obj in scene.objects:
            entities.append(Entity(obj.name, OBJECT, obj.body, self._describe(obj),
                                   ("object", "spawned" if obj.spawned else "bin_object")))
        return entities

    def _describe(self, obj: SceneObject) -> str:
        if obj.spawned:
            return f"spawned from {obj.urdf.name}"
        return f"object type {obj.urdf.stem} of the {self.sim.scene.config.object_set} set, scale {obj.scale:.3f}"

    def get(self, name: str) -> Entity:
        for entity in self.all():
            if entity.name == name:
                return entity
        raise EntityError(NOT_FOUND, f"no entity named {name!r} (entities: {', '.join(self.names())})")

    def names(self) -> list[str]:
        return [e.name for e in self.all()]

    def select(self, pattern: str = "", categories=(), tags=(), all_tags: bool = False,
               sphere: tuple | None = None, box: tuple | None = None) -> list[Entity]:
        """Entities whose name matches the regular expression (searched, RE2 syntax: see name_filter) and
        that are of any of `categories`, carry any (or all) of `tags`, and overlap the sphere (centre,
        radius) or the axis-aligned box (corner, corner), each filter applying only when given."""
        try:
            matches = compile_filter(pattern)
        except FilterError as exc:
            raise EntityError(OPERATION_FAILED, str(exc)) from None
        if sphere is not None:
            centre, radius = np.asarray(sphere[0], float), float(sphere[1])
            if not (np.all(np.isfinite(centre)) and math.isfinite(radius) and radius >= 0):
                raise EntityError(OPERATION_FAILED, "a sphere needs a finite centre and a radius >= 0")
        if box is not None:
            corners = np.asarray(box, float)
            if not np.all(np.isfinite(corners)):
                raise EntityError(OPERATION_FAILED, "a box needs two finite corners")
            lower, upper = corners.min(axis=0), corners.max(axis=0)
        match_tags = (lambda have: set(tags) <= set(have)) if all_tags else (lambda have: bool(set(tags) & set(have)))
        chosen = []
        for entity in self.all():
            if not matches(entity.name) or (categories and entity.category not in categories):
                continue
            if tags and not match_tags(entity.tags):
                continue
            if sphere is not None or box is not None:
                low, high = self.aabb(entity.body)
                if sphere is not None and np.linalg.norm(np.clip(centre, low, high) - centre) > radius:
                    continue
                if box is not None and (np.any(high < lower) or np.any(low > upper)):
                    continue
            chosen.append(entity)
        return chosen

    def aabb(self, body: int) -> tuple[np.ndarray, np.ndarray]:
        boxes = [self.client.getAABB(body, link) for link in range(-1, self.client.getNumJoints(body))]
        return np.min([b[0] for b in boxes], axis=0), np.max([b[1] for b in boxes], axis=0)

    # --- state --------------------------------------------------------------------------------
    def state(self, name: str) -> State:
        body = self.get(name).body
        position, orientation = self.client.getBasePositionAndOrientation(body)
        inertial = self.client.getDynamicsInfo(body, -1)[3:5]
        link = self.client.multiplyTransforms(position, orientation, *self.client.invertTransform(*inertial))
        linear, angular = self.client.getBaseVelocity(body)
        return State(np.array(link[0]), np.array(link[1]), np.array(linear), np.array(angular))

    def frame(self, frame_id: str) -> tuple[np.ndarray, np.ndarray]:
        """World pose of a frame: `world` (or empty) or an entity's link frame."""
        if frame_id in ("", WORLD_FRAME):
            return np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0])
        try:
            s = self.state(frame_id)
        except EntityError:
            raise EntityError(NOT_FOUND, f"unknown frame {frame_id!r}: use {WORLD_FRAME!r} or an entity's name") from None
        return s.position, s.orientation

    def to_world(self, frame_id: str, position, orientation) -> tuple[np.ndarray, np.ndarray]:
        """A checked pose given in `frame_id`, in world."""
        position, orientation = check_pose(position, orientation)
        origin, rotation = self.frame(frame_id)
        p, q = self.client.multiplyTransforms(origin, rotation, position, orientation)
        return check_pose(p, q)

    def set_state(self, name: str, state: State, frame_id: str = WORLD_FRAME, acceleration=None) -> None:
        """Teleport an object (pose and velocity given in `frame_id`, rotated into world); the robot and the
        environment stay where the scene file puts them and refuse any velocity."""
        entity = self.get(name)
        position, orientation = self.to_world(frame_id, state.position, state.orientation)
        linear, angular = check_twist(state.linear, state.angular)
        rotation = np.array(self.client.getMatrixFromQuaternion(self.frame(frame_id)[1])).reshape(3, 3)
        linear, angular = rotation @ linear, rotation @ angular
        if entity.category != OBJECT:
            moving = np.any(linear != 0) or np.any(angular != 0) or (acceleration is not None
                                                                     and np.any(np.asarray(acceleration) != 0))
            if moving:
                raise EntityError(OPERATION_FAILED, f"{name} is static: it takes no velocity or acceleration")
            now = self.state(name)
            if (np.linalg.norm(now.position - position) > 1e-6
                    or 1 - abs(float(np.dot(now.orientation, orientation))) > 1e-9):
                raise EntityError(OPERATION_FAILED, f"{name} is fixed where the scene file puts it; "
                                                    "only objects can be moved")
            return
        self._place(entity.body, position, orientation)
        self.client.resetBaseVelocity(entity.body, linear.tolist(), angular.tolist())
        self.sim.scene.wake()  # it may have rested under others, or come down among them

    def _place(self, body: int, position, orientation) -> None:
        """Put a body's link frame at a world pose (PyBullet places its centre of mass)."""
        inertial = self.client.getDynamicsInfo(body, -1)[3:5]
        com = self.client.multiplyTransforms(list(position), list(orientation), *inertial)
        self.client.resetBasePositionAndOrientation(body, *com)

    # --- spawning -----------------------------------------------------------------------------
    def spawn(self, name: str, allow_renaming: bool, uri: str, resource_string: str,
              frame_id: str, position, orientation) -> str:
        """Load a URDF (by `uri`, else from `resource_string`) as a new object; returns its name."""
        if uri:  # a file: its contents are never quoted back (echo False)
            path, package = resolve_uri(uri, self.roots)
            text, base, echo = read_urdf(path), path.parent, False
        elif resource_string:  # the client's own text: quoting it helps and tells nothing new
            text, base, package, echo = resource_string, Path(pybullet_data.getDataPath()), None, True
        else:
            raise EntityError(NO_RESOURCE, "neither uri nor resource_string is given")
        root = parse_urdf(text, base, self.roots, package, echo)
        name = self._new_name(name or root.get("name", ""), allow_renaming, quote=echo or bool(name))
        position, orientation = self.to_world(frame_id, position, orientation)
        self._files += 1
        urdf = self._folder.path / f"{self._files:04d}_{name}.urdf"
        for mesh in root.iter("mesh"):  # meshes of their own, whatever their scale (EGL: see spelled)
            mesh.set("filename", spelled(mesh.get("filename"), ("spawn", str(urdf))))
        urdf.write_text(ElementTree.tostring(root, encoding="unicode"))
        try:
            body = self.client.loadURDF(str(urdf), position.tolist(), orientation.tolist())
        except Exception as exc:  # pybullet.error: the importer refused it
            urdf.unlink()
            raise EntityError(RESOURCE_PARSE_ERROR, f"PyBullet could not load the URDF: {exc}") from None
        problem = body_problem(self.client, body)
        if problem:  # no step has been taken with it: removing it leaves the world as it was
            self.client.removeBody(body)
            urdf.unlink()
            raise EntityError(RESOURCE_PARSE_ERROR, f"refused: {problem}")
        self.sim.scene.add_object(body, urdf, name, (position, orientation))
        return name

    def _new_name(self, wanted: str, allow_renaming: bool, quote: bool = True) -> str:
        """`quote`: the refusal may quote `wanted` (false for a name read from a file)."""
        taken = set(self.names())
        if wanted and (not NAME_PATTERN.fullmatch(wanted) or RESERVED_NAME.fullmatch(wanted)):
            shown = f"name {wanted[:100]!r}" if quote else "the URDF's robot name"
            raise EntityError(NAME_INVALID, f"{shown} is invalid: use a letter, then letters, digits "
                                            "or '_' (at most 64), and not object_<k> (the bin's objects)")
        if wanted and wanted not in taken:
            return wanted
        if not allow_renaming:
            if not wanted:
                raise EntityError(NAME_INVALID, "no name given (nor in the URDF) and allow_renaming is false")
            raise EntityError(NAME_NOT_UNIQUE, f"an entity named {wanted!r} exists and allow_renaming is false")
        base = wanted or "entity"
        return next(f"{base}_{k}" for k in range(1, len(taken) + 2) if f"{base}_{k}" not in taken)

    def delete(self, name: str) -> None:
        entity = self.get(name)
        if entity.category != OBJECT:
            raise EntityError(OPERATION_FAILED, f"{name} is part of the cell and cannot be deleted")
        self.sim.scene.remove_object(name)

    # --- resets -------------------------------------------------------------------------------
    def remove_spawned(self) -> list[str]:
        names = [o.name for o in self.sim.scene.objects if o.spawned]
        for name in names:
            self.sim.scene.remove_object(name)
        return names

    def restart(self, keep_spawned: bool) -> None:
        """Back to the start of the episode: the bin's objects as they were dropped, the arm home, and
        (if kept) spawned objects at rest at their spawn poses (those deleted since stay deleted)."""
        spawned = [o for o in self.sim.scene.objects if o.spawned] if keep_spawned else []
        self.sim.restart_episode()
        for obj in spawned:
            position, orientation = obj.spawn_pose
            body = self.client.loadURDF(str(obj.urdf), position.tolist(), orientation.tolist())
            self.sim.scene.add_object(body, obj.urdf, obj.name, obj.spawn_pose)
        try:
            finite_world.restore(self.sim)  # a NaN in the ground or a bin survives the restart otherwise
        except finite_world.WorldNotSane as exc:
            raise EntityError(OPERATION_FAILED, str(exc)) from None

    # --- offered poses and resources ----------------------------------------------------------
    def named_poses(self) -> list[NamedPose]:
        """The gripper's home pose, and a spawn point above each bin's centre."""
        up = np.array([0.0, 0.0, 0.0, 1.0])
        poses = [NamedPose("home", "the gripper's grasp point with the arm at home", ("gripper", "arm"),
                           *self._home_ee_pose())]
        for b in self.sim.scene.bins:
            centre, above = b.to_world([0, 0, 0]), ABOVE_BIN * b.config.size[2]
            poses.append(NamedPose(f"above_{b.name}", f"{above:.3f} m above the {b.name.replace('_', ' ')}'s rim, "
                                   "over its centre: drop spawned objects here", ("spawn", "bin"),
                                   np.array([centre[0], centre[1], b.top + above]), up))
        return poses

    def _home_ee_pose(self) -> tuple[np.ndarray, np.ndarray]:
        arm, c = self.sim.arm, self.client
        saved = c.saveState()
        try:
            for j, q in zip(arm.joints, arm.home):
                c.resetJointState(arm.body, j, q, 0.0)
            return arm.ee_pose()
        finally:
            c.restoreState(stateId=saved)
            c.removeState(saved)

    def spawnables(self, sources=()) -> tuple[list[tuple[str, str]], list[str], str]:
        """(uri, description) of the object sets' URDFs (unscaled: the bin scales them to 1-3 cm), plus
        the URDFs in each extra source folder or file (inside the spawnable folders, or a package://
        folder); the sources not found; and which bound stopped the listing ("" if none).
        EntityError (OPERATION_FAILED) for a source outside the allowed folders: nothing is listed."""
        paths = []
        for source in sources:
            try:
                if source.startswith("package://"):
                    path, also = package_path(source.rstrip("/") + "/"), [path_of_package(source)]
                else:
                    path, also = source_path(source), []
                paths.append((source, self.roots.check(path, repr(source[:200]), also), also))
            except OutsideRoots as exc:
                raise EntityError(OPERATION_FAILED, str(exc)) from None
            except EntityError:
                paths.append((source, None, []))  # an unknown package: not found
        found, unknown, walk = [], [], Walk()
        for object_set in ("train", "test"):
            found += [(f.as_uri(), f"random_urdfs {f.stem}, {object_set} set (unscaled)") for f in object_files(object_set)]
        for source, path, also in paths:
            if path is not None and path.is_dir():  # (a link in an allowed folder may lead out of it)
                found += [(f.as_uri(), f"from {source}") for f in walk.urdfs(path) if self.roots.allows(f, also)]
            elif path is not None and path.is_file() and path.suffix == ".urdf":
                found.append((path.as_uri(), f"from {source}"))
            else:
                unknown.append(source)
        return found, unknown, walk.stopped


