"""A planner's way in over DDS: arm/joint_trajectory and arm/joint_commands, and their garbage."""
import numpy as np
import pytest
from builtin_interfaces.msg import Duration
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.qos import DurabilityPolicy, QoSProfile
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from binpick_sim.cell.arm.panda import JOINT_NAMES

from helpers import parameters

ARM = list(JOINT_NAMES[:7])


def point(positions, seconds, velocities=()):
    return JointTrajectoryPoint(positions=list(map(float, positions)), velocities=list(map(float, velocities)),
                                time_from_start=Duration(sec=int(seconds), nanosec=int(seconds % 1 * 1e9)))


@pytest.fixture
def planner(client):
    publishers = {"trajectory": client.node.create_publisher(JointTrajectory, "arm/joint_trajectory", 10),
                  "commands": client.node.create_publisher(JointState, "arm/joint_commands", 10)}
    arrays = []
    client.node.create_subscription(DiagnosticArray, "/diagnostics", arrays.append, 10)

    def rejected(topic):
        found = [s for a in arrays for s in a.status if s.name == "/arm"]
        values = {kv.key: kv.value for kv in found[-1].values} if found else {}
        return int(values.get(f"rejected[{topic}]", 0))
    client.spin_until(lambda: all(p.get_subscription_count() for p in publishers.values()), 20, "subscribers")
    return publishers, rejected


