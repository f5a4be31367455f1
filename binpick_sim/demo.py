"""`make demo`: the scripted picker drives `FrankaDelta-v0` on the ROS backend, headless.

The env starts the `sim` executable in its own process (lock-step, task node on) and talks to it only
over topics and services; every action is an `arm/delta_commands` message. The demo exits 0 once the
task node counts a grab (an object held a bin's height above the rims by both fingers).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import cv2
import gymnasium as gym
import numpy as np
from tqdm import tqdm

from .envs import ENV_IDS  # noqa: F401  (registers the env ids)
from .envs.scripted import ScriptedPicker
from .paths import default_config

NAMESPACE = "/binpick_demo"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="episode seed (default 0)")
    parser.add_argument("--out", type=Path, default=Path("build/demo"), help="folder for the images")
    parser.add_argument("--config", type=Path, default=default_config(), help="scene file")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)

    print(f"binpick_sim demo: seed {args.seed}, scene {args.config}, images to {args.out}/")
    with tqdm(total=1, desc="1. starting the simulation process (ROS nodes in lock-step)", disable=None) as bar:
        env = gym.make("binpick_sim/FrankaDelta-v0", backend="ros", config_file=args.config, namespace=NAMESPACE)
        observation, info = env.reset(seed=args.seed)
        bar.update()
    backend = env.unwrapped.backend
    print(f"1. simulation running in process {backend.process.process.pid}, topics under {NAMESPACE}/ "
          f"(its log: {Path(backend.folder.name) / 'sim.log'} while it runs)")
    print(f"2. the pick bin holds {info['objects_left']} objects: "
          f"{', '.join(o.name for o in env.unwrapped.object_views())}")
    try:
        grabbed, steps = pick(env, observation)
        save_images(env.unwrapped.last, args.out)
    finally:
        env.close()
    if grabbed:
        print(f"demo succeeded: {grabbed} grabbed after {steps} env steps ({steps * 0.1:.1f} s of sim time)")
        return 0
    print(f"demo failed: nothing grabbed in {steps} env steps")
    return 1


def pick(env, observation) -> tuple[str | None, int]:
    """Run the scripted picker until the task counts a grab, printing each phase as it starts."""
    picker = ScriptedPicker(env)
    limit = env.unwrapped.config.task.max_episode_steps
    shown = None
    with tqdm(total=limit, desc="3. picking", unit="step", leave=False, disable=None) as bar:
        for step in range(1, limit + 1):
            action = picker.act(observation)
            if picker.grasp is not None and (picker.grasp.name, picker.phase_name) != shown:
                shown = (picker.grasp.name, picker.phase_name)
                tqdm.write(describe(picker, observation))
            observation, reward, terminated, truncated, info = env.step(action)
            bar.update()
            if info["grabbed"]:
                return info["grabbed"][0], step
            if terminated or truncated:
                reason = "the arm touched a bin" if info["bin_collision"] else "out of steps"
                tqdm.write(f"   episode over: {reason}")
                return None, step
    return None, limit


def describe(picker, observation) -> str:
    grasp = picker.grasp
    where = metres(observation["ee_position"])
    if picker.phase_name == "approach":
        return (f"   attempt {picker.attempts}: {grasp.name} at {metres(grasp.position)} m, "
                f"gripper yaw {np.degrees(grasp.yaw):.0f} deg; moving above it from {where}")
    return f"   {picker.phase_name:8s} (gripper at {where} m)"


def metres(vector) -> list[float]:
    return [round(float(v), 3) for v in vector]


def save_images(last, out: Path) -> None:
    rgb_path, depth_path = out / "rgb.png", out / "depth.png"
    cv2.imwrite(str(rgb_path), cv2.cvtColor(last.rgb, cv2.COLOR_RGB2BGR))
    depth = last.depth
    finite = np.isfinite(depth)
    near, far = np.percentile(depth[finite], [1, 99]) if finite.any() else (0.0, 1.0)
    scaled = np.clip((depth - near) / max(far - near, 1e-6), 0, 1)
    scaled[~finite] = 1.0
    cv2.imwrite(str(depth_path), cv2.applyColorMap((255 * (1 - scaled)).astype(np.uint8), cv2.COLORMAP_TURBO))
    print(f"4. saved the last camera frames ({last.rgb.shape[1]}x{last.rgb.shape[0]}): {rgb_path} and "
          f"{depth_path} (depth colour-mapped, near = red, far = blue, {near:.2f}-{far:.2f} m)")


if __name__ == "__main__":
    sys.exit(main())
