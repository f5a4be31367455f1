"""The simulation's own nodes run on sim time: `use_sim_time` reads true, and their clocks read the world's.

Every stamp these nodes send is sim time (the world's step count; `/clock` carries the same), so a tool that
asks a node which time it keeps (`ros2 param get /world use_sim_time`, a launch check, a recorder) must be
told true. rclpy's own way to get there, its TimeSource, subscribes each node to `/clock`: here that would
be the world's `/clock`, published at every physics step, coming back over DDS to every node of this
process, eight readers of a topic that costs more per message than a physics step. So the TimeSource is
detached (no subscription), the parameter is set, and the physics thread sets the node clocks' time
itself (`SimClocks.tick`) where `/clock` goes out: once a physics step (capped at the wall rate when
running faster than real time) and after every lock-step request. The parameter cannot be set back:
it describes the node rather than asking it for anything.

Timers of these nodes run on the steady clock (`steady_timer`): on a clock set from the physics thread a
timer would stop whenever the simulation pauses (the executor's waker among them).
"""
from __future__ import annotations

from typing import Callable

from rcl_interfaces.msg import SetParametersResult
from rclpy.clock import Clock
from rclpy.clock_type import ClockType
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.time import Time
from rclpy.time_source import USE_SIM_TIME_NAME

_STEADY = Clock(clock_type=ClockType.STEADY_TIME)


def steady_timer(node: Node, period: float, callback: Callable[[], None]):
    """`node.create_timer` on the steady clock (see the module)."""
    return node.create_timer(period, callback, clock=_STEADY)


class SimClocks:
    """The clocks of one process's simulation nodes, set to the world's time by `tick` (physics thread)."""

    def __init__(self, sim_time: Callable[[], float]):
        self.sim_time = sim_time
        self.clocks = []

    def adopt(self, node: Node) -> None:
        """Put `node` on sim time (see the module); its clock reads the world's time from now on."""
        node._time_source.detach_node()  # rclpy offers no public handle on a node's TimeSource
        node.set_parameters([Parameter(USE_SIM_TIME_NAME, value=True)])
        node.add_on_set_parameters_callback(_keep_sim_time)
        clock = node.get_clock()
        clock.set_ros_time_override(self.now())
        self.clocks.append(clock)

    def now(self) -> Time:
        return Time(nanoseconds=round(self.sim_time() * 1e9), clock_type=ClockType.ROS_TIME)

    def tick(self) -> None:
        now = self.now()
        for clock in self.clocks:
            clock.set_ros_time_override(now)


def _keep_sim_time(parameters: list[Parameter]) -> SetParametersResult:
    for parameter in parameters:
        if parameter.name == USE_SIM_TIME_NAME and parameter.value is not True:
            return SetParametersResult(successful=False, reason="use_sim_time: the simulation's own nodes keep sim "
                                       "time (their stamps are the world's step count); it cannot be turned off")
    return SetParametersResult(successful=True)