def test_a_trajectory_is_followed_in_time(ros_context):
    """On a lock-step stack, so the arm is looked at exactly 1 s and 2 s after the trajectory arrived
    (a free-running stack can outpace a reader on a busy machine)."""
    from std_msgs.msg import UInt32, UInt64

    from binpick_sim.nodes.clients.client import TOPICS, SimClient
    from binpick_sim.nodes.process.stack import SimStack

    with SimStack(ros_context, {"world": parameters(lockstep=True, camera=False)}) as stack:
        client = SimClient("stepping_planner", context=ros_context, topics={"joint_states": TOPICS["joint_states"]})
        received = []
        client.node.create_subscription(UInt64, "arm/commands_received", lambda m: received.append(m.data),
                                        QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        trajectories = client.node.create_publisher(JointTrajectory, "arm/joint_trajectory", 10)
        stepper = client.node.create_publisher(UInt32, "world/step", 10)
        client.spin_until(lambda: trajectories.get_subscription_count() and stepper.get_subscription_count(), 20,
                          "the stack's subscribers")

        def advance_to(seconds):
            steps = round((seconds - stack.sim.world.time) / stack.sim.world.timestep)
            stepper.publish(UInt32(data=steps))
            return client.wait_for_stamp("joint_states", seconds - 1e-6, timeout=30)

        start = stack.sim.world.time  # the world is paused: it stays here until asked
        advance_to(start)
        home = stack.sim.arm.home[:7]
        a, b = home + [0.3, 0.2, 0, -0.2, 0, 0, 0], home + [-0.2, 0.1, 0.2, 0, 0, 0.1, 0]
        trajectories.publish(JointTrajectory(joint_names=ARM, points=[point(a, 1.0), point(b, 2.0)]))
        client.spin_until(lambda: received and received[-1] >= 1, 20, "the arm node to take the trajectory")
        assert np.abs(np.array(advance_to(start + 1.0).position[:7]) - a).max() < 0.05  # the first point on time
        assert np.abs(np.array(advance_to(start + 1.5).position[:7]) - (a + b) / 2).max() < 0.05  # on the way
        assert np.abs(np.array(advance_to(start + 2.5).position[:7]) - b).max() < 0.01  # and held at the last
        client.close()


def test_joint_commands_by_name_position_and_velocity(client, stack, planner):
    publishers, _ = planner
    start = client.joint_positions()
    publishers["commands"].publish(JointState(name=["panda_joint2", "panda_finger_joint1"],
                                              position=[start[1] + 0.25, 0.035]))
    client.spin_until(lambda: abs(client.joint_positions()[1] - start[1] - 0.25) < 0.01, 30, "joint 2 moved")
    client.spin_until(lambda: np.abs(client.joint_positions()[7:] - 0.035).max() < 0.002, 30, "both fingers")
    assert np.abs(client.joint_positions()[[0, 2, 3, 4, 5, 6]] - start[[0, 2, 3, 4, 5, 6]]).max() < 0.02
    turning = JointState(name=["panda_joint1"], velocity=[0.5])
    before = client.joint_positions()[0]

    def turned() -> bool:
        """Turned, as its position says (as test_node_commands_and_states reads a velocity command): streamed, as a
        velocity client sends it, one command lasts velocity_timeout (0.5 s) of sim time, which a world running
        flat out with its pile asleep passes in a few ms, between two joint_states, so its velocity may never be
        seen (on a quiet machine it was not, in any of six runs)."""
        publishers["commands"].publish(turning)
        return client.joint_positions()[0] - before > 0.15
    client.spin_until(turned, 30, "joint 1 turned")


def junk_trajectories(home):
    good = list(home[:7])
    return [
        JointTrajectory(joint_names=ARM, points=[]),
        JointTrajectory(joint_names=[], points=[point([], 1.0)]),
        JointTrajectory(joint_names=ARM[:6] + ["elbow"], points=[point(good, 1.0)]),
        JointTrajectory(joint_names=ARM, points=[point(good[:5], 1.0)]),
        JointTrajectory(joint_names=ARM, points=[point([float("nan")] * 7, 1.0)]),
        JointTrajectory(joint_names=ARM, points=[point([float("inf")] * 7, 1.0)]),
        JointTrajectory(joint_names=ARM, points=[point(good, 2.0), point(good, 1.0)]),
        JointTrajectory(joint_names=ARM, points=[point([0, 0, 0, 1.0, 0, 0, 0], 1.0)]),  # joint 4 > 0 rad
        JointTrajectory(joint_names=ARM, points=[point(good, 1.0, [0.0] * 3)]),
    ]


def junk_commands():
    return [JointState(), JointState(name=["elbow"], position=[0.1]), JointState(name=["panda_joint1"]),
            JointState(name=["panda_joint1", "panda_joint1"], position=[0.1, 0.2]),
            JointState(name=["panda_joint1", "panda_joint2"], position=[0.1]),
            JointState(name=["panda_joint1"], position=[float("nan")]),
            JointState(name=["panda_joint1"], velocity=[float("-inf")])]


def test_garbage_is_refused_counted_and_changes_nothing(client, stack, planner):
    publishers, rejected = planner
    client.spin_for(0.3)
    before = stack.loop.run(lambda: (stack.sim.arm.joint_states()[0], stack.sim.arm.position_targets.copy(),
                                     stack.sim.arm.controller))
    trajectories, commands = junk_trajectories(stack.sim.arm.home), junk_commands()
    for msg in trajectories:
        publishers["trajectory"].publish(msg)
    for msg in commands:
        publishers["commands"].publish(msg)
    client.spin_until(lambda: rejected("arm/joint_trajectory") == len(trajectories)
                      and rejected("arm/joint_commands") == len(commands), 30, "every rejection counted")
    after = stack.loop.run(lambda: (stack.sim.arm.joint_states()[0], stack.sim.arm.position_targets.copy(),
                                    stack.sim.arm.controller))
    assert np.abs(after[0] - before[0]).max() < 1e-3
    assert np.array_equal(after[1], before[1]) and after[2] is before[2] is None
    good = stack.sim.arm.home[:7] + [0.2, 0, 0, 0, 0, 0, 0]  # and still following
    publishers["trajectory"].publish(JointTrajectory(joint_names=ARM, points=[point(good, 0.5)]))
    client.spin_until(lambda: np.abs(client.joint_positions()[:7] - good).max() < 0.01, 30, "a good trajectory")


def test_a_fixed_topic_command_stops_a_running_trajectory(client, stack, planner):
    publishers, _ = planner
    home = stack.sim.arm.home
    far = home[:7] + [1.0, 0, 0, 0, 0, 0, 0]
    publishers["trajectory"].publish(JointTrajectory(joint_names=ARM, points=[point(far, 5.0)]))
    client.spin_until(lambda: client.joint_positions()[0] - home[0] > 0.1, 30, "the trajectory under way")
    hold = list(home)
    client.send("position", hold)
    client.spin_until(lambda: np.abs(client.joint_positions() - hold).max() < 0.01, 30, "the position command")
    assert stack.sim.arm.controller is None
