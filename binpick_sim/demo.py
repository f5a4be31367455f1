"""`make demo`: the simulation runs in its own process; this client picks an object over ROS topics.

The client sees only what any ROS user sees (joint_states, arm/ee_pose, world/objects, the camera)
and acts only through arm/delta_commands. It exits 0 once an object is held above the bins.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import rclpy
from scipy.spatial.transform import Rotation
from tqdm import tqdm

from .config import Config, load_config
from .nodes.client import SimClient
from .nodes.spawn import SimProcess
from .paths import default_config
from .policy import Grasp, choose_grasp, yaw_step

POSITION_REACHED = 0.002  # m
YAW_REACHED = 0.01  # rad
MOVES_PER_WAYPOINT = 8
STILL = 0.0002  # m between two ee_pose messages (10 ms of sim time apart) counts as not moving
STILL_MESSAGES = 5
SETTLE_DELAY = 0.1  # sim seconds after a command before stillness counts (the command must arrive first)
GRIPPER_HOLDS = 0.001  # m: a finger further open than this after closing is holding something


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="episode seed (default 0)")
    parser.add_argument("--out", type=Path, default=Path("build/demo"), help="folder for the images and sim.log")
    parser.add_argument("--config", type=Path, default=default_config(), help="scene file")
    parser.add_argument("--attempts", type=int, default=3, help="objects to try before giving up")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    config = load_config(args.config)

    print(f"binpick_sim demo: seed {args.seed}, scene {args.config}, output in {args.out}/")
    parameters = {"seed": args.seed, "realtime_factor": 0.0, "config": args.config.resolve()}
    with SimProcess(parameters, log=args.out / "sim.log") as sim:
        print(f"1. simulation started in process {sim.process.pid} (its log: {args.out / 'sim.log'})")
        rclpy.init()
        client = SimClient("demo")
        try:
            picked = run(client, config, args.attempts)
            save_images(client, args.out)
        finally:
            client.close()
            rclpy.try_shutdown()
    print("demo succeeded: an object is held above the bins" if picked else "demo failed: nothing was picked")
    return 0 if picked else 1


def run(client: SimClient, config: Config, attempts: int) -> bool:
    topics = ["joint_states", "arm/ee_pose", "world/objects", "camera/image_raw", "camera/depth/image_raw"]
    with tqdm(total=1, desc="2. waiting for joint_states, ee_pose, objects and images", disable=None) as bar:
        client.wait_for_topics(topics, timeout=120)
        bar.update()
    objects = client.objects()
    print(f"3. the pick bin holds {len(objects)} objects: {', '.join(o.name for o in objects)}")
    tried: set[str] = set()
    for attempt in range(1, attempts + 1):
        grasp = choose_grasp(client.objects(), exclude=tried)
        if grasp is None:
            break
        tried.add(grasp.name)
        print(f"4.{attempt} picking {grasp.name} at {np.round(grasp.position, 3).tolist()} m, "
              f"gripper yaw {np.degrees(grasp.yaw):.0f} deg")
        if pick(client, grasp, config):
            return True
        print(f"    {grasp.name} was not held; opening and trying another object")
        client.send("delta", [0, 0, 0.05, 0, 1])
        wait_until_still(client)
    return False


def pick(client: SimClient, grasp: Grasp, config: Config) -> bool:
    waypoints = grasp.waypoints()
    with tqdm(waypoints, desc="    moving", unit="phase", leave=False, disable=None) as bar:
        for phase, target, gripper in bar:
            bar.set_postfix_str(phase)
            if target is None:
                client.send("delta", [0, 0, 0, 0, gripper])
                wait_until_still(client, fingers=True)
            else:
                move_to(client, target, grasp.yaw, gripper)
            tqdm.write(f"    {phase:8s} done: gripper at {np.round(client.ee_pose()[0], 3).tolist()} m, "
                       f"finger gap {1000 * finger_gap(client):.1f} mm")
    return held_above_bins(client, grasp.name, config)


def move_to(client: SimClient, target: np.ndarray, yaw: float, gripper: float) -> None:
    """Send deltas (each relative to where the gripper is now) until it is at the target."""
    for _ in range(MOVES_PER_WAYPOINT):
        position, orientation = client.ee_pose()
        error = target - position
        turn = yaw_step(Rotation.from_quat(orientation).as_euler("xyz")[2], yaw)
        if np.linalg.norm(error) < POSITION_REACHED and abs(turn) < YAW_REACHED:
            return
        client.send("delta", [*error, turn, gripper])
        wait_until_still(client)


def wait_until_still(client: SimClient, fingers: bool = False, timeout: float = 30.0) -> None:
    """Wait for the arm (or the fingers) to take up the last command and then stop moving."""
    client.wait_for_stamp("joint_states", client.stamp("joint_states") + SETTLE_DELAY)
    topic = "joint_states" if fingers else "arm/ee_pose"
    reading = (lambda: client.joint_positions()[7:]) if fingers else (lambda: client.ee_pose()[0])
    still, previous = 0, reading()
    deadline = time.monotonic() + timeout
    while still < STILL_MESSAGES and time.monotonic() < deadline:
        client.wait_for_new(topic)
        current = reading()
        still = still + 1 if np.max(np.abs(current - previous)) < STILL else 0
        previous = current


def finger_gap(client: SimClient) -> float:
    return float(np.sum(client.joint_positions()[7:]))


def held_above_bins(client: SimClient, name: str, config: Config) -> bool:
    """The seed's success rule, as far as a client can see it: the object is at least a bin's height above
    the highest bin's rim, and the closed fingers are kept apart by something."""
    client.wait_for_new("world/objects", count=2)
    bins = [config.scene.pick_bin, config.scene.drop_bin]
    rim = max(b.position[2] + b.size[2] for b in bins)
    height = max(b.size[2] for b in bins)
    obj = next((o for o in client.objects() if o.name == name), None)
    return obj is not None and obj.position[2] >= rim + height and finger_gap(client) > GRIPPER_HOLDS


def save_images(client: SimClient, out: Path) -> None:
    client.wait_for_new("camera/image_raw")
    client.wait_for_new("camera/depth/image_raw")
    rgb_path, depth_path = out / "rgb.png", out / "depth.png"
    cv2.imwrite(str(rgb_path), cv2.cvtColor(client.rgb(), cv2.COLOR_RGB2BGR))
    depth = client.depth()
    finite = np.isfinite(depth)
    near, far = np.percentile(depth[finite], [1, 99]) if finite.any() else (0.0, 1.0)
    scaled = np.clip((depth - near) / max(far - near, 1e-6), 0, 1)
    scaled[~finite] = 1.0
    cv2.imwrite(str(depth_path), cv2.applyColorMap((255 * (1 - scaled)).astype(np.uint8), cv2.COLORMAP_TURBO))
    print(f"5. saved the last camera frames: {rgb_path} (rgb) and {depth_path} (depth, near = red, far = blue; "
          f"{near:.2f}-{far:.2f} m)")


if __name__ == "__main__":
    sys.exit(main())
