"""The in-process gym against its closest peer, like for like, and what the env adds to physics.

Every env here runs random actions with state observations, all in this one process, taking turns
in blocks of BLOCK steps (OVERHEAD_BLOCK for the env overhead figures), so that the machine's load
falls on each alike. Each env's stepping (its loop of `stepSimulation` calls: `World.step`,
panda-gym's `PyBullet.step`) is timed, and (but in the env overhead runs) its IK client's
`calculateInverseKinematics`, which gives, from the same steps:

- env steps/s, and the steps/s its own stepping alone would allow ("raw stepping of the same world",
  same motions): their ratio is what the env, the task and the arm leave of it;
- the env's own work per env step (everything but its stepping), and of it PyBullet's IK calls;
- physics time per `stepSimulation` call, which tells what the scene costs.

Figures:
- FrankaDelta-v0 on `config/scene_one_object.yaml` (one box, panda-gym's 0.04 s step of 20 x 2 ms)
  beside panda-gym's PandaPickAndPlace-v3 (the raw column holds panda-gym's figure; absent when it is
  not installed: `make bench` installs requirements-bench.txt), and the two envs' own work per step;
- the three envs on the default scene and on the one-object scene, against their own physics (the
  env overhead: 1 - ratio), each in runs of its own (longer turns, IK untimed: see OVERHEAD_BLOCK);
  and the delta env on both scenes against its stepping and its IK calls together (issue 33's raw
  stepping: the same physics steps and IK calls made directly on PyBullet), its IK timed;
- the floor (bench/lean_step.py): the delta env's step on the one-object scene as the same PyBullet calls
  with the least Python around them, against its own stepping and IK (what no Python env can beat);
  the env beside it (the same seed and actions: the same motions), in steps/s and in its own work
  besides stepping and IK, taking turns with it; and the same on the default scene with the cell's IK (a
  posture pass and refinements on the IK copy), beside its own stepping alone too: the line issue 54 draws
  for the env, which no env making these calls can pass;
- every ratio in rounds (ROUNDS, OVERHEAD_ROUNDS): the figure is the median of the rounds' ratios;
- what the default scene costs on top: the one-object scene with one of its features added back at a
  time (finger gear constraint, finger force sensors, arm self-collision, its IK, a random_urdfs mesh
  object instead of the box), and what the object costs (taken out), in env steps/s and us per physics
  step; and panda-gym's world in us per physics step during its episodes.
Only `step` calls are timed; an episode that ends is reset outside the clock.
"""
from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import yaml

import binpick_sim.envs  # noqa: F401  (registers the ids)
from binpick_sim.config import load_config
from binpick_sim.paths import default_config, share_dir

from .direct import scene_data
from .figures import Figure, median, per_round
from .lean_step import LeanDelta

# CPU time of this process: everything here runs on its one thread, and on a shared machine wall
# time would also count the time other processes held the core.
clock = time.process_time
BLOCK = 10  # env steps per turn
TURNS = 4  # turns per round: each round gives every ratio once, and the figures are the rounds' medians
ROUNDS = 9  # (issue 33: the spread beside each median) so STEPS env steps per env
STEPS = ROUNDS * TURNS * BLOCK
# The env overhead figures: each env as an RL user runs it, its IK untimed (the timer's cost would be
# booked as the env's own work) and in turns long enough that what each turn finds cold (some twenty
# worlds take turns here) costs its steps little. Both are measured: the one-object delta env's own work
# in these turns beside its own work in the like-for-like turns.
OVERHEAD_BLOCK = 50
OVERHEAD_ROUNDS = 9  # one turn each
OVERHEAD_STEPS = OVERHEAD_ROUNDS * OVERHEAD_BLOCK
ONE_OBJECT = share_dir() / "config" / "scene_one_object.yaml"
PEER_ID = "PandaPickAndPlace-v3"
PEER_VERSION = "3.0.7"
ENVS = ("FrankaDelta-v0", "FrankaPosition-v0", "FrankaVelocity-v0")
GROUP = "like for like"


def peer_available() -> bool:
    try:
        import panda_gym  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass
