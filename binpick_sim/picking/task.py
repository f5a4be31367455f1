"""The picking task of the reference simulator's gym envs: successful grabs, arm-bin collisions, reward, termination.

A grab succeeds when an object is at least a bin's height above the highest bin's rim and both
fingers touch it (optionally re-checked after a shake); the object is then removed and counted. With
`count_grabs` off nothing is counted or removed for being lifted (the goal envs carry objects anywhere).
The episode terminates on an arm-bin collision (if enabled) or when the configured number of grabs
is reached (never more than the objects the episode started with). A collision is reported whether or
not it terminates (the reference simulator's `check_termination` returns its diagnostic info either way); only one that
terminates costs `collision_reward`.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields

from ..config import TaskConfig
from ..cell.bin_picking_sim import BinPickingSim


@dataclass
class TaskStatus:
    grabs: int = 0  # successful grabs this episode
    grabbed: tuple[str, ...] = ()  # names of the objects grabbed at this update
    bin_collision: bool = False  # an arm touches a bin (reported whether or not that terminates)
    grab_limit_reached: bool = False
    removed_outside: tuple[str, ...] = ()  # objects that left the bins and were removed at this update
    objects_left: int = 0
    reward: float = 0.0  # reward earned at this update
    arm_grabs: dict = field(default_factory=dict)  # arm name -> its successful grabs this episode
    arm_bin_collisions: tuple[str, ...] = ()  # the arms that touch a bin at this update
    collision_terminates: bool = True  # task.terminate_on_bin_collision

    @property
    def terminated(self) -> bool:
        return (self.bin_collision and self.collision_terminates) or self.grab_limit_reached

    def as_dict(self) -> dict:
        # Built field by field: dataclasses.asdict deep-copies, ~50 us per env step for plain values.
        values = self.__dict__
        return {**{name: values[name] for name in STATUS_FIELDS}, "grabbed": list(self.grabbed),
                "removed_outside": list(self.removed_outside), "terminated": self.terminated,
                "arm_grabs": dict(self.arm_grabs), "arm_bin_collisions": list(self.arm_bin_collisions)}


STATUS_FIELDS = tuple(f.name for f in fields(TaskStatus))


class PickTask:
    def __init__(self, sim: BinPickingSim, config: TaskConfig):
        self.sim = sim
        self.config = config
        self._lift_height: float | None = None
        self._bins: frozenset[int] | None = None
        self.reset()

    def reset(self) -> None:
        """Call after the scene's reset: the grab limit never exceeds the objects present."""
        self.grabs = 0
        self.arm_grabs = {arm.config.name: 0 for arm in self.sim.arms}  # a grab by any arm counts, as in the reference simulator
        self.grab_limit = max(1, min(self.config.grabs_to_terminate, self.sim.scene.object_count))

    def update(self) -> TaskStatus:
        """Evaluate the rules once (an env step, a lock-step request).

        The arm's contacts are read in one PyBullet call and every object's position at most once:
        removing objects leaves the other contacts as they were, so one reading serves the grab, held
        and bin-collision checks alike; only a shake (which steps the world) reads them again.
        """
        scene = self.sim.scene
        grabbed, held, collided = [], set(), []
        for arm in self.sim.arms:  # each arm's grabs and bin contacts, in the scene file's order
            contacts = arm.contacts()
            gripped = arm.gripped_bodies(contacts)
            mine, shook = self.collect_grabs(gripped, arm) if self.config.count_grabs else ([], False)
            if shook:
                contacts = arm.contacts()
                gripped = arm.gripped_bodies(contacts)
            grabbed += mine
            self.arm_grabs[arm.config.name] += len(mine)
            if gripped:  # (bodies grabbed just now are gone from scene.objects)
                held |= {o.name for o in scene.objects if o.body in gripped}
            if self.arm_touches_a_bin(contacts, arm):
                collided.append(arm.config.name)
        self.grabs += len(grabbed)
        removed = scene.remove_objects_outside_bins(keep=held)
        collision = bool(collided)
        c = self.config
        costly = collision and c.terminate_on_bin_collision
        reward = c.step_reward + c.grab_reward * len(grabbed) + (c.collision_reward if costly else 0.0)
        return TaskStatus(grabs=self.grabs, grabbed=tuple(grabbed), bin_collision=collision,
                          grab_limit_reached=self.grabs >= self.grab_limit, removed_outside=tuple(removed),
                          objects_left=self.sim.scene.object_count, reward=reward,
                          arm_grabs=dict(self.arm_grabs), arm_bin_collisions=tuple(collided),
                          collision_terminates=c.terminate_on_bin_collision)

    def collect_grabs(self, gripped: set[int], arm=None) -> tuple[list[str], bool]:
        """Remove and return the objects `arm` (default the first) holds high enough (after a shake, if
        configured), and whether it shook (stepping the world). `gripped`: bodies both of its fingers
        touch (FrankaArm.gripped_bodies)."""
        scene, arm = self.sim.scene, arm or self.sim.arm
        height = self.lift_height()
        lifted = [o for o in scene.objects if o.body in gripped and scene.object_position(o)[2] >= height]
        shook = bool(lifted) and self.config.verify_grab_by_shaking
        if shook:
            arm.shake()
            lifted = [o for o in lifted if arm.touching(o.body)]
        for obj in lifted:
            scene.remove_object(obj.name)
        return [o.name for o in lifted], shook

    def lift_height(self) -> float:
        """Seed rule: a bin's height above the rim of the highest bin (the bins are fixed: computed once)."""
        if self._lift_height is None:
            self._lift_height = lift_height(self.sim.scene.bins)
        return self._lift_height

    def arm_touches_a_bin(self, contacts=None, arm=None) -> bool:
        """Seed `check_for_collision_with_bin(arm_id)`: a contact of `arm` (default the first) with a bin
        closer than the threshold, among `contacts` (default: read them now)."""
        contacts = (arm or self.sim.arm).contacts() if contacts is None else contacts
        if self._bins is None:  # the bins are fixed: their bodies looked up once
            self._bins = frozenset(b.body for b in self.sim.scene.bins)
        threshold = self.config.collision_threshold
        return any(point[2] in self._bins and point[8] < threshold for point in contacts)


def lift_height(bins) -> float:
    """Seed rule: the height an object must reach for a grab to count, a bin's height above the rim of
    the highest bin (also the privileged observation's, for the dense reward's shaping)."""
    return max(b.top for b in bins) + max(b.config.size[2] for b in bins)
