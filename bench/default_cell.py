"""The default cell as an RL user steps it, beside the peer they would pick instead (issue 54).

Everything here runs in this one process and thread, timed in its CPU time (`time.process_time`): on a
shared machine wall time would also count the time other processes held the core. Rows that take turns do
so round by round (ROUNDS), each figure the median of its rounds' ratios with their min-max beside it.

- FrankaDelta-v0 with state observations on the **default scene** (config/scene.yaml) beside panda-gym's
  PandaPickAndPlace-v3: a round is one EPISODE_STEPS-step episode of each, random actions, its seeded reset
  included. Env steps/s, and simulated seconds per second (an env step is 24 x 1/240 s = 0.1 s here,
  0.04 s there). Beside them the env step against its own physics (the same episode's `World.step` calls
  timed: what the env, task and arm leave of their stepping) and the physics floor: raw `stepSimulation`
  of the default scene's settled pile, and of the cell with no objects.
- How cost grows with the work: env steps/s (resets apart) with 0, 1, 5, 10 and 20 objects in the pick bin,
  against the empty bin's, in the same rounds (each round's episode the best of GROWTH_REPEATS); and its
  floor: what a sleeping object of the default scene's kind (a random_urdfs mesh) costs a bare PyBullet
  step, beside a box.
- Resets: a seeded reset to a new layout (a new seed each time), and a reset to the same layout (the same
  seed again), median and p95, the medians beside their floors (the cell's rebuild; a new layout's settle).
- Starts (wall time, other processes involved): `gym.make(..., backend="ros")` to the first observation and
  `close()`; `sim` started to its first `/clock`; Gymnasium's `check_env` over ROS against the direct backend;
  `rollouts --episodes 10 --workers 1` against the time its episodes' own stepping takes in this process.
"""
from __future__ import annotations

import dataclasses
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import gymnasium as gym

import binpick_sim.envs  # noqa: F401  (registers the ids)
from binpick_sim.config import load_config, with_changes
from binpick_sim.paths import default_config

from .figures import Figure, median, per_round, percentile

GROUP = "default cell"
clock = time.process_time
EPISODE_STEPS = 200
ROUNDS = 5
OBJECT_COUNTS = (0, 1, 5, 10, 20)
GROWTH_STEPS = 100  # env steps per env per round of the growth rows
# Each round's episode runs this many times per env, the envs taking turns, and its best rate counts: the same
# seed and actions give the same motions each time, so the best is the work without the host's interruptions.
# (With one run a round, the one-object row carried a whole round's noise on its one object: +2.6 to +4.0 %
# an object in single runs of 2026-12-04, +1.2 % as the median of ten seeds' best of seven.)
GROWTH_REPEATS = 3
RESETS = 20
PEER_ID = "PandaPickAndPlace-v3"
ROLLOUT_EPISODES = 10
CHECK_ROUNDS = 3


class Episodes:
    """One env taking its turns: whole seeded episodes (reset included), its stepping timed apart."""

    def __init__(self, env, world=None):
        self.env, self.world = env, world
        self.spent = {"physics": 0.0}
        if world is not None:
            timing(world, "step", self.spent, "physics")

    def episode(self, seed: int, steps: int = EPISODE_STEPS) -> tuple[float, float, float]:
        """(env steps/s over the episode with its reset, env steps/s of its steps alone, env steps/s its
        stepping alone would allow: the `World.step` calls of those steps)."""
        self.env.action_space.seed(seed)
        # The random policy's actions, drawn before the clock starts: a Box's sample() costs ~20 us, which is
        # the policy's time, not the env's (like_for_like draws them outside its timing too).
        actions = [self.env.action_space.sample() for _ in range(steps)]
        time0 = clock()
        self.env.reset(seed=seed)
        taken, steps_time, physics0 = 0, clock(), self.spent["physics"]
        for action in actions:
            _, _, terminated, truncated, _ = self.env.step(action)
            taken += 1
            if terminated or truncated:
                break
        end = clock()
        stepping = self.spent["physics"] - physics0
        return taken / (end - time0), taken / (end - steps_time), (taken / stepping if stepping else float("nan"))


def ours(config_file: Path | None = None):
    """FrankaDelta-v0, state observations, direct backend; its world (made by a first reset) timed."""
    env = gym.make("binpick_sim/FrankaDelta-v0", observation="state", max_episode_steps=EPISODE_STEPS,
                   **({"config_file": str(config_file)} if config_file else {}))
    env.reset(seed=0)
    return Episodes(env, env.unwrapped._backend.sim.world)


def env_step_seconds(env) -> float:
    config = env.unwrapped.config
    return config.task.steps_per_action * config.simulation.timestep


