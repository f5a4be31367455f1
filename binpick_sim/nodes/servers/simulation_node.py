"""The `simulation` node: the ROS 2 simulator-control standard (`simulation_interfaces`, Jazzy 1.5.x),
as Gazebo (ros_gz_sim), Isaac Sim and O3DE serve it, so tools written against it drive binpick_sim.

A thin layer: entities, spawning and resets live in the core (`entities.Entities`), pause and exact
stepping in the physics loop. Every request runs on the physics thread between two steps; a refused
one answers with the standard's result code and message, changes nothing and is counted on
/diagnostics. Started by the `sim` process where `simulation_interfaces` is importable.

Step requests hold no executor thread while their steps are taken (long_requests.py): StepSimulation
answers when the loop is done, each SimulateSteps goal waits on a thread of its own. Every one can be
ended within a step: a goal by its cancel, any of them by `world/cancel_steps`, and all of them by a
change of simulation state (PLAYING, STOPPED, QUITTING), which answers each with how far it got.

The node and its plumbing are here; its state and step handlers are simulation_steps.py's, its entity
services simulation_entities.py's.
"""
from __future__ import annotations

from rclpy.action import ActionServer, CancelResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.exceptions import NameValidationException
from rclpy.node import Node
from rclpy.validate_full_topic_name import validate_full_topic_name

from ...cell.entities import registry as core
from ...cell.entities.registry import Entities
from ...cell.entities.errors import EntityError
from ..common.diagnostics import NodeDiagnostics
from ..common.long_requests import ACTION_QOS, SERVICE_QOS, Deferred, own_threads, serve_deferred
from ..common.params import declare
from .simulation_entities import EntityServices
from .simulation_steps import SimulationSteps


def available() -> bool:
    try:
        import simulation_interfaces.srv  # noqa: F401
    except ImportError:
        return False
    return True


def create(world_node, **kwargs) -> "SimulationNode | None":
    """The node, or None with one info line where the package is missing (a plain rclpy install)."""
    if available():
        return SimulationNode(world_node, **kwargs)
    world_node.get_logger().info("simulation_interfaces is not installed: no simulation node (the ROS 2 "
                                 "simulation standard's services are not served)")
    return None


