"""Learnability (issue 27): can a small policy, trained on CPU in minutes, learn to pick from the privileged state?

`python -m bench.run learnability` (part of `make bench`). Success rates are not timings, so they mean the
same on a loaded machine; the training time does not.

1. The scripted picker on held-out seeds (HELD_OUT, never used for demos), through the project's `rollouts`
   (Ray, FrankaDelta-v0, direct backend): its success rate, the demonstrations' ceiling.
2. Demonstrations: the scripted picker on seeds 0..DEMOS-1 with `rollouts --observation privileged`.
3. Behaviour cloning (scikit-learn MLPs, requirements-bench.txt), object-centric because the picker's choice
   of object is a discrete decision that a plain regressor would average over: a classifier scores each
   present object slot on that slot's privileged features (where it is relative to the gripper and the
   pick bin's walls, its size, its nearest neighbour) and learns which one the picker went for (the one it
   grabbed, in demos that grabbed at the first attempt); a regressor maps the robot's state and the chosen
   object's state relative to the gripper to the picker's action. At a reset the policy picks the best
   scored slot and follows it. Inputs are the privileged observation only; the env, seeds and step limit
   are the picker's.
4. The cloned policy on the held-out seeds: its success rate beside the picker's.
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from .figures import Figure

ENV = "binpick_sim/FrankaDelta-v0"
DEMOS = int(os.environ.get("BENCH_LEARN_DEMOS", 100))  # scripted episodes, seeds 0..DEMOS-1
HELD_OUT = int(os.environ.get("BENCH_LEARN_HELD_OUT", 100))  # evaluation episodes, seeds 1000..
HELD_OUT_SEED = 1000
DV = 0.016  # m a full delta action moves the gripper (FrankaDelta's default dv)
POLICY_STEPS = 100  # the cloned policy's step limit (the picker needs about 45 per episode)
WORKERS = 2
GROUP = "learnability"


# --- the privileged vector's parts ----------------------------------------------------------------
class Parts:
    """Named views of flat privileged vectors (envs/privileged.py's order), for batches too."""

    def __init__(self, max_objects: int):
        from binpick_sim.envs.privileged import BIN_FIELDS, BIN_NAMES, OBJECT_FIELDS, ROBOT_FIELDS

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


class Features:
    """What the two networks see, computed from privileged vectors alone."""

    def __init__(self, parts: Parts, bin_half_inside: np.ndarray):
        self.parts, self.half = parts, bin_half_inside

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

    def control(self, vector: np.ndarray, previous: np.ndarray, slot: int) -> np.ndarray:
        """Batch × features for the action networks: the robot (and how far the gripper moved since the
        previous observation: two frames, as frame stacking gives), the chosen slot's object relative to
        the gripper, and that slot's classifier features (walls, neighbours)."""
        p = self.parts
        objects = p.objects(vector)[:, slot]
        size = objects[:, p.object["size"]]
        ee = vector[:, p.robot["ee_position"]]
        moved = (ee - previous[:, p.robot["ee_position"]]) * 100
        delta = np.clip(objects[:, p.object["position"]] - ee, -0.3, 0.3)
        turn = _long_side_yaw(objects[:, p.object["orientation"]], size) - _yaw(vector[:, p.robot["ee_orientation"]])
        fingers = vector[:, p.robot["joint_positions"]][:, 7:9]
        height = ee[:, 2:3] - p.pick_bin_position(vector)[:, 2:3]
        slots = np.stack([self.slots(v)[0][slot] for v in vector])
        steps = np.clip(delta / DV, -1, 1)  # the offset in action units (a full action moves DV)
        return np.column_stack([delta, 10 * delta, steps, np.sin(2 * turn), np.cos(2 * turn), moved, fingers * 20,
                                vector[:, p.robot["gripper_open"]], height, size * 30,
                                objects[:, p.object["present"]], slots])


# --- the learned policy --------------------------------------------------------------------------
class ClonedPolicy:
    def __init__(self, features: Features, chooser, mover, gripper):
        self.features, self.chooser, self.mover, self.gripper = features, chooser, mover, gripper
        self.slot, self.previous = None, None

    def reset(self) -> None:
        self.slot, self.previous = None, None

    def act(self, vector: np.ndarray) -> np.ndarray:
        vector = np.asarray(vector, np.float64)
        if self.slot is None:
            features, present = self.features.slots(vector)
            scores = self.chooser.predict_proba(features)[:, 1]
            scores[~present] = -1.0
            self.slot = int(np.argmax(scores))
        previous = vector if self.previous is None else self.previous
        self.previous = vector
        x = self.features.control(vector[None], previous[None], self.slot)
        move = np.clip(self.mover.predict(x)[0], -1, 1)
        return np.array([*move, 1.0 if self.gripper.predict(x)[0] else -1.0], np.float32)


def train(steps, episodes, features: Features, parts: Parts) -> tuple[ClonedPolicy, dict]:
    """Fit both networks on the demos that grabbed at their first attempt; returns the policy and counts."""
    from sklearn.neural_network import MLPClassifier, MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    chooser_x, chooser_y, control_x, control_y = [], [], [], []
    used = 0
    for episode in episodes.itertuples(index=False):
        info = json.loads(episode.info)
        if not episode.success or not info.get("grabbed"):
            continue
        rows = steps[steps["episode"] == episode.episode]
        vectors = np.stack(rows["observation.vector"].map(np.asarray).to_list()).astype(np.float64)
        actions = np.stack(rows["action"].map(np.asarray).to_list()).astype(np.float64)
        slot = int(info["grabbed"][0].rsplit("_", 1)[1])
        # the picker's first target: demos whose gripper first closed near the grabbed object
        closes = np.flatnonzero(actions[:, 4] < 0)
        ee = vectors[:, parts.robot["ee_position"]]
        target = parts.objects(vectors)[np.arange(len(vectors)), slot][:, parts.object["position"]]
        if not len(closes) or np.linalg.norm(ee[closes[0]] - target[closes[0]]) > 0.03:
            continue  # it tried another object first: its first choice is not this one
        used += 1
        x, present = features.slots(vectors[0])
        chooser_x += list(x[present])
        chooser_y += list((np.arange(parts.n) == slot)[present])
        control_x.append(features.control(vectors, np.concatenate([vectors[:1], vectors[:-1]]), slot))
        control_y.append(actions)
    start = time.perf_counter()
    chooser = make_pipeline(StandardScaler(), MLPClassifier(hidden_layer_sizes=(64, 64), max_iter=2000, random_state=0))
    chooser.fit(np.array(chooser_x), np.array(chooser_y))
    x, y = np.concatenate(control_x), np.concatenate(control_y)
    mover = make_pipeline(StandardScaler(), MLPRegressor(hidden_layer_sizes=(128, 128), max_iter=800,
                                                         early_stopping=True, random_state=0))
    mover.fit(x, y[:, :4])
    gripper = make_pipeline(StandardScaler(), MLPClassifier(hidden_layer_sizes=(64, 64), max_iter=800,
                                                            random_state=0))
    gripper.fit(x, y[:, 4] > 0)
    seconds = time.perf_counter() - start
    return ClonedPolicy(features, chooser, mover, gripper), {"demos": used, "samples": len(x), "train_s": seconds}


def evaluate(policy: ClonedPolicy, seeds) -> float:
    """The fraction of episodes in which the cloned policy grabs an object."""
    import gymnasium as gym

    import binpick_sim.envs  # noqa: F401

    env = gym.make(ENV, observation="privileged", max_episode_steps=POLICY_STEPS)
    try:
        grabs = 0
        for seed in seeds:
            observation, _ = env.reset(seed=seed)
            policy.reset()
            while True:
                observation, _, terminated, truncated, info = env.step(policy.act(observation))
                if terminated or truncated:
                    break
            grabs += info["grabs"] > 0
        return grabs / len(seeds)
    finally:
        env.close()


def measure() -> list[Figure]:
    import ray

    from binpick_sim.config import load_config
    from binpick_sim.paths import default_config
    from binpick_sim.rollouts import RunSpec, read_dataset, rollouts

    config = load_config(default_config())
    pick = config.scene.pick_bin
    parts = Parts(pick.max_objects)
    features = Features(parts, np.array(pick.size[:2]) / 2 - pick.wall_thickness)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(address="local", num_cpus=WORKERS, include_dashboard=False, log_to_driver=False)
    figures = []
    try:
        with tempfile.TemporaryDirectory(prefix="bench_learn_") as folder:
            held_out = rollouts(Path(folder) / "held_out", HELD_OUT, WORKERS, HELD_OUT_SEED,
                                RunSpec(env_id=ENV, policy="scripted", observation="state"), progress=False)
            figures.append(Figure(GROUP, f"scripted picker, held-out seeds {HELD_OUT_SEED}-"
                                  f"{HELD_OUT_SEED + HELD_OUT - 1}", 100 * held_out.success_rate,
                                  "% episodes with a grab"))
            start = time.perf_counter()
            demos = rollouts(Path(folder) / "demos", DEMOS, WORKERS, 0,
                             RunSpec(env_id=ENV, policy="scripted", observation="privileged"), progress=False)
            collect_s = time.perf_counter() - start
            steps, episodes = read_dataset(demos.out)
    finally:
        ray.shutdown()
    policy, counts = train(steps, episodes, features, parts)
    figures += [
        Figure(GROUP, f"demonstrations: scripted episodes, seeds 0-{DEMOS - 1} (rollouts --observation privileged)",
               DEMOS, "episodes"),
        Figure(GROUP, "demonstrations used (first-attempt grabs)", counts["demos"], "episodes"),
        Figure(GROUP, "training samples (steps)", counts["samples"], "steps"),
        Figure(GROUP, f"demo collection ({WORKERS} Ray workers)", collect_s, "s"),
        Figure(GROUP, "training time, both MLPs (scikit-learn, CPU)", counts["train_s"], "s"),
    ]
    seeds = list(range(HELD_OUT_SEED, HELD_OUT_SEED + HELD_OUT))
    figures.append(Figure(GROUP, f"cloned MLP policy (privileged state), held-out seeds {seeds[0]}-{seeds[-1]}",
                          100 * evaluate(policy, seeds), "% episodes with a grab"))
    return figures


if __name__ == "__main__":
    for figure in measure():
        print(figure.as_dict())