def peer():
    try:
        import panda_gym  # noqa: F401  (registers its ids)
    except ImportError:
        return None
    env = gym.make(PEER_ID, max_episode_steps=EPISODE_STEPS)
    env.reset(seed=0)
    return Episodes(env)


def beside_the_peer() -> list[Figure]:
    mine, theirs = ours(), peer()
    mine_rates, step_rates, physics_rates, peer_rates = [], [], [], []
    for k in range(ROUNDS):
        rate, steps, physics = mine.episode(1000 + k)
        mine_rates.append(rate)
        step_rates.append(steps)
        physics_rates.append(physics)
        if theirs is not None:
            peer_rates.append(theirs.episode(1000 + k)[0])
    ours_seconds = env_step_seconds(mine.env)
    note = f"random actions, {EPISODE_STEPS}-step episodes, seeded resets included"
    figures = []
    if theirs is not None:
        figures += [
            Figure(GROUP, f"FrankaDelta-v0 state, default scene, beside {PEER_ID} ({note})", median(mine_rates),
                   "env steps/s", median(peer_rates), ratios=per_round(mine_rates, peer_rates)),
            Figure(GROUP, f"the same, in simulated seconds per second ({ours_seconds:g} s an env step against "
                   f"{PEER_ID}'s 0.04 s)", median(mine_rates) * ours_seconds, "sim s/s", median(peer_rates) * 0.04,
                   ratios=[r * ours_seconds / 0.04 for r in per_round(mine_rates, peer_rates)])]
    figures.append(Figure(GROUP, "FrankaDelta-v0 state, default scene: its env steps against their own stepping (the "
                          "same steps' World.step calls alone; resets apart)", median(step_rates), "env steps/s",
                          median(physics_rates), ratios=per_round(step_rates, physics_rates)))
    mine.env.close()
    if theirs is not None:
        theirs.env.close()
    return figures


def physics_floor() -> list[Figure]:
    """Raw stepSimulation of the default scene's settled pile (the arm holding home), and of the empty cell."""
    from binpick_sim.cell.bin_picking_sim import BinPickingSim

    sim = BinPickingSim(load_config(default_config()), drawn=False)
    sim.reset(seed=1000)
    step = sim.world.client.stepSimulation

    def rate(n: int = 960) -> float:
        start = clock()
        for _ in range(n):
            step()
        return n / (clock() - start)

    pile = [rate() for _ in range(ROUNDS)]
    objects = len(sim.scene.objects)
    for obj in list(sim.scene.objects):
        sim.scene.remove_object(obj.name)
    sim.world.step(240)  # nothing left to settle
    empty = [rate() for _ in range(ROUNDS)]
    sim.close()
    return [Figure(GROUP, f"raw stepSimulation, default scene ({objects} objects at rest) against the empty cell",
                   median(pile), "steps/s", median(empty), ratios=per_round(pile, empty))]


BARE_OBJECTS = 20


