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
"""
from __future__ import annotations

import time

import numpy as np
from geometry_msgs.msg import Accel, Twist, Vector3
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.exceptions import InvalidNamespaceException, NameValidationException
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.validate_full_topic_name import validate_full_topic_name
from rclpy.validate_namespace import validate_namespace

from ...cell import entities as core
from ...cell.entities import Entities, EntityError, State
from ..common import convert
from ..common.diagnostics import NodeDiagnostics
from ..common.long_requests import ACTION_QOS, SERVICE_QOS, Deferred, own_threads, serve_deferred
from ..common.params import declare

SCOPE_BITS = 1 | 2 | 4  # ResetSimulation's SCOPE_TIME | SCOPE_STATE | SCOPE_SPAWNED
# s between the last feedback and the result: rclpy's ActionClient forgets a goal's feedback callback
# when it takes the result, so a feedback it takes in the same pass after the result is dropped
FEEDBACK_LEAD = 0.02
CANCEL_POLL = 0.05  # s between a waiting goal's looks at its cancel (one queued behind other requests)


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


def _xyz(v) -> list[float]:
    return [v.x, v.y, v.z]


def _xyzw(q) -> list[float]:
    return [q.x, q.y, q.z, q.w]


class SimulationNode(Node):
    def __init__(self, world_node, **kwargs):
        from simulation_interfaces import action, msg, srv

        super().__init__("simulation", **kwargs)
        self.msg, self.srv = msg, srv
        self.world_node, self.sim, self.loop = world_node, world_node.sim, world_node.loop
        prefix = declare(self, "prefix", "", "Namespace the standard's services and action are served under "
                         "(empty: none, so get_simulator_features etc. as the standard's examples use).",
                         read_only=True).strip("/")
        self.max_steps = declare(self, "max_steps", 100000, "Most physics steps one StepSimulation or "
                                 "SimulateSteps request may ask for; more is refused.", read_only=True)
        try:
            validate_full_topic_name(f"/{prefix}/get_simulator_features" if prefix else "/get_simulator_features")
        except NameValidationException as exc:
            raise ValueError(f"parameter prefix: {prefix!r} is not a valid namespace ({str(exc).splitlines()[0]})") from None
        if self.max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {self.max_steps}")
        folders = declare(self, "spawnable_folders", Parameter.Type.STRING_ARRAY, "Absolute folders whose URDFs "
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
        self.ended_by: str | None = None  # why the step requests in flight are being ended (physics thread)
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
                                         "the objects; see the README's simulation_interfaces section")

    def state(self) -> int:
        s = self.msg.SimulationState
        if self.loop.holding:
            return s.STATE_STOPPED if self.stopped else s.STATE_PAUSED
        return s.STATE_PLAYING

    def state_name(self) -> str:
        return {0: "stopped", 1: "playing", 2: "paused"}[self.state()]

    def on_get_simulation_state(self, request, response):
        response.state.state = self.state()
        self.ok(response)

    def on_set_simulation_state(self, request, response):
        s, r = self.msg.SimulationState, type(response)
        target, now = request.state.state, self.state()
        if target == now:
            return self.fail(response, r.ALREADY_IN_TARGET_STATE, f"already {self.state_name()}")
        if target == s.STATE_PLAYING:
            if self.loop.lockstep:
                return self.fail(response, r.STATE_TRANSITION_ERROR, "the world runs in lock-step mode "
                                 "(lockstep:=true): it moves only by the steps asked for")
            self.run(self._play)
        elif target == s.STATE_PAUSED:  # from playing, or from stopped: paused at once, no step taken
            self.run(self._pause)
        elif target == s.STATE_STOPPED:
            self.run(self._pause, "STOPPED")
            self.run(self._reset, SCOPE_BITS)
            self.stopped = True
        elif target == s.STATE_QUITTING:
            self.run(self._pause, "QUITTING")
            self._quit_timer = self.create_timer(0.2, self._quit)  # after this answer has gone out
        else:
            return self.fail(response, r.INCORRECT_TRANSITION, f"state {target} cannot be set (settable: "
                             "STOPPED 0, PLAYING 1, PAUSED 2, QUITTING 3)")
        self.ok(response)

    def _play(self) -> None:
        self.end_steps("the simulation was set PLAYING")
        self.stopped = False
        self.loop.paused = False

    def _pause(self, target: str | None = None) -> None:
        if target:
            self.end_steps(f"the simulation was set {target}")
        if not self.loop.lockstep:  # lock-step: paused between requests already
            self.loop.paused = True
        self.stopped = False

    def end_steps(self, why: str) -> None:
        """Physics thread: a change of state ends every step request in flight (the one being taken after
        the step in progress, and those queued), each answered with how far it got and `why`."""
        self.ended_by = why
        try:
            self.loop.cancel_steps()
        finally:
            self.ended_by = None

    def cut_short(self, taken: int, steps: int) -> str:
        """Why a step request ended after `taken` of its `steps` (physics thread, as it ends)."""
        why = self.ended_by or "canceled (world/cancel_steps)"
        return f"{why} after {taken} of {steps} steps"

    def _quit(self) -> None:
        import rclpy

        self.get_logger().info("quitting, as asked by set_simulation_state")
        self._quit_timer.cancel()
        rclpy.try_shutdown(context=self.context)

    def check_steps(self, steps: int) -> str | None:
        """Why a step request cannot be taken now, or None."""
        if self.state() != self.msg.SimulationState.STATE_PAUSED:
            return f"the simulation is {self.state_name()}: stepping needs it paused"
        if steps > self.max_steps:
            return f"{steps} steps is more than max_steps ({self.max_steps})"
        return None

    def on_step(self, request, response):
        """Answered when the steps are taken (or cut short), holding no thread meanwhile."""
        steps = request.steps
        why = self.check_steps(steps)
        if why:
            return self.fail(response, self.msg.Result.RESULT_OPERATION_FAILED, why)
        later = Deferred()

        def taken(done) -> None:  # on the thread that ended the request: physics, or the one stopping it
            try:
                done.result()
            except Exception as exc:  # the loop stopped (shutdown)
                self.fail(response, self.msg.Result.RESULT_OPERATION_FAILED, str(exc))
            else:
                count = getattr(done, "taken", steps)
                if count < steps:
                    self.fail(response, self.msg.Result.RESULT_OPERATION_FAILED, self.cut_short(count, steps))
                else:
                    self.ok(response)
            later.answer(response)
        self.loop.advance(steps).add_done_callback(taken)
        return later

    def on_goal(self, goal) -> GoalResponse:
        if self.goals.room():
            return GoalResponse.ACCEPT
        self.diagnostics.reject("simulate_steps", f"{self.goals.limit} goals in flight already")
        return GoalResponse.REJECT

    def on_simulate_steps(self, handle):
        """On a thread of its own (long_requests.own_threads): one request to the loop, a feedback per step
        from the physics thread, ended within a step by a cancel or a change of state."""
        result = self.SimulateSteps.Result()
        steps = handle.request.steps
        why = self.check_steps(steps)
        if why:
            self.diagnostics.reject("simulate_steps", why)
            result.result.result, result.result.error_message = self.msg.Result.RESULT_OPERATION_FAILED, why
            handle.abort()
            return result
        progress = {"taken": 0, "why": None}
        Feedback = self.SimulateSteps.Feedback

        def stepped() -> bool:  # physics thread, after each step but the last: True ends the request
            progress["taken"] += 1
            handle.publish_feedback(Feedback(completed_steps=progress["taken"], remaining_steps=steps - progress["taken"]))
            return handle.is_cancel_requested

        def ended(done) -> None:  # physics thread: why it ended, read while it is known
            progress["why"] = self.ended_by
            if getattr(done, "taken", 0) == steps:  # the last feedback, well before the result goes out
                handle.publish_feedback(Feedback(completed_steps=steps, remaining_steps=0))
        done = self.loop.advance(steps, until=stepped)
        done.add_done_callback(ended)
        while True:
            try:
                done.result(timeout=CANCEL_POLL)
                break
            except TimeoutError:  # still queued behind other requests, or taking its steps
                if handle.is_cancel_requested:
                    self.loop.call(self.loop.withdraw, done)
            except Exception as exc:  # the loop stopped (shutdown)
                result.result.result, result.result.error_message = self.msg.Result.RESULT_OPERATION_FAILED, str(exc)
                handle.abort()
                return result
        taken = getattr(done, "taken", steps)
        if taken == steps:
            time.sleep(FEEDBACK_LEAD)
            handle.succeed()
            result.result.result = self.msg.Result.RESULT_OK
            self.served += 1
        elif progress["why"] is None and handle.is_cancel_requested:
            handle.canceled()
            result.result.result = self.msg.Result.RESULT_OK
            result.result.error_message = f"canceled after {taken} of {steps} steps"
        else:
            message = f"{progress['why'] or 'canceled (world/cancel_steps)'} after {taken} of {steps} steps"
            handle.abort()
            result.result.result, result.result.error_message = self.msg.Result.RESULT_OPERATION_FAILED, message
        return result

    def on_reset(self, request, response):
        scope = request.scope or request.SCOPE_ALL
        if scope != request.SCOPE_ALL and scope & ~SCOPE_BITS:
            return self.fail(response, self.msg.Result.RESULT_FEATURE_UNSUPPORTED,
                             f"scope {scope}: only TIME 1, STATE 2, SPAWNED 4, their sums, and ALL 255")
        self.run(self._reset, scope & SCOPE_BITS)
        self.ok(response)

    def _reset(self, scope: int) -> None:
        """Physics thread: SPAWNED removes spawned objects; STATE restarts the episode (the bin's
        objects as dropped, the arm home, kept spawned objects at their spawn poses); TIME zeroes sim time."""
        if scope & 2:
            self.entities.restart(keep_spawned=not scope & 4)
        elif scope & 4:
            self.entities.remove_spawned()
        if scope & 1:
            self.loop.reset_time()
        self.republish()

    # --- entities -----------------------------------------------------------------------------
    def selected(self, filters) -> list[core.Entity]:
        """Entities passing an EntityFilters (physics thread)."""
        b = self.msg.Bounds
        bounds, points = filters.bounds, [_xyz(p) for p in filters.bounds.points]
        sphere = box = None
        if bounds.type == b.TYPE_SPHERE:
            if len(points) != 2:
                raise EntityError(core.OPERATION_FAILED, "a sphere is two points: centre, then (radius, 0, 0)")
            sphere = (points[0], points[1][0])
        elif bounds.type == b.TYPE_BOX:
            if len(points) != 2:
                raise EntityError(core.OPERATION_FAILED, "a box is two points: opposite corners")
            box = points
        elif bounds.type == b.TYPE_CONVEX_HULL:
            raise EntityError("feature_unsupported", "convex hull bounds are not supported (sphere and box are)")
        elif bounds.type != b.TYPE_EMPTY:
            raise EntityError(core.OPERATION_FAILED, f"unknown bounds type {bounds.type}")
        names = {v: k for k, v in self.categories.items()}
        categories = {names.get(c.category, "none") for c in filters.categories}
        tags = filters.tags
        return self.entities.select(filters.filter, categories, list(tags.tags),
                                    tags.filter_mode == self.msg.TagsFilter.FILTER_MODE_ALL, sphere, box)

    def entity_state(self, name: str):
        s = self.entities.state(name)
        return self.msg.EntityState(header=convert.header(self.sim.world.time),
                                    pose=convert.pose(s.position, s.orientation),
                                    twist=Twist(linear=Vector3(**dict(zip("xyz", map(float, s.linear)))),
                                                angular=Vector3(**dict(zip("xyz", map(float, s.angular))))),
                                    acceleration=Accel())

    def on_get_entities(self, request, response):
        response.entities = [e.name for e in self.run(self.selected, request.filters)]
        self.ok(response)

    def on_get_entities_states(self, request, response):
        def gather():
            chosen = [e.name for e in self.selected(request.filters)]
            return chosen, [self.entity_state(n) for n in chosen]
        response.entities, response.states = self.run(gather)
        self.ok(response)

    def on_get_entity_state(self, request, response):
        response.state = self.run(self.entity_state, request.entity)
        self.ok(response)

    def on_set_entity_state(self, request, response):
        st = request.state
        state = State(_xyz(st.pose.position), _xyzw(st.pose.orientation), _xyz(st.twist.linear), _xyz(st.twist.angular))
        acceleration = _xyz(st.acceleration.linear) + _xyz(st.acceleration.angular)

        def apply():
            self.entities.set_state(request.entity, state, st.header.frame_id, acceleration)
            self.republish()
        self.run(apply)
        self.ok(response, "acceleration is not applied to objects" if np.any(acceleration) else "")

    def on_get_entity_info(self, request, response):
        entity = self.run(self.entities.get, request.entity)
        response.info = self.msg.EntityInfo(category=self.msg.EntityCategory(category=self.categories[entity.category]),
                                            description=entity.description, tags=list(entity.tags))
        self.ok(response)

    # --- spawning -----------------------------------------------------------------------------
    def spawn(self, request) -> str:
        """Spawn one entity from a SpawnEntity request or a SpawnEntity message; returns its name."""
        resource = getattr(request, "entity_resource", request)
        if request.entity_namespace:
            namespace = "/" + request.entity_namespace.lstrip("/")
            try:
                validate_namespace(namespace)
            except InvalidNamespaceException as exc:
                raise EntityError("namespace_invalid", f"entity_namespace: {exc}".splitlines()[0]) from None
        pose = request.initial_pose
        args = (request.name, request.allow_renaming, resource.uri, resource.resource_string, pose.header.frame_id,
                _xyz(pose.pose.position), _xyzw(pose.pose.orientation))

        def load():
            name = self.entities.spawn(*args)
            self.republish()
            return name
        return self.run(load)

    def on_spawn(self, request, response):
        response.entity_name = self.spawn(request)
        self.ok(response)

    def on_spawn_many(self, request, response):
        for item in request.spawn_requests:
            result = self.msg.SpawnResult()
            try:
                result.entity_name = self.spawn(item)
                result.result.result = self.msg.Result.RESULT_OK
            except EntityError as exc:
                result.result.result = self.code(exc.code, self.msg.SpawnResult)
                result.result.error_message = str(exc)
            response.results.append(result)
        failed = [r for r in response.results if r.result.result != self.msg.Result.RESULT_OK]
        if failed:
            return self.fail(response, type(response).ENTITIES_SPAWN_FAILED, f"{len(failed)} of "
                             f"{len(response.results)} failed: " + "; ".join(r.result.error_message for r in failed))
        self.ok(response)

    def on_delete(self, request, response):
        def delete():
            self.entities.delete(request.entity)
            self.republish()
        self.run(delete)
        self.ok(response)

    def on_named_poses(self, request, response):
        wanted, all_tags = set(request.tags.tags), request.tags.filter_mode == self.msg.TagsFilter.FILTER_MODE_ALL
        for p in self.run(self.entities.named_poses):
            if wanted and not (wanted <= set(p.tags) if all_tags else wanted & set(p.tags)):
                continue
            response.poses.append(self.msg.NamedPose(name=p.name, description=p.description, tags=list(p.tags),
                                                     pose=convert.pose(p.position, p.orientation)))
        self.ok(response)

    def on_spawnables(self, request, response):
        found, unknown, stopped = self.entities.spawnables(list(request.sources))
        response.spawnables = [self.msg.Spawnable(uri=uri, description=text) for uri, text in found]
        notes = ([f"sources not found: {', '.join(s[:200] for s in unknown[:20])}"] if unknown else []) + (
            [f"listing stopped after {stopped}"] if stopped else [])
        self.ok(response, "; ".join(notes))
