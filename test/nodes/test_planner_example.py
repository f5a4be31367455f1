"""A real planner against the live cell (issue 32, item 5): examples/planner_client.py, in this process but
talking to the stack only over DDS, reads the URDF, SRDF, planning scene and joint states the simulation
publishes, plans with OMPL's RRTConnect around the bins, executes through FollowJointTrajectory and
GripperCommand, and lifts an object until the task node counts the grab, without an arm-bin contact.

Needs ompl (requirements-planning.txt), control_msgs and moveit_msgs: CI installs all three (.ci/run);
on a plain machine it skips, naming what is missing."""
import importlib.util

import pytest

import ros_env
from helpers import parameters

MISSING = ros_env.missing("ompl", "control_msgs", "moveit_msgs")


def load_example():
    spec = importlib.util.spec_from_file_location("planner_client", ros_env.REPO / "examples" / "planner_client.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.skipif(MISSING is not None, reason=f"{MISSING}; `make planner-example` installs ompl")
def test_ompl_plans_around_the_bins_and_lifts_an_object(ros_context):
    from binpick_sim.nodes.process.stack import SimStack

    example = load_example()
    with SimStack(ros_context, {"world": parameters(realtime_factor=0.0, camera=False, task=True)}) as stack:
        assert stack.sim.config.task.terminate_on_bin_collision  # so the task node reports arm-bin contacts
        client = example.PickClient(context=ros_context)
        try:
            report = example.pick(client)
        finally:
            client.close()
    assert len(report["grabbed"]) == 1 and report["plans"]
    assert report["arm_bin_collisions"] == [] and report["task_statuses"] > 10
