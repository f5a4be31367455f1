"""A client of the ROS 2 simulation_interfaces standard's services (`Standard`) and the URDFs the tests
spawn with it: shared by the standard's tests (nodes/) and the spawn fuzz findings (robustness/).

simulation_interfaces itself is imported by the `si` fixture (conftest.py), never here: without the
package these tests skip, naming it.
"""
from __future__ import annotations

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Point, Pose, PoseStamped, Quaternion
from rosgraph_msgs.msg import Clock
from std_msgs.msg import Header

from binpick_sim.nodes.clients.client import SimClient, answered

MISSING = "simulation_interfaces is not installed (ros-jazzy-simulation-interfaces, or ../shared/ros-tools)"
BOX_URDF = """<robot name="{name}"><link name="base">
  <inertial><mass value="0.02"/><inertia ixx="2e-6" iyy="2e-6" izz="2e-6" ixy="0" ixz="0" iyz="0"/></inertial>
  <visual><geometry><box size="{s} {s} {s}"/></geometry></visual>
  <collision><geometry><box size="{s} {s} {s}"/></geometry></collision>
</link></robot>"""
CUBE = BOX_URDF.format(name="cube", s=0.02)


class Standard:
    """A client of the standard's services: `call("spawn_entity", request)` waits for the answer."""

    def __init__(self, client: SimClient, si, prefix: str = ""):
        self.client, self.si, self.prefix = client, si, prefix
        self.clients = {}
        self.clock: list[float] = []
        client.node.create_subscription(Clock, "/clock", lambda m: self.clock.append(m.clock.sec + m.clock.nanosec * 1e-9), 100)
        self.diagnostics = {}
        client.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 50)

    def _on_diagnostics(self, msg) -> None:
        for status in msg.status:
            self.diagnostics[status.name] = {kv.key: kv.value for kv in status.values}

    def srv(self, name: str):
        return getattr(self.si.srv, "".join(part.title() for part in name.split("_")))

    def request(self, service: str, **fields):
        return self.srv(service).Request(**fields)

    def call(self, name: str, request=None, timeout: float = 60.0, resend: float | None = None):
        """`resend`: ask again every `resend` s until answered (client.answered), for a harmless request."""
        if name not in self.clients:
            self.clients[name] = self.client.node.create_client(self.srv(name), self.prefix + name)
        c = self.clients[name]
        self.client.spin_until(c.service_is_ready, 30, f"service {name}")
        request = request if request is not None else self.request(name)
        return answered(lambda: c.call_async(request), self.client.spin_until, timeout, resend,
                        f"an answer from {name}")

    def ok(self, name: str, request=None):
        response = self.call(name, request)
        assert response.result.result == self.si.msg.Result.RESULT_OK, response.result.error_message
        return response

    # --- shorthands ---------------------------------------------------------------------------
    def set_state(self, state: int):
        return self.call("set_simulation_state", self.request("set_simulation_state",
                                                              state=self.si.msg.SimulationState(state=state)))

    def pause(self) -> None:
        assert self.set_state(self.si.msg.SimulationState.STATE_PAUSED).result.result == 1
        self.quiet()

    def quiet(self) -> None:
        """Take in every /clock already sent (the world no longer moves)."""
        self.client.spin_for(0.5)

    def step(self, steps: int):
        return self.call("step_simulation", self.request("step_simulation", steps=steps))

    def names(self, **filters) -> list[str]:
        return list(self.ok("get_entities", self.request("get_entities", filters=self.filters(**filters))).entities)

    def filters(self, pattern="", categories=(), tags=(), all_tags=False, bounds=None):
        m = self.si.msg
        return m.EntityFilters(filter=pattern, categories=[m.EntityCategory(category=c) for c in categories],
                               tags=m.TagsFilter(tags=list(tags), filter_mode=int(all_tags)),
                               bounds=bounds or m.Bounds())

    def state(self, name: str):
        return self.ok("get_entity_state", self.request("get_entity_state", entity=name)).state

    def position(self, name: str) -> np.ndarray:
        p = self.state(name).pose.position
        return np.array([p.x, p.y, p.z])

    def spawn(self, name="cube", urdf=CUBE, uri="", position=(0.5, -0.18, 0.15), frame="", allow_renaming=False,
              orientation=(0.0, 0.0, 0.0, 1.0), namespace=""):
        pose = PoseStamped(header=Header(frame_id=frame), pose=pose_of(position, orientation))
        return self.call("spawn_entity", self.request("spawn_entity", name=name, allow_renaming=allow_renaming, uri=uri,
                                                      resource_string=urdf, entity_namespace=namespace,
                                                      initial_pose=pose))

    def rejected(self) -> int:
        return int(self.diagnostics.get("/simulation", {}).get("rejected_total", 0))


def pose_of(position, orientation=(0.0, 0.0, 0.0, 1.0)) -> Pose:
    x, y, z = (float(v) for v in position)
    qx, qy, qz, qw = (float(v) for v in orientation)
    return Pose(position=Point(x=x, y=y, z=z), orientation=Quaternion(x=qx, y=qy, z=qz, w=qw))
