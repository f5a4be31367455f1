"""`make demo`: the cell's job, headless: the scripted placer drives `FrankaDelta-v0` on the ROS backend and
moves objects from the pick bin into the drop bin.

The env starts the `sim` executable in its own process (lock-step, task node on) and talks to it only
over topics and services; every action is an `arm/delta_commands` message. The scene is the given one with
the grab rule off and the delta motions unclipped (envs.scripted.placing_scene, written to the output folder),
so that a lifted object is carried over the rims instead of taken away. The demo exits 0 once `--objects`
objects (default 2) lie in the drop bin, and saves a strip of camera frames of the episode (strip.png: the
start, each object's grasp, carry and release, the end) and the last frames (rgb.png, depth.png).

With a scene of several arms (`make demo-two-arms`: config/scene_two_arms.yaml) the env drives the
first arm to pick one object (the reference simulator's grab, counted by the task node: the second arm is sent to the drop
bin, where the placer would carry its object), and at the same time the demo sends every other arm over its
own topics (`<name>/arm/position_commands`) to a pose above the drop bin; it then also needs each of them there.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import cv2
import gymnasium as gym
import numpy as np
from tqdm import tqdm

from .config import load_config, save_config
from .envs import ENV_IDS  # noqa: F401  (registers the env ids)
from .envs.scripted import ScriptedPicker, ScriptedPlacer, placing_scene
from .paths import default_config
from .picking.policy import BinInterior

NAMESPACE = "/binpick_demo"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="episode seed (default 0)")
    parser.add_argument("--out", type=Path, default=Path("build/demo"), help="folder for the images")
    parser.add_argument("--config", type=Path, default=default_config(), help="scene file")
    parser.add_argument("--objects", type=int, default=2, help="objects to move into the drop bin (default 2)")
    args = parser.parse_args(argv)
    if args.objects < 1:
        parser.error("--objects must be at least 1")
    args.out.mkdir(parents=True, exist_ok=True)
    several = load_config(args.config).several_arms
    scene = args.config if several else save_config(placing_scene(load_config(args.config)), args.out / "scene.yaml")
    job = "pick an object" if several else f"move {args.objects} objects into the drop bin"
    print(f"binpick_sim demo: {job}; seed {args.seed}, scene {args.config}, images to {args.out}/")
    started = time.perf_counter()
    with tqdm(total=1, desc="1. starting the simulation process (ROS nodes in lock-step)", disable=None) as bar:
        # State observations for the scripted policy, and the camera at its own size for the saved frames (an
        # image observation would be the camera drawn at 64 x 64). Its own episode length: the job's.
        env = gym.make("binpick_sim/FrankaDelta-v0", backend="ros", config_file=scene, namespace=NAMESPACE,
                       observation="state", render_mode="rgb_array", max_episode_steps=STEPS_PER_OBJECT * args.objects)
        observation, info = env.reset(seed=args.seed)
        bar.update()
    backend = env.unwrapped.backend
    print(f"1. simulation running in process {backend.process.process.pid}, topics under {NAMESPACE}/ "
          f"(its log: {Path(backend.folder.name) / 'sim.log'} while it runs)")
    print(f"2. the pick bin holds {info['objects_left']} objects: "
          f"{', '.join(o.name for o in env.unwrapped.object_views())}")
    others = OtherArms(env) if several else None
    try:
        if others:
            others.send()
            grabbed, steps = pick(env, observation)
            done = bool(grabbed)
        else:
            strip = Strip(env)
            placed, steps = place(env, observation, args.objects, strip)
            done = len(placed) >= args.objects
            strip.save(args.out / "strip.png")
        save_images(env.unwrapped.last, args.out)
        arrived = others.arrived() if others else True
        if others:
            print(f"5. grabs per arm: {env.unwrapped.last.status['arm_grabs']}")
    finally:
        if others:
            others.close()
        env.close()
    took = f"{steps} env steps ({steps * 0.1:.1f} s of sim time, {time.perf_counter() - started:.0f} s here)"
    if done and arrived:
        what = f"{grabbed} grabbed" if several else f"{', '.join(placed)} moved into the drop bin"
        print(f"demo succeeded: {what} after {took}")
        return 0
    if done:
        print("demo failed: the other arms did not reach their poses")
        return 1
    print(f"demo failed: {'nothing grabbed' if several else f'{len(placed)} of {args.objects} objects placed'} "
          f"in {took}")
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


def drive(env, observation, policy, limit: int, desc: str, finished, on_phase=None) -> tuple[dict, int, bool]:
    """Step the scripted `policy` until `finished(info)`, the episode's end or `limit` steps, printing each phase
    as it starts (and calling `on_phase(steps so far)` then); the last info, the steps taken, whether it finished."""
    shown, info = None, {}
    with tqdm(total=limit, desc=desc, unit="step", leave=False, disable=None) as bar:
        for step in range(1, limit + 1):
            action = policy.act(observation)
            if policy.grasp is not None and (policy.grasp.name, policy.phase_name) != shown:
                shown = (policy.grasp.name, policy.phase_name)
                tqdm.write(describe(policy, observation))
                if on_phase is not None:
                    on_phase(step - 1)
            observation, reward, terminated, truncated, info = env.step(action)
            bar.update()
            if finished(info):
                return info, step, True
            if terminated or truncated:
                reason = "the arm touched a bin" if info["bin_collision"] else "out of steps"
                tqdm.write(f"   episode over: {reason}")
                return info, step, False
    return info, limit, False


def pick(env, observation) -> tuple[str | None, int]:
    """Run the scripted picker until the task counts a grab; the object grabbed, and the steps taken."""
    info, steps, grabbed = drive(env, observation, ScriptedPicker(env), env.unwrapped.config.task.max_episode_steps,
                                 "3. picking", lambda info: bool(info["grabbed"]))
    return (info["grabbed"][0] if grabbed else None), steps


STEPS_PER_OBJECT = 120  # env steps the job may take per object (the placer needs 60-80: 10 s of sim time)
SHOWN = ("close", "carry", "open")  # the phases whose first frame goes into the strip


def place(env, observation, objects: int, strip: "Strip") -> tuple[list[str], int]:
    """Run the scripted placer until `objects` objects lie in the drop bin (or the episode ends), printing each
    phase as it starts; the names of the objects in the drop bin, and the steps taken."""
    placer = ScriptedPlacer(env)
    drop = env.unwrapped.config.scene.drop_bin

    def inside() -> list[str]:
        return [v.name for v in env.unwrapped.object_views() if in_bin(v.position, drop)]

    def shown(step: int) -> None:
        if placer.phase_name in SHOWN:
            strip.add(f"{placer.phase_name} {placer.grasp.name}", step)

    strip.add("start", 0)
    _, steps, _ = drive(env, observation, placer, STEPS_PER_OBJECT * objects, "3. placing",
                        lambda info: len(inside()) >= objects and placer.phase_name in ("choose", "rise"), shown)
    strip.add("end", steps)
    return inside(), steps


def in_bin(position, bin_config) -> bool:
    """Whether a point lies inside the bin's walls, below its rim (bins turned about z only)."""
    height = float(position[2]) - bin_config.position[2]
    inside = BinInterior.from_config(bin_config).margin(np.asarray(position[:2], float)[None]) > 0
    return inside and 0 < height < bin_config.size[2]