class SimulationNode(SimulationSteps, EntityServices, Node):
    """The node: its services and action set up, the plumbing every handler shares (result codes, counting,
    running on the physics thread); the handlers themselves are the mixins' (simulation_steps.py,
    simulation_entities.py)."""
    parameter_table = "simulation"  # config/parameters.py

    def __init__(self, world_node, **kwargs):
        from simulation_interfaces import action, msg, srv

        super().__init__("simulation", **kwargs)
        self.msg, self.srv = msg, srv
        self.world_node, self.sim, self.loop = world_node, world_node.sim, world_node.loop
        prefix = declare(self, "prefix", "Namespace the standard's services and action are served under "
                         "(empty: none, so get_simulator_features etc. as the standard's examples use).",
                         read_only=True).strip("/")
        self.max_steps = declare(self, "max_steps", "Most physics steps one StepSimulation or "
                                 "SimulateSteps request may ask for; more is refused.", read_only=True)
        try:
            validate_full_topic_name(f"/{prefix}/get_simulator_features" if prefix else "/get_simulator_features")
        except NameValidationException as exc:
            raise ValueError(f"parameter prefix: {prefix!r} is not a valid namespace ({str(exc).splitlines()[0]})") from None
        if self.max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {self.max_steps}")
        folders = declare(self, "spawnable_folders", "Absolute folders whose URDFs "
                          "(and meshes) spawn_entity may read and get_spawnables may list, besides the package's "
                          "own (pybullet_data) and package:// URIs; any other path is refused.", read_only=True)
        try:
            self.entities = self.loop.run(Entities, self.sim, folders or ())
        except ValueError as exc:
            raise ValueError(f"parameter spawnable_folders: {exc}") from None
        self.stopped = False  # STATE_STOPPED: paused after a full reset, until played or paused
        self.categories = {core.ROBOT: msg.EntityCategory.CATEGORY_ROBOT,
                           core.STATIC: msg.EntityCategory.CATEGORY_STATIC_OBJECT,
                           core.OBJECT: msg.EntityCategory.CATEGORY_OBJECT}
        self.diagnostics = NodeDiagnostics(self, lambda: self.sim.world.time, values=self.figures)
        self.served = 0
        group = ReentrantCallbackGroup()  # a long step must not hold up the other services
        name = (lambda s: f"{prefix}/{s}") if prefix else (lambda s: s)
        services = {
            "get_simulator_features": (srv.GetSimulatorFeatures, self.on_features),
            "get_simulation_state": (srv.GetSimulationState, self.on_get_simulation_state),
            "set_simulation_state": (srv.SetSimulationState, self.on_set_simulation_state),
            "step_simulation": (srv.StepSimulation, self.on_step),
            "reset_simulation": (srv.ResetSimulation, self.on_reset),
            "get_entities": (srv.GetEntities, self.on_get_entities),
            "get_entities_states": (srv.GetEntitiesStates, self.on_get_entities_states),
            "get_entity_state": (srv.GetEntityState, self.on_get_entity_state),
            "set_entity_state": (srv.SetEntityState, self.on_set_entity_state),
            "get_entity_info": (srv.GetEntityInfo, self.on_get_entity_info),
            "spawn_entity": (srv.SpawnEntity, self.on_spawn),
            "spawn_entities": (srv.SpawnEntities, self.on_spawn_many),
            "delete_entity": (srv.DeleteEntity, self.on_delete),
            "get_named_poses": (srv.GetNamedPoses, self.on_named_poses),
            "get_spawnables": (srv.GetSpawnables, self.on_spawnables),
        }
        for service, (kind, callback) in services.items():
            served = self.create_service(kind, name(service), self.counted(service, callback), qos_profile=SERVICE_QOS,
                                         callback_group=group)
            if service == "step_simulation":
                serve_deferred(served, self.get_logger().warning)
        self.SimulateSteps = action.SimulateSteps
        self.action_server = ActionServer(self, action.SimulateSteps, name("simulate_steps"), self.on_simulate_steps,
                                          goal_callback=self.on_goal, cancel_callback=lambda _: CancelResponse.ACCEPT,
                                          callback_group=group, **ACTION_QOS)
        self.goals = own_threads(self.action_server)
        self._quit_timer = None

    def destroy_node(self) -> None:
        self.action_server.destroy()
        self.entities.close()
        super().destroy_node()

    # --- plumbing -----------------------------------------------------------------------------
    def counted(self, service: str, callback):
        """Serve `callback`; a refusal (EntityError, or a result other than OK) answers with its code and
        message and is counted on /diagnostics."""
        def serve(request, response):
            try:
                later = callback(request, response)
            except EntityError as exc:
                specific = self.msg.SpawnResult if service.startswith("spawn") else type(response)
                response.result.result = self.code(exc.code, specific)
                response.result.error_message = str(exc)
                later = None
            if isinstance(later, Deferred):  # answered once the work is done
                later.then(lambda answer: self.count(service, answer))
                return later
            self.count(service, response)
            return response
        return serve

    def count(self, service: str, response) -> None:
        result = getattr(response, "result", self.msg.Result(result=self.msg.Result.RESULT_OK))
        if result.result == self.msg.Result.RESULT_OK:
            self.served += 1
        else:
            self.diagnostics.reject(service, f"{result.error_message} (result code {result.result})")

    def code(self, code: str, specific=None) -> int:
        """The standard's result code for a core refusal: the service's own code of that name if it has
        one (SpawnEntity's NAME_NOT_UNIQUE, SetEntityState's INVALID_POSE, ...), else the common one."""
        name = code.upper()
        if specific is not None and isinstance(getattr(specific, name, None), int):
            return getattr(specific, name)
        return getattr(self.msg.Result, "RESULT_" + name, self.msg.Result.RESULT_OPERATION_FAILED)

    def ok(self, response, message: str = ""):
        response.result.result, response.result.error_message = self.msg.Result.RESULT_OK, message
        return response

    def fail(self, response, code: int, message: str):
        response.result.result, response.result.error_message = code, message
        return response

    def run(self, fn, *args):
        return self.loop.run(fn, *args, timeout=60.0)

    def republish(self) -> None:
        """Physics thread: let subscribers see a change at once, even while paused."""
        self.world_node.publish_clock()
        self.world_node.publish_objects()

    def figures(self) -> dict:
        return {"served": self.served, "state": self.state_name(), "entities": len(self.entities.all()),
                "spawned": sum(o.spawned for o in self.sim.scene.objects)}

    # --- features and simulation state -------------------------------------------------------
    def on_features(self, request, response):
        f = self.msg.SimulatorFeatures
        response.features.features = [
            f.SPAWNING, f.SPAWNING_ENTITIES, f.SPAWNING_RESOURCE_STRING, f.DELETING, f.NAMED_POSES, f.SPAWNABLES,
            f.ENTITY_TAGS, f.ENTITY_CATEGORIES, f.ENTITY_BOUNDS_BOX, f.ENTITY_STATE_GETTING,
            f.ENTITY_STATE_SETTING, f.ENTITY_INFO_GETTING, f.SIMULATION_RESET, f.SIMULATION_RESET_TIME,
            f.SIMULATION_RESET_STATE, f.SIMULATION_RESET_SPAWNED, f.SIMULATION_STATE_GETTING,
            f.SIMULATION_STATE_SETTING, f.SIMULATION_STATE_PAUSE, f.STEP_SIMULATION_SINGLE,
            f.STEP_SIMULATION_MULTIPLE, f.STEP_SIMULATION_ACTION]
        response.features.spawn_formats = ["urdf"]
        response.features.custom_info = ("binpick_sim (PyBullet): entities panda, ground, pick_bin, drop_bin and "
                                         "the objects; see doc/simulation-interfaces.md")
