"""Questions about the scene (PyCRAM's queries): stable, contact, visible, occluding, reachable,
blocking, supporting — answered without disturbing the live world.

The live world is only ever read: poses and closest points are pure queries. Anything that has to move
something (a roll-out, putting the arm at an IK pose) happens in a private copy of the cell, rebuilt
from the live state for each query, as PyCRAM copies its BulletWorld. (PyBullet's saveState/restoreState
is not an option: a restored world drifts from the one that was never touched by centimetres within
seconds.) `visible` / `occluding` render, and with the scene file's renderer, like every camera image:
that is `egl` often enough, and PyBullet's EGL plugin allows one client per process, which the live
world holds. So their masks are drawn in a render worker of the reasoner's own (another process, started
at the first such query), from a mirror of the live state (cell/render_process/worker.py, visibility.py);
the live world is only captured, on the physics thread, and the drawing need not stop it.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np

from .cell.arm.panda import ROBOT_NAME
from .cell.bin_picking_sim import BinPickingSim
from .cell.render_process.worker import RenderWorker, VisibilityAnswer, VisibilityRequest, capture
from .cell.rendering.renderers import offscreen
from .cell.vision.visibility import View
from .config import with_changes

ENVIRONMENT, OBJECT, ROBOT = "environment", "object", "robot"
GROUND = "ground"
CONTACT_DISTANCE = 0.0005  # m: closer than this counts as touching (resting contact sits at about 0)
STABLE_SECONDS = 2.0  # reference: simulate 2 s...
STABLE_DECIMALS = 3  # ...and compare positions rounded to 1 mm
SUPPORT_HEIGHT = 0.001  # m the upper base must be above the lower (equal within settling noise is not above)
TOP_DOWN = (1.0, 0.0, 0.0, 0.0)  # xyzw: the gripper pointing at the floor
VISIBILITY_TIMEOUT = 60.0  # s a visible/occluding answer may take the render worker (its start included)


@dataclass(frozen=True)
class CameraView:
    """Where to look from: a position, a rotation (3x3, world) and the frame's forward axis."""

    position: np.ndarray
    rotation: np.ndarray
    front: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))  # optical frames look along z


