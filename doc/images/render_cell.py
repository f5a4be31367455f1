"""Renders doc/images/cell.png, the README's picture of the cell: the default scene after a reset, seen
from the front and above by PyBullet's TinyRenderer (no display needed).

    .venv/bin/python doc/images/render_cell.py [--seed 0] [--out doc/images/cell.png]
"""
import argparse

import cv2
import numpy as np

from binpick_sim.cell.bin_picking_sim import BinPickingSim
from binpick_sim.config import load_config
from binpick_sim.paths import default_config


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="doc/images/cell.png")
    args = parser.parse_args()
    sim = BinPickingSim(load_config(default_config()))
    try:
        sim.reset(seed=args.seed)
        c = sim.world.client
        width, height = 640, 400
        view = c.computeViewMatrixFromYawPitchRoll(cameraTargetPosition=[0.3, 0.0, 0.3], distance=1.25,
                                                   yaw=65, pitch=-30, roll=0, upAxisIndex=2)
        projection = c.computeProjectionMatrixFOV(fov=45, aspect=width / height, nearVal=0.05, farVal=5.0)
        _, _, rgba, _, _ = c.getCameraImage(width, height, view, projection, shadow=1,
                                            renderer=c.ER_TINY_RENDERER)
        rgb = np.asarray(rgba, np.uint8).reshape(height, width, 4)[:, :, :3]
        cv2.imwrite(args.out, cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_PNG_COMPRESSION, 9])
    finally:
        sim.close()


if __name__ == "__main__":
    main()