class Timed:
    """One env taking its turns: the time its `step` calls and its physics took.

    The physics is timed around the env's own stepping call (`World.step(n)`, panda-gym's
    `PyBullet.step()`: a Python loop of `stepSimulation` calls), once per env step: a clock read around
    each of the 20 `stepSimulation` calls would itself cost the env step ~30 us, booked as the env's.
    """

    env: gym.Env
    stepper: object  # the object whose `step` steps the physics (World, or panda-gym's PyBullet)
    substeps: object  # stepper's `step` arguments -> physics steps it makes
    ik_clients: tuple = ()  # those whose calculateInverseKinematics is timed (ours: the world's and the IK copy's)
    seed: int = 0
    # those whose getCameraImage is timed (an image env's own renders: bench.camera_in_process)
    render_clients: tuple = ()
    clock: object = clock  # CPU time; wall time where a renderer's threads or a GPU do part of the work
    steps: int = 0
    step_time: float = 0.0
    physics_time: float = 0.0
    physics_calls: int = 0
    ik_time: float = 0.0
    render_time: float = 0.0
    # (steps, step_time, physics_time, physics_calls, ik_time, render_time) at the end of each round (end_round)
    marks: list = None

    def __post_init__(self):
        self.env.reset(seed=self.seed)
        self.env.action_space.seed(self.seed)
        step = self.stepper.step

        def timed_step(*args, **kwargs):
            start = self.clock()
            try:
                return step(*args, **kwargs)
            finally:
                self.physics_time += self.clock() - start
                self.physics_calls += self.substeps(*args, **kwargs)

        self.stepper.step = timed_step  # both envs look it up on every call
        for client in self.ik_clients:
            client.calculateInverseKinematics = self._timed(client.calculateInverseKinematics, "ik_time")
        for client in self.render_clients:
            client.getCameraImage = self._timed(client.getCameraImage, "render_time")
        self.run(1)  # warm up
        self.steps = self.physics_calls = 0
        self.step_time = self.physics_time = self.ik_time = self.render_time = 0.0
        self.marks = [self._totals()]

    def _totals(self) -> tuple:
        return self.steps, self.step_time, self.physics_time, self.physics_calls, self.ik_time, self.render_time

    def end_round(self) -> None:
        """Close a round: its figures are what happened since the previous one (`rounds`)."""
        self.marks.append(self._totals())

    def rounds(self) -> list["Timed"]:
        """Each round's figures, as a Timed of that round's steps alone (read its properties)."""
        out = []
        for before, after in zip(self.marks, self.marks[1:]):
            steps, step_time, physics_time, calls, ik_time, render_time = (b - a for a, b in zip(before, after))
            out.append(Timed.__new__(Timed))
            out[-1].__dict__.update(steps=steps, step_time=step_time, physics_time=physics_time,
                                    physics_calls=calls, ik_time=ik_time, render_time=render_time)
        return out

    def per_round(self, figure: str, reference: "Timed | None" = None, reference_figure: str | None = None) -> list:
        """The ratio, round by round, of this env's `figure` (a property name) to the reference env's
        `reference_figure` (default: the same) in the same round; without a reference, to this env's own
        `reference_figure` (e.g. rate against physics_rate)."""
        reference = reference or self
        return per_round([getattr(r, figure) for r in self.rounds()],
                         [getattr(r, reference_figure or figure) for r in reference.rounds()])

    def _timed(self, call, total: str):
        """`call` with its time added to the attribute `total` (ik_time, render_time)."""
        def timed(*args, **kwargs):
            start = self.clock()
            try:
                return call(*args, **kwargs)
            finally:
                setattr(self, total, getattr(self, total) + self.clock() - start)

        return timed

    def run(self, steps: int) -> None:
        for _ in range(steps):
            action = self.env.action_space.sample()
            start = self.clock()
            _, _, terminated, truncated, _ = self.env.step(action)
            self.step_time += self.clock() - start
            self.steps += 1
            if terminated or truncated:
                timed = self.physics_time, self.physics_calls, self.ik_time, self.render_time
                self.env.reset()
                # resets' settling is not stepping, nor their first observation an env step's render
                self.physics_time, self.physics_calls, self.ik_time, self.render_time = timed

    @property
    def rate(self) -> float:
        return self.steps / self.step_time

    @property
    def physics_rate(self) -> float:
        """Env steps/s if the env did nothing but its stepping (its loop of stepSimulation calls)."""
        return self.steps / self.physics_time

    @property
    def physics_us(self) -> float:
        return 1e6 * self.physics_time / self.physics_calls

    @property
    def physics_ik_rate(self) -> float:
        """Env steps/s if the env did nothing but its stepping and its IK calls: the raw stepping as issue
        33 defines it (the same physics steps, the same IK calls made directly on PyBullet)."""
        return self.steps / (self.physics_time + self.ik_time)

    @property
    def physics_render_rate(self) -> float:
        """Env steps/s if the env did nothing but its stepping and its getCameraImage calls (an image env's raw
        reference: the same physics steps and the same renders made directly on PyBullet)."""
        return self.steps / (self.physics_time + self.render_time)

    @property
    def own_us(self) -> float:
        """The env's own work per env step: everything its `step` did but its stepping."""
        return 1e6 * (self.step_time - self.physics_time) / self.steps

    @property
    def ik_us(self) -> float:
        return 1e6 * self.ik_time / self.steps

    @property
    def work_us(self) -> float:
        """The env's own work per env step besides its stepping and its IK calls."""
        return self.own_us - self.ik_us


