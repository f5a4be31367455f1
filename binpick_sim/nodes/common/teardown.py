"""Destroying a node so that nothing of it is left for the garbage collector.

rclpy's `Node.destroy_node` destroys the publishers, subscriptions, services, clients, timers and guard
conditions it created, but not the action servers and clients on it: each holds the node's rcl handle,
so the node is not finalized, and with rmw_fastrtps (which ends a context's DDS participant with its
last node) neither are the participant, its threads and its sockets. They then die whenever Python's
cyclic garbage collector frees the action objects: at any later allocation, in any thread, inside a
native teardown that holds the GIL (the start-up hang, doc/robustness.md "Robustness suite").
"""
from __future__ import annotations

from rclpy.action import ActionClient, ActionServer
from rclpy.node import Node


def destroy_fully(node: Node) -> None:
    """`node.destroy_node()`, then the action servers and clients still on the node."""
    node.destroy_node()  # first: a node class may destroy its own action servers (SimulationNode), not twice
    for waitable in list(node.waitables):
        if isinstance(waitable, (ActionServer, ActionClient)):
            waitable.destroy()
