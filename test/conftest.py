"""Fixtures every folder shares. Every test process gets its own ROS domain and keeps DDS on loopback.

The tests are grouped by feature in folders that mirror the package: cell/, control/, vision/ (cameras
and renderers, core and nodes), nodes/, picking/, reasoning/, envs/, rollouts/ (Ray, datasets), launch/
(launch files, executables, packaging), docs/ (the README's commands and records), robustness/ (bad
input, load, starting and stopping). A fixture only one folder uses lives in that folder's conftest.py.

No folder is a package (no __init__.py): pytest's default prepend import mode puts each test file's own
folder on sys.path, and this file puts test/ there, so helper modules import by their name alone from
any folder (helpers.py, sim_standard.py, urdf_kinematics.py, ros_env.py; a folder's own helpers, such
as launch/launch_checks.py, from that folder). So module basenames must be unique across folders (pytest
refuses two test_x.py). Tests never import from a conftest.py: with several, `conftest` names whichever
pytest loaded last; plain helpers go in helpers.py.
"""
import ros_env

# Before rclpy loads: a domain of our own, so parallel runs (or a user's running stack) are not heard.
ros_env.isolate()

import pytest  # noqa: E402

# A test hung in C holding the GIL: every thread's stack and exit 1 (hang_watchdog.py: why not pytest-timeout).
from hang_watchdog import (pytest_addoption, pytest_configure, pytest_runtest_protocol,  # noqa: E402,F401
                           pytest_sessionstart, pytest_terminal_summary, pytest_unconfigure)

# At the end, the shared memory of the participants the run killed (shm_hygiene.py: why).
from shm_hygiene import pytest_sessionfinish  # noqa: E402,F401

# BINPICK_RECORD_SKIPS=FILE: the skipped tests' ids, for CI to run them again with the ROS tools (skip_record.py).
from skip_record import pytest_collectreport, pytest_runtest_logreport  # noqa: E402,F401

from binpick_sim.config import load_config  # noqa: E402
from binpick_sim.paths import default_config  # noqa: E402
from binpick_sim.cell.bin_picking_sim import BinPickingSim  # noqa: E402
from helpers import STATE_TOPICS, egl_or_skip, parameters  # noqa: E402
from longest_first import order  # noqa: E402


def pytest_collection_modifyitems(session, config, items) -> None:
    """The longest files first, so the two workers of `make test` end together (longest_first.py); the
    `scale` tests skipped unless the marker expression names them (`make test-scale`)."""
    order(items, ros_env.REPO / "test")
    if "scale" not in (config.option.markexpr or ""):
        skip = pytest.mark.skip(reason="at scale: `make test-scale` runs it (a smaller form runs in make test)")
        for item in items:
            if "scale" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def participants_announce_often():
    ros_env.announce_often()  # before the session's first participant (ros_env.py: why)


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


@pytest.fixture
def stack(ros_context):
    """The world, arm and camera nodes in this process, running as fast as possible."""
    from binpick_sim.nodes.process.stack import SimStack

    with SimStack(ros_context, {"world": parameters(realtime_factor=0.0)}) as running:
        yield running


@pytest.fixture
def client(ros_context, stack):
    """A client of the in-process stack that does not watch the camera (so nothing is rendered)."""
    from binpick_sim.nodes.clients.client import TOPICS, SimClient

    client = SimClient("test_client", context=ros_context, topics={t: TOPICS[t] for t in STATE_TOPICS})
    client.wait_for_topics(STATE_TOPICS, timeout=30)
    yield client
    client.close()


@pytest.fixture(params=["tiny", "egl"])
def renderer(request):
    """Each renderer available here: TinyRenderer always, EGL where PyBullet's plugin loads (else skipped)."""
    if request.param == "egl":
        egl_or_skip()
    return request.param


@pytest.fixture
def si():
    """The simulation_interfaces package (its messages, services and action), or the test skipped naming it."""
    from binpick_sim.nodes.servers import simulation_node
    from sim_standard import MISSING

    if not simulation_node.available():
        pytest.skip(MISSING)
    import simulation_interfaces
    import simulation_interfaces.action  # noqa: F401
    import simulation_interfaces.msg  # noqa: F401
    import simulation_interfaces.srv  # noqa: F401

    return simulation_interfaces


@pytest.fixture
def robot_backend(sim):
    """A robot backend whose physics steps the test takes itself (the loop is never started: its calls
    run at once), so a race can be staged exactly."""
    from binpick_sim.cell.loop import PhysicsLoop
    from binpick_sim.control.robot_interface import RobotBackend

    return RobotBackend(sim.arm, PhysicsLoop(sim.world, lockstep=True), max_action_repetitions=1)
