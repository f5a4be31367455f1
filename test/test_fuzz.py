"""The outside fuzz campaign's findings (issue 16), one test or more each: finite extremes, request ids,
NaN-poisoning values, parameters, config files, log lines, expensive queries, counting, a second stack,
memory across resets and step requests. A finding that used to freeze the process runs in a child
process, so that a regression fails here instead of hanging the suite."""
import json
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient
from std_msgs.msg import Float64MultiArray

from binpick_sim.nodes.client import TOPICS, SimClient
from binpick_sim.nodes.spawn import SimProcess

from conftest import parameters

HUGE = 1e308


def statuses(client):
    """A function returning the newest /diagnostics values of a node, by fully qualified name."""
    arrays = []
    client.node.create_subscription(DiagnosticArray, "/diagnostics", arrays.append, 10)

    def status(node_name):
        found = [s for a in arrays for s in a.status if s.name == node_name]
        return {kv.key: kv.value for kv in found[-1].values} if found else {}
    return status


def set_parameter(client, node, name, value):
    """Set one parameter of `node`; returns (successful, reason)."""
    remote = AsyncParameterClient(client.node, node)
    client.spin_until(remote.services_are_ready, 30, f"{node}'s parameter services")
    future = remote.set_parameters([Parameter(name, value=value)])
    client.spin_until(future.done, 30, f"{node}.{name} answered")
    result = future.result().results[0]
    return result.successful, result.reason


def still_stepping(client, steps=20):
    """joint_states keep coming with sim time moving forward, all finite."""
    first = client.stamp("joint_states")
    client.spin_until(lambda: client.stamp("joint_states") > first + steps / 240, 60, "sim time to move on")
    state = client.latest["joint_states"]
    assert np.all(np.isfinite(state.position)) and np.all(np.isfinite(state.velocity))


# --- 1: no Cartesian target reaches PyBullet's IK unbounded ---------------------------------------------

CORE_IK = textwrap.dedent("""
    import numpy as np
    from binpick_sim.config import load_config
    from binpick_sim.controllers import make_controller
    from binpick_sim.paths import default_config
    from binpick_sim.reasoning import Reasoner
    from binpick_sim.sim import BinPickingSim

    sim = BinPickingSim(load_config(default_config()))
    sim.reset(seed=0)
    arm = sim.arm
    for delta in ([0, 0, 1e308, 0, 0], [0, 0, -1e308, 0, 0], [1e308, -1e308, 1e308, 1e308, 1]):
        q = arm.delta_targets(delta)
        assert np.all(np.isfinite(q)) and arm.delta_clipped, (delta, q)
    reasoner = Reasoner(sim)
    answer = reasoner.reachable({"far": np.full(3, 1e308), "near": arm.ee_pose()[0]}, "panda_grasptarget",
                                1e-3, True)
    assert not answer["far"]["reachable"] and np.isfinite(answer["far"]["distance"]), answer["far"]
    assert answer["near"]["reachable"], answer["near"]
    for kind, options in (("ik", {}), ("osc", {"control_delta": False})):
        controller = make_controller(arm, kind, options)
        controller.engage()
        controller.set_goal([1e308, 1e308, 1e308, 0, 0, 0])
        assert controller.clipped
        for _ in range(50):
            sim.world.step()
        assert np.all(np.isfinite(arm.joint_states()[0])), kind
    print("ok")
""")


def test_ik_targets_at_finite_extremes_answer_at_once_in_the_core():
    """Delta actions, reachable and the ik / absolute osc controllers with 1e308: answered, finite, flagged
    as clipped (PyBullet's IK used to loop forever on such a target, holding the GIL)."""
    result = subprocess.run([sys.executable, "-c", CORE_IK], capture_output=True, text=True, timeout=240)
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stderr[-3000:]


def test_a_delta_of_1e308_and_a_reachable_query_at_1e308_leave_the_stack_serving(ros_context, tmp_path):
    """Over ROS, in a separate process: it keeps stepping and publishing, answers the query (not
    reachable, a finite distance), and still stops on SIGINT."""
    log = tmp_path / "sim.log"
    sim = SimProcess({"realtime_factor": 0.0, "camera": False, "reasoning": True}, log=log)
    client = SimClient("fuzz_ik", context=ros_context, topics={"joint_states": TOPICS["joint_states"]})
    try:
        client.wait_for_topics(["joint_states"], timeout=60)
        client.publishers["delta"].publish(Float64MultiArray(data=[0.0, 0.0, HUGE, 0.0, 0.0]))
        still_stepping(client, 240)
        assert set_parameter(client, "reasoning", "positions", [HUGE] * 3)[0]
        answer = client.call("reasoning/reachable", timeout=60)
        assert answer.success, answer.message
        far = json.loads(answer.message)["positions"][0]
        assert far["reachable"] is False and far["distance"] > 1e300, far
        still_stepping(client)
    finally:
        client.close()
        sim.process.send_signal(signal.SIGINT)
        try:
            code = sim.process.wait(20)
        finally:
            sim.stop()
    assert code == 0, log.read_text()[-3000:]


# --- 9: every clip is counted ----------------------------------------------------------------------------

@pytest.fixture
def controller_stack(ros_context):
    """In-process stack with the joint position controller on arm/controller_commands and no camera."""
    from binpick_sim.nodes.stack import SimStack

    with SimStack(ros_context, {"world": parameters(realtime_factor=0.0, camera=False),
                                "arm": parameters(controller="joint_position")}) as running:
        yield running


def test_workspace_and_controller_clips_are_counted(ros_context, controller_stack):
    client = SimClient("fuzz_counts", context=ros_context, topics={"joint_states": TOPICS["joint_states"]})
    try:
        status = statuses(client)
        client.wait_for_topics(["joint_states"], timeout=30)
        client.send("delta", [1.0, 0.0, HUGE, 0.0, 0.0])
        controller = client.node.create_publisher(Float64MultiArray, "arm/controller_commands", 10)
        client.spin_until(lambda: controller.get_subscription_count() > 0, 30, "arm/controller_commands")
        controller.publish(Float64MultiArray(data=[HUGE] * 7))
        counted = lambda topic: int(status("/arm").get(f"clipped[{topic}]", 0))  # noqa: E731
        client.spin_until(lambda: counted("arm/delta_commands") == 1 and counted("arm/controller_commands") == 1,
                          30, "both clips counted")
        still_stepping(client)
    finally:
        client.close()
