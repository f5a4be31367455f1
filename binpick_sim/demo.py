"""`make demo`: the scripted picker drives `FrankaDelta-v0` on the ROS backend, headless.

The env starts the `sim` executable in its own process (lock-step, task node on) and talks to it only
over topics and services; every action is an `arm/delta_commands` message. The demo exits 0 once the
task node counts a grab (an object held a bin's height above the rims by both fingers).

With a scene of several arms (`make demo-two-arms`: config/scene_two_arms.yaml) the env drives the
first arm, and at the same time the demo sends every other arm over its own topics
(`<name>/arm/position_commands`) to a pose above the drop bin; it then also needs each of them there.
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
        # State observations for the picker, and the camera at its own size for the saved frames (an image
        # observation would be the camera drawn at 64 x 64).
        env = gym.make("binpick_sim/FrankaDelta-v0", backend="ros", config_file=args.config, namespace=NAMESPACE,
                       observation="state", render_mode="rgb_array")
        observation, info = env.reset(seed=args.seed)
        bar.update()
    backend = env.unwrapped.backend
    print(f"1. simulation running in process {backend.process.process.pid}, topics under {NAMESPACE}/ "
          f"(its log: {Path(backend.folder.name) / 'sim.log'} while it runs)")
    print(f"2. the pick bin holds {info['objects_left']} objects: "
          f"{', '.join(o.name for o in env.unwrapped.object_views())}")
    others = OtherArms(env) if env.unwrapped.config.several_arms else None
    try:
        if others:
            others.send()
        grabbed, steps = pick(env, observation)
        save_images(env.unwrapped.last, args.out)
        arrived = others.arrived() if others else True
        if others:
            print(f"5. grabs per arm: {env.unwrapped.last.status['arm_grabs']}")
    finally:
        if others:
            others.close()
        env.close()
    if grabbed and arrived:
        print(f"demo succeeded: {grabbed} grabbed after {steps} env steps ({steps * 0.1:.1f} s of sim time)")
        return 0
    if grabbed:
        print("demo failed: the other arms did not reach their poses")
        return 1
    print(f"demo failed: nothing grabbed in {steps} env steps")
    return 1


# Joint targets for the other arms: in the two-arm scene, the right arm's grasp target 25 cm above the drop
# bin's centre (0.5, 0.18, 0.25), out of the first arm's way (its IK solution, rounded).
OTHER_ARM_POSE = np.array([1.39, -0.31, -1.69, -2.21, -0.39, 2.21, -2.42, 0.02, 0.02])


class OtherArms:
    """Every arm but the first, each driven over its own namespace's topics while the env picks."""

    def __init__(self, env):
        from sensor_msgs.msg import JointState

        from .nodes.clients.client import SimClient

        backend = env.unwrapped.backend
        names = [arm.name for arm in env.unwrapped.config.arms[1:]]
        self.clients = {name: SimClient(f"demo_{name}", namespace=f"{NAMESPACE}/{name}", context=backend.context,
                                        topics={"joint_states": JointState}) for name in names}

    def send(self) -> None:
        for name, client in self.clients.items():
            client.spin_until(lambda c=client: c.publishers["position"].get_subscription_count() > 0, 30,
                              f"{name}'s arm node")
            client.send("position", OTHER_ARM_POSE)
            print(f"   {name}: sent to {np.round(OTHER_ARM_POSE[:7], 2).tolist()} on "
                  f"{NAMESPACE}/{name}/arm/position_commands")

    def arrived(self) -> bool:
        done = True
        for name, client in self.clients.items():
            client.wait_for_topics(["joint_states"], timeout=30)
            client.spin_for(0.2)
            error = float(np.abs(client.joint_positions()[:7] - OTHER_ARM_POSE[:7]).max())
            names = list(client.latest["joint_states"].name)
            print(f"   {name}: {names[0]}..{names[-1]} at the sent pose within {error:.4f} rad")
            done = done and error < 0.01
        return done

    def close(self) -> None:
        for client in self.clients.values():
            client.close()


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
