"""The `world` node: owns the simulation and its physics thread; serves /clock, resets and markers."""
from __future__ import annotations

from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from std_msgs.msg import UInt32
from std_srvs.srv import Trigger
from visualization_msgs.msg import Marker, MarkerArray

from ...cell import finite_world
from ...config import MAX_STEP_REQUEST, MIN_REALTIME_FACTOR, load_config, realtime_factor_problem, with_changes
from ...cell.loop import PhysicsLoop
from ...paths import default_config
from ...cell.objects.shapes import Geometry
from ...cell.rendering.renderers import RENDERERS
from ...cell.bin_picking_sim import BinPickingSim
from ..common import convert
from ..common.diagnostics import NodeDiagnostics
from ..common.long_requests import SERVICE_QOS
from ..common.params import declare
from ..common.sim_clock import steady_timer
from . import planning_scene
from .description_topics import DescriptionTopics

DUPLICATE_CHECK_PERIOD = 2.0  # wall seconds between two looks for another stack in this namespace


def renderer_problem(value) -> str | None:
    return None if value in RENDERERS else f"needs one of {', '.join(RENDERERS)}, got {value!r}"


class WorldNode(Node):
    parameter_table = "world"  # config/parameters.py: the defaults and ranges of this node's parameters

    def __init__(self, **kwargs):
        super().__init__("world", **kwargs)
        path = declare(self, "config", "Scene file (YAML) the simulation is built from.", read_only=True,
                       default=str(default_config()))
        self.config = load_config(path)
        realtime_factor, gui = self.declare_simulation_parameters()
        objects_rate = declare(self, "objects_rate", "Rate of world/objects in Hz of sim time.", read_only=True)
        self.declare_process_parameters()
        self.declare_reset_parameters()
        self.build_sim(gui)
        wall_rate_cap = declare(self, "wall_rate_cap", "Running faster than real time (realtime_factor 0 "
                                "or > 1), publish every periodic topic (/clock, joint_states, world/objects, "
                                "camera, task/status) at its rate in wall time rather than sim time: nobody "
                                "can use more, and each message costs the physics thread. Stamps stay sim "
                                "time.", read_only=True)
        self.loop = PhysicsLoop(self.sim.world, realtime_factor, lockstep=self.lockstep or self.robot_interface,
                                wall_rate_cap=wall_rate_cap)
        self.serve(objects_rate)

    def declare_simulation_parameters(self) -> tuple[float, bool]:
        """The scene file's simulation section as parameters (seed, realtime_factor, gui, renderer), each
        starting from the file's value; returns (realtime_factor, gui)."""
        self.seed = declare(self, "seed", "Seed of the next world/reset; setting it makes that reset repeat an "
                            "episode.", on_change=self.set_seed, scene=self.config)
        # the seed of the next reset, boxed: a new box per set, so a reset clears only the one it read
        self.pending_seed: tuple[int] | None = (self.seed,)
        realtime_factor = declare(self, "realtime_factor", "Sim seconds per wall second; 0 runs as fast as "
                                  f"possible, otherwise at least {MIN_REALTIME_FACTOR:g}.", scene=self.config,
                                  check=realtime_factor_problem, on_change=self.set_realtime_factor)
        gui = declare(self, "gui", "Open PyBullet's GUI window (needs a display).", read_only=True, scene=self.config)
        renderer = declare(self, "renderer", "Camera renderer: auto, tiny, egl or gui (doc/cameras.md: "
                           "Renderers); the scene file's simulation.renderer unless set.", read_only=True,
                           check=renderer_problem, scene=self.config)
        self.config = with_changes(self.config, simulation={"renderer": renderer})
        return realtime_factor, gui

    def declare_process_parameters(self) -> None:
        """Which nodes this process runs beside the world, and how it runs them (read once, at start)."""
        self.camera_enabled = declare(self, "camera", "Start the camera node in this process.", read_only=True)
        self.task_enabled = declare(self, "task", "Start the task node (grabs, collisions, reward) in "
                                    "this process.", read_only=True)
        self.reasoning_enabled = declare(self, "reasoning", "Start the reasoning node (scene queries "
                                         "under reasoning/) in this process.", read_only=True)
        self.simulation_enabled = declare(self, "simulation_interfaces", "Start the simulation node (the "
                                          "ROS 2 simulation_interfaces standard) where that package is installed.",
                                          read_only=True)
        self.lockstep = declare(self, "lockstep", "Step only when asked on world/step, publishing one "
                                "observation after each request (for the gym envs).", read_only=True)
        self.exit_with_parent = declare(self, "exit_with_parent", "Stop the sim process when the process "
                                        "that started it (launch, a gym env, a shell) is gone.", read_only=True)
        self.executor_kind = declare(self, "executor", "Executor of the process's short callbacks: events "
                                     "(rclpy's EventsExecutor), single (SingleThreadedExecutor) or multi (4 "
                                     "threads); for measuring, see doc/how-it-is-built.md's Executor section.",
                                     read_only=True)
        self.robot_interface = declare(self, "robot_interface", "Serve the time-indexed robot interface "
                                       "(robot/...): the arm under torque control, one time index per physics "
                                       "step, idle until the first action.", read_only=True)
        rate = declare(self, "robot_interface_rate", "Physics (and control) rate in Hz when the robot "
                       "interface is served.", read_only=True)
        if self.robot_interface:
            self.config = with_changes(self.config, simulation={"timestep": 1.0 / rate})

    def declare_reset_parameters(self) -> None:
        """What the next world/reset does besides its seed: the object type kept, and its id against repeats."""
        self.keep_object_type = declare(self, "keep_object_type", "Refill the pick bin with the same object type "
                                        "at the next world/reset.", on_change=self.set_keep_object_type)
        self.reset_id = declare(self, "reset_id", "Id of the next world/reset, for a client that may send it "
                                "again (0: none): while reset_id is still the id of the last reset done, a "
                                "world/reset answers as that one did and resets nothing. Set a new id before "
                                "each reset.", on_change=self.set_reset_id)
        self.last_reset: tuple[int, str] = (0, "")  # (reset_id, reply) of the last reset done (reset_once)

    def build_sim(self, gui: bool) -> None:
        """The core simulation of the (changed) config, reset once with the seed."""
        # Without a camera, robot interface, reasoner (or GUI: cell/bin_picking_sim.py) nothing draws this world (a
        # state-only gym env's sim): its arms load without their visual meshes, which cost ~50 ms a reset
        drawn = self.camera_enabled or self.robot_interface or self.reasoning_enabled
        self.sim = BinPickingSim(self.config, gui=gui, drawn=drawn)
        self.get_logger().info(self.reset_world())

    def serve(self, objects_rate: float) -> None:
        """The world's topics, services and periodic work on the physics loop."""
        self.clock_publisher = self.create_publisher(Clock, "/clock", 10)
        self.clock = Clock()  # reused: /clock goes out once per physics step
        self.objects_publisher = self.create_publisher(MarkerArray, "world/objects", 10)
        self.create_service(Trigger, "world/reset", self.on_reset, qos_profile=SERVICE_QOS)
        self.create_subscription(UInt32, "world/step", self.on_step, 10)
        self.create_service(Trigger, "world/cancel_steps", self.on_cancel_steps, qos_profile=SERVICE_QOS)
        self.declare_shaking()
        self.diagnostics = NodeDiagnostics(self, lambda: self.sim.world.time, values=self.figures)
        self.other_worlds = 0  # world nodes of other stacks seen in this namespace (and ROS domain)
        steady_timer(self, DUPLICATE_CHECK_PERIOD, self.check_for_other_stacks)
        self.loop.every(self.sim.world.timestep, self.publish_clock)
        self.loop.every(1.0 / objects_rate, self.publish_objects)
        self.loop.when_settled(self.publish_clock)
        self.loop.when_settled(self.publish_objects)
        self.declare_planner_topics(objects_rate)

    def declare_planner_topics(self, rate: float) -> None:
        """robot_description(_semantic), TF and the planning scene (see description_topics.py and
        planning_scene.py), updated at the objects' rate."""
        robot_tf = declare(self, "publish_robot_tf", "Publish every arm link's frame on /tf (for a "
                           "simulation run without robot_state_publisher), where tf2_msgs is installed.",
                           read_only=True)
        state_publisher = declare(self, "robot_state_publisher", "robot_state_publisher runs beside the "
                                  "simulation (sim.launch.py sets this): it publishes robot_description and the "
                                  "description's fixed frames on /tf_static, so the simulation publishes neither "
                                  "(one publisher each).", read_only=True)
        self.description_topics = DescriptionTopics(self, robot_tf, state_publisher)
        self.planning_scene = planning_scene.PlanningScene(self) if planning_scene.available() else None
        if self.planning_scene is None:
            self.get_logger().info("moveit_msgs is not installed: no planning_scene_world / collision_object "
                                   "topics (world/objects still describes the objects)")
        self.loop.every(1.0 / rate, self.publish_planner_topics)
        self.loop.when_settled(self.publish_planner_topics)

    def publish_planner_topics(self) -> None:
        self.description_topics.publish_tf()
        if self.planning_scene is not None:
            self.planning_scene.update()

    # --- physics thread -----------------------------------------------------------------------
    def reset_world(self) -> str:
        pending = self.pending_seed
        seed = pending[0] if pending else None
        self.sim.reset(seed=seed, keep_object_type=self.keep_object_type)
        finite_world.restore(self.sim)  # WorldNotSane: the reset answers failure, saying which bodies
        if self.pending_seed is pending:  # used up only now: a failed reset's retry gets the seed again
            self.pending_seed = None
        if getattr(self, "planning_scene", None) is not None:
            self.planning_scene.reset()
        scene = self.sim.scene
        seeded = f", seed {seed}" if seed is not None else ""
        return (f"episode {scene.episode}: {scene.object_count} objects of type {scene.object_urdf.stem}"
                f" ({scene.config.object_set} set{seeded})")

    def reset_once(self) -> str:
        """reset_world, unless this reset_id's reset was done already (a request sent again after its reply
        was lost): then that reset's reply, saying so. On the physics thread, so two copies of one request
        served at once (the `multi` executor) are still told apart."""
        reset_id = self.reset_id
        if reset_id and self.last_reset[0] == reset_id:
            return f"{self.last_reset[1]} (reset_id {reset_id} again: nothing reset)"
        reply = self.reset_world()
        self.last_reset = (reset_id, reply)
        return reply

    def publish_clock(self) -> None:
        if self.clock_publisher.get_subscription_count():  # nobody listening: no message to build
            self.clock.clock = convert.stamp(self.sim.world.time)
            self.clock_publisher.publish(self.clock)

    def publish_objects(self) -> None:
        if self.objects_publisher.get_subscription_count():  # the markers cost ~0.7 ms to build
            self.objects_publisher.publish(self.object_markers())

    def object_markers(self) -> MarkerArray:
        """Every object as a mesh marker (ns `objects`, id k for object_k); the first marker clears old ones."""
        c = self.sim.world.client
        now = self.sim.world.time
        markers = [Marker(header=convert.header(now), action=Marker.DELETEALL, ns="objects")]
        for obj, position, orientation in self.sim.object_poses():
            shape = c.getVisualShapeData(obj.body)[0]  # its colour (and shape) as PyBullet has it now
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
            response.message = self.loop.run(self.reset_once)
            response.success = True
        except Exception as exc:  # report, keep serving
            response.success, response.message = False, f"reset failed: {exc}"
        if response.success:  # two call sites: rclpy refuses one line logging at two severities
            self.get_logger().info(response.message)
        else:
            self.get_logger().error(response.message)
        return response

    def on_step(self, msg: UInt32) -> None:
        if not self.loop.lockstep:
            self.diagnostics.reject("world/step", "the world runs on its own (start it with lockstep:=true)")
            return
        if msg.data > MAX_STEP_REQUEST:
            self.diagnostics.reject("world/step", f"{msg.data} steps asked, at most {MAX_STEP_REQUEST} per request")
            return
        self.loop.advance(msg.data)

    def on_cancel_steps(self, request, response):
        """Drop the steps still owed to world/step requests; one observation follows, as after a request."""
        dropped = self.loop.run(self.loop.cancel_steps)
        response.success, response.message = True, f"{dropped} steps cancelled"
        return response

    def declare_shaking(self) -> None:
        """world/shake_pick_bin and world/shake_drop_bin shake with the shake_* parameters (Trigger has no
        arguments); a value out of range, NaN or infinite is refused when it is set, naming the parameter."""
        self.shake = {}
        for key, description in (
                ("amplitude", "Amplitude of a bin shake in metres (the bin traces a figure eight this wide in its "
                 "x-y plane)."),
                ("frequency", "Frequency of a bin shake in Hz."),
                ("duration", "Sim seconds a bin shake lasts (then 0.25 s to return to its pose).")):
            self.shake[key] = declare(self, f"shake_{key}", description,
                                      on_change=lambda value, key=key: self.shake.__setitem__(key, value))
        for name in self.sim.shakers:
            self.create_service(Trigger, f"world/shake_{name}",
                                lambda request, response, name=name: self.on_shake(name, response),
                                qos_profile=SERVICE_QOS)

    def on_shake(self, name: str, response):
        """Start shaking a bin (the physics loop carries it out); refused while it already shakes."""
        amplitude, frequency, duration = (self.shake[k] for k in ("amplitude", "frequency", "duration"))
        try:
            self.loop.run(self.sim.shake_bin, name, amplitude, frequency, duration, False)
        except ValueError as exc:
            response.success, response.message = False, str(exc)
            self.diagnostics.reject(f"world/shake_{name}", str(exc))
            return response
        response.success = True
        response.message = f"shaking {name}: {amplitude:g} m at {frequency:g} Hz for {duration:g} s"
        self.get_logger().info(response.message)
        return response

    # --- run-time parameter changes (checked by params.declare first) --------------------------
    def set_realtime_factor(self, value: float) -> None:
        if hasattr(self, "loop"):
            self.loop.realtime_factor = value

    def set_seed(self, value: int) -> None:
        self.pending_seed = (value,)

    def set_keep_object_type(self, value: bool) -> None:
        self.keep_object_type = value

    def set_reset_id(self, value: int) -> None:
        self.reset_id = value

    def check_for_other_stacks(self) -> None:
        """Two stacks in one namespace and domain interleave joint_states and share world/reset: say so,
        loudly, for as long as it lasts (both see it; DDS discovery takes a moment, hence a timer)."""
        me = (self.get_name(), self.get_namespace())
        others = sum(1 for node in self.get_node_names_and_namespaces() if node == me) - 1
        if others > 0 and others != self.other_worlds:
            self.get_logger().error(
                f"another simulation runs in namespace {me[1]!r} on this ROS domain ({others} more 'world' "
                f"node(s)): their topics and services mix with these; stop one, or start it with another "
                f"namespace (-r __ns:=/other) or ROS_DOMAIN_ID")
        self.other_worlds = max(others, 0)

    def figures(self) -> dict:
        steps_per_second, realtime_factor = self.loop.rates()
        return {"sim_time": self.sim.world.time, "step_rate_hz": steps_per_second,
                "realtime_factor": realtime_factor, "target_realtime_factor": self.loop.realtime_factor,
                "objects": self.sim.scene.object_count, "episode": self.sim.scene.episode,
                "publisher_failures": self.loop.failures, "other_stacks_in_namespace": self.other_worlds,
                "planning_scene": "published" if self.planning_scene else "off: moveit_msgs is not installed",
                "tf": "published" if self.description_topics.tf else "off: tf2_msgs is not installed"}
