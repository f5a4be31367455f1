"""Learnability (issue 27): can a small policy, trained on CPU in minutes, learn to pick from the privileged state?

`python -m bench.run learnability` (part of `make bench`). Success rates are not timings, so they mean the
same on a loaded machine; the training and collection times do not.

1. The scripted picker on held-out seeds (HELD_OUT from 1000, never used for training), through the
   project's `rollouts` (Ray, FrankaDelta-v0, direct backend): its success rate beside the clone's.
2. Demonstrations: the scripted picker on seeds 0..DEMOS-1 with `rollouts --observation privileged`. The
   policy learns the picker's two discrete decisions from them: which object (chooser: each present slot
   scored on its privileged features) and which gripper yaw (turner: YAWS candidate yaws from the
   object's long side, each scored on the open fingers' room to the walls and to the other objects' boxes).
3. Labelled episodes (seeds from DEMOS on): the picker aims at the object's position as the privileged
   state reports it (its own grasp point, mesh-centred and shifted for room, is not in that state, so no
   policy seeing only that state could learn to aim at it), with its own object and yaw; CLEAN of them
   as they are, NOISY with Gaussian noise on the executed motion and the picker's clean action as the
   label (DART); the picker is closed-loop, so it labels the perturbed states too. Then ROUNDS of DAgger:
   PER_ROUND episodes driven by the learner (the picker's action with probability BETA), the picker made to
   follow the learner's object and yaw and label every visited state; refit on everything after each.
   Mover (motion and turn, a regressor) and gripper (open / close, a classifier) map the robot's state,
   the chosen object's offset from the gripper and the turn to the chosen yaw to the label.
4. The cloned policy alone on the held-out seeds: its success rate. Demo seeds and held-out seeds are
   disjoint (asserted). BENCH_LEARN_* environment variables change the counts and the training seed.
"""
from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .figures import Figure

ENV = "binpick_sim/FrankaDelta-v0"
DEMOS = int(os.environ.get("BENCH_LEARN_DEMOS", 100))  # scripted episodes, seeds 0..DEMOS-1
HELD_OUT = int(os.environ.get("BENCH_LEARN_HELD_OUT", 100))  # evaluation episodes, seeds 1000..
HELD_OUT_SEED = 1000
DV = 0.016  # m a full delta action moves the gripper (FrankaDelta's default dv)
DA = 0.25  # rad a full delta action turns it (FrankaDelta's default da)
CLEAN = int(os.environ.get("BENCH_LEARN_CLEAN", 50))  # labelled episodes of the picker without noise
NOISY = int(os.environ.get("BENCH_LEARN_NOISY", 100))  # DART episodes: the picker with noisy motion
NOISE = float(os.environ.get("BENCH_LEARN_NOISE", 0.2))  # their motion noise's standard deviation, action units
ROUNDS = int(os.environ.get("BENCH_LEARN_ROUNDS", 0))  # DAgger rounds after the first fit (none by default: not needed)
PER_ROUND = int(os.environ.get("BENCH_LEARN_PER_ROUND", 60))  # learner episodes per round
BETA = 0.3  # a DAgger step executes the picker's action with this probability, the learner's otherwise
TRAIN_SEED = int(os.environ.get("BENCH_LEARN_SEED", 0))  # the networks' initialisation and shuffling
POLICY_STEPS = 100  # the cloned policy's step limit (the picker needs about 45 per episode)
WORKERS = 2
GROUP = "learnability"


