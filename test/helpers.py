"""Plain helpers the tests of several folders share (fixtures live in conftest.py files).

A module of its own rather than conftest.py: once a sub-folder has its own conftest.py, `import conftest`
names whichever conftest pytest loaded last, so tests never import from a conftest.
"""
import numpy as np
import pytest

STATE_TOPICS = ["joint_states", "arm/ee_pose", "world/objects"]


def same(a, b) -> bool:
    """Exactly equal, recursively: types, dtypes, shapes and bits."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return a == b or (a != a and b != b)
    return a == b


def parameters(**values):
    from rclpy.parameter import Parameter

    return [Parameter(name, value=value) for name, value in values.items()]


def parameter_setter(client, node: str):
    """set(**values): `node`'s parameters set over ROS through one rclpy AsyncParameterClient of `client`'s
    node (its services waited for here); returns each value's SetParametersResult, in order."""
    from rclpy.parameter_client import AsyncParameterClient

    remote = AsyncParameterClient(client.node, node)
    client.spin_until(remote.services_are_ready, 30, f"{node}'s parameter services")

    def set_parameters(**values):
        future = remote.set_parameters(parameters(**values))
        client.spin_until(future.done, 30, f"{node}'s {', '.join(values)} answered")
        return future.result().results
    return set_parameters


def rss_mb(pid: int | str = "self") -> float:
    """Resident MB of a process; 0 for one that has ended (a zombie's status has no VmRSS, a reaped one no file)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            fields = status.read().split("VmRSS:")
    except FileNotFoundError:
        return 0.0
    return int(fields[1].split()[0]) / 1024 if len(fields) > 1 else 0.0


def statuses(client):
    """A function returning the newest /diagnostics values of a node, by fully qualified name."""
    from diagnostic_msgs.msg import DiagnosticArray

    arrays = []
    client.node.create_subscription(DiagnosticArray, "/diagnostics", arrays.append, 10)

    def status(node_name):
        found = [s for a in arrays for s in a.status if s.name == node_name]
        return {kv.key: kv.value for kv in found[-1].values} if found else {}
    return status


def egl_or_skip() -> str:
    """The GL strings of PyBullet's EGL plugin here, or the test skipped saying why EGL cannot load."""
    from binpick_sim.cell.rendering import renderers

    try:
        return renderers.probe_egl()
    except renderers.RendererError as exc:
        pytest.skip(f"EGL is not available here: {exc}")


def with_renderer(config, renderer, **camera):
    """`config` rendered by `renderer`, its main camera changed by `camera`."""
    import dataclasses

    return dataclasses.replace(config, simulation=dataclasses.replace(config.simulation, renderer=renderer),
                               camera=dataclasses.replace(config.camera, **camera))


def move_grasp_target_to(sim, point):
    """Joint-space move (no workspace clipping) of the grasp target to `point`, pointing down."""
    arm = sim.arm
    arm.move_to(arm.ik(np.asarray(point, float), arm.ee_yaw()))
    assert np.linalg.norm(arm.ee_pose()[0] - point) < 0.005
