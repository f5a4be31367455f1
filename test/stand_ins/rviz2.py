"""Stand-in for rviz2 where the real one (C++, not on the registry) is not installed: the tests put it
in a temporary ament prefix so that `sim.launch.py rviz:=true` runs unchanged. It loads the display
config given with `-d` as rviz2 would (exit 1 if it cannot), then stays in the ROS graph as node
`rviz2` until stopped."""
import sys

import rclpy
import yaml
from rclpy.executors import ExternalShutdownException


def main() -> int:
    args = rclpy.utilities.remove_ros_args(sys.argv)
    rclpy.init(args=sys.argv)
    node = rclpy.create_node("rviz2")
    if "-d" in args:
        path = args[args.index("-d") + 1]
        try:
            with open(path) as file:
                displays = yaml.safe_load(file)["Visualization Manager"]["Displays"]
        except (OSError, KeyError, TypeError, yaml.YAMLError) as exc:
            print(f"rviz2 (stand-in): cannot load {path}: {exc!r}", file=sys.stderr)
            return 1
        node.get_logger().info(f"{path}: {len(displays)} displays")
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
