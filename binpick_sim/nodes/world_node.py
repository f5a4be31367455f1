"""The `world` node: owns the simulation and its physics thread; serves /clock, resets and markers."""
from __future__ import annotations

import dataclasses

from rclpy.node import Node
from rclpy.parameter import Parameter
from rcl_interfaces.msg import SetParametersResult
from rosgraph_msgs.msg import Clock
from std_msgs.msg import UInt32
from std_srvs.srv import Trigger
from visualization_msgs.msg import Marker, MarkerArray

from ..config import load_config
from ..loop import PhysicsLoop
from ..paths import default_config
from ..shapes import Geometry, visual_pose
from ..sim import BinPickingSim
from . import convert
from .diagnostics import NodeDiagnostics
from .params import declare


class WorldNode(Node):
    def __init__(self, **kwargs):
        super().__init__("world", **kwargs)
        path = declare(self, "config", str(default_config()), "Scene file (YAML) the simulation is built from.",
                       read_only=True)
        self.config = load_config(path)
        sim_config = self.config.simulation
        self.seed = declare(self, "seed", sim_config.seed,
                            "Seed of the next world/reset; setting it makes that reset repeat an episode.")
        self.pending_seed: int | None = self.seed
        realtime_factor = declare(self, "realtime_factor", sim_config.realtime_factor,
                                  "Sim seconds per wall second; 0 runs as fast as possible.")
        gui = declare(self, "gui", sim_config.gui, "Open PyBullet's GUI window (needs a display).", read_only=True)
        objects_rate = declare(self, "objects_rate", 10.0, "Rate of world/objects in Hz of sim time.",
                               read_only=True)
        self.camera_enabled = declare(self, "camera", True, "Start the camera node in this process.",
                                      read_only=True)
        self.task_enabled = declare(self, "task", False, "Start the task node (grabs, collisions, reward) in "
                                    "this process.", read_only=True)
        self.reasoning_enabled = declare(self, "reasoning", False, "Start the reasoning node (scene queries "
                                         "under reasoning/) in this process.", read_only=True)
        self.simulation_enabled = declare(self, "simulation_interfaces", True, "Start the simulation node (the "
                                          "ROS 2 simulation_interfaces standard) where that package is installed.",
                                          read_only=True)
        lockstep = declare(self, "lockstep", False, "Step only when asked on world/step, publishing one "
                           "observation after each request (for the gym envs).", read_only=True)
        self.keep_object_type = declare(self, "keep_object_type", False,
                                        "Refill the pick bin with the same object type at the next world/reset.")

        self.robot_interface = declare(self, "robot_interface", False, "Serve the time-indexed robot interface "
                                       "(robot/...): the arm under torque control, one time index per physics "
                                       "step, idle until the first action.", read_only=True)
        rate = declare(self, "robot_interface_rate", 1000.0, "Physics (and control) rate in Hz when the robot "
                       "interface is served.", read_only=True)
        if self.robot_interface:
            if rate <= 0:
                raise ValueError(f"robot_interface_rate must be > 0 Hz, got {rate}")
            sim_config = dataclasses.replace(sim_config, timestep=1.0 / rate)
            self.config = dataclasses.replace(self.config, simulation=sim_config)
        self.sim = BinPickingSim(self.config, gui=gui)
        self.get_logger().info(self.reset_world())
        self.loop = PhysicsLoop(self.sim.world, realtime_factor, lockstep=lockstep or self.robot_interface)

        self.clock_publisher = self.create_publisher(Clock, "/clock", 10)
        self.objects_publisher = self.create_publisher(MarkerArray, "world/objects", 10)
        self.create_service(Trigger, "world/reset", self.on_reset)
        self.create_subscription(UInt32, "world/step", self.on_step, 10)
        self.diagnostics = NodeDiagnostics(self, lambda: self.sim.world.time, values=self.figures)
        self.add_on_set_parameters_callback(self.on_parameters)
        self.loop.every(self.sim.world.timestep, self.publish_clock)
        self.loop.every(1.0 / objects_rate, self.publish_objects)
        self.loop.when_settled(self.publish_clock)
        self.loop.when_settled(self.publish_objects)

    # --- physics thread -----------------------------------------------------------------------
    def reset_world(self) -> str:
        seed, self.pending_seed = self.pending_seed, None
        self.sim.reset(seed=seed, keep_object_type=self.keep_object_type)
        scene = self.sim.scene
        seeded = f", seed {seed}" if seed is not None else ""
        return (f"episode {scene.episode}: {scene.object_count} objects of type {scene.object_urdf.stem}"
                f" ({scene.config.object_set} set{seeded})")

    def publish_clock(self) -> None:
        self.clock_publisher.publish(Clock(clock=convert.stamp(self.sim.world.time)))

    def publish_objects(self) -> None:
        self.objects_publisher.publish(self.object_markers())

    def object_markers(self) -> MarkerArray:
        """Every object as a mesh marker (ns `objects`, id k for object_k); the first marker clears old ones."""
        c = self.sim.world.client
        now = self.sim.world.time
        markers = [Marker(header=convert.header(now), action=Marker.DELETEALL, ns="objects")]
        for obj in self.sim.scene.objects:
            position, orientation = visual_pose(c, obj.body)
            shape = c.getVisualShapeData(obj.body)[0]
            geometry = Geometry.from_visual_shape(shape)
            marker = Marker(header=convert.header(now), ns="objects", id=obj.index,
                            type=convert.MARKER_TYPES[geometry.kind], action=Marker.ADD, text=obj.name,
                            pose=convert.pose(position, orientation),
                            mesh_resource="file://" + geometry.mesh if geometry.mesh else "")
            marker.scale.x, marker.scale.y, marker.scale.z = geometry.size
            marker.color.r, marker.color.g, marker.color.b, marker.color.a = (float(v) for v in shape[7])
            markers.append(marker)
        return MarkerArray(markers=markers)

    # --- executor threads ---------------------------------------------------------------------
    def on_reset(self, request, response):
        try:
            response.message = self.loop.run(self.reset_world)
            response.success = True
        except Exception as exc:  # report, keep serving
            response.success, response.message = False, f"reset failed: {exc}"
        (self.get_logger().info if response.success else self.get_logger().error)(response.message)
        return response

    def on_step(self, msg: UInt32) -> None:
        if not self.loop.lockstep:
            self.diagnostics.reject("world/step", "the world runs on its own (start it with lockstep:=true)")
            return
        self.loop.advance(msg.data)

    def on_parameters(self, parameters: list[Parameter]) -> SetParametersResult:
        for p in parameters:
            if p.name == "realtime_factor":
                if p.type_ not in (Parameter.Type.DOUBLE, Parameter.Type.INTEGER) or p.value < 0:
                    return SetParametersResult(successful=False, reason="realtime_factor must be a number >= 0")
                self.loop.realtime_factor = float(p.value)
            elif p.name == "keep_object_type":
                if p.type_ != Parameter.Type.BOOL:
                    return SetParametersResult(successful=False, reason="keep_object_type must be true or false")
                self.keep_object_type = p.value
            elif p.name == "seed":
                if p.type_ != Parameter.Type.INTEGER or p.value < 0:
                    return SetParametersResult(successful=False, reason="seed must be an integer >= 0")
                self.pending_seed = p.value
        return SetParametersResult(successful=True)

    def figures(self) -> dict:
        steps_per_second, realtime_factor = self.loop.rates()
        return {"sim_time": self.sim.world.time, "step_rate_hz": steps_per_second,
                "realtime_factor": realtime_factor, "target_realtime_factor": self.loop.realtime_factor,
                "objects": self.sim.scene.object_count, "episode": self.sim.scene.episode,
                "publisher_failures": self.loop.failures}
