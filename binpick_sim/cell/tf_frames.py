"""The cell's coordinate frames as TF would carry them: (parent, child, position, xyzw) of the objects,
the cameras and, for a simulation that stands in for robot_state_publisher, the arms' links. Frame
names are those of the robot description (description.py) and of `world/objects`."""
from __future__ import annotations

import numpy as np

WORLD = "world"
OPTICAL_RPY = (-np.pi / 2, 0.0, -np.pi / 2)  # camera_link -> camera_optical_frame (REP 103), as description.py

Frame = tuple[str, str, tuple, tuple]


def object_frames(sim) -> list[Frame]:
    """world -> each object (its name), at the pose of its mesh's frame (the planning scene's and the
    markers' pose)."""
    return [(WORLD, obj.name, tuple(position), tuple(orientation)) for obj, position, orientation in sim.object_poses()]


def camera_frames(sim) -> list[Frame]:
    """Each camera's link in its parent frame (world or an arm link) and its optical frame in its link."""
    c = sim.world.client
    optical = tuple(c.getQuaternionFromEuler(OPTICAL_RPY))
    frames = []
    for camera in sim.cameras.values():
        config = camera.config
        parent = config.parent
        if parent != WORLD and sim.config.several_arms:
            parent = f"{sim.config.arm.name}_{parent}"
        rotation = tuple(c.getQuaternionFromEuler(np.radians(config.orientation_deg)))
        frames.append((parent, camera.link_frame, tuple(config.position), rotation))
        frames.append((camera.link_frame, camera.optical_frame, (0.0, 0.0, 0.0), optical))
    return frames


def cell_frames(sim, bases: bool = True) -> list[Frame]:
    """The description's fixed frames the simulation publishes when no robot_state_publisher does: world ->
    `scene` (the bins' link), the cameras' (camera_frames) and, with `bases`, world -> each arm's
    panda_link0 at its base pose (as description.py fixes them; left out where robot_frames sends the
    links)."""
    c = sim.world.client
    frames = [(WORLD, "scene", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))]
    if bases:
        for arm in sim.arms:
            prefix = f"{arm.config.name}_" if sim.config.several_arms else ""
            rotation = tuple(c.getQuaternionFromEuler(np.radians(arm.config.base_orientation_deg)))
            frames.append((WORLD, prefix + "panda_link0", tuple(arm.config.base_position), rotation))
    return frames + camera_frames(sim)


def robot_frames(sim) -> list[Frame]:
    """world -> every link of every arm (names as the description's: prefixed with several arms), as
    PyBullet has them now."""
    c = sim.world.client
    frames = []
    for arm in sim.arms:
        prefix = f"{arm.config.name}_" if sim.config.several_arms else ""
        base, orientation = c.getBasePositionAndOrientation(arm.body)  # the base's centre of mass
        to_link = c.invertTransform(*c.getDynamicsInfo(arm.body, -1)[3:5])
        position, orientation = c.multiplyTransforms(base, orientation, *to_link)
        frames.append((WORLD, prefix + c.getBodyInfo(arm.body)[0].decode(), tuple(position), tuple(orientation)))
        indices = sorted(arm.link_index.values())
        states = c.getLinkStates(arm.body, indices, computeForwardKinematics=True)
        names = {index: name for name, index in arm.link_index.items()}
        for index, state in zip(indices, states):
            frames.append((WORLD, prefix + names[index], tuple(state[4]), tuple(state[5])))
    return frames
