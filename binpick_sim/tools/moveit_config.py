"""Writes the generated MoveIt files of config/ from the cell itself:

- `binpick_cell.srdf`: groups, end effector and named states (semantics.py), and the link pairs whose
  collision checks a planner may skip, found as MoveIt's setup assistant finds them: links joined by a
  joint (or through links without collision geometry, such as `world`) are "Adjacent"; pairs touching
  in the default (home) pose "Default"; pairs touching in (nearly) every random pose "Always"; pairs
  never touching in `--samples` random poses "Never". A pair with the bins (`scene`) counts as
  "Never" only if it never came within `SCENE_MARGIN` of them: uniform random poses seldom reach into
  a bin, where a picking arm works all the time. Collisions are PyBullet's, on the cell's own URDF
  (description.py: the Panda, the bins as the `scene` link, the camera frames).
- `joint_limits.yaml`: the joints' position, velocity and acceleration limits exactly as the simulation
  enforces them (the URDF's, and the Panda's acceleration limits of cell/arm/franka.py).

    python -m binpick_sim.tools.moveit_config [--config scene.yaml] [--samples 10000] [--out config]

A test checks that the kept files are what this writes (the limits) and that no disabled pair is seen
touching in fresh random poses (the collision matrix).
"""
from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
from pathlib import Path

import numpy as np
import pybullet
import yaml
from pybullet_utils import bullet_client

from ..cell.arm.panda import JOINT_NAMES, ACCELERATION_LIMITS
from ..config import load_config
from ..description import cell_description, local_meshes
from ..paths import default_config, share_dir
from ..semantics import semantic_description

ALWAYS = 0.95  # share of random poses in which a pair touches that makes it "Always"
SCENE = "scene"  # the link carrying the bins (description.py)
SCENE_MARGIN = 0.1  # metres a link must always stay from the bins for its pair to be "Never"


class CellModel:
    """The cell's URDF in a PyBullet client of its own, for collision queries between its links."""

    def __init__(self, urdf: str):
        self.client = bullet_client.BulletClient(connection_mode=pybullet.DIRECT)
        with tempfile.NamedTemporaryFile("w", suffix=".urdf", delete=False) as file:
            file.write(local_meshes(urdf))  # PyBullet reads plain paths, not package:// URIs
        self.body = self.client.loadURDF(file.name, useFixedBase=True)
        Path(file.name).unlink()
        c = self.client
        infos = [c.getJointInfo(self.body, j) for j in range(c.getNumJoints(self.body))]
        self.link_names = {-1: c.getBodyInfo(self.body)[0].decode()} | {i[0]: i[12].decode() for i in infos}
        self.parent = {i[0]: i[16] for i in infos}
        by_name = {i[1].decode(): i[0] for i in infos}
        self.joints = [by_name[n] for n in JOINT_NAMES]
        self.lower = np.array([infos[j][8] for j in self.joints])
        self.upper = np.array([infos[j][9] for j in self.joints])
        self.solid = [k for k in self.link_names if c.getCollisionShapeData(self.body, k)]

    def set_joints(self, q) -> None:
        for joint, value in zip(self.joints, q):
            self.client.resetJointState(self.body, joint, float(value))

    def touching(self, pairs, margin=lambda pair: 0.0) -> set[tuple[int, int]]:
        """The pairs closer than `margin(pair)` (0: touching or overlapping)."""
        c = self.client
        c.performCollisionDetection()
        return {(a, b) for a, b in pairs
                if c.getClosestPoints(self.body, self.body, margin((a, b)), linkIndexA=a, linkIndexB=b)}

    def adjacent(self) -> set[tuple[int, int]]:
        """Solid links joined by a joint, or through links without collision geometry."""
        def solid_parent(link):
            link = self.parent.get(link, -2)
            while link not in self.solid and link >= -1:
                link = self.parent.get(link, -2)
            return link
        pairs = set()
        for link in self.solid:
            parent = solid_parent(link)
            if parent in self.solid:
                pairs.add(tuple(sorted((link, parent))))
        roots = [k for k in self.solid if solid_parent(k) not in self.solid]  # hanging off geometry-less links
        pairs |= {tuple(sorted(p)) for p in itertools.combinations(roots, 2)}
        return pairs


def disabled_collisions(config, samples: int, seed: int = 0) -> tuple[list[tuple[str, str, str]], list[str]]:
    """(link, link, reason) of every pair a planner need not check, and the links with collision geometry."""
    model = CellModel(cell_description(config))
    pairs = [tuple(sorted(p)) for p in itertools.combinations(model.solid, 2)]
    reasons = {p: "Adjacent" for p in model.adjacent()}
    model.set_joints(config.arm.home)
    reasons.update({p: "Default" for p in model.touching(pairs) if p not in reasons})
    rng = np.random.default_rng(seed)
    counts, near = dict.fromkeys(pairs, 0), dict.fromkeys(pairs, 0)
    open_pairs = [p for p in pairs if p not in reasons]
    scene = [k for k, name in model.link_names.items() if name == SCENE]
    margin = lambda pair: SCENE_MARGIN if set(pair) & set(scene) else 0.0  # noqa: E731
    for q in random_poses(model, samples, rng):
        model.set_joints(q)
        for p in model.touching(open_pairs):
            counts[p] += 1
        for p in model.touching(open_pairs, margin):
            near[p] += 1
    for p in open_pairs:
        if near[p] == 0:
            reasons[p] = "Never"
        elif counts[p] >= ALWAYS * samples:
            reasons[p] = "Always"
    names = model.link_names
    return [(names[a], names[b], reason) for (a, b), reason in reasons.items()], [names[k] for k in model.solid]


def random_poses(model: CellModel, samples: int, rng):
    """Uniform joint positions within the limits, the second finger mimicking the first."""
    for _ in range(samples):
        q = rng.uniform(model.lower, model.upper)
        q[8] = q[7]
        yield q


def joint_limits(config) -> dict:
    """joint_limits.yaml as MoveIt reads it: the limits the simulation enforces."""
    model = CellModel(cell_description(config))
    c = model.client
    limits = {}
    for name, joint, acceleration in zip(JOINT_NAMES, model.joints, ACCELERATION_LIMITS):
        info = c.getJointInfo(model.body, joint)
        entry = {"has_velocity_limits": True, "max_velocity": float(info[11]),
                 "has_acceleration_limits": bool(np.isfinite(acceleration)),
                 "max_acceleration": float(acceleration) if np.isfinite(acceleration) else 0.0}
        limits[name] = entry
    return {"default_velocity_scaling_factor": 0.1, "default_acceleration_scaling_factor": 0.1,
            "joint_limits": limits}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, default=default_config())
    parser.add_argument("--samples", type=int, default=10000)
    parser.add_argument("--out", type=Path, default=share_dir() / "config")
    args = parser.parse_args(argv)
    config = load_config(args.config)
    args.out.mkdir(parents=True, exist_ok=True)
    pairs, solid = disabled_collisions(config, args.samples)
    (args.out / "binpick_cell.srdf").write_text(semantic_description(config, pairs, solid))
    header = "# Written by `python -m binpick_sim.tools.moveit_config`: the limits the simulation enforces.\n"
    (args.out / "joint_limits.yaml").write_text(header + yaml.safe_dump(joint_limits(config), sort_keys=False))
    counts = {r: sum(1 for p in pairs if p[2] == r) for r in ("Adjacent", "Default", "Always", "Never")}
    print(f"{args.out}: {len(pairs)} disabled pairs {counts}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