class Strip:
    """Camera frames of the episode at the moments that tell the job (the start, each object's grasp, carry and
    release, the end), shrunk to half size, labelled, and laid out four to a row in one PNG."""

    COLUMNS = 4

    def __init__(self, env):
        self.env = env
        self.frames: list[np.ndarray] = []

    def add(self, label: str, step: int) -> None:
        rgb = self.env.render()
        if rgb is None:
            return
        frame = cv2.resize(cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), (rgb.shape[1] // 2, rgb.shape[0] // 2),
                           interpolation=cv2.INTER_AREA)
        text = f"{step * 0.1:4.1f} s  {label}"
        cv2.putText(frame, text, (6, 18), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (0, 0, 0), 3, cv2.LINE_AA)
        cv2.putText(frame, text, (6, 18), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (255, 255, 255), 1, cv2.LINE_AA)
        self.frames.append(frame)

    def save(self, path: Path) -> None:
        if not self.frames:
            return
        blank = np.zeros_like(self.frames[0])
        rows = [self.frames[k:k + self.COLUMNS] for k in range(0, len(self.frames), self.COLUMNS)]
        rows[-1] = rows[-1] + [blank] * (self.COLUMNS - len(rows[-1]))
        cv2.imwrite(str(path), np.vstack([np.hstack(row) for row in rows]))
        print(f"4. saved a strip of {len(self.frames)} frames of the episode: {path}")


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
    print(f"   and the last camera frames ({last.rgb.shape[1]}x{last.rgb.shape[0]}): {rgb_path} and "
          f"{depth_path} (depth colour-mapped, near = red, far = blue, {near:.2f}-{far:.2f} m)")


if __name__ == "__main__":
    sys.exit(main())