class Reasoner:
    def __init__(self, sim: BinPickingSim):
        self.sim = sim
        # ground, bins and arm; objects are mirrored per query. It renders nothing (the render worker does),
        # and PyBullet's EGL plugin allows one client per process: TinyRenderer, whatever the live world uses
        self.copy = BinPickingSim(with_changes(sim.config, simulation={"renderer": "tiny", "gui": False}))
        self.copy_objects: dict[str, int] = {}
        self.worker: RenderWorker | None = None  # draws visible/occluding's masks; started at the first
        self._worker_lock = threading.Lock()  # one request at a time, whichever thread asks
        self.visibility_renderer = ""  # what drew the last visible/occluding answer (Renderer.describe)

    def close(self) -> None:
        worker, self.worker = self.worker, None  # not waiting for a query in flight: it hears the worker go
        if worker is not None:
            worker.close()
        self.copy.close()

    # --- names and types ----------------------------------------------------------------------
    def bodies(self, sim: BinPickingSim | None = None) -> dict[str, tuple[int, str]]:
        """name -> (body id, type) for every body of the live world (or of the copy)."""
        sim = sim or self.sim
        named = {name: (body, ENVIRONMENT) for name, body in sim.scene.environment_bodies.items()}
        named.update({name: (arm.body, ROBOT) for arm, name in zip(sim.arms, self.arm_names())})
        if sim is self.copy:
            named.update({name: (body, OBJECT) for name, body in self.copy_objects.items()})
        else:
            named.update({o.name: (o.body, OBJECT) for o in sim.scene.objects})
        return named

    def arm_names(self) -> list[str]:
        """What the answers call each arm (the scene's order): `panda`, or with several each by its own
        name (the reference simulator's `robots`)."""
        return [arm.config.name for arm in self.sim.arms] if self.sim.config.several_arms else [ROBOT_NAME]

    def types(self) -> dict[str, str]:
        return {name: kind for name, (_, kind) in self.bodies().items()}

    def objects(self, names: list[str] | None = None) -> list[str]:
        """The live objects' names, or `names` checked against them (KeyError naming the unknown ones)."""
        present = [o.name for o in self.sim.scene.objects]
        if not names:
            return present
        unknown = [n for n in names if n not in present]
        if unknown:
            raise KeyError(f"unknown object(s) {', '.join(unknown)} (objects now: {', '.join(present) or 'none'})")
        return list(names)

    # --- the copy -----------------------------------------------------------------------------
    def mirror(self) -> None:
        """Make the copy match the live world: object poses and velocities, arm joints and motors
        (torque-controlled joints held where they are)."""
        live, copy = self.sim.world.client, self.copy.world.client
        for body in self.copy_objects.values():
            copy.removeBody(body)
        self.copy_objects = {}
        for obj in self.sim.scene.objects:
            body = self._load_at(copy, obj)
            copy.changeDynamics(body, -1, mass=live.getDynamicsInfo(obj.body, -1)[0])
            copy.resetBaseVelocity(body, *live.getBaseVelocity(obj.body))
            self.copy_objects[obj.name] = body
        for arm, twin in zip(self.sim.arms, self.copy.arms):
            positions = []
            for joint, (position, velocity, *_) in zip(arm.joints, live.getJointStates(arm.body, arm.joints)):
                copy.resetJointState(twin.body, joint, position, velocity)
                positions.append(position)
            # Joints a torque controller (or the robot interface) drives have stale motor targets: the copy
            # holds them where they are, as a controller does that is not told to move (it is not copied).
            torqued = ~np.isnan(arm.torque_commands)
            twin.command_motors(np.where(torqued, positions, arm.position_targets),
                                np.where(torqued, np.nan, arm.velocity_targets))

    # --- the queries --------------------------------------------------------------------------
    def stable(self, names: list[str] | None = None) -> dict[str, bool]:
        """Seed: simulate 2 s (one roll-out for all objects) and compare positions rounded to 1 mm."""
        names = self.objects(names)
        self.mirror()
        copy = self.copy.world.client
        before = {n: np.round(copy.getBasePositionAndOrientation(self.copy_objects[n])[0], STABLE_DECIMALS)
                  for n in names}
        for _ in range(round(STABLE_SECONDS / self.copy.world.timestep)):
            copy.stepSimulation()
        return {n: bool(np.array_equal(
            before[n], np.round(copy.getBasePositionAndOrientation(self.copy_objects[n])[0], STABLE_DECIMALS)))
            for n in names}

    def contacts(self) -> list[tuple[str, str]]:
        """Every pair of bodies closer than CONTACT_DISTANCE (a pure query of the live world)."""
        c = self.sim.world.client
        named = list(self.bodies().items())
        pairs = []
        for i, (a, (body_a, _)) in enumerate(named):
            for b, (body_b, _) in named[i + 1:]:
                if c.getClosestPoints(body_a, body_b, CONTACT_DISTANCE):
                    pairs.append((a, b))
        return pairs

    def supporting(self) -> list[tuple[str, str]]:
        """Seed: (a, b) where b is above a and they touch: b's base more than SUPPORT_HEIGHT higher
        than a's (bodies side by side support nothing). No arm supports anything or is supported (every
        arm, however many the scene has: an arm touches objects from the side or above, and stands on
        its own base); the ground is below everything (a plane: its base height says nothing), so it
        supports and is never supported."""
        c = self.sim.world.client
        bodies = self.bodies()
        arms = {name for name, (_, kind) in bodies.items() if kind == ROBOT}

        def height(name):
            return -np.inf if name == GROUND else c.getBasePositionAndOrientation(bodies[name][0])[0][2]
        found = []
        for a, b in self.contacts():
            if a in arms or b in arms:
                continue
            lower, upper = (a, b) if height(a) < height(b) else (b, a)
            if height(upper) - height(lower) > SUPPORT_HEIGHT:
                found.append((lower, upper))
        return found

    def visibility(self, view: CameraView, width: int, height: int,
                   names: list[str] | None = None) -> dict[str, dict]:
        """Seed visible/occluding: per object, its pixels in the full scene over its pixels alone, and
        the bodies that cover its own pixels. An object with no pixels alone is not visible. Drawn with
        the scene file's renderer (`visibility_renderer` then names it), in the render worker."""
        return self.see(self.visibility_request(view, width, height, names)).objects

    def visibility_request(self, view: CameraView, width: int, height: int,
                           names: list[str] | None = None) -> VisibilityRequest:
        """What `see` needs, captured from the live world (the physics thread; well under a millisecond)."""
        names = self.objects(names)
        camera = self.sim.camera.config
        projection = self.sim.world.client.computeProjectionMatrixFOV(camera.fov_deg, width / height,
                                                                       camera.near, camera.far)
        return VisibilityRequest(capture(self.sim, self.sim.camera, segmentation=False),
                                 View(tuple(self._view_matrix(view)), tuple(projection), width, height),
                                 tuple(names), tuple(self.arm_names()))

    def see(self, request: VisibilityRequest, timeout: float = VISIBILITY_TIMEOUT) -> VisibilityAnswer:
        """The masks of `request` drawn and compared by the render worker (any thread; the physics may go on).
        RuntimeError if the worker fails, TimeoutError if it takes longer than `timeout`; either way the
        next call starts a new one."""
        with self._worker_lock:
            worker = self.worker
            if worker is None:
                worker = self.worker = RenderWorker(self.sim.config, offscreen(self.sim.world.renderer.name))
            worker.request(request)
            try:
                answer = worker.wait(timeout)
                if answer is None:
                    raise TimeoutError(f"visible/occluding: the render worker took over {timeout:g} s")
            except (RuntimeError, TimeoutError, OSError):  # OSError: closed under the query (shutdown)
                worker.close()
                if self.worker is worker:
                    self.worker = None
                raise
        self.visibility_renderer = answer.renderer
        return answer

    def reachable(self, targets: dict[str, np.ndarray], link: str, threshold: float,
                  top_down: bool, arm: str | None = None) -> dict[str, dict]:
        """Seed: IK for each target on a copy of the arm; reachable if `link` ends within `threshold`.
        `arm`: the arm's name (several arms; default the first)."""
        arm = self.sim.arm_named(arm) if arm else self.sim.arm
        if link not in arm.link_index:
            raise KeyError(f"unknown link {link!r} (links: {', '.join(sorted(arm.link_index))})")
        start = arm.joint_states()[0]
        answers = {}
        for name, target in targets.items():
            q, error = arm.solver.solve(start, target, TOP_DOWN if top_down else None, arm.link_index[link])
            answers[name] = {"reachable": error < threshold, "distance": error, "joints": q.tolist()}
        return answers

    def blocking(self, link: str, top_down: bool, names: list[str] | None = None,
                 arm: str | None = None) -> dict[str, list[str]]:
        """Seed: put a copy of the arm (`arm`, by name; default the first) at the IK pose for each object;
        everything it then touches, other than the object itself, blocks (environment bodies and the
        other arms included: filter them by type)."""
        names = self.objects(names)
        targets = {n: self.object_position(n) for n in names}
        poses = self.reachable(targets, link, np.inf, top_down, arm)
        self.mirror()
        copy, twin = self.copy.world.client, self.copy.arm_named(arm) if arm else self.copy.arm
        copy_bodies = self.bodies(self.copy)
        answers = {}
        for name in names:
            for joint, value in zip(twin.joints, poses[name]["joints"]):
                copy.resetJointState(twin.body, joint, value)
            answers[name] = sorted(other for other, (body, kind) in copy_bodies.items()
                                   if body != twin.body and other != name
                                   and copy.getClosestPoints(twin.body, body, CONTACT_DISTANCE))
        return answers

    # --- helpers ------------------------------------------------------------------------------
    def _load_at(self, client, obj) -> int:
        """`obj` loaded into another world where it is in the live one. PyBullet's base pose is the
        centre of mass's, while loadURDF places the link frame: loading at the base pose would put a
        body with an inertial offset (pybullet_data's duck: 2 cm) that far off; resetting the base
        pose after loading puts the centre of mass where it is live. Its collision shapes are the live ones
        (`collision_urdf`: a many-part type's merged parts)."""
        body = client.loadURDF(obj.collision_urdf, globalScaling=obj.scale)
        client.resetBasePositionAndOrientation(body, *self.sim.world.client.getBasePositionAndOrientation(obj.body))
        return body

    def object_position(self, name: str) -> np.ndarray:
        return self.sim.scene.object_position(self.sim.scene.object_named(name))

    def default_view(self) -> CameraView:
        position, rotation = self.sim.camera.optical_pose()
        return CameraView(np.asarray(position), np.asarray(rotation))

    def _view_matrix(self, view: CameraView) -> list[float]:
        forward = view.rotation @ (view.front / np.linalg.norm(view.front))
        up = view.rotation @ np.array([0.0, -1.0, 0.0])  # the optical frame's "up" is -y
        if abs(np.dot(up, forward)) > 0.99:
            up = view.rotation @ np.array([0.0, 0.0, 1.0])
        return self.sim.world.client.computeViewMatrix(view.position.tolist(), (view.position + forward).tolist(),
                                                        up.tolist())
