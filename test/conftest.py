"""Shared fixtures. Every test process gets its own ROS domain and keeps DDS on loopback."""
import ros_env

# Before rclpy loads: a domain of our own, so parallel runs (or a user's running stack) are not heard.
ros_env.isolate()

import pytest  # noqa: E402

# A test hung in C holding the GIL: every thread's stack and exit 1 (hang_watchdog.py: why not pytest-timeout).
from hang_watchdog import (pytest_addoption, pytest_configure, pytest_runtest_protocol,  # noqa: E402,F401
                           pytest_unconfigure)

from binpick_sim.config import load_config  # noqa: E402
from binpick_sim.paths import default_config  # noqa: E402
from binpick_sim.cell.sim import BinPickingSim  # noqa: E402


@pytest.fixture(scope="session")
def config():
    return load_config(default_config())


@pytest.fixture
def sim(config):
    sim = BinPickingSim(config)
    sim.reset(seed=0)
    yield sim
    sim.close()


@pytest.fixture
def ros_context():
    import rclpy
    from rclpy.context import Context

    context = Context()
    rclpy.init(context=context)
    yield context
    rclpy.try_shutdown(context=context)


def parameters(**values):
    from rclpy.parameter import Parameter

    return [Parameter(name, value=value) for name, value in values.items()]


@pytest.fixture
def stack(ros_context):
    """The world, arm and camera nodes in this process, running as fast as possible."""
    from binpick_sim.nodes.process.stack import SimStack

    with SimStack(ros_context, {"world": parameters(realtime_factor=0.0)}) as running:
        yield running


STATE_TOPICS = ["joint_states", "arm/ee_pose", "world/objects"]


@pytest.fixture
def client(ros_context, stack):
    """A client of the in-process stack that does not watch the camera (so nothing is rendered)."""
    from binpick_sim.nodes.clients.client import TOPICS, SimClient

    client = SimClient("test_client", context=ros_context, topics={t: TOPICS[t] for t in STATE_TOPICS})
    client.wait_for_topics(STATE_TOPICS, timeout=30)
    yield client
    client.close()


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
    from binpick_sim.cell import rendering

    try:
        return rendering.probe_egl()
    except rendering.RendererError as exc:
        pytest.skip(f"EGL is not available here: {exc}")


@pytest.fixture(params=["tiny", "egl"])
def renderer(request):
    """Each renderer available here: TinyRenderer always, EGL where PyBullet's plugin loads (else skipped)."""
    if request.param == "egl":
        egl_or_skip()
    return request.param


def with_renderer(config, renderer, **camera):
    """`config` rendered by `renderer`, its main camera changed by `camera`."""
    import dataclasses

    return dataclasses.replace(config, simulation=dataclasses.replace(config.simulation, renderer=renderer),
                               camera=dataclasses.replace(config.camera, **camera))
