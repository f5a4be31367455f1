"""robosuite's controller family, acting on the Panda's seven arm joints with torques."""
from ...config import CONTROLLER_TYPES as CONTROLLER_KINDS  # "none" and the names below
from .base import Controller, LinearInterpolator, OrientationInterpolator
from .cartesian import InverseKinematicsController, OperationalSpaceController
from .joint import JointPositionController, JointTorqueController, JointVelocityController

CONTROLLERS = {c.name: c for c in (JointPositionController, JointVelocityController, JointTorqueController,
                                   OperationalSpaceController, InverseKinematicsController)}


def make_controller(arm, kind: str, options: dict | None = None) -> Controller:
    """A controller by name with its options (the scene file's `controller` section)."""
    if kind not in CONTROLLERS:
        raise ValueError(f"unknown controller {kind!r} (known: {', '.join(CONTROLLER_KINDS)})")
    try:
        return CONTROLLERS[kind](arm, **(options or {}))
    except TypeError as exc:  # an option the controller does not have
        raise ValueError(f"controller.options: {kind}: {exc}") from None


__all__ = ["CONTROLLERS", "CONTROLLER_KINDS", "Controller", "InverseKinematicsController", "JointPositionController",
           "JointTorqueController", "JointVelocityController", "LinearInterpolator", "OperationalSpaceController",
           "OrientationInterpolator", "make_controller"]
