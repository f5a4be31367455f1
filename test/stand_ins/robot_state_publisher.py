"""Stand-in for robot_state_publisher where the real one (C++, not on the registry) is not installed:
the tests put it in a temporary ament prefix so that `sim.launch.py` runs unchanged. Like the real one it
takes the URDF in its `robot_description` parameter, refuses to start without one it can parse (exit 1,
naming the reason), and publishes it on `robot_description` (transient local) for whoever joins later, again
whenever the parameter is set to a new URDF; and, where tf2_msgs is installed, every fixed joint of it on
/tf_static (transient local), as the real one does (its moving joints, from joint_states, it leaves out)."""
import faulthandler
import os
import signal
import sys
import threading

import rclpy
from rcl_interfaces.msg import SetParametersResult
from rclpy.executors import ExternalShutdownException
from rclpy.qos import DurabilityPolicy, QoSProfile
from rclpy.signals import SignalHandlerOptions
from std_msgs.msg import String
from urdf_parser_py.urdf import URDF


EXIT_WITHIN = 3.0  # seconds from Ctrl-C or SIGTERM to the exit, whatever the teardown does
STOPPING = threading.Event()


def _stop(signum, frame) -> None:
    """Ctrl-C or SIGTERM: leave the spin, and exit 0 within EXIT_WITHIN even if the teardown hangs. Once in
    a CI run the stand-in outlived the launch's SIGINT and SIGTERM (5 + 10 s) and was killed, failing
    launch_testing's exit codes; where it hung was not seen. The spin loop sees STOPPING: an exception
    raised here could land inside rclpy's C++ taking a message, which turns it into a RuntimeError ("Unable
    to convert call argument '0' to Python object", exit 1: seen once in a CI rehearsal).

    The timer is a Python thread: it cannot run while the interpreter is finalizing (daemon threads then wait
    for the GIL for good) or while a C call holds the GIL, and it was outlived once more (2026-11-27, a
    rehearsal's colcon part, exit -9 again). So `main`'s caller leaves by os._exit, past finalization, and
    faulthandler's watchdog (a C thread, no GIL needed) prints every thread's stack to stderr and exits 1
    two seconds after the timer should have: a hang then says where it is instead of waiting for SIGKILL."""
    if not STOPPING.is_set():
        timer = threading.Timer(EXIT_WITHIN, os._exit, args=(0,))
        timer.daemon = True
        timer.start()
        faulthandler.dump_traceback_later(EXIT_WITHIN + 2.0, exit=True)
    STOPPING.set()


def fixed_joints(node, robot):
    """A tf2_msgs/TFMessage of the URDF's fixed joints (parent -> child at the joint's origin), stamped now."""
    import math

    from geometry_msgs.msg import TransformStamped
    from tf2_msgs.msg import TFMessage

    transforms = []
    for joint in robot.joints:
        if joint.type != "fixed":
            continue
        t = TransformStamped(child_frame_id=joint.child)
        t.header.frame_id, t.header.stamp = joint.parent, node.get_clock().now().to_msg()
        xyz = joint.origin.xyz if joint.origin is not None and joint.origin.xyz else (0.0, 0.0, 0.0)
        roll, pitch, yaw = joint.origin.rpy if joint.origin is not None and joint.origin.rpy else (0.0, 0.0, 0.0)
        t.transform.translation.x, t.transform.translation.y, t.transform.translation.z = map(float, xyz)
        cr, sr, cp, sp = math.cos(roll / 2), math.sin(roll / 2), math.cos(pitch / 2), math.sin(pitch / 2)
        cy, sy = math.cos(yaw / 2), math.sin(yaw / 2)  # fixed-axis XYZ (URDF's rpy) as a quaternion
        q = t.transform.rotation
        q.x, q.y, q.z, q.w = (sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy, cr * cp * sy - sr * sp * cy,
                              cr * cp * cy + sr * sp * sy)
        transforms.append(t)
    return TFMessage(transforms=transforms)


def publish_fixed_joints(node, robot):
    """The /tf_static publisher (None where tf2_msgs is not installed), after sending the fixed joints once."""
    try:
        from tf2_msgs.msg import TFMessage
    except ImportError:
        return None
    publisher = node.create_publisher(TFMessage, "/tf_static",
                                      QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
    publisher.publish(fixed_joints(node, robot))
    return publisher


def main() -> int:
    rclpy.init(args=sys.argv, signal_handler_options=SignalHandlerOptions.NO)
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    node = rclpy.create_node("robot_state_publisher")
    description = node.declare_parameter("robot_description", "").value
    try:
        robot = URDF.from_xml_string(description.encode())
        root = robot.get_root()
    except Exception as exc:  # what the real one does with a bad description: say why, stop
        print(f"robot_state_publisher (stand-in): robot_description is not a URDF: {exc}", file=sys.stderr)
        return 1
    publisher = node.create_publisher(String, "robot_description",
                                       QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
    publisher.publish(String(data=description))
    node.get_logger().info(f"got robot_description: {len(robot.links)} links, root {root}")
    static = publish_fixed_joints(node, robot)

    def on_set(parameters):  # like the real one: a new robot_description is parsed and published
        for parameter in parameters:
            if parameter.name == "robot_description":
                try:
                    URDF.from_xml_string(parameter.value.encode())
                except Exception as exc:
                    return SetParametersResult(successful=False, reason=f"not a URDF: {exc}")
                publisher.publish(String(data=parameter.value))
                if static is not None:
                    static.publish(fixed_joints(node, URDF.from_xml_string(parameter.value.encode())))
        return SetParametersResult(successful=True)

    node.add_on_set_parameters_callback(on_set)
    try:
        while rclpy.ok() and not STOPPING.is_set():
            rclpy.spin_once(node, timeout_sec=0.2)  # back in Python often: a stop is seen within 0.2 s
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    node.destroy_node()  # before the context goes: nothing of the DDS participant is left for the GC at exit
    rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    code = main()  # the node and the context are gone: nothing is left for the interpreter's finalization
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