def binpick(name: str, scene, time_ik: bool = True) -> Timed:
    env = gym.make(f"binpick_sim/{name}", backend="direct", observation="state", config_file=scene)
    env.reset(seed=0)
    sim = env.unwrapped.backend.sim
    return Timed(env, sim.world, lambda n=1: n, (sim.world.client, sim.arm.solver.client) if time_ik else ())


LEAN = "the floor, one-object scene"
LEAN_DEFAULT = "the floor, default scene"  # the cell's IK on its copy: issue 54's line against its own stepping


def lean(scene, time_ik: bool = True) -> Timed:
    step = LeanDelta(scene)
    return Timed(step, step.stepper, lambda n=1: n, (step.client, step.copy) if time_ik else ())


def default_floor(overheads: dict[str, Timed]) -> list[Figure]:
    """The floor on the default scene (the cell's IK: a posture pass and refinements on the IK copy) against its
    own stepping alone, the line issue 54 draws for the env; and the env beside it, the same motions."""
    floor, env = overheads[LEAN_DEFAULT], overheads["FrankaDelta-v0, default scene"]
    floor_ik, env_ik = overheads[f"{LEAN_DEFAULT}, IK timed"], overheads["FrankaDelta-v0, default scene, IK timed"]
    return [
        Figure(GROUP, "the floor on the default scene (bench/lean_step.py with the cell's IK on its copy) against its "
               "own stepping alone", floor.rate, "steps/s", floor.physics_rate, f"raw: its own stepping, "
               f"{OVERHEAD_BLOCK}-step turns, IK untimed", floor.per_round("rate", None, "physics_rate")),
        Figure(GROUP, "the same floor against its stepping and IK calls", floor_ik.rate, "steps/s",
               floor_ik.physics_ik_rate, "raw: its own stepping and IK calls, made directly on PyBullet",
               floor_ik.per_round("rate", None, "physics_ik_rate")),
        Figure(GROUP, "FrankaDelta-v0 direct, state, default scene, against the floor", env.rate, "steps/s",
               floor.rate, "raw: the floor's steps/s, the same seed and actions, so the same motions; IK untimed",
               env.per_round("rate", floor)),
        Figure(GROUP, "  own work per env step besides its stepping and IK, default scene", env_ik.work_us, "us",
               floor_ik.work_us, "raw: the floor's", env_ik.per_round("work_us", floor_ik))]


def peer() -> Timed:
    import panda_gym  # noqa: F401  (registers the ids)

    env = gym.make(PEER_ID)
    sim = env.unwrapped.sim
    return Timed(env, sim, lambda: sim.n_substeps, (sim.physics_client,))  # panda-gym solves IK on the live arm


# What the default scene has that the one-object scene (like panda-gym's) leaves out, each added back
# on its own, then the arm's four together (the one-object scene with scene.yaml's arm); the default
# scene's kind of object (a 1-3 cm random_urdfs mesh of ~180 vertices) in place of the box; and the
# object taken out.
ARM = {"arm.finger_gear": True, "arm.finger_force_sensors": True, "arm.self_collision": True}
IK = {"arm.ik_posture": True, "arm.ik_iterations": 10, "arm.ik_rounds": 6}
VARIANTS = {
    "+ finger gear constraint": {"arm.finger_gear": True},
    "+ finger force sensors": {"arm.finger_force_sensors": True},
    "+ arm self-collision": {"arm.self_collision": True},
    "+ scene.yaml's IK (posture pass, then refined to 0.1 mm)": IK,
    "+ all four (scene.yaml's arm)": {**ARM, **IK},
    "+ a random_urdfs mesh object instead of the box": {"scene.object_set": "train"},
    "- its object (no object at all)": {"scene.pick_bin.min_objects": 0, "scene.pick_bin.max_objects": 0},
}


