"""The whole cell built from one scene file: world, bins and objects, arm, camera."""
from __future__ import annotations

import numpy as np

from .arm.franka import FrankaArm
from .arm.panda import JOINT_NAMES
from .rendering import renderers
from .bins.shake import BinShaker
from .vision.camera import Camera
from ..config import Config
from .objects.shapes import Geometry, ObjectView, visual_frames, visual_pose
from .scene import BinScene, SceneObject
from .world import World


class BinPickingSim:
    def __init__(self, config: Config, gui: bool | None = None, drawn: bool = True):
        """`drawn=False`: nothing will ever render this world (a state-only gym env): the arms, the ground
        and the bins are loaded without their visual meshes (~60 MB an arm; physics and object views are the
        same)."""
        self.config = config
        gui = config.simulation.gui if gui is None else gui
        sizes = [(c.width, c.height) for c in (config.camera, *config.cameras.values())]
        renderer = renderers.choose(config.simulation.renderer, gui, sizes)
        self.world = World(config.simulation, gui=gui or renderer == "gui")
        drawn = drawn or gui or renderer == "gui"  # a GUI window always shows the arms
        try:
            self.world.renderer = renderers.attach(self.world.client, renderer)  # before any body is loaded
        except BaseException:
            self.world.close()
            raise
        self.scene = BinScene(self.world, config.scene, drawn=drawn)
        # The reference simulator's `robots`: every arm of the scene file, each at its own base; `arm` is the first (the
        # cameras' mount, the gym envs' arm).
        self.arms = [FrankaArm(self.world, arm, workspace=self.scene.pick_bin, drawn=drawn) for arm in config.arms]
        self.arm = self.arms[0]
        self.camera = Camera(self.world, config.camera, arm=self.arm)  # the scene file's `camera:`
        # every camera by name: "" is `camera:` (today's topic and frame names), the others `cameras:`
        self.cameras = {"": self.camera, **{name: Camera(self.world, c, arm=self.arm, name=name)
                                            for name, c in config.cameras.items()}}
        self.shakers = {b.name: BinShaker(self.world, b, self.scene.ground) for b in self.scene.bins}
        self._meshes: dict = {}
        self.fixed_bodies = self._fixed_bodies()  # their ids, which every rebuild must give again
        self._first_frame()

    def _fixed_bodies(self) -> tuple[int, ...]:
        return (self.scene.ground, *(b.body for b in self.scene.bins), *(arm.body for arm in self.arms))

    def _first_frame(self) -> None:
        if self.world.renderer.name == "egl":
            # EGL lights the first frame with bodies in it differently from every later one (measured: 5 % of
            # a 640x480 frame's pixels, up to 38 levels); a frame of one pixel takes that turn
            self.world.client.getCameraImage(1, 1, renderer=self.world.renderer.flag)

    def rebuild(self) -> None:
        """The cell made again from nothing in an emptied physics world (World.rebuild): ground, bins and
        arms loaded in their construction's order, under the same body ids (so every holder of an id,
        the camera's mount, the task, the nodes, stays right), no objects, no shake, no controller.

        Every reset does this: PyBullet keeps state across body-by-body resets that later steps depend
        on (contact caches, freed ids reused, solver bookkeeping), so only an emptied world makes an
        episode a function of its seed alone. It also leaves nothing of a poisoned world (a NaN that
        reached a body) behind. A world that cannot be made again the same way raises RuntimeError."""
        for shaker in self.shakers.values():
            shaker.forget()
        for arm in self.arms:
            arm.set_controller(None)
        self.world.rebuild()
        self.scene.reload_fixed()
        for arm in self.arms:
            arm.reload()
        if self._fixed_bodies() != self.fixed_bodies:
            raise RuntimeError(f"the rebuilt cell's bodies got ids {self._fixed_bodies()}, not {self.fixed_bodies}")
        self._first_frame()

    def reset(self, seed: int | None = None, keep_object_type: bool = False) -> None:
        """New episode: the cell rebuilt (see `rebuild`), arm home, pick bin refilled. What follows
        depends only on the world's RNG state here (the seed, when given) and the actions: the same
        seed gives the same episode bit for bit, whatever ran before."""
        if seed is not None:
            self.world.seed(seed)
        self.episode_start = (self.world.rng.bit_generator.state, keep_object_type)
        self.rebuild()
        for arm in self.arms:
            arm.reset()
        self.scene.reset(keep_object_type=keep_object_type)

    def restart_episode(self) -> None:
        """The current episode again from its start: the same objects in the same places, arm home
        (the episode counter still counts it as a new one)."""
        rng_state, keep_object_type = self.episode_start
        self.world.rng.bit_generator.state = rng_state
        self.reset(keep_object_type=keep_object_type)

    def shake_bin(self, name: str, amplitude: float, frequency: float, duration: float, wait: bool = True) -> None:
        """Shake `pick_bin` or `drop_bin` so that its objects spread (see bins/shake.py): `amplitude` [m],
        `frequency` [Hz], `duration` [s]. With `wait`, step the world until the bin is fixed at its pose
        again; otherwise the world's next steps carry the shake out. ValueError on bad parameters."""
        shaker = self.shakers.get(name)
        if shaker is None:
            raise ValueError(f"no bin named {name!r} (bins: {', '.join(self.shakers)})")
        shaker.start(amplitude, frequency, duration)
        self.scene.wake()  # the pile moves with the bin
        while wait and shaker.shaking:
            self.world.step()

    def arm_named(self, name: str) -> FrankaArm:
        for arm in self.arms:
            if arm.config.name == name:
                return arm
        raise KeyError(f"no arm named {name!r} (arms: {', '.join(a.config.name for a in self.arms)})")

    def joint_names(self, arm: FrankaArm) -> tuple[str, ...]:
        """The arm's joint names as ROS sees them: the Panda's own for one arm; with several, prefixed
        with the arm's name (left_panda_joint1), as multi-robot setups keep one TF tree without clashes."""
        return tuple(f"{arm.config.name}_{n}" for n in JOINT_NAMES) if self.config.several_arms else JOINT_NAMES

    def close(self) -> None:
        for arm in self.arms:
            arm.solver.close()
        self.scene.close()
        self.world.close()

    def object_views(self) -> list[ObjectView]:
        """Every object's pose and scaled mesh, as the world/objects markers describe them."""
        return [ObjectView(obj.name, np.array(position), np.array(orientation), self._vertices(obj))
                for obj, position, orientation in self.object_poses()]

    def object_poses(self) -> list[tuple[SceneObject, tuple, tuple]]:
        """(object, position, xyzw) of every object's first visual shape in the world, as the views and
        the markers place it; the frames that never change are read once and kept on its record."""
        c = self.world.client
        poses = []
        for obj in self.scene.objects:
            if obj.visual_frames is None:
                obj.visual_frames = visual_frames(c, obj.body)
            poses.append((obj, *visual_pose(c, obj.body, obj.visual_frames)))
        return poses

    def object_geometry(self, obj: SceneObject) -> Geometry:
        """An object's first visual shape as a Geometry, read once and kept on its record (a new object,
        even under an old name or body id, is a new record)."""
        if obj.geometry is None:
            obj.geometry = Geometry.from_visual_shape(self.world.client.getVisualShapeData(obj.body)[0])
        return obj.geometry

    def _vertices(self, obj) -> np.ndarray:
        """An object's scaled visual vertices. A bin object's are read once per object type and size (they
        never change while it lives; shared between views, so read-only); a spawned object's, whatever
        URDF it came from, from its geometry each time."""
        if obj.spawned:
            return self.object_geometry(obj).vertices()
        key = (obj.urdf, obj.scale)
        vertices = self._meshes.get(key)
        if vertices is None:
            vertices = self.object_geometry(obj).vertices()
            vertices.flags.writeable = False
            self._meshes = {key: vertices}  # one object type per episode: keep only the latest
        return vertices
