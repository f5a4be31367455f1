"""The bin-picking cell: ground, a pick bin full of small objects, and an empty drop bin.

Follows the reference simulator's BinScene/BaseBin/PickBin: every reset loads a random number of objects of one
random type (from the training or the testing half of `pybullet_data/random_urdfs`), scaled so their
largest dimension is 1-3 cm, drops them on a grid above the pick bin and lets them settle. The settle runs
in a world of its own (the settler, a scene of just ground, bins and objects), and the live world gets the
pile placed where it came to rest; a layout drawn from an RNG state seen before is placed from memory
(cell/layouts.py says why both give the same world).

The pile sleeps once it has settled (Bullet's activation states). A pile of convex meshes at rest in a bin
cost the solver most of every physics step although nothing in it moved: the default scene stepped at a
fifth of the empty cell's rate, and a reset spent 500 steps on a pile at rest after 110-220 of them. So
the settle ends once the pile has been at rest for two looks in a row (SETTLED_SPEED, SETTLE_LOOK; still
at most `settle_steps`), the objects are stopped and put to sleep, and each falls asleep again by
Bullet's own rule (motion below SLEEP_MOTION for 2 s) once something has woken it: a contact with anything
awake (the gripper, a falling object) wakes it and the pile it rests on. Changes made between steps wake the
pile themselves (`wake`): a removed object, a teleported one, a shaken bin. Objects collide as their hulled
copies (cell/hulls.py), a type of many convex parts with them merged to MAX_PARTS: such piles never came to rest.
The `cube` object set puts pybullet_data's small cube there instead (a box collision shape, as
panda-gym's object is): a mesh object costs the solver more per physics step (doc/benchmarks.md "Like for like").
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pybullet_data

from .bins.geometry import bin_boxes
from .hulls import hulled
from .rendering.renderers import spelled
from ..config import BinConfig, SceneConfig
from .objects.meshes import obj_vertices
from .layouts import Layout, Layouts, Rest
from .world import World

GRID_PITCH = 0.035  # reference: 5 mm more than the largest object (3 cm) between spawn points
OBJECT_MASS = 0.05  # kg; random_urdfs says 0.1 kg for a 10 cm blob, too heavy once scaled down
# Bullet's own measure of a body's motion, |v|^2 + |w|^2 (m/s, rad/s), below which for 2 s on end it falls
# asleep: btMultiBody's default. Only an object nearly at rest stays under it for 2 s in a 16 cm bin (22 cm/s
# for 2 s is 44 cm), and an object rocking in place on its contacts (|w| up to 1 rad/s, some layouts) does
# fall asleep, where 1e-4 kept it awake for good: random FrankaDelta-v0 episodes ran at 0.65 of the rate.
SLEEP_MOTION = 0.05
# The settling pile is at rest when no object's centre moves faster than this (m/s). Its turning is not
# asked: about one layout in eight keeps an object rocking or spinning in place on its contacts for good
# (|w| up to 1 rad/s after 500 steps), which a settle waiting for it never ended; at rest, it stops.
SETTLED_SPEED = 0.005
# Physics steps between two looks at the settling pile. The last looks step a pile already at rest (about
# 0.4 ms a physics step): a look every 6 steps rather than 12 took 5-8 ms off a new layout's reset (its median,
# 50-60 ms), and the scripted picker still lifts an object in 100 % of seeds 0-199 (99.5 % with 12) and 99.25 %
# of seeds 0-399 (doc/benchmarks-history.md, 2026-12-02 evening and 2026-12-03).
SETTLE_LOOK = 6
# The most convex parts an object's collision mesh keeps (cell/hulls.py merges the rest): 69 random_urdfs types have
# 17-127, and piles of those never came to rest (up to 400 ms an env step). 16 leaves the 931 others as they are
# (12 would change 4 more, 32 six fewer), and its merged types' piles settle and sleep as the others do; with 32,
# their resets took half as long again (doc/benchmarks-history.md, 2026-12-03).
MAX_PARTS = 16


def may_sleep(client, body: int) -> int:
    """Let a fixed body (the ground, a bin) sleep, as the objects may; returns `body`.

    Bullet skips the contacts of a pair only when neither body is awake, and a fixed body made without
    this never sleeps: every sleeping object resting on a bin or the ground kept its contacts with it
    computed at every physics step (3-24 us an object, with 6-8 objects two to seven times the empty cell's
    step). Asleep, the bin still stops whatever awake body meets it; nothing wakes it but a change of its
    own (a shake, `bins.shake`)."""
    client.changeDynamics(body, -1, activationState=client.ACTIVATION_STATE_ENABLE_SLEEPING)
    return body


CUBE_URDF = "cube_small.urdf"  # pybullet_data: a 5 cm box collision shape, random_urdfs' friction and inertia


@lru_cache(maxsize=None)
def object_files(object_set: str) -> tuple[Path, ...]:
    """The reference simulator's train/test split of random_urdfs: every tenth object is held out for testing; or,
    for `cube`, pybullet_data's small cube alone. Read once per process: listing and sorting the 1,000
    files was about 11 ms of every reset (a state env's takes 190 ms in `make bench`). Each object is its folder's
    namesake (`NNN/NNN.urdf`), so one listing of the folders finds them: a glob into each of the 1,000 folders
    was 13 ms of every sim process's start."""
    if object_set == "cube":
        return (Path(pybullet_data.getDataPath()) / CUBE_URDF,)
    root = Path(pybullet_data.getDataPath()) / "random_urdfs"
    files = [root / name / f"{name}.urdf" for name in sorted(os.listdir(root)) if len(name) == 3 and name.isdigit()]
    held_out = object_set == "test"
    return tuple(f for i, f in enumerate(files) if (i % 10 == 0) == held_out)


class Bin:
    """A fixed, hollow box (floor + four walls) whose frame is the centre of its underside.

    The seed loads a bin mesh (Wavefront OBJ) as one concave triangle mesh (GEOM_FORCE_CONCAVE_TRIMESH);
    here it is five boxes of one compound collision shape. Boxes are solid convex primitives (a triangle
    mesh has no inside: a 1-3 cm object pushed deeper than the collision margin into a face can come out
    on the other side); their sizes come from the scene file (`size`, `wall_thickness`) instead of a
    mesh file and its scale; and the robot description builds the same five boxes (bins/geometry.py)
    without shipping a mesh. The outer size is the reference simulator's (`default_dimensions`); its docs do not give
    the mesh's wall thickness, here 5 mm. test/cell/test_scene.py measures the walls and floor with rays.
    """

    default_dimensions = (0.16, 0.16, 0.04)  # seed BaseBin.default_dimensions: outer length, width, height [m]

    def __init__(self, world: World, name: str, config: BinConfig, color=(0.3, 0.3, 0.3, 1.0), drawn: bool = True):
        """`drawn=False`: nothing will render this world, and the bin is made without its visual shapes."""
        self.name = name
        self.drawn = drawn
        self.config = config
        self.world, self.color = world, color
        c = world.client
        self.position = np.array(config.position, dtype=float)
        self.orientation = np.array(c.getQuaternionFromEuler(np.radians(config.orientation_deg)))
        self.rotation = np.array(c.getMatrixFromQuaternion(self.orientation)).reshape(3, 3)
        # Not turned at all (every bin of the shipped scenes): the bin frame is the world's, shifted, and
        # a product with the identity adds only zeros, so frame changes skip it and give the same numbers.
        self.unrotated = bool(np.array_equal(self.rotation, np.eye(3)))
        self._origin = self.position.tolist()
        length, width, height = config.size
        self._extent = (length / 2, width / 2, 2 * height)  # what `contains` compares with
        self.load()

    def load(self) -> None:
        """Make the bin's body in the world (at construction, and again after the world's rebuild)."""
        c = self.world.client
        boxes = self.boxes()
        kwargs = dict(shapeTypes=[c.GEOM_BOX] * len(boxes), halfExtents=[b[0] for b in boxes])
        collision = c.createCollisionShapeArray(collisionFramePositions=[b[1] for b in boxes], **kwargs)
        visual = c.createVisualShapeArray(visualFramePositions=[b[1] for b in boxes],
                                          rgbaColors=[self.color] * len(boxes), **kwargs) if self.drawn else -1
        self.body = c.createMultiBody(0, collision, visual, self.position.tolist(), self.orientation.tolist())
        may_sleep(c, self.body)

    def boxes(self) -> list[tuple[list[float], list[float]]]:
        return bin_boxes(self.config)

    @property
    def top(self) -> float:
        """World z of the rim (bins are expected to stand upright)."""
        return float(self.to_world([0, 0, self.config.size[2]])[2])

    def to_local(self, point) -> np.ndarray:
        if self.unrotated:  # the same numbers, without a matrix product per call
            return np.asarray(point, dtype=float) - self.position
        return self.rotation.T @ (np.asarray(point, dtype=float) - self.position)

    def to_world(self, point) -> np.ndarray:
        if self.unrotated:
            return np.asarray(point, dtype=float) + self.position
        return self.rotation @ np.asarray(point, dtype=float) + self.position

    def contains(self, point) -> bool:
        """Seed rule: inside length x width x (2 * height) above the bin's underside."""
        if self.unrotated:  # plain floats: checked for every object at every task update
            ox, oy, oz = self._origin
            x, y, z = point[0] - ox, point[1] - oy, point[2] - oz
        else:
            x, y, z = self.to_local(point)
        half_length, half_width, top = self._extent
        return abs(x) <= half_length and abs(y) <= half_width and 0 <= z <= top

    def interior(self) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper corner of the free space inside the walls, in the bin frame."""
        length, width, height = self.config.size
        t = self.config.wall_thickness
        return np.array([-length / 2 + t, -width / 2 + t, t]), np.array([length / 2 - t, width / 2 - t, height])


@dataclass
class SceneObject:
    index: int  # k of object_k, stable for the episode; also the marker id on world/objects
    body: int
    urdf: Path
    scale: float
    label: str = ""  # a spawned object's own name (the bin's objects are object_k)
    spawn_pose: tuple | None = None  # a spawned object's initial (position, xyzw) of its link frame
    # its shapes.visual_frames and first visual shape's Geometry, kept once read (fixed while it lives)
    visual_frames: tuple | None = field(default=None, compare=False, repr=False)
    geometry: object | None = field(default=None, compare=False, repr=False)

    @property
    def name(self) -> str:
        return self.label or f"object_{self.index}"

    @property
    def spawned(self) -> bool:
        return self.spawn_pose is not None

    @property
    def collision_urdf(self) -> str:
        """The URDF of the collision shapes the object has live: a bin object's hulled copy (cell/hulls.py, its
        parts merged to MAX_PARTS), a spawned object's own file. Another world's copy of it loads this one."""
        return str(self.urdf) if self.spawned else hulled(self.urdf, "copied", MAX_PARTS)


class BinScene:
    """Owns the bodies of the cell and the bookkeeping of which objects are still in play."""

    def __init__(self, world: World, config: SceneConfig, settler: bool = False, drawn: bool = True):
        """`settler`: this scene is another's settler (cell/layouts.py): it drops and settles its piles in its
        own world; a live scene (the default) has them settled in its settler and places them.
        `drawn=False` (and a settler): nothing will render this world, so the ground and the bins are made
        without their visual shapes (the plane's mesh and texture were ~0.5 ms of every rebuild); the
        objects keep theirs, which the object views read (BinPickingSim.object_poses)."""
        self.world = world
        self.config = config
        self.drawn = drawn and not settler
        self.ground = self._load_ground()
        self.pick_bin = Bin(world, "pick_bin", config.pick_bin, drawn=self.drawn)
        self.drop_bin = Bin(world, "drop_bin", config.drop_bin, color=(0.25, 0.35, 0.45, 1.0), drawn=self.drawn)
        self.bins = [self.pick_bin, self.drop_bin]
        self.objects: list[SceneObject] = []
        self.object_urdf: Path | None = None
        self.object_scale = 0.0
        self.episode = 0
        self.next_index = 0  # marker id of the next object added after the bin was filled
        self.is_settler = settler
        self._settler: BinScene | None = None  # made at the first reset
        self._settler_made_for: tuple = ()  # the (scene, simulation) configs it was made for
        self._drops: list[tuple] = []  # a settler's: where each object of its pile was dropped
        self.layouts = Layouts()

    def _load_ground(self) -> int:
        c = self.world.client
        flags = 0 if self.drawn else c.URDF_IGNORE_VISUAL_SHAPES
        return may_sleep(c, c.loadURDF("plane.urdf", useFixedBase=True, flags=flags))

    def reload_fixed(self) -> None:
        """The ground and the bins made again in a world just rebuilt (World.rebuild), in the order and
        so under the ids of their construction; the objects are gone with the old world."""
        self.objects = []
        self.ground = self._load_ground()
        for b in self.bins:
            b.load()

    @property
    def environment_bodies(self) -> dict[str, int]:
        return {"ground": self.ground, "pick_bin": self.pick_bin.body, "drop_bin": self.drop_bin.body}

    @property
    def object_count(self) -> int:
        return len(self.objects)

    def object_named(self, name: str) -> SceneObject:
        for obj in self.objects:
            if obj.name == name:
                return obj
        known = ", ".join(o.name for o in self.objects) or "none"
        raise KeyError(f"no object named {name!r} (objects now: {known})")

    def reset(self, keep_object_type: bool = False) -> None:
        """Remove every object (none is left after a rebuild), then fill the pick bin anew: the pile drawn
        from the world's RNG and settled (in the settler, see cell/layouts.py; a layout drawn from the same
        RNG state before is remembered), placed where it came to rest."""
        for obj in self.objects:
            self.world.client.removeBody(obj.body)
        self.objects = []
        rng, settler = self.world.rng, self.settler
        kept = (self.object_urdf, self.object_scale) if keep_object_type and self.object_urdf is not None else None
        key = Layouts.key(rng, kept)
        layout = self.layouts.get(key)
        if layout is None:
            layout = self._settled_layout(settler, kept)
            self.layouts.put(key, layout)
        else:
            rng.bit_generator.state = layout.rng_after
        self._place(layout)
        self.episode += 1

    def _settled_layout(self, settler: BinScene, kept: tuple | None) -> Layout:
        """A new layout: drawn from this world's RNG (the draws of a settle in this world) and settled in the
        settler, its world rebuilt first so that the settle is a function of the draws alone."""
        settler.world.rng = self.world.rng
        settler.object_urdf, settler.object_scale = self.object_urdf, self.object_scale  # what a kept type keeps
        settler.world.rebuild()
        settler.reload_fixed()
        before = settler.world.step_count
        settled = settler._fill_and_settle(kept is not None)
        c = settler.world.client
        rests = tuple(Rest(drop, c.getBasePositionAndOrientation(obj.body), c.getBaseVelocity(obj.body))
                      for obj, drop in zip(settler.objects, settler._drops))
        return Layout(settler.object_urdf, settler.object_scale, rests, settled, settler.world.step_count - before,
                      self.world.rng.bit_generator.state)

    @property
    def settler(self) -> BinScene:
        """The settler for the scene as it is configured now, made at the first need, and again (the remembered
        layouts forgotten) when the scene's or the world's configuration was replaced."""
        made_for = (self.config, self.world.config)
        if self._settler is None or any(a is not b for a, b in zip(made_for, self._settler_made_for)):
            self.close()
            bins = dataclasses.replace(self.config, pick_bin=self.pick_bin.config, drop_bin=self.drop_bin.config)
            self._settler = BinScene(World(self.world.config, gui=False), bins, settler=True)
            self._settler_made_for = made_for
            self.layouts.clear()
        return self._settler

    def _place(self, layout: Layout) -> None:
        """The layout's objects loaded as they were dropped, then put where they came to rest; the pile asleep
        if it settled (the ground and bins too, at once rather than after Bullet's 2 s, see `may_sleep`). The
        world's clock runs on by the settle's steps, the last of them taken here."""
        c = self.world.client
        self.object_urdf, self.object_scale = layout.urdf, layout.scale
        for i, rest in enumerate(layout.objects):
            obj = self._load_object(i, *rest.drop)
            c.resetBasePositionAndOrientation(obj.body, *rest.pose)
            c.resetBaseVelocity(obj.body, *rest.velocity)
            self.objects.append(obj)
        self.next_index = len(layout.objects)
        steps = layout.steps
        if layout.settled:
            for obj in self.objects:
                c.changeDynamics(obj.body, -1, activationState=c.ACTIVATION_STATE_SLEEP)
            for body in self.environment_bodies.values():
                c.changeDynamics(body, -1, activationState=c.ACTIVATION_STATE_SLEEP)
            self._fall_asleep()
            steps -= 1
        if steps > 0:
            # The last of the settle's steps taken here: the arm's motors hold it at home through it, so that
            # its joint efforts read as after a settle beside it (PyBullet reports those of the last step).
            self.world.step_count += steps - 1
            self.world.step()

    def _fall_asleep(self) -> None:
        """One physics step in which the placed objects touch nothing and weigh nothing, so that Bullet puts
        them to sleep (after a step asleep in PyBullet's sense, a body's collider is taken as wanting to sleep,
        and an island of such bodies sleeps). A first step that met the pile's contacts would meet them afresh,
        without the impulses a settle leaves in them: the pile's slight overlaps kick its objects awake, and
        they stay awake for Bullet's 2 s (measured: 4,000-9,000 physics steps/s of a 7-10 object pile for
        those 2 s, against 32,000-37,000 asleep)."""
        c = self.world.client
        for obj in self.objects:
            c.setCollisionFilterGroupMask(obj.body, -1, 0, 0)
        c.setGravity(0.0, 0.0, 0.0)
        self.world.step()
        c.setGravity(*self.world.config.gravity)
        for obj in self.objects:  # Bullet's own for a dynamic body (URDF2Bullet.cpp): its group, every group
            c.setCollisionFilterGroupMask(obj.body, -1, 1, -1)

    def _fill_and_settle(self, keep_object_type: bool) -> bool:
        """A settler's pile: object type (unless kept), size, count, drop points and orientations drawn from
        the world's RNG, the objects dropped on a grid above the pick bin and settled (`_settle`); whether the
        pile came to rest. A type without a finite point is drawn again: random_urdfs/168's points are all NaN
        (no size to scale it by, nothing to see, and an inertia PyBullet computes differently from load to load);
        only the layouts that drew it change."""
        rng = self.world.rng
        if not keep_object_type or self.object_urdf is None:
            files, extent = object_files(self.config.object_set), float("nan")
            while not extent > 0:  # (NaN for a shapeless type: drawn again)
                self.object_urdf = files[rng.integers(len(files))]
                extent = _largest_extent(self.object_urdf)
            size = rng.uniform(*self.config.object_size_range)
            self.object_scale = size / extent
        bin_config = self.config.pick_bin
        count = int(rng.integers(bin_config.min_objects, bin_config.max_objects + 1))
        self._drops = []
        for i, position in enumerate(self._spawn_points(count)):
            orientation = self.world.client.getQuaternionFromEuler(rng.uniform(-np.pi, np.pi, size=3))
            self._drops.append((list(position), orientation))
            self.objects.append(self._load_object(i, list(position), orientation))
        self.next_index = count
        return self._settle()

    def _settle(self) -> bool:
        """Step until the pile has been at rest at two looks in a row (`at_rest`), at most `settle_steps`, then
        stop it; whether it came to rest (a pile still moving when the steps run out sleeps later, by Bullet's
        rule, once placed)."""
        budget, calm = self.config.settle_steps, 0
        while budget > 0 and calm < 2:
            steps = min(SETTLE_LOOK, budget)
            self.world.step(steps)
            budget -= steps
            calm = calm + 1 if self.at_rest() else 0
        if calm == 2:
            for obj in self.objects:
                self.world.client.resetBaseVelocity(obj.body, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0))
        return calm == 2

    def at_rest(self) -> bool:
        """Whether no object's centre moves faster than SETTLED_SPEED."""
        velocity = self.world.client.getBaseVelocity
        for obj in self.objects:
            if sum(v * v for v in velocity(obj.body)[0]) >= SETTLED_SPEED * SETTLED_SPEED:
                return False
        return True

    def wake(self) -> None:
        """Wake every object: for a change made between two steps that takes a body's support away or moves
        one (Bullet wakes bodies only through contacts with awake ones)."""
        wake_up = self.world.client.ACTIVATION_STATE_WAKE_UP
        for obj in self.objects:
            self.world.client.changeDynamics(obj.body, -1, activationState=wake_up)

    def _spawn_points(self, count: int) -> list[np.ndarray]:
        """Seed grid: random x, y rows 3.5 cm apart, new layer 3.5 cm higher when a row is full. `spawn:
        anywhere`: random x and y, a layer 3.5 cm higher for each object."""
        lower, upper = self.pick_bin.interior()
        margin = GRID_PITCH / 2
        x_lo, x_hi = lower[0] + margin, upper[0] - margin
        y_start, y_end = lower[1] + margin, upper[1] - margin
        y, z = y_start, lower[2] + margin
        points = []
        if self.config.spawn == "anywhere":
            for k in range(count):
                x, y = self.world.rng.uniform((x_lo, y_start), (x_hi, y_end))
                points.append(self.pick_bin.to_world([x, y, z + k * GRID_PITCH]))
            return points
        for _ in range(count):
            x = self.world.rng.uniform(x_lo, x_hi) if x_hi > x_lo else 0.0
            points.append(self.pick_bin.to_world([x, y, z]))
            y += GRID_PITCH
            if y > y_end:
                y, z = y_start, z + GRID_PITCH
        return points

    def _load_object(self, index: int, position: list, orientation) -> SceneObject:
        c = self.world.client
        if self.is_settler:  # never drawn: its meshes are not read (the physics is the same)
            body = c.loadURDF(hulled(self.object_urdf, "copied", MAX_PARTS), position, orientation,
                              globalScaling=self.object_scale, flags=c.URDF_IGNORE_VISUAL_SHAPES)
        else:  # EGL: see spelled; hulled: the same collision shapes, loaded faster (cell/hulls.py)
            body = c.loadURDF(spelled(hulled(self.object_urdf, "copied", MAX_PARTS), ("scale", self.object_scale)),
                              position, orientation, globalScaling=self.object_scale)
        c.changeDynamics(body, -1, mass=OBJECT_MASS, activationState=c.ACTIVATION_STATE_ENABLE_SLEEPING,
                         sleepThreshold=SLEEP_MOTION)
        return SceneObject(index, body, self.object_urdf, self.object_scale)

    def add_object(self, body: int, urdf: Path, name: str, spawn_pose: tuple) -> SceneObject:
        """Take a body loaded from outside the scene (a spawned entity) into play like the bin's own."""
        obj = SceneObject(self.next_index, body, urdf, 1.0, label=name, spawn_pose=spawn_pose)
        self.next_index += 1
        self.objects.append(obj)
        return obj

    def remove_object(self, name: str) -> None:
        obj = self.object_named(name)
        self.world.client.removeBody(obj.body)
        self.objects.remove(obj)
        self.wake()  # what rested on it falls

    def _in_a_bin(self, position) -> bool:
        for b in self.bins:  # (a loop: any() over a generator costs more than the tests, at every update)
            if b.contains(position):
                return True
        return False

    def object_position(self, obj: SceneObject) -> np.ndarray:
        return np.array(self.world.client.getBasePositionAndOrientation(obj.body)[0])

    def remove_objects_outside_bins(self, keep: set[str] = frozenset()) -> list[str]:
        """Seed rule: drop any object no bin contains any more (except those named in `keep`, e.g. held
        by the gripper); returns the removed names."""
        position = self.world.client.getBasePositionAndOrientation  # plain floats: `contains` needs no array
        gone = [o for o in self.objects if o.name not in keep and not self._in_a_bin(position(o.body)[0])]
        for obj in gone:
            self.remove_object(obj.name)
        return [o.name for o in gone]

    def close(self) -> None:
        """Disconnect the settler's world (the live world is its owner's to close)."""
        if self._settler is not None:
            self._settler.world.close()
            self._settler = None


@lru_cache(maxsize=None)
def _largest_extent(urdf: Path) -> float:
    """Largest side of the object's unscaled visual mesh (exact, unlike its AABB): the first visual mesh of
    the URDF with its scale, the file and numbers PyBullet's getVisualShapeData reports for it (checked for
    every object of every set: test/cell/test_scene.py). Read from the file itself: loading the object in a
    scratch client to ask was 1.7 ms of a reset to a type not seen yet (most new layouts' resets)."""
    mesh = ElementTree.parse(urdf).find("link/visual/geometry/mesh")
    scale = [float(v) for v in (mesh.get("scale") or "1 1 1").split()]
    vertices = obj_vertices(str(Path(urdf).parent / mesh.get("filename"))) * np.asarray(scale)
    return float(np.max(vertices.max(axis=0) - vertices.min(axis=0)))