def variant_scene(folder: Path, changes: dict) -> Path:
    """The one-object scene with `changes` (dotted keys) applied, as a file in `folder`."""
    path = folder / f"{len(list(folder.iterdir()))}.yaml"
    path.write_text(yaml.safe_dump(scene_data(changes, ONE_OBJECT)))
    return path


def measure() -> list[Figure]:
    scenes = {"default scene": default_config(), "one-object scene": ONE_OBJECT}
    runs: dict[str, Timed] = {}  # like for like, its IK timed, and the variants
    if peer_available():
        runs["peer"] = peer()
    runs["like"] = like = binpick("FrankaDelta-v0", ONE_OBJECT)
    default_delta = runs["default"] = binpick("FrankaDelta-v0", default_config())
    overheads: dict[str, Timed] = {}  # every env on both scenes as a user runs it (OVERHEAD_BLOCK)
    for scene, path in scenes.items():
        for name in ENVS:
            overheads[f"{name}, {scene}"] = binpick(name, path, time_ik=False)
        # the delta env once more with its IK calls timed, so that they count as raw work (issue 33's
        # definition; the position and velocity envs make none)
        overheads[f"FrankaDelta-v0, {scene}, IK timed"] = binpick("FrankaDelta-v0", path)
    overheads[LEAN] = lean(ONE_OBJECT)  # the floor: the same PyBullet calls, the least Python (bench/lean_step.py)
    overheads[LEAN_DEFAULT] = lean(default_config(), time_ik=False)  # beside its own stepping, as the env is
    overheads[f"{LEAN_DEFAULT}, IK timed"] = lean(default_config())
    with tempfile.TemporaryDirectory() as folder:
        for variant, changes in VARIANTS.items():
            runs[variant] = binpick("FrankaDelta-v0", variant_scene(Path(folder), changes))
    try:
        for _ in range(ROUNDS):
            for _ in range(TURNS):
                for run in runs.values():
                    run.run(BLOCK)
            for run in runs.values():
                run.end_round()
        for _ in range(OVERHEAD_ROUNDS):
            for run in overheads.values():
                run.run(OVERHEAD_BLOCK)
                run.end_round()
        at_rest = worlds_at_rest(like, runs.get("peer"))
    finally:
        for run in [*runs.values(), *overheads.values()]:
            run.env.close()

    steps = {scene: load_config(path).task.steps_per_action for scene, path in scenes.items()}
    mine = f"{steps['one-object scene']} x {load_config(ONE_OBJECT).simulation.timestep * 1000:g} ms steps"
    figures = []
    if "peer" in runs:
        p = runs["peer"]
        figures += [
            Figure(GROUP, f"FrankaDelta-v0 direct, state, one-object scene ({mine})", like.rate, "steps/s", p.rate,
                   f"raw: panda-gym {PEER_VERSION} {PEER_ID}, state, 20 x 2 ms steps, same run",
                   like.per_round("rate", p)),
            Figure(GROUP, f"panda-gym {PEER_ID}, state", p.rate, "steps/s", p.physics_rate,
                   "raw: its own stepping, 20 stepSimulation calls", p.per_round("rate", None, "physics_rate")),
            Figure(GROUP, "FrankaDelta-v0 one-object scene, own work per env step (all but its stepping)",
                   like.own_us, "us", p.own_us, f"raw: panda-gym {PEER_ID}'s", like.per_round("own_us", p)),
            Figure(GROUP, "  of it PyBullet's IK calls", like.ik_us, "us", p.ik_us, f"raw: panda-gym {PEER_ID}'s",
                   like.per_round("ik_us", p)),
        ]
    else:
        figures.append(Figure(GROUP, f"FrankaDelta-v0 direct, state, one-object scene ({mine})", like.rate, "steps/s",
                              note="panda-gym not installed: pip install -r requirements-bench.txt"))
    for scene in scenes:
        for name in ENVS:
            run = overheads[f"{name}, {scene}"]
            figures.append(Figure(GROUP, f"{name} direct, state, {scene}", run.rate, "steps/s", run.physics_rate,
                                  f"raw: its own stepping, {steps[scene]} stepSimulation calls; "
                                  f"turns of {OVERHEAD_BLOCK} steps, IK untimed",
                                  run.per_round("rate", None, "physics_rate")))
    for scene in scenes:
        run = overheads[f"FrankaDelta-v0, {scene}, IK timed"]
        figures.append(Figure(GROUP, f"FrankaDelta-v0 direct, state, {scene}, raw with IK", run.rate, "steps/s",
                              run.physics_ik_rate, f"raw: its own stepping and its IK calls, made directly on "
                              f"PyBullet; turns of {OVERHEAD_BLOCK} steps, IK timed (the timer booked as the env's)",
                              run.per_round("rate", None, "physics_ik_rate")))
    floor, timed = overheads[LEAN], overheads["FrankaDelta-v0, one-object scene, IK timed"]
    figures += [
        Figure(GROUP, "the floor: a minimal delta step on raw PyBullet, one-object scene (bench/lean_step.py: the "
               "env's PyBullet calls and a Gymnasium observation, the least Python around them)", floor.rate,
               "steps/s", floor.physics_ik_rate, "raw: its own stepping and IK calls, made directly on PyBullet; "
               f"turns of {OVERHEAD_BLOCK} steps", floor.per_round("rate", None, "physics_ik_rate")),
        Figure(GROUP, "FrankaDelta-v0 direct, state, one-object scene, against the floor", timed.rate, "steps/s",
               floor.rate, "raw: the floor's steps/s, the same seed and actions, so the same motions; taking turns",
               timed.per_round("rate", floor)),
        Figure(GROUP, "  own work per env step besides its stepping and IK", timed.work_us, "us", floor.work_us,
               "raw: the floor's", timed.per_round("work_us", floor))]
    figures += default_floor(overheads)
    steady = overheads["FrankaDelta-v0, one-object scene"]
    figures.append(Figure(GROUP, f"FrankaDelta-v0 one-object scene, own work per env step, in turns of "
                          f"{OVERHEAD_BLOCK} steps, IK untimed", steady.own_us, "us", like.own_us,
                          f"raw: the same env's in turns of {BLOCK} steps, IK timed (the figures above)"))
    figures += [Figure(GROUP, "FrankaDelta-v0 default scene, own work per env step (all but its stepping)",
                       default_delta.own_us, "us"),
                Figure(GROUP, "  of it PyBullet's IK calls", default_delta.ik_us, "us")]
    figures.append(Figure(GROUP, "one-object world, during FrankaDelta-v0 episodes", like.physics_us,
                          "us/physics step"))
    for variant in VARIANTS:
        run = runs[variant]
        figures.append(Figure(GROUP, f"FrankaDelta-v0, one-object scene {variant}", run.rate, "steps/s", like.rate,
                              "raw: the one-object scene", run.per_round("rate", like)))
        figures.append(Figure(GROUP, f"one-object world {variant}", run.physics_us, "us/physics step",
                              like.physics_us, "raw: the one-object world", run.per_round("physics_us", like)))
    if "peer" in runs:
        figures.append(Figure(GROUP, f"panda-gym {PEER_ID} world, during its episodes", runs["peer"].physics_us,
                              "us/physics step", like.physics_us, "raw: the one-object world",
                              runs["peer"].per_round("physics_us", like)))
    figures.append(Figure(GROUP, "one-object world at rest (arm home, object settled)", median(at_rest[0]),
                          "us/physics step"))
    if at_rest[1] is not None:
        figures.append(Figure(GROUP, f"panda-gym {PEER_ID} world at rest (after a reset)", median(at_rest[1]),
                              "us/physics step", median(at_rest[0]), "raw: the one-object world at rest",
                              per_round(at_rest[1], at_rest[0])))
    return figures


REST_STEPS = 500  # physics steps per turn when timing the worlds at rest


def worlds_at_rest(like: Timed, peer: Timed | None) -> tuple[list[float], list[float] | None]:
    """us per `stepSimulation` of the like-for-like world and panda-gym's with nothing commanded after a
    reset (the scene's own cost, whatever the random actions make the arms touch), in alternating turns;
    5 rounds each. The envs' steppers are timed wrappers by now: their clients are stepped directly."""
    clients = [like.env.unwrapped.backend.sim.world.client]
    if peer is not None:
        clients.append(peer.env.unwrapped.sim.physics_client)
    for run in (like, peer):
        if run is not None:
            kept = run.physics_time, run.physics_calls, run.ik_time
            run.env.reset(seed=0)  # (its settling is no part of the episodes' figures)
            run.physics_time, run.physics_calls, run.ik_time = kept
    times: list[list[float]] = [[] for _ in clients]
    for _ in range(5):
        for client, spent in zip(clients, times):
            start = clock()
            for _ in range(REST_STEPS):
                client.stepSimulation()
            spent.append(1e6 * (clock() - start) / REST_STEPS)
    return times[0], (times[1] if peer is not None else None)


if __name__ == "__main__":
    for figure in measure():
        print(figure.as_dict())
