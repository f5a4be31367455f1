"""Fixtures of the ROS nodes' tests: a stack serving the simulation standard, used by the standard's
tests and the long-request tests."""
import pytest

from helpers import parameters
from sim_standard import Standard


@pytest.fixture
def running(ros_context, si):
    from binpick_sim.nodes.clients.client import SimClient
    from binpick_sim.nodes.process.stack import SimStack

    with SimStack(ros_context, {"world": parameters(realtime_factor=0.0, camera=False)}) as stack:
        client = SimClient("standard_client", context=ros_context, topics={})
        standard = Standard(client, si)
        try:
            yield stack, standard
        finally:
            client.close()
