"""Where the default cell's time goes, layout by layout: the object type's convex parts against its cost.

    python -m bench.profile_layouts [--seeds 3000:3100] [--steps 20] [--parts 40]

For each seed: a seeded reset of FrankaDelta-v0 (state, direct backend; CPU time), then `--steps` random
env steps (seeded actions, CPU time per step), and the type's count of convex collision parts in its source mesh
and in the copy the cell collides with (cell/hulls.py: at most scene.MAX_PARTS), the pile's contact points and
its deepest penetration after them. Prints the layouts of types with more than `--parts` source parts one by one,
and the share of all reset and step time they take.

Why it exists: the rows of `make bench`'s default_cell group are medians, and a few random_urdfs types are
VHACD decompositions into 40-127 convex parts (57 of the 1,000; the median type has 6). Scaled to 1-3 cm and
collided part by part, such objects interpenetrated between their parts (seed 3031 on 2026-12-02: 1,395 contact
points among 5 objects, 2.6 mm deep): the pile never came to rest, the settle ran its whole `settle_steps`, and
the live pile stayed awake, at up to 400 ms an env step against 2 ms. Their parts merged to 16, they cost about
what the others do. doc/benchmarks-history.md (2026-12-02, evening; 2026-12-03) has the runs.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path
from xml.etree import ElementTree

import gymnasium as gym
import numpy as np

import binpick_sim.envs  # noqa: F401  (registers the envs)
from binpick_sim.cell.hulls import hulled
from binpick_sim.cell.scene import MAX_PARTS


def convex_parts(urdf: Path, max_parts: int | None = None) -> int:
    """The count of convex parts (`o` records) of the collision mesh of `urdf`'s hulled copy with at most
    `max_parts` (None: all of the source's)."""
    copy = Path(hulled(urdf, "copied", max_parts))
    mesh = ElementTree.parse(copy).find("link/collision/geometry/mesh").get("filename")
    with open(copy.parent / mesh) as lines:
        return sum(1 for line in lines if line.startswith("o "))


def measure(seeds: range, steps: int) -> list[dict]:
    env = gym.make("binpick_sim/FrankaDelta-v0", observation="state")
    rows = []
    try:
        env.reset(seed=seeds[0])  # the first reset pays for the settler and the first files: not a layout's own
        for seed in seeds:
            start = time.process_time()
            env.reset(seed=seed)
            reset = time.process_time() - start
            env.action_space.seed(seed)
            actions = [env.action_space.sample() for _ in range(steps)]
            start, taken = time.process_time(), 0
            for action in actions:
                _, _, terminated, truncated, _ = env.step(action)
                taken += 1
                if terminated or truncated:
                    break
            step = (time.process_time() - start) / taken
            sim = env.unwrapped.backend.sim
            c, bodies = sim.world.client, {o.body for o in sim.scene.objects}
            points = [p for p in c.getContactPoints() if p[1] in bodies or p[2] in bodies]
            rows.append(dict(seed=seed, type=sim.scene.object_urdf.stem, parts=convex_parts(sim.scene.object_urdf),
                             kept=convex_parts(sim.scene.object_urdf, MAX_PARTS),
                             objects=len(bodies), reset_ms=1000 * reset, step_ms=1000 * step,
                             contacts=len(points), deepest_mm=-1000 * min([p[8] for p in points], default=0.0)))
    finally:
        env.close()
    return rows


def report(rows: list[dict], parts: int) -> None:
    heavy = [r for r in rows if r["parts"] > parts]
    light = [r for r in rows if r["parts"] <= parts]
    print(f"{len(rows)} layouts, {len(heavy)} of types with more than {parts} convex parts")
    for name, unit in (("reset_ms", "ms a reset"), ("step_ms", "ms an env step")):
        total = sum(r[name] for r in rows)
        print(f"  {unit}: median {np.median([r[name] for r in light]):.2f} (other types), "
              f"{np.median([r[name] for r in heavy]) if heavy else float('nan'):.2f} (many parts); "
              f"the many-part layouts take {100 * sum(r[name] for r in heavy) / total:.0f} % of the total")
    print("  reset p95: all %.1f ms, other types alone %.1f ms" % (np.percentile([r["reset_ms"] for r in rows], 95),
                                                                  np.percentile([r["reset_ms"] for r in light], 95)))
    print("| seed | type | parts | collided as | objects | reset ms | env step ms | contact points | deepest mm |")
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in heavy:
        print(f"| {r['seed']} | {r['type']} | {r['parts']} | {r['kept']} | {r['objects']} | {r['reset_ms']:.0f} "
              f"| {r['step_ms']:.1f} "
              f"| {r['contacts']} | {r['deepest_mm']:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="3000:3100", help="first:end (end not included)")
    parser.add_argument("--steps", type=int, default=20, help="random env steps after each reset")
    parser.add_argument("--parts", type=int, default=40,
                        help="a type with more convex parts in its source mesh counts as many-part")
    args = parser.parse_args()
    first, end = (int(v) for v in args.seeds.split(":"))
    report(measure(range(first, end), args.steps), args.parts)


if __name__ == "__main__":
    main()