# --- the privileged vector's parts ----------------------------------------------------------------
class Parts:
    """Named views of flat privileged vectors (envs/privileged_observation.py's order), for batches too."""

    def __init__(self, max_objects: int):
        from binpick_sim.envs.privileged_observation import BIN_FIELDS, BIN_NAMES, OBJECT_FIELDS, ROBOT_FIELDS

        self.n = max_objects
        self.robot, start = {}, 0
        for name, width in ROBOT_FIELDS:
            self.robot[name] = slice(start, start + width)
            start += width
        self.object_start, self.per_object = start, sum(w for _, w in OBJECT_FIELDS)
        self.object, offset = {}, 0
        for name, width in OBJECT_FIELDS:
            self.object[name] = slice(offset, offset + width)
            offset += width
        self.bin_start = start + self.n * self.per_object
        self.bin_width = sum(w for _, w in BIN_FIELDS)
        self.pick_bin = BIN_NAMES.index("pick_bin")

    def objects(self, vector: np.ndarray) -> np.ndarray:
        """... × N × per-object fields."""
        block = vector[..., self.object_start:self.bin_start]
        return block.reshape(*vector.shape[:-1], self.n, self.per_object)

    def pick_bin_position(self, vector: np.ndarray) -> np.ndarray:
        start = self.bin_start + self.pick_bin * self.bin_width
        return vector[..., start:start + 3]


def _yaw(xyzw: np.ndarray) -> np.ndarray:
    x, y, z, w = (xyzw[..., i] for i in range(4))
    return np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def _long_side_yaw(xyzw: np.ndarray, size: np.ndarray) -> np.ndarray:
    """The yaw of an object's longest extent seen from above: each of its frame's axes, scaled by the
    object's extent along it, projected on the floor; the longest one's direction."""
    x, y, z, w = (xyzw[..., i] for i in range(4))
    axes = np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y + w * z)], -1),
                     np.stack([2 * (x * y - w * z), 1 - 2 * (x * x + z * z)], -1),
                     np.stack([2 * (x * z + w * y), 2 * (y * z - w * x)], -1)], -2) * size[..., None]
    longest = np.argmax(np.linalg.norm(axes, axis=-1), axis=-1)
    chosen = np.take_along_axis(axes, longest[..., None, None].repeat(2, -1), -2)[..., 0, :]
    return np.arctan2(chosen[..., 1], chosen[..., 0])


YAWS = 12  # gripper yaws the policy chooses among, evenly over a half turn from the object's long side
CORNERS = np.array([[x, y, z] for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (-0.5, 0.5)])


def wrap_turn(turn) -> np.ndarray:
    """The smallest turn to a yaw, the gripper looking the same every half turn: in [-pi/2, pi/2)."""
    return (np.asarray(turn) + np.pi / 2) % np.pi - np.pi / 2