def sleeping_object_cost(kind: str) -> float:
    """us a bare PyBullet step (a plane, no binpick_sim) costs per sleeping object: BARE_OBJECTS of them at rest
    on the plane, put to sleep with the plane, against the plane alone. `kind`: "mesh" (random_urdfs/001, the default scene's
    kind, at 2 cm) or "box" (2 cm)."""
    import pybullet
    import pybullet_data

    def world(count: int) -> int:
        client = pybullet.connect(pybullet.DIRECT)
        pybullet.setGravity(0, 0, -9.81, physicsClientId=client)
        pybullet.setPhysicsEngineParameter(fixedTimeStep=1 / 240, numSolverIterations=50, physicsClientId=client)
        plane = pybullet.loadURDF(f"{pybullet_data.getDataPath()}/plane.urdf", useFixedBase=True, physicsClientId=client)
        pybullet.changeDynamics(plane, -1, activationState=pybullet.ACTIVATION_STATE_ENABLE_SLEEPING,
                                physicsClientId=client)  # as the cell's ground (scene.may_sleep)
        for i in range(count):
            position = [0.05 * (i % 5), 0.05 * (i // 5), 0.03]
            if kind == "box":
                shape = pybullet.createCollisionShape(pybullet.GEOM_BOX, halfExtents=[0.01] * 3, physicsClientId=client)
                body = pybullet.createMultiBody(0.05, shape, basePosition=position, physicsClientId=client)
            else:
                body = pybullet.loadURDF(f"{pybullet_data.getDataPath()}/random_urdfs/001/001.urdf", position,
                                         globalScaling=1.33, physicsClientId=client)
            pybullet.changeDynamics(body, -1, activationState=pybullet.ACTIVATION_STATE_ENABLE_SLEEPING,
                                    physicsClientId=client)
        for _ in range(480):
            pybullet.stepSimulation(physicsClientId=client)
        for body in range(count + 1):
            pybullet.changeDynamics(body, -1, activationState=pybullet.ACTIVATION_STATE_SLEEP, physicsClientId=client)
        return client

    def us_per_step(client: int, steps: int = 2000) -> float:
        start = clock()
        for _ in range(steps):
            pybullet.stepSimulation(physicsClientId=client)
        return 1e6 * (clock() - start) / steps

    plane, full = world(0), world(BARE_OBJECTS)
    cost = median([(us_per_step(full) - us_per_step(plane)) / BARE_OBJECTS for _ in range(3)])
    for client in (plane, full):
        pybullet.disconnect(physicsClientId=client)
    return cost


def scene_with(objects: int, folder: Path) -> Path:
    from binpick_sim.config import save_config

    config = load_config(default_config())
    pick = {**dataclasses.asdict(config.scene.pick_bin), "min_objects": objects, "max_objects": objects}
    return save_config(with_changes(config, scene={"pick_bin": pick}),
                       folder / f"scene_{objects}.yaml")


def growth() -> list[Figure]:
    """Env steps/s with k objects in the pick bin, against the empty bin's in the same rounds."""
    with tempfile.TemporaryDirectory(prefix="bench_cell_") as folder:
        envs = {k: ours(scene_with(k, Path(folder))) for k in OBJECT_COUNTS}
        rates = {k: [] for k in OBJECT_COUNTS}
        for r in range(ROUNDS):
            best = dict.fromkeys(OBJECT_COUNTS, 0.0)
            for _ in range(GROWTH_REPEATS):
                for k, env in envs.items():
                    best[k] = max(best[k], env.episode(2000 + r, GROWTH_STEPS)[1])
            for k in OBJECT_COUNTS:
                rates[k].append(best[k])
        for env in envs.values():
            env.env.close()
    figures = []
    for k in OBJECT_COUNTS[1:]:
        ratios = per_round(rates[k], rates[0])
        per_object = 100 * (1 / median(ratios) - 1) / k  # the env step's time grows by this much per object
        figures.append(Figure(GROUP, f"FrankaDelta-v0 state, {k} object{'s' * (k > 1)} in the pick bin, against "
                              f"none ({per_object:+.1f} % step time per object)", median(rates[k]), "env steps/s",
                              median(rates[0]), ratios=ratios))
    empty_step_us = 1e6 / median(rates[0])
    for kind in ("mesh", "box"):
        cost = sleeping_object_cost(kind)
        figures.append(Figure(GROUP, f"floor: one sleeping {kind} object in a bare PyBullet step (a plane alone), "
                              f"x 24 steps against the empty-bin env step here (+{100 * 24 * cost / empty_step_us:.1f} "
                              "% per object)", cost, "us/step"))
    return figures


def resets() -> list[Figure]:
    """Seeded resets to new layouts (a new seed each) and to the same layout again (its pile placed from memory,
    cell/layouts.py), each beside its floor timed within the same resets: the live cell's rebuild (the world
    emptied, ground, bins and arm loaded again) and, for a new layout, its settle's physics steps."""
    env = gym.make("binpick_sim/FrankaDelta-v0", observation="state")
    env.reset(seed=0)
    sim = env.unwrapped._backend.sim
    spent = {"rebuild": 0.0, "settle": 0.0}
    for owner, name, part in ((sim, "rebuild", "rebuild"), (sim.scene.settler.world, "step", "settle")):
        timing(owner, name, spent, part)

    def timed(seed: int) -> tuple[float, float, float]:
        """ms: the reset, the rebuild in it, the settle's steps in it."""
        before, start = dict(spent), clock()
        env.reset(seed=seed)
        total = clock() - start
        return 1000 * total, 1000 * (spent["rebuild"] - before["rebuild"]), 1000 * (spent["settle"] - before["settle"])

    new = [timed(3000 + k) for k in range(RESETS)]
    same = [timed(3000 + RESETS - 1) for _ in range(RESETS)]
    env.close()
    new_floor, same_floor = [r + s for _, r, s in new], [r for _, r, _ in same]
    return [Figure(GROUP, "seeded reset to a new layout, median, beside its floor (the cell's rebuild and the "
                   "settle's physics steps in the same resets)", median([t for t, _, _ in new]), "ms",
                   median(new_floor), ratios=per_round([t for t, _, _ in new], new_floor)),
            Figure(GROUP, "seeded reset to a new layout, p95", percentile([t for t, _, _ in new], 95), "ms"),
            Figure(GROUP, "reset to the same layout (the same seed again, the pile placed from memory), median, "
                   "beside its floor (the cell's rebuild in the same resets)", median([t for t, _, _ in same]), "ms",
                   median(same_floor), ratios=per_round([t for t, _, _ in same], same_floor)),
            Figure(GROUP, "reset to the same layout, p95", percentile([t for t, _, _ in same], 95), "ms")]


def timing(owner, name: str, spent: dict, part: str) -> None:
    """`owner.name(...)` timed from now on, each call's CPU time added to `spent[part]`."""
    call = getattr(owner, name)

    def timed(*args, **kwargs):
        start = clock()
        try:
            return call(*args, **kwargs)
        finally:
            spent[part] += clock() - start
    setattr(owner, name, timed)


def starts() -> list[Figure]:
    """Wall time: the ROS backend's start and close, `sim`'s first /clock, a small rollouts run."""
    figures = []
    made, closed = [], []
    for k in range(3):
        start = time.perf_counter()
        env = gym.make("binpick_sim/FrankaDelta-v0", observation="state", backend="ros")
        env.reset(seed=k)
        made.append(time.perf_counter() - start)
        start = time.perf_counter()
        env.close()
        closed.append(time.perf_counter() - start)
    figures += [Figure(GROUP, "ROS backend: gym.make to the first observation, median of 3", median(made), "s"),
                Figure(GROUP, "ROS backend: close(), median of 3", median(closed), "s")]
    figures.append(Figure(GROUP, "sim started to its first /clock, median of 3",
                          median([first_clock() for _ in range(3)]), "s"))
    figures.append(check_env_over_ros())
    figures.append(rollouts_against_its_episodes())
    return figures


def check_env_over_ros() -> Figure:
    """Gymnasium's `check_env` on FrankaDelta-v0 (state) over ROS against the direct backend, taking turns
    (CHECK_ROUNDS), wall time from `gym.make` to the check's end: the ROS backend's start is in it, as it is
    in a user's first check."""
    import warnings

    from gymnasium.utils.env_checker import check_env

    def checked(backend: str) -> float:
        start = time.perf_counter()
        env = gym.make("binpick_sim/FrankaDelta-v0", observation="state", backend=backend)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # recommendations about the unbounded observation boxes
                check_env(env.unwrapped, skip_render_check=True)
            return time.perf_counter() - start
        finally:
            env.close()

    ros, direct = [], []
    for _ in range(CHECK_ROUNDS):
        ros.append(checked("ros"))
        direct.append(checked("direct"))
    return Figure(GROUP, f"Gymnasium's check_env over ROS against the direct backend (median of {CHECK_ROUNDS}, the "
                  "ROS start included)", median(ros), "s", median(direct), ratios=per_round(ros, direct))


def first_clock() -> float:
    import rclpy
    from rclpy.context import Context
    from rosgraph_msgs.msg import Clock

    from binpick_sim.nodes.clients.client import SimClient
    from binpick_sim.nodes.process.spawn import SimProcess

    context = Context()
    rclpy.init(context=context)
    client = SimClient("bench_clock", context=context, topics={"/clock": Clock})
    try:
        start = time.perf_counter()
        with SimProcess({"camera": False}):
            client.wait_for_topics(["/clock"], timeout=120)
            return time.perf_counter() - start
    finally:
        client.close()
        rclpy.try_shutdown(context=context)


def rollouts_against_its_episodes() -> Figure:
    """`rollouts --episodes 10 --workers 1` as a user types it (wall time, the dataset written), against the
    same episodes stepped in this process (the policy and env alone)."""
    from binpick_sim.rollouts import EpisodeSpec, RunSpec, random, run_episode

    spec = RunSpec(policy="random", observation="state")
    env = spec.make_env()
    start = time.perf_counter()
    for k in range(ROLLOUT_EPISODES):
        run_episode(env, spec, EpisodeSpec(k, k), random)
    own = time.perf_counter() - start
    env.close()
    with tempfile.TemporaryDirectory(prefix="bench_rollouts_") as folder:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "binpick_sim.rollouts", "--out", str(Path(folder) / "d"),
                        "--episodes", str(ROLLOUT_EPISODES), "--workers", "1", "--policy", "random"],
                       check=True, capture_output=True)
        whole = time.perf_counter() - start
    return Figure(GROUP, f"rollouts --episodes {ROLLOUT_EPISODES} --workers 1 (random policy), whole command, "
                  "against its episodes stepped in this process", whole, "s", own)


def measure() -> list[Figure]:
    return beside_the_peer() + physics_floor() + growth() + resets() + starts()


if __name__ == "__main__":
    for figure in (measure() if len(sys.argv) == 1 else globals()[sys.argv[1]]()):
        print(figure.as_dict())