class Features:
    """What the networks see, computed from privileged vectors alone."""

    def __init__(self, parts: Parts, interior):
        """`interior`: the pick bin's free space (picking.policy.BinInterior, from the scene file)."""
        self.parts, self.interior = parts, interior
        self.half = interior.half_extents
        self.history = True  # the gripper's motion since the previous observation as a feature (a stall shows)

    def slots(self, vector: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(N × features, present mask) of one vector, for the object classifier."""
        p = self.parts
        objects = p.objects(vector)
        position = objects[:, p.object["position"]]
        present = objects[:, p.object["present"]][:, 0] > 0.5
        ee = vector[p.robot["ee_position"]]
        local = position - p.pick_bin_position(vector)
        walls = self.half - np.abs(local[:, :2])
        gaps = np.linalg.norm(position[:, None, :2] - position[None, :, :2], axis=2)
        gaps[~present[None, :].repeat(p.n, 0)] = 1.0
        np.fill_diagonal(gaps, 1.0)
        nearest = np.sort(gaps, axis=1)[:, :2]
        features = np.column_stack([position - ee, local, walls, walls.min(axis=1), objects[:, p.object["size"]],
                                    nearest, (gaps < 0.04).sum(axis=1)])
        return features, present

    def outlines(self, vector: np.ndarray) -> dict[int, np.ndarray]:
        """Each present object's box (its size about its pose) seen from above: 8 corners' x, y."""
        from scipy.spatial.transform import Rotation

        p = self.parts
        objects = p.objects(vector)
        out = {}
        for k in np.flatnonzero(objects[:, p.object["present"]][:, 0] > 0.5):
            box = CORNERS * objects[k, p.object["size"]]
            out[int(k)] = (Rotation.from_quat(objects[k, p.object["orientation"]]).apply(box)
                           + objects[k, p.object["position"]])[:, :2]
        return out

    def yaws(self, vector: np.ndarray, slot: int) -> tuple[np.ndarray, np.ndarray]:
        """(YAWS candidate gripper yaws, YAWS × features) for grasping `slot`'s object: the open fingers'
        room to the walls and to the other objects' boxes at each yaw, and how far it turns from the
        object's long side. The picker chooses its yaw from the objects' meshes, which the privileged
        state does not carry; these are the same kind of clearances, from what it does carry."""
        from binpick_sim.picking.policy import finger_points

        p = self.parts
        objects = p.objects(vector)
        base = float(_long_side_yaw(objects[slot, p.object["orientation"]], objects[slot, p.object["size"]]))
        offsets = np.pi * np.arange(YAWS) / YAWS
        yaws = base + offsets
        centre = objects[slot, p.object["position"]][:2]
        boxes = self.outlines(vector)
        others = np.concatenate([b for k, b in boxes.items() if k != slot] or [np.empty((0, 2))])
        rows = []
        for yaw in yaws:
            fingers = finger_points(centre, yaw)
            wall = self.interior.margin(fingers)
            neighbour = (np.linalg.norm(others[None] - fingers[:, None], axis=2).min() if len(others) else 0.2)
            room = min(wall, neighbour)
            rows.append([wall, min(neighbour, 0.2), room, min(room, 0.006), room > 0.006, room > 0.0])
        extra = np.column_stack([offsets == 0, np.sin(2 * offsets), np.cos(2 * offsets)])
        return yaws, np.column_stack([np.array(rows, float) * [100, 100, 100, 100, 1, 1], extra])

    def control(self, vector: np.ndarray, previous: np.ndarray, slot: int, yaw: float) -> np.ndarray:
        """Batch × features for the action networks: the robot (and how far the gripper moved since the
        previous observation: two frames, as frame stacking gives), the chosen slot's object relative to
        the gripper, the turn to the chosen yaw, and that slot's classifier features (walls, neighbours)."""
        p = self.parts
        objects = p.objects(vector)[:, slot]
        size = objects[:, p.object["size"]]
        ee = vector[:, p.robot["ee_position"]]
        moved = (ee - previous[:, p.robot["ee_position"]]) * 100
        delta = np.clip(objects[:, p.object["position"]] - ee, -0.3, 0.3)
        turn = wrap_turn(yaw - _yaw(vector[:, p.robot["ee_orientation"]]))
        fingers = vector[:, p.robot["joint_positions"]][:, 7:9]
        height = ee[:, 2:3] - p.pick_bin_position(vector)[:, 2:3]
        slots = np.stack([self.slots(v)[0][slot] for v in vector])
        steps = np.clip(delta / DV, -1, 1)  # the offset in action units (a full action moves DV)
        return np.column_stack([delta, 10 * delta, steps, turn, np.clip(turn / DA, -1, 1), np.abs(turn) < 0.01,
                                *([moved] if self.history else []), fingers * 20, vector[:, p.robot["gripper_open"]],
                                height, size * 30,
                                objects[:, p.object["present"]], slots])


# --- the learned policy --------------------------------------------------------------------------
PHASES = 4  # the picker's phases: approach, descend, close, lift (picking.policy.Grasp.waypoints)
ADVANCE = float(os.environ.get("BENCH_LEARN_ADVANCE", 0.2))  # the advancer's probability that moves the phase on
# (below one half: a phase moves on at a few steps of an episode, so the classifier is rarely sure of it)


def with_phase(x: np.ndarray, phases: np.ndarray) -> np.ndarray:
    """Control features with the phase one-hot appended."""
    return np.column_stack([x, np.eye(PHASES)[np.asarray(phases, int)]])


class ClonedPolicy:
    """Chooses an object (chooser) and a gripper yaw for it (turner) at its first step; keeps a phase, as
    the picker does, which a classifier (advancer) moves on; maps each observation and its phase to an
    action (mover: motion and turn; gripper: open or close). The phase is what tells a gripper that has
    reached the point above the object (descend now) from one still heading for it, in the same state."""

    def __init__(self, features: Features, chooser, turner, advancer, mover, gripper):
        self.features, self.chooser, self.turner = features, chooser, turner
        self.advancer, self.mover, self.gripper = advancer, mover, gripper
        self.reset()

    def reset(self) -> None:
        self.slot, self.yaw, self.previous, self.phase = None, None, None, 0

    def decide(self, vector: np.ndarray) -> None:
        features, present = self.features.slots(vector)
        scores = self.chooser.predict_proba(features)[:, 1]
        scores[~present] = -1.0
        self.slot = int(np.argmax(scores))
        yaws, x = self.features.yaws(vector, self.slot)
        self.yaw = float(yaws[int(np.argmax(self.turner.predict_proba(x)[:, 1]))])

    def act(self, vector: np.ndarray) -> np.ndarray:
        vector = np.asarray(vector, np.float64)
        if self.slot is None:
            self.decide(vector)
        previous = vector if self.previous is None else self.previous
        self.previous = vector
        x = self.features.control(vector[None], previous[None], self.slot, self.yaw)
        if self.phase < PHASES - 1 and self.advancer.predict_proba(with_phase(x, [self.phase]))[0, 1] > ADVANCE:
            self.phase += 1
        x = with_phase(x, [self.phase])
        move = np.clip(self.mover.predict(x)[0], -1, 1)
        return np.array([*move, 1.0 if self.gripper.predict(x)[0] else -1.0], np.float32)


# --- training data: the picker's clean actions, wherever the states came from -------------------------
@dataclass
class Episode:
    """One episode's observations and the scripted picker's actions for them (the labels)."""

    vectors: np.ndarray  # T × the privileged vector
    labels: np.ndarray  # T × 5: what the picker commands in each state (not always what was executed)
    slot: int  # the object the labels go for
    yaw: float  # the gripper yaw they turn to
    keep: np.ndarray  # T booleans: the steps whose labels are for (slot, yaw), the picker's first attempt
    phases: np.ndarray  # T: the picker's phase each label comes from (-1: not known, not kept)
    expert: bool  # the picker chose slot and yaw itself (what the chooser and the turner learn from)
    grabbed: bool
    noise: float = 0.0  # the executed motion's noise (DART)


def from_rollouts(steps, episodes, parts: Parts) -> list[Episode]:
    """The scripted demos of a `rollouts` dataset, each with the object and yaw the picker went for: the
    object nearest the grasp point and the gripper's yaw where it first closed (it closes only once it
    has reached both). Steps after its first attempt (it opens again to try another object) are left out;
    demos that never closed near an object are left out."""
    out = []
    for episode in episodes.itertuples(index=False):
        rows = steps[steps["episode"] == episode.episode]
        vectors = np.stack(rows["observation.vector"].map(np.asarray).to_list()).astype(np.float64)
        actions = np.stack(rows["action"].map(np.asarray).to_list()).astype(np.float64)
        closes = np.flatnonzero(actions[:, 4] < 0)
        if not len(closes):
            continue
        close = closes[0]
        objects = parts.objects(vectors[close])
        present = objects[:, parts.object["present"]][:, 0] > 0.5
        gaps = np.linalg.norm(objects[:, parts.object["position"]] - vectors[close, parts.robot["ee_position"]], axis=1)
        gaps[~present] = np.inf
        slot = int(np.argmin(gaps))
        if gaps[slot] > 0.03:
            continue
        reopen = close + np.flatnonzero(actions[close:, 4] > 0)
        end = reopen[0] if len(reopen) else len(actions)
        out.append(Episode(vectors, actions, slot, float(_yaw(vectors[close, parts.robot["ee_orientation"]])),
                           np.arange(len(actions)) < end, np.full(len(actions), -1), True, bool(episode.success)))
    return out


def follow(picker, slot: int, yaw: float, position: np.ndarray) -> None:
    """Make the scripted picker go for the object in `slot` at gripper yaw `yaw`, grasping at `position`
    (the object's position as the privileged vector has it), from where the gripper is now. The picker's own grasp point
    (its mesh's centre, moved up to 12 mm for the fingers' room) is not in the privileged state, so a
    policy that sees only that state cannot learn to aim at it; this grasp point it can. Its waypoints
    and closed-loop actions are the picker's (approach, descend, close, lift)."""
    from binpick_sim.picking.policy import Grasp

    picker.grasp = Grasp(f"object_{slot}", np.asarray(position, float), float(yaw))
    picker.tried.add(picker.grasp.name)
    picker.attempts += 1
    picker.phase, picker.phase_steps = 0, 0


def labelled_episode(env, parts: Parts, seed: int, noise: float = 0.0, policy=None, beta: float = 0.0) -> Episode:
    """One episode labelled by the scripted picker, which is closed-loop (each action points from where
    the gripper is to its current waypoint), so it labels any state on its way.

    - `policy` None: the picker drives; `noise` > 0 adds Gaussian noise (that standard deviation, in action
      units) to the motion it executes while the label stays its clean action (DART).
    - `policy` given: the learner chooses object and yaw, the picker is made to follow them (`follow`), and
      each step executes the learner's action (the picker's with probability `beta`) (DAgger)."""
    from binpick_sim.envs.scripted import ScriptedPicker
    from binpick_sim.picking.policy import choose_grasp

    rng = np.random.default_rng(seed)
    observation, _ = env.reset(seed=seed)
    vector = np.asarray(observation, np.float64)
    picker = ScriptedPicker(env)
    if policy is not None:
        policy.reset()
        policy.decide(vector)
        slot, yaw = policy.slot, policy.yaw
    else:  # the picker's own choice of object and yaw
        own = choose_grasp(env.unwrapped.object_views(), interior=picker.interior)
        slot, yaw = int(own.name.rsplit("_", 1)[1]), own.yaw
    follow(picker, slot, yaw, parts.objects(vector)[slot, parts.object["position"]])
    vectors, labels, keep, phases, first, info = [], [], [], [], None, {}
    while True:
        phases.append(picker.phase)  # the phase whose waypoint this step's label heads for
        label = picker.act(observation)
        if picker.grasp is not None and first is None:
            first = picker.grasp
        vectors.append(np.asarray(observation, np.float64))
        labels.append(label)
        keep.append(first is not None and picker.grasp is first and picker.attempts == 1)
        action = label.copy()
        if policy is not None:
            learned = policy.act(observation)
            if rng.random() >= beta:
                action = learned
        elif noise:
            action[:4] = np.clip(action[:4] + rng.normal(0.0, noise, 4), -1, 1)
        observation, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    slot = int(first.name.rsplit("_", 1)[1]) if first is not None else 0
    keep = np.array(keep, bool) & (np.array(phases) < PHASES)
    return Episode(np.array(vectors), np.array(labels, np.float64), slot, float(first.yaw) if first else 0.0,
                   keep, np.where(keep, phases, -1), policy is None, info.get("grabs", 0) > 0, noise)


def _make_env():
    import gymnasium as gym

    import binpick_sim.envs  # noqa: F401

    return gym.make(ENV, observation="privileged", max_episode_steps=POLICY_STEPS)


def collect(seeds, parts: Parts, noise: float = 0.0, policy=None, beta: float = 0.0) -> list[Episode]:
    """`labelled_episode` for each seed, in this process (the Ray tasks' body)."""
    env = _make_env()
    try:
        return [labelled_episode(env, parts, seed, noise, policy, beta) for seed in seeds]
    finally:
        env.close()


def evaluate(seeds, policy) -> list[bool]:
    """Whether the cloned policy grabs an object, per seed (no picker involved)."""
    env = _make_env()
    try:
        grabs = []
        for seed in seeds:
            observation, _ = env.reset(seed=seed)
            policy.reset()
            while True:
                observation, _, terminated, truncated, info = env.step(policy.act(observation))
                if terminated or truncated:
                    break
            grabs.append(bool(info["grabs"] > 0))
        return grabs
    finally:
        env.close()


def spread(function, seeds, *args) -> list:
    """`function(chunk, *args)` over WORKERS Ray tasks, the results in seed order."""
    import ray

    task = ray.remote(num_cpus=1)(function)
    chunks = [c for c in np.array_split(np.asarray(seeds), WORKERS) if len(c)]
    return [x for part in ray.get([task.remote([int(s) for s in c], *args) for c in chunks]) for x in part]


# --- training ----------------------------------------------------------------------------------------
def train(decisions: list[Episode], data: list[Episode], features: Features,
          seed: int = 0) -> tuple[ClonedPolicy, dict]:
    """Fit the five networks: chooser and turner on the picker's own choices (object, yaw) at the first
    step of `decisions` (its demos); mover and gripper on every kept step's label of `data`, advancer on
    whether the picker's phase moved on from the previous step's in its noise-free episodes. The control
    features use the yaw the labels turn to (teacher forcing); the policy uses the turner's."""
    from sklearn.neural_network import MLPClassifier, MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    parts = features.parts
    chooser_x, chooser_y, turner_x, turner_y = [], [], [], []
    control_x, control_y, advance_x, advance_y = [], [], [], []
    for episode in data:
        v, keep, phases = episode.vectors, episode.keep, episode.phases
        if (phases[keep] < 0).any():
            raise ValueError("control data needs the picker's phase at each kept step (labelled_episode); "
                             "a rollouts demo's is not known")
        if keep.any():
            x = features.control(v, np.concatenate([v[:1], v[:-1]]), episode.slot, episode.yaw)
            control_x.append(with_phase(x[keep], phases[keep]))
            control_y.append(episode.labels[keep])
            if episode.noise:  # noise hides a stall and delays the reach: the picker's phase then moves on by
                continue        # its step limit, which says nothing about the state
            both = keep[1:] & keep[:-1]  # step t's phase from step t-1's: moved on or not
            advance_x.append(with_phase(x[1:][both], phases[:-1][both]))
            advance_y.append(phases[1:][both] > phases[:-1][both])
    for episode in decisions:
        v = episode.vectors
        if episode.expert:
            x, present = features.slots(v[0])
            chooser_x += list(x[present])
            chooser_y += list((np.arange(parts.n) == episode.slot)[present])
            yaws, x = features.yaws(v[0], episode.slot)
            turner_x += list(x)
            turner_y += list(np.arange(len(yaws)) == np.argmin(np.abs(wrap_turn(yaws - episode.yaw))))
    def classifier(layers, iterations):
        return make_pipeline(StandardScaler(), MLPClassifier(hidden_layer_sizes=layers, max_iter=iterations,
                                                             random_state=seed))

    start = time.perf_counter()
    chooser = classifier((64, 64), 2000)
    chooser.fit(np.array(chooser_x), np.array(chooser_y))
    turner = classifier((32, 32), 2000)
    turner.fit(np.array(turner_x), np.array(turner_y))
    advancer = classifier((64, 64), 800)
    advancer.fit(np.concatenate(advance_x), np.concatenate(advance_y))
    x, y = np.concatenate(control_x), np.concatenate(control_y)
    mover = make_pipeline(StandardScaler(), MLPRegressor(hidden_layer_sizes=(128, 128), max_iter=800,
                                                         early_stopping=True, random_state=seed))
    mover.fit(x, y[:, :4])
    gripper = classifier((64, 64), 800)
    gripper.fit(x, y[:, 4] > 0)
    seconds = time.perf_counter() - start
    return ClonedPolicy(features, chooser, turner, advancer, mover, gripper), {"samples": len(x), "train_s": seconds}


def measure() -> list[Figure]:
    import ray

    from binpick_sim.config import load_config
    from binpick_sim.paths import default_config
    from binpick_sim.picking.policy import BinInterior
    from binpick_sim.rollouts import RunSpec, read_dataset, rollouts

    config = load_config(default_config())
    parts = Parts(config.scene.pick_bin.max_objects)
    features = Features(parts, BinInterior.from_config(config.scene.pick_bin))
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(address="local", num_cpus=WORKERS, include_dashboard=False, log_to_driver=False)
    figures, train_s, seeds = [], 0.0, list(range(HELD_OUT_SEED, HELD_OUT_SEED + HELD_OUT))
    try:
        with tempfile.TemporaryDirectory(prefix="bench_learn_") as folder:
            held_out = rollouts(Path(folder) / "held_out", HELD_OUT, WORKERS, HELD_OUT_SEED,
                                RunSpec(env_id=ENV, policy="scripted", observation="state"), progress=False)
            figures.append(Figure(GROUP, f"scripted picker, held-out seeds {seeds[0]}-{seeds[-1]}",
                                  100 * held_out.success_rate, "% episodes with a grab"))
            start = time.perf_counter()
            demos = rollouts(Path(folder) / "demos", DEMOS, WORKERS, 0,
                             RunSpec(env_id=ENV, policy="scripted", observation="privileged"), progress=False)
            decisions = from_rollouts(*read_dataset(demos.out), parts)
        next_seed = DEMOS
        data = spread(collect, range(next_seed, next_seed + CLEAN), parts)
        next_seed += CLEAN
        data += spread(collect, range(next_seed, next_seed + NOISY), parts, NOISE)
        next_seed += NOISY
        collect_s = time.perf_counter() - start
        policy, counts = train(decisions, data, features, TRAIN_SEED)
        train_s += counts["train_s"]
        for _ in range(ROUNDS):
            start = time.perf_counter()
            data += spread(collect, range(next_seed, next_seed + PER_ROUND), parts, 0.0, policy, BETA)
            next_seed += PER_ROUND
            collect_s += time.perf_counter() - start
            policy, counts = train(decisions, data, features, TRAIN_SEED)
            train_s += counts["train_s"]
        assert next_seed <= HELD_OUT_SEED, "demo seeds must stay below the held-out ones"
        start = time.perf_counter()
        success = np.mean(spread(evaluate, seeds, policy))
        evaluate_s = time.perf_counter() - start
    finally:
        ray.shutdown()
    figures += [
        Figure(GROUP, f"demonstrations: scripted episodes, seeds 0-{DEMOS - 1} (rollouts --observation privileged)",
               DEMOS, "episodes"),
        Figure(GROUP, "demonstrations whose choice of object and yaw the policy learns (closed near an object)",
               len(decisions), "episodes"),
        Figure(GROUP, f"labeller: the picker aiming at the reported object position, seeds {DEMOS}-{DEMOS + CLEAN - 1}",
               100 * np.mean([e.grabbed for e in data[:CLEAN]]), "% episodes with a grab"),
        Figure(GROUP, f"noisy labelled episodes (DART, motion noise sd {NOISE})", NOISY, "episodes"),
        Figure(GROUP, f"DAgger: {ROUNDS} rounds of learner episodes labelled by the picker (beta {BETA})",
               ROUNDS * PER_ROUND, "episodes"),
        Figure(GROUP, "training samples (labelled steps)", counts["samples"], "steps"),
        Figure(GROUP, f"demo, DART and DAgger collection ({WORKERS} Ray workers)", collect_s, "s"),
        Figure(GROUP, f"training time, {ROUNDS + 1} fit(s) of 5 MLPs (scikit-learn, CPU)", train_s, "s"),
        Figure(GROUP, f"held-out evaluation ({WORKERS} Ray workers)", evaluate_s, "s"),
        Figure(GROUP, f"cloned MLP policy (privileged state, training seed {TRAIN_SEED}), held-out seeds "
               f"{seeds[0]}-{seeds[-1]}", 100 * success, "% episodes with a grab"),
    ]
    return figures


if __name__ == "__main__":
    for figure in measure():
        print(figure.as_dict())
